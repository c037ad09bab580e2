/* whole_loop: the pattern the forum thread warns about ("Can autocast
 * context manager be used around all of training loop?"): autocast wrapped
 * around the whole epoch.
 *
 *   with autocast(device):            # one region for the epoch
 *       for input, target in data:
 *           loss = loss_fn(model(input), target)
 *           scaler.scale(loss).backward()    # backward under autocast
 *           scaler.step(optimizer); scaler.update()
 *
 * The weight-cast cache is only cleared when the outermost region exits,
 * so the low-precision copies of the weights made at the first step are
 * reused after every optimizer step: the forward keeps seeing the initial
 * weights (PyTorch does not notice; libamp flags each such cache hit as
 * stale).  The first third of --steps runs that way; the rest uses the
 * recommended form, autocast around forward and loss only. */
#include "common.h"

#include <stdio.h>

static void count_stale(const struct amp_event *e, void *user)
{
	long *stale = user;

	if (e->kind == AMP_EVENT_CAST && e->cast.cache == AMP_CACHE_HIT &&
	    e->cast.stale)
		(*stale)++;
}

/* One training step; the caller decides where autocast regions are. */
static double train_step(const struct sample_task *task, amp_optimizer *optimizer,
			 amp_grad_scaler *scaler, const struct sample_options *o,
			 bool own_region)
{
	amp_tensor *input, *target;
	sample_data_batch((struct sample_data *)&task->data, (int)o->batch, &input,
			  &target);
	amp_optimizer_zero_grad(optimizer);
	if (own_region)
		sample_autocast_enter(o, "forward");
	amp_tensor *loss = sample_task_loss(task, input, target);
	if (own_region)
		amp_autocast_exit();
	amp_tensor *scaled = sample_scaler_scale(scaler, loss);
	sample_backward(scaled);
	sample_scaler_step(scaler, optimizer);
	sample_scaler_update(scaler);
	double value = sample_item(loss);
	SAMPLE_FREE_TENSORS(scaled, loss, input, target);
	return value;
}

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "whole_loop",
		.summary = "Autocast around the whole epoch (the forum's warning): "
			   "the cast cache keeps\nstale low-precision weights "
			   "across optimizer steps.  The first third of the steps\n"
			   "runs that way, the rest with autocast around the "
			   "forward only.",
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 30, .batch = 32, .hidden = 64,
			      .layers = 3, .seed = 10, .lr = 0.05 },
	};
	struct sample_options o;
	struct sample_task task;
	long stale = 0;

	sample_parse(argc, argv, &info, &o);
	sample_task_init(&task, &o, "");
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);
	long pitfall = o.steps / 3 > 0 ? o.steps / 3 : 1;

	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_CAST), count_stale, &stale);
	sample_check_status(hook > 0 ? AMP_OK : hook, "hook");
	printf("# autocast around the whole loop (%ld steps)\n", pitfall);
	sample_autocast_enter(&o, "epoch");
	for (long step = 1; step <= pitfall; step++)
		sample_print_loss(step, train_step(&task, optimizer, scaler, &o,
						   false));
	amp_autocast_exit();
	amp_hook_remove(hook);
	printf("# stale cast-cache hits: %ld (weight copies from step 1 reused "
	       "after every optimizer step)\n",
	       stale);
	printf("# autocast around forward and loss only\n");
	for (long step = pitfall + 1; step <= o.steps; step++)
		sample_print_loss(step, train_step(&task, optimizer, scaler, &o,
						   true));
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	sample_task_free(&task);
	return 0;
}
