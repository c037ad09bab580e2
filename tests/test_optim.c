/* Optimizers and clipping against hand-computed steps: SGD (momentum,
 * dampening, weight decay, Nesterov), Adam / AdamW / AMSGrad against a
 * double-precision reference, PyTorch's constructor texts,
 * clip_grad_norm_ / clip_grad_value_, and the in-place ops underneath
 * (dispatched, policy none, version bumps, the leaf check, the stale
 * weight cache they cause inside one autocast region). */
#include "train_helpers.h"

#include <math.h>
#include <stdlib.h>

static amp_optimizer *sgd_with(amp_tensor *p, double lr, double momentum,
			       double dampening, double weight_decay,
			       bool nesterov)
{
	amp_optimizer *opt = amp_sgd_new(&p, 1, lr, momentum, dampening,
					 weight_decay, nesterov);
	ck_assert_ptr_nonnull(opt);
	return opt;
}

/* ------------------------------------------------------------------ SGD */

START_TEST(test_sgd_plain)
{
	amp_tensor *p = PARAM(1.0, 2.0);
	amp_optimizer *opt = sgd_with(p, 0.5, 0, 0, 0, false);

	SET_GRAD(p, 0.5, -1.0);
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
	ck_assert_double_eq(at(p, 0), 0.75);
	ck_assert_double_eq(at(p, 1), 2.5);
	/* f32 master weights stay leaves requiring grad */
	ck_assert_int_eq(amp_tensor_dtype(p), AMP_DTYPE_F32);
	ck_assert(amp_tensor_is_leaf(p) && amp_tensor_requires_grad(p));
	/* zero_grad sets the gradient to None; a step then does nothing */
	amp_optimizer_zero_grad(opt);
	ck_assert_ptr_null(amp_tensor_grad(p));
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
	ck_assert_double_eq(at(p, 0), 0.75);
	ck_assert_str_eq(amp_optimizer_name(opt), "SGD");
	amp_optimizer_free(opt);
	amp_optimizer_free(NULL);
	amp_tensor_free(p);
}
END_TEST

/* momentum 0.5, dampening 0.5: the first step's buffer is the gradient
 * itself (undampened), later ones buf = 0.5 buf + 0.5 g. */
START_TEST(test_sgd_momentum_dampening)
{
	amp_tensor *p = PARAM(0.0);
	amp_optimizer *opt = sgd_with(p, 1.0, 0.5, 0.5, 0, false);

	SET_GRAD(p, 4.0);
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
	ck_assert_double_eq(at(p, 0), -4.0); /* buf 4 */
	SET_GRAD(p, 2.0);
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
	ck_assert_double_eq(at(p, 0), -7.0); /* buf 2 + 1 = 3 */
	SET_GRAD(p, 2.0);
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
	ck_assert_double_eq(at(p, 0), -9.5); /* buf 1.5 + 1 = 2.5 */
	amp_optimizer_free(opt);
	amp_tensor_free(p);
}
END_TEST

/* weight decay 0.25 and Nesterov (momentum 0.5): d = g + 0.25 p;
 * buf = d (first), 0.5 buf + d; step = d + 0.5 buf. */
START_TEST(test_sgd_weight_decay_nesterov)
{
	amp_tensor *p = PARAM(4.0);
	amp_optimizer *opt = sgd_with(p, 0.5, 0.5, 0, 0.25, true);

	SET_GRAD(p, 1.0);
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
	/* d = 2, buf = 2, step = 2 + 1 = 3: p = 4 - 1.5 */
	ck_assert_double_eq(at(p, 0), 2.5);
	SET_GRAD(p, 0.375);
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
	/* d = 0.375 + 0.625 = 1, buf = 1 + 1 = 2, step = 1 + 1 = 2 */
	ck_assert_double_eq(at(p, 0), 1.5);
	amp_optimizer_free(opt);
	amp_tensor_free(p);
}
END_TEST

