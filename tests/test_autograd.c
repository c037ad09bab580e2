/* Autograd suite: the gradient of every differentiable op against central
 * finite differences in f64 (first order for all, second order through
 * amp_grad(create_graph) for those double backward covers); under CPU bf16
 * and emulated-CUDA f16 autocast, every backward op's output dtype is one
 * its forward op used and f32 parameters get f32 gradients; the engine's
 * contracts (retain_graph and its error text, accumulation into .grad,
 * amp_grad without touching .grad, allow_unused, no-grad regions,
 * backward inside an autocast region, custom functions, .grad access). */
#include "amp.h"
#include "amp_internal.h"
#include "grad/grad.h"

#include <check.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define F64 AMP_DTYPE_F64
#define F32 AMP_DTYPE_F32
#define F16 AMP_DTYPE_F16
#define BF16 AMP_DTYPE_BF16
#define I64 AMP_DTYPE_I64
#define CPU AMP_DEVICE_CPU
#define CUDA AMP_DEVICE_CUDA

#define MAX_INPUTS 4
#define MAX_ELEMENTS 256

/* --------------------------------------------------------------- inputs */

enum input_kind {
	INPUT_NONE,
	INPUT_NORMAL,   /* randn */
	INPUT_POSITIVE, /* exp(randn / 2) */
	INPUT_UNIT,     /* sigmoid(randn): in (0, 1) */
	INPUT_CLASS,    /* int64 class index in [0, range) */
	INPUT_CONST,    /* randn, not requiring grad */
};

struct input_spec {
	enum input_kind kind;
	int ndim;
	int64_t shape[4];
	int64_t range;
};

#define NORMAL(...) { INPUT_NORMAL, sizeof((int64_t[]){ __VA_ARGS__ }) / 8, { __VA_ARGS__ }, 0 }
#define POSITIVE(...) { INPUT_POSITIVE, sizeof((int64_t[]){ __VA_ARGS__ }) / 8, { __VA_ARGS__ }, 0 }
#define UNIT(...) { INPUT_UNIT, sizeof((int64_t[]){ __VA_ARGS__ }) / 8, { __VA_ARGS__ }, 0 }
#define CONST(...) { INPUT_CONST, sizeof((int64_t[]){ __VA_ARGS__ }) / 8, { __VA_ARGS__ }, 0 }
#define CLASS(range_, ...) { INPUT_CLASS, sizeof((int64_t[]){ __VA_ARGS__ }) / 8, { __VA_ARGS__ }, range_ }

static amp_tensor *make_input(const struct input_spec *spec)
{
	int64_t n = amp_shape_numel(spec->ndim, spec->shape);
	double values[MAX_ELEMENTS];
	amp_tensor *t;

	ck_assert_int_le(n, MAX_ELEMENTS);
	if (spec->kind == INPUT_CLASS) {
		int64_t classes[MAX_ELEMENTS];
		for (int64_t i = 0; i < n; i++)
			classes[i] = (i * 7 + 3) % spec->range;
		t = amp_from_data(spec->ndim, spec->shape, I64, CPU, classes);
		ck_assert_ptr_nonnull(t);
		return t;
	}
	amp_tensor *r = amp_randn(spec->ndim, spec->shape, F64, CPU);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(amp_tensor_read(r, F64, values, (size_t)n), AMP_OK);
	amp_tensor_free(r);
	for (int64_t i = 0; i < n; i++) {
		if (spec->kind == INPUT_POSITIVE)
			values[i] = exp(values[i] / 2);
		else if (spec->kind == INPUT_UNIT)
			values[i] = 1 / (1 + exp(-values[i]));
	}
	t = amp_from_data(spec->ndim, spec->shape, F64, CPU, values);
	ck_assert_ptr_nonnull(t);
	if (spec->kind != INPUT_CONST)
		ck_assert_int_eq(amp_tensor_set_requires_grad(t, true), AMP_OK);
	return t;
}

static bool differentiable(const struct input_spec *spec)
{
	return spec->kind == INPUT_NORMAL || spec->kind == INPUT_POSITIVE ||
	       spec->kind == INPUT_UNIT;
}

static amp_tensor *ok(amp_tensor *t)
{
	ck_assert_msg(t != NULL, "op failed: %s", amp_last_error());
	return t;
}

/* ---------------------------------------------------------- the cases */

typedef amp_tensor *(*build_fn)(amp_tensor *const *in);

struct grad_case {
	const char *name;
	build_fn build;
	struct input_spec inputs[MAX_INPUTS];
	bool second_order; /* double backward is checked too */
};

