/* The backward formula of every op in op_list.h: grad_fn name (PyTorch's
 * spelling), formula, and what the node saves.  The table is built from
 * the op list itself, so an op without a GRAD_<OP> row here does not
 * compile.  Ops without a formula are never recorded: factories, detach,
 * composites (their inner ops are), and in-place updates (the dispatcher
 * refuses them on tensors requiring grad under grad mode). */
#include "grad/formulas.h"

#include <assert.h>

#define IN(i) AMP_GRAD_SAVE(i)
#define OUT(i) AMP_GRAD_SAVE(i)
#define ROW(e, grad_name, fn, inputs, outputs)                               \
	{ .op = AMP_OP_##e, .name = grad_name, .formula = fn,                 \
	  .save_inputs = inputs, .save_outputs = outputs }
#define NO_GRAD(e) { .op = AMP_OP_##e }

/* factories */
#define GRAD_EMPTY NO_GRAD(EMPTY)
#define GRAD_ZEROS NO_GRAD(ZEROS)
#define GRAD_FULL NO_GRAD(FULL)
#define GRAD_FROM_DATA NO_GRAD(FROM_DATA)
#define GRAD_RANDN NO_GRAD(RANDN)
#define GRAD_RAND NO_GRAD(RAND)
#define GRAD_SCALAR_TENSOR NO_GRAD(SCALAR_TENSOR)
/* views and layout */
#define GRAD_TRANSPOSE ROW(TRANSPOSE, "TransposeBackward0", grad_transpose, 0, 0)
#define GRAD_T ROW(T, "TBackward0", grad_t, 0, 0)
#define GRAD_RESHAPE ROW(RESHAPE, "ViewBackward0", grad_reshape, 0, 0)
#define GRAD_SLICE ROW(SLICE, "SliceBackward0", grad_slice, 0, 0)
#define GRAD_UNSQUEEZE ROW(UNSQUEEZE, "UnsqueezeBackward0", grad_reshape, 0, 0)
#define GRAD_CONTIGUOUS ROW(CONTIGUOUS, "CloneBackward0", grad_identity, 0, 0)
#define GRAD_CLONE ROW(CLONE, "CloneBackward0", grad_identity, 0, 0)
#define GRAD_DETACH NO_GRAD(DETACH)
#define GRAD_TO ROW(TO, "ToCopyBackward0", grad_to, 0, 0)
#define GRAD_TO_DEVICE ROW(TO_DEVICE, "ToCopyBackward0", grad_to_device, 0, 0)
/* matrix products */
#define GRAD_MM ROW(MM, "MmBackward0", grad_mm, IN(0) | IN(1), 0)
#define GRAD_MATMUL NO_GRAD(MATMUL)
#define GRAD_BMM ROW(BMM, "BmmBackward0", grad_bmm, IN(0) | IN(1), 0)
#define GRAD_ADDMM ROW(ADDMM, "AddmmBackward0", grad_addmm, IN(1) | IN(2), 0)
#define GRAD_BADDBMM                                                         \
	ROW(BADDBMM, "BaddbmmBackward0", grad_baddbmm, IN(1) | IN(2), 0)
#define GRAD_LINEAR ROW(LINEAR, "LinearBackward0", grad_linear, IN(0) | IN(1), 0)
#define GRAD_CONV1D                                                          \
	ROW(CONV1D, "ConvolutionBackward0", grad_conv, IN(0) | IN(1), 0)
#define GRAD_CONV2D                                                          \
	ROW(CONV2D, "ConvolutionBackward0", grad_conv, IN(0) | IN(1), 0)
/* elementwise */
#define GRAD_ADD ROW(ADD, "AddBackward0", grad_add, 0, 0)
#define GRAD_SUB ROW(SUB, "SubBackward0", grad_sub, 0, 0)
#define GRAD_MUL ROW(MUL, "MulBackward0", grad_mul, IN(0) | IN(1), 0)
#define GRAD_DIV ROW(DIV, "DivBackward0", grad_div, IN(0) | IN(1), 0)
#define GRAD_ADD_SCALAR ROW(ADD_SCALAR, "AddBackward1", grad_add_scalar, 0, 0)
#define GRAD_MUL_SCALAR ROW(MUL_SCALAR, "MulBackward1", grad_mul_scalar, 0, 0)
#define GRAD_NEG ROW(NEG, "NegBackward0", grad_neg, 0, 0)
#define GRAD_POW ROW(POW, "PowBackward1", grad_pow, IN(0) | IN(1), OUT(0))
#define GRAD_POW_SCALAR ROW(POW_SCALAR, "PowBackward0", grad_pow_scalar, IN(0), 0)
#define GRAD_EXP ROW(EXP, "ExpBackward0", grad_exp, 0, OUT(0))
#define GRAD_LOG ROW(LOG, "LogBackward0", grad_log, IN(0), 0)
#define GRAD_RELU ROW(RELU, "ReluBackward0", grad_relu, 0, OUT(0))
#define GRAD_GELU ROW(GELU, "GeluBackward0", grad_gelu, IN(0), 0)
#define GRAD_SIGMOID ROW(SIGMOID, "SigmoidBackward0", grad_sigmoid, 0, OUT(0))
#define GRAD_TANH ROW(TANH, "TanhBackward0", grad_tanh, 0, OUT(0))
#define GRAD_ADDCMUL                                                         \
	ROW(ADDCMUL, "AddcmulBackward0", grad_addcmul, IN(1) | IN(2), 0)
