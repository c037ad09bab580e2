/* dropout(input, p, train): inverted dropout with the global generator.
 * As ATen's CPU path: noise = bernoulli(1 - p) / (1 - p) in the input's
 * dtype (so the scale is rounded to f16/bf16 for those), then
 * input * noise.  !train, p == 0 or an empty input return the input
 * itself; p == 1 gives zeros.
 * Argument layout: dropout (input, float p, bool train) */
#include "cpu_ops.h"

#include <stdlib.h>
#include <string.h>

CPU_VECTORIZE_LOOPS

#define DEFINE_DROPOUT(name, T)                                              \
	static void name(const T *x, const double *uniform, T *y, int64_t n,  \
			 double p, T scale)                                  \
	{                                                                    \
		for (int64_t i = 0; i < n; i++)                              \
			y[i] = uniform[i] < 1.0 - p ? x[i] * scale : (T)0;   \
	}

DEFINE_DROPOUT(dropout_f32, float)
DEFINE_DROPOUT(dropout_f64, double)

int amp_forward_dropout(struct amp_call *call)
{
	struct amp_tensor *input = cpu_arg_tensor(call, 0);
	double p = call->args[1].d;
	bool train = call->args[2].b;
	int64_t n = amp_tensor_numel(input);

	if (!(p >= 0 && p <= 1)) {
		amp_error(AMP_ERR_INVALID,
			  "dropout probability has to be between 0 and 1, but "
			  "got %g",
			  p);
		return cpu_error_with(AMP_ERR_INVALID, input, NULL);
	}
	if (p == 0 || !train || n == 0)
		return cpu_set_output(call, amp_tensor_ref(input));
	if (!amp_dtype_is_floating(input->dtype)) {
		amp_error(AMP_ERR_DTYPE,
			  "result type Float can't be cast to the desired output "
			  "type %s",
			  amp_dtype_torch_name(input->dtype));
		return cpu_error_with(AMP_ERR_DTYPE, input, NULL);
	}
	enum amp_dtype opmath = cpu_opmath(input->dtype);
	struct amp_tensor *out = amp_tensor_alloc(input->ndim, input->shape,
						  input->dtype, input->device);
	if (!out)
		return amp_last_status();
	/* 1 / (1 - p) as noise.div_(1 - p) leaves it: divided in opmath
	 * (f32 below f64), then held in the input dtype */
	double scale = opmath == AMP_DTYPE_F32
			       ? (double)(1.0f / (float)(1.0 - p))
			       : 1.0 / (1.0 - p);
	double scale_rounded;
	uint64_t stored;
	amp_convert(&stored, input->dtype, &scale, AMP_DTYPE_F64, 1);
	amp_convert(&scale_rounded, AMP_DTYPE_F64, &stored, input->dtype, 1);

	void *owned = NULL;
	const void *x = cpu_load(input, input->dtype, opmath, &owned);
	double *uniform = cpu_alloc((size_t)n, AMP_DTYPE_F64);
	void *values = cpu_alloc((size_t)n, opmath);
	int status = x && uniform && values ? AMP_OK : amp_last_status();
	if (status == AMP_OK) {
		/* p == 1 multiplies by zeros without drawing, as ATen does */
		if (p == 1)
			memset(values, 0, (size_t)n * amp_dtype_size(opmath));
		else
			cpu_random_uniform(uniform, (size_t)n);
		if (p < 1 && opmath == AMP_DTYPE_F32)
			dropout_f32(x, uniform, values, n, p,
				    (float)scale_rounded);
		else if (p < 1)
			dropout_f64(x, uniform, values, n, p, scale_rounded);
		cpu_store(out, values, opmath);
	}
	free(owned);
	free(uniform);
	free(values);
	return cpu_set_output_or_free(call, out, status);
}