START_TEST(test_sgd_checks)
{
	amp_tensor *p = PARAM(1.0);
	amp_tensor *two = amp_mul_scalar(p, 2.0);

	ck_assert_ptr_null(amp_sgd_new(&p, 1, -0.1, 0, 0, 0, false));
	ck_assert_str_eq(amp_last_error(), "Invalid learning rate: -0.1");
	ck_assert_ptr_null(amp_sgd_new(&p, 1, 0.1, -1, 0, 0, false));
	ck_assert_str_eq(amp_last_error(), "Invalid momentum value: -1.0");
	ck_assert_ptr_null(amp_sgd_new(&p, 1, 0.1, 0, 0, -1e-5, false));
	ck_assert_str_eq(amp_last_error(), "Invalid weight_decay value: -1e-05");
	ck_assert_ptr_null(amp_sgd_new(&p, 1, 0.1, 0.9, 0.1, 0, true));
	ck_assert_str_eq(amp_last_error(),
			 "Nesterov momentum requires a momentum and zero "
			 "dampening");
	ck_assert_ptr_null(amp_sgd_new(NULL, 0, 0.1, 0, 0, 0, false));
	ck_assert_str_eq(amp_last_error(), "optimizer got an empty parameter list");
	ck_assert_ptr_null(amp_sgd_new(&two, 1, 0.1, 0, 0, 0, false));
	ck_assert_str_eq(amp_last_error(), "can't optimize a non-leaf Tensor");
	amp_tensor_free(two);
	amp_tensor_free(p);
}
END_TEST

/* ----------------------------------------------------------------- Adam */

/* PyTorch's single-tensor Adam in f64, one parameter element. */
struct adam_reference {
	double p, m, v, vmax;
	int step;
};

static void adam_reference_step(struct adam_reference *r, double g,
				const struct amp_adam_opts *o, bool decoupled)
{
	r->step++;
	if (o->weight_decay != 0) {
		if (decoupled)
			r->p *= 1 - o->lr * o->weight_decay;
		else
			g += o->weight_decay * r->p;
	}
	r->m += (1 - o->beta1) * (g - r->m);
	r->v = o->beta2 * r->v + (1 - o->beta2) * g * g;
	r->vmax = r->v > r->vmax ? r->v : r->vmax;
	double bc1 = 1 - pow(o->beta1, r->step);
	double bc2 = 1 - pow(o->beta2, r->step);
	double v = o->amsgrad ? r->vmax : r->v;
	r->p -= o->lr / bc1 * r->m / (sqrt(v) / sqrt(bc2) + o->eps);
}

struct adam_case {
	const char *name;
	bool adamw;
	struct amp_adam_opts opts;
};

static const struct adam_case adam_cases[] = {
	{ "Adam", false, { 1e-3, 0.9, 0.999, 1e-8, 0.0, false } },
	{ "Adam", false, { 0.1, 0.8, 0.99, 1e-6, 0.1, false } },
	{ "AdamW", true, { 0.1, 0.9, 0.999, 1e-8, 0.5, false } },
	{ "Adam", false, { 0.05, 0.5, 0.9, 1e-8, 0.0, true } },
};

START_TEST(test_adam_against_reference)
{
	const struct adam_case *c = &adam_cases[_i];
	const double grads[4][2] = {
		{ 0.5, -2.0 }, { 0.25, 1.0 }, { -0.125, 0.01 }, { 0.0, 3.0 }
	};
	struct adam_reference ref[2] = { { .p = 1.0 }, { .p = -0.5 } };
	amp_tensor *p = PARAM(1.0, -0.5);
	amp_optimizer *opt = c->adamw ? amp_adamw_new(&p, 1, &c->opts)
				      : amp_adam_new(&p, 1, &c->opts);

	ck_assert_ptr_nonnull(opt);
	ck_assert_str_eq(amp_optimizer_name(opt), c->name);
	for (int step = 0; step < 4; step++) {
		SET_GRAD(p, grads[step][0], grads[step][1]);
		ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
		for (int i = 0; i < 2; i++) {
			adam_reference_step(&ref[i], grads[step][i], &c->opts,
					    c->adamw);
			ck_assert_double_eq_tol(at(p, i), ref[i].p,
						2e-6 * fabs(ref[i].p) + 1e-7);
		}
	}
	amp_optimizer_free(opt);
	amp_tensor_free(p);
}
END_TEST