/* normalisation, reductions, shape */
#define GRAD_SOFTMAX ROW(SOFTMAX, "SoftmaxBackward0", grad_softmax, 0, OUT(0))
#define GRAD_LOG_SOFTMAX                                                     \
	ROW(LOG_SOFTMAX, "LogSoftmaxBackward0", grad_log_softmax, 0, OUT(0))
#define GRAD_LAYER_NORM                                                      \
	ROW(LAYER_NORM, "NativeLayerNormBackward0", grad_layer_norm,          \
	    IN(0) | IN(1) | IN(2), 0)
#define GRAD_SUM ROW(SUM, "SumBackward0", grad_sum, 0, 0)
#define GRAD_SUM_DIM ROW(SUM_DIM, "SumBackward1", grad_sum_dim, 0, 0)
#define GRAD_MEAN ROW(MEAN, "MeanBackward0", grad_mean, 0, 0)
#define GRAD_MEAN_DIM ROW(MEAN_DIM, "MeanBackward1", grad_mean_dim, 0, 0)
#define GRAD_CAT ROW(CAT, "CatBackward0", grad_cat, 0, 0)
#define GRAD_STACK ROW(STACK, "StackBackward0", grad_stack, 0, 0)
#define GRAD_EMBEDDING ROW(EMBEDDING, "EmbeddingBackward0", grad_embedding, IN(1), 0)
#define GRAD_DROPOUT                                                         \
	ROW(DROPOUT, "NativeDropoutBackward0", grad_dropout, IN(0), OUT(0))
/* losses */
#define GRAD_MSE_LOSS                                                        \
	ROW(MSE_LOSS, "MseLossBackward0", grad_mse_loss, IN(0) | IN(1), 0)
#define GRAD_NLL_LOSS                                                        \
	ROW(NLL_LOSS, "NllLossBackward0", grad_nll_loss, IN(0) | IN(1) | IN(2), 0)
#define GRAD_CROSS_ENTROPY NO_GRAD(CROSS_ENTROPY)
#define GRAD_BINARY_CROSS_ENTROPY                                            \
	ROW(BINARY_CROSS_ENTROPY, "BinaryCrossEntropyBackward0",              \
	    grad_binary_cross_entropy, IN(0) | IN(1) | IN(2), 0)
#define GRAD_BCE_WITH_LOGITS                                                 \
	ROW(BCE_WITH_LOGITS, "BinaryCrossEntropyWithLogitsBackward0",         \
	    grad_bce_with_logits, IN(0) | IN(1) | IN(2) | IN(3), 0)
/* training: in-place updates are never recorded */
#define GRAD_ADD_INPLACE NO_GRAD(ADD_INPLACE)
#define GRAD_ADD_SCALAR_INPLACE NO_GRAD(ADD_SCALAR_INPLACE)
#define GRAD_MUL_INPLACE NO_GRAD(MUL_INPLACE)
#define GRAD_MUL_SCALAR_INPLACE NO_GRAD(MUL_SCALAR_INPLACE)
#define GRAD_DIV_SCALAR_INPLACE NO_GRAD(DIV_SCALAR_INPLACE)
#define GRAD_ADDCMUL_INPLACE NO_GRAD(ADDCMUL_INPLACE)
#define GRAD_ADDCDIV_INPLACE NO_GRAD(ADDCDIV_INPLACE)
#define GRAD_LERP_INPLACE NO_GRAD(LERP_INPLACE)
#define GRAD_CLAMP_INPLACE NO_GRAD(CLAMP_INPLACE)
#define GRAD_FILL_INPLACE NO_GRAD(FILL_INPLACE)
#define GRAD_COPY_INPLACE NO_GRAD(COPY_INPLACE)
#define GRAD_MAXIMUM_OUT NO_GRAD(MAXIMUM_OUT)
#define GRAD_SQRT ROW(SQRT, "SqrtBackward0", grad_sqrt, 0, OUT(0))
#define GRAD_RECIPROCAL                                                      \
	ROW(RECIPROCAL, "ReciprocalBackward0", grad_reciprocal, 0, OUT(0))
