/* native_layer_norm_backward: the statistics are recomputed from the
 * input in opmath (ATen reuses the forward's saved mean/rstd; the values
 * are the same), with xhat = (x - mean) * rstd and dy = g * weight:
 *   grad_input  = rstd * (dy - mean(dy) - xhat * mean(dy * xhat))
 *   grad_weight = sum over rows of g * xhat
 *   grad_bias   = sum over rows of g
 * Argument layout: native_layer_norm_backward (grad_out, input,
 *   ints normalized_shape, weight?, bias?, double eps); outputs grad_input
 *   (input's dtype), then grad_weight and grad_bias when weight / bias are
 *   given (their dtypes). */
#include "grad/kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DEFINE_LAYER_NORM_BACKWARD(name, T, SQRT)                            \
	/* g, x, gx: (rows, n); w: (n) or NULL; gw, gb: (n), zeroed */       \
	static void name(const T *g, const T *x, const T *w, T *gx, T *gw,   \
			 T *gb, int64_t rows, int64_t n, double eps)         \
	{                                                                    \
		for (int64_t r = 0; r < rows; r++) {                         \
			const T *gr = g + r * n, *xr = x + r * n;            \
			T *out = gx + r * n;                                 \
			T mean = 0, var = 0;                                 \
			for (int64_t i = 0; i < n; i++)                      \
				mean += xr[i];                               \
			mean /= (T)n;                                        \
			for (int64_t i = 0; i < n; i++)                      \
				var += (xr[i] - mean) * (xr[i] - mean);      \
			var /= (T)n;                                         \
			T rstd = (T)1 / SQRT(var + (T)eps);                  \
			T mean_dy = 0, mean_dy_xhat = 0;                     \
			for (int64_t i = 0; i < n; i++) {                    \
				T xhat = (xr[i] - mean) * rstd;              \
				T dy = w ? gr[i] * w[i] : gr[i];             \
				mean_dy += dy;                               \
				mean_dy_xhat += dy * xhat;                   \
				gw[i] += gr[i] * xhat;                       \
				gb[i] += gr[i];                              \
			}                                                    \
			mean_dy /= (T)n;                                     \
			mean_dy_xhat /= (T)n;                                \
			for (int64_t i = 0; i < n; i++) {                    \
				T xhat = (xr[i] - mean) * rstd;              \
				T dy = w ? gr[i] * w[i] : gr[i];             \
				out[i] = rstd * (dy - mean_dy -              \
						 xhat * mean_dy_xhat);       \
			}                                                    \
		}                                                            \
	}

DEFINE_LAYER_NORM_BACKWARD(layer_norm_backward_f32, float, sqrtf)
DEFINE_LAYER_NORM_BACKWARD(layer_norm_backward_f64, double, sqrt)

int amp_forward_layer_norm_backward(struct amp_call *call)
{
	struct amp_tensor *grad = cpu_arg_tensor(call, 0);
	struct amp_tensor *input = cpu_arg_tensor(call, 1);
	const struct amp_arg *normalized = &call->args[2];
	struct amp_tensor *weight = cpu_arg_tensor(call, 3);
	struct amp_tensor *bias = cpu_arg_tensor(call, 4);
	double eps = call->args[5].d;
	int64_t n = amp_shape_numel(normalized->ints.count, normalized->ints.v);
	int64_t numel = amp_tensor_numel(input);
	int norm_ndim = normalized->ints.count;

	if (!amp_dtype_is_floating(input->dtype))
		return cpu_not_implemented("layer_norm_backward_cpu", input);
	if (norm_ndim < 1 || norm_ndim > input->ndim || n == 0 ||
	    amp_tensor_numel(grad) != numel ||
	    memcmp(input->shape + input->ndim - norm_ndim, normalized->ints.v,
		   (size_t)norm_ndim * sizeof(int64_t)) != 0) {
		amp_error(AMP_ERR_INVALID,
			  "native_layer_norm_backward: grad_out, input and "
			  "normalized_shape do not match");
		return cpu_error_with(AMP_ERR_INVALID, grad, input);
	}
	int64_t rows = numel / n;
	enum amp_dtype opmath = cpu_opmath(input->dtype);
	void *owned[3] = { 0 };
	const void *g = cpu_load(grad, grad->dtype, opmath, &owned[0]);
	const void *x = cpu_load(input, input->dtype, opmath, &owned[1]);
	const void *w = weight ? cpu_load(weight, weight->dtype, opmath,
					  &owned[2])
			       : NULL;
	void *gx = cpu_alloc((size_t)numel, opmath);
	void *gw = calloc((size_t)n, amp_dtype_size(opmath));
	void *gb = calloc((size_t)n, amp_dtype_size(opmath));
	int status = g && x && (w || !weight) && gx && gw && gb
			     ? AMP_OK
			     : amp_error(AMP_ERR_NOMEM,
					 "out of memory in layer_norm backward");
	if (status == AMP_OK) {
		if (opmath == AMP_DTYPE_F32)
			layer_norm_backward_f32(g, x, w, gx, gw, gb, rows, n,
						eps);
		else
			layer_norm_backward_f64(g, x, w, gx, gw, gb, rows, n,
						eps);
		status = grad_output_from(call, 0, input->ndim, input->shape,
					  input->dtype, input->device, gx,
					  opmath);
	}
	if (status == AMP_OK && weight)
		status = grad_output_from(call, 1, weight->ndim, weight->shape,
					  weight->dtype, weight->device, gw,
					  opmath);
	if (status == AMP_OK && bias)
		status = grad_output_from(call, call->noutputs, bias->ndim,
					  bias->shape, bias->dtype,
					  bias->device, gb, opmath);
	for (int i = 0; i < 3; i++)
		free(owned[i]);
	free(gx);
	free(gw);
	free(gb);
	return grad_outputs_drop_on_error(call, status);
}
