/* torch.optim.SGD, the single-tensor path (_single_tensor_sgd), op for
 * op so traces show PyTorch's sequence:
 *   grad = grad.add(param, alpha=weight_decay)          if weight_decay
 *   buf = clone(grad).detach()                           first step
 *   buf.mul_(momentum).add_(grad, alpha=1 - dampening)   later steps
 *   grad = grad.add(buf, alpha=momentum) if nesterov else buf
 *   param.add_(grad, alpha=-lr) */
#include "train_internal.h"

/* grad.add(other, alpha=...): add.Tensor with its alpha argument. */
static struct amp_tensor *add_alpha(struct amp_tensor *a, struct amp_tensor *b,
				    double alpha)
{
	struct amp_call call = { .op = AMP_OP_ADD, .nargs = 3 };

	call.args[0] = amp_arg_tensor(a);
	call.args[1] = amp_arg_tensor(b);
	call.args[2] = amp_arg_scalar(alpha, false);
	return amp_dispatch1(&call);
}

static struct amp_tensor *first_momentum_buffer(struct amp_tensor *grad)
{
	struct amp_tensor *copy = amp_clone(grad);
	struct amp_tensor *buf = copy ? amp_detach(copy) : NULL;

	amp_tensor_free(copy);
	return buf;
}

static int sgd_update(struct amp_optimizer *opt, struct amp_tensor *param,
		      struct amp_tensor *grad,
		      struct amp_tensor *state[OPTIM_SLOT_COUNT])
{
	struct amp_tensor *d = amp_tensor_ref(grad);
	int status = AMP_OK;

	if (opt->weight_decay != 0) {
		struct amp_tensor *decayed = add_alpha(d, param, opt->weight_decay);
		amp_tensor_free(d);
		if (!(d = decayed))
			return amp_last_status();
	}
	if (opt->momentum != 0) {
		struct amp_tensor **buf = &state[OPTIM_MOMENTUM_BUFFER];
		if (!*buf) {
			*buf = first_momentum_buffer(d);
			status = *buf ? AMP_OK : amp_last_status();
		} else {
			status = amp_mul_scalar_(*buf, opt->momentum);
			if (status == AMP_OK)
				status = amp_add_(*buf, d, 1 - opt->dampening);
		}
		struct amp_tensor *next = NULL;
		if (status == AMP_OK && opt->nesterov) {
			next = add_alpha(d, *buf, opt->momentum);
			status = next ? AMP_OK : amp_last_status();
		} else if (status == AMP_OK) {
			next = amp_tensor_ref(*buf);
		}
		amp_tensor_free(d);
		d = next;
	}
	if (status == AMP_OK)
		status = amp_add_(param, d, -opt->lr);
	amp_tensor_free(d);
	return status;
}

const struct optim_algorithm optim_sgd = { "SGD", sgd_update };

amp_optimizer *amp_sgd_new(amp_tensor *const *params, int count, double lr,
			   double momentum, double dampening,
			   double weight_decay, bool nesterov)
{
	/* PyTorch's tests, NaN passing as it does there */
	if (lr < 0.0) {
		optim_invalid("learning rate", lr);
		return NULL;
	}
	if (momentum < 0.0) {
		optim_invalid("momentum value", momentum);
		return NULL;
	}
	if (weight_decay < 0.0) {
		optim_invalid("weight_decay value", weight_decay);
		return NULL;
	}
	if (nesterov && (momentum <= 0 || dampening != 0)) {
		amp_error(AMP_ERR_INVALID,
			  "Nesterov momentum requires a momentum and zero "
			  "dampening");
		return NULL;
	}
	struct amp_optimizer *opt = optim_new(&optim_sgd, params, count, lr);
	if (opt) {
		opt->momentum = momentum;
		opt->dampening = dampening;
		opt->weight_decay = weight_decay;
		opt->nesterov = nesterov;
	}
	return opt;
}