/* One hand-computed Adam step: m = 0.1 g, v = 0.001 g^2, so the step is
 * lr * g / (|g| + eps): about lr * sign(g). */
START_TEST(test_adam_first_step)
{
	amp_tensor *p = PARAM(1.0, 1.0);
	amp_optimizer *opt = amp_adam_new(&p, 1, NULL);

	SET_GRAD(p, 4.0, -0.5);
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
	ck_assert_double_eq_tol(at(p, 0), 1.0 - 1e-3, 1e-7);
	ck_assert_double_eq_tol(at(p, 1), 1.0 + 1e-3, 1e-7);
	amp_optimizer_free(opt);
	amp_tensor_free(p);
}
END_TEST

START_TEST(test_adam_checks)
{
	amp_tensor *p = PARAM(1.0);
	struct amp_adam_opts o = AMP_ADAM_OPTS;

	o.beta1 = 1.0;
	ck_assert_ptr_null(amp_adam_new(&p, 1, &o));
	ck_assert_str_eq(amp_last_error(), "Invalid beta parameter at index 0: 1.0");
	o = AMP_ADAM_OPTS;
	o.beta2 = -0.5;
	ck_assert_ptr_null(amp_adam_new(&p, 1, &o));
	ck_assert_str_eq(amp_last_error(),
			 "Invalid beta parameter at index 1: -0.5");
	o = AMP_ADAM_OPTS;
	o.eps = -1e-8;
	ck_assert_ptr_null(amp_adamw_new(&p, 1, &o));
	ck_assert_str_eq(amp_last_error(), "Invalid epsilon value: -1e-08");
	o = AMP_ADAM_OPTS;
	o.lr = NAN;
	ck_assert_ptr_null(amp_adam_new(&p, 1, &o));
	ck_assert_str_eq(amp_last_error(), "Invalid learning rate: nan");
	o = AMP_ADAM_OPTS;
	o.weight_decay = -2;
	ck_assert_ptr_null(amp_adam_new(&p, 1, &o));
	ck_assert_str_eq(amp_last_error(), "Invalid weight_decay value: -2.0");
	amp_tensor_free(p);
}
END_TEST

/* The step is made of dispatched in-place ops, in PyTorch's order, never
 * autocast (policy none even inside a region). */
START_TEST(test_step_ops_are_traced)
{
	struct event_log *log = calloc(1, sizeof *log);
	amp_tensor *p = PARAM(1.0, 2.0);
	amp_optimizer *adam = amp_adam_new(&p, 1, NULL);
	amp_optimizer *sgd = sgd_with(p, 0.1, 0.9, 0, 0, false);
	char ops[512];

	SET_GRAD(p, 1.0, 1.0);
	ck_assert_int_eq(amp_optimizer_step(sgd), AMP_OK); /* creates buf */
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU));
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_END), log_event, log);
	ck_assert_int_eq(amp_optimizer_step(sgd), AMP_OK);
	ck_assert_str_eq(op_sequence(log, ops, sizeof ops), "mul_ add_ add_");
	log->nops = 0;
	ck_assert_int_eq(amp_optimizer_step(adam), AMP_OK);
	amp_hook_remove(hook);
	amp_autocast_exit();
	ck_assert_str_eq(op_sequence(log, ops, sizeof ops),
			 "scalar_tensor zeros zeros add_ lerp_ mul_ addcmul_ "
			 "sqrt div_ add_ addcdiv_");
	for (int i = 0; i < log->nops; i++)
		ck_assert_int_eq(log->policy[i], AMP_POLICY_NONE);
	ck_assert_int_eq(amp_tensor_dtype(p), AMP_DTYPE_F32);
	amp_optimizer_free(adam);
	amp_optimizer_free(sgd);
	amp_tensor_free(p);
	free(log);
}
END_TEST

