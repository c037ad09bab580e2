/* penalty: "Gradient penalty" from PyTorch's AMP examples.
 *
 *   with autocast(device):
 *       loss = loss_fn(model(input), target)
 *   # autograd.grad of the SCALED loss, keeping the graph
 *   scaled_grads = torch.autograd.grad(scaler.scale(loss),
 *                                      model.parameters(), create_graph=True)
 *   # not owned by an optimizer: unscale by plain multiplication
 *   inv_scale = 1. / scaler.get_scale()
 *   grads = [g * inv_scale for g in scaled_grads]
 *   with autocast(device):               # the penalty is forward work
 *       grad_norm = sqrt(sum(g.pow(2).sum() for g in grads))
 *       loss = loss + grad_norm
 *   scaler.scale(loss).backward()        # leaf grads correctly scaled
 *   scaler.step(optimizer); scaler.update()
 *
 * Prints each step's total loss with its cross-entropy and penalty parts. */
#include "common.h"

#include <stdio.h>

/* sqrt(sum over grads of sum(g^2)) */
static amp_tensor *gradient_norm(amp_tensor *const *grads, int count)
{
	amp_tensor *total = NULL;

	for (int i = 0; i < count; i++) {
		amp_tensor *squared = sample_check(amp_pow_scalar(grads[i], 2.0),
						   "pow");
		amp_tensor *sum = sample_check(amp_sum(squared, AMP_DTYPE_NONE),
					       "sum");
		amp_tensor_free(squared);
		if (!total) {
			total = sum;
			continue;
		}
		amp_tensor *next = sample_check(amp_add(total, sum), "add");
		amp_tensor_free(total);
		amp_tensor_free(sum);
		total = next;
	}
	amp_tensor *norm = sample_check(amp_sqrt(total), "sqrt");
	amp_tensor_free(total);
	return norm;
}

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "penalty",
		.summary = "Gradient penalty: autograd.grad of the scaled loss with "
			   "create_graph,\nunscaled by 1/get_scale(), an L2 "
			   "penalty added inside autocast, then the usual\n"
			   "scaled backward, step and update.",
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 30, .batch = 32, .hidden = 32,
			      .layers = 2, .seed = 4, .lr = 0.05 },
	};
	struct sample_options o;
	struct sample_task task;

	sample_parse(argc, argv, &info, &o);
	sample_task_init(&task, &o, "");
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);
	amp_tensor *scaled_grads[SAMPLE_MAX_PARAMS], *grads[SAMPLE_MAX_PARAMS];

	for (long step = 1; step <= o.steps; step++) {
		amp_tensor *input, *target;
		sample_data_batch(&task.data, (int)o.batch, &input, &target);

		amp_optimizer_zero_grad(optimizer);
		sample_autocast_enter(&o, "forward");
		amp_tensor *ce = sample_task_loss(&task, input, target);
		amp_autocast_exit();
		amp_tensor *scaled = sample_scaler_scale(scaler, ce);
		sample_check_status(amp_grad(1, &scaled, NULL, task.nparams,
					     task.params, scaled_grads, true, true,
					     false),
				    "autograd.grad");
		double inv_scale = 1.0 / amp_grad_scaler_get_scale(scaler);
		for (int i = 0; i < task.nparams; i++)
			grads[i] = sample_check(amp_mul_scalar(scaled_grads[i],
							       inv_scale),
						"unscale");

		sample_autocast_enter(&o, "penalty");
		amp_tensor *penalty = gradient_norm(grads, task.nparams);
		amp_tensor *loss = sample_check(amp_add(ce, penalty), "add");
		amp_autocast_exit();
		amp_tensor *scaled_total = sample_scaler_scale(scaler, loss);
		sample_backward(scaled_total);
		sample_scaler_step(scaler, optimizer);
		sample_scaler_update(scaler);

		printf("step %ld loss %.4f ce %.4f penalty %.4f\n", step,
		       sample_item(loss), sample_item(ce), sample_item(penalty));
		for (int i = 0; i < task.nparams; i++) {
			amp_tensor_free(scaled_grads[i]);
			amp_tensor_free(grads[i]);
		}
		SAMPLE_FREE_TENSORS(scaled_total, loss, penalty, scaled, ce, input,
				    target);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	sample_task_free(&task);
	return 0;
}
