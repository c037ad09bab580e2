/* torch.optim.Adam and AdamW, the single-tensor path (_single_tensor_adam),
 * op for op:
 *   step += 1                                  (0-dim f32 on the CPU)
 *   param.mul_(1 - lr * weight_decay)          AdamW
 *   grad = grad.add(param, alpha=weight_decay) Adam with weight_decay
 *   exp_avg.lerp_(grad, 1 - beta1)
 *   exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
 *   torch.maximum(max_exp_avg_sq, exp_avg_sq, out=max_exp_avg_sq)  amsgrad
 *   denom = (v.sqrt() / sqrt(1 - beta2^step)).add_(eps)
 *   param.addcdiv_(exp_avg, denom, value=-lr / (1 - beta1^step))
 * The bias corrections are Python floats (f64) from step.item(). */
#include "train_internal.h"

#include <math.h>

static struct amp_tensor *zeros_like(const struct amp_tensor *t)
{
	return amp_zeros(t->ndim, t->shape, t->dtype, t->device);
}

static int init_state(struct amp_optimizer *opt, struct amp_tensor *param,
		      struct amp_tensor *state[OPTIM_SLOT_COUNT])
{
	state[OPTIM_STEP] = amp_scalar_tensor(0.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	state[OPTIM_EXP_AVG] = zeros_like(param);
	state[OPTIM_EXP_AVG_SQ] = zeros_like(param);
	if (opt->amsgrad)
		state[OPTIM_MAX_EXP_AVG_SQ] = zeros_like(param);
	if (!state[OPTIM_STEP] || !state[OPTIM_EXP_AVG] ||
	    !state[OPTIM_EXP_AVG_SQ] ||
	    (opt->amsgrad && !state[OPTIM_MAX_EXP_AVG_SQ]))
		return amp_last_status();
	return AMP_OK;
}

/* The decayed gradient of Adam's L2 form: grad.add(param, alpha=wd). */
static struct amp_tensor *l2_gradient(struct amp_optimizer *opt,
				      struct amp_tensor *param,
				      struct amp_tensor *grad)
{
	struct amp_call call = { .op = AMP_OP_ADD, .nargs = 3 };

	call.args[0] = amp_arg_tensor(grad);
	call.args[1] = amp_arg_tensor(param);
	call.args[2] = amp_arg_scalar(opt->weight_decay, false);
	return amp_dispatch1(&call);
}

/* (v.sqrt() / bias_correction2_sqrt).add_(eps): the division is in place
 * on sqrt's fresh result (the same f32 maths as PyTorch's div by a
 * Python float). */
static struct amp_tensor *denominator(struct amp_optimizer *opt,
				      struct amp_tensor *second_moment,
				      double bias_correction2_sqrt)
{
	struct amp_tensor *denom = amp_sqrt(second_moment);
	int status = denom ? AMP_OK : amp_last_status();

	if (status == AMP_OK)
		status = amp_div_scalar_(denom, bias_correction2_sqrt);
	if (status == AMP_OK)
		status = amp_add_scalar_(denom, opt->eps);
	if (status != AMP_OK) {
		amp_tensor_free(denom);
		return NULL;
	}
	return denom;
}

static int adam_update_impl(struct amp_optimizer *opt, bool decoupled,
			    struct amp_tensor *param, struct amp_tensor *grad,
			    struct amp_tensor *state[OPTIM_SLOT_COUNT])
{
	int status = state[OPTIM_STEP] ? AMP_OK : init_state(opt, param, state);
	struct amp_tensor *g = amp_tensor_ref(grad);
	struct amp_tensor *v = state[OPTIM_EXP_AVG_SQ];