static amp_tensor *b_transpose(amp_tensor *const *in) { return amp_transpose(in[0], 0, 2); }
static amp_tensor *b_t(amp_tensor *const *in) { return amp_t(in[0]); }
static amp_tensor *b_reshape(amp_tensor *const *in)
{
	int64_t shape[2] = { 3, -1 };
	return amp_reshape(in[0], 2, shape);
}
static amp_tensor *b_slice(amp_tensor *const *in) { return amp_slice(in[0], 1, 1, 6, 2); }
static amp_tensor *b_unsqueeze(amp_tensor *const *in) { return amp_unsqueeze(in[0], 1); }
static amp_tensor *b_contiguous(amp_tensor *const *in)
{
	amp_tensor *view = ok(amp_t(in[0]));
	amp_tensor *out = amp_contiguous(view);
	amp_tensor_free(view);
	return out;
}
static amp_tensor *b_clone(amp_tensor *const *in) { return amp_clone(in[0]); }
static amp_tensor *b_to_device(amp_tensor *const *in)
{
	amp_tensor *moved = ok(amp_to_device(in[0], CUDA));
	amp_tensor *back = amp_exp(moved);
	amp_tensor_free(moved);
	amp_tensor *out = amp_to_device(back, CPU);
	amp_tensor_free(back);
	return out;
}
static amp_tensor *b_mm(amp_tensor *const *in) { return amp_mm(in[0], in[1]); }
static amp_tensor *b_matmul(amp_tensor *const *in) { return amp_matmul(in[0], in[1]); }
static amp_tensor *b_bmm(amp_tensor *const *in) { return amp_bmm(in[0], in[1]); }
static amp_tensor *b_addmm(amp_tensor *const *in) { return amp_addmm(in[0], in[1], in[2], 0.5, 2.0); }
static amp_tensor *b_baddbmm(amp_tensor *const *in) { return amp_baddbmm(in[0], in[1], in[2], 1.5, 0.5); }
static amp_tensor *b_linear(amp_tensor *const *in) { return amp_linear(in[0], in[1], in[2]); }
static amp_tensor *b_linear_nobias(amp_tensor *const *in) { return amp_linear(in[0], in[1], NULL); }
static amp_tensor *b_conv1d(amp_tensor *const *in) { return amp_conv1d(in[0], in[1], in[2], 2, 1, 1, 2); }
static amp_tensor *b_conv2d(amp_tensor *const *in)
{
	int64_t stride[2] = { 1, 2 }, padding[2] = { 1, 0 }, dilation[2] = { 2, 1 };
	return amp_conv2d(in[0], in[1], in[2], stride, padding, dilation, 1);
}
static amp_tensor *b_add(amp_tensor *const *in) { return amp_add(in[0], in[1]); }
static amp_tensor *b_sub(amp_tensor *const *in) { return amp_sub(in[0], in[1]); }
static amp_tensor *b_mul(amp_tensor *const *in) { return amp_mul(in[0], in[1]); }
static amp_tensor *b_div(amp_tensor *const *in) { return amp_div(in[0], in[1]); }
static amp_tensor *b_add_scalar(amp_tensor *const *in) { return amp_add_scalar(in[0], 2.5); }
static amp_tensor *b_mul_scalar(amp_tensor *const *in) { return amp_mul_scalar(in[0], -1.5); }
static amp_tensor *b_neg(amp_tensor *const *in) { return amp_neg(in[0]); }
static amp_tensor *b_pow(amp_tensor *const *in) { return amp_pow(in[0], in[1]); }
static amp_tensor *b_pow3(amp_tensor *const *in) { return amp_pow_scalar(in[0], 3); }
static amp_tensor *b_pow_half(amp_tensor *const *in) { return amp_pow_scalar(in[0], 0.5); }
static amp_tensor *b_exp(amp_tensor *const *in) { return amp_exp(in[0]); }
static amp_tensor *b_log(amp_tensor *const *in) { return amp_log(in[0]); }
static amp_tensor *b_relu(amp_tensor *const *in) { return amp_relu(in[0]); }
static amp_tensor *b_gelu(amp_tensor *const *in) { return amp_gelu(in[0], false); }
static amp_tensor *b_gelu_tanh(amp_tensor *const *in) { return amp_gelu(in[0], true); }
static amp_tensor *b_sigmoid(amp_tensor *const *in) { return amp_sigmoid(in[0]); }
static amp_tensor *b_tanh(amp_tensor *const *in) { return amp_tanh(in[0]); }
static amp_tensor *b_addcmul(amp_tensor *const *in) { return amp_addcmul(in[0], in[1], in[2], 0.75); }
static amp_tensor *b_softmax(amp_tensor *const *in) { return amp_softmax(in[0], 1, AMP_DTYPE_NONE); }
static amp_tensor *b_log_softmax(amp_tensor *const *in) { return amp_log_softmax(in[0], 0, AMP_DTYPE_NONE); }
static amp_tensor *b_layer_norm(amp_tensor *const *in)
{
	int64_t shape[1] = { 5 };
	return amp_layer_norm(in[0], 1, shape, in[1], in[2], 1e-5);
}
static amp_tensor *b_layer_norm_plain(amp_tensor *const *in)
{
	int64_t shape[2] = { 2, 3 };
	return amp_layer_norm(in[0], 2, shape, NULL, NULL, 1e-5);
}
static amp_tensor *b_sum(amp_tensor *const *in) { return amp_sum(in[0], AMP_DTYPE_NONE); }
static amp_tensor *b_sum_dim(amp_tensor *const *in)
{
	int64_t dims[2] = { 0, -1 };
	return amp_sum_dim(in[0], 2, dims, false, AMP_DTYPE_NONE);
}
static amp_tensor *b_mean(amp_tensor *const *in) { return amp_mean(in[0], AMP_DTYPE_NONE); }
static amp_tensor *b_mean_dim(amp_tensor *const *in)
{
	int64_t dim = 1;
	return amp_mean_dim(in[0], 1, &dim, true, AMP_DTYPE_NONE);
}
static amp_tensor *b_cat(amp_tensor *const *in) { return amp_cat(in, 3, 1); }
static amp_tensor *b_stack(amp_tensor *const *in) { return amp_stack(in, 2, -1); }
static amp_tensor *b_embedding(amp_tensor *const *in) { return amp_embedding(in[0], in[1]); }
static amp_tensor *b_dropout(amp_tensor *const *in) { return amp_dropout(in[0], 0.4, true); }
static amp_tensor *b_mse_mean(amp_tensor *const *in) { return amp_mse_loss(in[0], in[1], AMP_REDUCTION_MEAN); }
static amp_tensor *b_mse_sum(amp_tensor *const *in) { return amp_mse_loss(in[0], in[1], AMP_REDUCTION_SUM); }
static amp_tensor *b_mse_none(amp_tensor *const *in) { return amp_mse_loss(in[0], in[1], AMP_REDUCTION_NONE); }
static amp_tensor *b_nll(amp_tensor *const *in)
{
	return amp_nll_loss(in[0], in[1], in[2], AMP_REDUCTION_MEAN, 1);
}
static amp_tensor *b_nll_none(amp_tensor *const *in)
{
	return amp_nll_loss(in[0], in[1], NULL, AMP_REDUCTION_NONE, -100);
}
static amp_tensor *b_cross_entropy(amp_tensor *const *in)
{
	return amp_cross_entropy(in[0], in[1], NULL, AMP_REDUCTION_MEAN, -100);
}
static amp_tensor *b_bce(amp_tensor *const *in)
{
	return amp_binary_cross_entropy(in[0], in[1], in[2], AMP_REDUCTION_MEAN);
}
static amp_tensor *b_bce_none(amp_tensor *const *in)
{
	return amp_binary_cross_entropy(in[0], in[1], NULL, AMP_REDUCTION_NONE);
}
static amp_tensor *b_bce_logits(amp_tensor *const *in)
{
	return amp_binary_cross_entropy_with_logits(in[0], in[1], NULL, NULL,
						    AMP_REDUCTION_SUM);
}
static amp_tensor *b_bce_logits_weighted(amp_tensor *const *in)
{
	return amp_binary_cross_entropy_with_logits(in[0], in[1], in[2], in[3],
						    AMP_REDUCTION_MEAN);
}

/* ops without a public function: through the dispatcher directly */
static amp_tensor *dispatch1(enum amp_op op, int nargs,
			     const struct amp_arg *args)
{
	struct amp_call call = { .op = op, .nargs = nargs };
	memcpy(call.args, args, (size_t)nargs * sizeof *args);
	return amp_dispatch1(&call);
}
static amp_tensor *b_sqrt(amp_tensor *const *in)
{
	struct amp_arg args[1] = { amp_arg_tensor(in[0]) };
	return dispatch1(AMP_OP_SQRT, 1, args);
}
static amp_tensor *b_reciprocal(amp_tensor *const *in)
{
	struct amp_arg args[1] = { amp_arg_tensor(in[0]) };
	return dispatch1(AMP_OP_RECIPROCAL, 1, args);
}
static amp_tensor *b_clamp(amp_tensor *const *in)
{
	struct amp_arg args[3] = { amp_arg_tensor(in[0]), amp_arg_double(-0.5),
				   amp_arg_double(0.7) };
	return dispatch1(AMP_OP_CLAMP, 3, args);
}
static amp_tensor *b_norm(amp_tensor *const *in)
{
	struct amp_arg args[3] = { amp_arg_tensor(in[0]), amp_arg_scalar(2, true),
				   amp_arg_dtype(AMP_DTYPE_NONE) };
	return dispatch1(AMP_OP_LINALG_VECTOR_NORM, 3, args);
}
/* the gradient-penalty model: linear -> relu -> linear -> mse */
static amp_tensor *b_mlp(amp_tensor *const *in)
{
	amp_tensor *h = ok(amp_linear(in[0], in[1], in[2]));
	amp_tensor *a = ok(amp_tanh(h));
	amp_tensor_free(h);
	amp_tensor *o = ok(amp_linear(a, in[3], NULL));
	amp_tensor_free(a);
	amp_tensor *r = amp_relu(o);
	amp_tensor_free(o);
	return r;
}

