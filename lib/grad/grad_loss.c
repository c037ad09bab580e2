/* Backward of the losses and the double backward of their backward ops.
 * cross_entropy is composite (log_softmax + nll_loss, each recorded), so
 * it has no formula of its own. */
#include "grad/formulas.h"
#include "grad/grad_ops.h"
#include "cpu/cpu_ops.h"

/* mse_loss (self, target, reduction): ATen's mse_loss_backward for both,
 * with self and target swapped for the target. */
int grad_mse_loss(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	int64_t reduction = grad_arg(ctx, 2)->i;
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, grad_op_mse_loss_backward(
						  g, ctx->inputs[0],
						  ctx->inputs[1], reduction));
	if (status == AMP_OK && ctx->needs[1])
		status = grad_set(ctx, 1, grad_op_mse_loss_backward(
						  g, ctx->inputs[1],
						  ctx->inputs[0], reduction));
	return status;
}

/* nll_loss (self, target, weight?, reduction, ignore_index) */
int grad_nll_loss(struct amp_grad_ctx *ctx)
{
	if (!ctx->needs[0])
		return AMP_OK;
	return grad_set(ctx, 0, grad_op_nll_loss_backward(
					grad_out(ctx, 0), ctx->inputs[0],
					ctx->inputs[1], ctx->inputs[2],
					grad_arg(ctx, 3)->i, grad_arg(ctx, 4)->i));
}

/* The element count a 'mean' reduction divides by: the broadcast size of
 * the loss's elementwise operands. */
static int64_t loss_numel(const struct amp_grad_ctx *ctx, int count)
{
	int ndim = 0;
	int64_t shape[AMP_MAX_DIMS];

	for (int i = 0; i < count; i++) {
		const struct amp_tensor_meta *meta = grad_meta(ctx, i);
		if (meta->ndim >= 0 &&
		    cpu_broadcast_into(&ndim, shape, meta->ndim, meta->shape) !=
			    AMP_OK)
			amp_clear_error();
	}
	return amp_shape_numel(ndim, shape);
}

/* The elementwise loss gradient times the output gradient, reduced as
 * the loss was: broadcast for 'none', scaled by 1/N for 'mean'.  Takes
 * ownership of `elementwise`. */
static struct amp_tensor *apply_output_grad(struct amp_grad_ctx *ctx,
					    struct amp_tensor *elementwise,
					    int64_t reduction, int64_t numel)
{
	struct amp_tensor *weighted = grad_mul_own(elementwise, grad_out(ctx, 0));

	return grad_reduce_scale(weighted, reduction, numel);
}

/* binary_cross_entropy (self, target, weight?, reduction):
 *   self:   binary_cross_entropy_backward
 *   target: grad * weight * (log(1 - self) - log(self)) */
int grad_binary_cross_entropy(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *self = ctx->inputs[0], *weight = ctx->inputs[2];
	int64_t reduction = grad_arg(ctx, 3)->i;
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, grad_op_binary_cross_entropy_backward(
						  grad_out(ctx, 0), self,
						  ctx->inputs[1], weight,
						  reduction));
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *negated = amp_neg(self);
		struct amp_tensor *complement =
			negated ? amp_add_scalar(negated, 1) : NULL;
		amp_tensor_free(negated);
		struct amp_tensor *log_complement =
			complement ? amp_log(complement) : NULL;
		amp_tensor_free(complement);
		struct amp_tensor *term =
			grad_sub_own_both(log_complement, amp_log(self));
		if (weight)
			term = grad_mul_own(term, weight);
		status = grad_set(ctx, 1,
				  apply_output_grad(ctx, term, reduction,
						    loss_numel(ctx, 3)));
	}
	return status;
}

