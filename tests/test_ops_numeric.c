/* Numeric checks of every op the CPU backend executes: each case runs the
 * op on random inputs (fixed seeds) in one dtype, once on contiguous and
 * once on non-contiguous (transposed / sliced) inputs, and compares with
 * an f64 reference computed here by naive loops from the same input
 * values.  Tolerances are relative to a per-element magnitude (|result|,
 * or the sum of |terms| for reductions and products): f64 1e-12, f32
 * 1e-5, f16 2e-3, bf16 1.6e-2; integer results must be exact. */
#include "amp.h"
#include "test_ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_KEEP 32

#define M(d) (1u << (d))
#define FLOATS (M(AMP_DTYPE_F64) | M(AMP_DTYPE_F32) | M(AMP_DTYPE_F16) | \
		M(AMP_DTYPE_BF16))
#define INTS (M(AMP_DTYPE_I64) | M(AMP_DTYPE_I32))
#define ALL (FLOATS | INTS)

/* ------------------------------------------------------------ harness */

struct ctx {
	enum amp_dtype dtype;
	bool strided;
	amp_tensor *keep[MAX_KEEP];
	int nkeep;
	double *buffers[MAX_KEEP];
	int nbuffers;
	/* the result and what it must be */
	amp_tensor *out;
	enum amp_dtype want;
	int ndim;
	int64_t shape[AMP_MAX_DIMS];
	int64_t n;
	double *ref, *mag;
};

static double *buffer(struct ctx *c, int64_t n)
{
	double *p = calloc((size_t)(n ? n : 1), sizeof *p);

	ck_assert(p && c->nbuffers < MAX_KEEP);
	c->buffers[c->nbuffers++] = p;
	return p;
}

static amp_tensor *keep(struct ctx *c, amp_tensor *t)
{
	ck_assert_msg(t, "setup failed: %s", amp_last_error());
	ck_assert(c->nkeep < MAX_KEEP);
	c->keep[c->nkeep++] = t;
	return t;
}

static double *values(struct ctx *c, amp_tensor *t)
{
	int64_t n = amp_tensor_numel(t);
	double *v = buffer(c, n);

	ck_assert_int_eq(amp_tensor_read(t, AMP_DTYPE_F64, v, (size_t)n), 0);
	return v;
}

enum input_kind {
	INPUT_NORMAL,   /* N(0, 1); ints: trunc(4 N) */
	INPUT_POSITIVE, /* 0.5 + |N|; ints: 1 + trunc(3 |N|) */
	INPUT_UNIT,     /* in (0.05, 0.95) */
};

static double shape_input(enum input_kind kind, bool integral, double x)
{
	switch (kind) {
	case INPUT_POSITIVE:
		return integral ? 1.0 + trunc(3.0 * fabs(x)) : 0.5 + fabs(x);
	case INPUT_UNIT:
		return 0.05 + 0.9 / (1.0 + exp(-x));
	default:
		return integral ? trunc(4.0 * x) : x;
	}
}

/* A random tensor of `dtype` and `shape`; in strided mode a transposed
 * (or, 1-D, step-2 sliced) view over a larger base, so kernels see
 * non-contiguous strides. */
static amp_tensor *make(struct ctx *c, enum amp_dtype dtype, int ndim,
			const int64_t *shape, enum input_kind kind)
{
	int64_t base_shape[AMP_MAX_DIMS];
	bool integral = !amp_dtype_is_floating(dtype);

	memcpy(base_shape, shape, (size_t)ndim * sizeof *shape);
	if (c->strided && ndim >= 2) {
		base_shape[ndim - 1] = shape[ndim - 2];
		base_shape[ndim - 2] = shape[ndim - 1];
	} else if (c->strided && ndim == 1) {
		base_shape[0] = 2 * shape[0];
	}
	amp_tensor *normal = amp_randn(ndim, base_shape, AMP_DTYPE_F64,
				       AMP_DEVICE_CPU);
	ck_assert(normal);
	int64_t n = amp_tensor_numel(normal);
	double *v = values(c, normal);
	amp_tensor_free(normal);
	for (int64_t i = 0; i < n; i++)
		v[i] = shape_input(kind, integral, v[i]);
	amp_tensor *f64 = amp_from_data(ndim, base_shape, AMP_DTYPE_F64,
					AMP_DEVICE_CPU, v);
	amp_tensor *base = keep(c, amp_to(f64, dtype));
	amp_tensor_free(f64);
	if (!c->strided || ndim == 0)
		return base;
	amp_tensor *view = ndim >= 2 ? amp_transpose(base, -1, -2)
				     : amp_slice(base, 0, 0, base_shape[0], 2);
	keep(c, view);
	bool unit_dim = shape[ndim - 1] == 1 || (ndim >= 2 && shape[ndim - 2] == 1);
	ck_assert(!amp_tensor_is_contiguous(view) || unit_dim);
	return view;
}

/* The result to check: `out` must have dtype `want` and `shape`;
 * returns the reference array to fill (mag defaults to |ref|). */
static double *expect(struct ctx *c, amp_tensor *out, enum amp_dtype want,
		      int ndim, const int64_t *shape)
{
	c->out = out;
	c->want = want;
	c->ndim = ndim;
	memcpy(c->shape, shape, (size_t)ndim * sizeof *shape);
	c->n = 1;
	for (int d = 0; d < ndim; d++)
		c->n *= shape[d];
	c->ref = buffer(c, c->n);
	c->mag = NULL;
	return c->ref;
}

static double *magnitudes(struct ctx *c)
{
	c->mag = buffer(c, c->n);
	return c->mag;
}

static double rtol(enum amp_dtype dtype)
{
	switch (dtype) {
	case AMP_DTYPE_F64:
		return 1e-12;
	case AMP_DTYPE_F32:
		return 1e-5;
	case AMP_DTYPE_F16:
		return 2e-3;
	case AMP_DTYPE_BF16:
		return 1.6e-2;
	default:
		return 0;
	}
}

static void check(struct ctx *c, const char *name)
{
	ck_assert_msg(c->out, "%s %s%s: %s", name, amp_dtype_name(c->dtype),
		      c->strided ? " strided" : "", amp_last_error());
	ck_assert_msg(amp_tensor_dtype(c->out) == c->want,
		      "%s %s: dtype %s, expected %s", name,
		      amp_dtype_name(c->dtype),
		      amp_dtype_name(amp_tensor_dtype(c->out)),
		      amp_dtype_name(c->want));
	ck_assert_int_eq(amp_tensor_ndim(c->out), c->ndim);
	for (int d = 0; d < c->ndim; d++)
		ck_assert_int_eq(amp_tensor_shape(c->out)[d], c->shape[d]);
	double *got = values(c, c->out);
	double tol = rtol(c->want);
	for (int64_t i = 0; i < c->n; i++) {
		double mag = c->mag ? c->mag[i] : fabs(c->ref[i]);
		double err = fabs(got[i] - c->ref[i]);
		bool ok = tol == 0 ? got[i] == c->ref[i]
				   : err <= tol * (mag + 1e-6);
		ck_assert_msg(ok, "%s %s%s: element %lld is %.17g, reference "
			      "%.17g (magnitude %g, tolerance %g)",
			      name, amp_dtype_name(c->dtype),
			      c->strided ? " strided" : "", (long long)i,
			      got[i], c->ref[i], mag, tol * (mag + 1e-6));
	}
}