	if (status == AMP_OK)
		status = amp_add_scalar_(state[OPTIM_STEP], 1);
	if (status == AMP_OK && opt->weight_decay != 0) {
		if (decoupled) {
			status = amp_mul_scalar_(param,
						 1 - opt->lr * opt->weight_decay);
		} else {
			amp_tensor_free(g);
			g = l2_gradient(opt, param, grad);
			status = g ? AMP_OK : amp_last_status();
		}
	}
	if (status == AMP_OK)
		status = amp_lerp_(state[OPTIM_EXP_AVG], g, 1 - opt->beta1);
	if (status == AMP_OK)
		status = amp_mul_scalar_(v, opt->beta2);
	if (status == AMP_OK)
		status = amp_addcmul_(v, g, g, 1 - opt->beta2);
	if (status == AMP_OK && opt->amsgrad) {
		status = amp_maximum_out(state[OPTIM_MAX_EXP_AVG_SQ], v,
					 state[OPTIM_MAX_EXP_AVG_SQ]);
		v = state[OPTIM_MAX_EXP_AVG_SQ];
	}
	amp_tensor_free(g);
	if (status != AMP_OK)
		return status;

	double step = amp_tensor_item(state[OPTIM_STEP]);
	double bias_correction1 = 1 - pow(opt->beta1, step);
	double bias_correction2 = 1 - pow(opt->beta2, step);
	double step_size = opt->lr / bias_correction1;
	/* Python's bias_correction2**0.5 is C pow(), which differs from
	 * sqrt() in the last bit for about one step count in a thousand */
	struct amp_tensor *denom = denominator(opt, v, pow(bias_correction2, 0.5));
	if (!denom)
		return amp_last_status();
	status = amp_addcdiv_(param, state[OPTIM_EXP_AVG], denom, -step_size);
	amp_tensor_free(denom);
	return status;
}

static int adam_update(struct amp_optimizer *opt, struct amp_tensor *param,
		       struct amp_tensor *grad,
		       struct amp_tensor *state[OPTIM_SLOT_COUNT])
{
	return adam_update_impl(opt, false, param, grad, state);
}

static int adamw_update(struct amp_optimizer *opt, struct amp_tensor *param,
			struct amp_tensor *grad,
			struct amp_tensor *state[OPTIM_SLOT_COUNT])
{
	return adam_update_impl(opt, true, param, grad, state);
}

const struct optim_algorithm optim_adam = { "Adam", adam_update };
const struct optim_algorithm optim_adamw = { "AdamW", adamw_update };

static amp_optimizer *adam_new(const struct optim_algorithm *algorithm,
			       amp_tensor *const *params, int count,
			       const struct amp_adam_opts *opts)
{
	/* Adam's checks, in its order; `not 0.0 <= x` also refuses NaN */
	if (!(0.0 <= opts->lr)) {
		optim_invalid("learning rate", opts->lr);
		return NULL;
	}
	if (!(0.0 <= opts->eps)) {
		optim_invalid("epsilon value", opts->eps);
		return NULL;
	}
	if (!(0.0 <= opts->beta1 && opts->beta1 < 1.0)) {
		optim_invalid("beta parameter at index 0", opts->beta1);
		return NULL;
	}
	if (!(0.0 <= opts->beta2 && opts->beta2 < 1.0)) {
		optim_invalid("beta parameter at index 1", opts->beta2);
		return NULL;
	}
	if (!(0.0 <= opts->weight_decay)) {
		optim_invalid("weight_decay value", opts->weight_decay);
		return NULL;
	}
	struct amp_optimizer *opt = optim_new(algorithm, params, count, opts->lr);
	if (opt) {
		opt->beta1 = opts->beta1;
		opt->beta2 = opts->beta2;
		opt->eps = opts->eps;
		opt->weight_decay = opts->weight_decay;
		opt->amsgrad = opts->amsgrad;
	}
	return opt;
}

amp_optimizer *amp_adam_new(amp_tensor *const *params, int count,
			    const struct amp_adam_opts *opts)
{
	struct amp_adam_opts defaults = AMP_ADAM_OPTS;

	return adam_new(&optim_adam, params, count, opts ? opts : &defaults);
}

amp_optimizer *amp_adamw_new(amp_tensor *const *params, int count,
			     const struct amp_adam_opts *opts)
{
	struct amp_adam_opts defaults = AMP_ADAMW_OPTS;

	return adam_new(&optim_adamw, params, count, opts ? opts : &defaults);
}
