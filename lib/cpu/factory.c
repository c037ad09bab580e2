/* Factory kernels: new contiguous tensors of call->dtype on call->device.
 * Argument layouts:
 *   empty, zeros, randn, rand   (ints size)
 *   full                        (ints size, Scalar fill_value)
 *   tensor (from_data)          (ints size, int host address)
 *   scalar_tensor               (Scalar s) */
#include "cpu_ops.h"

#include <stdlib.h>
#include <string.h>

static struct amp_tensor *alloc_for(const struct amp_call *call)
{
	const struct amp_arg *size = &call->args[0];

	return amp_tensor_alloc(size->ints.count, size->ints.v, call->dtype,
				call->device);
}

/* Fills every element with one value converted from f64 (float to int
 * truncates, nonzero to bool is true, as PyTorch's fill_). */
static void fill_value(struct amp_tensor *t, double value)
{
	size_t size = amp_dtype_size(t->dtype);
	size_t n = (size_t)amp_tensor_numel(t);
	char *data = amp_tensor_data(t);

	if (n == 0)
		return;
	amp_convert(data, t->dtype, &value, AMP_DTYPE_F64, 1);
	for (size_t i = 1; i < n; i++)
		memcpy(data + i * size, data, size);
}

/* PyTorch leaves empty() uninitialised; zeroing it keeps reads of it (and
 * the traces of programs that make that mistake) deterministic. */
int amp_forward_empty(struct amp_call *call)
{
	struct amp_tensor *out = alloc_for(call);

	if (out)
		memset(amp_tensor_data(out), 0, amp_tensor_nbytes(out));
	return cpu_set_output(call, out);
}

int amp_forward_zeros(struct amp_call *call)
{
	return amp_forward_empty(call);
}

int amp_forward_full(struct amp_call *call)
{
	struct amp_tensor *out = alloc_for(call);

	if (out)
		fill_value(out, call->args[1].scalar.value);
	return cpu_set_output(call, out);
}

int amp_forward_from_data(struct amp_call *call)
{
	const void *data = (const void *)(intptr_t)call->args[1].i;
	struct amp_tensor *out = alloc_for(call);

	if (out && amp_tensor_nbytes(out))
		memcpy(amp_tensor_data(out), data, amp_tensor_nbytes(out));
	return cpu_set_output(call, out);
}

int amp_forward_scalar_tensor(struct amp_call *call)
{
	struct amp_tensor *out =
		amp_tensor_alloc(0, NULL, call->dtype, call->device);

	if (out)
		fill_value(out, call->args[0].scalar.value);
	return cpu_set_output(call, out);
}

/* Mantissa digits of each floating dtype: PyTorch draws uniform values as
 * multiples of 2^-digits so that rounding to the dtype never reaches 1.0. */
static const int uniform_digits[AMP_DTYPE_COUNT] = {
	[AMP_DTYPE_F64] = 53, [AMP_DTYPE_F32] = 24,
	[AMP_DTYPE_F16] = 11, [AMP_DTYPE_BF16] = 8,
};

static void quantize_uniform(double *values, size_t n, int digits)
{
	double scale = (double)(UINT64_C(1) << digits);

	for (size_t i = 0; i < n; i++)
		values[i] = (double)(int64_t)(values[i] * scale) / scale;
}

/* Random factories draw in f64 and round once to the dtype. */
static int random_factory(struct amp_call *call, bool normal,
			  const char *kernel)
{
	if (!amp_dtype_is_floating(call->dtype))
		return amp_error(AMP_ERR_UNSUPPORTED,
				 "\"%s\" not implemented for '%s'", kernel,
				 amp_dtype_torch_name(call->dtype));
	struct amp_tensor *out = alloc_for(call);
	if (!out)
		return amp_last_status();
	size_t n = (size_t)amp_tensor_numel(out);
	double *values = cpu_alloc(n, AMP_DTYPE_F64);
	if (!values) {
		amp_tensor_free(out);
		return amp_last_status();
	}
	if (normal) {
		cpu_random_normal(values, n);
	} else {
		cpu_random_uniform(values, n);
		quantize_uniform(values, n, uniform_digits[call->dtype]);
	}
	amp_convert(amp_tensor_data(out), out->dtype, values, AMP_DTYPE_F64, n);
	free(values);
	return cpu_set_output(call, out);
}

int amp_forward_randn(struct amp_call *call)
{
	return random_factory(call, true, "normal_kernel_cpu");
}

int amp_forward_rand(struct amp_call *call)
{
	return random_factory(call, false, "check_uniform_bounds");
}
