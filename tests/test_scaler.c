/* GradScaler against hand-computed sequences: the fused non-finite check
 * and unscale, the scale update (tracker incremented before the interval
 * test, growth kept only if finite, f64 products), the per-optimizer
 * READY/UNSCALED/STEPPED state machine with PyTorch's texts, an injected
 * inf (step skipped, parameters bitwise unchanged, scale halved, tracker
 * reset), update(new_scale), state save/load, the disabled mode and the
 * hook events. */
#include "train_helpers.h"

#include <math.h>
#include <stdlib.h>

static amp_grad_scaler *scaler_with(double init_scale, int64_t interval)
{
	struct amp_grad_scaler_opts opts = AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CPU);

	opts.init_scale = init_scale;
	opts.growth_interval = interval;
	amp_grad_scaler *s = amp_grad_scaler_new(&opts);
	ck_assert_ptr_nonnull(s);
	return s;
}

/* scaler.scale(loss) for a throw-away loss: what starts the scaler. */
static void scale_a_loss(amp_grad_scaler *s)
{
	amp_tensor *loss = amp_scalar_tensor(1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *scaled = amp_grad_scaler_scale(s, loss);

	ck_assert_ptr_nonnull(scaled);
	amp_tensor_free(scaled);
	amp_tensor_free(loss);
}

static amp_optimizer *sgd(amp_tensor *param, double lr)
{
	amp_optimizer *opt = amp_sgd_new(&param, 1, lr, 0, 0, 0, false);

	ck_assert_ptr_nonnull(opt);
	return opt;
}

/* ------------------------------------------------------------- defaults */

START_TEST(test_defaults_and_lazy_init)
{
	amp_grad_scaler *s = amp_grad_scaler_new(NULL);

	ck_assert_ptr_nonnull(s);
	ck_assert(amp_grad_scaler_is_enabled(s));
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 65536.0);
	ck_assert_double_eq(amp_grad_scaler_get_growth_factor(s), 2.0);
	ck_assert_double_eq(amp_grad_scaler_get_backoff_factor(s), 0.5);
	ck_assert_int_eq(amp_grad_scaler_get_growth_interval(s), 2000);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 0);
	ck_assert_ptr_null(amp_grad_scaler_scale_tensor(s));

	/* the scale is created on the first output's device */
	amp_tensor *loss = amp_scalar_tensor(0.5, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *scaled = amp_grad_scaler_scale(s, loss);
	ck_assert_double_eq(amp_tensor_item(scaled), 32768.0);
	amp_tensor *scale = amp_grad_scaler_scale_tensor(s);
	amp_tensor *tracker = amp_grad_scaler_growth_tracker_tensor(s);
	ck_assert_int_eq(amp_tensor_ndim(scale), 0);
	ck_assert_int_eq(amp_tensor_dtype(scale), AMP_DTYPE_F32);
	ck_assert_int_eq(amp_tensor_device(scale), AMP_DEVICE_CPU);
	ck_assert_int_eq(amp_tensor_ndim(tracker), 0);
	ck_assert_int_eq(amp_tensor_dtype(tracker), AMP_DTYPE_I32);
	amp_tensor_free(scaled);
	amp_tensor_free(loss);
	amp_grad_scaler_free(s);
	amp_grad_scaler_free(NULL);
}
END_TEST

/* get_scale() is init_scale itself before the first scale(), the f32
 * tensor's value after. */
START_TEST(test_get_scale_before_and_after_init)
{
	amp_grad_scaler *s = scaler_with(0.1, 2000);

	ck_assert(amp_grad_scaler_get_scale(s) == 0.1);
	scale_a_loss(s);
	ck_assert(amp_grad_scaler_get_scale(s) == (double)(float)0.1);
	amp_grad_scaler_free(s);
}
END_TEST

/* With the 0-dim scale, a dimensioned f16 output stays f16 and a 0-dim
 * bf16 loss becomes f32 (ordinary promotion). */
START_TEST(test_scale_result_dtypes)
{
	amp_grad_scaler *s = scaler_with(4.0, 2000);
	amp_tensor *outputs = VEC(AMP_DTYPE_F16, AMP_DEVICE_CPU, 1.5, -2.0);
	amp_tensor *loss = amp_scalar_tensor(0.25, AMP_DTYPE_BF16, AMP_DEVICE_CPU);
	amp_tensor *a = amp_grad_scaler_scale(s, outputs);
	amp_tensor *b = amp_grad_scaler_scale(s, loss);

	ck_assert_int_eq(amp_tensor_dtype(a), AMP_DTYPE_F16);
	ck_assert_double_eq(at(a, 0), 6.0);
	ck_assert_double_eq(at(a, 1), -8.0);
	ck_assert_int_eq(amp_tensor_dtype(b), AMP_DTYPE_F32);
	ck_assert_double_eq(amp_tensor_item(b), 1.0);
	amp_tensor *list[2] = { outputs, loss }, *scaled[2];
	ck_assert_int_eq(amp_grad_scaler_scale_list(s, list, 2, scaled), AMP_OK);
	ck_assert_double_eq(at(scaled[0], 1), -8.0);
	ck_assert_double_eq(amp_tensor_item(scaled[1]), 1.0);
	for (int i = 0; i < 2; i++)
		amp_tensor_free(scaled[i]);
	amp_tensor_free(a);
	amp_tensor_free(b);
	amp_tensor_free(outputs);
	amp_tensor_free(loss);
	amp_grad_scaler_free(s);
}
END_TEST

