/* Check suite for the ops of amp.h on the CPU backend (lib/ops.c,
 * lib/cpu/).  Numeric correctness of every op x dtype lives in
 * test_ops_numeric.c; this file checks the semantics around it: result
 * dtypes of PyTorch's type promotion, PyTorch's error texts (with the
 * tensors appended), views and storage sharing, factories and the random
 * generator, dropout, fp32 accumulation of low-precision matmuls and
 * sums, and that composites dispatch their inner ops. */
#include "amp.h"
#include "test_ops.h"

#include <check.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static const int64_t shape1[1] = { 4 };

static amp_tensor *filled(int ndim, const int64_t *shape, double value,
			  enum amp_dtype dtype)
{
	amp_tensor *t = amp_full(ndim, shape, value, dtype, AMP_DEVICE_CPU);

	ck_assert_msg(t, "full: %s", amp_last_error());
	return t;
}

/* A 1-D [4] tensor (dims 1) or a 0-dim one (dims 0) of value 1. */
static amp_tensor *operand(enum amp_dtype dtype, int dims)
{
	return filled(dims, shape1, 1, dtype);
}

/* ------------------------------------------------------------- promotion */

enum promo_op {
	P_ADD, P_MUL, P_DIV, P_ADD_SCALAR, P_MUL_SCALAR, P_POW_SCALAR, P_EXP,
	P_NEG, P_CAT, P_STACK, P_SUM, P_MEAN, P_SOFTMAX, P_ADDCMUL, P_MSE,
	P_LAYER_NORM, P_EMBEDDING, P_SIGMOID
};

struct promotion {
	enum promo_op op;
	enum amp_dtype a;
	int a_dims;
	enum amp_dtype b; /* second tensor, or the dtype argument */
	int b_dims;
	double scalar;
	enum amp_dtype want;
};

#define NONE AMP_DTYPE_NONE
static const struct promotion promotions[] = {
	{ P_ADD, AMP_DTYPE_F16, 1, AMP_DTYPE_F32, 0, 0, AMP_DTYPE_F16 },
	{ P_ADD, AMP_DTYPE_F16, 1, AMP_DTYPE_BF16, 1, 0, AMP_DTYPE_F32 },
	{ P_ADD, AMP_DTYPE_BF16, 1, AMP_DTYPE_F64, 0, 0, AMP_DTYPE_BF16 },
	{ P_MUL, AMP_DTYPE_F16, 1, AMP_DTYPE_F32, 1, 0, AMP_DTYPE_F32 },
	{ P_ADD, AMP_DTYPE_I32, 1, AMP_DTYPE_I64, 0, 0, AMP_DTYPE_I32 },
	{ P_ADD, AMP_DTYPE_I32, 1, AMP_DTYPE_F32, 0, 0, AMP_DTYPE_F32 },
	{ P_ADD, AMP_DTYPE_BOOL, 1, AMP_DTYPE_I64, 0, 0, AMP_DTYPE_I64 },
	{ P_ADD, AMP_DTYPE_I64, 0, AMP_DTYPE_F16, 0, 0, AMP_DTYPE_F16 },
	{ P_ADD, AMP_DTYPE_F32, 0, AMP_DTYPE_F64, 0, 0, AMP_DTYPE_F64 },
	{ P_ADD, AMP_DTYPE_BOOL, 1, AMP_DTYPE_BOOL, 1, 0, AMP_DTYPE_BOOL },
	{ P_DIV, AMP_DTYPE_I64, 1, AMP_DTYPE_I64, 1, 0, AMP_DTYPE_F32 },
	{ P_DIV, AMP_DTYPE_I32, 1, AMP_DTYPE_F16, 0, 0, AMP_DTYPE_F16 },
	{ P_ADD_SCALAR, AMP_DTYPE_I64, 1, NONE, 0, 2.5, AMP_DTYPE_F32 },
	{ P_ADD_SCALAR, AMP_DTYPE_I64, 1, NONE, 0, 2, AMP_DTYPE_I64 },
	{ P_ADD_SCALAR, AMP_DTYPE_F16, 1, NONE, 0, 2.5, AMP_DTYPE_F16 },
	{ P_MUL_SCALAR, AMP_DTYPE_BOOL, 1, NONE, 0, 3, AMP_DTYPE_I64 },
	{ P_MUL_SCALAR, AMP_DTYPE_BF16, 0, NONE, 0, 0.5, AMP_DTYPE_BF16 },
	{ P_POW_SCALAR, AMP_DTYPE_I64, 1, NONE, 0, 2.5, AMP_DTYPE_F32 },
	{ P_POW_SCALAR, AMP_DTYPE_I32, 1, NONE, 0, 2, AMP_DTYPE_I32 },
	{ P_EXP, AMP_DTYPE_I32, 1, NONE, 0, 0, AMP_DTYPE_F32 },
	{ P_SIGMOID, AMP_DTYPE_BOOL, 1, NONE, 0, 0, AMP_DTYPE_F32 },
	{ P_NEG, AMP_DTYPE_I32, 1, NONE, 0, 0, AMP_DTYPE_I32 },
	{ P_CAT, AMP_DTYPE_I64, 1, AMP_DTYPE_F32, 1, 0, AMP_DTYPE_F32 },
	{ P_CAT, AMP_DTYPE_F16, 1, AMP_DTYPE_BF16, 1, 0, AMP_DTYPE_F32 },
	{ P_CAT, AMP_DTYPE_I64, 1, AMP_DTYPE_BF16, 1, 0, AMP_DTYPE_BF16 },
	{ P_STACK, AMP_DTYPE_F16, 1, AMP_DTYPE_F16, 1, 0, AMP_DTYPE_F16 },
	{ P_SUM, AMP_DTYPE_I32, 1, NONE, 0, 0, AMP_DTYPE_I64 },
	{ P_SUM, AMP_DTYPE_BOOL, 1, NONE, 0, 0, AMP_DTYPE_I64 },
	{ P_SUM, AMP_DTYPE_F16, 1, NONE, 0, 0, AMP_DTYPE_F16 },
	{ P_SUM, AMP_DTYPE_F16, 1, AMP_DTYPE_F32, 0, 0, AMP_DTYPE_F32 },
	{ P_MEAN, AMP_DTYPE_I64, 1, AMP_DTYPE_F64, 0, 0, AMP_DTYPE_F64 },
	{ P_MEAN, AMP_DTYPE_BF16, 1, NONE, 0, 0, AMP_DTYPE_BF16 },
	{ P_SOFTMAX, AMP_DTYPE_F16, 1, AMP_DTYPE_F32, 0, 0, AMP_DTYPE_F32 },
	{ P_SOFTMAX, AMP_DTYPE_BF16, 1, NONE, 0, 0, AMP_DTYPE_BF16 },
	{ P_ADDCMUL, AMP_DTYPE_F16, 1, AMP_DTYPE_F32, 0, 0.5, AMP_DTYPE_F16 },
	{ P_ADDCMUL, AMP_DTYPE_F16, 1, AMP_DTYPE_F32, 1, 0.5, AMP_DTYPE_F32 },
	{ P_MSE, AMP_DTYPE_F16, 1, AMP_DTYPE_F32, 1, 0, AMP_DTYPE_F32 },
	{ P_LAYER_NORM, AMP_DTYPE_BF16, 1, AMP_DTYPE_F32, 1, 0, AMP_DTYPE_BF16 },
	{ P_EMBEDDING, AMP_DTYPE_F16, 1, AMP_DTYPE_I32, 1, 0, AMP_DTYPE_F16 },
};

