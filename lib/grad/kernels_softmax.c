/* Backward kernels of softmax and log_softmax along one dimension, in the
 * opmath of the gradient/output dtypes, written in the forward input's
 * dtype (ATen's input_dtype argument).  Argument layouts:
 *   _softmax_backward_data (grad_output, output, int dim, dtype input_dtype)
 *   _log_softmax_backward_data (same)
 * softmax:      grad_input = y * (g - sum(g * y))
 * log_softmax:  grad_input = g - exp(y) * sum(g) */
#include "grad/kernels.h"

#include <math.h>
#include <stdlib.h>

#define DEFINE_SOFTMAX_BACKWARD_ROW(name, T, EXP)                            \
	static void name(const T *g, const T *y, T *out, int64_t n,          \
			 int64_t stride, bool log_form)                      \
	{                                                                    \
		T sum = 0;                                                   \
		for (int64_t i = 0; i < n; i++)                              \
			sum += log_form ? g[i * stride]                      \
					: g[i * stride] * y[i * stride];     \
		for (int64_t i = 0; i < n; i++) {                            \
			int64_t at = i * stride;                             \
			out[at] = log_form ? g[at] - EXP(y[at]) * sum        \
					   : y[at] * (g[at] - sum);          \
		}                                                            \
	}

DEFINE_SOFTMAX_BACKWARD_ROW(softmax_backward_f32, float, expf)
DEFINE_SOFTMAX_BACKWARD_ROW(softmax_backward_f64, double, exp)

static int softmax_backward(struct amp_call *call, bool log_form)
{
	struct amp_tensor *operands[2] = { cpu_arg_tensor(call, 0),
					   cpu_arg_tensor(call, 1) };
	int64_t dim = call->args[2].i;
	enum amp_dtype input_dtype = call->args[3].dtype;
	const char *kernel = log_form ? "log_softmax_backward_cpu"
				      : "softmax_backward_cpu";
	enum amp_dtype common;
	struct grad_operands ops;
	int status = grad_float_result(kernel, 2, operands, &common);

	if (status != AMP_OK)
		return status;
	if (input_dtype == AMP_DTYPE_NONE)
		input_dtype = operands[0]->dtype;
	if (!cpu_wrap_dim(&dim, operands[1]->ndim))
		return cpu_error_with(amp_last_status(), operands[1], NULL);
	enum amp_dtype opmath = cpu_opmath(amp_promote_types(common, input_dtype));
	status = grad_operands_load(&ops, 2, operands, opmath);
	if (status != AMP_OK)
		return cpu_error_with(status, operands[0], operands[1]);
	int64_t n = ops.ndim ? ops.shape[dim] : 1;
	int64_t outer = 1, inner = 1;
	for (int d = 0; d < ops.ndim; d++) {
		if (d < dim)
			outer *= ops.shape[d];
		else if (d > dim)
			inner *= ops.shape[d];
	}
	void *values = cpu_alloc(ops.numel, opmath);
	if (!values) {
		grad_operands_release(&ops);
		return amp_last_status();
	}
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			int64_t at = o * n * inner + i;
			if (opmath == AMP_DTYPE_F32)
				softmax_backward_f32(
					(const float *)ops.values[0] + at,
					(const float *)ops.values[1] + at,
					(float *)values + at, n, inner,
					log_form);
			else
				softmax_backward_f64(
					(const double *)ops.values[0] + at,
					(const double *)ops.values[1] + at,
					(double *)values + at, n, inner,
					log_form);
		}
	status = grad_output_from(call, 0, ops.ndim, ops.shape, input_dtype,
				  operands[0]->device, values, opmath);
	grad_operands_release(&ops);
	free(values);
	return status;
}

int amp_forward_softmax_backward_data(struct amp_call *call)
{
	return softmax_backward(call, false);
}

int amp_forward_log_softmax_backward_data(struct amp_call *call)
{
	return softmax_backward(call, true);
}
