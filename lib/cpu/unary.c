/* Unary elementwise kernels: neg, exp, log, relu, gelu, sigmoid, tanh and
 * pow.Tensor_Scalar.  Floating functions of integer or bool tensors
 * compute in (and return) the default float dtype, as ATen's unary float
 * ops do.  Argument layouts:
 *   neg / exp / log / relu / sigmoid / tanh (self)
 *   gelu (self, bool tanh_approximation)
 *   pow.Tensor_Scalar (self, Scalar exponent) */
#include "cpu_ops.h"
#include "amp_math.h"

#include <stdlib.h>

CPU_VECTORIZE_LOOPS

typedef void (*unary_loop)(const void *in, void *out, int64_t n,
			   double param);

#define DEFINE_UNARY(name, T, EXPR)                                          \
	static void name(const void *pin, void *pout, int64_t n,             \
			 double param_d)                                     \
	{                                                                    \
		const T *restrict in = pin;                                  \
		T *restrict out = pout;                                      \
		const T P = (T)param_d;                                      \
		(void)P;                                                     \
		for (int64_t i = 0; i < n; i++) {                            \
			T X = in[i];                                         \
			out[i] = (EXPR);                                     \
		}                                                            \
	}

DEFINE_UNARY(neg_f32, float, -X)
DEFINE_UNARY(neg_f64, double, -X)
DEFINE_UNARY(neg_i64, int64_t, (int64_t)(0 - (uint64_t)X))
DEFINE_UNARY(exp_f32, float, expf(X))
DEFINE_UNARY(exp_f64, double, exp(X))
DEFINE_UNARY(log_f32, float, logf(X))
DEFINE_UNARY(log_f64, double, log(X))
/* relu keeps NaN and -0.0 (x < 0 ? 0 : x), hence not fmax. */
DEFINE_UNARY(relu_f32, float, X < 0.0f ? 0.0f : X)
DEFINE_UNARY(relu_f64, double, X < 0.0 ? 0.0 : X)
DEFINE_UNARY(relu_i64, int64_t, X < 0 ? 0 : X)
DEFINE_UNARY(gelu_f32, float, amp_gelu_erff(X))
DEFINE_UNARY(gelu_f64, double, amp_gelu_erf(X))
DEFINE_UNARY(gelu_tanh_f32, float, amp_gelu_tanhf(X))
DEFINE_UNARY(gelu_tanh_f64, double, amp_gelu_tanh(X))
DEFINE_UNARY(sigmoid_f32, float, amp_sigmoidf(X))
DEFINE_UNARY(sigmoid_f64, double, amp_sigmoid_f64(X))
DEFINE_UNARY(tanh_f32, float, tanhf(X))
DEFINE_UNARY(tanh_f64, double, tanh(X))
/* pow.Tensor_Scalar and ATen's special exponents (pow_tensor_scalar_kernel). */
DEFINE_UNARY(pow_f32, float, powf(X, P))
DEFINE_UNARY(pow_f64, double, pow(X, P))
DEFINE_UNARY(pow_i64, int64_t, amp_powi(X, P))
DEFINE_UNARY(square_f32, float, X * X)
DEFINE_UNARY(square_f64, double, X * X)
DEFINE_UNARY(cube_f32, float, X * X * X)
DEFINE_UNARY(cube_f64, double, X * X * X)
DEFINE_UNARY(sqrt_f32, float, sqrtf(X))
DEFINE_UNARY(sqrt_f64, double, sqrt(X))
DEFINE_UNARY(rsqrt_f32, float, 1.0f / sqrtf(X))
DEFINE_UNARY(rsqrt_f64, double, 1.0 / sqrt(X))
DEFINE_UNARY(reciprocal_f32, float, 1.0f / X)
DEFINE_UNARY(reciprocal_f64, double, 1.0 / X)
DEFINE_UNARY(inv_square_f32, float, 1.0f / (X * X))
DEFINE_UNARY(inv_square_f64, double, 1.0 / (X * X))

/* How an op's result dtype follows its input. */
enum unary_promotion {
	UNARY_SAME,        /* neg, relu: any dtype but bool */
	UNARY_INT_TO_FLOAT, /* exp, log, ...: ints and bool -> f32 */
	UNARY_FLOAT_ONLY,  /* gelu: floating dtypes only */
};

struct unary_def {
	const char *kernel; /* ATen's dispatch name, for "not implemented" */
	enum unary_promotion promotion;
	unary_loop f32, f64, i64;
};

struct unary_block {
	unary_loop loop;
	double param;
};

static void unary_block_run(const float *const *in, float *out, size_t n,
			    const void *context)
{
	const struct unary_block *block = context;

	block->loop(in[0], out, (int64_t)n, block->param);
}

/* Runs `def` over self, computing in the opmath of `result`. */
static int unary(struct amp_call *call, const struct unary_def *def,
		 struct amp_tensor *self, enum amp_dtype result, double param)
{
	enum amp_dtype opmath = cpu_opmath(result);
	unary_loop loop = opmath == AMP_DTYPE_F32   ? def->f32
			  : opmath == AMP_DTYPE_F64 ? def->f64
						    : def->i64;
	void *owned = NULL;

