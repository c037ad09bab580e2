/* The phase libamp publishes for the ops of a training step: forward for
 * the model (and GradScaler's scale(), an autograd op whose backward runs),
 * backward for autograd's engine, optimizer for an optimizer's step and for
 * GradScaler's unscale_() and update() — in PyTorch these run under
 * no_grad with no autograd sequence number, and the PyTorch bridge marks
 * Optimizer.step's ops optimizer too.  The thread's phase is restored
 * after each of them, on success and on failure. */
#include "train_helpers.h"

#include <stdlib.h>

#define MAX_OPS 512

struct phase_log {
	int n;
	enum amp_phase phase[MAX_OPS];
	char op[MAX_OPS][48];
	bool nested[MAX_OPS];
};

static void log_phase(const struct amp_event *e, void *user)
{
	struct phase_log *log = user;

	if (e->kind != AMP_EVENT_OP_END || log->n >= MAX_OPS)
		return;
	log->phase[log->n] = e->op.phase;
	snprintf(log->op[log->n], sizeof log->op[0], "%s", e->op.op);
	log->nested[log->n] = e->op.parent_op_id != 0;
	log->n++;
}

/* Every op logged from `from` on has `phase`; returns how many there are
 * (so a caller can require some). */
static int all_in_phase(const struct phase_log *log, int from,
			enum amp_phase phase)
{
	for (int i = from; i < log->n; i++)
		ck_assert_msg(log->phase[i] == phase,
			      "op %d (%s%s) has phase %s, expected %s", i,
			      log->op[i], log->nested[i] ? ", nested" : "",
			      amp_phase_name(log->phase[i]),
			      amp_phase_name(phase));
	return log->n - from;
}

/* One op dispatched now must be phase forward: the phase came back. */
static void assert_forward_now(struct phase_log *log)
{
	int from = log->n;
	amp_tensor *x = VEC(AMP_DTYPE_F32, AMP_DEVICE_CPU, 1.0, 2.0);
	amp_tensor *y = amp_mul_scalar(x, 3.0);

	ck_assert_ptr_nonnull(y);
	ck_assert_int_ge(all_in_phase(log, from, AMP_PHASE_FORWARD), 1);
	amp_tensor_free(y);
	amp_tensor_free(x);
}

/* loss = sum(p * p), its backward: forward ops, then backward ones. */
static void forward_backward(struct phase_log *log, amp_tensor *p,
			     amp_grad_scaler *scaler)
{
	int from = log->n;
	amp_tensor *square = amp_mul(p, p);
	amp_tensor *loss = amp_sum(square, AMP_DTYPE_NONE);
	amp_tensor *scaled = scaler ? amp_grad_scaler_scale(scaler, loss)
				    : amp_tensor_ref(loss);

	/* the root's gradient, made before: amp_backward's own would be a
	 * forward op (as torch.ones_like before the engine starts) */
	amp_tensor *seed = amp_scalar_tensor(1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);

	ck_assert_ptr_nonnull(scaled);
	ck_assert_int_ge(all_in_phase(log, from, AMP_PHASE_FORWARD),
			 scaler ? 3 : 2);
	from = log->n;
	ck_assert_int_eq(amp_backward(scaled, seed, false, false), AMP_OK);
	ck_assert_int_ge(all_in_phase(log, from, AMP_PHASE_BACKWARD), 1);
	amp_tensor_free(seed);
	amp_tensor_free(scaled);
	amp_tensor_free(loss);
	amp_tensor_free(square);
}

static amp_optimizer *optimizer_for(int kind, amp_tensor *p)
{
	struct amp_adam_opts adam = AMP_ADAM_OPTS;

	adam.weight_decay = 0.01;
	adam.amsgrad = true;
	switch (kind) {
	case 0:
		return amp_sgd_new(&p, 1, 0.1, 0.9, 0, 0.01, true);
	case 1:
		return amp_adam_new(&p, 1, &adam);
	default:
		return amp_adamw_new(&p, 1, &adam);
	}
}

/* SGD, Adam (L2 decay, AMSGrad) and AdamW: two steps each, every op of a
 * step (the state's creation included, nested ops too) is optimizer. */
START_TEST(test_optimizer_step_is_optimizer_phase)
{
	struct phase_log log = { 0 };
	amp_tensor *p = PARAM(1.0, -2.0, 0.5);
	amp_optimizer *opt = optimizer_for(_i, p);
	int handle = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_END), log_phase,
				  &log);

	ck_assert_ptr_nonnull(opt);
	ck_assert_int_ge(handle, 0);
	for (int step = 0; step < 2; step++) {
		forward_backward(&log, p, NULL);
		int from = log.n;
		ck_assert_int_eq(amp_optimizer_step(opt), AMP_OK);
		ck_assert_int_ge(all_in_phase(&log, from, AMP_PHASE_OPTIMIZER), 3);
		assert_forward_now(&log);
		amp_optimizer_zero_grad(opt);
	}
	amp_hook_remove(handle);
	amp_optimizer_free(opt);
	amp_tensor_free(p);
}
END_TEST

/* scale() is forward (outputs * scale is in the graph: its backward
 * runs); unscale_(), step() and update() are optimizer. */
