/* Backward kernels of the losses, in opmath, rounded once.  `reduction`
 * is enum amp_reduction: with 'none' grad_output has the loss's shape,
 * otherwise it is the 0-dim gradient of the reduced loss ('mean' divides
 * by the element count, or by the total weight for nll_loss).  Argument
 * layouts:
 *   mse_loss_backward (grad_output, self, target, int reduction)
 *     = 2 * (self - target) * grad
 *   nll_loss_backward (grad_output, self, target, weight?, int reduction,
 *                      int ignore_index)
 *     = -weight[target] * grad at the target class, 0 elsewhere
 *   binary_cross_entropy_backward (grad_output, self, target, weight?,
 *                                  int reduction)
 *     = grad * weight * (self - target) / max(self * (1 - self), 1e-12) */
#include "grad/kernels.h"

#include <inttypes.h>
#include <stdlib.h>

/* PyTorch's EPSILON in binary_cross_entropy_backward. */
#define BCE_BACKWARD_EPSILON 1e-12

#define DEFINE_POINTWISE_LOSS_BACKWARD(name, T)                              \
	/* v: grad, self, target, weight (broadcast, weight may be NULL) */  \
	static void name(const void *const *v, T *out, size_t n, bool bce,   \
			 T scale)                                            \
	{                                                                    \
		const T *g = v[0], *x = v[1], *t = v[2], *w = v[3];          \
		for (size_t i = 0; i < n; i++) {                             \
			T d = x[i] - t[i];                                   \
			if (bce) {                                           \
				T denominator = ((T)1 - x[i]) * x[i];        \
				if (denominator < (T)BCE_BACKWARD_EPSILON)   \
					denominator = (T)BCE_BACKWARD_EPSILON; \
				d /= denominator;                            \
			} else {                                             \
				d *= (T)2;                                   \
			}                                                    \
			if (w)                                               \
				d *= w[i];                                   \
			out[i] = d * g[i] * scale;                           \
		}                                                            \
	}

DEFINE_POINTWISE_LOSS_BACKWARD(pointwise_loss_backward_f32, float)
DEFINE_POINTWISE_LOSS_BACKWARD(pointwise_loss_backward_f64, double)

static int pointwise_loss_backward(struct amp_call *call, bool bce,
				   struct amp_tensor *weight, int64_t reduction)
{
	struct amp_tensor *operands[4] = { cpu_arg_tensor(call, 0),
					   cpu_arg_tensor(call, 1),
					   cpu_arg_tensor(call, 2), weight };
	const char *kernel = bce ? "binary_cross_entropy_backward"
				 : "mse_backward_cpu";
	struct grad_operands ops;
	enum amp_dtype result;
	int status = grad_float_result(kernel, 4, operands, &result);

	if (status != AMP_OK)
		return status;
	enum amp_dtype opmath = cpu_opmath(result);
	status = grad_operands_load(&ops, 4, operands, opmath);
	if (status != AMP_OK)
		return cpu_error_with(status, operands[1], operands[2]);
	/* the gradient takes the shape of self and target, not grad's */
	int ndim = 0;
	int64_t shape[AMP_MAX_DIMS];
	for (int i = 1; i < 4 && status == AMP_OK; i++)
		if (operands[i])
			status = cpu_broadcast_into(&ndim, shape,
						    operands[i]->ndim,
						    operands[i]->shape);
	void *values = cpu_alloc(ops.numel, opmath);
	if (status == AMP_OK && !values)
		status = amp_last_status();
	if (status == AMP_OK) {
		double scale = reduction == AMP_REDUCTION_MEAN
				       ? 1.0 / (double)amp_shape_numel(ndim,
								       shape)
				       : 1.0;
		if (opmath == AMP_DTYPE_F32)
			pointwise_loss_backward_f32(ops.values, values,
						    ops.numel, bce,
						    (float)scale);
		else
			pointwise_loss_backward_f64(ops.values, values,
						    ops.numel, bce, scale);
		status = grad_output_from(call, 0, ops.ndim, ops.shape, result,
					  operands[1]->device, values, opmath);
	}
	grad_operands_release(&ops);
	free(values);
	return status;
}

int amp_forward_mse_loss_backward(struct amp_call *call)
{
	return pointwise_loss_backward(call, false, NULL, call->args[3].i);
}

int amp_forward_binary_cross_entropy_backward(struct amp_call *call)
{
	return pointwise_loss_backward(call, true, cpu_arg_tensor(call, 3),
				       call->args[4].i);
}