	if (!loop)
		return cpu_not_implemented(def->kernel, self);
	struct amp_tensor *out =
		amp_tensor_alloc(self->ndim, self->shape, result, self->device);
	if (!out)
		return amp_last_status();
	int64_t n = amp_tensor_numel(out);
	if (opmath == AMP_DTYPE_F32 && cpu_blocked_operand(self, result)) {
		const struct unary_block block = { loop, param };
		const void *data = amp_tensor_data(self);
		cpu_blocked_f32(result, 1, &data, amp_tensor_data(out),
				(size_t)n, unary_block_run, &block);
		return cpu_set_output(call, out);
	}
	const void *in = cpu_load(self, result, opmath, &owned);
	void *values = cpu_result_buffer(out, opmath);
	if (!in || !values) {
		free(owned);
		cpu_result_release(out, values, opmath);
		amp_tensor_free(out);
		return amp_last_status();
	}
	loop(in, values, n, param);
	cpu_store(out, values, opmath);
	free(owned);
	cpu_result_release(out, values, opmath);
	return cpu_set_output(call, out);
}

static int unary_op(struct amp_call *call, const struct unary_def *def)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	enum amp_dtype result = self->dtype;

	if (def->promotion == UNARY_INT_TO_FLOAT &&
	    !amp_dtype_is_floating(result))
		result = AMP_DTYPE_F32;
	if (def->promotion == UNARY_FLOAT_ONLY && !amp_dtype_is_floating(result))
		return cpu_not_implemented(def->kernel, self);
	return unary(call, def, self, result, 0.0);
}

static const struct unary_def neg_def = { "neg_cpu", UNARY_SAME, neg_f32,
					  neg_f64, neg_i64 };
static const struct unary_def exp_def = { "exp_vml_cpu", UNARY_INT_TO_FLOAT,
					  exp_f32, exp_f64, NULL };
static const struct unary_def log_def = { "log_vml_cpu", UNARY_INT_TO_FLOAT,
					  log_f32, log_f64, NULL };
static const struct unary_def relu_def = { "clamp_min_cpu", UNARY_SAME,
					   relu_f32, relu_f64, relu_i64 };
static const struct unary_def gelu_def = { "GeluKernelImpl", UNARY_FLOAT_ONLY,
					   gelu_f32, gelu_f64, NULL };
static const struct unary_def gelu_tanh_def = { "GeluKernelImpl",
						UNARY_FLOAT_ONLY, gelu_tanh_f32,
						gelu_tanh_f64, NULL };
static const struct unary_def sigmoid_def = { "sigmoid_cpu",
					      UNARY_INT_TO_FLOAT, sigmoid_f32,
					      sigmoid_f64, NULL };
static const struct unary_def tanh_def = { "tanh_vml_cpu", UNARY_INT_TO_FLOAT,
					   tanh_f32, tanh_f64, NULL };

static int bool_error(const struct amp_tensor *self, const char *message)
{
	amp_error(AMP_ERR_DTYPE, "%s", message);
	return cpu_error_with(AMP_ERR_DTYPE, self, NULL);
}

int amp_forward_neg(struct amp_call *call)
{
	if (cpu_arg_tensor(call, 0)->dtype == AMP_DTYPE_BOOL)
		return bool_error(cpu_arg_tensor(call, 0),
				  "Negation, the `-` operator, on a bool tensor "
				  "is not supported. If you are trying to invert "
				  "a mask, use the `~` or `logical_not()` "
				  "operator instead.");
	return unary_op(call, &neg_def);
}

int amp_forward_exp(struct amp_call *call)
{
	return unary_op(call, &exp_def);
}

int amp_forward_log(struct amp_call *call)
{
	return unary_op(call, &log_def);
}

int amp_forward_relu(struct amp_call *call)
{
	if (cpu_arg_tensor(call, 0)->dtype == AMP_DTYPE_BOOL)
		return bool_error(cpu_arg_tensor(call, 0),
				  "Boolean inputs not supported for relu");
	return unary_op(call, &relu_def);
}

int amp_forward_gelu(struct amp_call *call)
{
	return unary_op(call, call->args[1].b ? &gelu_tanh_def : &gelu_def);
}

int amp_forward_sigmoid(struct amp_call *call)
{
	return unary_op(call, &sigmoid_def);
}

int amp_forward_tanh(struct amp_call *call)
{
	return unary_op(call, &tanh_def);
}

/* ------------------------------------------------------ pow.Tensor_Scalar */

struct special_exponent {
	double exponent;
	unary_loop f32, f64;
};

static const struct special_exponent special_exponents[] = {
	{ 2.0, square_f32, square_f64 },
	{ 3.0, cube_f32, cube_f64 },
	{ 0.5, sqrt_f32, sqrt_f64 },
	{ -0.5, rsqrt_f32, rsqrt_f64 },
	{ -1.0, reciprocal_f32, reciprocal_f64 },
	{ -2.0, inv_square_f32, inv_square_f64 },
};

int amp_forward_pow_scalar(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	double exponent = call->args[1].scalar.value;
	bool integral = call->args[1].scalar.integral;
	struct cpu_result_type state;

	cpu_result_type_init(&state);
	cpu_result_type_tensor(&state, self);
	cpu_result_type_scalar(&state, integral);
	enum amp_dtype result = cpu_result_type_get(&state);
	if (!amp_dtype_is_floating(result) && exponent < 0) {
		amp_error(AMP_ERR_INVALID, "Integers to negative integer powers "
					   "are not allowed.");
		return cpu_error_with(AMP_ERR_INVALID, self, NULL);
	}
	struct unary_def def = { "pow", UNARY_SAME, pow_f32, pow_f64, pow_i64 };
	for (size_t i = 0; i < sizeof special_exponents /
				       sizeof special_exponents[0]; i++)
		if (exponent == special_exponents[i].exponent) {
			def.f32 = special_exponents[i].f32;
			def.f64 = special_exponents[i].f64;
		}
	return unary(call, &def, self, result, exponent);
}