static const struct grad_case cases[] = {
	{ "transpose", b_transpose, { NORMAL(2, 3, 4) }, true },
	{ "t", b_t, { NORMAL(3, 4) }, true },
	{ "reshape", b_reshape, { NORMAL(2, 3, 2) }, true },
	{ "slice", b_slice, { NORMAL(3, 7) }, true },
	{ "unsqueeze", b_unsqueeze, { NORMAL(3, 4) }, true },
	{ "contiguous", b_contiguous, { NORMAL(3, 4) }, true },
	{ "clone", b_clone, { NORMAL(5) }, true },
	{ "to_device", b_to_device, { NORMAL(2, 3) }, true },
	{ "mm", b_mm, { NORMAL(3, 4), NORMAL(4, 2) }, true },
	{ "matmul", b_matmul, { NORMAL(2, 3, 4), NORMAL(4, 2) }, true },
	{ "bmm", b_bmm, { NORMAL(2, 3, 4), NORMAL(2, 4, 2) }, true },
	{ "addmm", b_addmm, { NORMAL(2), NORMAL(3, 4), NORMAL(4, 2) }, true },
	{ "baddbmm", b_baddbmm, { NORMAL(3, 2), NORMAL(2, 3, 4), NORMAL(2, 4, 2) }, true },
	{ "linear", b_linear, { NORMAL(2, 3, 4), NORMAL(5, 4), NORMAL(5) }, true },
	{ "linear_nobias", b_linear_nobias, { NORMAL(4), NORMAL(3, 4) }, true },
	{ "conv1d", b_conv1d, { NORMAL(2, 4, 7), NORMAL(4, 2, 3), NORMAL(4) }, true },
	{ "conv2d", b_conv2d, { NORMAL(1, 2, 5, 6), NORMAL(3, 2, 2, 3), NORMAL(3) }, true },
	{ "add", b_add, { NORMAL(3, 4), NORMAL(4) }, true },
	{ "sub", b_sub, { NORMAL(3, 1), NORMAL(2, 1, 4) }, true },
	{ "mul", b_mul, { NORMAL(3, 4), NORMAL(3, 1) }, true },
	{ "div", b_div, { NORMAL(3, 4), POSITIVE(4) }, true },
	{ "add_scalar", b_add_scalar, { NORMAL(3, 4) }, true },
	{ "mul_scalar", b_mul_scalar, { NORMAL(3, 4) }, true },
	{ "neg", b_neg, { NORMAL(3, 4) }, true },
	{ "pow", b_pow, { POSITIVE(3, 4), NORMAL(3, 4) }, true },
	{ "pow_scalar", b_pow3, { NORMAL(3, 4) }, true },
	{ "pow_scalar_half", b_pow_half, { POSITIVE(3, 4) }, true },
	{ "exp", b_exp, { NORMAL(3, 4) }, true },
	{ "log", b_log, { POSITIVE(3, 4) }, true },
	{ "relu", b_relu, { NORMAL(3, 4) }, true },
	{ "gelu", b_gelu, { NORMAL(3, 4) }, true },
	{ "gelu_tanh", b_gelu_tanh, { NORMAL(3, 4) }, true },
	{ "sigmoid", b_sigmoid, { NORMAL(3, 4) }, true },
	{ "tanh", b_tanh, { NORMAL(3, 4) }, true },
	{ "addcmul", b_addcmul, { NORMAL(3, 4), NORMAL(4), NORMAL(3, 1) }, true },
	{ "softmax", b_softmax, { NORMAL(3, 4) }, true },
	{ "log_softmax", b_log_softmax, { NORMAL(3, 4) }, true },
	{ "layer_norm", b_layer_norm, { NORMAL(3, 5), NORMAL(5), NORMAL(5) }, true },
	{ "layer_norm_plain", b_layer_norm_plain, { NORMAL(4, 2, 3) }, true },
	{ "sum", b_sum, { NORMAL(3, 4) }, true },
	{ "sum_dim", b_sum_dim, { NORMAL(2, 3, 4) }, true },
	{ "mean", b_mean, { NORMAL(3, 4) }, true },
	{ "mean_dim", b_mean_dim, { NORMAL(2, 3, 4) }, true },
	{ "cat", b_cat, { NORMAL(2, 1, 3), NORMAL(2, 2, 3), NORMAL(2, 3, 3) }, true },
	{ "stack", b_stack, { NORMAL(2, 3), NORMAL(2, 3) }, true },
	{ "embedding", b_embedding, { NORMAL(5, 3), CLASS(5, 2, 3) }, true },
	{ "dropout", b_dropout, { NORMAL(4, 5) }, false },
	{ "mse_loss_mean", b_mse_mean, { NORMAL(3, 4), NORMAL(3, 4) }, true },
	{ "mse_loss_sum", b_mse_sum, { NORMAL(3, 4), NORMAL(3, 4) }, true },
	{ "mse_loss_none", b_mse_none, { NORMAL(3, 4), NORMAL(3, 4) }, true },
	{ "nll_loss", b_nll, { NORMAL(4, 3), CLASS(3, 4), CONST(3) }, true },
	{ "nll_loss_none", b_nll_none, { NORMAL(2, 3, 2), CLASS(3, 2, 2) }, true },
	{ "cross_entropy", b_cross_entropy, { NORMAL(4, 5), CLASS(5, 4) }, true },
	{ "binary_cross_entropy", b_bce, { UNIT(3, 4), UNIT(3, 4), CONST(3, 4) }, true },
	{ "binary_cross_entropy_none", b_bce_none, { UNIT(6), UNIT(6) }, true },
	{ "bce_with_logits", b_bce_logits, { NORMAL(3, 4), UNIT(3, 4) }, true },
	{ "bce_with_logits_weighted", b_bce_logits_weighted,
	  { NORMAL(3, 4), UNIT(3, 4), CONST(4), CONST(4) }, true },
	{ "sqrt", b_sqrt, { POSITIVE(3, 4) }, true },
	{ "reciprocal", b_reciprocal, { POSITIVE(3, 4) }, true },
	{ "clamp", b_clamp, { NORMAL(3, 4) }, true },
	{ "linalg_vector_norm", b_norm, { NORMAL(3, 4) }, true },
	{ "mlp", b_mlp, { NORMAL(3, 4), NORMAL(5, 4), NORMAL(5), NORMAL(2, 5) }, true },
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

/* ------------------------------------------------ finite differences */

struct fixture {
	const struct grad_case *c;
	int ninputs;
	amp_tensor *inputs[MAX_INPUTS];
	amp_tensor *weight;  /* grad_output */
	amp_tensor *weight2; /* per input: weights of the second-order probe */
	amp_tensor *probe[MAX_INPUTS];
};

static amp_tensor *build(const struct grad_case *c, amp_tensor *const *in)
{
	amp_manual_seed(1234); /* dropout draws the same mask every time */
	return ok(c->build(in));
}

static void fixture_init(struct fixture *fx, const struct grad_case *c)
{
	memset(fx, 0, sizeof *fx);
	fx->c = c;
	amp_manual_seed(42);
	for (int i = 0; i < MAX_INPUTS && c->inputs[i].kind != INPUT_NONE; i++)
		fx->inputs[fx->ninputs++] = make_input(&c->inputs[i]);
	bool previous = amp_set_grad_enabled(false);
	amp_tensor *out = build(c, fx->inputs);
	amp_set_grad_enabled(previous);
	fx->weight = ok(amp_randn(amp_tensor_ndim(out), amp_tensor_shape(out),
				  F64, CPU));
	amp_tensor_free(out);
	for (int i = 0; i < fx->ninputs; i++)
		fx->probe[i] = ok(amp_randn(amp_tensor_ndim(fx->inputs[i]),
					    amp_tensor_shape(fx->inputs[i]),
					    F64, CPU));
}

static void fixture_free(struct fixture *fx)
{
	for (int i = 0; i < fx->ninputs; i++) {
		amp_tensor_free(fx->inputs[i]);
		amp_tensor_free(fx->probe[i]);
	}
	amp_tensor_free(fx->weight);
}

static double dot(amp_tensor *a, amp_tensor *b)
{
	double x[MAX_ELEMENTS], y[MAX_ELEMENTS];
	size_t n = (size_t)amp_tensor_numel(a);

	ck_assert_int_eq(amp_tensor_numel(b), (int64_t)n);
	ck_assert_int_le(n, MAX_ELEMENTS);
	ck_assert_int_eq(amp_tensor_read(a, F64, x, n), AMP_OK);
	ck_assert_int_eq(amp_tensor_read(b, F64, y, n), AMP_OK);
	double sum = 0;
	for (size_t i = 0; i < n; i++)
		sum += x[i] * y[i];
	return sum;
}

/* f = sum(out * weight) */
static double first_order_value(struct fixture *fx)
{
	amp_tensor *out = build(fx->c, fx->inputs);
	double value = dot(out, fx->weight);
	amp_tensor_free(out);
	return value;
}

/* F = sum_i sum(d f / d input_i * probe_i) over the differentiable inputs,
 * computed with amp_grad; with create_graph it can be differentiated. */
static amp_tensor *second_order_graph(struct fixture *fx, bool create_graph)
{
	amp_tensor *wanted[MAX_INPUTS], *grads[MAX_INPUTS];
	amp_tensor *probes[MAX_INPUTS];
	int n = 0;

	for (int i = 0; i < fx->ninputs; i++)
		if (differentiable(&fx->c->inputs[i])) {
			probes[n] = fx->probe[i];
			wanted[n++] = fx->inputs[i];
		}
	amp_tensor *out = build(fx->c, fx->inputs);
	int status = amp_grad(1, &out, &fx->weight, n, wanted, grads,
			      create_graph, create_graph, true);
	ck_assert_msg(status == AMP_OK, "%s", amp_last_error());
	amp_tensor_free(out);
	amp_tensor *total = NULL;
	for (int k = 0; k < n; k++) {
		if (!grads[k])
			continue;
		amp_tensor *product = ok(amp_mul(grads[k], probes[k]));
		amp_tensor *sum = ok(amp_sum(product, AMP_DTYPE_NONE));
		amp_tensor_free(product);
		amp_tensor_free(grads[k]);
		if (total) {
			amp_tensor *next = ok(amp_add(total, sum));
			amp_tensor_free(total);
			amp_tensor_free(sum);
			total = next;
		} else {
			total = sum;
		}
	}
	return total;
}

static double second_order_value(struct fixture *fx)
{
	bool previous = amp_set_grad_enabled(true);
	amp_tensor *total = second_order_graph(fx, false);
	amp_set_grad_enabled(previous);
	double value = total ? amp_tensor_item(total) : 0;
	amp_tensor_free(total);
	return value;
}

/* Central differences of value() against each input's .grad. */
static void check_against_differences(struct fixture *fx,
				      double (*value)(struct fixture *),
				      const char *order)
{
	const double h = 1e-6;

	for (int i = 0; i < fx->ninputs; i++) {
		if (!differentiable(&fx->c->inputs[i]))
			continue;
		amp_tensor *x = fx->inputs[i];
		size_t n = (size_t)amp_tensor_numel(x);
		double values[MAX_ELEMENTS], analytic[MAX_ELEMENTS];
		amp_tensor *grad = amp_tensor_grad(x);
		ck_assert_int_eq(amp_tensor_read(x, F64, values, n), AMP_OK);
		if (grad) {
			ck_assert_int_eq(amp_tensor_dtype(grad), F64);
			ck_assert_int_eq(amp_tensor_read(grad, F64, analytic, n),
					 AMP_OK);
			amp_tensor_free(grad);
		} else {
			memset(analytic, 0, sizeof analytic);
		}
		bool previous = amp_set_grad_enabled(false);
		for (size_t j = 0; j < n; j++) {
			double saved = values[j];
			values[j] = saved + h;
			amp_tensor_write(x, F64, values, n);
			double plus = value(fx);
			values[j] = saved - h;
			amp_tensor_write(x, F64, values, n);
			double minus = value(fx);
			values[j] = saved;
			amp_tensor_write(x, F64, values, n);
			double numeric = (plus - minus) / (2 * h);
			double tolerance = 1e-6 * fmax(1.0, fabs(numeric));
			ck_assert_msg(fabs(analytic[j] - numeric) <= tolerance,
				      "%s %s: input %d element %zu: analytic "
				      "%.10g, finite differences %.10g",
				      fx->c->name, order, i, j, analytic[j],
				      numeric);
		}
		amp_set_grad_enabled(previous);
	}
}

START_TEST(test_first_order)
{
	struct fixture fx;

	fixture_init(&fx, &cases[_i]);
	amp_tensor *out = build(fx.c, fx.inputs);
	ck_assert(amp_tensor_requires_grad(out));
	ck_assert_ptr_nonnull(amp_tensor_grad_fn_name(out));
	ck_assert_msg(amp_backward(out, fx.weight, false, false) == AMP_OK,
		      "%s: %s", fx.c->name, amp_last_error());
	amp_tensor_free(out);
	check_against_differences(&fx, first_order_value, "first order");
	fixture_free(&fx);
}
END_TEST

/* The cases whose double backward is checked (the loop runs over these
 * only, rather than passing the others without checking anything). */
static int second_order_cases[NCASES];
static int nsecond_order;

START_TEST(test_second_order)
{
	struct fixture fx;

	fixture_init(&fx, &cases[second_order_cases[_i]]);
	amp_tensor *total = second_order_graph(&fx, true);
	if (total && amp_tensor_requires_grad(total))
		ck_assert_msg(amp_backward(total, NULL, false, false) == AMP_OK,
			      "%s: %s", fx.c->name, amp_last_error());
	amp_tensor_free(total);
	check_against_differences(&fx, second_order_value, "second order");
	fixture_free(&fx);
}
END_TEST

/* ------------------------------------------------------------ the table */

START_TEST(test_table_covers_every_op)
{
	const struct amp_grad_def *def = &amp_grad_defs[_i];
	enum amp_op_kind kind = amp_op_defs[_i].kind;
	bool recorded = (kind == AMP_OP_KIND_COMPUTE || kind == AMP_OP_KIND_VIEW) &&
			_i != AMP_OP_DETACH;

	ck_assert_int_eq(def->op, _i);
	ck_assert_msg(recorded == (def->formula != NULL), "%s",
		      amp_op_defs[_i].name);
	if (recorded)
		ck_assert_msg(strstr(def->name, "Backward") != NULL, "%s",
			      def->name);
}
END_TEST

/* ---------------------------------------------------- recorded events */

#define MAX_EVENTS 4096

struct recorded_op {
	uint64_t op_id, forward_op_id;
	enum amp_phase phase;
	const char *op;
	bool autocast_enabled;
	int ndtypes;
	enum amp_dtype dtypes[32]; /* forward: every dtype the op touched */
	int noutputs;
	enum amp_dtype outputs[AMP_MAX_OUTPUTS];
};

static struct recorded_op events[MAX_EVENTS];
static int nevents;

static struct recorded_op *find_op(uint64_t op_id)
{
	for (int i = 0; i < nevents; i++)
		if (events[i].op_id == op_id)
			return &events[i];
	return NULL;
}

static void add_dtype(struct recorded_op *r, enum amp_dtype dtype)
{
	for (int i = 0; i < r->ndtypes; i++)
		if (r->dtypes[i] == dtype)
			return;
	if (r->ndtypes < 32)
		r->dtypes[r->ndtypes++] = dtype;
}

static void record_event(const struct amp_event *e, void *user)
{
	(void)user;
	if (e->kind == AMP_EVENT_CAST) {
		struct recorded_op *r = find_op(e->cast.op_id);
		if (r) {
			add_dtype(r, e->cast.from);
			add_dtype(r, e->cast.to);
		}
		return;
	}
	const struct amp_op_event *op = &e->op;
	struct recorded_op *r = find_op(op->op_id);
	if (!r) {
		ck_assert_int_lt(nevents, MAX_EVENTS);
		r = &events[nevents++];
		*r = (struct recorded_op){ .op_id = op->op_id,
					   .forward_op_id = op->forward_op_id,
					   .phase = op->phase,
					   .op = op->op,
					   .autocast_enabled = op->autocast.enabled };
	}
	for (int i = 0; i < op->ninputs; i++)
		add_dtype(r, op->inputs[i].dtype);
	if (e->kind == AMP_EVENT_OP_END) {
		r->noutputs = op->noutputs;
		for (int o = 0; o < op->noutputs; o++) {
			r->outputs[o] = op->outputs[o].dtype;
			add_dtype(r, op->outputs[o].dtype);
		}
	}
}

static int start_recording(void)
{
	nevents = 0;
	int handle = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_BEGIN) |
					  AMP_EVENT_MASK(AMP_EVENT_OP_END) |
					  AMP_EVENT_MASK(AMP_EVENT_CAST),
				  record_event, NULL);
	ck_assert_int_gt(handle, 0);
	return handle;
}

