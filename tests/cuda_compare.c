/* Device cuda against the CPU backend, op by op (see cuda_compare.h).
 * The cases cover every op the CUDA glue runs on the GPU (lib/backend_cuda.c)
 * with contiguous, transposed and broadcast operands, and a sample of ops
 * that take the host-copy fallback (other dims, composites, integer
 * inputs). */
#include "cuda_compare.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE AMP_DTYPE_NONE
#define SHAPE(...) { __VA_ARGS__ }

void cuda_fill(float *values, size_t n, enum cuda_values kind, uint64_t seed)
{
	uint64_t state = seed * 0x9e3779b97f4a7c15ull + 0x2545f4914f6cdd1dull;

	for (size_t i = 0; i < n; i++) {
		state ^= state >> 12;
		state ^= state << 25;
		state ^= state >> 27;
		uint64_t bits = state * 0x2545f4914f6cdd1dull;
		double u = (double)(bits >> 11) / 9007199254740992.0;
		switch (kind) {
		case CUDA_VALUES_INDEX:
			values[i] = (float)floor(u * 4.0);
			break;
		case CUDA_VALUES_POSITIVE:
			values[i] = (float)(0.1 + 1.9 * u);
			break;
		default:
			values[i] = (float)((bits & 1 ? -1.0 : 1.0) *
					    (0.1 + 1.9 * u));
			break;
		}
	}
}

amp_tensor *cuda_random(int ndim, const int64_t *shape, enum amp_dtype dtype,
			enum cuda_values kind, uint64_t seed)
{
	int64_t n = 1;

	for (int d = 0; d < ndim; d++)
		n *= shape[d];
	float *values = malloc((size_t)(n ? n : 1) * sizeof *values);
	if (!values)
		return NULL;
	cuda_fill(values, (size_t)n, kind, seed);
	amp_tensor *f32 = amp_from_data(ndim, shape, AMP_DTYPE_F32,
					AMP_DEVICE_CPU, values);
	free(values);
	if (!f32 || dtype == AMP_DTYPE_F32)
		return f32;
	amp_tensor *out = amp_to(f32, dtype);
	amp_tensor_free(f32);
	return out;
}

amp_tensor *cuda_random_on_device(int ndim, const int64_t *shape,
				  enum amp_dtype dtype, enum cuda_values kind,
				  uint64_t seed)
{
	amp_tensor *host = cuda_random(ndim, shape, dtype, kind, seed);
	amp_tensor *device = amp_to_device(host, AMP_DEVICE_CUDA);

	amp_tensor_free(host);
	return device;
}

double cuda_rtol(enum amp_dtype dtype)
{
	switch (dtype) {
	case AMP_DTYPE_F16:
		return 2e-3;  /* 2 ulp of 2^-10 */
	case AMP_DTYPE_BF16:
		return 1.6e-2; /* 2 ulp of 2^-7 */
	case AMP_DTYPE_F64:
		return 1e-12;
	case AMP_DTYPE_F32:
		return 2e-5;
	default:
		return 0.0;   /* integers and bool: exact */
	}
}