/* binary_cross_entropy_with_logits (self, target, weight?, pos_weight?,
 * reduction), composed from dispatched ops:
 *   self:   (sigmoid(x) * (pw * t + 1 - t) - pw * t) * weight * grad
 *           (sigmoid(x) - t without pos_weight)
 *   target: (log(1 - sigmoid(x)) - pw * log(sigmoid(x))) * weight * grad
 *           (-x without pos_weight) */
int grad_bce_with_logits(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *x = ctx->inputs[0], *t = ctx->inputs[1];
	struct amp_tensor *weight = ctx->inputs[2], *pos_weight = ctx->inputs[3];
	int64_t reduction = grad_arg(ctx, 4)->i;
	int64_t numel = loss_numel(ctx, 4);
	int status = AMP_OK;

	if (ctx->needs[0]) {
		struct amp_tensor *s = amp_sigmoid(x);
		struct amp_tensor *term;
		if (pos_weight) {
			struct amp_tensor *pt = amp_mul(pos_weight, t);
			struct amp_tensor *c = pt ? amp_sub(pt, t) : NULL;
			struct amp_tensor *c1 = c ? amp_add_scalar(c, 1) : NULL;
			amp_tensor_free(c);
			term = grad_sub_own_both(grad_mul_own_both(s, c1), pt);
		} else {
			term = s ? amp_sub(s, t) : NULL;
			amp_tensor_free(s);
		}
		if (weight)
			term = grad_mul_own(term, weight);
		status = grad_set(ctx, 0,
				  apply_output_grad(ctx, term, reduction, numel));
	}
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *term;
		if (pos_weight) {
			struct amp_tensor *s = amp_sigmoid(x);
			struct amp_tensor *negated = s ? amp_neg(s) : NULL;
			struct amp_tensor *complement =
				negated ? amp_add_scalar(negated, 1) : NULL;
			amp_tensor_free(negated);
			struct amp_tensor *log_complement =
				complement ? amp_log(complement) : NULL;
			amp_tensor_free(complement);
			struct amp_tensor *log_s = s ? amp_log(s) : NULL;
			amp_tensor_free(s);
			struct amp_tensor *weighted =
				log_s ? grad_mul_own(amp_tensor_ref(pos_weight),
						     log_s)
				      : NULL;
			amp_tensor_free(log_s);
			term = grad_sub_own_both(log_complement, weighted);
		} else {
			term = amp_neg(x);
		}
		if (weight)
			term = grad_mul_own(term, weight);
		status = grad_set(ctx, 1,
				  apply_output_grad(ctx, term, reduction, numel));
	}
	return status;
}

/* --------------------------------------------------- double backward */

/* Sums an elementwise product for reduced losses (the gradient of a 0-dim
 * grad_output), scaled for 'mean'.  Takes ownership. */
static struct amp_tensor *reduce_like_loss(struct amp_tensor *t,
					   int64_t reduction, int64_t numel)
{
	if (reduction == AMP_REDUCTION_NONE)
		return t;
	return grad_reduce_scale(grad_sum_own(t), reduction, numel);
}

/* mse_loss_backward (grad, self, target, reduction), gi = 2 (x - t) g / N:
 *   grad:   sum(2 (x - t) gg) / N  (elementwise for 'none')
 *   self:   2 gg g / N;  target: its negation */
int grad_mse_loss_backward(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *gg = grad_out(ctx, 0);
	struct amp_tensor *grad = ctx->inputs[0];
	int64_t reduction = grad_arg(ctx, 3)->i;
	int64_t numel = amp_tensor_numel(gg);
	int status = AMP_OK;

	if (ctx->needs[0]) {
		struct amp_tensor *d = amp_sub(ctx->inputs[1], ctx->inputs[2]);
		struct amp_tensor *m = grad_scale(grad_mul_own(d, gg), 2);
		status = grad_set(ctx, 0, reduce_like_loss(m, reduction, numel));
	}
	if (status == AMP_OK && (ctx->needs[1] || ctx->needs[2])) {
		struct amp_tensor *m = grad_reduce_scale(
			grad_scale(amp_mul(gg, grad), 2), reduction, numel);
		if (!m)
			return amp_last_status();
		if (ctx->needs[2])
			status = grad_set(ctx, 2, amp_neg(m));
		if (status == AMP_OK && ctx->needs[1])
			status = grad_set(ctx, 1, amp_tensor_ref(m));
		amp_tensor_free(m);
	}
	return status;
}

