/* Backward kernels of the activations, elementwise with broadcasting, in
 * opmath of result_type(grad, other), rounded once.  Argument layouts:
 *   threshold_backward (grad_output, self, Scalar threshold)
 *   gelu_backward (grad_output, self, bool tanh)   ATen: str approximate
 *   sigmoid_backward / tanh_backward (grad_output, output)
 *   clamp_backward (grad_output, self, double min, double max)  NaN = None
 *     (ATen composes it from ge/le/where; one op here) */
#include "grad/kernels.h"
#include "amp_math.h"

#include <math.h>
#include <stdlib.h>

CPU_VECTORIZE_LOOPS

enum activation {
	ACTIVATION_THRESHOLD,
	ACTIVATION_GELU,
	ACTIVATION_GELU_TANH,
	ACTIVATION_SIGMOID,
	ACTIVATION_TANH,
	ACTIVATION_CLAMP,
};

/* d/dx gelu(x), PyTorch's GeluBackward formulas. */
#define GELU_GRAD(T, EXP, ERF, TANH)                                          \
	static T gelu_grad_##T(T x, bool tanh_form)                           \
	{                                                                     \
		if (tanh_form) {                                              \
			const T k = (T)AMP_SQRT_2_OVER_PI;                    \
			const T c = (T)AMP_GELU_TANH_COEFF;                   \
			T inner = k * (x + c * x * x * x);                    \
			T t = TANH(inner);                                    \
			T left = (T)0.5 * x;                                  \
			T right = (T)1 + t;                                   \
			T left_derivative = (T)0.5 * right;                   \
			T right_derivative = left * ((T)1 - t * t) * k *      \
					     ((T)1 + (T)3 * c * x * x);       \
			return left_derivative + right_derivative;            \
		}                                                             \
		T cdf = (T)0.5 * ((T)1 + ERF(x * (T)AMP_SQRT1_2));            \
		T pdf = EXP((T)-0.5 * x * x) * (T)(AMP_SQRT_2_OVER_PI * 0.5); \
		return cdf + x * pdf;                                         \
	}

GELU_GRAD(float, expf, erff, tanhf)
GELU_GRAD(double, exp, erf, tanh)

/* One loop per kind (the switch is outside, so each loop vectorises).
 * The gradient is loaded whether the expression uses it or not: a load
 * under a condition keeps gcc from vectorising the selects. */
#define ACTIVATION_LOOP(T, expr)                                              \
	for (size_t i = 0; i < n; i++) {                                      \
		const T v = x[i];                                             \
		const T gi = g[i];                                            \
		y[i] = (expr);                                                \
	}

