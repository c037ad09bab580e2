/* custom: "Autocast and Custom Autograd Functions" from PyTorch's AMP
 * examples, both cases.
 *
 *   class MyMM(torch.autograd.Function):        # multiple float inputs,
 *       @staticmethod                            # an autocastable op
 *       @custom_fwd
 *       def forward(ctx, a, b):
 *           ctx.save_for_backward(a, b)
 *           return a.mm(b)
 *       @staticmethod
 *       @custom_bwd                              # same autocast state as
 *       def backward(ctx, grad):                 # the forward
 *           a, b = ctx.saved_tensors
 *           return grad.mm(b.t()), a.t().mm(grad)
 *
 *   class MyFloat32Func(torch.autograd.Function):   # needs float32
 *       @staticmethod
 *       @custom_fwd(cast_inputs=torch.float32)
 *       def forward(ctx, input): ...
 *       @staticmethod
 *       @custom_bwd
 *       def backward(ctx, grad): ...
 *
 * The model: h = MyMM(x, w1) (low precision under autocast), then
 * MyFloat32Func = SiLU written for f32 only (it refuses anything else, like
 * an extension compiled for one dtype), then a linear layer and cross
 * entropy. */
#include "common.h"

#include <math.h>
#include <stdio.h>

static int mymm_forward(amp_custom_ctx *ctx, int ninputs,
			amp_tensor *const *inputs, int noutputs,
			amp_tensor **outputs)
{
	int status = amp_custom_ctx_save_for_backward(ctx, 2, inputs);

	if (status != AMP_OK)
		return status;
	outputs[0] = amp_mm(inputs[0], inputs[1]);
	return outputs[0] ? AMP_OK : amp_last_status();
}

static int mymm_backward(amp_custom_ctx *ctx, int noutputs,
			 amp_tensor *const *grad_outputs, int ninputs,
			 amp_tensor **grad_inputs)
{
	amp_tensor *a = amp_custom_ctx_saved(ctx, 0);
	amp_tensor *b = amp_custom_ctx_saved(ctx, 1);
	amp_tensor *bt = amp_t(b), *at = amp_t(a);

	grad_inputs[0] = bt ? amp_mm(grad_outputs[0], bt) : NULL;
	grad_inputs[1] = at ? amp_mm(at, grad_outputs[0]) : NULL;
	amp_tensor_free(bt);
	amp_tensor_free(at);
	return grad_inputs[0] && grad_inputs[1] ? AMP_OK : amp_last_status();
}

/* x * sigmoid(x), for f32 only */
static int silu_forward(amp_custom_ctx *ctx, int ninputs,
			amp_tensor *const *inputs, int noutputs,
			amp_tensor **outputs)
{
	amp_tensor *x = inputs[0];

	if (amp_tensor_dtype(x) != AMP_DTYPE_F32) {
		fprintf(stderr, "custom: MyFloat32Func got %s; it only has a "
				"float32 kernel\n",
			amp_dtype_name(amp_tensor_dtype(x)));
		return AMP_ERR_DTYPE;
	}
	int status = amp_custom_ctx_save_for_backward(ctx, 1, &x);
	amp_tensor *s = amp_sigmoid(x);
	outputs[0] = s ? amp_mul(x, s) : NULL;
	amp_tensor_free(s);
	return status == AMP_OK && outputs[0] ? AMP_OK : amp_last_status();
}

/* d/dx x s(x) = s + x s (1 - s) = s (1 + x (1 - s)) */
static int silu_backward(amp_custom_ctx *ctx, int noutputs,
			 amp_tensor *const *grad_outputs, int ninputs,
			 amp_tensor **grad_inputs)
{
	amp_tensor *x = amp_custom_ctx_saved(ctx, 0);
	amp_tensor *s = sample_check(amp_sigmoid(x), "sigmoid");
	amp_tensor *minus = sample_check(amp_neg(s), "neg");
	amp_tensor *one_minus = sample_check(amp_add_scalar(minus, 1.0), "add");
	amp_tensor *x_term = sample_check(amp_mul(x, one_minus), "mul");
	amp_tensor *inner = sample_check(amp_add_scalar(x_term, 1.0), "add");
	amp_tensor *slope = sample_check(amp_mul(s, inner), "mul");

	grad_inputs[0] = sample_check(amp_mul(grad_outputs[0], slope), "mul");
	SAMPLE_FREE_TENSORS(s, minus, one_minus, x_term, inner, slope);
	return AMP_OK;
}