static amp_tensor *run_promotion(const struct promotion *p, amp_tensor *a,
				 amp_tensor *b)
{
	amp_tensor *list[2] = { a, b };
	int64_t two[2] = { 4, 4 };

	switch (p->op) {
	case P_ADD: return amp_add(a, b);
	case P_MUL: return amp_mul(a, b);
	case P_DIV: return amp_div(a, b);
	case P_ADD_SCALAR: return amp_add_scalar(a, p->scalar);
	case P_MUL_SCALAR: return amp_mul_scalar(a, p->scalar);
	case P_POW_SCALAR: return amp_pow_scalar(a, p->scalar);
	case P_EXP: return amp_exp(a);
	case P_SIGMOID: return amp_sigmoid(a);
	case P_NEG: return amp_neg(a);
	case P_CAT: return amp_cat(list, 2, 0);
	case P_STACK: return amp_stack(list, 2, 0);
	case P_SUM: return amp_sum(a, p->b);
	case P_MEAN: return amp_mean(a, p->b);
	case P_SOFTMAX: return amp_softmax(a, 0, p->b);
	case P_ADDCMUL: return amp_addcmul(a, b, a, p->scalar);
	case P_MSE: return amp_mse_loss(a, b, AMP_REDUCTION_MEAN);
	case P_LAYER_NORM: return amp_layer_norm(a, 1, shape1, b, NULL, 1e-5);
	default: {
		amp_tensor *weight = filled(2, two, 1, p->a);
		amp_tensor *out = amp_embedding(weight, b);
		amp_tensor_free(weight);
		return out;
	}
	}
}

START_TEST(test_promotion)
{
	const struct promotion *p = &promotions[_i];
	bool two_tensors = p->op == P_ADD || p->op == P_MUL || p->op == P_DIV ||
			   p->op == P_CAT || p->op == P_STACK ||
			   p->op == P_ADDCMUL || p->op == P_MSE ||
			   p->op == P_LAYER_NORM || p->op == P_EMBEDDING;
	amp_tensor *a = operand(p->a, p->a_dims);
	amp_tensor *b = two_tensors ? operand(p->b, p->b_dims) : NULL;
	amp_tensor *out = run_promotion(p, a, b);

	ck_assert_msg(out, "case %d: %s", _i, amp_last_error());
	ck_assert_msg(amp_tensor_dtype(out) == p->want,
		      "case %d: got %s, expected %s", _i,
		      amp_dtype_name(amp_tensor_dtype(out)),
		      amp_dtype_name(p->want));
	amp_tensor_free(out);
	amp_tensor_free(a);
	amp_tensor_free(b);
}
END_TEST

/* ---------------------------------------------------------------- errors */