START_TEST(test_constructor_checks)
{
	struct amp_grad_scaler_opts opts = AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CUDA);

	opts.growth_factor = 1.0;
	ck_assert_ptr_null(amp_grad_scaler_new(&opts));
	ck_assert_str_eq(amp_last_error(), "The growth factor must be > 1.0.");
	opts.growth_factor = 2.0;
	opts.backoff_factor = 1.0;
	ck_assert_ptr_null(amp_grad_scaler_new(&opts));
	ck_assert_str_eq(amp_last_error(), "The backoff factor must be < 1.0.");
	/* a disabled scaler checks nothing */
	opts.enabled = false;
	amp_grad_scaler *s = amp_grad_scaler_new(&opts);
	ck_assert_ptr_nonnull(s);
	amp_grad_scaler_free(s);
	/* torch 1.13.1 checks only those two: GradScaler(init_scale=0, nan,
	 * inf or -1) is accepted, and so are its setters' values */
	const double scales[] = { 0.0, NAN, INFINITY, -1.0 };
	opts = AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CPU);
	for (size_t i = 0; i < sizeof scales / sizeof *scales; i++) {
		opts.init_scale = scales[i];
		s = amp_grad_scaler_new(&opts);
		ck_assert_ptr_nonnull(s);
		amp_grad_scaler_set_growth_factor(s, 0.5);
		amp_grad_scaler_set_backoff_factor(s, NAN);
		amp_grad_scaler_set_growth_interval(s, -1);
		ck_assert(isnan(amp_grad_scaler_get_backoff_factor(s)));
		amp_grad_scaler_free(s);
	}
}
END_TEST

/* init_scale 0 as in torch: the scaled gradients (0) are checked before
 * they are unscaled (0 * inf = NaN), so found_inf stays 0, the step is
 * taken and the weights become NaN (_amp_foreach_non_finite_check_and_
 * unscale_'s order). */
START_TEST(test_zero_init_scale_like_torch)
{
	amp_grad_scaler *s = scaler_with(0.0, 2000);
	amp_tensor *p = PARAM(1.0, 2.0);
	amp_optimizer *opt = sgd(p, 0.5);
	bool stepped = false;

	scale_a_loss(s);
	SET_GRAD(p, 0.0, 0.0);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, &stepped), AMP_OK);
	ck_assert(stepped);
	ck_assert(isnan(at(p, 0)) && isnan(at(p, 1)));
	amp_tensor_free(p);
	amp_optimizer_free(opt);
	amp_grad_scaler_free(s);
}
END_TEST

/* ----------------------------------------------------- the fused kernel */

START_TEST(test_unscale_kernel_arithmetic)
{
	amp_tensor *g1 = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 8.0, -4.0, 2.0);
	amp_tensor *g2 = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1.0, 3.0);
	amp_tensor *found = amp_scalar_tensor(0.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *inv = amp_scalar_tensor(0.25, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *grads[2] = { g1, g2 };
	uint64_t version = amp_tensor_version(g1);

	ck_assert_int_eq(amp_non_finite_check_and_unscale_(grads, 2, found, inv),
			 AMP_OK);
	ck_assert_double_eq(at(g1, 0), 2.0);
	ck_assert_double_eq(at(g1, 1), -1.0);
	ck_assert_double_eq(at(g2, 1), 0.75);
	ck_assert_double_eq(amp_tensor_item(found), 0.0);
	ck_assert_uint_gt(amp_tensor_version(g1), version);

	/* inf and NaN set found_inf; everything is unscaled anyway */
	amp_tensor *bad = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 4.0, INFINITY, NAN);
	ck_assert_int_eq(amp_non_finite_check_and_unscale_(&bad, 1, found, inv),
			 AMP_OK);
	ck_assert_double_eq(amp_tensor_item(found), 1.0);
	ck_assert_double_eq(at(bad, 0), 1.0);
	ck_assert(isinf(at(bad, 1)));
	ck_assert(isnan(at(bad, 2)));

	/* found_inf is only ever set: finite grads leave 1.0 alone */
	ck_assert_int_eq(amp_non_finite_check_and_unscale_(grads, 2, found, inv),
			 AMP_OK);
	ck_assert_double_eq(amp_tensor_item(found), 1.0);
	ck_assert_double_eq(at(g1, 0), 0.5);

	/* an empty list is a no-op, whatever the other arguments */
	amp_tensor *wide = VEC(AMP_DTYPE_F64, AMP_DEVICE_CPU, 1.0, 2.0);
	ck_assert_int_eq(amp_non_finite_check_and_unscale_(NULL, 0, wide, wide),
			 AMP_OK);
	amp_tensor_free(wide);
	amp_tensor_free(bad);
	amp_tensor_free(g1);
	amp_tensor_free(g2);
	amp_tensor_free(found);
	amp_tensor_free(inv);
}
END_TEST

