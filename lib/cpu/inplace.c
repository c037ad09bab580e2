/* In-place kernels: the `op_` updates of optimizers, clipping and the
 * scaler, and maximum.out (AMSGrad).  The shared TensorIterator-style
 * machinery (dtype and shape checks, opmath buffers, the store that bumps
 * the version) is at the top; each op is a loop over f32 or f64 opmath.
 * Scalars are converted to opmath first, as ATen's `value.to<opmath_t>()`.
 * Argument layouts:
 *   add_.Tensor (self, other, Scalar alpha)    add_.Scalar (self, Scalar other, Scalar alpha)
 *   mul_.Tensor (self, other)                  mul_.Scalar / div_.Scalar (self, Scalar other)
 *   addcmul_ / addcdiv_ (self, tensor1, tensor2, Scalar value)
 *   lerp_.Scalar (self, end, Scalar weight)
 *   clamp_ (self, double min, double max)      NaN = None
 *   fill_.Scalar (self, Scalar value)          copy_ (self, src, bool non_blocking)
 *   maximum.out (self, other, out) */
#include "train_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

CPU_VECTORIZE_LOOPS

/* ------------------------------------------------------------ machinery */

int train_check_output_shape(const struct amp_tensor *out, int ndim,
			     const int64_t *shape)
{
	char have[128], want[128];
	bool same = ndim == out->ndim;

	for (int d = 0; same && d < ndim; d++)
		same = shape[d] == out->shape[d];
	if (same)
		return AMP_OK;
	return amp_error(AMP_ERR_INVALID,
			 "output with shape %s doesn't match the broadcast "
			 "shape %s",
			 cpu_shape_string(out->ndim, out->shape, have,
					  sizeof have),
			 cpu_shape_string(ndim, shape, want, sizeof want));
}

void train_store_inplace(struct amp_tensor *t, const void *values,
			 enum amp_dtype opmath)
{
	size_t n = (size_t)amp_tensor_numel(t);

	if (amp_tensor_is_contiguous(t)) {
		cpu_store(t, values, opmath);
		amp_tensor_bump_version(t);
	} else {
		amp_tensor_write(t, opmath, values, n); /* bumps */
	}
}

int train_set_inplace_output(struct amp_call *call, struct amp_tensor *t)
{
	return cpu_set_output(call, amp_tensor_ref(t));
}

void train_elementwise_release(struct train_elementwise *e)
{
	for (int i = 0; i < e->nvalues; i++)
		free(e->owned[i]);
	e->nvalues = 0;
}

int train_elementwise_begin(struct train_elementwise *e, const char *kernel,
			    struct amp_tensor *target, int noperands,
			    struct amp_tensor *const *operands,
			    bool has_float_scalar)
{
	struct cpu_result_type rt;
	int ndim = target->ndim;
	int64_t shape[AMP_MAX_DIMS];
	int status;

	AMP_ASSERT(noperands <= TRAIN_MAX_OPERANDS);
	memset(e, 0, sizeof *e);
	e->target = target;
	memcpy(shape, target->shape, sizeof shape);
	cpu_result_type_init(&rt);
	cpu_result_type_tensor(&rt, target);
	for (int i = 0; i < noperands; i++) {
		cpu_result_type_tensor(&rt, operands[i]);
		status = cpu_broadcast_into(&ndim, shape, operands[i]->ndim,
					    operands[i]->shape);
		if (status != AMP_OK)
			return status;
	}
	if (has_float_scalar)
		cpu_result_type_scalar(&rt, false);
	e->common = cpu_result_type_get(&rt);
	if (!amp_dtype_is_floating(e->common))
		return cpu_not_implemented(kernel, target);
	if (!amp_dtype_is_floating(target->dtype)) {
		amp_error(AMP_ERR_DTYPE,
			  "result type %s can't be cast to the desired output "
			  "type %s",
			  amp_dtype_torch_name(e->common),
			  amp_dtype_torch_name(target->dtype));
		return cpu_error_with(AMP_ERR_DTYPE, target, NULL);
	}
	status = train_check_output_shape(target, ndim, shape);
	if (status != AMP_OK)
		return status;
	e->opmath = cpu_opmath(e->common);
	e->n = (size_t)amp_tensor_numel(target);
	for (int i = 0; i <= noperands; i++) {
		struct amp_tensor view;
		const struct amp_tensor *source = i ? operands[i - 1] : target;
		if (i) {
			status = cpu_expand(source, target->ndim, target->shape,
					    &view);
			if (status != AMP_OK)
				break;
			source = &view;
		}
		const void *values = cpu_load(source, e->common, e->opmath,
					      &e->owned[i]);
		e->nvalues = i + 1;
		if (!values) {
			status = amp_last_status();
			break;
		}
		/* values[0] is written: when it points at target's own data
		 * (f32/f64 contiguous) the update happens in place. */
		e->values[i] = (void *)values;
	}
	if (status != AMP_OK)
		train_elementwise_release(e);
	return status;
}