enum error_case {
	E_MM_DTYPE, E_MM_DTYPE_CUDA, E_BROADCAST, E_NLL_TARGET, E_MEAN_INT,
	E_ADDMM_SELF, E_LINEAR_BIAS, E_LINEAR_NOBIAS, E_BMM, E_CONV, E_EMBEDDING,
	E_LAYER_NORM, E_MM_SHAPE, E_SUB_BOOL, E_RESHAPE, E_MATMUL_0D, E_CAT,
	E_SOFTMAX_INT, E_DIM, E_NLL_BOUNDS, E_BCE_RANGE, E_NEG_BOOL, E_CE_TARGET,
};

struct error_expectation {
	enum error_case which;
	int status;
	const char *message; /* PyTorch's text: the message's prefix */
};

static const struct error_expectation errors[] = {
	{ E_MM_DTYPE, AMP_ERR_DTYPE,
	  "expected m1 and m2 to have the same dtype, but got: float != "
	  "c10::Half" },
	{ E_MM_DTYPE_CUDA, AMP_ERR_DTYPE,
	  "expected mat1 and mat2 to have the same dtype, but got: float != "
	  "c10::Half" },
	{ E_BROADCAST, AMP_ERR_INVALID,
	  "The size of tensor a (3) must match the size of tensor b (4) at "
	  "non-singleton dimension 1" },
	{ E_NLL_TARGET, AMP_ERR_DTYPE, "expected scalar type Long but found Int" },
	{ E_MEAN_INT, AMP_ERR_DTYPE,
	  "mean(): could not infer output dtype. Input dtype must be either a "
	  "floating point or complex dtype. Got: Long" },
	{ E_ADDMM_SELF, AMP_ERR_DTYPE,
	  "self and mat2 must have the same dtype, but got Float and Half" },
	{ E_LINEAR_BIAS, AMP_ERR_DTYPE,
	  "mat1 and mat2 must have the same dtype, but got Half and Float" },
	{ E_LINEAR_NOBIAS, AMP_ERR_DTYPE,
	  "expected m1 and m2 to have the same dtype, but got: c10::Half != "
	  "float" },
	{ E_BMM, AMP_ERR_DTYPE, "expected scalar type Float but found Half" },
	{ E_CONV, AMP_ERR_DTYPE,
	  "Input type (torch.FloatTensor) and weight type (torch.HalfTensor) "
	  "should be the same" },
	{ E_EMBEDDING, AMP_ERR_DTYPE,
	  "Expected tensor for argument #1 'indices' to have one of the "
	  "following scalar types: Long, Int; but got torch.FloatTensor instead "
	  "(while checking arguments for embedding)" },
	{ E_LAYER_NORM, AMP_ERR_DTYPE,
	  "mixed dtype (CPU): expect parameter to have scalar type of Float" },
	{ E_MM_SHAPE, AMP_ERR_INVALID,
	  "mat1 and mat2 shapes cannot be multiplied (4x4 and 1x4)" },
	{ E_SUB_BOOL, AMP_ERR_DTYPE,
	  "Subtraction, the `-` operator, with two bool tensors is not "
	  "supported. Use the `^` or `logical_xor()` operator instead." },
	{ E_RESHAPE, AMP_ERR_INVALID,
	  "shape '[3, 3]' is invalid for input of size 16" },
	{ E_MATMUL_0D, AMP_ERR_INVALID,
	  "both arguments to matmul need to be at least 1D, but they are 0D "
	  "and 2D" },
	{ E_CAT, AMP_ERR_INVALID,
	  "Sizes of tensors must match except in dimension 0. Expected size 4 "
	  "but got size 1 for tensor number 1 in the list." },
	{ E_SOFTMAX_INT, AMP_ERR_UNSUPPORTED,
	  "\"softmax_lastdim_kernel_impl\" not implemented for 'Long'" },
	{ E_DIM, AMP_ERR_INVALID,
	  "Dimension out of range (expected to be in range of [-2, 1], but got "
	  "2)" },
	{ E_NLL_BOUNDS, AMP_ERR_INVALID, "Target 7 is out of bounds." },
	{ E_BCE_RANGE, AMP_ERR_INVALID,
	  "all elements of input should be between 0 and 1" },
	{ E_NEG_BOOL, AMP_ERR_DTYPE,
	  "Negation, the `-` operator, on a bool tensor is not supported." },
	{ E_CE_TARGET, AMP_ERR_DTYPE,
	  "Expected floating point type for target with class probabilities, "
	  "got Long" },
};

