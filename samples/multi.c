/* multi: "Working with Multiple Models, Losses, and Optimizers" from
 * PyTorch's AMP examples.
 *
 *   with autocast(device):
 *       output0 = model0(input); output1 = model1(input)
 *       loss0 = loss_fn(2 * output0 + 3 * output1, target)
 *       loss1 = loss_fn(3 * output0 - 5 * output1, target)
 *   scaler.scale(loss0).backward(retain_graph=True)  # shared graph
 *   scaler.scale(loss1).backward()
 *   scaler.unscale_(optimizer0)        # optional, per optimizer
 *   scaler.step(optimizer0)            # each decides on its own infs
 *   scaler.step(optimizer1)
 *   scaler.update()                    # once, after every step
 *
 * Prints loss0 + loss1 as the step's loss, and both parts. */
#include "common.h"

#include <stdio.h>

/* a * x + b * y */
static amp_tensor *combine(double a, amp_tensor *x, double b, amp_tensor *y)
{
	amp_tensor *ax = sample_check(amp_mul_scalar(x, a), "mul");
	amp_tensor *by = sample_check(amp_mul_scalar(y, b), "mul");
	amp_tensor *sum = sample_check(amp_add(ax, by), "add");

	amp_tensor_free(ax);
	amp_tensor_free(by);
	return sum;
}

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "multi",
		.summary = "Two models, two losses, two optimizers and one scaler: "
			   "each loss scaled and\nbackpropagated, unscale_ on one "
			   "optimizer, a scaler.step per optimizer, one\n"
			   "scaler.update.",
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 30, .batch = 32, .hidden = 64,
			      .layers = 2, .seed = 5, .lr = 0.02 },
	};
	struct sample_options o;
	struct sample_task task;
	struct mlp model1;

	sample_parse(argc, argv, &info, &o);
	sample_task_init(&task, &o, "model0.");
	mlp_init(&model1, (int)o.hidden, (int)o.hidden, SAMPLE_CLASSES,
		 (int)o.layers, &task.rng, o.device, "model1.");
	amp_tensor *params1[SAMPLE_MAX_PARAMS];
	int nparams1 = mlp_params(&model1, params1, SAMPLE_MAX_PARAMS);
	amp_optimizer *optimizer0 = sample_sgd(task.params, task.nparams, &o);
	amp_optimizer *optimizer1 = sample_sgd(params1, nparams1, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);

	for (long step = 1; step <= o.steps; step++) {
		amp_tensor *input, *target;
		sample_data_batch(&task.data, (int)o.batch, &input, &target);

		amp_optimizer_zero_grad(optimizer0);
		amp_optimizer_zero_grad(optimizer1);
		sample_autocast_enter(&o, "forward");
		amp_tensor *output0 = mlp_forward(&task.model, input);
		amp_tensor *output1 = mlp_forward(&model1, input);
		amp_tensor *mix0 = combine(2, output0, 3, output1);
		amp_tensor *mix1 = combine(3, output0, -5, output1);
		amp_tensor *loss0 = sample_cross_entropy(mix0, target);
		amp_tensor *loss1 = sample_cross_entropy(mix1, target);
		amp_autocast_exit();

		amp_tensor *scaled0 = sample_scaler_scale(scaler, loss0);
		amp_tensor *scaled1 = sample_scaler_scale(scaler, loss1);
		sample_check_status(amp_backward(scaled0, NULL, true, false),
				    "backward loss0");
		sample_check_status(amp_backward(scaled1, NULL, false, false),
				    "backward loss1");
		sample_scaler_unscale_(scaler, optimizer0);
		sample_check_status(amp_grad_scaler_step(scaler, optimizer0, NULL),
				    "scaler.step(optimizer0)");
		sample_check_status(amp_grad_scaler_step(scaler, optimizer1, NULL),
				    "scaler.step(optimizer1)");
		sample_scaler_update(scaler);

		double l0 = sample_item(loss0), l1 = sample_item(loss1);
		printf("step %ld loss %.4f loss0 %.4f loss1 %.4f\n", step, l0 + l1,
		       l0, l1);
		SAMPLE_FREE_TENSORS(scaled0, scaled1, loss0, loss1, mix0, mix1,
				    output0, output1, input, target);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer0);
	amp_optimizer_free(optimizer1);
	mlp_free(&model1);
	sample_task_free(&task);
	return 0;
}