int train_elementwise_finish(struct train_elementwise *e,
			     struct amp_call *call)
{
	train_store_inplace(e->target, e->values[0], e->opmath);
	train_elementwise_release(e);
	return train_set_inplace_output(call, e->target);
}

/* Runs the f32 or f64 loop of an op over e's buffers. */
typedef void (*inplace_loop)(void *x, void *const *operands, size_t n,
			     const double *scalars);

static int run_inplace(struct amp_call *call, const char *kernel,
		       int noperands, bool has_float_scalar,
		       inplace_loop loop_f32, inplace_loop loop_f64,
		       const double *scalars)
{
	struct amp_tensor *operands[TRAIN_MAX_OPERANDS] = { NULL };
	struct train_elementwise e;

	for (int i = 0; i < noperands; i++)
		operands[i] = cpu_arg_tensor(call, 1 + i);
	int status = train_elementwise_begin(&e, kernel, cpu_arg_tensor(call, 0),
					     noperands, operands,
					     has_float_scalar);
	if (status != AMP_OK)
		return status;
	(e.opmath == AMP_DTYPE_F64 ? loop_f64 : loop_f32)(
		e.values[0], &e.values[1], e.n, scalars);
	return train_elementwise_finish(&e, call);
}

/* Defines name_f32 and name_f64 computing x[i] = EXPR, where EXPR may use
 * x[i], the operands a[i], b[i] and the scalars k0, k1 in opmath. */
#define DEFINE_INPLACE(name, EXPR)                                           \
	DEFINE_INPLACE_TYPED(name##_f32, float, EXPR)                        \
	DEFINE_INPLACE_TYPED(name##_f64, double, EXPR)
/* Each loop is compiled twice, plain and for AVX-512 (picked at run time
 * by fn): gcc vectorises both, and the wide one runs a cached optimizer
 * update about 2.5x faster (they are memory-bound beyond the cache). */
#define DEFINE_INPLACE_TYPED(fn, T, EXPR)                                    \
	static inline __attribute__((always_inline)) void fn##_loop(         \
		void *px, void *const *operands, size_t n,                   \
		const double *scalars)                                       \
	{                                                                    \
		T *x = px;                                                   \
		const T *a = operands[0];                                    \
		const T *b = operands[1];                                    \
		const T k0 = (T)scalars[0], k1 = (T)scalars[1];              \
		(void)a;                                                     \
		(void)b;                                                     \
		(void)k0;                                                    \
		(void)k1;                                                    \
		for (size_t i = 0; i < n; i++)                               \
			x[i] = (EXPR);                                       \
	}                                                                    \
	CPU_AVX512 static void fn##_avx512(void *px, void *const *operands,  \
					   size_t n, const double *scalars)  \
	{                                                                    \
		fn##_loop(px, operands, n, scalars);                         \
		_mm256_zeroupper();                                          \
	}                                                                    \
	static void fn(void *px, void *const *operands, size_t n,            \
		       const double *scalars)                                \
	{                                                                    \
		if (cpu_has_avx512())                                        \
			fn##_avx512(px, operands, n, scalars);               \
		else                                                         \
			fn##_loop(px, operands, n, scalars);                 \
	}

/* ATen's scalar formulas (the same as the out-of-place kernels'). */
DEFINE_INPLACE(add, x[i] + k0 * a[i])
DEFINE_INPLACE(add_scalar, x[i] + k1 * k0)
DEFINE_INPLACE(mul, x[i] * a[i])
DEFINE_INPLACE(mul_scalar, x[i] * k0)
DEFINE_INPLACE(div_scalar, x[i] / k0)
DEFINE_INPLACE(addcmul, x[i] + k0 * a[i] * b[i])
DEFINE_INPLACE(addcdiv, x[i] + k0 * a[i] / b[i])
/* at::lerp: two forms, each exact at its end of the weight range. */
DEFINE_INPLACE(lerp, fabs((double)k0) < 0.5 ? x[i] + k0 * (a[i] - x[i])
					     : a[i] - (a[i] - x[i]) * (1 - k0))
/* see TRAIN_CLAMP */
DEFINE_INPLACE(clamp, TRAIN_CLAMP(x[i], k0, k1))

static double scalar_arg(const struct amp_call *call, int index)
{
	return call->args[index].scalar.value;
}

static bool float_scalar_arg(const struct amp_call *call, int index)
{
	return !call->args[index].scalar.integral;
}

/* ----------------------------------------------------------------- ops */

int amp_forward_add_inplace(struct amp_call *call)
{
	double k[2] = { scalar_arg(call, 2), 0 };

	return run_inplace(call, "add_cpu/sub_cpu", 1, float_scalar_arg(call, 2),
			   add_f32, add_f64, k);
}

int amp_forward_add_scalar_inplace(struct amp_call *call)
{
	double k[2] = { scalar_arg(call, 1), scalar_arg(call, 2) };

	return run_inplace(call, "add_cpu/sub_cpu", 0,
			   float_scalar_arg(call, 1) || float_scalar_arg(call, 2),
			   add_scalar_f32, add_scalar_f64, k);
}