/* nll_loss_backward (grad, self, target, weight?, reduction,
 * ignore_index): linear in grad, whose gradient is nll_loss(gg). */
int grad_nll_loss_backward(struct amp_grad_ctx *ctx)
{
	if (!ctx->needs[0])
		return AMP_OK;
	return grad_set(ctx, 0, amp_nll_loss(grad_out(ctx, 0), ctx->inputs[2],
					     ctx->inputs[3],
					     (enum amp_reduction)grad_arg(ctx, 4)->i,
					     grad_arg(ctx, 5)->i));
}

/* binary_cross_entropy_backward (grad, self, target, weight?, reduction),
 * gi = g w (x - t) / (x (1 - x)) / N (the 1e-12 clamp is ignored here):
 *   grad:   sum(gg w (x - t) / (x (1 - x))) / N
 *   self:   gg g w (x^2 - 2 t x + t) / (x (1 - x))^2 / N
 *   target: -gg g w / (x (1 - x)) / N */
int grad_binary_cross_entropy_backward(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *gg = grad_out(ctx, 0);
	struct amp_tensor *grad = ctx->inputs[0], *x = ctx->inputs[1];
	struct amp_tensor *t = ctx->inputs[2], *weight = ctx->inputs[3];
	int64_t reduction = grad_arg(ctx, 4)->i;
	int64_t numel = amp_tensor_numel(gg);
	int status = AMP_OK;

	struct amp_tensor *negated = amp_neg(x);
	struct amp_tensor *complement = negated ? amp_add_scalar(negated, 1)
						: NULL;
	amp_tensor_free(negated);
	struct amp_tensor *variance = complement ? amp_mul(x, complement) : NULL;
	amp_tensor_free(complement);
	if (!variance)
		return amp_last_status();
	struct amp_tensor *ggw = weight ? amp_mul(gg, weight) : amp_tensor_ref(gg);
	if (!ggw) {
		amp_tensor_free(variance);
		return amp_last_status();
	}
	if (ctx->needs[0]) {
		struct amp_tensor *ratio = amp_sub(x, t);
		struct amp_tensor *r = ratio ? amp_div(ratio, variance) : NULL;
		amp_tensor_free(ratio);
		struct amp_tensor *m = grad_mul_own(r, ggw);
		status = grad_set(ctx, 0, reduce_like_loss(m, reduction, numel));
	}
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *x2 = amp_mul(x, x);
		struct amp_tensor *tx = grad_scale(amp_mul(t, x), 2);
		struct amp_tensor *numerator =
			grad_add_own_both(grad_sub_own_both(x2, tx),
					  amp_tensor_ref(t));
		struct amp_tensor *square = amp_mul(variance, variance);
		struct amp_tensor *q = numerator && square
					       ? amp_div(numerator, square)
					       : NULL;
		amp_tensor_free(numerator);
		amp_tensor_free(square);
		struct amp_tensor *m = grad_mul_own(grad_mul_own(q, ggw), grad);
		status = grad_set(ctx, 1, grad_reduce_scale(m, reduction, numel));
	}
	if (status == AMP_OK && ctx->needs[2]) {
		struct amp_tensor *q = amp_div(ggw, variance);
		struct amp_tensor *m = grad_neg_own(grad_mul_own(q, grad));
		status = grad_set(ctx, 2, grad_reduce_scale(m, reduction, numel));
	}
	amp_tensor_free(variance);
	amp_tensor_free(ggw);
	return status;
}