/* Runs the failing call of `which` over square 4x4 operands. */
static amp_tensor *run_error(enum error_case which, amp_tensor *f32,
			     amp_tensor *f16)
{
	const int64_t vec[1] = { 4 }, flat[2] = { 1, 4 };
	const int64_t two[2] = { 4, 4 }, bad[2] = { 3, 3 };
	const int64_t conv_stride[2] = { 1, 1 }, conv_zero[2] = { 0, 0 };
	amp_tensor *tmp[4] = { NULL, NULL, NULL, NULL };
	amp_tensor *out = NULL;

	switch (which) {
	case E_MM_DTYPE:
		out = amp_mm(f32, f16);
		break;
	case E_MM_DTYPE_CUDA:
		tmp[0] = amp_to_device(f32, AMP_DEVICE_CUDA);
		tmp[1] = amp_to_device(f16, AMP_DEVICE_CUDA);
		out = amp_mm(tmp[0], tmp[1]);
		break;
	case E_BROADCAST:
		tmp[0] = filled(2, (int64_t[]){ 2, 3 }, 1, AMP_DTYPE_F32);
		out = amp_add(tmp[0], tmp[1] = filled(1, vec, 1, AMP_DTYPE_F32));
		break;
	case E_NLL_TARGET:
		tmp[0] = filled(1, vec, 1, AMP_DTYPE_I32);
		out = amp_nll_loss(f32, tmp[0], NULL, AMP_REDUCTION_MEAN, -100);
		break;
	case E_MEAN_INT:
		out = amp_mean(tmp[0] = filled(1, vec, 1, AMP_DTYPE_I64),
			       AMP_DTYPE_NONE);
		break;
	case E_ADDMM_SELF:
		out = amp_addmm(f32, f16, f16, 1, 1);
		break;
	case E_LINEAR_BIAS:
		tmp[0] = filled(1, vec, 1, AMP_DTYPE_F32);
		out = amp_linear(f16, f32, tmp[0]);
		break;
	case E_LINEAR_NOBIAS:
		out = amp_linear(f16, f32, NULL);
		break;
	case E_BMM:
		tmp[0] = amp_unsqueeze(f32, 0);
		tmp[1] = amp_unsqueeze(f16, 0);
		out = amp_bmm(tmp[0], tmp[1]);
		break;
	case E_CONV:
		tmp[0] = filled(4, (int64_t[]){ 1, 1, 4, 4 }, 1, AMP_DTYPE_F32);
		tmp[1] = filled(4, (int64_t[]){ 1, 1, 2, 2 }, 1, AMP_DTYPE_F16);
		out = amp_conv2d(tmp[0], tmp[1], NULL, conv_stride, conv_zero,
				 conv_stride, 1);
		break;
	case E_EMBEDDING:
		out = amp_embedding(f32, f32);
		break;
	case E_LAYER_NORM:
		tmp[0] = filled(1, vec, 1, AMP_DTYPE_F16);
		out = amp_layer_norm(f32, 1, vec, tmp[0], NULL, 1e-5);
		break;
	case E_MM_SHAPE:
		tmp[0] = filled(2, flat, 1, AMP_DTYPE_F32);
		out = amp_mm(f32, tmp[0]);
		break;
	case E_SUB_BOOL:
		tmp[0] = filled(1, vec, 1, AMP_DTYPE_BOOL);
		out = amp_sub(tmp[0], tmp[0]);
		break;
	case E_RESHAPE:
		out = amp_reshape(f32, 2, bad);
		break;
	case E_MATMUL_0D:
		tmp[0] = amp_scalar_tensor(1, AMP_DTYPE_F32, AMP_DEVICE_CPU);
		out = amp_matmul(tmp[0], f32);
		break;
	case E_CAT:
		tmp[0] = filled(2, flat, 1, AMP_DTYPE_F32);
		tmp[1] = amp_t(tmp[0]);
		out = amp_cat((amp_tensor *[]){ f32, tmp[1] }, 2, 0);
		break;
	case E_SOFTMAX_INT:
		tmp[0] = filled(2, two, 1, AMP_DTYPE_I64);
		out = amp_softmax(tmp[0], -1, AMP_DTYPE_NONE);
		break;
	case E_DIM:
		out = amp_transpose(f32, 0, 2);
		break;
	case E_NLL_BOUNDS:
		tmp[0] = filled(1, vec, 7, AMP_DTYPE_I64);
		out = amp_nll_loss(f32, tmp[0], NULL, AMP_REDUCTION_SUM, -100);
		break;
	case E_BCE_RANGE:
		tmp[0] = filled(2, two, 2, AMP_DTYPE_F32);
		out = amp_binary_cross_entropy(tmp[0], f32, NULL,
					       AMP_REDUCTION_MEAN);
		break;
	case E_NEG_BOOL:
		out = amp_neg(tmp[0] = filled(1, vec, 1, AMP_DTYPE_BOOL));
		break;
	case E_CE_TARGET:
		tmp[0] = filled(2, two, 1, AMP_DTYPE_I64);
		out = amp_cross_entropy(f32, tmp[0], NULL, AMP_REDUCTION_MEAN,
					-100);
		break;
	}
	for (int i = 0; i < 4; i++)
		amp_tensor_free(tmp[i]);
	return out;
}

START_TEST(test_error_text)
{
	const struct error_expectation *e = &errors[_i];
	const int64_t two[2] = { 4, 4 };
	amp_tensor *f32 = filled(2, two, 0.5, AMP_DTYPE_F32);
	amp_tensor *f16 = filled(2, two, 0.5, AMP_DTYPE_F16);

	/* On a real GPU the CUDA backend's own check answers, in its own
	 * words: the failure and its status are still PyTorch's. */
	bool pytorch_words = e->which != E_MM_DTYPE_CUDA || amp_cuda_is_emulated();

	amp_tensor_set_name(f32, "fc1.weight");
	amp_clear_error();
	amp_tensor *out = run_error(e->which, f32, f16);
	ck_assert_msg(!out, "case %d succeeded", _i);
	const char *message = amp_last_error();
	ck_assert_int_eq(amp_last_status(), e->status);
	ck_assert_msg(!pytorch_words ||
			      !strncmp(message, e->message, strlen(e->message)),
		      "case %d:\n  got      \"%s\"\n  expected \"%s...\"", _i,
		      message, e->message);
	/* what users see next: the tensors involved */
	ck_assert_msg(!pytorch_words || strstr(message, " (tensor ") ||
			      e->which == E_RESHAPE,
		      "case %d: no tensor context in \"%s\"", _i, message);
	amp_tensor_free(f32);
	amp_tensor_free(f16);
}
END_TEST