int amp_forward_mul_inplace(struct amp_call *call)
{
	double k[2] = { 0, 0 };

	return run_inplace(call, "mul_cpu", 1, false, mul_f32, mul_f64, k);
}

int amp_forward_mul_scalar_inplace(struct amp_call *call)
{
	double k[2] = { scalar_arg(call, 1), 0 };

	return run_inplace(call, "mul_cpu", 0, float_scalar_arg(call, 1),
			   mul_scalar_f32, mul_scalar_f64, k);
}

/* True division: an integer self would need a float result in place. */
int amp_forward_div_scalar_inplace(struct amp_call *call)
{
	double k[2] = { scalar_arg(call, 1), 0 };

	return run_inplace(call, "div_cpu", 0, true, div_scalar_f32,
			   div_scalar_f64, k);
}

int amp_forward_addcmul_inplace(struct amp_call *call)
{
	double k[2] = { scalar_arg(call, 3), 0 };

	return run_inplace(call, "addcmul_cpu_out", 2, float_scalar_arg(call, 3),
			   addcmul_f32, addcmul_f64, k);
}

int amp_forward_addcdiv_inplace(struct amp_call *call)
{
	double k[2] = { scalar_arg(call, 3), 0 };

	return run_inplace(call, "addcdiv_cpu_out", 2, float_scalar_arg(call, 3),
			   addcdiv_f32, addcdiv_f64, k);
}

int amp_forward_lerp_inplace(struct amp_call *call)
{
	double k[2] = { scalar_arg(call, 2), 0 };

	return run_inplace(call, "lerp_kernel_scalar", 1, true, lerp_f32,
			   lerp_f64, k);
}

int amp_forward_clamp_inplace(struct amp_call *call)
{
	double k[2] = { call->args[1].d, call->args[2].d };

	if (isnan(k[0]) && isnan(k[1]))
		return amp_error(AMP_ERR_INVALID,
				 "torch.clamp: At least one of 'min' or 'max' "
				 "must not be None");
	return run_inplace(call, "clamp_scalar_cpu", 0, true, clamp_f32,
			   clamp_f64, k);
}

/* maximum.out writes into `out` (the last argument) from self and other:
 * the machinery's target is out and its operands self (a) and other (b).
 * One pass, since out may be either operand's storage (AMSGrad passes
 * out=self).  NaN propagates from either side. */
DEFINE_INPLACE(maximum, isnan(a[i]) || isnan(b[i]) ? (a[i] + b[i])
		       : (a[i] > b[i] ? a[i] : b[i]))

int amp_forward_maximum_out(struct amp_call *call)
{
	struct amp_tensor *operands[2] = { cpu_arg_tensor(call, 0),
					   cpu_arg_tensor(call, 1) };
	struct amp_tensor *out = cpu_arg_tensor(call, 2);
	struct train_elementwise e;
	double k[2] = { 0, 0 };

	int status = train_elementwise_begin(&e, "maximum_cpu", out, 2,
					     operands, false);
	if (status != AMP_OK)
		return status;
	(e.opmath == AMP_DTYPE_F64 ? maximum_f64 : maximum_f32)(
		e.values[0], &e.values[1], e.n, k);
	return train_elementwise_finish(&e, call);
}

/* fill_ converts the value straight to self's dtype (floats truncate to
 * integers), whatever the dtype. */
int amp_forward_fill_inplace(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	double value = scalar_arg(call, 1);
	size_t n = (size_t)amp_tensor_numel(self);
	double *values = cpu_alloc(n, AMP_DTYPE_F64);

	if (!values)
		return amp_last_status();
	for (size_t i = 0; i < n; i++)
		values[i] = value;
	train_store_inplace(self, values, AMP_DTYPE_F64);
	free(values);
	return train_set_inplace_output(call, self);
}

/* copy_ broadcasts src to self's shape and converts it to self's dtype,
 * any dtypes. */
int amp_forward_copy_inplace(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *src = cpu_arg_tensor(call, 1);
	int ndim = self->ndim;
	int64_t shape[AMP_MAX_DIMS];
	struct amp_tensor view;

	memcpy(shape, self->shape, sizeof shape);
	int status = cpu_broadcast_into(&ndim, shape, src->ndim, src->shape);
	if (status == AMP_OK)
		status = train_check_output_shape(self, ndim, shape);
	if (status == AMP_OK)
		status = cpu_expand(src, self->ndim, self->shape, &view);
	if (status != AMP_OK)
		return status;
	void *values = cpu_alloc((size_t)amp_tensor_numel(self), self->dtype);
	if (!values)
		return amp_last_status();
	amp_tensor_gather(&view, self->dtype, values);
	train_store_inplace(self, values, self->dtype);
	free(values);
	return train_set_inplace_output(call, self);
}
