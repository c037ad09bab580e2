/* Binary elementwise kernels with broadcasting and PyTorch's type
 * promotion: add, sub, mul, div (true division), pow, their Scalar forms,
 * and addcmul.  Operands are converted to the common dtype first (as
 * TensorIterator does on the CPU), computed in opmath and rounded once.
 * Argument layouts:
 *   add.Tensor / sub.Tensor (self, other, Scalar alpha)
 *   mul.Tensor / div.Tensor / pow.Tensor_Tensor (self, other)
 *   add.Scalar (self, Scalar other, Scalar alpha)   mul.Scalar (self, Scalar other)
 *   addcmul (self, tensor1, tensor2, Scalar value) */
#include "cpu_ops.h"
#include "amp_math.h"

#include <stdlib.h>

CPU_VECTORIZE_LOOPS

enum binary_op {
	BINARY_ADD,
	BINARY_SUB,
	BINARY_MUL,
	BINARY_DIV,
	BINARY_POW,
	BINARY_OP_COUNT
};

/* out[i] = EXPR(A, B) with each operand either a full buffer or one value
 * (step 0): the four cases are separate loops so each can vectorise. */
typedef void (*binary_loop)(const void *a, int64_t step_a, const void *b,
			    int64_t step_b, void *out, int64_t n,
			    double alpha);

#define DEFINE_BINARY(name, T, EXPR)                                         \
	static void name(const void *pa, int64_t step_a, const void *pb,     \
			 int64_t step_b, void *po, int64_t n, double alpha_d) \
	{                                                                    \
		const T *restrict a = pa;                                    \
		const T *restrict b = pb;                                    \
		T *restrict o = po;                                          \
		const T alpha = (T)alpha_d;                                  \
		(void)alpha;                                                 \
		if (step_a && step_b) {                                      \
			for (int64_t i = 0; i < n; i++) {                    \
				T A = a[i], B = b[i];                        \
				o[i] = (EXPR);                               \
			}                                                    \
		} else if (step_a) {                                         \
			const T B = b[0];                                    \
			for (int64_t i = 0; i < n; i++) {                    \
				T A = a[i];                                  \
				o[i] = (EXPR);                               \
			}                                                    \
		} else if (step_b) {                                         \
			const T A = a[0];                                    \
			for (int64_t i = 0; i < n; i++) {                    \
				T B = b[i];                                  \
				o[i] = (EXPR);                               \
			}                                                    \
		} else {                                                     \
			const T A = a[0], B = b[0];                          \
			for (int64_t i = 0; i < n; i++)                      \
				o[i] = (EXPR);                               \
		}                                                            \
	}

/* Integer arithmetic wraps around as ATen's does (through uint64_t, where
 * C's signed overflow would be undefined). */
#define WRAP(expr) ((int64_t)(expr))
#define U(x) ((uint64_t)(x))

DEFINE_BINARY(add_f32, float, A + alpha * B)
DEFINE_BINARY(add_f64, double, A + alpha * B)
DEFINE_BINARY(add_i64, int64_t, WRAP(U(A) + U(alpha) * U(B)))
DEFINE_BINARY(sub_f32, float, A - alpha * B)
DEFINE_BINARY(sub_f64, double, A - alpha * B)
DEFINE_BINARY(sub_i64, int64_t, WRAP(U(A) - U(alpha) * U(B)))
DEFINE_BINARY(mul_f32, float, A * B)
DEFINE_BINARY(mul_f64, double, A * B)
DEFINE_BINARY(mul_i64, int64_t, WRAP(U(A) * U(B)))
DEFINE_BINARY(div_f32, float, A / B)
DEFINE_BINARY(div_f64, double, A / B)
DEFINE_BINARY(pow_f32, float, powf(A, B))
DEFINE_BINARY(pow_f64, double, pow(A, B))
DEFINE_BINARY(pow_i64, int64_t, amp_powi(A, B))

enum opmath_kind { KIND_F32, KIND_F64, KIND_I64, KIND_COUNT };

static enum opmath_kind kind_of(enum amp_dtype opmath)
{
	return opmath == AMP_DTYPE_F32 ? KIND_F32
	       : opmath == AMP_DTYPE_F64 ? KIND_F64
					 : KIND_I64;
}

/* NULL: the dtype never reaches the op (div promotes integers). */
static const binary_loop binary_loops[BINARY_OP_COUNT][KIND_COUNT] = {
	[BINARY_ADD] = { add_f32, add_f64, add_i64 },
	[BINARY_SUB] = { sub_f32, sub_f64, sub_i64 },
	[BINARY_MUL] = { mul_f32, mul_f64, mul_i64 },
	[BINARY_DIV] = { div_f32, div_f64, NULL },
	[BINARY_POW] = { pow_f32, pow_f64, pow_i64 },
};