/* Low-precision grads are unscaled in f32 and rounded once; inv_scale 1
 * skips the multiply; f64 grads multiply in f64. */
START_TEST(test_unscale_kernel_dtypes)
{
	amp_tensor *found = amp_scalar_tensor(0.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *third = amp_scalar_tensor(1.0 / 3.0, AMP_DTYPE_F32,
					      AMP_DEVICE_CPU);
	amp_tensor *bf = VEC(AMP_DTYPE_BF16, AMP_DEVICE_CPU, 3.0, 65280.0);
	amp_tensor *f64 = VEC(AMP_DTYPE_F64, AMP_DEVICE_CPU, 3.0);
	amp_tensor *one = amp_scalar_tensor(1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *tiny = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1e-45);

	ck_assert_int_eq(amp_non_finite_check_and_unscale_(&bf, 1, found, third),
			 AMP_OK);
	float f32_third = (float)(1.0 / 3.0);
	ck_assert_double_eq(at(bf, 0),
			    amp_bf16_to_f32(amp_f32_to_bf16(3.0f * f32_third)));
	ck_assert_int_eq(amp_non_finite_check_and_unscale_(&f64, 1, found, third),
			 AMP_OK);
	ck_assert(at(f64, 0) == 3.0 * (double)f32_third);
	ck_assert_int_eq(amp_non_finite_check_and_unscale_(&tiny, 1, found, one),
			 AMP_OK);
	ck_assert(at(tiny, 0) == (double)1e-45f);
	ck_assert_double_eq(amp_tensor_item(found), 0.0);
	amp_tensor_free(found);
	amp_tensor_free(third);
	amp_tensor_free(bf);
	amp_tensor_free(f64);
	amp_tensor_free(one);
	amp_tensor_free(tiny);
}
END_TEST

START_TEST(test_unscale_kernel_checks)
{
	amp_tensor *g = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1.0);
	amp_tensor *found = amp_scalar_tensor(0.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *inv = amp_scalar_tensor(1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *two = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1.0, 1.0);
	amp_tensor *wide = amp_scalar_tensor(0.0, AMP_DTYPE_F64, AMP_DEVICE_CPU);
	amp_tensor *cuda_inv = amp_scalar_tensor(1.0, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor *cuda_bf16 = VEC(AMP_DTYPE_BF16, AMP_DEVICE_CUDA, 1.0);
	amp_tensor *cuda_found = amp_scalar_tensor(0.0, AMP_DTYPE_F32,
						   AMP_DEVICE_CUDA);
	amp_tensor *ints = VEC(AMP_DTYPE_I64, AMP_DEVICE_CPU, 1.0);

	ck_assert_error(amp_non_finite_check_and_unscale_(&g, 1, found, two),
			AMP_ERR_INVALID, "inv_scale must be a 1-element tensor.");
	ck_assert_error(amp_non_finite_check_and_unscale_(&g, 1, two, inv),
			AMP_ERR_INVALID, "found_inf must be a 1-element tensor.");
	ck_assert_error(amp_non_finite_check_and_unscale_(&g, 1, wide, inv),
			AMP_ERR_DTYPE, "found_inf must be a float tensor.");
	ck_assert_error(amp_non_finite_check_and_unscale_(&g, 1, found, wide),
			AMP_ERR_DTYPE, "inv_scale must be a float tensor.");
	/* a CUDA argument selects the CUDA kernel, which checks devices */
	ck_assert_error(amp_non_finite_check_and_unscale_(&g, 1, found, cuda_inv),
			AMP_ERR_DEVICE, "found_inf must be a CUDA tensor.");
	ck_assert_error(
		amp_non_finite_check_and_unscale_(&g, 1, cuda_found, cuda_inv),
		AMP_ERR_DEVICE, "one of scaled_grads was not a CUDA tensor.");
	/* CUDA's kernel has no bf16 case, the CPU one has */
	ck_assert_int_eq(amp_non_finite_check_and_unscale_(&cuda_bf16, 1,
							   cuda_found, cuda_inv),
			 AMP_ERR_UNSUPPORTED);
	ck_assert_ptr_nonnull(strstr(amp_last_error(),
				     "\"_amp_foreach_non_finite_check_and_unscale_"
				     "cuda\" not implemented for 'BFloat16'"));
	ck_assert_int_eq(amp_non_finite_check_and_unscale_(&ints, 1, found, inv),
			 AMP_ERR_UNSUPPORTED);
	amp_tensor *all[] = { g, found, inv, two, wide, cuda_inv, cuda_bf16,
			      cuda_found, ints };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		amp_tensor_free(all[i]);
}
END_TEST

/* ----------------------------------------------------- the scale update */

struct update_case {
	float scale;
	int32_t tracker;
	float found_inf;
	double growth, backoff;
	int64_t interval;
	float want_scale;
	int32_t want_tracker;
};

static const struct update_case update_cases[] = {
	/* clean steps: the tracker is incremented before the test */
	{ 4.0f, 0, 0.0f, 2.0, 0.5, 3, 4.0f, 1 },
	{ 4.0f, 1, 0.0f, 2.0, 0.5, 3, 4.0f, 2 },
	{ 4.0f, 2, 0.0f, 2.0, 0.5, 3, 8.0f, 0 },
	{ 4.0f, 0, 0.0f, 2.0, 0.5, 1, 8.0f, 0 },
	/* an overflow backs off and resets, whatever the tracker */
	{ 4.0f, 2, 1.0f, 2.0, 0.5, 3, 2.0f, 0 },
	{ 4.0f, 0, 2.0f, 2.0, 0.5, 3, 2.0f, 0 }, /* a summed found_inf */
	/* growth that would overflow f32 is dropped, the tracker resets */
	{ 0x1p127f, 0, 0.0f, 2.0, 0.5, 1, 0x1p127f, 0 },
	/* no lower bound */
	{ 0x1p-149f, 5, 1.0f, 2.0, 0.5, 3, 0.0f, 0 },
	{ 0.75f, 0, 1.0f, 2.0, 0.5, 2000, 0.375f, 0 },
};

START_TEST(test_update_scale_table)
{
	const struct update_case *c = &update_cases[_i];
	amp_tensor *scale = amp_scalar_tensor(c->scale, AMP_DTYPE_F32,
					      AMP_DEVICE_CPU);
	amp_tensor *tracker = amp_scalar_tensor(c->tracker, AMP_DTYPE_I32,
						AMP_DEVICE_CPU);
	amp_tensor *found = amp_scalar_tensor(c->found_inf, AMP_DTYPE_F32,
					      AMP_DEVICE_CPU);

	ck_assert_int_eq(amp_update_scale_(scale, tracker, found, c->growth,
					   c->backoff, c->interval),
			 AMP_OK);
	ck_assert_float_eq((float)amp_tensor_item(scale), c->want_scale);
	ck_assert_int_eq((int)amp_tensor_item(tracker), c->want_tracker);
	amp_tensor_free(scale);
	amp_tensor_free(tracker);
	amp_tensor_free(found);
}
END_TEST

/* The products are f64 rounded once to f32: a factor rounded to f32
 * first would give 0.110000007 here instead of 0.109999999. */
START_TEST(test_update_scale_f64_products)
{
	amp_tensor *scale = amp_scalar_tensor(1.1, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *tracker = amp_scalar_tensor(0, AMP_DTYPE_I32, AMP_DEVICE_CPU);
	amp_tensor *found = amp_scalar_tensor(1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	float expect = (float)((double)1.1f * 0.1);

	ck_assert(expect != 1.1f * (float)0.1);
	ck_assert_int_eq(amp_update_scale_(scale, tracker, found, 2.0, 0.1, 5),
			 AMP_OK);
	ck_assert((float)amp_tensor_item(scale) == expect);
	amp_tensor_free(scale);
	amp_tensor_free(tracker);
	amp_tensor_free(found);
}
END_TEST

START_TEST(test_update_scale_checks)
{
	amp_tensor *scale = amp_scalar_tensor(1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *tracker = amp_scalar_tensor(0, AMP_DTYPE_I32, AMP_DEVICE_CPU);
	amp_tensor *found = amp_scalar_tensor(0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *f_tracker = amp_scalar_tensor(0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *d_scale = amp_scalar_tensor(1, AMP_DTYPE_F64, AMP_DEVICE_CPU);
	amp_tensor *two = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 0.0, 0.0);
	amp_tensor *cuda_scale = amp_scalar_tensor(1, AMP_DTYPE_F32,
						   AMP_DEVICE_CUDA);

	ck_assert_error(amp_update_scale_(scale, f_tracker, found, 2, 0.5, 10),
			AMP_ERR_DTYPE, "growth_tracker must be an int tensor.");
	ck_assert_error(amp_update_scale_(d_scale, tracker, found, 2, 0.5, 10),
			AMP_ERR_DTYPE, "current_scale must be a float tensor.");
	ck_assert_error(amp_update_scale_(scale, tracker, two, 2, 0.5, 10),
			AMP_ERR_INVALID, "found_inf must be a 1-element tensor.");
	ck_assert_error(amp_update_scale_(cuda_scale, tracker, found, 2, 0.5, 10),
			AMP_ERR_DEVICE, "growth_tracker must be a CUDA tensor.");
	amp_tensor *all[] = { scale, tracker, found, f_tracker, d_scale, two,
			      cuda_scale };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		amp_tensor_free(all[i]);
}
END_TEST

/* ------------------------------------------------ a training sequence */

/* init_scale 8, growth_interval 2, SGD lr 0.5 on p = [1, 2]: two clean
 * steps grow the scale to 16, then an injected inf skips the step, leaves
 * p bitwise unchanged, halves the scale and resets the tracker. */
START_TEST(test_sequence_with_injected_inf)
{
	struct event_log *log = calloc(1, sizeof *log);
	amp_grad_scaler *s = scaler_with(8.0, 2);
	amp_tensor *p = PARAM(1.0, 2.0);
	amp_optimizer *opt = sgd(p, 0.5);
	bool stepped;
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_SCALER), log_event, log);

	/* iteration 1: grads [8, 16] / 8 = [1, 2] */
	scale_a_loss(s);
	SET_GRAD(p, 8.0, 16.0);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, &stepped), AMP_OK);
	ck_assert(stepped);
	ck_assert_double_eq(grad_at(p, 0), 1.0);
	ck_assert_double_eq(at(p, 0), 0.5);
	ck_assert_double_eq(at(p, 1), 1.0);
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 8.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 1);

	/* iteration 2: the second clean step reaches the interval */
	scale_a_loss(s);
	SET_GRAD(p, 4.0, -8.0);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, &stepped), AMP_OK);
	ck_assert(stepped);
	ck_assert_double_eq(at(p, 0), 0.25);
	ck_assert_double_eq(at(p, 1), 1.5);
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 16.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 0);

	/* iteration 3: an inf */
	float before[2];
	ck_assert_int_eq(amp_tensor_read(p, AMP_DTYPE_F32, before, 2), AMP_OK);
	scale_a_loss(s);
	SET_GRAD(p, INFINITY, 1.0);
	amp_tensor *g = amp_tensor_grad(p);
	uint64_t bad_id = amp_tensor_id(g);
	amp_tensor_free(g);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, &stepped), AMP_OK);
	ck_assert(!stepped);
	float after[2];
	ck_assert_int_eq(amp_tensor_read(p, AMP_DTYPE_F32, after, 2), AMP_OK);
	ck_assert_int_eq(memcmp(before, after, sizeof before), 0);
	ck_assert_double_eq(grad_at(p, 1), 1.0 / 16.0); /* unscaled anyway */
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 8.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 0);
	amp_hook_remove(hook);

	/* events: scale, unscale, step, update per iteration */
	ck_assert_int_eq(log->nscaler, 12);
	const char *whats[4] = { "scale", "unscale", "step", "update" };
	for (int i = 0; i < 12; i++)
		ck_assert_str_eq(log->scaler[i].what, whats[i % 4]);
	ck_assert_double_eq(log->scaler[7].scale, 16.0); /* after growth */
	ck_assert(!log->scaler[6].step_skipped);
	ck_assert(log->scaler[9].found_inf);
	ck_assert_uint_eq(log->scaler[9].inf_tensor_id, bad_id);
	ck_assert_uint_eq(log->scaler[9].optimizer_id, amp_optimizer_id(opt));
	ck_assert(log->scaler[10].found_inf && log->scaler[10].step_skipped);
	ck_assert(log->scaler[11].found_inf);
	ck_assert_double_eq(log->scaler[11].scale, 8.0);
	ck_assert_uint_eq(log->scaler[11].scaler_id, amp_grad_scaler_id(s));

	amp_optimizer_free(opt);
	amp_tensor_free(p);
	amp_grad_scaler_free(s);
	free(log);
}
END_TEST