/* ---------------------------------------------- dtypes under autocast */

struct autocast_case {
	enum amp_device_type device;
	enum amp_dtype dtype;
};

static const struct autocast_case autocast_cases[] = {
	{ CPU, BF16 },
	{ CUDA, F16 },
};

static amp_tensor *param(int ndim, const int64_t *shape,
			 enum amp_device_type device, const char *name)
{
	amp_tensor *p = ok(amp_randn(ndim, shape, F32, device));
	amp_tensor_set_name(p, name);
	ck_assert_int_eq(amp_tensor_set_requires_grad(p, true), AMP_OK);
	return p;
}

/* A model touching most op families: linear, gelu, layer_norm, conv1d,
 * mm/bmm, softmax, exp, sigmoid, tanh, sum, cross_entropy, mse_loss. */
static amp_tensor *autocast_model(amp_tensor **params,
				  enum amp_device_type device)
{
	int64_t x_shape[2] = { 4, 6 }, seq_shape[3] = { 2, 3, 5 };
	amp_tensor *x = ok(amp_randn(2, x_shape, F32, device));
	amp_tensor *seq = ok(amp_randn(3, seq_shape, F32, device));
	int64_t norm_shape[1] = { 8 };
	int64_t classes_data[4] = { 0, 2, 1, 2 };
	int64_t classes_shape[1] = { 4 };
	amp_tensor *classes = ok(amp_from_data(1, classes_shape, I64, device,
					       classes_data));