START_TEST(test_error_context)
{
	const int64_t a[2] = { 4, 16 }, b[2] = { 8, 4 };
	amp_tensor *weight = filled(2, a, 1, AMP_DTYPE_F32);
	amp_tensor *x = filled(2, b, 1, AMP_DTYPE_F16);
	char expected[160];

	amp_tensor_set_name(weight, "fc1.weight");
	ck_assert_ptr_null(amp_mm(weight, x));
	snprintf(expected, sizeof expected,
		 " (tensor %llu 'fc1.weight' f32 [4, 16] and tensor %llu f16 "
		 "[8, 4])",
		 (unsigned long long)amp_tensor_id(weight),
		 (unsigned long long)amp_tensor_id(x));
	ck_assert_msg(strstr(amp_last_error(), expected), "got \"%s\"",
		      amp_last_error());
	amp_tensor_free(weight);
	amp_tensor_free(x);
}
END_TEST

/* ----------------------------------------------------------------- views */

static double first_value(amp_tensor *t)
{
	size_t n = (size_t)amp_tensor_numel(t);
	double *v = malloc(n * sizeof *v), first;

	ck_assert(v);
	ck_assert_int_eq(amp_tensor_read(t, AMP_DTYPE_F64, v, n), 0);
	first = v[0];
	free(v);
	return first;
}

/* Writes 42 into every element of base. */
static void poke(amp_tensor *base)
{
	double v[64];
	int64_t n = amp_tensor_numel(base);

	for (int64_t i = 0; i < n; i++)
		v[i] = 42;
	ck_assert_int_eq(amp_tensor_write(base, AMP_DTYPE_F64, v, (size_t)n), 0);
}

START_TEST(test_views_share_storage)
{
	const int64_t s[2] = { 3, 4 }, flat[1] = { 12 };
	amp_tensor *base = filled(2, s, 1, AMP_DTYPE_F32);
	amp_tensor *views[5] = {
		amp_transpose(base, 0, 1), amp_t(base),
		amp_slice(base, 1, 1, 3, 1), amp_unsqueeze(base, -1),
		amp_reshape(base, 1, flat),
	};

	for (int i = 0; i < 5; i++) {
		ck_assert_msg(views[i], "view %d: %s", i, amp_last_error());
		ck_assert_msg(amp_tensor_is_view(views[i]), "view %d", i);
	}
	ck_assert(!amp_tensor_is_contiguous(views[0]));
	ck_assert_int_eq(amp_tensor_shape(views[2])[1], 2);
	ck_assert_int_eq(amp_tensor_ndim(views[3]), 3);
	poke(base);
	for (int i = 0; i < 5; i++) {
		ck_assert(first_value(views[i]) == 42);
		amp_tensor_free(views[i]);
	}
	amp_tensor_free(base);
}
END_TEST

/* reshape views when strides allow it and copies otherwise (the copy is
 * a fresh tensor, not a view) */
START_TEST(test_reshape_copy_or_view)
{
	const int64_t s[2] = { 3, 4 }, flat[1] = { 12 }, split[3] = { 2, 2, 3 };
	amp_tensor *base = filled(2, s, 1, AMP_DTYPE_F32);
	amp_tensor *transposed = amp_transpose(base, 0, 1);
	amp_tensor *copy = amp_reshape(transposed, 1, flat);
	amp_tensor *view = amp_reshape(base, 3, split);
	amp_tensor *inferred = amp_reshape(base, 2, (int64_t[]){ -1, 6 });

	ck_assert(copy && view && inferred);
	ck_assert(!amp_tensor_is_view(copy));
	ck_assert(amp_tensor_is_contiguous(copy));
	ck_assert(amp_tensor_is_view(view));
	ck_assert_int_eq(amp_tensor_shape(inferred)[0], 2);
	poke(base);
	ck_assert(first_value(copy) == 1);
	ck_assert(first_value(view) == 42);
	amp_tensor_free(inferred);
	amp_tensor_free(view);
	amp_tensor_free(copy);
	amp_tensor_free(transposed);
	amp_tensor_free(base);
}
END_TEST

/* detach shares storage but is not a view (x.detach()._is_view() is
 * False), and never requires grad */
START_TEST(test_detach_alias)
{
	const int64_t s[1] = { 3 };
	amp_tensor *base = filled(1, s, 1, AMP_DTYPE_F32);

	ck_assert_int_eq(amp_tensor_set_requires_grad(base, true), AMP_OK);
	amp_tensor *d = amp_detach(base);
	ck_assert(d);
	ck_assert(!amp_tensor_is_view(d));
	ck_assert(!amp_tensor_requires_grad(d));
	ck_assert(amp_tensor_id(d) != amp_tensor_id(base));
	poke(base);
	ck_assert(first_value(d) == 42);
	amp_tensor_free(d);
	amp_tensor_free(base);
}
END_TEST

/* contiguous / to(same dtype) / to_device(same device) / dropout(eval)
 * return the input itself; real conversions make new tensors */
