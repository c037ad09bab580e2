/* cross_entropy_loss: a composite, as in ATen.  Class-index targets run
 * nll_loss(log_softmax(self, class_dim, self.dtype)); a target of the
 * input's shape holds class probabilities and runs
 * -(log_softmax(self) * target [* weight]).sum(...) with the reduction.
 * Every step is a dispatched op, so on CUDA (where the op is not in the
 * autocast lists) log_softmax and nll_loss autocast individually.
 * Argument layout: cross_entropy_loss (self, target, weight?,
 * int reduction, int ignore_index, float label_smoothing) */
#include "cpu_ops.h"

#include <math.h>

static struct amp_tensor *then(struct amp_tensor *previous,
			       struct amp_tensor *next)
{
	amp_tensor_free(previous);
	return next;
}

/* The probability-target form (ATen's cross_entropy_loss_prob_target). */
static struct amp_tensor *prob_target(struct amp_tensor *self,
				      struct amp_tensor *target,
				      struct amp_tensor *weight,
				      enum amp_reduction reduction)
{
	int class_dim = self->ndim == 1 ? 0 : 1;
	int64_t classes = self->shape[class_dim];
	struct amp_tensor *input = amp_log_softmax(self, class_dim, self->dtype);
	struct amp_tensor *terms = input ? amp_mul(input, target) : NULL;

	if (terms && weight) {
		int64_t shape[AMP_MAX_DIMS];
		for (int d = 0; d < input->ndim; d++)
			shape[d] = 1;
		shape[class_dim] = weight->shape[0];
		struct amp_tensor *broadcast =
			input->ndim > 1 ? amp_reshape(weight, input->ndim, shape)
					: amp_tensor_ref(weight);
		terms = then(terms, broadcast ? amp_mul(terms, broadcast) : NULL);
		amp_tensor_free(broadcast);
	}
	int64_t numel = input ? amp_tensor_numel(input) : 0;
	amp_tensor_free(input);
	if (!terms)
		return NULL;
	if (reduction == AMP_REDUCTION_NONE) {
		int64_t dim = class_dim;
		terms = then(terms, amp_sum_dim(terms, 1, &dim, false,
						AMP_DTYPE_NONE));
		return terms ? then(terms, amp_neg(terms)) : NULL;
	}
	struct amp_tensor *total = then(terms, amp_sum(terms, AMP_DTYPE_NONE));
	total = total ? then(total, amp_neg(total)) : NULL;
	if (!total || reduction == AMP_REDUCTION_SUM)
		return total;
	/* mean: divided by the number of samples (NaN when empty) */
	struct amp_tensor *count = amp_scalar_tensor(
		numel ? (double)(numel / classes) : 0.0, total->dtype,
		total->device);
	struct amp_tensor *mean = count ? amp_div(total, count) : NULL;
	amp_tensor_free(count);
	amp_tensor_free(total);
	return mean;
}

int amp_forward_cross_entropy(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *target = cpu_arg_tensor(call, 1);
	struct amp_tensor *weight = cpu_arg_tensor(call, 2);
	enum amp_reduction reduction = (enum amp_reduction)call->args[3].i;
	int64_t ignore_index = call->args[4].i;

	if (self->ndim >= 1 && cpu_same_shape(self, target)) {
		if (!amp_dtype_is_floating(target->dtype)) {
			amp_error(AMP_ERR_DTYPE,
				  "Expected floating point type for target with "
				  "class probabilities, got %s",
				  amp_dtype_torch_name(target->dtype));
			return cpu_error_with(AMP_ERR_DTYPE, self, target);
		}
		if (ignore_index >= 0) {
			amp_error(AMP_ERR_INVALID, "ignore_index is not supported "
						   "for floating point target");
			return cpu_error_with(AMP_ERR_INVALID, self, target);
		}
		int64_t classes = self->shape[self->ndim == 1 ? 0 : 1];
		if (weight && (weight->ndim != 1 || weight->shape[0] != classes)) {
			char text[128];
			amp_error(AMP_ERR_INVALID,
				  "cross_entropy: weight tensor should be defined "
				  "either for all %lld classes or no classes but "
				  "got weight tensor of shape: %s",
				  (long long)classes,
				  cpu_shape_string(weight->ndim, weight->shape,
						   text, sizeof text));
			return cpu_error_with(AMP_ERR_INVALID, self, weight);
		}
		return cpu_set_output(call, prob_target(self, target, weight,
							reduction));
	}
	int class_dim = self->ndim == 1 ? 0 : 1;
	struct amp_tensor *log_probs =
		amp_log_softmax(self, class_dim, self->dtype);
	if (!log_probs)
		return amp_last_status();
	struct amp_tensor *loss =
		amp_nll_loss(log_probs, target, weight, reduction, ignore_index);
	amp_tensor_free(log_probs);
	return cpu_set_output(call, loss);
}