#define DEFINE_NLL_BACKWARD(name, T)                                         \
	/* self: (batch, classes, spatial); target, g (none): (batch,       \
	 * spatial); out zeroed */                                           \
	static void name(const T *g, const int64_t *target, const T *weight, \
			 T *out, int64_t batch, int64_t classes,             \
			 int64_t spatial, int64_t ignore_index, bool elementwise, \
			 double total_weight)                                \
	{                                                                    \
		for (int64_t n = 0; n < batch; n++)                          \
			for (int64_t s = 0; s < spatial; s++) {              \
				int64_t i = n * spatial + s;                 \
				int64_t t = target[i];                       \
				if (t == ignore_index || t < 0 || t >= classes) \
					continue;                            \
				T w = weight ? weight[t] : (T)1;             \
				T v = elementwise ? g[i] : g[0];             \
				out[(n * classes + t) * spatial + s] =       \
					-w * v / (T)total_weight;            \
			}                                                    \
	}

DEFINE_NLL_BACKWARD(nll_backward_f32, float)
DEFINE_NLL_BACKWARD(nll_backward_f64, double)

int amp_forward_nll_loss_backward(struct amp_call *call)
{
	struct amp_tensor *grad = cpu_arg_tensor(call, 0);
	struct amp_tensor *self = cpu_arg_tensor(call, 1);
	struct amp_tensor *target = cpu_arg_tensor(call, 2);
	struct amp_tensor *weight = cpu_arg_tensor(call, 3);
	int64_t reduction = call->args[4].i;
	int64_t ignore_index = call->args[5].i;

	if (!amp_dtype_is_floating(self->dtype))
		return cpu_not_implemented("nll_loss_backward_out_frame", self);
	bool batched = self->ndim >= 2;
	int64_t batch = batched ? self->shape[0] : 1;
	int64_t classes = batched ? self->shape[1] : self->shape[0];
	int64_t spatial = 1;
	for (int d = 2; d < self->ndim; d++)
		spatial *= self->shape[d];
	int64_t count = batch * spatial;
	if (amp_tensor_numel(target) != count ||
	    (reduction == AMP_REDUCTION_NONE && amp_tensor_numel(grad) != count))
		return amp_error(AMP_ERR_INVALID,
				 "nll_loss_backward: target or grad_output "
				 "does not match self");
	enum amp_dtype opmath = cpu_opmath(self->dtype);
	void *owned[2] = { 0 };
	const void *g = cpu_load(grad, grad->dtype, opmath, &owned[0]);
	const void *w = weight ? cpu_load(weight, weight->dtype, opmath,
					  &owned[1])
			       : NULL;
	int64_t *index = cpu_alloc((size_t)count, AMP_DTYPE_I64);
	void *values = calloc((size_t)amp_tensor_numel(self) + 1,
			      amp_dtype_size(opmath));
	int status = g && (w || !weight) && index && values
			     ? AMP_OK
			     : amp_error(AMP_ERR_NOMEM,
					 "out of memory in nll_loss backward");
	if (status == AMP_OK) {
		amp_tensor_gather(target, AMP_DTYPE_I64, index);
		double total_weight = 1;
		if (reduction == AMP_REDUCTION_MEAN) {
			double *weights = NULL;
			if (weight) {
				weights = cpu_alloc((size_t)classes,
						    AMP_DTYPE_F64);
				if (weights)
					amp_tensor_gather(weight, AMP_DTYPE_F64,
							  weights);
			}
			total_weight = 0;
			for (int64_t i = 0; i < count; i++)
				if (index[i] != ignore_index &&
				    index[i] >= 0 && index[i] < classes)
					total_weight +=
						weights ? weights[index[i]] : 1;
			free(weights);
		}
		bool elementwise = reduction == AMP_REDUCTION_NONE;
		if (opmath == AMP_DTYPE_F32)
			nll_backward_f32(g, index, w, values, batch, classes,
					 spatial, ignore_index, elementwise,
					 total_weight);
		else
			nll_backward_f64(g, index, w, values, batch, classes,
					 spatial, ignore_index, elementwise,
					 total_weight);
		status = grad_output_from(call, 0, self->ndim, self->shape,
					  self->dtype, self->device, values,
					  opmath);
	}
	free(owned[0]);
	free(owned[1]);
	free(index);
	free(values);
	return status;
}