START_TEST(test_same_tensor_returned)
{
	const int64_t s[2] = { 2, 3 };
	amp_tensor *x = filled(2, s, 1.5, AMP_DTYPE_F32);
	amp_tensor *same[4] = { amp_contiguous(x), amp_to(x, AMP_DTYPE_F32),
				amp_to_device(x, AMP_DEVICE_CPU),
				amp_dropout(x, 0.5, false) };

	ck_assert_int_eq(amp_tensor_set_requires_grad(x, true), AMP_OK);
	for (int i = 0; i < 4; i++) {
		ck_assert_msg(same[i] == x, "case %d", i);
		amp_tensor_free(same[i]);
	}
	amp_tensor *same_leaf = amp_to(x, AMP_DTYPE_F32);
	ck_assert(amp_tensor_is_leaf(x) && amp_tensor_requires_grad(x));
	amp_tensor_free(same_leaf);

	amp_tensor *half = amp_to(x, AMP_DTYPE_F16);
	amp_tensor *clone = amp_clone(x);
	amp_tensor *cuda = amp_to_device(x, AMP_DEVICE_CUDA);
	amp_tensor *transposed = amp_t(x);
	amp_tensor *packed = amp_contiguous(transposed);
	ck_assert(half && clone && cuda && packed);
	ck_assert(half != x && clone != x && cuda != x && packed != transposed);
	ck_assert_int_eq(amp_tensor_dtype(half), AMP_DTYPE_F16);
	ck_assert_int_eq(amp_tensor_device(cuda), AMP_DEVICE_CUDA);
	ck_assert(first_value(cuda) == 1.5 && first_value(half) == 1.5);
	ck_assert(amp_tensor_is_contiguous(packed) && !amp_tensor_is_view(packed));
	amp_tensor *back = amp_to_device(cuda, AMP_DEVICE_CPU);
	ck_assert(back && back != cuda &&
		  amp_tensor_device(back) == AMP_DEVICE_CPU);
	amp_tensor_free(back);
	amp_tensor_free(packed);
	amp_tensor_free(transposed);
	amp_tensor_free(cuda);
	amp_tensor_free(clone);
	amp_tensor_free(half);
	amp_tensor_free(x);
}
END_TEST

/* -------------------------------------------------- fp32 accumulation */

/* A K=4096 dot product of ones is exactly 4096 only with an f32
 * accumulator: in f16, 2048 + 1 rounds back to 2048. */
START_TEST(test_low_precision_accumulates_in_f32)
{
	enum amp_dtype dtype = _i ? AMP_DTYPE_BF16 : AMP_DTYPE_F16;
	const int64_t row[2] = { 1, 4096 }, column[2] = { 4096, 1 };
	const int64_t flat[1] = { 4096 };
	amp_tensor *a = filled(2, row, 1, dtype);
	amp_tensor *b = filled(2, column, 1, dtype);
	amp_tensor *v = filled(1, flat, 1, dtype);
	amp_tensor *results[4] = { amp_mm(a, b), amp_matmul(v, v),
				   amp_linear(a, a, NULL),
				   amp_sum(v, AMP_DTYPE_NONE) };

	for (int i = 0; i < 4; i++) {
		ck_assert_msg(results[i], "%d: %s", i, amp_last_error());
		ck_assert_int_eq(amp_tensor_dtype(results[i]), dtype);
		ck_assert_msg(amp_tensor_item(results[i]) == 4096,
			      "result %d is %g", i, amp_tensor_item(results[i]));
		amp_tensor_free(results[i]);
	}
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(v);
}
END_TEST

/* -------------------------------------------------------------- factories */

START_TEST(test_factories)
{
	const int64_t s[2] = { 2, 3 };
	const int32_t data[6] = { 1, -2, 3, -4, 5, -6 };
	amp_tensor *z = amp_zeros(2, s, AMP_DTYPE_BF16, AMP_DEVICE_CPU);
	amp_tensor *e = amp_empty(2, s, AMP_DTYPE_F64, AMP_DEVICE_CUDA);
	amp_tensor *f = amp_full(2, s, 2.7, AMP_DTYPE_I64, AMP_DEVICE_CPU);
	amp_tensor *b = amp_full(2, s, 0.5, AMP_DTYPE_BOOL, AMP_DEVICE_CPU);
	amp_tensor *d = amp_from_data(2, s, AMP_DTYPE_I32, AMP_DEVICE_CPU, data);
	amp_tensor *sc = amp_scalar_tensor(-1.25, AMP_DTYPE_F16, AMP_DEVICE_CPU);
	int32_t back[6];

	ck_assert(z && e && f && b && d && sc);
	ck_assert(first_value(z) == 0);
	ck_assert_int_eq(amp_tensor_device(e), AMP_DEVICE_CUDA);
	ck_assert(first_value(f) == 2); /* truncated, as fill_ does */
	ck_assert(first_value(b) == 1);
	ck_assert_int_eq(amp_tensor_read(d, AMP_DTYPE_I32, back, 6), 0);
	ck_assert(!memcmp(back, data, sizeof data));
	ck_assert_int_eq(amp_tensor_ndim(sc), 0);
	ck_assert(amp_tensor_item(sc) == -1.25);
	ck_assert(amp_tensor_is_leaf(f) && !amp_tensor_requires_grad(f));
	amp_tensor *list[6] = { z, e, f, b, d, sc };
	for (int i = 0; i < 6; i++)
		amp_tensor_free(list[i]);
}
END_TEST