static void release(struct ctx *c)
{
	amp_tensor_free(c->out);
	for (int i = 0; i < c->nkeep; i++)
		amp_tensor_free(c->keep[i]);
	for (int i = 0; i < c->nbuffers; i++)
		free(c->buffers[i]);
}

/* The dtype an op on `dtype` returns when ints compute as floats. */
static enum amp_dtype float_result(enum amp_dtype dtype)
{
	return amp_dtype_is_floating(dtype) ? dtype : AMP_DTYPE_F32;
}

/* Output flat index -> input flat index under NumPy broadcasting. */
static int64_t broadcast_index(int ndim, const int64_t *shape, int in_ndim,
			       const int64_t *in_shape, int64_t flat)
{
	int64_t index = 0, stride = 1;

	for (int d = ndim - 1; d >= 0; d--) {
		int64_t coordinate = flat % shape[d];
		flat /= shape[d];
		int in_d = d - (ndim - in_ndim);
		if (in_d < 0)
			continue;
		if (in_shape[in_d] != 1)
			index += coordinate * stride;
		stride *= in_shape[in_d];
	}
	return index;
}

/* -------------------------------------------------------- elementwise */

enum binary { ADD, SUB, MUL, DIV, POW };

static double binary_ref(enum binary op, double a, double b)
{
	switch (op) {
	case ADD:
		return a + b;
	case SUB:
		return a - b;
	case MUL:
		return a * b;
	case DIV:
		return a / b;
	default:
		return pow(a, b);
	}
}

/* a (3, 4) op b (4): broadcasting the second operand. */
static void binary_case(struct ctx *c, enum binary op)
{
	static const int64_t sa[2] = { 3, 4 }, sb[1] = { 4 };
	enum input_kind ka = op == POW ? INPUT_POSITIVE : INPUT_NORMAL;
	enum input_kind kb = op == DIV ? INPUT_POSITIVE : INPUT_NORMAL;
	amp_tensor *a = make(c, c->dtype, 2, sa, ka);
	amp_tensor *b = make(c, c->dtype, 1, sb, kb);
	amp_tensor *out = op == ADD   ? amp_add(a, b)
			  : op == SUB ? amp_sub(a, b)
			  : op == MUL ? amp_mul(a, b)
			  : op == DIV ? amp_div(a, b)
				      : amp_pow(a, b);
	enum amp_dtype want = op == DIV ? float_result(c->dtype) : c->dtype;
	double *ref = expect(c, out, want, 2, sa);
	double *va = values(c, a), *vb = values(c, b);

	for (int64_t i = 0; i < 12; i++)
		ref[i] = binary_ref(op, va[i], vb[i % 4]);
	if (op == POW) {
		double *mag = magnitudes(c);
		/* pow's f32 error grows with |b log a| */
		for (int64_t i = 0; i < 12; i++)
			mag[i] = fabs(ref[i]) *
				 (1.0 + fabs(vb[i % 4] * log(va[i])));
	}
}

static void case_add(struct ctx *c) { binary_case(c, ADD); }
static void case_sub(struct ctx *c) { binary_case(c, SUB); }
static void case_mul(struct ctx *c) { binary_case(c, MUL); }
static void case_div(struct ctx *c) { binary_case(c, DIV); }
static void case_pow(struct ctx *c) { binary_case(c, POW); }

/* Scalar forms: a float scalar for float tensors, an int scalar (which
 * keeps the integer dtype) for integer tensors. */
static void scalar_case(struct ctx *c, bool multiply)
{
	static const int64_t s[2] = { 4, 5 };
	bool integral = !amp_dtype_is_floating(c->dtype);
	double k = integral ? 3.0 : -1.75;
	amp_tensor *a = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *out = multiply ? amp_mul_scalar(a, k) : amp_add_scalar(a, k);
	double *ref = expect(c, out, c->dtype, 2, s);
	double *va = values(c, a);

	for (int64_t i = 0; i < 20; i++)
		ref[i] = multiply ? va[i] * k : va[i] + k;
}

static void case_add_scalar(struct ctx *c) { scalar_case(c, false); }
static void case_mul_scalar(struct ctx *c) { scalar_case(c, true); }

enum unary { NEG, EXP, LOG, RELU, GELU, GELU_TANH, SIGMOID, TANH, POW_S };