/* inv_scale = f32(1 / f64(scale)) and the gradient is multiplied by it in
 * f32: with scale 3 a gradient of 5 becomes 5 * f32(1/3), which is not
 * f32(5/3). */
START_TEST(test_inv_scale_rounding)
{
	amp_grad_scaler *s = scaler_with(3.0, 2000);
	amp_tensor *p = PARAM(0.0);
	amp_optimizer *opt = sgd(p, 1.0);
	float expect = 5.0f * (float)(1.0 / 3.0);

	ck_assert(expect != (float)(5.0 / 3.0));
	scale_a_loss(s);
	SET_GRAD(p, 5.0);
	ck_assert_int_eq(amp_grad_scaler_unscale_(s, opt), AMP_OK);
	ck_assert((float)grad_at(p, 0) == expect);
	amp_optimizer_free(opt);
	amp_tensor_free(p);
	amp_grad_scaler_free(s);
}
END_TEST

/* ----------------------------------------------------- state machine */

START_TEST(test_state_machine_errors)
{
	amp_grad_scaler *s = scaler_with(4.0, 2000);
	amp_tensor *p = PARAM(1.0);
	amp_optimizer *opt = sgd(p, 1.0);

	ck_assert_error(amp_grad_scaler_unscale_(s, opt), AMP_ERR_STATE,
			"Attempted unscale_ but _scale is None.  This may "
			"indicate your script did not use scaler.scale(loss or "
			"outputs) earlier in the iteration.");
	ck_assert_error(amp_grad_scaler_step(s, opt, NULL), AMP_ERR_STATE,
			"Attempted step but _scale is None.  This may indicate "
			"your script did not use scaler.scale(loss or outputs) "
			"earlier in the iteration.");
	ck_assert_error(amp_grad_scaler_update(s), AMP_ERR_STATE,
			"Attempted update but _scale is None.  This may "
			"indicate your script did not use scaler.scale(loss or "
			"outputs) earlier in the iteration.");
	scale_a_loss(s);
	ck_assert_error(amp_grad_scaler_update(s), AMP_ERR_STATE,
			"No inf checks were recorded prior to update.");
	/* no gradient at all: unscale_ records nothing */
	ck_assert_error(amp_grad_scaler_step(s, opt, NULL), AMP_ERR_STATE,
			"No inf checks were recorded for this optimizer.");
	ck_assert_int_eq(amp_grad_scaler_update_with(s, 4.0), AMP_OK);

	SET_GRAD(p, 8.0);
	ck_assert_int_eq(amp_grad_scaler_unscale_(s, opt), AMP_OK);
	ck_assert_error(amp_grad_scaler_unscale_(s, opt), AMP_ERR_STATE,
			"unscale_() has already been called on this optimizer "
			"since the last update().");
	/* step after unscale_ does not unscale again */
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, NULL), AMP_OK);
	ck_assert_double_eq(grad_at(p, 0), 2.0);
	ck_assert_double_eq(at(p, 0), -1.0);
	ck_assert_error(amp_grad_scaler_unscale_(s, opt), AMP_ERR_STATE,
			"unscale_() is being called after step().");
	ck_assert_error(amp_grad_scaler_step(s, opt, NULL), AMP_ERR_STATE,
			"step() has already been called since the last "
			"update().");
	/* update makes every optimizer READY again */
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	ck_assert_int_eq(amp_grad_scaler_unscale_(s, opt), AMP_OK);
	ck_assert_double_eq(grad_at(p, 0), 0.5);
	amp_optimizer_free(opt);
	amp_tensor_free(p);
	amp_grad_scaler_free(s);
}
END_TEST