/* ------------------------------------------------------------- clipping */

START_TEST(test_clip_grad_norm)
{
	amp_tensor *a = PARAM(0.0, 0.0), *b = PARAM(0.0), *c = PARAM(0.0);
	amp_tensor *params[3] = { a, b, c };

	SET_GRAD(a, 3.0, 4.0);
	SET_GRAD(b, 12.0); /* c has no gradient: skipped */
	amp_tensor *total = amp_clip_grad_norm_(params, 3, 6.5, 2.0, false);
	ck_assert_ptr_nonnull(total);
	ck_assert_double_eq(amp_tensor_item(total), 13.0);
	ck_assert_int_eq(amp_tensor_ndim(total), 0);
	/* coef = clamp(reciprocal(13 + 1e-6) * 6.5, max=1), all in f32 */
	float coef = (float)6.5 * (1.0f / (13.0f + (float)1e-6));
	ck_assert((float)grad_at(a, 0) == 3.0f * coef);
	ck_assert((float)grad_at(b, 0) == 12.0f * coef);
	ck_assert_ptr_null(amp_tensor_grad(c));
	amp_tensor_free(total);

	/* under the threshold the coefficient clamps to 1: unchanged */
	double before = grad_at(a, 1);
	total = amp_clip_grad_norm_(params, 3, 100.0, 2.0, false);
	ck_assert(grad_at(a, 1) == before);
	amp_tensor_free(total);

	/* the inf norm is the largest magnitude */
	SET_GRAD(a, -7.0, 1.0);
	SET_GRAD(b, 2.0);
	total = amp_clip_grad_norm_(params, 3, 3.5, INFINITY, false);
	ck_assert_double_eq(amp_tensor_item(total), 7.0);
	ck_assert_double_eq_tol(grad_at(a, 0), -3.5, 1e-5);
	amp_tensor_free(total);

	/* no gradients at all: a zero norm */
	amp_tensor *none = amp_clip_grad_norm_(&c, 1, 1.0, 2.0, false);
	ck_assert_double_eq(amp_tensor_item(none), 0.0);
	amp_tensor_free(none);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(c);
}
END_TEST

START_TEST(test_clip_grad_norm_nonfinite)
{
	amp_tensor *a = PARAM(0.0, 0.0);

	SET_GRAD(a, INFINITY, 1.0);
	ck_assert_ptr_null(amp_clip_grad_norm_(&a, 1, 1.0, 2.0, true));
	ck_assert_str_eq(amp_last_error(),
			 "The total norm of order 2.0 for gradients from "
			 "`parameters` is non-finite, so it cannot be clipped. "
			 "To disable this error and scale the gradients by the "
			 "non-finite norm anyway, set `error_if_nonfinite=False`");
	ck_assert_double_eq(grad_at(a, 1), 1.0);
	/* without the check the gradients are scaled by 1/inf */
	amp_tensor *total = amp_clip_grad_norm_(&a, 1, 1.0, 2.0, false);
	ck_assert(isinf(amp_tensor_item(total)));
	ck_assert_double_eq(grad_at(a, 1), 0.0);
	amp_tensor_free(total);
	amp_tensor_free(a);
}
END_TEST

START_TEST(test_clip_grad_value)
{
	amp_tensor *a = PARAM(0.0, 0.0, 0.0, 0.0);

	SET_GRAD(a, -3.0, 0.25, 2.0, NAN);
	ck_assert_int_eq(amp_clip_grad_value_(&a, 1, 1.0), AMP_OK);
	ck_assert_double_eq(grad_at(a, 0), -1.0);
	ck_assert_double_eq(grad_at(a, 1), 0.25);
	ck_assert_double_eq(grad_at(a, 2), 1.0);
	ck_assert(isnan(grad_at(a, 3)));
	amp_tensor_free(a);
}
END_TEST

