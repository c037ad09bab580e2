/* layer_norm over the last normalized_ndim dimensions: statistics in
 * opmath, optional elementwise weight and bias, output in the input's
 * dtype.  On the CPU a f16/bf16 input may take f32 weight/bias (ATen's
 * "mixed dtype" path); other mixes are rejected with its message.
 * Argument layout: layer_norm (input, ints normalized_shape, weight?,
 * bias?, float eps) */
#include "cpu_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

CPU_VECTORIZE_LOOPS

static int shape_error(const struct amp_tensor *input, int ndim,
		       const int64_t *normalized)
{
	char want[128], got[128], tail[160];
	size_t used = (size_t)snprintf(tail, sizeof tail, "[*");

	for (int d = 0; d < ndim && used < sizeof tail; d++)
		used += (size_t)snprintf(tail + used, sizeof tail - used,
					 ", %lld", (long long)normalized[d]);
	if (used < sizeof tail)
		snprintf(tail + used, sizeof tail - used, "]");
	amp_error(AMP_ERR_INVALID,
		  "Given normalized_shape=%s, expected input with shape %s, but "
		  "got input of size%s",
		  cpu_shape_string(ndim, normalized, want, sizeof want), tail,
		  cpu_shape_string(input->ndim, input->shape, got, sizeof got));
	return cpu_error_with(AMP_ERR_INVALID, input, NULL);
}

static int check_param(const struct amp_tensor *param, const char *what,
		       int ndim, const int64_t *normalized)
{
	char got[128], want[128];

	if (!param)
		return AMP_OK;
	if (param->ndim == ndim &&
	    !memcmp(param->shape, normalized, (size_t)ndim * sizeof *normalized))
		return AMP_OK;
	amp_error(AMP_ERR_INVALID,
		  "Expected %s to be of same shape as normalized_shape, but got "
		  "%s of shape %s and normalized_shape = %s",
		  what, what,
		  cpu_shape_string(param->ndim, param->shape, got, sizeof got),
		  cpu_shape_string(ndim, normalized, want, sizeof want));
	return cpu_error_with(AMP_ERR_INVALID, param, NULL);
}

/* ATen's is_mixed_type / check_mixed_data_type (cpu/mixed_data_type.h). */
static int check_dtypes(const struct amp_tensor *input,
			const struct amp_tensor *weight,
			const struct amp_tensor *bias)
{
	const struct amp_tensor *params[2] = { weight, bias };
	bool mixed = false;

	for (int i = 0; i < 2; i++)
		if (params[i] && params[i]->dtype != input->dtype)
			mixed = true;
	if (!mixed)
		return AMP_OK;
	for (int i = 0; i < 2; i++)
		if (params[i] && params[i]->dtype != AMP_DTYPE_F32) {
			amp_error(AMP_ERR_DTYPE, "mixed dtype (CPU): expect "
						 "parameter to have scalar type "
						 "of Float");
			return cpu_error_with(AMP_ERR_DTYPE, input, params[i]);
		}
	if (input->dtype != AMP_DTYPE_BF16 && input->dtype != AMP_DTYPE_F16) {
		amp_error(AMP_ERR_DTYPE,
			  "mixed dtype (CPU): all inputs must share same "
			  "datatype.");
		return cpu_error_with(AMP_ERR_DTYPE, input, weight ? weight : bias);
	}
	return AMP_OK;
}

#define DEFINE_LAYER_NORM(name, T, SQRT)                                     \
	/* x, y: (rows, n); weight, bias: (n) or NULL */                     \
	static void name(const T *x, T *y, int64_t rows, int64_t n,          \
			 const T *weight, const T *bias, double eps)         \
	{                                                                    \
		for (int64_t r = 0; r < rows; r++) {                         \
			const T *row = x + r * n;                            \
			T *out = y + r * n;                                  \
			T mean = 0, var = 0;                                 \
			for (int64_t i = 0; i < n; i++)                      \
				mean += row[i];                              \
			mean /= (T)n;                                        \
			for (int64_t i = 0; i < n; i++)                      \
				var += (row[i] - mean) * (row[i] - mean);    \
			var /= (T)n;                                         \
			T rstd = (T)1 / SQRT(var + (T)eps);                  \
			for (int64_t i = 0; i < n; i++) {                    \
				T v = (row[i] - mean) * rstd;                \
				if (weight)                                  \
					v *= weight[i];                      \
				if (bias)                                    \
					v += bias[i];                        \
				out[i] = v;                                  \
			}                                                    \
		}                                                            \
	}

DEFINE_LAYER_NORM(layer_norm_f32, float, sqrtf)
DEFINE_LAYER_NORM(layer_norm_f64, double, sqrt)

int amp_forward_layer_norm(struct amp_call *call)
{
	struct amp_tensor *input = cpu_arg_tensor(call, 0);
	const struct amp_arg *normalized = &call->args[1];
	struct amp_tensor *weight = cpu_arg_tensor(call, 2);
	struct amp_tensor *bias = cpu_arg_tensor(call, 3);
	double eps = call->args[4].d;
	int ndim = normalized->ints.count;
	int status;

	if (ndim < 1) {
		amp_error(AMP_ERR_INVALID,
			  "Expected normalized_shape to be at least 1-dimensional, "
			  "i.e., containing at least one element, but got "
			  "normalized_shape = []");
		return cpu_error_with(AMP_ERR_INVALID, input, NULL);
	}
	if (input->ndim < ndim ||
	    memcmp(input->shape + input->ndim - ndim, normalized->ints.v,
		   (size_t)ndim * sizeof(int64_t)))
		return shape_error(input, ndim, normalized->ints.v);
	status = check_param(weight, "weight", ndim, normalized->ints.v);
	if (status == AMP_OK)
		status = check_param(bias, "bias", ndim, normalized->ints.v);
	if (status == AMP_OK)
		status = check_dtypes(input, weight, bias);
	if (status != AMP_OK)
		return status;
	if (!amp_dtype_is_floating(input->dtype))
		return cpu_not_implemented("LayerNormKernelImpl", input);

	enum amp_dtype opmath = cpu_opmath(input->dtype);
	int64_t n = amp_shape_numel(ndim, normalized->ints.v);
	int64_t rows = n ? amp_tensor_numel(input) / n : 0;
	struct amp_tensor *out = amp_tensor_alloc(input->ndim, input->shape,
						  input->dtype, input->device);
	if (!out)
		return amp_last_status();
	void *owned[3] = { NULL, NULL, NULL };
	const void *x = cpu_load(input, input->dtype, opmath, &owned[0]);
	const void *w = weight ? cpu_load(weight, weight->dtype, opmath,
					  &owned[1])
			       : NULL;
	const void *b = bias ? cpu_load(bias, bias->dtype, opmath, &owned[2])
			     : NULL;
	void *values = cpu_result_buffer(out, opmath);
	status = x && values && (w || !weight) && (b || !bias)
			 ? AMP_OK
			 : amp_last_status();
	if (status == AMP_OK) {
		if (opmath == AMP_DTYPE_F32)
			layer_norm_f32(x, values, rows, n, w, b, eps);
		else
			layer_norm_f64(x, values, rows, n, w, b, eps);
		cpu_store(out, values, opmath);
	}
	for (int i = 0; i < 3; i++)
		free(owned[i]);
	cpu_result_release(out, values, opmath);
	return cpu_set_output_or_free(call, out, status);
}