#define DEFINE_ACTIVATION_LOOP(name, T)                                       \
	static void name(enum activation kind, const T *g, const T *x, T *y,  \
			 size_t n, T k0, T k1)                                \
	{                                                                     \
		switch (kind) {                                               \
		case ACTIVATION_THRESHOLD:                                    \
			ACTIVATION_LOOP(T, v <= k0 ? (T)0 : gi)               \
			break;                                                \
		case ACTIVATION_GELU:                                         \
			ACTIVATION_LOOP(T, gi * gelu_grad_##T(v, false))      \
			break;                                                \
		case ACTIVATION_GELU_TANH:                                    \
			ACTIVATION_LOOP(T, gi * gelu_grad_##T(v, true))       \
			break;                                                \
		case ACTIVATION_SIGMOID:                                      \
			ACTIVATION_LOOP(T, gi * ((T)1 - v) * v)               \
			break;                                                \
		case ACTIVATION_TANH:                                         \
			ACTIVATION_LOOP(T, gi * ((T)1 - v * v))               \
			break;                                                \
		case ACTIVATION_CLAMP:                                        \
			ACTIVATION_LOOP(T, (isnan(k0) || v >= k0) &&          \
						(isnan(k1) || v <= k1)        \
					? gi                                  \
					: (T)0)                               \
			break;                                                \
		}                                                             \
	}

DEFINE_ACTIVATION_LOOP(activation_f32, float)
DEFINE_ACTIVATION_LOOP(activation_f64, double)

struct activation_block {
	enum activation kind;
	float k0, k1;
};

static void activation_block_run(const float *const *in, float *out,
				 size_t n, const void *context)
{
	const struct activation_block *block = context;

	activation_f32(block->kind, in[0], in[1], out, n, block->k0, block->k1);
}

/* f16/bf16 operands of one shape and dtype: cpu_blocked_f32, without
 * tensor-sized f32 copies of the operands and the result. */
static int activation_backward_blocked(struct amp_call *call,
				       struct amp_tensor *const *operands,
				       enum activation kind, double k0,
				       double k1)
{
	const struct amp_tensor *grad = operands[0];
	struct amp_tensor *out = amp_tensor_alloc(grad->ndim, grad->shape,
						  grad->dtype, grad->device);
	if (!out)
		return amp_last_status();
	const struct activation_block block = { kind, (float)k0, (float)k1 };
	const void *inputs[2] = { amp_tensor_data(operands[0]),
				  amp_tensor_data(operands[1]) };
	cpu_blocked_f32(grad->dtype, 2, inputs, amp_tensor_data(out),
			(size_t)amp_tensor_numel(out), activation_block_run,
			&block);
	return cpu_set_output(call, out);
}

static int activation_backward(struct amp_call *call, enum activation kind,
			       const char *kernel, double k0, double k1)
{
	struct amp_tensor *operands[2] = { cpu_arg_tensor(call, 0),
					   cpu_arg_tensor(call, 1) };
	struct grad_operands ops;
	enum amp_dtype result;
	int status = grad_float_result(kernel, 2, operands, &result);

	if (status != AMP_OK)
		return status;
	enum amp_dtype opmath = cpu_opmath(result);
	if (cpu_blocked_operand(operands[0], result) &&
	    cpu_blocked_operand(operands[1], result) &&
	    cpu_same_shape(operands[0], operands[1]))
		return activation_backward_blocked(call, operands, kind, k0, k1);
	status = grad_operands_load(&ops, 2, operands, opmath);
	if (status != AMP_OK)
		return cpu_error_with(status, operands[0], operands[1]);
	void *values = cpu_alloc(ops.numel, opmath);
	if (!values) {
		grad_operands_release(&ops);
		return amp_last_status();
	}
	if (opmath == AMP_DTYPE_F32)
		activation_f32(kind, ops.values[0], ops.values[1], values,
			       ops.numel, (float)k0, (float)k1);
	else
		activation_f64(kind, ops.values[0], ops.values[1], values,
			       ops.numel, k0, k1);
	status = grad_output_from(call, 0, ops.ndim, ops.shape, result,
				  operands[0]->device, values, opmath);
	grad_operands_release(&ops);
	free(values);
	return status;
}

int amp_forward_threshold_backward(struct amp_call *call)
{
	return activation_backward(call, ACTIVATION_THRESHOLD,
				   "threshold_backward",
				   call->args[2].scalar.value, 0);
}

int amp_forward_gelu_backward(struct amp_call *call)
{
	return activation_backward(call,
				   call->args[2].b ? ACTIVATION_GELU_TANH
						   : ACTIVATION_GELU,
				   "gelu_backward", 0, 0);
}

int amp_forward_sigmoid_backward(struct amp_call *call)
{
	return activation_backward(call, ACTIVATION_SIGMOID,
				   "sigmoid_backward", 0, 0);
}

int amp_forward_tanh_backward(struct amp_call *call)
{
	return activation_backward(call, ACTIVATION_TANH, "tanh_backward", 0,
				   0);
}

int amp_forward_clamp_backward(struct amp_call *call)
{
	return activation_backward(call, ACTIVATION_CLAMP, "clamp_backward",
				   call->args[2].d, call->args[3].d);
}
