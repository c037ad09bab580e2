/* The backward formulas, one per differentiable op, named grad_<op> after
 * the op they differentiate (grad_table.c lists them by enum amp_op).
 * Each file says which ops it covers. */
#ifndef AMP_GRAD_FORMULAS_H
#define AMP_GRAD_FORMULAS_H

#include "grad/grad.h"

/* grad_view.c: views, layout, casts, and the view-like backward ops */
int grad_transpose(struct amp_grad_ctx *ctx);
int grad_t(struct amp_grad_ctx *ctx);
int grad_reshape(struct amp_grad_ctx *ctx); /* reshape, unsqueeze */
int grad_slice(struct amp_grad_ctx *ctx);
int grad_identity(struct amp_grad_ctx *ctx); /* contiguous, clone */
int grad_to(struct amp_grad_ctx *ctx);
int grad_to_device(struct amp_grad_ctx *ctx);
int grad_expand(struct amp_grad_ctx *ctx);
int grad_slice_backward(struct amp_grad_ctx *ctx);

/* grad_matmul.c: matrix products and convolutions */
int grad_mm(struct amp_grad_ctx *ctx);
int grad_bmm(struct amp_grad_ctx *ctx);
int grad_addmm(struct amp_grad_ctx *ctx);
int grad_baddbmm(struct amp_grad_ctx *ctx);
int grad_linear(struct amp_grad_ctx *ctx);
int grad_conv(struct amp_grad_ctx *ctx); /* conv1d, conv2d */
int grad_convolution_backward(struct amp_grad_ctx *ctx);

/* grad_elementwise.c: arithmetic, activations, and the double backward of
 * the activation backward ops */
int grad_add(struct amp_grad_ctx *ctx);
int grad_sub(struct amp_grad_ctx *ctx);
int grad_mul(struct amp_grad_ctx *ctx);
int grad_div(struct amp_grad_ctx *ctx);
int grad_add_scalar(struct amp_grad_ctx *ctx);
int grad_mul_scalar(struct amp_grad_ctx *ctx);
int grad_neg(struct amp_grad_ctx *ctx);
int grad_pow(struct amp_grad_ctx *ctx);
int grad_pow_scalar(struct amp_grad_ctx *ctx);
int grad_exp(struct amp_grad_ctx *ctx);
int grad_log(struct amp_grad_ctx *ctx);
int grad_relu(struct amp_grad_ctx *ctx);
int grad_gelu(struct amp_grad_ctx *ctx);
int grad_sigmoid(struct amp_grad_ctx *ctx);
int grad_tanh(struct amp_grad_ctx *ctx);
int grad_addcmul(struct amp_grad_ctx *ctx);
int grad_sqrt(struct amp_grad_ctx *ctx);
int grad_reciprocal(struct amp_grad_ctx *ctx);
int grad_clamp(struct amp_grad_ctx *ctx);
int grad_threshold_backward(struct amp_grad_ctx *ctx);
int grad_gelu_backward(struct amp_grad_ctx *ctx);
int grad_sigmoid_backward(struct amp_grad_ctx *ctx);
int grad_tanh_backward(struct amp_grad_ctx *ctx);
int grad_clamp_backward(struct amp_grad_ctx *ctx);

/* grad_reduce.c: normalisation, reductions, shape ops, embedding,
 * dropout, and the double backward of their backward ops */
int grad_softmax(struct amp_grad_ctx *ctx);
int grad_log_softmax(struct amp_grad_ctx *ctx);
int grad_layer_norm(struct amp_grad_ctx *ctx);
int grad_sum(struct amp_grad_ctx *ctx);
int grad_sum_dim(struct amp_grad_ctx *ctx);
int grad_mean(struct amp_grad_ctx *ctx);
int grad_mean_dim(struct amp_grad_ctx *ctx);
int grad_linalg_vector_norm(struct amp_grad_ctx *ctx);
int grad_cat(struct amp_grad_ctx *ctx);
int grad_stack(struct amp_grad_ctx *ctx);
int grad_embedding(struct amp_grad_ctx *ctx);
int grad_dropout(struct amp_grad_ctx *ctx);
int grad_softmax_backward_data(struct amp_grad_ctx *ctx);
int grad_log_softmax_backward_data(struct amp_grad_ctx *ctx);
int grad_embedding_dense_backward(struct amp_grad_ctx *ctx);
int grad_layer_norm_backward(struct amp_grad_ctx *ctx);

/* grad_loss.c: losses and the double backward of their backward ops */
int grad_mse_loss(struct amp_grad_ctx *ctx);
int grad_nll_loss(struct amp_grad_ctx *ctx);
int grad_binary_cross_entropy(struct amp_grad_ctx *ctx);
int grad_bce_with_logits(struct amp_grad_ctx *ctx);
int grad_mse_loss_backward(struct amp_grad_ctx *ctx);
int grad_nll_loss_backward(struct amp_grad_ctx *ctx);
int grad_binary_cross_entropy_backward(struct amp_grad_ctx *ctx);

#endif /* AMP_GRAD_FORMULAS_H */