	amp_tensor *h = ok(amp_linear(x, params[0], params[1]));   /* (4, 8) */
	amp_tensor *g = ok(amp_gelu(h, false));
	amp_tensor *n = ok(amp_layer_norm(g, 1, norm_shape, params[2], NULL, 1e-5));
	amp_tensor *m = ok(amp_mm(n, params[3]));                  /* (4, 3) */
	amp_tensor *loss1 = ok(amp_cross_entropy(m, classes, NULL,
						 AMP_REDUCTION_MEAN, -100));
	amp_tensor *c = ok(amp_conv1d(seq, params[4], NULL, 1, 1, 1, 1)); /* (2, 3, 5) */
	amp_tensor *ct = ok(amp_transpose(c, 1, 2));               /* (2, 5, 3) */
	amp_tensor *b = ok(amp_bmm(c, ct));                        /* (2, 3, 3) */
	amp_tensor *s = ok(amp_softmax(b, -1, AMP_DTYPE_NONE));
	amp_tensor *e = ok(amp_sigmoid(s));
	amp_tensor *t = ok(amp_tanh(e));
	amp_tensor *ex = ok(amp_exp(t));
	amp_tensor *target = ok(amp_zeros(3, (int64_t[]){ 2, 3, 3 }, F32, device));
	amp_tensor *loss2 = ok(amp_mse_loss(ex, target, AMP_REDUCTION_MEAN));
	amp_tensor *loss3 = ok(amp_sum(m, AMP_DTYPE_NONE));
	amp_tensor *partial = ok(amp_add(loss1, loss2));
	amp_tensor *loss = ok(amp_add(partial, loss3));

	amp_tensor *owned[] = { x, seq, classes, h, g, n, m, loss1, c, ct, b,
				s, e, t, ex, target, loss2, loss3, partial };
	for (size_t i = 0; i < sizeof owned / sizeof owned[0]; i++)
		amp_tensor_free(owned[i]);
	return loss;
}

#define NPARAMS 5

static void make_params(amp_tensor **params, enum amp_device_type device)
{
	params[0] = param(2, (int64_t[]){ 8, 6 }, device, "fc.weight");
	params[1] = param(1, (int64_t[]){ 8 }, device, "fc.bias");
	params[2] = param(1, (int64_t[]){ 8 }, device, "norm.weight");
	params[3] = param(2, (int64_t[]){ 8, 3 }, device, "head");
	params[4] = param(3, (int64_t[]){ 3, 3, 3 }, device, "conv.weight");
}

START_TEST(test_backward_dtypes_under_autocast)
{
	const struct autocast_case *ac = &autocast_cases[_i];
	struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(ac->device);
	amp_tensor *params[NPARAMS];

	opts.dtype = ac->dtype;
	amp_manual_seed(7);
	make_params(params, ac->device);
	int handle = start_recording();
	ck_assert_int_eq(amp_autocast_enter(&opts), AMP_OK);
	amp_tensor *loss = autocast_model(params, ac->device);
	amp_autocast_exit();
	ck_assert_msg(amp_backward(loss, NULL, false, false) == AMP_OK, "%s",
		      amp_last_error());
	amp_hook_remove(handle);

	int linked = 0, lowered = 0;
	for (int i = 0; i < nevents; i++) {
		const struct recorded_op *r = &events[i];
		if (r->phase != AMP_PHASE_BACKWARD || !r->forward_op_id)
			continue;
		const struct recorded_op *f = find_op(r->forward_op_id);
		ck_assert_ptr_nonnull(f);
		ck_assert_int_eq(f->phase, AMP_PHASE_FORWARD);
		ck_assert(!r->autocast_enabled);
		for (int o = 0; o < r->noutputs; o++) {
			bool found = false;
			for (int k = 0; k < f->ndtypes; k++)
				found |= f->dtypes[k] == r->outputs[o];
			ck_assert_msg(found,
				      "backward %s (output %s) of forward %s "
				      "uses a dtype the forward did not",
				      r->op, amp_dtype_name(r->outputs[o]),
				      f->op);
			lowered += r->outputs[o] == ac->dtype;
		}
		linked++;
	}
	ck_assert_int_gt(linked, 20);
	ck_assert_int_gt(lowered, 5); /* backward matmuls ran in f16/bf16 */
	for (int p = 0; p < NPARAMS; p++) {
		amp_tensor *grad = amp_tensor_grad(params[p]);
		ck_assert_msg(grad != NULL, "%s has no grad",
			      amp_tensor_name(params[p]));
		ck_assert_int_eq(amp_tensor_dtype(grad), F32);
		ck_assert_int_eq(amp_tensor_device(grad), ac->device);
		amp_tensor_free(grad);
		amp_tensor_free(params[p]);
	}
	amp_tensor_free(loss);
}
END_TEST

/* Backward inside an autocast region: autocast applies to the backward
 * ops (their events say so), as in PyTorch. */
START_TEST(test_backward_inside_autocast)
{
	struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(CUDA);
	amp_tensor *params[NPARAMS];

	amp_manual_seed(8);
	make_params(params, CUDA);
	ck_assert_int_eq(amp_autocast_enter(&opts), AMP_OK);
	amp_tensor *loss = autocast_model(params, CUDA);
	int handle = start_recording();
	ck_assert_int_eq(amp_backward(loss, NULL, false, false), AMP_OK);
	amp_autocast_exit();
	amp_hook_remove(handle);

	int mms = 0;
	for (int i = 0; i < nevents; i++) {
		const struct recorded_op *r = &events[i];
		if (r->phase != AMP_PHASE_BACKWARD || strcmp(r->op, "mm") != 0)
			continue;
		ck_assert(r->autocast_enabled);
		ck_assert_int_eq(r->outputs[0], F16);
		mms++;
	}
	ck_assert_int_gt(mms, 0);
	for (int p = 0; p < NPARAMS; p++) {
		amp_tensor *grad = amp_tensor_grad(params[p]);
		ck_assert_ptr_nonnull(grad);
		ck_assert_int_eq(amp_tensor_dtype(grad), F32);
		amp_tensor_free(grad);
		amp_tensor_free(params[p]);
	}
	amp_tensor_free(loss);
}
END_TEST

/* to(dtype)'s backward casts back: an f32 leaf gets an f32 gradient, and
 * the backward cast is a traced "to" op linked to the forward one. */
START_TEST(test_to_backward)
{
	int64_t shape[1] = { 4 };
	amp_tensor *x = param(1, shape, CPU, "x");
	int handle = start_recording();
	amp_tensor *half = ok(amp_to(x, F16));
	uint64_t forward = amp_tensor_grad_fn_op_id(half);
	ck_assert_str_eq(amp_tensor_grad_fn_name(half), "ToCopyBackward0");
	amp_tensor *s = ok(amp_sum(half, AMP_DTYPE_NONE));
	ck_assert_int_eq(amp_backward(s, NULL, false, false), AMP_OK);
	amp_hook_remove(handle);

	bool cast_back = false;
	for (int i = 0; i < nevents; i++)
		if (events[i].phase == AMP_PHASE_BACKWARD &&
		    events[i].forward_op_id == forward) {
			ck_assert_str_eq(events[i].op, "to");
			ck_assert_int_eq(events[i].outputs[0], F32);
			cast_back = true;
		}
	ck_assert(cast_back);
	amp_tensor *grad = amp_tensor_grad(x);
	float values[4];
	ck_assert_int_eq(amp_tensor_dtype(grad), F32);
	ck_assert_int_eq(amp_tensor_read(grad, F32, values, 4), AMP_OK);
	for (int i = 0; i < 4; i++)
		ck_assert_float_eq(values[i], 1.0f);
	amp_tensor_free(grad);
	amp_tensor_free(s);
	amp_tensor_free(half);
	amp_tensor_free(x);
}
END_TEST

/* --------------------------------------------------- engine contracts */

static amp_tensor *vector(const double *values, int64_t n, bool requires_grad)
{
	amp_tensor *t = ok(amp_from_data(1, &n, F64, CPU, values));
	if (requires_grad)
		ck_assert_int_eq(amp_tensor_set_requires_grad(t, true), AMP_OK);
	return t;
}

static void assert_values(amp_tensor *t, const double *expected, size_t n,
			  double tolerance)
{
	double values[MAX_ELEMENTS];

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(amp_tensor_read(t, F64, values, n), AMP_OK);
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(fabs(values[i] - expected[i]) <= tolerance,
			      "element %zu: %.12g, expected %.12g", i, values[i],
			      expected[i]);
}

static const char second_backward[] =
	"Trying to backward through the graph a second time (or directly "
	"access saved tensors after they have already been freed). Saved "
	"intermediate values of the graph are freed when you call .backward() "
	"or autograd.grad(). Specify retain_graph=True if you need to "
	"backward through the graph a second time or if you need to access "
	"saved tensors after calling backward.";