/* ------------------------------------------------------ in-place ops */

START_TEST(test_inplace_ops)
{
	amp_tensor *x = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1.0, 2.0);
	amp_tensor *y = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 4.0, 8.0);
	amp_tensor *half = VEC(AMP_DTYPE_F16, AMP_DEVICE_CPU, 0.5, 0.25);
	amp_tensor *row = amp_scalar_tensor(2.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	uint64_t v0 = amp_tensor_version(x);

	ck_assert_int_eq(amp_add_(x, y, 0.5), AMP_OK); /* [3, 6] */
	ck_assert_uint_eq(amp_tensor_version(x), v0 + 1);
	ck_assert_int_eq(amp_mul_(x, row), AMP_OK); /* broadcast: [6, 12] */
	ck_assert_int_eq(amp_addcmul_(x, y, half, 2.0), AMP_OK); /* [10, 16] */
	ck_assert_int_eq(amp_addcdiv_(x, y, half, -0.5), AMP_OK); /* [6, 0] */
	ck_assert_double_eq(at(x, 0), 6.0);
	ck_assert_double_eq(at(x, 1), 0.0);
	ck_assert_int_eq(amp_lerp_(x, y, 0.25), AMP_OK); /* [5.5, 2] */
	ck_assert_double_eq(at(x, 0), 5.5);
	ck_assert_double_eq(at(x, 1), 2.0);
	ck_assert_int_eq(amp_lerp_(x, y, 0.75), AMP_OK); /* [4.375, 6.5] */
	ck_assert_double_eq(at(x, 0), 4.375);
	ck_assert_double_eq(at(x, 1), 6.5);
	ck_assert_int_eq(amp_clamp_(x, NAN, 5.0), AMP_OK);
	ck_assert_double_eq(at(x, 1), 5.0);
	ck_assert_int_eq(amp_maximum_out(x, y, x), AMP_OK); /* [4.375, 8] */
	ck_assert_double_eq(at(x, 1), 8.0);
	ck_assert_int_eq(amp_fill_(x, 0.1), AMP_OK);
	ck_assert(at(x, 0) == (double)0.1f);
	ck_assert_int_eq(amp_copy_(half, y), AMP_OK);
	ck_assert_double_eq(at(half, 1), 8.0);
	ck_assert_int_eq(amp_tensor_dtype(half), AMP_DTYPE_F16);

	/* the written tensor keeps its shape and dtype */
	amp_tensor *three = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1.0, 2.0, 3.0);
	ck_assert_int_eq(amp_add_(x, three, 1.0), AMP_ERR_INVALID);
	amp_tensor *longs = VEC(AMP_DTYPE_I64, AMP_DEVICE_CPU, 1.0, 2.0);
	ck_assert_int_eq(amp_add_(longs, x, 1.0), AMP_ERR_DTYPE);
	ck_assert_ptr_nonnull(strstr(amp_last_error(),
				     "result type Float can't be cast to the "
				     "desired output type Long"));
	amp_tensor *all[] = { x, y, half, row, three, longs };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		amp_tensor_free(all[i]);
}
END_TEST

/* maximum.out whose out is its second operand (out=other): out's old
 * values are still read as `other`, not overwritten by self first. */
START_TEST(test_maximum_out_aliases_other)
{
	amp_tensor *a = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1.0, 5.0, NAN);
	amp_tensor *b = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 3.0, 2.0, 0.0);

	ck_assert_int_eq(amp_maximum_out(a, b, b), AMP_OK);
	ck_assert_double_eq(at(b, 0), 3.0);
	ck_assert_double_eq(at(b, 1), 5.0);
	ck_assert(isnan(at(b, 2)));
	amp_tensor_free(a);
	amp_tensor_free(b);
}
END_TEST

