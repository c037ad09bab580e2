/* clip: "Gradient clipping" from PyTorch's AMP examples (working with
 * unscaled gradients).
 *
 *   scaler.scale(loss).backward()
 *   scaler.unscale_(optimizer)       # grads are now unscaled, in place
 *   torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)
 *   scaler.step(optimizer)           # does not unscale again; still skips
 *   scaler.update()                  # the step on inf/NaN
 *
 * Prints each step's loss and the (unscaled) gradient norm clipping saw. */
#include "common.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "clip",
		.summary = "Gradient clipping with unscaled gradients: "
			   "scaler.unscale_(optimizer), then\n"
			   "clip_grad_norm_(params, --max-norm), then "
			   "scaler.step and scaler.update.",
		.flags = SAMPLE_FLAG_MAX_NORM,
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 30, .batch = 32, .hidden = 64,
			      .layers = 3, .seed = 2, .lr = 0.05,
			      .max_norm = 1.0 },
	};
	struct sample_options o;
	struct sample_task task;

	sample_parse(argc, argv, &info, &o);
	sample_task_init(&task, &o, "");
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);

	for (long step = 1; step <= o.steps; step++) {
		amp_tensor *input, *target;
		sample_data_batch(&task.data, (int)o.batch, &input, &target);

		amp_optimizer_zero_grad(optimizer);
		sample_autocast_enter(&o, "forward");
		amp_tensor *loss = sample_task_loss(&task, input, target);
		amp_autocast_exit();
		amp_tensor *scaled = sample_scaler_scale(scaler, loss);
		sample_backward(scaled);
		sample_scaler_unscale_(scaler, optimizer);
		amp_tensor *norm = sample_check(
			amp_clip_grad_norm_(task.params, task.nparams, o.max_norm,
					    2.0, false),
			"clip_grad_norm_");
		sample_scaler_step(scaler, optimizer);
		sample_scaler_update(scaler);

		printf("step %ld loss %.4f grad_norm %.4f\n", step,
		       sample_item(loss), sample_item(norm));
		SAMPLE_FREE_TENSORS(norm, scaled, loss, input, target);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	sample_task_free(&task);
	return 0;
}