bool cuda_tensors_close(amp_tensor *got, amp_tensor *expected, double rtol,
			double atol, char *message, size_t size)
{
	int ndim = amp_tensor_ndim(expected);
	int64_t n = amp_tensor_numel(expected);

	if (amp_tensor_dtype(got) != amp_tensor_dtype(expected)) {
		snprintf(message, size, "dtype %s, expected %s",
			 amp_dtype_name(amp_tensor_dtype(got)),
			 amp_dtype_name(amp_tensor_dtype(expected)));
		return false;
	}
	if (amp_tensor_ndim(got) != ndim ||
	    memcmp(amp_tensor_shape(got), amp_tensor_shape(expected),
		   (size_t)ndim * sizeof(int64_t))) {
		snprintf(message, size, "shape differs (ndim %d vs %d)",
			 amp_tensor_ndim(got), ndim);
		return false;
	}
	double *a = malloc((size_t)(n ? n : 1) * sizeof *a);
	double *b = malloc((size_t)(n ? n : 1) * sizeof *b);
	bool ok = a && b &&
		  amp_tensor_read(got, AMP_DTYPE_F64, a, (size_t)n) == AMP_OK &&
		  amp_tensor_read(expected, AMP_DTYPE_F64, b, (size_t)n) == AMP_OK;
	if (!ok)
		snprintf(message, size, "cannot read the results: %s",
			 amp_last_error());
	for (int64_t i = 0; ok && i < n; i++) {
		if (isnan(a[i]) || isnan(b[i])) {
			ok = isnan(a[i]) && isnan(b[i]);
		} else if (isinf(b[i])) {
			ok = a[i] == b[i];
		} else {
			ok = fabs(a[i] - b[i]) <= atol + rtol * fabs(b[i]);
		}
		if (!ok)
			snprintf(message, size,
				 "element %" PRId64 " of %" PRId64 ": %.9g, expected "
				 "%.9g (rtol %g, atol %g)",
				 i, n, a[i], b[i], rtol, atol);
	}
	free(a);
	free(b);
	return ok;
}

/* ------------------------------------------------------------ the ops */

static amp_tensor *op_add(amp_tensor *const *in) { return amp_add(in[0], in[1]); }
static amp_tensor *op_sub(amp_tensor *const *in) { return amp_sub(in[0], in[1]); }
static amp_tensor *op_mul(amp_tensor *const *in) { return amp_mul(in[0], in[1]); }
static amp_tensor *op_div(amp_tensor *const *in) { return amp_div(in[0], in[1]); }
static amp_tensor *op_add_scalar(amp_tensor *const *in) { return amp_add_scalar(in[0], 0.75); }
static amp_tensor *op_mul_scalar(amp_tensor *const *in) { return amp_mul_scalar(in[0], -1.5); }
static amp_tensor *op_pow_scalar(amp_tensor *const *in) { return amp_pow_scalar(in[0], 2.5); }
static amp_tensor *op_neg(amp_tensor *const *in) { return amp_neg(in[0]); }
static amp_tensor *op_exp(amp_tensor *const *in) { return amp_exp(in[0]); }
static amp_tensor *op_log(amp_tensor *const *in) { return amp_log(in[0]); }
static amp_tensor *op_relu(amp_tensor *const *in) { return amp_relu(in[0]); }
static amp_tensor *op_gelu(amp_tensor *const *in) { return amp_gelu(in[0], false); }
static amp_tensor *op_gelu_tanh(amp_tensor *const *in) { return amp_gelu(in[0], true); }
static amp_tensor *op_sigmoid(amp_tensor *const *in) { return amp_sigmoid(in[0]); }
static amp_tensor *op_tanh(amp_tensor *const *in) { return amp_tanh(in[0]); }

/* op(t(x)) and friends: strided operands */
static amp_tensor *op_exp_t(amp_tensor *const *in)
{
	amp_tensor *t = amp_t(in[0]), *out = t ? amp_exp(t) : NULL;
	amp_tensor_free(t);
	return out;
}

static amp_tensor *op_add_t(amp_tensor *const *in)
{
	amp_tensor *t = amp_t(in[1]), *out = t ? amp_add(in[0], t) : NULL;
	amp_tensor_free(t);
	return out;
}

static amp_tensor *op_exp_slice(amp_tensor *const *in)
{
	amp_tensor *s = amp_slice(in[0], 1, 1, 6, 2);
	amp_tensor *out = s ? amp_exp(s) : NULL;
	amp_tensor_free(s);
	return out;
}

static amp_tensor *op_softmax(amp_tensor *const *in) { return amp_softmax(in[0], -1, AMP_DTYPE_NONE); }
static amp_tensor *op_log_softmax(amp_tensor *const *in) { return amp_log_softmax(in[0], 1, AMP_DTYPE_NONE); }
static amp_tensor *op_softmax_dim0(amp_tensor *const *in) { return amp_softmax(in[0], 0, AMP_DTYPE_NONE); }
static amp_tensor *op_softmax_f32(amp_tensor *const *in) { return amp_softmax(in[0], -1, AMP_DTYPE_F32); }

