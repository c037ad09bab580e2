/* nested: the fallback of PyTorch's AMP examples for code one cannot
 * change ("Autocast and Custom Autograd Functions"), and the advice of the
 * forum thread to cast tensors from an autocast region back to float32:
 *
 *   with autocast(device):
 *       h = layer1(input)                   # low precision
 *       with autocast(device, enabled=False):
 *           z = imported_function(h.float())   # f32, autocast off
 *       output = layer2(z)                  # autocast again
 *
 * The imported function here is an RMS normalisation written for f32
 * (x / sqrt(mean(x^2) + eps)); inside the disabled region every op runs in
 * the dtype it is given, so the explicit .float() decides its precision. */
#include "common.h"

#include <math.h>
#include <stdio.h>

/* x * (mean(x^2, -1) + eps)^-1/2 */
static amp_tensor *rms_norm(amp_tensor *x)
{
	amp_tensor *squared = sample_check(amp_pow_scalar(x, 2.0), "pow");
	amp_tensor *mean = sample_check(amp_mean_dim(squared, 1, (int64_t[]){ -1 },
						     true, AMP_DTYPE_NONE),
					"mean");
	amp_tensor *shifted = sample_check(amp_add_scalar(mean, 1e-6), "add");
	amp_tensor *inverse = sample_check(amp_pow_scalar(shifted, -0.5), "pow");
	amp_tensor *out = sample_check(amp_mul(x, inverse), "mul");

	SAMPLE_FREE_TENSORS(squared, mean, shifted, inverse);
	return out;
}

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "nested",
		.summary = "An autocast(enabled=False) subregion with explicit "
			   ".float() casts around a\nfunction that needs f32, "
			   "inside an autocast forward.",
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 30, .batch = 32, .hidden = 64,
			      .layers = 2, .seed = 8, .lr = 0.05 },
	};
	struct sample_options o;
	struct sample_task task;

	sample_parse(argc, argv, &info, &o);
	sample_task_init(&task, &o, "head.");
	int64_t wshape[2] = { o.hidden, o.hidden }, bshape[1] = { o.hidden };
	double bound = 1.0 / sqrt((double)o.hidden);
	amp_tensor *w = sample_param(2, wshape, bound, &task.rng, o.device,
				     "layer1.weight");
	amp_tensor *b = sample_param(1, bshape, bound, &task.rng, o.device,
				     "layer1.bias");
	task.params[task.nparams++] = w;
	task.params[task.nparams++] = b;
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);

	for (long step = 1; step <= o.steps; step++) {
		amp_tensor *input, *target;
		sample_data_batch(&task.data, (int)o.batch, &input, &target);

		amp_optimizer_zero_grad(optimizer);
		sample_autocast_enter(&o, "forward");
		amp_tensor *h = sample_check(amp_linear(input, w, b), "layer1");
		sample_autocast_disable(&o, "imported_function");
		amp_tensor *h32 = sample_check(amp_to(h, AMP_DTYPE_F32), "h.float()");
		amp_tensor *z = rms_norm(h32);
		amp_autocast_exit();
		amp_tensor *loss = sample_task_loss(&task, z, target);
		amp_autocast_exit();
		if (step == 1)
			printf("layer1 output %s; inside autocast(enabled=False) "
			       "the norm ran in %s; loss %s\n",
			       amp_dtype_name(amp_tensor_dtype(h)),
			       amp_dtype_name(amp_tensor_dtype(z)),
			       amp_dtype_name(amp_tensor_dtype(loss)));

		amp_tensor *scaled = sample_scaler_scale(scaler, loss);
		sample_backward(scaled);
		sample_scaler_step(scaler, optimizer);
		sample_scaler_update(scaler);
		sample_print_loss(step, sample_item(loss));
		SAMPLE_FREE_TENSORS(scaled, loss, z, h32, h, input, target);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	amp_tensor_free(w);
	amp_tensor_free(b);
	sample_task_free(&task);
	return 0;
}