START_TEST(test_fp16_grads_refused)
{
	amp_grad_scaler *s = scaler_with(4.0, 2000);
	amp_tensor *p = VEC(AMP_DTYPE_F16, AMP_DEVICE_CPU, 1.0);
	amp_optimizer *opt;

	ck_assert_int_eq(amp_tensor_set_requires_grad(p, true), AMP_OK);
	opt = sgd(p, 1.0);
	scale_a_loss(s);
	SET_GRAD(p, 1.0);
	ck_assert_error(amp_grad_scaler_unscale_(s, opt), AMP_ERR_DTYPE,
			"Attempting to unscale FP16 gradients.");
	amp_optimizer_free(opt);
	amp_tensor_free(p);
	amp_grad_scaler_free(s);
}
END_TEST

/* Two optimizers decide independently; update sums their found_inf. */
START_TEST(test_two_optimizers_one_update)
{
	amp_grad_scaler *s = scaler_with(2.0, 2000);
	amp_tensor *p0 = PARAM(1.0), *p1 = PARAM(1.0);
	amp_optimizer *opt0 = sgd(p0, 1.0), *opt1 = sgd(p1, 1.0);
	bool stepped0, stepped1;

	scale_a_loss(s);
	SET_GRAD(p0, 2.0);
	SET_GRAD(p1, NAN);
	ck_assert_int_eq(amp_grad_scaler_unscale_(s, opt0), AMP_OK);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt0, &stepped0), AMP_OK);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt1, &stepped1), AMP_OK);
	ck_assert(stepped0 && !stepped1);
	ck_assert_double_eq(at(p0, 0), 0.0);
	ck_assert_double_eq(at(p1, 0), 1.0);
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 1.0);
	amp_optimizer_free(opt0);
	amp_optimizer_free(opt1);
	amp_tensor_free(p0);
	amp_tensor_free(p1);
	amp_grad_scaler_free(s);
}
END_TEST