static amp_tensor *op_layer_norm(amp_tensor *const *in)
{
	return amp_layer_norm(in[0], 1, (int64_t[]){ 8 }, in[1], in[2], 1e-5);
}

static amp_tensor *op_layer_norm_plain(amp_tensor *const *in)
{
	return amp_layer_norm(in[0], 2, (int64_t[]){ 3, 8 }, NULL, NULL, 1e-5);
}

static amp_tensor *op_sum(amp_tensor *const *in) { return amp_sum(in[0], AMP_DTYPE_NONE); }
static amp_tensor *op_sum_f32(amp_tensor *const *in) { return amp_sum(in[0], AMP_DTYPE_F32); }
static amp_tensor *op_mean(amp_tensor *const *in) { return amp_mean(in[0], AMP_DTYPE_NONE); }

static amp_tensor *op_sum_last(amp_tensor *const *in)
{
	return amp_sum_dim(in[0], 1, (int64_t[]){ -1 }, false, AMP_DTYPE_NONE);
}

static amp_tensor *op_mean_last2_keepdim(amp_tensor *const *in)
{
	return amp_mean_dim(in[0], 2, (int64_t[]){ 2, 1 }, true, AMP_DTYPE_NONE);
}

static amp_tensor *op_sum_first(amp_tensor *const *in)
{
	return amp_sum_dim(in[0], 1, (int64_t[]){ 0 }, false, AMP_DTYPE_NONE);
}

static amp_tensor *op_mm(amp_tensor *const *in) { return amp_mm(in[0], in[1]); }

static amp_tensor *op_mm_b_t(amp_tensor *const *in)
{
	amp_tensor *t = amp_t(in[1]), *out = t ? amp_mm(in[0], t) : NULL;
	amp_tensor_free(t);
	return out;
}

static amp_tensor *op_mm_a_t(amp_tensor *const *in)
{
	amp_tensor *t = amp_t(in[0]), *out = t ? amp_mm(t, in[1]) : NULL;
	amp_tensor_free(t);
	return out;
}

static amp_tensor *op_bmm(amp_tensor *const *in) { return amp_bmm(in[0], in[1]); }

static amp_tensor *op_bmm_b_t(amp_tensor *const *in)
{
	amp_tensor *t = amp_transpose(in[1], 1, 2);
	amp_tensor *out = t ? amp_bmm(in[0], t) : NULL;
	amp_tensor_free(t);
	return out;
}

static amp_tensor *op_addmm(amp_tensor *const *in) { return amp_addmm(in[0], in[1], in[2], 0.5, 2.0); }
static amp_tensor *op_addmm_beta0(amp_tensor *const *in) { return amp_addmm(in[0], in[1], in[2], 0.0, 1.0); }
static amp_tensor *op_baddbmm(amp_tensor *const *in) { return amp_baddbmm(in[0], in[1], in[2], 1.0, 0.5); }
static amp_tensor *op_linear(amp_tensor *const *in) { return amp_linear(in[0], in[1], in[2]); }
static amp_tensor *op_linear_nobias(amp_tensor *const *in) { return amp_linear(in[0], in[1], NULL); }

static amp_tensor *op_linear_w_t(amp_tensor *const *in)
{
	amp_tensor *t = amp_t(in[1]), *out = t ? amp_linear(in[0], t, NULL) : NULL;
	amp_tensor_free(t);
	return out;
}

static amp_tensor *op_matmul(amp_tensor *const *in) { return amp_matmul(in[0], in[1]); }
static amp_tensor *op_to_f16(amp_tensor *const *in) { return amp_to(in[0], AMP_DTYPE_F16); }
static amp_tensor *op_to_bf16(amp_tensor *const *in) { return amp_to(in[0], AMP_DTYPE_BF16); }
static amp_tensor *op_to_f32(amp_tensor *const *in) { return amp_to(in[0], AMP_DTYPE_F32); }
static amp_tensor *op_clone(amp_tensor *const *in) { return amp_clone(in[0]); }