/* sub refuses bool operands with ATen's sub_check texts. */
static int sub_check(const struct amp_tensor *a, const struct amp_tensor *b)
{
	bool a_bool = a->dtype == AMP_DTYPE_BOOL;
	bool b_bool = b->dtype == AMP_DTYPE_BOOL;

	if (a_bool && b_bool)
		amp_error(AMP_ERR_DTYPE,
			  "Subtraction, the `-` operator, with two bool tensors "
			  "is not supported. Use the `^` or `logical_xor()` "
			  "operator instead.");
	else if (a_bool || b_bool)
		amp_error(AMP_ERR_DTYPE,
			  "Subtraction, the `-` operator, with a bool tensor is "
			  "not supported. If you are trying to invert a mask, "
			  "use the `~` or `logical_not()` operator instead.");
	else
		return AMP_OK;
	return cpu_error_with(AMP_ERR_DTYPE, a, b);
}

/* mul and div on f16/bf16 read a single-value `other` in its original
 * dtype straight into opmath (TensorIterator's original_scalar_value), so
 * x * 0.1 does not round 0.1 to half first. */
static bool reads_original_scalar(enum binary_op op, enum amp_dtype result,
				  const struct amp_tensor *other)
{
	return (op == BINARY_MUL || op == BINARY_DIV) &&
	       (result == AMP_DTYPE_F16 || result == AMP_DTYPE_BF16) &&
	       amp_tensor_numel(other) == 1;
}

/* a op b -> new tensor of dtype `result`; `wrapped` says b is a Scalar
 * (already folded into `result` by the caller). */
static int binary(struct amp_call *call, enum binary_op op,
		  struct amp_tensor *a, struct amp_tensor *b,
		  enum amp_dtype result, double alpha)
{
	int ndim = a->ndim;
	int64_t shape[AMP_MAX_DIMS];
	struct cpu_operand opa = { 0 }, opb = { 0 };
	enum amp_dtype opmath = cpu_opmath(result);
	int status;

	memcpy(shape, a->shape, sizeof shape);
	status = cpu_broadcast_into(&ndim, shape, b->ndim, b->shape);
	if (status != AMP_OK)
		return cpu_error_with(status, a, b);
	struct amp_tensor *out = amp_tensor_alloc(ndim, shape, result, a->device);
	if (!out)
		return amp_last_status();
	int64_t n = amp_tensor_numel(out);
	void *values = cpu_result_buffer(out, opmath);
	status = values ? AMP_OK : amp_last_status();
	if (status == AMP_OK)
		status = cpu_operand_load(a, ndim, shape, result, opmath, &opa);
	if (status == AMP_OK)
		status = cpu_operand_load(
			b, ndim, shape,
			reads_original_scalar(op, result, b) ? b->dtype : result,
			opmath, &opb);
	if (status == AMP_OK) {
		binary_loops[op][kind_of(opmath)](opa.data, opa.step, opb.data,
						  opb.step, values, n, alpha);
		cpu_store(out, values, opmath);
	}
	cpu_operand_release(&opa);
	cpu_operand_release(&opb);
	cpu_result_release(out, values, opmath);
	return cpu_set_output_or_free(call, out, status);
}

static enum amp_dtype result_type2(const struct amp_tensor *a,
				   const struct amp_tensor *b)
{
	struct cpu_result_type state;

	cpu_result_type_init(&state);
	cpu_result_type_tensor(&state, a);
	cpu_result_type_tensor(&state, b);
	return cpu_result_type_get(&state);
}

static enum amp_dtype result_type_scalar(const struct amp_tensor *a,
					 bool integral)
{
	struct cpu_result_type state;

	cpu_result_type_init(&state);
	cpu_result_type_tensor(&state, a);
	cpu_result_type_scalar(&state, integral);
	return cpu_result_type_get(&state);
}

static int binary_tensor(struct amp_call *call, enum binary_op op,
			 double alpha)
{
	struct amp_tensor *a = cpu_arg_tensor(call, 0);
	struct amp_tensor *b = cpu_arg_tensor(call, 1);

	return binary(call, op, a, b, result_type2(a, b), alpha);
}

int amp_forward_add(struct amp_call *call)
{
	return binary_tensor(call, BINARY_ADD, call->args[2].scalar.value);
}

int amp_forward_sub(struct amp_call *call)
{
	int status = sub_check(cpu_arg_tensor(call, 0), cpu_arg_tensor(call, 1));

	if (status != AMP_OK)
		return status;
	return binary_tensor(call, BINARY_SUB, call->args[2].scalar.value);
}

int amp_forward_mul(struct amp_call *call)
{
	return binary_tensor(call, BINARY_MUL, 1.0);
}