/* A shape whose element or byte count overflows is refused: a wrapped
 * count would put a tiny storage under a huge shape. */
START_TEST(test_factory_size_overflow)
{
	const int64_t wraps_to_zero[3] = { 1ll << 32, 1ll << 32, 2 };
	const int64_t bytes_overflow[1] = { 1ll << 61 };

	ck_assert_ptr_null(amp_empty(3, wraps_to_zero, AMP_DTYPE_F32,
				     AMP_DEVICE_CPU));
	ck_assert_int_eq(amp_last_status(), AMP_ERR_INVALID);
	ck_assert_str_eq(amp_last_error(),
			 "Storage size calculation overflowed with "
			 "sizes=[4294967296, 4294967296, 2]");
	ck_assert_ptr_null(amp_zeros(1, bytes_overflow, AMP_DTYPE_F64,
				     AMP_DEVICE_CPU));
	ck_assert_int_eq(amp_last_status(), AMP_ERR_INVALID);
}
END_TEST

START_TEST(test_random)
{
	const int64_t n[1] = { 20000 };
	amp_manual_seed(7);
	amp_tensor *a = amp_randn(1, n, AMP_DTYPE_F64, AMP_DEVICE_CPU);
	amp_manual_seed(7);
	amp_tensor *b = amp_randn(1, n, AMP_DTYPE_F64, AMP_DEVICE_CPU);
	amp_tensor *c = amp_randn(1, n, AMP_DTYPE_F64, AMP_DEVICE_CPU);
	amp_tensor *u = amp_rand(1, n, AMP_DTYPE_F16, AMP_DEVICE_CPU);
	double *va = malloc(sizeof(double) * 20000);
	double *vb = malloc(sizeof(double) * 20000);
	double *vc = malloc(sizeof(double) * 20000);
	double *vu = malloc(sizeof(double) * 20000);

	ck_assert(a && b && c && u && va && vb && vc && vu);
	amp_tensor_read(a, AMP_DTYPE_F64, va, 20000);
	amp_tensor_read(b, AMP_DTYPE_F64, vb, 20000);
	amp_tensor_read(c, AMP_DTYPE_F64, vc, 20000);
	amp_tensor_read(u, AMP_DTYPE_F64, vu, 20000);
	ck_assert(!memcmp(va, vb, sizeof(double) * 20000));
	ck_assert(memcmp(va, vc, sizeof(double) * 20000));
	double mean = 0, var = 0, umean = 0;
	for (int i = 0; i < 20000; i++) {
		mean += va[i] / 20000;
		umean += vu[i] / 20000;
		ck_assert(vu[i] >= 0 && vu[i] < 1);
	}
	for (int i = 0; i < 20000; i++)
		var += (va[i] - mean) * (va[i] - mean) / 20000;
	ck_assert_msg(fabs(mean) < 0.03 && fabs(var - 1) < 0.05,
		      "mean %g var %g", mean, var);
	ck_assert_msg(fabs(umean - 0.5) < 0.02, "uniform mean %g", umean);
	ck_assert_ptr_null(amp_randn(1, n, AMP_DTYPE_I64, AMP_DEVICE_CPU));
	ck_assert_str_eq(amp_last_error(),
			 "\"normal_kernel_cpu\" not implemented for 'Long'");
	free(va);
	free(vb);
	free(vc);
	free(vu);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(c);
	amp_tensor_free(u);
}
END_TEST

/* ---------------------------------------------------------------- dropout */

START_TEST(test_dropout_train)
{
	const int64_t n[1] = { 20000 };
	amp_tensor *ones = filled(1, n, 1, AMP_DTYPE_F32);
	amp_tensor *half_ones = filled(1, n, 1, AMP_DTYPE_F16);
	double *v = malloc(sizeof(double) * 20000);
	int kept = 0;

	amp_manual_seed(3);
	amp_tensor *out = amp_dropout(ones, 0.3, true);
	ck_assert(out && v);
	amp_tensor_read(out, AMP_DTYPE_F64, v, 20000);
	for (int i = 0; i < 20000; i++) {
		ck_assert(v[i] == 0 || v[i] == (double)(1.0f / 0.7f));
		kept += v[i] != 0;
	}
	ck_assert_msg(fabs(kept / 20000.0 - 0.7) < 0.02, "kept %d", kept);
	amp_tensor_free(out);

	/* the scale is held in the input dtype: f16(1 / 0.9) */
	out = amp_dropout(half_ones, 0.1, true);
	amp_tensor_read(out, AMP_DTYPE_F64, v, 20000);
	for (int i = 0; i < 20000; i++)
		ck_assert(v[i] == 0 || v[i] == 1.111328125);
	amp_tensor_free(out);

	out = amp_dropout(ones, 1.0, true);
	ck_assert(out && first_value(out) == 0);
	amp_tensor_free(out);
	ck_assert_ptr_null(amp_dropout(ones, 1.5, true));
	ck_assert(!strncmp(amp_last_error(),
			   "dropout probability has to be between 0 and 1, but "
			   "got 1.5",
			   57));
	free(v);
	amp_tensor_free(ones);
	amp_tensor_free(half_ones);
}
END_TEST