START_TEST(test_retain_graph)
{
	const double data[3] = { 0.5, -1.0, 2.0 };
	amp_tensor *x = vector(data, 3, true);
	amp_tensor *y = ok(amp_exp(x));
	amp_tensor *s = ok(amp_sum(y, AMP_DTYPE_NONE));
	double expected[3];

	ck_assert_int_eq(amp_backward(s, NULL, true, false), AMP_OK);
	ck_assert_int_eq(amp_backward(s, NULL, false, false), AMP_OK);
	for (int i = 0; i < 3; i++)
		expected[i] = 2 * exp(data[i]);
	amp_tensor *grad = amp_tensor_grad(x);
	assert_values(grad, expected, 3, 1e-12);
	amp_tensor_free(grad);
	/* the saved output of exp is gone now */
	ck_assert_int_eq(amp_backward(s, NULL, false, false), AMP_ERR_STATE);
	ck_assert_str_eq(amp_last_error(), second_backward);
	/* an error leaves .grad untouched */
	grad = amp_tensor_grad(x);
	assert_values(grad, expected, 3, 1e-12);
	amp_tensor_free(grad);
	amp_tensor_free(s);
	amp_tensor_free(y);
	amp_tensor_free(x);
}
END_TEST

START_TEST(test_accumulation)
{
	const double data[3] = { 1.0, 2.0, 3.0 };
	amp_tensor *x = vector(data, 3, true);
	double expected[3];

	for (int step = 0; step < 2; step++) {
		amp_tensor *y = ok(amp_mul(x, x));
		amp_tensor *s = ok(amp_sum(y, AMP_DTYPE_NONE));
		ck_assert_int_eq(amp_backward(s, NULL, false, false), AMP_OK);
		amp_tensor_free(s);
		amp_tensor_free(y);
	}
	for (int i = 0; i < 3; i++)
		expected[i] = 4 * data[i];
	amp_tensor *grad = amp_tensor_grad(x);
	assert_values(grad, expected, 3, 1e-12);
	/* in place: the tensor handed out before sees later accumulation */
	amp_tensor *y = ok(amp_mul_scalar(x, 1.0));
	amp_tensor *s = ok(amp_sum(y, AMP_DTYPE_NONE));
	ck_assert_int_eq(amp_backward(s, NULL, false, false), AMP_OK);
	for (int i = 0; i < 3; i++)
		expected[i] += 1;
	assert_values(grad, expected, 3, 1e-12);
	amp_tensor_free(grad);
	/* zero_grad: in place zeros, or none */
	amp_tensor_zero_grad(x, false);
	grad = amp_tensor_grad(x);
	const double zeros[3] = { 0, 0, 0 };
	assert_values(grad, zeros, 3, 0);
	amp_tensor_free(grad);
	amp_tensor_zero_grad(x, true);
	ck_assert_ptr_null(amp_tensor_grad(x));
	amp_tensor_free(s);
	amp_tensor_free(y);
	amp_tensor_free(x);
}
END_TEST

/* d/dx sum((dy/dx)^2) for y = sum(x^3): dy/dx = 3x^2, so the result is
 * d/dx sum(9 x^4) = 36 x^3.  amp_grad leaves .grad alone. */
START_TEST(test_double_backward)
{
	const double data[4] = { 0.5, -1.5, 2.0, 1.0 };
	amp_tensor *x = vector(data, 4, true);
	amp_tensor *cube = ok(amp_pow_scalar(x, 3));
	amp_tensor *y = ok(amp_sum(cube, AMP_DTYPE_NONE));
	amp_tensor *dydx = NULL;
	double expected[4];

	ck_assert_int_eq(amp_grad(1, &y, NULL, 1, &x, &dydx, false, true, false),
			 AMP_OK);
	ck_assert_ptr_null(amp_tensor_grad(x));
	ck_assert(amp_tensor_requires_grad(dydx));
	for (int i = 0; i < 4; i++)
		expected[i] = 3 * data[i] * data[i];
	assert_values(dydx, expected, 4, 1e-12);
	amp_tensor *square = ok(amp_pow_scalar(dydx, 2));
	amp_tensor *z = ok(amp_sum(square, AMP_DTYPE_NONE));
	ck_assert_int_eq(amp_backward(z, NULL, false, false), AMP_OK);
	for (int i = 0; i < 4; i++)
		expected[i] = 36 * data[i] * data[i] * data[i];
	amp_tensor *grad = amp_tensor_grad(x);
	assert_values(grad, expected, 4, 1e-9);
	amp_tensor_free(grad);
	amp_tensor *objects[] = { z, square, dydx, y, cube, x };
	for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
		amp_tensor_free(objects[i]);
}
END_TEST

/* Third order: d^3/dx^3 sum(x^3) = 6, through two create_graph grads. */
START_TEST(test_third_order)
{
	const double data[3] = { 0.5, -2.0, 3.0 };
	amp_tensor *x = vector(data, 3, true);
	amp_tensor *cube = ok(amp_pow_scalar(x, 3));
	amp_tensor *y = ok(amp_sum(cube, AMP_DTYPE_NONE));
	amp_tensor *first, *second, *third;

	ck_assert_int_eq(amp_grad(1, &y, NULL, 1, &x, &first, true, true, false),
			 AMP_OK);
	amp_tensor *s1 = ok(amp_sum(first, AMP_DTYPE_NONE));
	ck_assert_int_eq(amp_grad(1, &s1, NULL, 1, &x, &second, true, true,
				  false),
			 AMP_OK);
	amp_tensor *s2 = ok(amp_sum(second, AMP_DTYPE_NONE));
	ck_assert_int_eq(amp_grad(1, &s2, NULL, 1, &x, &third, false, false,
				  false),
			 AMP_OK);
	double expected[3];
	for (int i = 0; i < 3; i++)
		expected[i] = 6 * data[i];
	assert_values(second, expected, 3, 1e-12);
	const double six[3] = { 6, 6, 6 };
	assert_values(third, six, 3, 1e-12);
	ck_assert(!amp_tensor_requires_grad(third));
	amp_tensor *objects[] = { third, s2, second, s1, first, y, cube, x };
	for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
		amp_tensor_free(objects[i]);
}
END_TEST

/* amp_grad with respect to an intermediate tensor: its node's gradient
 * is captured, nothing beyond it runs and no .grad changes. */
START_TEST(test_grad_of_intermediate)
{
	const double data[3] = { 1.0, -2.0, 0.5 };
	amp_tensor *x = vector(data, 3, true);
	amp_tensor *h = ok(amp_mul_scalar(x, 2.0));
	amp_tensor *square = ok(amp_mul(h, h));
	amp_tensor *y = ok(amp_sum(square, AMP_DTYPE_NONE));
	amp_tensor *dh;
	double expected[3];

	int handle = start_recording();
	ck_assert_int_eq(amp_grad(1, &y, NULL, 1, &h, &dh, false, false, false),
			 AMP_OK);
	amp_hook_remove(handle);
	for (int i = 0; i < 3; i++)
		expected[i] = 4 * data[i]; /* 2 h */
	assert_values(dh, expected, 3, 1e-12);
	for (int i = 0; i < nevents; i++)
		ck_assert_msg(events[i].forward_op_id !=
				      amp_tensor_grad_fn_op_id(h),
			      "mul_scalar's backward ran");
	ck_assert_ptr_null(amp_tensor_grad(x));
	amp_tensor *objects[] = { dh, y, square, h, x };
	for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
		amp_tensor_free(objects[i]);
}
END_TEST

START_TEST(test_unused_input)
{
	const double data[2] = { 1.0, 2.0 };
	amp_tensor *x = vector(data, 2, true);
	amp_tensor *unused = vector(data, 2, true);
	amp_tensor *y = ok(amp_sum(x, AMP_DTYPE_NONE));
	amp_tensor *inputs[2] = { x, unused }, *grads[2];

	ck_assert_int_eq(amp_grad(1, &y, NULL, 2, inputs, grads, true, false,
				  false),
			 AMP_ERR_STATE);
	ck_assert_str_eq(amp_last_error(),
			 "One of the differentiated Tensors appears to not "
			 "have been used in the graph. Set allow_unused=True "
			 "if this is the desired behavior.");
	ck_assert_ptr_null(grads[0]);
	ck_assert_int_eq(amp_grad(1, &y, NULL, 2, inputs, grads, true, false,
				  true),
			 AMP_OK);
	const double ones[2] = { 1, 1 };
	assert_values(grads[0], ones, 2, 0);
	ck_assert_ptr_null(grads[1]);
	amp_tensor_free(grads[0]);
	amp_tensor_free(y);
	amp_tensor_free(unused);
	amp_tensor_free(x);
}
END_TEST