/* ------------------------------------------------ update(new_scale) */

START_TEST(test_update_with_new_scale)
{
	amp_grad_scaler *s = scaler_with(4.0, 2000);
	amp_tensor *p = PARAM(1.0);
	amp_optimizer *opt = sgd(p, 1.0);
	char reason[160];

	scale_a_loss(s);
	SET_GRAD(p, 4.0);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, NULL), AMP_OK);
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 1);

	/* a float: the scale is set, the tracker is left alone */
	ck_assert_int_eq(amp_grad_scaler_update_with(s, 1024.0), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 1024.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 1);

	/* a tensor: on the scaler's device type, 1 element, no grad; the
	 * message keeps the 20 spaces of Python's line continuation */
	snprintf(reason, sizeof reason,
		 "new_scale should be a float or a 1-element "
		 "torch.cuda.FloatTensor or %20storch.FloatTensor with "
		 "requires_grad=False.",
		 "");
	amp_tensor *cuda = amp_scalar_tensor(2.0, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor *two = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 2.0, 2.0);
	amp_tensor *grad = PARAM(2.0);
	amp_tensor *good = amp_scalar_tensor(512.0, AMP_DTYPE_F64, AMP_DEVICE_CPU);
	ck_assert_error(amp_grad_scaler_update_with_tensor(s, cuda),
			AMP_ERR_INVALID, reason);
	ck_assert_error(amp_grad_scaler_update_with_tensor(s, two),
			AMP_ERR_INVALID, reason);
	ck_assert_error(amp_grad_scaler_update_with_tensor(s, grad),
			AMP_ERR_INVALID, reason);
	ck_assert_int_eq(amp_grad_scaler_update_with_tensor(s, good), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 512.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 1);
	amp_tensor *all[] = { cuda, two, grad, good, p };
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		amp_tensor_free(all[i]);
	amp_optimizer_free(opt);
	amp_grad_scaler_free(s);
}
END_TEST