START_TEST(test_scaler_phases)
{
	struct phase_log log = { 0 };
	struct amp_grad_scaler_opts opts = AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CPU);
	amp_grad_scaler *scaler = amp_grad_scaler_new(&opts);
	amp_tensor *p = PARAM(1.0, -2.0);
	amp_optimizer *opt = optimizer_for(1, p);
	int handle = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_END), log_phase,
				  &log);
	bool stepped = false;

	ck_assert_ptr_nonnull(scaler);
	forward_backward(&log, p, scaler);
	int from = log.n;
	ck_assert_int_eq(amp_grad_scaler_unscale_(scaler, opt), AMP_OK);
	ck_assert_int_ge(all_in_phase(&log, from, AMP_PHASE_OPTIMIZER), 3);
	assert_forward_now(&log);
	from = log.n;
	ck_assert_int_eq(amp_grad_scaler_step(scaler, opt, &stepped), AMP_OK);
	ck_assert(stepped);
	ck_assert_int_ge(all_in_phase(&log, from, AMP_PHASE_OPTIMIZER), 3);
	from = log.n;
	ck_assert_int_eq(amp_grad_scaler_update(scaler), AMP_OK);
	ck_assert_int_ge(all_in_phase(&log, from, AMP_PHASE_OPTIMIZER), 1);
	assert_forward_now(&log);

	/* step() that unscales by itself, then update(new_scale) (fill_)
	 * and update(tensor) (copy_) */
	amp_optimizer_zero_grad(opt);
	forward_backward(&log, p, scaler);
	from = log.n;
	ck_assert_int_eq(amp_grad_scaler_step(scaler, opt, &stepped), AMP_OK);
	ck_assert_int_ge(all_in_phase(&log, from, AMP_PHASE_OPTIMIZER), 3);
	from = log.n;
	ck_assert_int_eq(amp_grad_scaler_update_with(scaler, 1024.0), AMP_OK);
	ck_assert_int_eq(all_in_phase(&log, from, AMP_PHASE_OPTIMIZER), 1);
	amp_tensor *scale = amp_scalar_tensor(512.0, AMP_DTYPE_F32,
					      AMP_DEVICE_CPU);
	from = log.n;
	ck_assert_int_eq(amp_grad_scaler_update_with_tensor(scaler, scale),
			 AMP_OK);
	ck_assert_int_eq(all_in_phase(&log, from, AMP_PHASE_OPTIMIZER), 1);
	assert_forward_now(&log);

	amp_hook_remove(handle);
	amp_tensor_free(scale);
	amp_optimizer_free(opt);
	amp_grad_scaler_free(scaler);
	amp_tensor_free(p);
}
END_TEST

/* A failure half-way (f16 gradients are refused after the inverse scale
 * was computed) and a refusal before any op both give the phase back. */
START_TEST(test_phase_restored_after_failures)
{
	struct phase_log log = { 0 };
	struct amp_grad_scaler_opts opts = AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CPU);
	amp_grad_scaler *scaler = amp_grad_scaler_new(&opts);
	amp_tensor *p = PARAM(1.0, -2.0);
	amp_optimizer *opt = optimizer_for(0, p);
	int handle = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_END), log_phase,
				  &log);

	forward_backward(&log, p, scaler);
	ck_assert_int_eq(amp_grad_scaler_unscale_(scaler, opt), AMP_OK);
	ck_assert_error(amp_grad_scaler_unscale_(scaler, opt), AMP_ERR_STATE,
			"unscale_() has already been called on this optimizer "
			"since the last update().");
	assert_forward_now(&log);
	ck_assert_int_eq(amp_grad_scaler_update(scaler), AMP_OK);

	amp_tensor *half = VEC(AMP_DTYPE_F16, AMP_DEVICE_CPU, 1.0);
	amp_tensor *half_grad = VEC(AMP_DTYPE_F16, AMP_DEVICE_CPU, 1.0);
	ck_assert_int_eq(amp_tensor_set_requires_grad(half, true), AMP_OK);
	ck_assert_int_eq(amp_tensor_set_grad(half, half_grad), AMP_OK);
	amp_optimizer *half_opt = amp_sgd_new(&half, 1, 0.1, 0, 0, 0, false);
	int from = log.n;
	ck_assert_error(amp_grad_scaler_unscale_(scaler, half_opt),
			AMP_ERR_DTYPE, "Attempting to unscale FP16 gradients.");
	ck_assert_int_ge(all_in_phase(&log, from, AMP_PHASE_OPTIMIZER), 1);
	assert_forward_now(&log);

	amp_hook_remove(handle);
	amp_optimizer_free(half_opt);
	amp_tensor_free(half_grad);
	amp_tensor_free(half);
	amp_optimizer_free(opt);
	amp_grad_scaler_free(scaler);
	amp_tensor_free(p);
}
END_TEST

static Suite *train_phase_suite(void)
{
	Suite *s = suite_create("train_phase");
	TCase *tc = tcase_create("phase");

	tcase_add_loop_test(tc, test_optimizer_step_is_optimizer_phase, 0, 3);
	tcase_add_test(tc, test_scaler_phases);
	tcase_add_test(tc, test_phase_restored_after_failures);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(train_phase_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