static double unary_ref(enum unary op, double x)
{
	switch (op) {
	case NEG:
		return -x;
	case EXP:
		return exp(x);
	case LOG:
		return log(x);
	case RELU:
		return x > 0 ? x : 0;
	case GELU:
		return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
	case GELU_TANH:
		return 0.5 * x *
		       (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
	case SIGMOID:
		return 1.0 / (1.0 + exp(-x));
	case TANH:
		return tanh(x);
	default:
		return pow(x, 2.5);
	}
}

static void unary_case(struct ctx *c, enum unary op)
{
	static const int64_t s[3] = { 2, 3, 5 };
	enum input_kind kind = op == LOG || op == POW_S ? INPUT_POSITIVE
							 : INPUT_NORMAL;
	amp_tensor *a = make(c, c->dtype, 3, s, kind);
	amp_tensor *out;

	switch (op) {
	case NEG: out = amp_neg(a); break;
	case EXP: out = amp_exp(a); break;
	case LOG: out = amp_log(a); break;
	case RELU: out = amp_relu(a); break;
	case GELU: out = amp_gelu(a, false); break;
	case GELU_TANH: out = amp_gelu(a, true); break;
	case SIGMOID: out = amp_sigmoid(a); break;
	case TANH: out = amp_tanh(a); break;
	default: out = amp_pow_scalar(a, 2.5); break;
	}
	bool keeps_dtype = op == NEG || op == RELU;
	double *ref = expect(c, out, keeps_dtype ? c->dtype
						 : float_result(c->dtype),
			     3, s);
	double *va = values(c, a);
	double *mag = magnitudes(c);
	for (int64_t i = 0; i < 30; i++) {
		ref[i] = unary_ref(op, va[i]);
		/* f32 libm functions are within a few ulp of |result|, and
		 * of |x| for functions that pass through 0 */
		mag[i] = fabs(ref[i]) + (op == GELU || op == GELU_TANH ||
						 op == TANH || op == LOG
					 ? fabs(va[i]) * 1e-2
					 : 0);
	}
}

static void case_neg(struct ctx *c) { unary_case(c, NEG); }
static void case_exp(struct ctx *c) { unary_case(c, EXP); }
static void case_log(struct ctx *c) { unary_case(c, LOG); }
static void case_relu(struct ctx *c) { unary_case(c, RELU); }
static void case_gelu(struct ctx *c) { unary_case(c, GELU); }
static void case_gelu_tanh(struct ctx *c) { unary_case(c, GELU_TANH); }
static void case_sigmoid(struct ctx *c) { unary_case(c, SIGMOID); }
static void case_tanh(struct ctx *c) { unary_case(c, TANH); }
static void case_pow_scalar(struct ctx *c) { unary_case(c, POW_S); }

/* integer ** int scalar stays integer and exact */
static void case_pow_int(struct ctx *c)
{
	static const int64_t s[1] = { 9 };
	amp_tensor *a = make(c, c->dtype, 1, s, INPUT_NORMAL);
	double *ref = expect(c, amp_pow_scalar(a, 3), c->dtype, 1, s);
	double *va = values(c, a);

	for (int i = 0; i < 9; i++)
		ref[i] = va[i] * va[i] * va[i];
}

static void case_addcmul(struct ctx *c)
{
	static const int64_t s[2] = { 3, 4 }, s1[1] = { 4 }, s2[2] = { 3, 1 };
	double value = amp_dtype_is_floating(c->dtype) ? 0.5 : 2;
	amp_tensor *a = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *t1 = make(c, c->dtype, 1, s1, INPUT_NORMAL);
	amp_tensor *t2 = make(c, c->dtype, 2, s2, INPUT_NORMAL);
	double *ref = expect(c, amp_addcmul(a, t1, t2, value), c->dtype, 2, s);
	double *va = values(c, a), *v1 = values(c, t1), *v2 = values(c, t2);
	double *mag = magnitudes(c);

	for (int i = 0; i < 12; i++) {
		double term = value * v1[i % 4] * v2[i / 4];
		ref[i] = va[i] + term;
		mag[i] = fabs(va[i]) + fabs(term);
	}
}

/* -------------------------------------------------------- matrix products */

/* C (m, n) = A (m, k) @ B (k, n) plus magnitudes sum |a||b|. */
static void gemm_ref(const double *a, const double *b, int64_t m, int64_t n,
		     int64_t k, double *out, double *mag)
{
	for (int64_t i = 0; i < m; i++)
		for (int64_t j = 0; j < n; j++) {
			double acc = 0, abs_acc = 0;
			for (int64_t p = 0; p < k; p++) {
				acc += a[i * k + p] * b[p * n + j];
				abs_acc += fabs(a[i * k + p] * b[p * n + j]);
			}
			out[i * n + j] = acc;
			if (mag)
				mag[i * n + j] = abs_acc;
		}
}

static void case_mm(struct ctx *c)
{
	static const int64_t sa[2] = { 5, 7 }, sb[2] = { 7, 3 }, so[2] = { 5, 3 };
	amp_tensor *a = make(c, c->dtype, 2, sa, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, 2, sb, INPUT_NORMAL);
	double *ref = expect(c, amp_mm(a, b), c->dtype, 2, so);

	gemm_ref(values(c, a), values(c, b), 5, 3, 7, ref, magnitudes(c));
}

static void batched_ref(struct ctx *c, amp_tensor *a, amp_tensor *b,
			int64_t batch, int64_t m, int64_t n, int64_t k,
			double *ref, double *mag)
{
	double *va = values(c, a), *vb = values(c, b);

	for (int64_t i = 0; i < batch; i++)
		gemm_ref(va + i * m * k, vb + i * k * n, m, n, k,
			 ref + i * m * n, mag + i * m * n);
}

static void case_bmm(struct ctx *c)
{
	static const int64_t sa[3] = { 2, 4, 5 }, sb[3] = { 2, 5, 3 };
	static const int64_t so[3] = { 2, 4, 3 };
	amp_tensor *a = make(c, c->dtype, 3, sa, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, 3, sb, INPUT_NORMAL);
	double *ref = expect(c, amp_bmm(a, b), c->dtype, 3, so);

	batched_ref(c, a, b, 2, 4, 3, 5, ref, magnitudes(c));
}

/* beta * self + alpha * (a @ b), self broadcast along rows/batches */
static void add_bias(double *ref, double *mag, const double *bias,
		     int64_t count, int64_t width, double beta, double alpha)
{
	for (int64_t i = 0; i < count; i++) {
		ref[i] = beta * bias[i % width] + alpha * ref[i];
		mag[i] = fabs(beta * bias[i % width]) + fabs(alpha) * mag[i];
	}
}

static void case_addmm(struct ctx *c)
{
	static const int64_t sa[2] = { 4, 6 }, sb[2] = { 6, 3 }, ss[1] = { 3 };
	static const int64_t so[2] = { 4, 3 };
	amp_tensor *self = make(c, c->dtype, 1, ss, INPUT_NORMAL);
	amp_tensor *a = make(c, c->dtype, 2, sa, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, 2, sb, INPUT_NORMAL);
	double *ref = expect(c, amp_addmm(self, a, b, 0.5, 2.0), c->dtype, 2, so);
	double *mag = magnitudes(c);

	gemm_ref(values(c, a), values(c, b), 4, 3, 6, ref, mag);
	add_bias(ref, mag, values(c, self), 12, 3, 0.5, 2.0);
}

static void case_baddbmm(struct ctx *c)
{
	static const int64_t sa[3] = { 3, 2, 4 }, sb[3] = { 3, 4, 5 };
	static const int64_t ss[2] = { 1, 5 }, so[3] = { 3, 2, 5 };
	amp_tensor *self = make(c, c->dtype, 2, ss, INPUT_NORMAL);
	amp_tensor *a = make(c, c->dtype, 3, sa, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, 3, sb, INPUT_NORMAL);
	double *ref = expect(c, amp_baddbmm(self, a, b, -1.0, 0.25), c->dtype,
			     3, so);
	double *mag = magnitudes(c);

	batched_ref(c, a, b, 3, 2, 5, 4, ref, mag);
	add_bias(ref, mag, values(c, self), 30, 5, -1.0, 0.25);
}

/* x (..., in) @ weight (out, in).T + bias */
static void linear_ref(struct ctx *c, amp_tensor *x, amp_tensor *w,
		       amp_tensor *bias, int64_t rows, int64_t in, int64_t out,
		       double *ref, double *mag)
{
	double *vx = values(c, x), *vw = values(c, w);
	double *vb = bias ? values(c, bias) : NULL;

	for (int64_t r = 0; r < rows; r++)
		for (int64_t o = 0; o < out; o++) {
			double acc = vb ? vb[o] : 0, abs_acc = vb ? fabs(vb[o]) : 0;
			for (int64_t i = 0; i < in; i++) {
				acc += vx[r * in + i] * vw[o * in + i];
				abs_acc += fabs(vx[r * in + i] * vw[o * in + i]);
			}
			ref[r * out + o] = acc;
			mag[r * out + o] = abs_acc;
		}
}

static void case_linear(struct ctx *c)
{
	static const int64_t sx[3] = { 2, 3, 6 }, sw[2] = { 4, 6 }, sb[1] = { 4 };
	static const int64_t so[3] = { 2, 3, 4 };
	amp_tensor *x = make(c, c->dtype, 3, sx, INPUT_NORMAL);
	amp_tensor *w = make(c, c->dtype, 2, sw, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, 1, sb, INPUT_NORMAL);
	double *ref = expect(c, amp_linear(x, w, b), c->dtype, 3, so);

	linear_ref(c, x, w, b, 6, 6, 4, ref, magnitudes(c));
}

static void case_linear_nobias(struct ctx *c)
{
	static const int64_t sx[2] = { 5, 8 }, sw[2] = { 3, 8 }, so[2] = { 5, 3 };
	amp_tensor *x = make(c, c->dtype, 2, sx, INPUT_NORMAL);
	amp_tensor *w = make(c, c->dtype, 2, sw, INPUT_NORMAL);
	double *ref = expect(c, amp_linear(x, w, NULL), c->dtype, 2, so);

	linear_ref(c, x, w, NULL, 5, 8, 3, ref, magnitudes(c));
}

/* matmul over the shapes of each of its branches, checked against a
 * broadcast batched reference. */
struct matmul_shapes {
	int na, nb, no;
	int64_t a[4], b[4], out[4];
};

static const struct matmul_shapes matmul_cases[] = {
	{ 1, 1, 0, { 6 }, { 6 }, { 0 } },                           /* dot */
	{ 2, 1, 1, { 4, 6 }, { 6 }, { 4 } },                        /* mv */
	{ 1, 2, 1, { 6 }, { 6, 3 }, { 3 } },                        /* 1d @ 2d */
	{ 3, 2, 3, { 2, 3, 5 }, { 5, 4 }, { 2, 3, 4 } },            /* folded */
	{ 2, 3, 3, { 3, 5 }, { 2, 5, 4 }, { 2, 3, 4 } },            /* 2d @ 3d */
	{ 4, 3, 4, { 2, 1, 3, 4 }, { 3, 4, 2 }, { 2, 3, 3, 2 } },   /* broadcast */
	{ 3, 1, 2, { 2, 3, 4 }, { 4 }, { 2, 3 } },                  /* 3d @ 1d */
};

static void matmul_case(struct ctx *c, const struct matmul_shapes *s)
{
	amp_tensor *a = make(c, c->dtype, s->na, s->a, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, s->nb, s->b, INPUT_NORMAL);
	double *ref = expect(c, amp_matmul(a, b), c->dtype, s->no, s->out);
	double *mag = magnitudes(c);
	double *va = values(c, a), *vb = values(c, b);
	/* view both as batches of matrices: (.., n, k) @ (.., k, p) */
	int64_t k = s->a[s->na - 1];
	int64_t n = s->na > 1 ? s->a[s->na - 2] : 1;
	int64_t p = s->nb > 1 ? s->b[s->nb - 1] : 1;
	int batch_a = s->na > 2 ? s->na - 2 : 0, batch_b = s->nb > 2 ? s->nb - 2 : 0;
	int nbatch = batch_a > batch_b ? batch_a : batch_b;
	int64_t batch_shape[4];
	int64_t batches = 1;
	for (int d = 0; d < nbatch; d++) {
		int da = d - (nbatch - batch_a), db = d - (nbatch - batch_b);
		int64_t x = da >= 0 ? s->a[da] : 1, y = db >= 0 ? s->b[db] : 1;
		batch_shape[d] = x > y ? x : y;
		batches *= batch_shape[d];
	}
	for (int64_t bi = 0; bi < batches; bi++) {
		int64_t ia = broadcast_index(nbatch, batch_shape, batch_a, s->a, bi);
		int64_t ib = broadcast_index(nbatch, batch_shape, batch_b, s->b, bi);
		const double *ma = va + ia * n * k;
		const double *mb = vb + ib * k * p;
		gemm_ref(ma, mb, n, p, k, ref + bi * n * p, mag + bi * n * p);
	}
}

static void case_matmul_dot(struct ctx *c) { matmul_case(c, &matmul_cases[0]); }
static void case_matmul_mv(struct ctx *c) { matmul_case(c, &matmul_cases[1]); }
static void case_matmul_vm(struct ctx *c) { matmul_case(c, &matmul_cases[2]); }
static void case_matmul_fold(struct ctx *c) { matmul_case(c, &matmul_cases[3]); }
static void case_matmul_2d3d(struct ctx *c) { matmul_case(c, &matmul_cases[4]); }
static void case_matmul_bcast(struct ctx *c) { matmul_case(c, &matmul_cases[5]); }
static void case_matmul_3d1d(struct ctx *c) { matmul_case(c, &matmul_cases[6]); }

/* ----------------------------------------------------------------- conv */

struct conv_params {
	int dims;
	int64_t input[4], weight[4];
	int64_t stride[2], padding[2], dilation[2], groups;
	bool bias;
};

static const struct conv_params conv_cases[] = {
	{ 1, { 2, 4, 9 }, { 6, 2, 3 }, { 2 }, { 1 }, { 2 }, 2, true },
	{ 2, { 2, 3, 7, 6 }, { 4, 3, 3, 2 }, { 2, 1 }, { 1, 0 }, { 1, 2 }, 1,
	  true },
	{ 2, { 1, 4, 5, 5 }, { 4, 1, 3, 3 }, { 1, 1 }, { 1, 1 }, { 1, 1 }, 4,
	  false },
};

static void conv_case(struct ctx *c, const struct conv_params *p)
{
	int nd = p->dims + 2;
	amp_tensor *x = make(c, c->dtype, nd, p->input, INPUT_NORMAL);
	amp_tensor *w = make(c, c->dtype, nd, p->weight, INPUT_NORMAL);
	int64_t bias_shape[1] = { p->weight[0] };
	amp_tensor *b = p->bias ? make(c, c->dtype, 1, bias_shape, INPUT_NORMAL)
				: NULL;
	/* as 2-D: height 1 for conv1d */
	int64_t N = p->input[0], C = p->input[1];
	int64_t H = p->dims == 2 ? p->input[2] : 1, W = p->input[nd - 1];
	int64_t O = p->weight[0], KH = p->dims == 2 ? p->weight[2] : 1;
	int64_t KW = p->weight[nd - 1];
	int64_t sh = p->dims == 2 ? p->stride[0] : 1, sw = p->stride[p->dims - 1];
	int64_t ph = p->dims == 2 ? p->padding[0] : 0, pw = p->padding[p->dims - 1];
	int64_t dh = p->dims == 2 ? p->dilation[0] : 1;
	int64_t dw = p->dilation[p->dims - 1];
	int64_t OH = (H + 2 * ph - dh * (KH - 1) - 1) / sh + 1;
	int64_t OW = (W + 2 * pw - dw * (KW - 1) - 1) / sw + 1;
	int64_t out_shape[4] = { N, O, OH, OW };
	if (p->dims == 1)
		out_shape[2] = OW;
	amp_tensor *out = p->dims == 1
				  ? amp_conv1d(x, w, b, p->stride[0],
					       p->padding[0], p->dilation[0],
					       p->groups)
				  : amp_conv2d(x, w, b, p->stride, p->padding,
					       p->dilation, p->groups);
	double *ref = expect(c, out, c->dtype, nd, out_shape);
	double *mag = magnitudes(c);
	double *vx = values(c, x), *vw = values(c, w);
	double *vb = b ? values(c, b) : NULL;
	int64_t cg = C / p->groups, og = O / p->groups;

	for (int64_t n = 0; n < N; n++)
		for (int64_t o = 0; o < O; o++)
			for (int64_t oy = 0; oy < OH; oy++)
				for (int64_t ox = 0; ox < OW; ox++) {
					double acc = vb ? vb[o] : 0;
					double abs_acc = fabs(acc);
					int64_t g = o / og;
					for (int64_t ci = 0; ci < cg; ci++)
						for (int64_t ky = 0; ky < KH; ky++)
							for (int64_t kx = 0; kx < KW; kx++) {
								int64_t y = oy * sh - ph + ky * dh;
								int64_t xx = ox * sw - pw + kx * dw;
								if (y < 0 || y >= H || xx < 0 || xx >= W)
									continue;
								double t = vx[((n * C + g * cg + ci) * H + y) * W + xx] *
									   vw[((o * cg + ci) * KH + ky) * KW + kx];
								acc += t;
								abs_acc += fabs(t);
							}
					int64_t i = ((n * O + o) * OH + oy) * OW + ox;
					ref[i] = acc;
					mag[i] = abs_acc;
				}
}

static void case_conv1d(struct ctx *c) { conv_case(c, &conv_cases[0]); }
static void case_conv2d(struct ctx *c) { conv_case(c, &conv_cases[1]); }
static void case_conv2d_depthwise(struct ctx *c) { conv_case(c, &conv_cases[2]); }

/* ------------------------------------------------ softmax, layer_norm */

/* x viewed as (outer, n, inner), softmax along n */
static void softmax_ref(const double *x, double *y, double *mag, int64_t outer,
			int64_t n, int64_t inner, bool log_form)
{
	for (int64_t o = 0; o < outer; o++)
		for (int64_t i = 0; i < inner; i++) {
			const double *row = x + o * n * inner + i;
			double max = -INFINITY, sum = 0;
			for (int64_t k = 0; k < n; k++)
				max = fmax(max, row[k * inner]);
			for (int64_t k = 0; k < n; k++)
				sum += exp(row[k * inner] - max);
			for (int64_t k = 0; k < n; k++) {
				int64_t at = o * n * inner + i + k * inner;
				y[at] = log_form ? row[k * inner] - max - log(sum)
						 : exp(row[k * inner] - max) / sum;
				/* log_softmax subtracts O(1) quantities */
				mag[at] = fabs(y[at]) + (log_form ? 1 : 0);
			}
		}
}

static void softmax_case(struct ctx *c, int dim, bool log_form,
			 enum amp_dtype dtype_arg)
{
	static const int64_t s[3] = { 3, 4, 5 };
	amp_tensor *x = make(c, c->dtype, 3, s, INPUT_NORMAL);
	amp_tensor *out = log_form ? amp_log_softmax(x, dim, dtype_arg)
				   : amp_softmax(x, dim, dtype_arg);
	enum amp_dtype want = dtype_arg == AMP_DTYPE_NONE ? c->dtype : dtype_arg;
	double *ref = expect(c, out, want, 3, s);
	int d = dim < 0 ? dim + 3 : dim;
	int64_t outer = 1, inner = 1;
	for (int i = 0; i < 3; i++) {
		if (i < d)
			outer *= s[i];
		if (i > d)
			inner *= s[i];
	}
	softmax_ref(values(c, x), ref, magnitudes(c), outer, s[d], inner,
		    log_form);
}

static void case_softmax(struct ctx *c) { softmax_case(c, -1, false, AMP_DTYPE_NONE); }
static void case_softmax_dim0(struct ctx *c) { softmax_case(c, 0, false, AMP_DTYPE_NONE); }
static void case_log_softmax(struct ctx *c) { softmax_case(c, 1, true, AMP_DTYPE_NONE); }
static void case_softmax_f32(struct ctx *c) { softmax_case(c, 2, false, AMP_DTYPE_F32); }
static void case_log_softmax_f64(struct ctx *c) { softmax_case(c, -1, true, AMP_DTYPE_F64); }

static void case_layer_norm(struct ctx *c)
{
	static const int64_t s[3] = { 3, 4, 5 }, ns[2] = { 4, 5 };
	amp_tensor *x = make(c, c->dtype, 3, s, INPUT_NORMAL);
	amp_tensor *w = make(c, c->dtype, 2, ns, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, 2, ns, INPUT_NORMAL);
	double *ref = expect(c, amp_layer_norm(x, 2, ns, w, b, 1e-5), c->dtype,
			     3, s);
	double *mag = magnitudes(c);
	double *vx = values(c, x), *vw = values(c, w), *vb = values(c, b);

	for (int r = 0; r < 3; r++) {
		double mean = 0, var = 0;
		for (int i = 0; i < 20; i++)
			mean += vx[r * 20 + i] / 20;
		for (int i = 0; i < 20; i++)
			var += (vx[r * 20 + i] - mean) * (vx[r * 20 + i] - mean) / 20;
		for (int i = 0; i < 20; i++) {
			double norm = (vx[r * 20 + i] - mean) / sqrt(var + 1e-5);
			ref[r * 20 + i] = norm * vw[i] + vb[i];
			mag[r * 20 + i] = fabs(norm * vw[i]) + fabs(vb[i]) + 1;
		}
	}
}

/* mixed dtypes on the CPU: a low-precision input with f32 parameters */
static void case_layer_norm_mixed(struct ctx *c)
{
	static const int64_t s[2] = { 4, 6 }, ns[1] = { 6 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *w = make(c, AMP_DTYPE_F32, 1, ns, INPUT_NORMAL);
	double *ref = expect(c, amp_layer_norm(x, 1, ns, w, NULL, 1e-5),
			     c->dtype, 2, s);
	double *mag = magnitudes(c);
	double *vx = values(c, x), *vw = values(c, w);

	for (int r = 0; r < 4; r++) {
		double mean = 0, var = 0;
		for (int i = 0; i < 6; i++)
			mean += vx[r * 6 + i] / 6;
		for (int i = 0; i < 6; i++)
			var += (vx[r * 6 + i] - mean) * (vx[r * 6 + i] - mean) / 6;
		for (int i = 0; i < 6; i++) {
			ref[r * 6 + i] = (vx[r * 6 + i] - mean) /
					 sqrt(var + 1e-5) * vw[i];
			mag[r * 6 + i] = fabs(ref[r * 6 + i]) + 1;
		}
	}
}

/* ----------------------------------------------------------- reductions */

/* Reduces x (2, 3, 4) over dims {0, 2} (or all), summing or averaging. */
static void reduce_case(struct ctx *c, bool mean, bool all)
{
	static const int64_t s[3] = { 2, 3, 4 };
	static const int64_t dims[2] = { 0, -1 };
	static const int64_t kept[3] = { 1, 3, 1 };
	amp_tensor *x = make(c, c->dtype, 3, s, INPUT_NORMAL);
	amp_tensor *out = all ? (mean ? amp_mean(x, AMP_DTYPE_NONE)
				      : amp_sum(x, AMP_DTYPE_NONE))
			      : (mean ? amp_mean_dim(x, 2, dims, true,
						     AMP_DTYPE_NONE)
				      : amp_sum_dim(x, 2, dims, true,
						    AMP_DTYPE_NONE));
	enum amp_dtype want = amp_dtype_is_floating(c->dtype) ? c->dtype
							       : AMP_DTYPE_I64;
	double *ref = expect(c, out, want, all ? 0 : 3, kept);
	double *mag = magnitudes(c);
	double *vx = values(c, x);

	for (int64_t i = 0; i < 24; i++) {
		int64_t o = all ? 0 : (i / 4) % 3;
		ref[o] += vx[i];
		mag[o] += fabs(vx[i]);
	}
	for (int64_t o = 0; o < c->n; o++) {
		double count = all ? 24 : 8;
		ref[o] /= mean ? count : 1;
		mag[o] /= mean ? count : 1;
	}
}

static void case_sum(struct ctx *c) { reduce_case(c, false, true); }
static void case_sum_dim(struct ctx *c) { reduce_case(c, false, false); }
static void case_mean(struct ctx *c) { reduce_case(c, true, true); }
static void case_mean_dim(struct ctx *c) { reduce_case(c, true, false); }

/* sum with dtype=f64 reads every input dtype exactly */
static void case_sum_f64(struct ctx *c)
{
	static const int64_t s[2] = { 7, 9 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	double *ref = expect(c, amp_sum(x, AMP_DTYPE_F64), AMP_DTYPE_F64, 0, s);
	double *mag = magnitudes(c);
	double *vx = values(c, x);

	for (int i = 0; i < 63; i++) {
		ref[0] += vx[i];
		mag[0] += fabs(vx[i]);
	}
}

/* ------------------------------------------------------ joins, gathers */

static void case_cat(struct ctx *c)
{
	static const int64_t sa[2] = { 2, 3 }, sb[2] = { 2, 2 }, so[2] = { 2, 5 };
	amp_tensor *a = make(c, c->dtype, 2, sa, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, 2, sb, INPUT_NORMAL);
	amp_tensor *list[2] = { a, b };
	double *ref = expect(c, amp_cat(list, 2, -1), c->dtype, 2, so);
	double *va = values(c, a), *vb = values(c, b);

	for (int r = 0; r < 2; r++)
		for (int k = 0; k < 5; k++)
			ref[r * 5 + k] = k < 3 ? va[r * 3 + k] : vb[r * 2 + k - 3];
}

static void case_stack(struct ctx *c)
{
	static const int64_t s[2] = { 2, 3 }, so[3] = { 2, 3, 2 };
	amp_tensor *a = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *b = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *list[2] = { a, b };
	double *ref = expect(c, amp_stack(list, 2, 2), c->dtype, 3, so);
	double *va = values(c, a), *vb = values(c, b);

	for (int i = 0; i < 6; i++) {
		ref[2 * i] = va[i];
		ref[2 * i + 1] = vb[i];
	}
}

static void case_embedding(struct ctx *c)
{
	static const int64_t sw[2] = { 10, 4 }, si[2] = { 2, 3 };
	static const int64_t so[3] = { 2, 3, 4 };
	static const int64_t index[6] = { 3, 0, 9, 3, 7, 1 };
	amp_tensor *w = make(c, c->dtype, 2, sw, INPUT_NORMAL);
	amp_tensor *i = keep(c, amp_from_data(2, si, AMP_DTYPE_I64,
					      AMP_DEVICE_CPU, index));
	double *ref = expect(c, amp_embedding(w, i), c->dtype, 3, so);
	double *vw = values(c, w);

	for (int k = 0; k < 6; k++)
		memcpy(ref + k * 4, vw + index[k] * 4, 4 * sizeof *ref);
}

/* Copies: values unchanged whatever the layout. */
static void case_clone(struct ctx *c)
{
	static const int64_t s[2] = { 3, 5 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	double *ref = expect(c, amp_clone(x), c->dtype, 2, s);

	memcpy(ref, values(c, x), 15 * sizeof *ref);
}

static void case_contiguous(struct ctx *c)
{
	static const int64_t s[2] = { 3, 5 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *out = amp_contiguous(x);
	double *ref = expect(c, out, c->dtype, 2, s);

	ck_assert(amp_tensor_is_contiguous(out));
	memcpy(ref, values(c, x), 15 * sizeof *ref);
}

static void case_reshape(struct ctx *c)
{
	static const int64_t s[2] = { 3, 4 }, so[3] = { 2, 2, 3 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	double *ref = expect(c, amp_reshape(x, 3, so), c->dtype, 3, so);

	memcpy(ref, values(c, x), 12 * sizeof *ref);
}

static void case_to_f64(struct ctx *c)
{
	static const int64_t s[2] = { 3, 4 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	double *ref = expect(c, amp_to(x, AMP_DTYPE_F64), AMP_DTYPE_F64, 2, s);

	memcpy(ref, values(c, x), 12 * sizeof *ref);
}

static void case_slice_transpose(struct ctx *c)
{
	static const int64_t s[3] = { 2, 5, 3 }, so[3] = { 3, 2, 2 };
	amp_tensor *x = make(c, c->dtype, 3, s, INPUT_NORMAL);
	amp_tensor *sliced = keep(c, amp_slice(x, 1, 1, -1, 2)); /* 1, 3 */
	double *ref = expect(c, amp_clone(keep(c, amp_transpose(sliced, 0, 2))),
			     c->dtype, 3, so);
	double *vx = values(c, x);

	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 2; b++)
			for (int d = 0; d < 2; d++)
				ref[(a * 2 + b) * 2 + d] =
					vx[(d * 5 + 1 + 2 * b) * 3 + a];
}

/* ----------------------------------------------------------------- losses */

static void loss_reduce(struct ctx *c, const double *terms, int64_t n,
			enum amp_reduction reduction, double divisor)
{
	double *ref = c->ref, *mag = magnitudes(c);

	if (reduction == AMP_REDUCTION_NONE) {
		for (int64_t i = 0; i < n; i++) {
			ref[i] = terms[i];
			mag[i] = fabs(terms[i]);
		}
		return;
	}
	for (int64_t i = 0; i < n; i++) {
		ref[0] += terms[i];
		mag[0] += fabs(terms[i]);
	}
	if (reduction == AMP_REDUCTION_MEAN) {
		ref[0] /= divisor;
		mag[0] /= divisor;
	}
}

static void mse_case(struct ctx *c, enum amp_reduction reduction)
{
	static const int64_t s[2] = { 4, 5 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *y = make(c, c->dtype, 2, s, INPUT_NORMAL);
	expect(c, amp_mse_loss(x, y, reduction), c->dtype,
	       reduction == AMP_REDUCTION_NONE ? 2 : 0, s);
	double *vx = values(c, x), *vy = values(c, y), *terms = buffer(c, 20);

	for (int i = 0; i < 20; i++)
		terms[i] = (vx[i] - vy[i]) * (vx[i] - vy[i]);
	loss_reduce(c, terms, 20, reduction, 20);
}

static void case_mse_mean(struct ctx *c) { mse_case(c, AMP_REDUCTION_MEAN); }
static void case_mse_none(struct ctx *c) { mse_case(c, AMP_REDUCTION_NONE); }

/* nll_loss / cross_entropy on (N=6, C=5) with class weights and one
 * ignored target. */
static const int64_t class_targets[6] = { 1, 4, -100, 0, 4, 2 };

static void nll_ref(struct ctx *c, const double *log_probs,
		    const double *weight, enum amp_reduction reduction)
{
	double *terms = buffer(c, 6), total_weight = 0;

	for (int i = 0; i < 6; i++) {
		int64_t t = class_targets[i];
		if (t == -100)
			continue;
		double w = weight ? weight[t] : 1;
		terms[i] = -w * log_probs[i * 5 + t];
		total_weight += w;
	}
	loss_reduce(c, terms, 6, reduction, total_weight);
}

static void nll_case(struct ctx *c, bool cross_entropy,
		     enum amp_reduction reduction)
{
	static const int64_t s[2] = { 6, 5 }, st[1] = { 6 }, sw[1] = { 5 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *w = make(c, c->dtype, 1, sw, INPUT_POSITIVE);
	amp_tensor *t = keep(c, amp_from_data(1, st, AMP_DTYPE_I64,
					      AMP_DEVICE_CPU, class_targets));
	amp_tensor *out = cross_entropy
				  ? amp_cross_entropy(x, t, w, reduction, -100)
				  : amp_nll_loss(x, t, w, reduction, -100);
	expect(c, out, c->dtype, reduction == AMP_REDUCTION_NONE ? 1 : 0, st);
	double *vx = values(c, x), *log_probs = vx;
	if (cross_entropy) {
		/* log_softmax runs in (and rounds to) the input dtype first */
		amp_tensor *lsm = keep(c, amp_log_softmax(x, 1, AMP_DTYPE_NONE));
		log_probs = values(c, lsm);
	}
	nll_ref(c, log_probs, values(c, w), reduction);
}

static void case_nll_mean(struct ctx *c) { nll_case(c, false, AMP_REDUCTION_MEAN); }
static void case_nll_none(struct ctx *c) { nll_case(c, false, AMP_REDUCTION_NONE); }
static void case_ce_mean(struct ctx *c) { nll_case(c, true, AMP_REDUCTION_MEAN); }
static void case_ce_sum(struct ctx *c) { nll_case(c, true, AMP_REDUCTION_SUM); }

/* cross_entropy on (N, C, d): nll over the spatial positions */
static void case_ce_spatial(struct ctx *c)
{
	static const int64_t s[3] = { 2, 3, 4 }, st[2] = { 2, 4 };
	static const int64_t targets[8] = { 0, 2, 1, 1, 2, 0, 0, 1 };
	amp_tensor *x = make(c, c->dtype, 3, s, INPUT_NORMAL);
	amp_tensor *t = keep(c, amp_from_data(2, st, AMP_DTYPE_I64,
					      AMP_DEVICE_CPU, targets));
	double *ref = expect(c, amp_cross_entropy(x, t, NULL,
						  AMP_REDUCTION_NONE, -100),
			     c->dtype, 2, st);
	double *mag = magnitudes(c);
	double *vx = values(c, x);

	for (int n = 0; n < 2; n++)
		for (int d = 0; d < 4; d++) {
			double max = -INFINITY, sum = 0;
			for (int k = 0; k < 3; k++)
				max = fmax(max, vx[(n * 3 + k) * 4 + d]);
			for (int k = 0; k < 3; k++)
				sum += exp(vx[(n * 3 + k) * 4 + d] - max);
			int64_t k = targets[n * 4 + d];
			ref[n * 4 + d] = -(vx[(n * 3 + k) * 4 + d] - max - log(sum));
			mag[n * 4 + d] = fabs(ref[n * 4 + d]) + 1;
		}
}

/* class probabilities: target of the input's shape */
static void case_ce_probs(struct ctx *c)
{
	static const int64_t s[2] = { 3, 4 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *p = make(c, c->dtype, 2, s, INPUT_UNIT);
	expect(c, amp_cross_entropy(x, p, NULL, AMP_REDUCTION_MEAN, -100),
	       c->dtype, 0, s);
	double *vx = values(c, x), *vp = values(c, p);
	double *terms = buffer(c, 3);

	for (int n = 0; n < 3; n++) {
		double max = -INFINITY, sum = 0;
		for (int k = 0; k < 4; k++)
			max = fmax(max, vx[n * 4 + k]);
		for (int k = 0; k < 4; k++)
			sum += exp(vx[n * 4 + k] - max);
		for (int k = 0; k < 4; k++)
			terms[n] -= (vx[n * 4 + k] - max - log(sum)) * vp[n * 4 + k];
	}
	loss_reduce(c, terms, 3, AMP_REDUCTION_MEAN, 3);
	c->mag[0] += 1;
}

static void case_bce(struct ctx *c)
{
	static const int64_t s[2] = { 3, 4 }, sw[1] = { 4 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_UNIT);
	amp_tensor *y = make(c, c->dtype, 2, s, INPUT_UNIT);
	amp_tensor *w = make(c, c->dtype, 1, sw, INPUT_POSITIVE);
	expect(c, amp_binary_cross_entropy(x, y, w, AMP_REDUCTION_MEAN),
	       c->dtype, 0, s);
	double *vx = values(c, x), *vy = values(c, y), *vw = values(c, w);
	double *terms = buffer(c, 12);

	for (int i = 0; i < 12; i++)
		terms[i] = -vw[i % 4] * (vy[i] * log(vx[i]) +
					 (1 - vy[i]) * log(1 - vx[i]));
	loss_reduce(c, terms, 12, AMP_REDUCTION_MEAN, 12);
}

static void case_bce_logits(struct ctx *c)
{
	static const int64_t s[2] = { 3, 4 }, sw[1] = { 4 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	amp_tensor *y = make(c, c->dtype, 2, s, INPUT_UNIT);
	amp_tensor *w = make(c, c->dtype, 1, sw, INPUT_POSITIVE);
	amp_tensor *pw = make(c, c->dtype, 1, sw, INPUT_POSITIVE);
	expect(c, amp_binary_cross_entropy_with_logits(x, y, w, pw,
						       AMP_REDUCTION_NONE),
	       c->dtype, 2, s);
	double *vx = values(c, x), *vy = values(c, y), *vw = values(c, w);
	double *vp = values(c, pw), *terms = buffer(c, 12);

	for (int i = 0; i < 12; i++) {
		double log_sig = -log1p(exp(-vx[i]));
		double log_one_minus = -vx[i] + log_sig;
		terms[i] = -vw[i % 4] * (vp[i % 4] * vy[i] * log_sig +
					 (1 - vy[i]) * log_one_minus);
	}
	loss_reduce(c, terms, 12, AMP_REDUCTION_NONE, 1);
	for (int i = 0; i < 12; i++)
		c->mag[i] += fabs(vx[i]) * vw[i % 4] * 1e-2;
}

static void case_dropout_eval(struct ctx *c)
{
	static const int64_t s[2] = { 3, 4 };
	amp_tensor *x = make(c, c->dtype, 2, s, INPUT_NORMAL);
	double *ref = expect(c, amp_dropout(x, 0.5, false), c->dtype, 2, s);

	memcpy(ref, values(c, x), 12 * sizeof *ref);
}

/* ------------------------------------------------------------- the table */

struct numeric_case {
	const char *name;
	unsigned dtypes;
	void (*run)(struct ctx *c);
};

static const struct numeric_case cases[] = {
	{ "add", ALL, case_add },
	{ "sub", ALL, case_sub },
	{ "mul", ALL, case_mul },
	{ "div", ALL, case_div },
	{ "pow", FLOATS, case_pow },
	{ "add_scalar", ALL, case_add_scalar },
	{ "mul_scalar", ALL, case_mul_scalar },
	{ "neg", ALL, case_neg },
	{ "exp", ALL, case_exp },
	{ "log", ALL, case_log },
	{ "relu", ALL, case_relu },
	{ "gelu", FLOATS, case_gelu },
	{ "gelu_tanh", FLOATS, case_gelu_tanh },
	{ "sigmoid", ALL, case_sigmoid },
	{ "tanh", ALL, case_tanh },
	{ "pow_scalar", FLOATS, case_pow_scalar },
	{ "pow_int", INTS, case_pow_int },
	{ "addcmul", ALL, case_addcmul },
	{ "mm", ALL, case_mm },
	{ "bmm", FLOATS, case_bmm },
	{ "addmm", FLOATS, case_addmm },
	{ "baddbmm", FLOATS, case_baddbmm },
	{ "linear", FLOATS, case_linear },
	{ "linear_nobias", FLOATS, case_linear_nobias },
	{ "matmul_dot", FLOATS, case_matmul_dot },
	{ "matmul_mv", FLOATS, case_matmul_mv },
	{ "matmul_vm", FLOATS, case_matmul_vm },
	{ "matmul_fold", FLOATS, case_matmul_fold },
	{ "matmul_2d3d", FLOATS, case_matmul_2d3d },
	{ "matmul_broadcast", FLOATS, case_matmul_bcast },
	{ "matmul_3d1d", FLOATS, case_matmul_3d1d },
	{ "conv1d", FLOATS, case_conv1d },
	{ "conv2d", FLOATS, case_conv2d },
	{ "conv2d_depthwise", FLOATS, case_conv2d_depthwise },
	{ "softmax", FLOATS, case_softmax },
	{ "softmax_dim0", FLOATS, case_softmax_dim0 },
	{ "log_softmax", FLOATS, case_log_softmax },
	{ "softmax_dtype_f32", ALL, case_softmax_f32 },
	{ "log_softmax_dtype_f64", ALL, case_log_softmax_f64 },
	{ "layer_norm", FLOATS, case_layer_norm },
	{ "layer_norm_mixed", M(AMP_DTYPE_F16) | M(AMP_DTYPE_BF16),
	  case_layer_norm_mixed },
	{ "sum", ALL, case_sum },
	{ "sum_dim", ALL, case_sum_dim },
	{ "mean", FLOATS, case_mean },
	{ "mean_dim", FLOATS, case_mean_dim },
	{ "sum_dtype_f64", ALL, case_sum_f64 },
	{ "cat", ALL, case_cat },
	{ "stack", ALL, case_stack },
	{ "embedding", ALL, case_embedding },
	{ "clone", ALL, case_clone },
	{ "contiguous", ALL, case_contiguous },
	{ "reshape", ALL, case_reshape },
	{ "to_f64", ALL, case_to_f64 },
	{ "slice_transpose", ALL, case_slice_transpose },
	{ "mse_loss_mean", FLOATS, case_mse_mean },
	{ "mse_loss_none", FLOATS, case_mse_none },
	{ "nll_loss_mean", FLOATS, case_nll_mean },
	{ "nll_loss_none", FLOATS, case_nll_none },
	{ "cross_entropy_mean", FLOATS, case_ce_mean },
	{ "cross_entropy_sum", FLOATS, case_ce_sum },
	{ "cross_entropy_spatial", FLOATS, case_ce_spatial },
	{ "cross_entropy_probs", FLOATS, case_ce_probs },
	{ "binary_cross_entropy", FLOATS, case_bce },
	{ "bce_with_logits", FLOATS, case_bce_logits },
	{ "dropout_eval", ALL, case_dropout_eval },
};

/* (case, dtype, strided) triples, built once from the table. */
struct numeric_run {
	unsigned short which;
	unsigned char dtype;
	bool strided;
};

static struct numeric_run runs[ARRAY_SIZE(cases) * AMP_DTYPE_COUNT * 2];
static int nruns;

START_TEST(test_numeric)
{
	const struct numeric_run *r = &runs[_i];
	const struct numeric_case *nc = &cases[r->which];
	struct ctx c = { .dtype = (enum amp_dtype)r->dtype,
			 .strided = r->strided };

	amp_manual_seed(1000u + (unsigned)r->which * 16u + r->dtype);
	nc->run(&c);
	check(&c, nc->name);
	release(&c);
}
END_TEST

void ops_add_numeric_tcases(Suite *suite)
{
	TCase *tc = tcase_create("numeric");

	nruns = 0;
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
		for (int d = 0; d < AMP_DTYPE_COUNT; d++)
			for (int strided = 0; strided < 2; strided++)
				if (cases[i].dtypes & M(d))
					runs[nruns++] = (struct numeric_run){
						(unsigned short)i,
						(unsigned char)d, strided != 0
					};
	tcase_add_loop_test(tc, test_numeric, 0, nruns);
	suite_add_tcase(suite, tc);
}
