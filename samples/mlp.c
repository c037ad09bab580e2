/* mlp: "Typical Mixed Precision Training" from PyTorch's AMP examples.
 *
 *   for input, target in data:
 *       optimizer.zero_grad()
 *       with autocast(device):
 *           output = model(input)
 *           loss = loss_fn(output, target)
 *       scaler.scale(loss).backward()
 *       scaler.step(optimizer)
 *       scaler.update()
 *
 * The model is --layers linear layers of width --hidden with ReLU between
 * (f32 master weights; autocast casts them per op), 10 classes, cross
 * entropy, SGD with momentum.  Prints each step's loss and, last, the
 * median milliseconds per step after a warm-up (wall clock, and the
 * thread's CPU time). */
#include "common.h"

#include <stdio.h>
#include <stdlib.h>

#define WARMUP 3

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "mlp",
		.summary = "The typical loop: autocast around forward + loss, "
			   "scaler.scale(loss).backward(),\nscaler.step(optimizer), "
			   "scaler.update(); SGD with momentum.",
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 40, .batch = 32, .hidden = 64,
			      .layers = 3, .seed = 1, .lr = 0.01 },
	};
	struct sample_options o;
	struct sample_task task;

	sample_parse(argc, argv, &info, &o);
	sample_task_init(&task, &o, "");
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);
	double *ms = sample_check_ptr(calloc((size_t)o.steps, sizeof *ms), "timing");
	double *cpu_ms = sample_check_ptr(calloc((size_t)o.steps, sizeof *cpu_ms),
					  "timing");

	for (long step = 1; step <= o.steps; step++) {
		amp_tensor *input, *target;
		sample_data_batch(&task.data, (int)o.batch, &input, &target);
		double begin = sample_now_ms(), cpu_begin = sample_cpu_ms();

		amp_optimizer_zero_grad(optimizer);
		sample_autocast_enter(&o, "forward");
		amp_tensor *loss = sample_task_loss(&task, input, target);
		amp_autocast_exit();
		amp_tensor *scaled = sample_scaler_scale(scaler, loss);
		sample_backward(scaled);
		sample_scaler_step(scaler, optimizer);
		sample_scaler_update(scaler);

		ms[step - 1] = sample_now_ms() - begin;
		cpu_ms[step - 1] = sample_cpu_ms() - cpu_begin;
		sample_print_loss(step, sample_item(loss));
		SAMPLE_FREE_TENSORS(scaled, loss, input, target);
	}
	long warm = o.steps > WARMUP ? o.steps - WARMUP : o.steps;
	printf("median ms/step %.3f (cpu %.3f; batch %ld hidden %ld layers %ld "
	       "%s %s, %ld steps after warm-up)\n",
	       sample_median(ms + (o.steps - warm), (int)warm),
	       sample_median(cpu_ms + (o.steps - warm), (int)warm), o.batch,
	       o.hidden, o.layers, amp_device_type_name(o.device),
	       amp_dtype_name(o.dtype), warm);
	free(ms);
	free(cpu_ms);
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	sample_task_free(&task);
	return 0;
}