START_TEST(test_no_grad_region)
{
	const double data[2] = { 1.0, 2.0 };
	amp_tensor *x = vector(data, 2, true);

	ck_assert(amp_set_grad_enabled(false));
	amp_tensor *y = ok(amp_mul(x, x));
	amp_tensor *c = ok(amp_contiguous(x));
	ck_assert(!amp_set_grad_enabled(true));
	ck_assert(!amp_tensor_requires_grad(y));
	ck_assert_ptr_null(amp_tensor_grad_fn_name(y));
	/* contiguous returned x itself: still a leaf requiring grad */
	ck_assert(amp_tensor_is_leaf(c) && amp_tensor_requires_grad(c));
	amp_tensor *s = ok(amp_sum(y, AMP_DTYPE_NONE));
	ck_assert_int_eq(amp_backward(s, NULL, false, false), AMP_ERR_STATE);
	ck_assert_str_eq(amp_last_error(), "element 0 of tensors does not "
					   "require grad and does not have a "
					   "grad_fn");
	ck_assert_ptr_null(amp_tensor_grad(x));
	/* implicit gradients only for one-element roots */
	amp_tensor *z = ok(amp_mul(x, x));
	ck_assert_int_eq(amp_backward(z, NULL, false, false), AMP_ERR_INVALID);
	ck_assert_str_eq(amp_last_error(),
			 "grad can be implicitly created only for scalar "
			 "outputs");
	amp_tensor *objects[] = { z, s, c, y, x };
	for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
		amp_tensor_free(objects[i]);
}
END_TEST

/* custom functions: MyMM of the AMP examples page, backward linked to
 * the forward op id and run with the engine's phase. */
struct mymm_ctx {
	amp_tensor *a, *b;
};

static void mymm_free(void *opaque)
{
	struct mymm_ctx *ctx = opaque;
	amp_tensor_free(ctx->a);
	amp_tensor_free(ctx->b);
	free(ctx);
}

static int mymm_backward(void *opaque, int noutputs, amp_tensor *const *grads,
			 int ninputs, amp_tensor **grad_inputs)
{
	struct mymm_ctx *ctx = opaque;
	ck_assert_int_eq(noutputs, 1);
	ck_assert_int_eq(ninputs, 2);
	ck_assert_int_eq(amp_autocast_state()->phase, AMP_PHASE_BACKWARD);
	amp_tensor *bt = amp_t(ctx->b), *at = amp_t(ctx->a);
	grad_inputs[0] = amp_mm(grads[0], bt);
	grad_inputs[1] = amp_mm(at, grads[0]);
	amp_tensor_free(bt);
	amp_tensor_free(at);
	return AMP_OK;
}

START_TEST(test_custom_function)
{
	int64_t a_shape[2] = { 3, 4 }, b_shape[2] = { 4, 2 };
	amp_tensor *a = param(2, a_shape, CPU, "a");
	amp_tensor *b = param(2, b_shape, CPU, "b");
	struct mymm_ctx *ctx = malloc(sizeof *ctx);
	ctx->a = amp_tensor_ref(a);
	ctx->b = amp_tensor_ref(b);
	bool previous = amp_set_grad_enabled(false);
	amp_tensor *out = ok(amp_mm(a, b));
	amp_set_grad_enabled(previous);
	const struct amp_function fn = { .name = "MyMMBackward",
					 .backward = mymm_backward,
					 .ctx_free = mymm_free,
					 .forward_op_id = 12345 };
	amp_tensor *inputs[2] = { a, b };
	ck_assert_int_eq(amp_function_attach(&fn, ctx, 2, inputs, 1, &out),
			 AMP_OK);
	ck_assert_str_eq(amp_tensor_grad_fn_name(out), "MyMMBackward");
	ck_assert(!amp_tensor_is_leaf(out));
	amp_tensor *s = ok(amp_sum(out, AMP_DTYPE_NONE));
	int handle = start_recording();
	ck_assert_int_eq(amp_backward(s, NULL, false, false), AMP_OK);
	amp_hook_remove(handle);
	int linked = 0;
	for (int i = 0; i < nevents; i++)
		linked += events[i].forward_op_id == 12345 &&
			  events[i].phase == AMP_PHASE_BACKWARD;
	ck_assert_int_ge(linked, 2);
	amp_tensor *grad_b = amp_tensor_grad(b);
	float a_values[12], g_values[8];
	ck_assert_int_eq(amp_tensor_read(a, F32, a_values, 12), AMP_OK);
	ck_assert_int_eq(amp_tensor_read(grad_b, F32, g_values, 8), AMP_OK);
	for (int k = 0; k < 4; k++) {
		float row_sum = 0;
		for (int i = 0; i < 3; i++)
			row_sum += a_values[i * 4 + k];
		ck_assert_float_eq_tol(g_values[k * 2], row_sum, 1e-5);
	}
	amp_tensor_free(grad_b);
	amp_tensor *objects[] = { s, out, b, a };
	for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
		amp_tensor_free(objects[i]);
}
END_TEST

START_TEST(test_set_grad)
{
	const double data[2] = { 1.0, 2.0 };
	amp_tensor *x = vector(data, 2, true);
	amp_tensor *g = vector(data, 2, false);
	amp_tensor *wrong = ok(amp_zeros(1, (int64_t[]){ 3 }, F64, CPU));
	amp_tensor *wrong_type = ok(amp_zeros(1, (int64_t[]){ 2 }, F32, CPU));

	ck_assert_int_eq(amp_tensor_set_grad(x, wrong), AMP_ERR_INVALID);
	ck_assert_str_eq(amp_last_error(),
			 "assigned grad has data of a different size");
	ck_assert_int_eq(amp_tensor_set_grad(x, wrong_type), AMP_ERR_DTYPE);
	ck_assert_int_eq(amp_tensor_set_grad(x, g), AMP_OK);
	amp_tensor *got = amp_tensor_grad(x);
	ck_assert_ptr_eq(got, g);
	amp_tensor_free(got);
	ck_assert_int_eq(amp_tensor_set_grad(x, NULL), AMP_OK);
	ck_assert_ptr_null(amp_tensor_grad(x));
	amp_tensor *objects[] = { wrong_type, wrong, g, x };
	for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
		amp_tensor_free(objects[i]);
}
END_TEST

/* Two losses sharing a graph (the multiple-losses recipe): retain_graph
 * on the first, gradients add up. */
START_TEST(test_shared_graph_two_losses)
{
	const double data[3] = { 0.25, -0.5, 1.0 };
	amp_tensor *x = vector(data, 3, true);
	amp_tensor *shared = ok(amp_tanh(x));
	amp_tensor *l0 = ok(amp_sum(shared, AMP_DTYPE_NONE));
	amp_tensor *scaled = ok(amp_mul_scalar(shared, 3.0));
	amp_tensor *l1 = ok(amp_sum(scaled, AMP_DTYPE_NONE));
	double expected[3];

	ck_assert_int_eq(amp_backward(l0, NULL, true, false), AMP_OK);
	ck_assert_int_eq(amp_backward(l1, NULL, false, false), AMP_OK);
	for (int i = 0; i < 3; i++) {
		double t = tanh(data[i]);
		expected[i] = 4 * (1 - t * t);
	}
	amp_tensor *grad = amp_tensor_grad(x);
	assert_values(grad, expected, 3, 1e-12);
	amp_tensor_free(grad);
	amp_tensor *objects[] = { l1, scaled, l0, shared, x };
	for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
		amp_tensor_free(objects[i]);
}
END_TEST

/* Threads running backward into the same leaf (shared weights) each add
 * their gradient: accumulation into .grad is serialised, as PyTorch's
 * AccumulateGrad mutex makes it, so none is lost. */
#define SHARED_LEAF_ELEMENTS 4096
#define SHARED_LEAF_STEPS 400

static void *backward_into_shared_leaf(void *arg)
{
	amp_tensor *w = arg;
	int64_t n = SHARED_LEAF_ELEMENTS;
	amp_tensor *x = amp_full(1, &n, 1.0, F64, CPU);

	for (int step = 0; x && step < SHARED_LEAF_STEPS; step++) {
		amp_tensor *y = amp_mul(w, x);
		amp_tensor *loss = y ? amp_sum(y, AMP_DTYPE_NONE) : NULL;
		if (!loss || amp_backward(loss, NULL, false, false) != AMP_OK)
			step = SHARED_LEAF_STEPS; /* the sum below tells */
		amp_tensor_free(loss);
		amp_tensor_free(y);
	}
	amp_tensor_free(x);
	return NULL;
}