static amp_tensor *op_contiguous_t(amp_tensor *const *in)
{
	amp_tensor *t = amp_t(in[0]), *out = t ? amp_contiguous(t) : NULL;
	amp_tensor_free(t);
	return out;
}

static amp_tensor *op_reshape_t(amp_tensor *const *in)
{
	amp_tensor *t = amp_t(in[0]);
	amp_tensor *out = t ? amp_reshape(t, 1, (int64_t[]){ -1 }) : NULL;
	amp_tensor_free(t);
	return out;
}

static amp_tensor *op_cat(amp_tensor *const *in) { return amp_cat(in, 2, 0); }
static amp_tensor *op_mse(amp_tensor *const *in) { return amp_mse_loss(in[0], in[1], AMP_REDUCTION_MEAN); }

static amp_tensor *op_cross_entropy(amp_tensor *const *in)
{
	return amp_cross_entropy(in[0], in[1], NULL, AMP_REDUCTION_MEAN, -100);
}

static amp_tensor *op_embedding(amp_tensor *const *in) { return amp_embedding(in[0], in[1]); }

#define S CUDA_VALUES_SIGNED
#define P CUDA_VALUES_POSITIVE
#define I CUDA_VALUES_INDEX
#define F CUDA_VALUES_SIGNED_F32