/* ------------------------------------------------------ state dicts */

START_TEST(test_state_save_load)
{
	amp_grad_scaler *s = scaler_with(4.0, 3);
	amp_tensor *p = PARAM(1.0);
	amp_optimizer *opt = sgd(p, 1.0);
	struct amp_grad_scaler_state state;

	scale_a_loss(s);
	SET_GRAD(p, 4.0);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, NULL), AMP_OK);
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	amp_grad_scaler_set_growth_factor(s, 4.0);
	amp_grad_scaler_state_dict(s, &state);
	ck_assert(!state.empty);
	ck_assert_double_eq(state.scale, 4.0);
	ck_assert_double_eq(state.growth_factor, 4.0);
	ck_assert_double_eq(state.backoff_factor, 0.5);
	ck_assert_int_eq(state.growth_interval, 3);
	ck_assert_int_eq(state.growth_tracker, 1);

	/* into a fresh scaler: the values become the lazy init values */
	amp_grad_scaler *fresh = scaler_with(65536.0, 2000);
	ck_assert_int_eq(amp_grad_scaler_load_state_dict(fresh, &state), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(fresh), 4.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(fresh), 1);
	scale_a_loss(fresh);
	ck_assert_double_eq(amp_tensor_item(amp_grad_scaler_scale_tensor(fresh)),
			    4.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(fresh), 1);
	ck_assert_double_eq(amp_grad_scaler_get_growth_factor(fresh), 4.0);
	ck_assert_int_eq(amp_grad_scaler_get_growth_interval(fresh), 3);

	/* into a started scaler: its tensors are filled */
	state.scale = 32.0;
	state.growth_tracker = 2;
	ck_assert_int_eq(amp_grad_scaler_load_state_dict(s, &state), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 32.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 2);

	/* a disabled scaler saves {} and ignores loads */
	struct amp_grad_scaler_opts off = AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CPU);
	off.enabled = false;
	amp_grad_scaler *disabled = amp_grad_scaler_new(&off);
	struct amp_grad_scaler_state empty;
	amp_grad_scaler_state_dict(disabled, &empty);
	ck_assert(empty.empty);
	ck_assert_int_eq(amp_grad_scaler_load_state_dict(disabled, &state),
			 AMP_OK);
	ck_assert_error(amp_grad_scaler_load_state_dict(s, &empty),
			AMP_ERR_STATE,
			"The source state dict is empty, possibly because it "
			"was saved from a disabled instance of GradScaler.");
	amp_grad_scaler_free(disabled);
	amp_grad_scaler_free(fresh);
	amp_optimizer_free(opt);
	amp_tensor_free(p);
	amp_grad_scaler_free(s);
}
END_TEST

