/* The ops backward formulas dispatch that amp.h has no function for:
 * expand, and ATen's dedicated backward ops (the last group of
 * op_list.h).  Each builds an amp_call and runs it through the dispatcher,
 * so it is a traced op like any other (policy none: autocast never casts
 * a backward op's arguments, as in PyTorch).  Their CPU forward functions
 * are in lib/grad/kernels_*.c, declared with every other op's by
 * lib/cpu/cpu_ops.h; each file states its argument layouts.
 * Return a new reference, or NULL with the error recorded. */
#ifndef AMP_GRAD_OPS_H
#define AMP_GRAD_OPS_H

#include "amp_internal.h"

/* expand (self, ints size): a stride-0 view; -1 keeps a size. */
struct amp_tensor *grad_op_expand(struct amp_tensor *self, int ndim,
				  const int64_t *shape);

/* Activations: relu's is threshold_backward(grad, result, 0). */
struct amp_tensor *grad_op_threshold_backward(struct amp_tensor *grad,
					      struct amp_tensor *self,
					      double threshold);
struct amp_tensor *grad_op_gelu_backward(struct amp_tensor *grad,
					 struct amp_tensor *self,
					 bool tanh_approximation);
struct amp_tensor *grad_op_sigmoid_backward(struct amp_tensor *grad,
					    struct amp_tensor *output);
struct amp_tensor *grad_op_tanh_backward(struct amp_tensor *grad,
					 struct amp_tensor *output);
/* min/max NaN = None; the gradient passes where min <= self <= max. */
struct amp_tensor *grad_op_clamp_backward(struct amp_tensor *grad,
					  struct amp_tensor *self, double min,
					  double max);

/* Softmax family: the result has input_dtype (the forward input's). */
struct amp_tensor *grad_op_softmax_backward_data(struct amp_tensor *grad,
						 struct amp_tensor *output,
						 int64_t dim,
						 enum amp_dtype input_dtype);
struct amp_tensor *grad_op_log_softmax_backward_data(
	struct amp_tensor *grad, struct amp_tensor *output, int64_t dim,
	enum amp_dtype input_dtype);

/* native_layer_norm_backward: out[0] grad_input, then grad_weight when
 * weight is given, then grad_bias when bias is given.  Returns status. */
int grad_op_layer_norm_backward(struct amp_tensor *grad,
				struct amp_tensor *input,
				const struct amp_arg *normalized_shape,
				struct amp_tensor *weight,
				struct amp_tensor *bias, double eps,
				struct amp_tensor *out[3]);

/* convolution_backward: out[0] grad_input, out[1] grad_weight, out[2]
 * grad_bias when has_bias.  stride/padding/dilation are the forward's
 * AMP_ARG_INTS arguments.  Returns status. */
int grad_op_convolution_backward(struct amp_tensor *grad,
				 struct amp_tensor *input,
				 struct amp_tensor *weight,
				 const struct amp_arg *stride,
				 const struct amp_arg *padding,
				 const struct amp_arg *dilation, int64_t groups,
				 bool has_bias, struct amp_tensor *out[3]);

/* Indexing. */
struct amp_tensor *grad_op_embedding_dense_backward(struct amp_tensor *grad,
						    struct amp_tensor *indices,
						    int64_t num_weights,
						    int64_t padding_idx);
struct amp_tensor *grad_op_slice_backward(struct amp_tensor *grad, int ndim,
					  const int64_t *input_sizes,
					  int64_t dim, int64_t start,
					  int64_t end, int64_t step);

/* Losses (reduction: enum amp_reduction). */
struct amp_tensor *grad_op_mse_loss_backward(struct amp_tensor *grad,
					     struct amp_tensor *self,
					     struct amp_tensor *target,
					     int64_t reduction);
struct amp_tensor *grad_op_nll_loss_backward(struct amp_tensor *grad,
					     struct amp_tensor *self,
					     struct amp_tensor *target,
					     struct amp_tensor *weight,
					     int64_t reduction,
					     int64_t ignore_index);
struct amp_tensor *grad_op_binary_cross_entropy_backward(
	struct amp_tensor *grad, struct amp_tensor *self,
	struct amp_tensor *target, struct amp_tensor *weight,
	int64_t reduction);

#endif /* AMP_GRAD_OPS_H */