const struct cuda_case cuda_cases[] = {
	/* elementwise, on the GPU */
	{ "add", 2, { 2, 2 }, { { 4, 5 }, { 4, 5 } }, { S, S }, op_add, true },
	{ "add broadcast", 2, { 2, 1 }, { { 4, 5 }, { 5 } }, { S, S }, op_add, true },
	{ "add 0-dim", 2, { 3, 0 }, { { 2, 3, 4 }, { 0 } }, { S, S }, op_add, true },
	{ "add f32 0-dim", 2, { 2, 0 }, { { 4, 5 }, { 0 } }, { S, F }, op_add, true },
	{ "mul f32 tensor (promotes)", 2, { 2, 1 }, { { 4, 5 }, { 5 } }, { S, F }, op_mul, true },
	{ "sub", 2, { 2, 2 }, { { 3, 1 }, { 1, 6 } }, { S, S }, op_sub, true },
	{ "mul", 2, { 1, 1 }, { { 33 }, { 33 } }, { S, S }, op_mul, true },
	{ "div", 2, { 2, 2 }, { { 4, 5 }, { 4, 5 } }, { S, S }, op_div, true },
	{ "add.Scalar", 1, { 2 }, { { 4, 5 } }, { S }, op_add_scalar, true },
	{ "mul.Scalar", 1, { 2 }, { { 4, 5 } }, { S }, op_mul_scalar, true },
	{ "pow.Tensor_Scalar", 1, { 2 }, { { 4, 5 } }, { P }, op_pow_scalar, true },
	{ "neg", 1, { 2 }, { { 4, 5 } }, { S }, op_neg, true },
	{ "exp", 1, { 2 }, { { 4, 5 } }, { S }, op_exp, true },
	{ "log", 1, { 2 }, { { 4, 5 } }, { P }, op_log, true },
	{ "relu", 1, { 2 }, { { 4, 5 } }, { S }, op_relu, true },
	{ "gelu", 1, { 2 }, { { 4, 5 } }, { S }, op_gelu, true },
	{ "gelu tanh", 1, { 2 }, { { 4, 5 } }, { S }, op_gelu_tanh, true },
	{ "sigmoid", 1, { 2 }, { { 4, 5 } }, { S }, op_sigmoid, true },
	{ "tanh", 1, { 2 }, { { 4, 5 } }, { S }, op_tanh, true },
	{ "exp of t()", 1, { 2 }, { { 5, 4 } }, { S }, op_exp_t, true },
	{ "add t()", 2, { 2, 2 }, { { 4, 5 }, { 5, 4 } }, { S, S }, op_add_t, true },
	{ "exp of a slice", 1, { 2 }, { { 3, 7 } }, { S }, op_exp_slice, true },
	/* rows */
	{ "softmax", 1, { 2 }, { { 6, 37 } }, { S }, op_softmax, true },
	{ "log_softmax", 1, { 2 }, { { 6, 37 } }, { S }, op_log_softmax, true },
	{ "softmax dtype=f32", 1, { 2 }, { { 6, 37 } }, { S }, op_softmax_f32, true },
	{ "layer_norm affine", 3, { 3, 1, 1 }, { { 2, 3, 8 }, { 8 }, { 8 } }, { S, S, S }, op_layer_norm, true },
	{ "layer_norm 2 dims", 1, { 3 }, { { 2, 3, 8 } }, { S }, op_layer_norm_plain, true },
	{ "sum", 1, { 2 }, { { 9, 31 } }, { S }, op_sum, true },
	{ "sum dtype=f32", 1, { 2 }, { { 9, 31 } }, { S }, op_sum_f32, true },
	{ "mean", 1, { 2 }, { { 9, 31 } }, { S }, op_mean, true },
	{ "sum.dim_IntList -1", 1, { 3 }, { { 2, 3, 17 } }, { S }, op_sum_last, true },
	{ "mean.dim (2, 1) keepdim", 1, { 3 }, { { 2, 3, 17 } }, { S }, op_mean_last2_keepdim, true },
	/* GEMM */
	{ "mm", 2, { 2, 2 }, { { 3, 4 }, { 4, 5 } }, { S, S }, op_mm, true },
	{ "mm b.t()", 2, { 2, 2 }, { { 3, 4 }, { 5, 4 } }, { S, S }, op_mm_b_t, true },
	{ "mm a.t()", 2, { 2, 2 }, { { 4, 3 }, { 4, 5 } }, { S, S }, op_mm_a_t, true },
	{ "mm 1 row", 2, { 2, 2 }, { { 1, 16 }, { 16, 7 } }, { S, S }, op_mm, true },
	{ "bmm", 2, { 3, 3 }, { { 2, 3, 4 }, { 2, 4, 5 } }, { S, S }, op_bmm, true },
	{ "bmm b.transpose(1, 2)", 2, { 3, 3 }, { { 2, 3, 4 }, { 2, 5, 4 } }, { S, S }, op_bmm_b_t, true },
	{ "addmm bias row", 3, { 1, 2, 2 }, { { 5 }, { 3, 4 }, { 4, 5 } }, { S, S, S }, op_addmm, true },
	{ "addmm full self", 3, { 2, 2, 2 }, { { 3, 5 }, { 3, 4 }, { 4, 5 } }, { S, S, S }, op_addmm, true },
	{ "addmm beta 0", 3, { 2, 2, 2 }, { { 3, 5 }, { 3, 4 }, { 4, 5 } }, { S, S, S }, op_addmm_beta0, true },
	{ "baddbmm", 3, { 3, 3, 3 }, { { 2, 3, 5 }, { 2, 3, 4 }, { 2, 4, 5 } }, { S, S, S }, op_baddbmm, true },
	{ "linear", 3, { 3, 2, 1 }, { { 2, 3, 4 }, { 5, 4 }, { 5 } }, { S, S, S }, op_linear, true },
	{ "linear no bias", 2, { 2, 2 }, { { 6, 16 }, { 3, 16 } }, { S, S }, op_linear_nobias, true },
	{ "linear 1-d input", 2, { 1, 2 }, { { 4 }, { 5, 4 } }, { S, S }, op_linear_nobias, true },
	{ "linear weight.t()", 2, { 2, 2 }, { { 3, 4 }, { 4, 5 } }, { S, S }, op_linear_w_t, true },
	{ "matmul (composite)", 2, { 3, 2 }, { { 2, 3, 4 }, { 4, 5 } }, { S, S }, op_matmul, true },
	/* casts and copies */
	{ "to f16", 1, { 2 }, { { 7, 9 } }, { S }, op_to_f16, true },
	{ "to bf16", 1, { 2 }, { { 7, 9 } }, { S }, op_to_bf16, true },
	{ "to f32", 1, { 2 }, { { 7, 9 } }, { S }, op_to_f32, true },
	{ "clone", 1, { 2 }, { { 7, 9 } }, { S }, op_clone, true },
	{ "contiguous of t()", 1, { 2 }, { { 7, 9 } }, { S }, op_contiguous_t, true },
	/* the host-copy fallback */
	{ "reshape of t() (copies)", 1, { 2 }, { { 3, 4 } }, { S }, op_reshape_t, true },
	{ "softmax dim 0", 1, { 2 }, { { 6, 5 } }, { S }, op_softmax_dim0, true },
	{ "sum.dim_IntList 0", 1, { 2 }, { { 6, 5 } }, { S }, op_sum_first, true },
	{ "cat", 2, { 2, 2 }, { { 2, 3 }, { 4, 3 } }, { S, S }, op_cat, true },
	{ "mse_loss", 2, { 2, 2 }, { { 4, 5 }, { 4, 5 } }, { S, S }, op_mse, false },
	{ "cross_entropy (composite)", 2, { 2, 1 }, { { 4, 5 }, { 4 } }, { S, I }, op_cross_entropy, false },
	{ "embedding", 2, { 2, 1 }, { { 6, 4 }, { 3 } }, { S, I }, op_embedding, true },
};