/* ---------------------------------------------------------- disabled */

START_TEST(test_disabled_scaler)
{
	struct amp_grad_scaler_opts opts = AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CPU);
	opts.enabled = false;
	amp_grad_scaler *s = amp_grad_scaler_new(&opts);
	amp_tensor *p = PARAM(1.0);
	amp_optimizer *opt = sgd(p, 1.0);
	amp_tensor *loss = amp_scalar_tensor(3.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	bool stepped = false;

	ck_assert(!amp_grad_scaler_is_enabled(s));
	amp_tensor *same = amp_grad_scaler_scale(s, loss);
	ck_assert_ptr_eq(same, loss);
	amp_tensor_free(same);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 1.0);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 0);
	SET_GRAD(p, INFINITY);
	ck_assert_int_eq(amp_grad_scaler_unscale_(s, opt), AMP_OK);
	ck_assert(isinf(grad_at(p, 0)));
	/* step is a plain optimizer step: nothing is checked */
	SET_GRAD(p, 0.5);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, &stepped), AMP_OK);
	ck_assert(stepped);
	ck_assert_double_eq(at(p, 0), 0.5);
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	ck_assert_int_eq(amp_grad_scaler_update_with(s, 8.0), AMP_OK);
	ck_assert_double_eq(amp_grad_scaler_get_scale(s), 1.0);
	amp_optimizer_free(opt);
	amp_tensor_free(p);
	amp_tensor_free(loss);
	amp_grad_scaler_free(s);
}
END_TEST

/* The scaler on the emulated cuda device: same arithmetic, and its
 * tensors live on cuda. */
START_TEST(test_cuda_scaler)
{
	amp_grad_scaler *s = amp_grad_scaler_new(NULL);
	amp_tensor *p = vec(AMP_DTYPE_F32, AMP_DEVICE_CUDA, 1, (double[]){ 1.0 });
	amp_tensor *loss = amp_scalar_tensor(1.0, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_optimizer *opt;
	bool stepped;

	ck_assert_int_eq(amp_tensor_set_requires_grad(p, true), AMP_OK);
	opt = sgd(p, 1.0);
	amp_tensor *scaled = amp_grad_scaler_scale(s, loss);
	ck_assert_int_eq(amp_tensor_device(amp_grad_scaler_scale_tensor(s)),
			 AMP_DEVICE_CUDA);
	SET_GRAD(p, 65536.0);
	ck_assert_int_eq(amp_grad_scaler_step(s, opt, &stepped), AMP_OK);
	ck_assert(stepped);
	ck_assert_double_eq(at(p, 0), 0.0);
	ck_assert_int_eq(amp_grad_scaler_update(s), AMP_OK);
	ck_assert_int_eq(amp_grad_scaler_growth_tracker(s), 1);
	amp_tensor_free(scaled);
	amp_tensor_free(loss);
	amp_optimizer_free(opt);
	amp_tensor_free(p);
	amp_grad_scaler_free(s);
}
END_TEST

static Suite *scaler_suite(void)
{
	Suite *suite = suite_create("scaler");
	TCase *tc = tcase_create("scaler");

	tcase_add_test(tc, test_defaults_and_lazy_init);
	tcase_add_test(tc, test_get_scale_before_and_after_init);
	tcase_add_test(tc, test_scale_result_dtypes);
	tcase_add_test(tc, test_constructor_checks);
	tcase_add_test(tc, test_zero_init_scale_like_torch);
	tcase_add_test(tc, test_unscale_kernel_arithmetic);
	tcase_add_test(tc, test_unscale_kernel_dtypes);
	tcase_add_test(tc, test_unscale_kernel_checks);
	tcase_add_loop_test(tc, test_update_scale_table, 0,
			    sizeof update_cases / sizeof update_cases[0]);
	tcase_add_test(tc, test_update_scale_f64_products);
	tcase_add_test(tc, test_update_scale_checks);
	tcase_add_test(tc, test_sequence_with_injected_inf);
	tcase_add_test(tc, test_inv_scale_rounding);
	tcase_add_test(tc, test_state_machine_errors);
	tcase_add_test(tc, test_fp16_grads_refused);
	tcase_add_test(tc, test_two_optimizers_one_update);
	tcase_add_test(tc, test_update_with_new_scale);
	tcase_add_test(tc, test_state_save_load);
	tcase_add_test(tc, test_disabled_scaler);
	tcase_add_test(tc, test_cuda_scaler);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(scaler_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
