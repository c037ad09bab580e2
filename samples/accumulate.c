/* accumulate: "Gradient accumulation" from PyTorch's AMP examples.
 *
 *   for i, (input, target) in enumerate(data):
 *       with autocast(device):
 *           loss = loss_fn(model(input), target) / iters_to_accumulate
 *       scaler.scale(loss).backward()      # scaled grads accumulate
 *       if (i + 1) % iters_to_accumulate == 0:
 *           scaler.step(optimizer)         # inf checks, skipping and the
 *           scaler.update()                # scale update happen once per
 *           optimizer.zero_grad()          # effective batch
 *
 * The scale stays constant while an effective batch accumulates.  Prints
 * the loss of every micro-batch (times iters_to_accumulate, the loss of
 * the micro-batch itself) with the scale it was scaled by. */
#include "common.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "accumulate",
		.summary = "Gradient accumulation at effective-batch granularity: "
			   "scaled losses of\n--accumulate micro-batches are "
			   "backpropagated, then one scaler.step,\nscaler.update "
			   "and zero_grad per effective batch.",
		.flags = SAMPLE_FLAG_ACCUMULATE,
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 48, .batch = 16, .hidden = 64,
			      .layers = 3, .seed = 3, .lr = 0.2,
			      .accumulate = 4 },
	};
	struct sample_options o;
	struct sample_task task;

	sample_parse(argc, argv, &info, &o);
	sample_task_init(&task, &o, "");
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);

	for (long i = 0; i < o.steps; i++) {
		amp_tensor *input, *target;
		sample_data_batch(&task.data, (int)o.batch, &input, &target);

		sample_autocast_enter(&o, "forward");
		amp_tensor *full = sample_task_loss(&task, input, target);
		amp_tensor *loss = sample_check(
			amp_mul_scalar(full, 1.0 / (double)o.accumulate), "loss");
		amp_autocast_exit();
		amp_tensor *scaled = sample_scaler_scale(scaler, loss);
		sample_backward(scaled);
		double scale = amp_grad_scaler_get_scale(scaler);
		bool boundary = (i + 1) % o.accumulate == 0;
		if (boundary) {
			sample_scaler_step(scaler, optimizer);
			sample_scaler_update(scaler);
			amp_optimizer_zero_grad(optimizer);
		}
		printf("step %ld loss %.4f scale %g%s\n", i + 1, sample_item(full),
		       scale, boundary ? " optimizer-step" : "");
		SAMPLE_FREE_TENSORS(scaled, loss, full, input, target);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	sample_task_free(&task);
	return 0;
}