START_TEST(test_concurrent_backward_shared_leaf)
{
	int64_t n = SHARED_LEAF_ELEMENTS;
	amp_tensor *w = ok(amp_full(1, &n, 0.5, F64, CPU));
	pthread_t threads[2];
	static double values[SHARED_LEAF_ELEMENTS];

	ck_assert_int_eq(amp_tensor_set_requires_grad(w, true), AMP_OK);
	for (int t = 0; t < 2; t++)
		ck_assert_int_eq(pthread_create(&threads[t], NULL,
						backward_into_shared_leaf, w),
				 0);
	for (int t = 0; t < 2; t++)
		pthread_join(threads[t], NULL);
	amp_tensor *grad = ok(amp_tensor_grad(w));
	ck_assert_int_eq(amp_tensor_read(grad, F64, values, (size_t)n), AMP_OK);
	for (int64_t i = 0; i < n; i++)
		ck_assert_double_eq(values[i], 2.0 * SHARED_LEAF_STEPS);
	amp_tensor_free(grad);
	amp_tensor_free(w);
}
END_TEST

/* The gradient-penalty recipe of the AMP examples, on emulated CUDA:
 * scaled grads of the parameters with create_graph under autocast, then
 * unscaled, penalty = sqrt(sum(g^2)) inside autocast, and backward of
 * the scaled total.  Checked against the same program run in f64 without
 * autocast (to f16 precision), and every parameter gradient is f32. */
static double penalty_step(amp_tensor *const *params, bool use_autocast,
			   double scale, amp_tensor **grads_out)
{
	struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(CUDA);
	enum amp_dtype dtype = amp_tensor_dtype(params[0]);
	int64_t x_shape[2] = { 5, 4 };
	double x_values[20], y_values[10];
	for (int i = 0; i < 20; i++)
		x_values[i] = sin(0.7 * i);
	for (int i = 0; i < 10; i++)
		y_values[i] = cos(1.3 * i);
	amp_tensor *x64 = ok(amp_from_data(2, x_shape, F64, CUDA, x_values));
	amp_tensor *y64 = ok(amp_from_data(2, (int64_t[]){ 5, 2 }, F64, CUDA,
					   y_values));
	amp_tensor *x = ok(amp_to(x64, dtype)), *y = ok(amp_to(y64, dtype));

	if (use_autocast)
		ck_assert_int_eq(amp_autocast_enter(&opts), AMP_OK);
	amp_tensor *h = ok(amp_linear(x, params[0], params[1]));
	amp_tensor *a = ok(amp_relu(h));
	amp_tensor *out = ok(amp_linear(a, params[2], NULL));
	amp_tensor *loss = ok(amp_mse_loss(out, y, AMP_REDUCTION_MEAN));
	if (use_autocast)
		amp_autocast_exit();

	amp_tensor *scaled = ok(amp_mul_scalar(loss, scale));
	amp_tensor *grads[3];
	ck_assert_msg(amp_grad(1, &scaled, NULL, 3, params, grads, true, true,
			       false) == AMP_OK,
		      "%s", amp_last_error());
	if (use_autocast)
		ck_assert_int_eq(amp_autocast_enter(&opts), AMP_OK);
	amp_tensor *norm = NULL;
	for (int p = 0; p < 3; p++) {
		ck_assert_int_eq(amp_tensor_dtype(grads[p]), dtype);
		amp_tensor *unscaled = ok(amp_mul_scalar(grads[p], 1.0 / scale));
		amp_tensor *square = ok(amp_pow_scalar(unscaled, 2));
		amp_tensor *sum = ok(amp_sum(square, AMP_DTYPE_NONE));
		if (norm) {
			amp_tensor *next = ok(amp_add(norm, sum));
			amp_tensor_free(norm);
			amp_tensor_free(sum);
			norm = next;
		} else {
			norm = sum;
		}
		amp_tensor_free(square);
		amp_tensor_free(unscaled);
		amp_tensor_free(grads[p]);
	}
	amp_tensor *root = ok(b_sqrt(&norm));
	amp_tensor *total = ok(amp_add(loss, root));
	if (use_autocast)
		amp_autocast_exit();
	amp_tensor *scaled_total = ok(amp_mul_scalar(total, scale));
	ck_assert_msg(amp_backward(scaled_total, NULL, false, false) == AMP_OK,
		      "%s", amp_last_error());
	double value = amp_tensor_item(total);
	for (int p = 0; p < 3; p++)
		grads_out[p] = amp_tensor_grad(params[p]);
	amp_tensor *objects[] = { scaled_total, total, root, norm, scaled,
				  loss, out, a, h, x, y, x64, y64 };
	for (size_t i = 0; i < sizeof objects / sizeof objects[0]; i++)
		amp_tensor_free(objects[i]);
	return value;
}

START_TEST(test_gradient_penalty_recipe)
{
	int64_t shapes[3][2] = { { 6, 4 }, { 6, 1 }, { 2, 6 } };
	amp_tensor *p32[3], *p64[3], *g32[3], *g64[3];

	amp_manual_seed(11);
	for (int p = 0; p < 3; p++) {
		int ndim = p == 1 ? 1 : 2;
		p64[p] = ok(amp_randn(ndim, shapes[p], F64, CUDA));
		p32[p] = ok(amp_to(p64[p], F32));
		ck_assert_int_eq(amp_tensor_set_requires_grad(p64[p], true),
				 AMP_OK);
		ck_assert_int_eq(amp_tensor_set_requires_grad(p32[p], true),
				 AMP_OK);
	}
	double mixed = penalty_step(p32, true, 1024.0, g32);
	double reference = penalty_step(p64, false, 1.0, g64);
	ck_assert_double_eq_tol(mixed, reference, 2e-2 * fabs(reference));
	for (int p = 0; p < 3; p++) {
		double a[64], b[64];
		size_t n = (size_t)amp_tensor_numel(p64[p]);
		ck_assert_int_eq(amp_tensor_dtype(g32[p]), F32);
		ck_assert_int_eq(amp_tensor_read(g32[p], F64, a, n), AMP_OK);
		ck_assert_int_eq(amp_tensor_read(g64[p], F64, b, n), AMP_OK);
		for (size_t i = 0; i < n; i++)
			a[i] /= 1024.0; /* the recipe's grads stay scaled */
		for (size_t i = 0; i < n; i++)
			ck_assert_msg(fabs(a[i] - b[i]) <= 2e-2 * (1 + fabs(b[i])),
				      "param %d element %zu: %g vs %g", p, i,
				      a[i], b[i]);
		amp_tensor_free(g32[p]);
		amp_tensor_free(g64[p]);
		amp_tensor_free(p32[p]);
		amp_tensor_free(p64[p]);
	}
}
END_TEST

static Suite *autograd_suite(void)
{
	Suite *suite = suite_create("autograd");
	TCase *ops = tcase_create("ops");
	TCase *autocast = tcase_create("autocast");
	TCase *engine = tcase_create("engine");

	tcase_add_loop_test(ops, test_table_covers_every_op, 0, AMP_OP_COUNT);
	tcase_add_loop_test(ops, test_first_order, 0, NCASES);
	for (int i = 0; i < NCASES; i++)
		if (cases[i].second_order)
			second_order_cases[nsecond_order++] = i;
	tcase_add_loop_test(ops, test_second_order, 0, nsecond_order);
	suite_add_tcase(suite, ops);
	tcase_add_loop_test(autocast, test_backward_dtypes_under_autocast, 0,
			    (int)(sizeof autocast_cases /
				  sizeof autocast_cases[0]));
	tcase_add_test(autocast, test_backward_inside_autocast);
	tcase_add_test(autocast, test_to_backward);
	tcase_add_test(autocast, test_gradient_penalty_recipe);
	suite_add_tcase(suite, autocast);
	tcase_add_test(engine, test_retain_graph);
	tcase_add_test(engine, test_accumulation);
	tcase_add_test(engine, test_double_backward);
	tcase_add_test(engine, test_third_order);
	tcase_add_test(engine, test_grad_of_intermediate);
	tcase_add_test(engine, test_unused_input);
	tcase_add_test(engine, test_no_grad_region);
	tcase_add_test(engine, test_custom_function);
	tcase_add_test(engine, test_set_grad);
	tcase_add_test(engine, test_shared_graph_two_losses);
	tcase_add_test(engine, test_concurrent_backward_shared_leaf);
	suite_add_tcase(suite, engine);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(autograd_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