const size_t cuda_case_count = sizeof cuda_cases / sizeof cuda_cases[0];

bool cuda_case_run(size_t index, enum amp_dtype dtype, char *message,
		   size_t size)
{
	const struct cuda_case *c = &cuda_cases[index];
	amp_tensor *cpu[CUDA_CASE_MAX_INPUTS] = { NULL };
	amp_tensor *gpu[CUDA_CASE_MAX_INPUTS] = { NULL };
	amp_tensor *expected = NULL, *got = NULL;
	char detail[256] = "";
	bool ok = true;

	for (int i = 0; ok && i < c->ninputs; i++) {
		enum amp_dtype input_dtype =
			c->values[i] == CUDA_VALUES_INDEX	 ? AMP_DTYPE_I64
			: c->values[i] == CUDA_VALUES_SIGNED_F32 ? AMP_DTYPE_F32
								 : dtype;
		cpu[i] = cuda_random(c->ndim[i], c->shape[i], input_dtype,
				     c->values[i], index * 31 + (size_t)i + 1);
		gpu[i] = cpu[i] ? amp_to_device(cpu[i], AMP_DEVICE_CUDA) : NULL;
		if (!gpu[i]) {
			snprintf(detail, sizeof detail, "inputs: %s",
				 amp_last_error());
			ok = false;
		}
	}
	if (ok) {
		expected = c->op(cpu);
		if (!expected)
			snprintf(detail, sizeof detail, "cpu failed: %s",
				 amp_last_error());
		got = c->op(gpu);
		if (!got)
			snprintf(detail, sizeof detail, "cuda failed: %s",
				 amp_last_error());
		ok = expected && got;
	}
	if (ok && amp_tensor_device(got) != AMP_DEVICE_CUDA) {
		snprintf(detail, sizeof detail, "the result is on %s",
			 amp_device_type_name(amp_tensor_device(got)));
		ok = false;
	}
	if (ok) {
		double rtol = cuda_rtol(amp_tensor_dtype(expected));
		ok = cuda_tensors_close(got, expected, rtol, rtol, detail,
					sizeof detail);
	}
	if (!ok)
		snprintf(message, size, "%s (%s): %s", c->name,
			 amp_dtype_name(dtype), detail);
	amp_tensor_free(expected);
	amp_tensor_free(got);
	for (int i = 0; i < c->ninputs; i++) {
		amp_tensor_free(cpu[i]);
		amp_tensor_free(gpu[i]);
	}
	return ok;
}