#define GRAD_CLAMP ROW(CLAMP, "ClampBackward1", grad_clamp, IN(0), 0)
#define GRAD_LINALG_VECTOR_NORM                                              \
	ROW(LINALG_VECTOR_NORM, "LinalgVectorNormBackward0",                  \
	    grad_linalg_vector_norm, IN(0), OUT(0))
#define GRAD_AMP_UNSCALE_INPLACE NO_GRAD(AMP_UNSCALE_INPLACE)
#define GRAD_AMP_UPDATE_SCALE_INPLACE NO_GRAD(AMP_UPDATE_SCALE_INPLACE)
/* backward ops: their own backward, for double backward */
#define GRAD_EXPAND ROW(EXPAND, "ExpandBackward0", grad_expand, 0, 0)
#define GRAD_THRESHOLD_BACKWARD                                              \
	ROW(THRESHOLD_BACKWARD, "ThresholdBackwardBackward0",                 \
	    grad_threshold_backward, IN(1), 0)
#define GRAD_GELU_BACKWARD                                                   \
	ROW(GELU_BACKWARD, "GeluBackwardBackward0", grad_gelu_backward,       \
	    IN(0) | IN(1), 0)
#define GRAD_SIGMOID_BACKWARD                                                \
	ROW(SIGMOID_BACKWARD, "SigmoidBackwardBackward0",                     \
	    grad_sigmoid_backward, IN(0) | IN(1), 0)
#define GRAD_TANH_BACKWARD                                                   \
	ROW(TANH_BACKWARD, "TanhBackwardBackward0", grad_tanh_backward,       \
	    IN(0) | IN(1), 0)
#define GRAD_CLAMP_BACKWARD                                                  \
	ROW(CLAMP_BACKWARD, "ClampBackwardBackward0", grad_clamp_backward,    \
	    IN(1), 0)
#define GRAD_SOFTMAX_BACKWARD                                                \
	ROW(SOFTMAX_BACKWARD, "SoftmaxBackwardDataBackward0",                 \
	    grad_softmax_backward_data, IN(0) | IN(1), 0)
#define GRAD_LOG_SOFTMAX_BACKWARD                                            \
	ROW(LOG_SOFTMAX_BACKWARD, "LogSoftmaxBackwardDataBackward0",          \
	    grad_log_softmax_backward_data, IN(0) | IN(1), 0)
#define GRAD_LAYER_NORM_BACKWARD                                             \
	ROW(LAYER_NORM_BACKWARD, "NativeLayerNormBackwardBackward0",          \
	    grad_layer_norm_backward, IN(0) | IN(1) | IN(2), 0)
#define GRAD_CONVOLUTION_BACKWARD                                            \
	ROW(CONVOLUTION_BACKWARD, "ConvolutionBackwardBackward0",             \
	    grad_convolution_backward, IN(0) | IN(1) | IN(2), 0)
#define GRAD_EMBEDDING_BACKWARD                                              \
	ROW(EMBEDDING_BACKWARD, "EmbeddingDenseBackwardBackward0",            \
	    grad_embedding_dense_backward, IN(1), 0)
#define GRAD_SLICE_BACKWARD                                                  \
	ROW(SLICE_BACKWARD, "SliceBackwardBackward0", grad_slice_backward, 0, 0)
#define GRAD_MSE_LOSS_BACKWARD                                               \
	ROW(MSE_LOSS_BACKWARD, "MseLossBackwardBackward0",                    \
	    grad_mse_loss_backward, IN(0) | IN(1) | IN(2), 0)
#define GRAD_NLL_LOSS_BACKWARD                                               \
	ROW(NLL_LOSS_BACKWARD, "NllLossBackwardBackward0",                    \
	    grad_nll_loss_backward, IN(2) | IN(3), 0)
#define GRAD_BCE_BACKWARD                                                    \
	ROW(BCE_BACKWARD, "BinaryCrossEntropyBackwardBackward0",              \
	    grad_binary_cross_entropy_backward, IN(0) | IN(1) | IN(2) | IN(3), 0)

#define GRAD_TABLE_ROW(e, name, overload, kind, fn) [AMP_OP_##e] = GRAD_##e,

const struct amp_grad_def amp_grad_defs[AMP_OP_COUNT] = {
	AMP_OP_LIST(GRAD_TABLE_ROW)
};

/* Each op's row is a GRAD_<op> macro above, so a new op in AMP_OP_LIST
 * fails to compile until it has one; this number is the ops counted when
 * they were last reviewed together with their gradients. */
static_assert(AMP_OP_COUNT == 90,
	      "a new op: review its gradient row, then count it here");
