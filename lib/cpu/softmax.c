/* softmax and log_softmax along one dimension, numerically stable (the
 * row maximum is subtracted first).  With a dtype argument the input is
 * converted to it first and the output has it; otherwise the output keeps
 * the input dtype.  Computed in opmath, rounded once.
 * Argument layouts: softmax.int / log_softmax.int (self, int dim, dtype?) */
#include "cpu_ops.h"

#include <math.h>
#include <stdlib.h>

CPU_VECTORIZE_LOOPS

/* One row of n values `stride` apart (the softmax dim inside a
 * contiguous (outer, n, inner) block). */
#define DEFINE_SOFTMAX_ROW(name, T, EXP, LOG)                                \
	static void name(const T *x, T *y, int64_t n, int64_t stride,        \
			 bool log_form)                                      \
	{                                                                    \
		T max = -INFINITY, sum = 0;                                  \
		for (int64_t i = 0; i < n; i++)                              \
			max = x[i * stride] > max || x[i * stride] != x[i * stride] \
				      ? x[i * stride]                        \
				      : max;                                 \
		if (log_form) {                                              \
			for (int64_t i = 0; i < n; i++)                      \
				sum += EXP(x[i * stride] - max);             \
			T shift = max + LOG(sum);                            \
			for (int64_t i = 0; i < n; i++)                      \
				y[i * stride] = x[i * stride] - shift;       \
			return;                                              \
		}                                                            \
		for (int64_t i = 0; i < n; i++) {                            \
			T e = EXP(x[i * stride] - max);                      \
			y[i * stride] = e;                                   \
			sum += e;                                            \
		}                                                            \
		T inverse = 1 / sum; /* ATen multiplies by 1 / sum */        \
		for (int64_t i = 0; i < n; i++)                              \
			y[i * stride] *= inverse;                            \
	}

DEFINE_SOFTMAX_ROW(softmax_row_f32, float, expf, logf)
DEFINE_SOFTMAX_ROW(softmax_row_f64, double, exp, log)

static int softmax(struct amp_call *call, bool log_form)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	int64_t dim = call->args[1].i;
	enum amp_dtype dtype = call->args[2].dtype;
	enum amp_dtype result = dtype == AMP_DTYPE_NONE ? self->dtype : dtype;

	if (!cpu_wrap_dim(&dim, self->ndim))
		return cpu_error_with(amp_last_status(), self, NULL);
	if (!amp_dtype_is_floating(result)) {
		bool last = self->ndim == 0 || dim == self->ndim - 1;
		const char *kernel =
			log_form ? (last ? "log_softmax_lastdim_kernel_impl"
					 : "log_softmax_kernel_impl")
				 : (last ? "softmax_lastdim_kernel_impl"
					 : "softmax_kernel_impl");
		amp_error(AMP_ERR_UNSUPPORTED, "\"%s\" not implemented for '%s'",
			  kernel, amp_dtype_torch_name(result));
		return cpu_error_with(AMP_ERR_UNSUPPORTED, self, NULL);
	}
	enum amp_dtype opmath = cpu_opmath(result);
	int64_t n = self->ndim ? self->shape[dim] : 1;
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < self->ndim; d++) {
		if (d < dim)
			outer *= self->shape[d];
		else if (d > dim)
			inner *= self->shape[d];
	}
	struct amp_tensor *out =
		amp_tensor_alloc(self->ndim, self->shape, result, self->device);
	if (!out)
		return amp_last_status();
	void *owned = NULL;
	const void *in = cpu_load(self, result, opmath, &owned);
	void *values = cpu_result_buffer(out, opmath);
	if (!in || !values) {
		free(owned);
		cpu_result_release(out, values, opmath);
		amp_tensor_free(out);
		return amp_last_status();
	}
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t at = o * n * inner + i;
			if (opmath == AMP_DTYPE_F32)
				softmax_row_f32((const float *)in + at,
						(float *)values + at, n, inner,
						log_form);
			else
				softmax_row_f64((const double *)in + at,
						(double *)values + at, n, inner,
						log_form);
		}
	cpu_store(out, values, opmath);
	free(owned);
	cpu_result_release(out, values, opmath);
	return cpu_set_output(call, out);
}

int amp_forward_softmax(struct amp_call *call)
{
	return softmax(call, false);
}

int amp_forward_log_softmax(struct amp_call *call)
{
	return softmax(call, true);
}
