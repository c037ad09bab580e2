/* The ops the runtime executes, as an X-macro list:
 *   X(ENUM_SUFFIX, "aten name", "overload", kind, forward function)
 * One row per op; lib/op_table.c turns it into amp_op_defs[] and the
 * dispatcher resolves each row's autocast policy from the policy table by
 * (name, overload).  Add ops at the end of their group. */
#ifndef AMP_OP_LIST_H
#define AMP_OP_LIST_H

#define AMP_OP_LIST(X)                                                        \
	/* factories: no tensor inputs, device from the call */               \
	X(EMPTY, "empty", "memory_format", FACTORY, amp_forward_empty)        \
	X(ZEROS, "zeros", "", FACTORY, amp_forward_zeros)                     \
	X(FULL, "full", "", FACTORY, amp_forward_full)                        \
	X(FROM_DATA, "tensor", "", FACTORY, amp_forward_from_data)            \
	X(RANDN, "randn", "", FACTORY, amp_forward_randn)                     \
	X(RAND, "rand", "", FACTORY, amp_forward_rand)                        \
	X(SCALAR_TENSOR, "scalar_tensor", "", FACTORY, amp_forward_scalar_tensor) \
	/* views and layout */                                                \
	X(TRANSPOSE, "transpose", "int", VIEW, amp_forward_transpose)         \
	X(T, "t", "", VIEW, amp_forward_t)                                    \
	X(RESHAPE, "reshape", "", VIEW, amp_forward_reshape)                  \
	X(SLICE, "slice", "Tensor", VIEW, amp_forward_slice)                  \
	X(UNSQUEEZE, "unsqueeze", "", VIEW, amp_forward_unsqueeze)            \
	X(CONTIGUOUS, "contiguous", "", COMPUTE, amp_forward_contiguous)      \
	X(CLONE, "clone", "", COMPUTE, amp_forward_clone)                     \
	X(DETACH, "detach", "", VIEW, amp_forward_detach)                     \
	X(TO, "to", "dtype", COMPUTE, amp_forward_to)                         \
	X(TO_DEVICE, "to", "device", COMPUTE, amp_forward_to_device)          \
	/* matrix products */                                                 \
	X(MM, "mm", "", COMPUTE, amp_forward_mm)                              \
	X(MATMUL, "matmul", "", COMPOSITE, amp_forward_matmul)                \
	X(BMM, "bmm", "", COMPUTE, amp_forward_bmm)                           \
	X(ADDMM, "addmm", "", COMPUTE, amp_forward_addmm)                     \
	X(BADDBMM, "baddbmm", "", COMPUTE, amp_forward_baddbmm)               \
	X(LINEAR, "linear", "", COMPUTE, amp_forward_linear)                  \
	X(CONV1D, "conv1d", "", COMPUTE, amp_forward_conv1d)                  \
	X(CONV2D, "conv2d", "", COMPUTE, amp_forward_conv2d)                  \
	/* elementwise */                                                     \
	X(ADD, "add", "Tensor", COMPUTE, amp_forward_add)                     \
	X(SUB, "sub", "Tensor", COMPUTE, amp_forward_sub)                     \
	X(MUL, "mul", "Tensor", COMPUTE, amp_forward_mul)                     \
	X(DIV, "div", "Tensor", COMPUTE, amp_forward_div)                     \
	X(ADD_SCALAR, "add", "Scalar", COMPUTE, amp_forward_add_scalar)       \
	X(MUL_SCALAR, "mul", "Scalar", COMPUTE, amp_forward_mul_scalar)       \
	X(NEG, "neg", "", COMPUTE, amp_forward_neg)                           \
	X(POW, "pow", "Tensor_Tensor", COMPUTE, amp_forward_pow)              \
	X(POW_SCALAR, "pow", "Tensor_Scalar", COMPUTE, amp_forward_pow_scalar) \
	X(EXP, "exp", "", COMPUTE, amp_forward_exp)                           \
	X(LOG, "log", "", COMPUTE, amp_forward_log)                           \
	X(RELU, "relu", "", COMPUTE, amp_forward_relu)                        \
	X(GELU, "gelu", "", COMPUTE, amp_forward_gelu)                        \
	X(SIGMOID, "sigmoid", "", COMPUTE, amp_forward_sigmoid)               \
	X(TANH, "tanh", "", COMPUTE, amp_forward_tanh)                        \
	X(ADDCMUL, "addcmul", "", COMPUTE, amp_forward_addcmul)               \
	/* normalisation, reductions, shape */                                \
	X(SOFTMAX, "softmax", "int", COMPUTE, amp_forward_softmax)            \
	X(LOG_SOFTMAX, "log_softmax", "int", COMPUTE, amp_forward_log_softmax) \
	X(LAYER_NORM, "layer_norm", "", COMPUTE, amp_forward_layer_norm)      \
	X(SUM, "sum", "", COMPUTE, amp_forward_sum)                           \
	X(SUM_DIM, "sum", "dim_IntList", COMPUTE, amp_forward_sum_dim)        \
	X(MEAN, "mean", "", COMPUTE, amp_forward_mean)                        \
	X(MEAN_DIM, "mean", "dim", COMPUTE, amp_forward_mean_dim)             \
	X(CAT, "cat", "", COMPUTE, amp_forward_cat)                           \
	X(STACK, "stack", "", COMPUTE, amp_forward_stack)                     \
	X(EMBEDDING, "embedding", "", COMPUTE, amp_forward_embedding)         \
	X(DROPOUT, "dropout", "", COMPUTE, amp_forward_dropout)               \
	/* losses */                                                          \
	X(MSE_LOSS, "mse_loss", "", COMPUTE, amp_forward_mse_loss)            \
	X(NLL_LOSS, "nll_loss", "", COMPUTE, amp_forward_nll_loss)            \
	X(CROSS_ENTROPY, "cross_entropy_loss", "", COMPOSITE, amp_forward_cross_entropy) \
	X(BINARY_CROSS_ENTROPY, "binary_cross_entropy", "", COMPUTE, amp_forward_binary_cross_entropy) \
	X(BCE_WITH_LOGITS, "binary_cross_entropy_with_logits", "", COMPUTE, amp_forward_bce_with_logits) \
	/* training: the in-place updates of optimizers, clipping and the    \
	 * scaler (no autocast list has in-place or out= ops: policy none),  \
	 * the out-of-place maths they use, and the GradScaler kernels       \
	 * (lib/cpu/inplace.c, optim_math.c, amp_scaler_kernels.c) */        \
	X(ADD_INPLACE, "add_", "Tensor", INPLACE, amp_forward_add_inplace)    \
	X(ADD_SCALAR_INPLACE, "add_", "Scalar", INPLACE, amp_forward_add_scalar_inplace) \
	X(MUL_INPLACE, "mul_", "Tensor", INPLACE, amp_forward_mul_inplace)    \
	X(MUL_SCALAR_INPLACE, "mul_", "Scalar", INPLACE, amp_forward_mul_scalar_inplace) \
	X(DIV_SCALAR_INPLACE, "div_", "Scalar", INPLACE, amp_forward_div_scalar_inplace) \
	X(ADDCMUL_INPLACE, "addcmul_", "", INPLACE, amp_forward_addcmul_inplace) \
	X(ADDCDIV_INPLACE, "addcdiv_", "", INPLACE, amp_forward_addcdiv_inplace) \
	X(LERP_INPLACE, "lerp_", "Scalar", INPLACE, amp_forward_lerp_inplace) \
	X(CLAMP_INPLACE, "clamp_", "", INPLACE, amp_forward_clamp_inplace)    \
	X(FILL_INPLACE, "fill_", "Scalar", INPLACE, amp_forward_fill_inplace) \
	X(COPY_INPLACE, "copy_", "", INPLACE, amp_forward_copy_inplace)       \
	X(MAXIMUM_OUT, "maximum", "out", INPLACE, amp_forward_maximum_out)    \
	X(SQRT, "sqrt", "", COMPUTE, amp_forward_sqrt)                        \
	X(RECIPROCAL, "reciprocal", "", COMPUTE, amp_forward_reciprocal)      \
	X(CLAMP, "clamp", "", COMPUTE, amp_forward_clamp)                     \
	X(LINALG_VECTOR_NORM, "linalg_vector_norm", "", COMPUTE, amp_forward_linalg_vector_norm) \
	X(AMP_UNSCALE_INPLACE, "_amp_foreach_non_finite_check_and_unscale_", "", INPLACE, amp_forward_amp_unscale_inplace) \
	X(AMP_UPDATE_SCALE_INPLACE, "_amp_update_scale_", "", INPLACE, amp_forward_amp_update_scale_inplace) \
	/* backward ops: what backward formulas dispatch besides public ops, \
	 * with ATen's names (lib/grad/kernels_*.c, grad/grad_ops.h); in no  \
	 * autocast list, so never autocast themselves, as in PyTorch */     \
	X(EXPAND, "expand", "", VIEW, amp_forward_expand)                     \
	X(THRESHOLD_BACKWARD, "threshold_backward", "", COMPUTE, amp_forward_threshold_backward) \
	X(GELU_BACKWARD, "gelu_backward", "", COMPUTE, amp_forward_gelu_backward) \
	X(SIGMOID_BACKWARD, "sigmoid_backward", "", COMPUTE, amp_forward_sigmoid_backward) \
	X(TANH_BACKWARD, "tanh_backward", "", COMPUTE, amp_forward_tanh_backward) \
	X(CLAMP_BACKWARD, "clamp_backward", "", COMPUTE, amp_forward_clamp_backward) \
	X(SOFTMAX_BACKWARD, "_softmax_backward_data", "", COMPUTE, amp_forward_softmax_backward_data) \
	X(LOG_SOFTMAX_BACKWARD, "_log_softmax_backward_data", "", COMPUTE, amp_forward_log_softmax_backward_data) \
	X(LAYER_NORM_BACKWARD, "native_layer_norm_backward", "", COMPUTE, amp_forward_layer_norm_backward) \
	X(CONVOLUTION_BACKWARD, "convolution_backward", "", COMPUTE, amp_forward_convolution_backward) \
	X(EMBEDDING_BACKWARD, "embedding_dense_backward", "", COMPUTE, amp_forward_embedding_dense_backward) \
	X(SLICE_BACKWARD, "slice_backward", "", COMPUTE, amp_forward_slice_backward) \
	X(MSE_LOSS_BACKWARD, "mse_loss_backward", "", COMPUTE, amp_forward_mse_loss_backward) \
	X(NLL_LOSS_BACKWARD, "nll_loss_backward", "", COMPUTE, amp_forward_nll_loss_backward) \
	X(BCE_BACKWARD, "binary_cross_entropy_backward", "", COMPUTE, amp_forward_binary_cross_entropy_backward)

#endif /* AMP_OP_LIST_H */