/* With grad mode on, PyTorch refuses in-place updates of a leaf that
 * requires grad; optimizers therefore run with grad mode off. */
START_TEST(test_inplace_leaf_check)
{
	amp_tensor *p = PARAM(1.0);
	amp_tensor *g = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1.0);

	ck_assert_error(amp_add_(p, g, 1.0), AMP_ERR_STATE,
			"a leaf Variable that requires grad is being used in an "
			"in-place operation.");
	ck_assert_double_eq(at(p, 0), 1.0);
	bool mode = amp_set_grad_enabled(false);
	ck_assert_int_eq(amp_add_(p, g, 1.0), AMP_OK);
	amp_set_grad_enabled(mode);
	ck_assert_double_eq(at(p, 0), 2.0);
	ck_assert(amp_tensor_requires_grad(p) && amp_tensor_is_leaf(p));
	amp_tensor_free(p);
	amp_tensor_free(g);
}
END_TEST

/* Inside one autocast region the cached bf16 copy of a weight survives an
 * optimizer step: the next use hits the cache with a stale copy. */
static void record_cast(const struct amp_event *e, void *user)
{
	int *stale = user;

	if (e->kind == AMP_EVENT_CAST && e->cast.cache == AMP_CACHE_HIT)
		*stale = e->cast.stale ? 1 : 2;
}

START_TEST(test_step_inside_region_leaves_cache_stale)
{
	int64_t shape[2] = { 2, 2 }, row_shape[2] = { 1, 2 };
	amp_tensor *w = amp_full(2, shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *x = amp_full(2, row_shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *g = amp_full(2, shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	int hit = 0;

	ck_assert_int_eq(amp_tensor_set_requires_grad(w, true), AMP_OK);
	amp_optimizer *opt = sgd_with(w, 1.0, 0, 0, 0, false);
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_CAST), record_cast, &hit);
	amp_autocast_enter(&AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU));
	amp_tensor *before = amp_mm(x, w);
	ck_assert_int_eq(amp_tensor_set_grad(w, g), AMP_OK);
	ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK); /* w = 0 */
	amp_tensor *after = amp_mm(x, w);
	amp_autocast_exit();
	amp_hook_remove(hook);
	ck_assert_int_eq(hit, 1); /* a hit on a stale copy */
	ck_assert_double_eq(at(before, 0), 2.0);
	ck_assert_double_eq(at(after, 0), 2.0); /* PyTorch does not notice */
	amp_tensor *fresh = amp_mm(x, w);
	ck_assert_double_eq(at(fresh, 0), 0.0);
	amp_tensor *all[] = { w, x, g, before, after, fresh };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		amp_tensor_free(all[i]);
	amp_optimizer_free(opt);
}
END_TEST

static Suite *optim_suite(void)
{
	Suite *suite = suite_create("optim");
	TCase *tc = tcase_create("optim");

	tcase_add_test(tc, test_sgd_plain);
	tcase_add_test(tc, test_sgd_momentum_dampening);
	tcase_add_test(tc, test_sgd_weight_decay_nesterov);
	tcase_add_test(tc, test_sgd_checks);
	tcase_add_loop_test(tc, test_adam_against_reference, 0,
			    sizeof adam_cases / sizeof adam_cases[0]);
	tcase_add_test(tc, test_adam_first_step);
	tcase_add_test(tc, test_adam_checks);
	tcase_add_test(tc, test_step_ops_are_traced);
	tcase_add_test(tc, test_clip_grad_norm);
	tcase_add_test(tc, test_clip_grad_norm_nonfinite);
	tcase_add_test(tc, test_clip_grad_value);
	tcase_add_test(tc, test_inplace_ops);
	tcase_add_test(tc, test_maximum_out_aliases_other);
	tcase_add_test(tc, test_inplace_leaf_check);
	tcase_add_test(tc, test_step_inside_region_leaves_cache_stale);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(optim_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
