/* Dispatched calls of the backward ops (grad_ops.h): each builds the
 * amp_call with the layout its kernel documents and runs it through the
 * dispatcher. */
#include "grad/grad_ops.h"

static struct amp_tensor *run(struct amp_call call)
{
	return amp_dispatch1(&call);
}

/* Runs a multi-output call into out[] (new references). */
static int run_many(struct amp_call call, struct amp_tensor *out[3])
{
	int status = amp_dispatch(&call);

	for (int o = 0; o < 3; o++)
		out[o] = status == AMP_OK && o < call.noutputs ? call.outputs[o]
							       : NULL;
	return status;
}

struct amp_tensor *grad_op_expand(struct amp_tensor *self, int ndim,
				  const int64_t *shape)
{
	return run(AMP_CALL(EXPAND, amp_arg_tensor(self),
			    amp_arg_ints(ndim, shape)));
}

struct amp_tensor *grad_op_threshold_backward(struct amp_tensor *grad,
					      struct amp_tensor *self,
					      double threshold)
{
	return run(AMP_CALL(
		THRESHOLD_BACKWARD, amp_arg_tensor(grad), amp_arg_tensor(self),
		amp_arg_scalar(threshold, threshold == (int64_t)threshold)));
}

struct amp_tensor *grad_op_gelu_backward(struct amp_tensor *grad,
					 struct amp_tensor *self,
					 bool tanh_approximation)
{
	return run(AMP_CALL(GELU_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(self),
			    amp_arg_bool(tanh_approximation)));
}

struct amp_tensor *grad_op_sigmoid_backward(struct amp_tensor *grad,
					    struct amp_tensor *output)
{
	return run(AMP_CALL(SIGMOID_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(output)));
}

struct amp_tensor *grad_op_tanh_backward(struct amp_tensor *grad,
					 struct amp_tensor *output)
{
	return run(AMP_CALL(TANH_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(output)));
}

struct amp_tensor *grad_op_clamp_backward(struct amp_tensor *grad,
					  struct amp_tensor *self, double min,
					  double max)
{
	return run(AMP_CALL(CLAMP_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(self), amp_arg_double(min),
			    amp_arg_double(max)));
}

struct amp_tensor *grad_op_softmax_backward_data(struct amp_tensor *grad,
						 struct amp_tensor *output,
						 int64_t dim,
						 enum amp_dtype input_dtype)
{
	return run(AMP_CALL(SOFTMAX_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(output), amp_arg_int(dim),
			    amp_arg_dtype(input_dtype)));
}

struct amp_tensor *grad_op_log_softmax_backward_data(
	struct amp_tensor *grad, struct amp_tensor *output, int64_t dim,
	enum amp_dtype input_dtype)
{
	return run(AMP_CALL(LOG_SOFTMAX_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(output), amp_arg_int(dim),
			    amp_arg_dtype(input_dtype)));
}

int grad_op_layer_norm_backward(struct amp_tensor *grad,
				struct amp_tensor *input,
				const struct amp_arg *normalized_shape,
				struct amp_tensor *weight,
				struct amp_tensor *bias, double eps,
				struct amp_tensor *out[3])
{
	return run_many(AMP_CALL(LAYER_NORM_BACKWARD, amp_arg_tensor(grad),
				 amp_arg_tensor(input), *normalized_shape,
				 amp_arg_opt_tensor(weight),
				 amp_arg_opt_tensor(bias), amp_arg_double(eps)),
			out);
}

int grad_op_convolution_backward(struct amp_tensor *grad,
				 struct amp_tensor *input,
				 struct amp_tensor *weight,
				 const struct amp_arg *stride,
				 const struct amp_arg *padding,
				 const struct amp_arg *dilation, int64_t groups,
				 bool has_bias, struct amp_tensor *out[3])
{
	return run_many(AMP_CALL(CONVOLUTION_BACKWARD, amp_arg_tensor(grad),
				 amp_arg_tensor(input), amp_arg_tensor(weight),
				 *stride, *padding, *dilation,
				 amp_arg_int(groups), amp_arg_bool(has_bias)),
			out);
}

struct amp_tensor *grad_op_embedding_dense_backward(struct amp_tensor *grad,
						    struct amp_tensor *indices,
						    int64_t num_weights,
						    int64_t padding_idx)
{
	return run(AMP_CALL(EMBEDDING_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(indices), amp_arg_int(num_weights),
			    amp_arg_int(padding_idx), amp_arg_bool(false)));
}

struct amp_tensor *grad_op_slice_backward(struct amp_tensor *grad, int ndim,
					  const int64_t *input_sizes,
					  int64_t dim, int64_t start,
					  int64_t end, int64_t step)
{
	return run(AMP_CALL(SLICE_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_ints(ndim, input_sizes), amp_arg_int(dim),
			    amp_arg_int(start), amp_arg_int(end),
			    amp_arg_int(step)));
}

struct amp_tensor *grad_op_mse_loss_backward(struct amp_tensor *grad,
					     struct amp_tensor *self,
					     struct amp_tensor *target,
					     int64_t reduction)
{
	return run(AMP_CALL(MSE_LOSS_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(self), amp_arg_tensor(target),
			    amp_arg_int(reduction)));
}

struct amp_tensor *grad_op_nll_loss_backward(struct amp_tensor *grad,
					     struct amp_tensor *self,
					     struct amp_tensor *target,
					     struct amp_tensor *weight,
					     int64_t reduction,
					     int64_t ignore_index)
{
	return run(AMP_CALL(NLL_LOSS_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(self), amp_arg_tensor(target),
			    amp_arg_opt_tensor(weight), amp_arg_int(reduction),
			    amp_arg_int(ignore_index)));
}

struct amp_tensor *grad_op_binary_cross_entropy_backward(
	struct amp_tensor *grad, struct amp_tensor *self,
	struct amp_tensor *target, struct amp_tensor *weight,
	int64_t reduction)
{
	return run(AMP_CALL(BCE_BACKWARD, amp_arg_tensor(grad),
			    amp_arg_tensor(self), amp_arg_tensor(target),
			    amp_arg_opt_tensor(weight),
			    amp_arg_int(reduction)));
}