int main(int argc, char **argv)
{
	static const struct sample_info info = {
		.name = "custom",
		.summary = "Custom autograd functions under autocast: MyMM with "
			   "custom_fwd/custom_bwd (the\nbackward runs in the "
			   "forward's autocast state) and a float32-only "
			   "function with\ncustom_fwd(cast_inputs=float32).",
		.defaults = { .device = AMP_DEVICE_CPU, .dtype = AMP_DTYPE_NONE,
			      .steps = 30, .batch = 32, .hidden = 64,
			      .layers = 2, .seed = 6, .lr = 0.05 },
	};
	struct sample_options o;
	struct sample_task task;

	sample_parse(argc, argv, &info, &o);
	sample_task_init(&task, &o, "head.");
	int64_t shape[2] = { o.hidden, o.hidden };
	amp_tensor *w1 = sample_param(2, shape, 1.0 / sqrt((double)o.hidden),
				      &task.rng, o.device, "mymm.weight");
	task.params[task.nparams++] = w1;

	struct amp_custom_op_def mymm_def = {
		.name = "MyMM", .device = o.device, .cast_inputs = AMP_DTYPE_NONE,
		.ninputs = 2, .noutputs = 1,
		.forward = mymm_forward, .backward = mymm_backward,
	};
	struct amp_custom_op_def silu_def = {
		.name = "MyFloat32Func", .device = o.device,
		.cast_inputs = AMP_DTYPE_F32, .ninputs = 1, .noutputs = 1,
		.forward = silu_forward, .backward = silu_backward,
	};
	amp_custom_op *mymm = sample_check_ptr(amp_custom_op_new(&mymm_def), "MyMM");
	amp_custom_op *silu = sample_check_ptr(amp_custom_op_new(&silu_def),
					       "MyFloat32Func");
	amp_optimizer *optimizer = sample_sgd(task.params, task.nparams, &o);
	amp_grad_scaler *scaler = sample_scaler(&o);

	for (long step = 1; step <= o.steps; step++) {
		amp_tensor *input, *target, *h, *f;
		sample_data_batch(&task.data, (int)o.batch, &input, &target);

		amp_optimizer_zero_grad(optimizer);
		sample_autocast_enter(&o, "forward");
		amp_tensor *mm_in[2] = { input, w1 };
		sample_check_status(amp_custom_op_apply(mymm, mm_in, &h), "MyMM");
		sample_check_status(amp_custom_op_apply(silu, &h, &f),
				    "MyFloat32Func");
		amp_tensor *loss = sample_task_loss(&task, f, target);
		amp_autocast_exit();
		if (step == 1)
			printf("MyMM output %s, MyFloat32Func output %s "
			       "(its input was cast to f32), loss %s\n",
			       amp_dtype_name(amp_tensor_dtype(h)),
			       amp_dtype_name(amp_tensor_dtype(f)),
			       amp_dtype_name(amp_tensor_dtype(loss)));

		amp_tensor *scaled = sample_scaler_scale(scaler, loss);
		sample_backward(scaled);
		sample_scaler_step(scaler, optimizer);
		sample_scaler_update(scaler);
		sample_print_loss(step, sample_item(loss));
		SAMPLE_FREE_TENSORS(scaled, loss, f, h, input, target);
	}
	amp_grad_scaler_free(scaler);
	amp_optimizer_free(optimizer);
	amp_custom_op_free(mymm);
	amp_custom_op_free(silu);
	amp_tensor_free(w1);
	sample_task_free(&task);
	return 0;
}
