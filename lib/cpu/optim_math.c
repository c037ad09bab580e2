/* The out-of-place maths of optimizers and gradient clipping: sqrt and
 * reciprocal (Adam's denominator, the scaler's 1/scale in f64), clamp and
 * linalg_vector_norm (clip_grad_norm_).  Floating inputs keep their
 * dtype; integer inputs give f32, as PyTorch's unary float ops do.
 * Argument layouts:
 *   sqrt / reciprocal (self)
 *   clamp (self, double min, double max)      NaN = None
 *   linalg_vector_norm (self, Scalar ord, ScalarType? dtype)  all dims */
#include "train_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* out = fn(self) elementwise in opmath. */
typedef void (*unary_loop)(void *values, size_t n, double lo, double hi);

static int run_unary(struct amp_call *call, unary_loop f32, unary_loop f64,
		     double lo, double hi)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	enum amp_dtype dtype = amp_dtype_is_floating(self->dtype)
				       ? self->dtype
				       : AMP_DTYPE_F32;
	enum amp_dtype opmath = cpu_opmath(dtype);
	void *owned;

	const void *in = cpu_load(self, dtype, opmath, &owned);
	if (!in)
		return amp_last_status();
	struct amp_tensor *out =
		amp_tensor_alloc(self->ndim, self->shape, dtype, self->device);
	void *values = owned;
	if (out && !values) {
		/* self's own data: compute into out's buffer instead */
		values = amp_tensor_data(out);
		memcpy(values, in, amp_tensor_nbytes(out));
	}
	if (out) {
		(opmath == AMP_DTYPE_F64 ? f64 : f32)(
			values, (size_t)amp_tensor_numel(out), lo, hi);
		cpu_store(out, values, opmath);
	}
	free(owned);
	return cpu_set_output(call, out);
}

#define DEFINE_UNARY(name, EXPR)                                             \
	DEFINE_UNARY_TYPED(name##_f32, float, EXPR)                          \
	DEFINE_UNARY_TYPED(name##_f64, double, EXPR)
#define DEFINE_UNARY_TYPED(fn, T, EXPR)                                      \
	static void fn(void *pv, size_t n, double lo_d, double hi_d)         \
	{                                                                    \
		T *v = pv;                                                   \
		const T lo = (T)lo_d, hi = (T)hi_d;                          \
		(void)lo;                                                    \
		(void)hi;                                                    \
		for (size_t i = 0; i < n; i++)                               \
			v[i] = (EXPR);                                       \
	}

DEFINE_UNARY(sqrt, sqrt(v[i]))
DEFINE_UNARY(reciprocal, 1 / v[i])
DEFINE_UNARY(clamp, TRAIN_CLAMP(v[i], lo, hi))

int amp_forward_sqrt(struct amp_call *call)
{
	return run_unary(call, sqrt_f32, sqrt_f64, 0, 0);
}

int amp_forward_reciprocal(struct amp_call *call)
{
	return run_unary(call, reciprocal_f32, reciprocal_f64, 0, 0);
}

int amp_forward_clamp(struct amp_call *call)
{
	double lo = call->args[1].d, hi = call->args[2].d;

	if (isnan(lo) && isnan(hi))
		return amp_error(AMP_ERR_INVALID,
				 "torch.clamp: At least one of 'min' or 'max' "
				 "must not be None");
	return run_unary(call, clamp_f32, clamp_f64, lo, hi);
}

/* The p-norm of all elements, accumulated in f64 and rounded once:
 * inf/-inf are max/min |x|, 0 counts non-zeros, otherwise
 * (sum |x|^p)^(1/p) with exact forms for p = 1 and 2. */
static double vector_norm(const double *x, size_t n, double ord)
{
	double acc = 0;

	if (isinf(ord)) {
		acc = ord > 0 ? 0 : INFINITY;
		for (size_t i = 0; i < n; i++) {
			double a = fabs(x[i]);
			if (isnan(a))
				return a;
			acc = ord > 0 ? (a > acc ? a : acc) : (a < acc ? a : acc);
		}
		return acc;
	}
	for (size_t i = 0; i < n; i++) {
		double a = fabs(x[i]);
		acc += ord == 0 ? (a != 0) : ord == 1 ? a : ord == 2 ? a * a
								    : pow(a, ord);
	}
	if (ord == 0 || ord == 1)
		return acc;
	return ord == 2 ? sqrt(acc) : pow(acc, 1 / ord);
}

int amp_forward_linalg_vector_norm(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	double ord = call->args[1].scalar.value;
	enum amp_dtype dtype = call->args[2].dtype;
	size_t n = (size_t)amp_tensor_numel(self);

	if (!amp_dtype_is_floating(self->dtype)) {
		amp_error(AMP_ERR_DTYPE,
			  "linalg.vector_norm: Expected a floating point or "
			  "complex tensor as input. Got %s",
			  amp_dtype_torch_name(self->dtype));
		return cpu_error_with(AMP_ERR_DTYPE, self, NULL);
	}
	if (dtype == AMP_DTYPE_NONE)
		dtype = self->dtype;
	if (n == 0 && isinf(ord) && ord < 0)
		return amp_error(AMP_ERR_INVALID,
				 "linalg.vector_norm cannot compute the -inf "
				 "norm on an empty tensor because the operation "
				 "does not have an identity");
	if (n == 0 && isinf(ord))
		return amp_error(AMP_ERR_INVALID,
				 "linalg.vector_norm cannot compute the inf "
				 "norm on an empty tensor because the operation "
				 "does not have an identity");
	void *owned;
	const double *x = cpu_load(self, dtype, AMP_DTYPE_F64, &owned);
	if (!x)
		return amp_last_status();
	double norm = vector_norm(x, n, ord);
	free(owned);
	struct amp_tensor *out = amp_tensor_alloc(0, NULL, dtype, self->device);
	if (out)
		cpu_store(out, &norm, AMP_DTYPE_F64);
	return cpu_set_output(call, out);
}