/* True division: integer and bool inputs divide as the default float. */
int amp_forward_div(struct amp_call *call)
{
	struct amp_tensor *a = cpu_arg_tensor(call, 0);
	struct amp_tensor *b = cpu_arg_tensor(call, 1);
	enum amp_dtype result = result_type2(a, b);

	if (!amp_dtype_is_floating(result))
		result = AMP_DTYPE_F32;
	return binary(call, BINARY_DIV, a, b, result, 1.0);
}

int amp_forward_pow(struct amp_call *call)
{
	return binary_tensor(call, BINARY_POW, 1.0);
}

static int binary_scalar(struct amp_call *call, enum binary_op op,
			 double alpha)
{
	struct amp_tensor *a = cpu_arg_tensor(call, 0);
	const struct amp_arg *scalar = &call->args[1];
	struct cpu_wrapped other;

	cpu_wrap_number(&other, scalar->scalar.value, scalar->scalar.integral);
	return binary(call, op, a, &other.tensor,
		      result_type_scalar(a, scalar->scalar.integral), alpha);
}

int amp_forward_add_scalar(struct amp_call *call)
{
	return binary_scalar(call, BINARY_ADD, call->args[2].scalar.value);
}

int amp_forward_mul_scalar(struct amp_call *call)
{
	return binary_scalar(call, BINARY_MUL, 1.0);
}

/* pow.Tensor_Scalar lives with the unary kernels (unary.c) because its
 * exponent is a constant. */

/* ------------------------------------------------------------- addcmul */

#define DEFINE_ADDCMUL(name, T, EXPR)                                        \
	static void name(const struct cpu_operand *s,                        \
			 const struct cpu_operand *t1,                       \
			 const struct cpu_operand *t2, void *po, int64_t n,  \
			 double value_d)                                     \
	{                                                                    \
		const T *self = s->data, *x = t1->data, *y = t2->data;       \
		T *o = po;                                                   \
		const T value = (T)value_d;                                  \
		for (int64_t i = 0; i < n; i++) {                            \
			T S = self[i * s->step], X = x[i * t1->step],        \
			  Y = y[i * t2->step];                               \
			o[i] = (EXPR);                                       \
		}                                                            \
	}

DEFINE_ADDCMUL(addcmul_f32, float, S + value * X * Y)
DEFINE_ADDCMUL(addcmul_f64, double, S + value * X * Y)
DEFINE_ADDCMUL(addcmul_i64, int64_t, WRAP(U(S) + U(value) * U(X) * U(Y)))

typedef void (*addcmul_loop)(const struct cpu_operand *,
			     const struct cpu_operand *,
			     const struct cpu_operand *, void *, int64_t,
			     double);
static const addcmul_loop addcmul_loops[KIND_COUNT] = {
	addcmul_f32, addcmul_f64, addcmul_i64
};

int amp_forward_addcmul(struct amp_call *call)
{
	struct amp_tensor *in[3] = { cpu_arg_tensor(call, 0),
				     cpu_arg_tensor(call, 1),
				     cpu_arg_tensor(call, 2) };
	double value = call->args[3].scalar.value;
	struct cpu_operand ops[3] = { { 0 } };
	struct cpu_result_type state;
	int64_t shape[AMP_MAX_DIMS];
	int ndim = 0, status = AMP_OK;

	cpu_result_type_init(&state);
	for (int i = 0; i < 3 && status == AMP_OK; i++) {
		cpu_result_type_tensor(&state, in[i]);
		status = cpu_broadcast_into(&ndim, shape, in[i]->ndim,
					    in[i]->shape);
	}
	if (status != AMP_OK) {
		cpu_error_tensors(3, in);
		return status;
	}
	enum amp_dtype result = cpu_result_type_get(&state);
	enum amp_dtype opmath = cpu_opmath(result);
	struct amp_tensor *out = amp_tensor_alloc(ndim, shape, result,
						  in[0]->device);
	if (!out)
		return amp_last_status();
	int64_t n = amp_tensor_numel(out);
	void *values = cpu_alloc((size_t)n, opmath);
	status = values ? AMP_OK : amp_last_status();
	for (int i = 0; i < 3 && status == AMP_OK; i++)
		status = cpu_operand_load(in[i], ndim, shape, result, opmath,
					  &ops[i]);
	if (status == AMP_OK) {
		addcmul_loops[kind_of(opmath)](&ops[0], &ops[1], &ops[2],
					       values, n, value);
		cpu_store(out, values, opmath);
	}
	for (int i = 0; i < 3; i++)
		cpu_operand_release(&ops[i]);
	free(values);
	return cpu_set_output_or_free(call, out, status);
}