/* ------------------------------------------------------------ composites */

struct op_log {
	int count;
	char names[64][32];
	uint64_t ids[64], parents[64];
};

static void record(const struct amp_event *event, void *user)
{
	struct op_log *log = user;

	if (log->count >= 64)
		return;
	snprintf(log->names[log->count], sizeof log->names[0], "%s",
		 event->op.op);
	log->ids[log->count] = event->op.op_id;
	log->parents[log->count] = event->op.parent_op_id;
	log->count++;
}

/* matmul and cross_entropy dispatch their inner ops as children. */
START_TEST(test_composites_dispatch_inner_ops)
{
	const int64_t sa[3] = { 2, 3, 4 }, sb[2] = { 4, 5 }, sl[2] = { 3, 4 };
	const int64_t st[1] = { 3 };
	const int64_t targets[3] = { 0, 3, 1 };
	amp_tensor *a = filled(3, sa, 1, AMP_DTYPE_F32);
	amp_tensor *b = filled(2, sb, 1, AMP_DTYPE_F32);
	amp_tensor *logits = filled(2, sl, 1, AMP_DTYPE_F32);
	amp_tensor *target = amp_from_data(1, st, AMP_DTYPE_I64, AMP_DEVICE_CPU,
					   targets);
	struct op_log ops = { 0 };
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_BEGIN), record, &ops);

	ck_assert_int_gt(hook, 0);
	amp_tensor *product = amp_matmul(a, b);
	amp_tensor *loss = amp_cross_entropy(logits, target, NULL,
					     AMP_REDUCTION_MEAN, -100);
	amp_hook_remove(hook);
	ck_assert(product && loss);
	ck_assert(!amp_tensor_is_view(product));
	ck_assert(fabs(amp_tensor_item(loss) - log(4.0)) < 1e-6);

	bool mm_under_matmul = false, lsm = false, nll = false;
	for (int i = 0; i < ops.count; i++)
		for (int j = 0; j < ops.count; j++) {
			if (ops.parents[i] != ops.ids[j])
				continue;
			if (!strcmp(ops.names[j], "matmul") &&
			    !strcmp(ops.names[i], "mm"))
				mm_under_matmul = true;
			if (!strcmp(ops.names[j], "cross_entropy_loss")) {
				lsm |= !strcmp(ops.names[i], "log_softmax");
				nll |= !strcmp(ops.names[i], "nll_loss");
			}
		}
	ck_assert(mm_under_matmul && lsm && nll);
	amp_tensor_free(product);
	amp_tensor_free(loss);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(logits);
	amp_tensor_free(target);
}
END_TEST

/* ------------------------------------------------------------ lifetime */

/* A second amp_tensor_free of the last reference aborts through the
 * abort handler instead of corrupting the heap (release builds too).
 * Not under ASan, which reports the freed read itself, as it should. */
#if !defined(__SANITIZE_ADDRESS__)
static void abort_quietly(const char *file, int line, const char *message)
{
	(void)file;
	(void)line;
	(void)message;
	abort();
}

START_TEST(test_double_free_aborts)
{
	amp_tensor *t = amp_zeros(1, shape1, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *u = amp_zeros(1, shape1, AMP_DTYPE_F32, AMP_DEVICE_CPU);

	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(u);
	amp_set_abort_handler(abort_quietly);
	amp_tensor_free(t);
	amp_tensor_free(u); /* t's memory is now deep in glibc's free lists */
	amp_tensor_free(t);
}
END_TEST
#endif

/* --------------------------------------------------------------- suite */

static Suite *ops_suite(void)
{
	Suite *s = suite_create("ops");
	TCase *promotion = tcase_create("promotion");
	TCase *error_texts = tcase_create("errors");
	TCase *views = tcase_create("views");
	TCase *numerics = tcase_create("accumulation");
	TCase *factories = tcase_create("factories");
	TCase *composites = tcase_create("composites");

	tcase_add_loop_test(promotion, test_promotion, 0, ARRAY_SIZE(promotions));
	tcase_add_loop_test(error_texts, test_error_text, 0, ARRAY_SIZE(errors));
	tcase_add_test(error_texts, test_error_context);
	tcase_add_test(views, test_views_share_storage);
	tcase_add_test(views, test_reshape_copy_or_view);
	tcase_add_test(views, test_detach_alias);
	tcase_add_test(views, test_same_tensor_returned);
#if !defined(__SANITIZE_ADDRESS__)
	tcase_add_test_raise_signal(views, test_double_free_aborts, SIGABRT);
#endif
	tcase_add_loop_test(numerics, test_low_precision_accumulates_in_f32, 0, 2);
	tcase_add_test(factories, test_factories);
	tcase_add_test(factories, test_random);
	tcase_add_test(factories, test_factory_size_overflow);
	tcase_add_test(factories, test_dropout_train);
	tcase_add_test(composites, test_composites_dispatch_inner_ops);
	suite_add_tcase(s, promotion);
	suite_add_tcase(s, error_texts);
	suite_add_tcase(s, views);
	suite_add_tcase(s, numerics);
	suite_add_tcase(s, factories);
	suite_add_tcase(s, composites);
	ops_add_numeric_tcases(s);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(ops_suite());

	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
