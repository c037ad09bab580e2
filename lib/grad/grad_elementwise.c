/* Backward of the elementwise ops (PyTorch's derivatives.yaml formulas),
 * and the double backward of the activation backward ops.  Broadcast
 * gradients are summed to each input's shape by the engine. */
#include "grad/formulas.h"
#include "grad/grad_ops.h"

#include <math.h>

/* add.Tensor / sub.Tensor (self, other, Scalar alpha) */
int grad_add(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, amp_tensor_ref(g));
	if (status == AMP_OK && ctx->needs[1])
		status = grad_set(ctx, 1,
				  grad_scale(amp_tensor_ref(g),
					     grad_arg(ctx, 2)->scalar.value));
	return status;
}

int grad_sub(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	double alpha = grad_arg(ctx, 2)->scalar.value;
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, amp_tensor_ref(g));
	if (status == AMP_OK && ctx->needs[1])
		status = grad_set(ctx, 1, alpha == 1 ? amp_neg(g)
						     : amp_mul_scalar(g, -alpha));
	return status;
}

int grad_mul(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, amp_mul(g, ctx->inputs[1]));
	if (status == AMP_OK && ctx->needs[1])
		status = grad_set(ctx, 1, amp_mul(g, ctx->inputs[0]));
	return status;
}

/* self: grad / other;  other: -grad * ((self / other) / other) */
int grad_div(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	struct amp_tensor *self = ctx->inputs[0], *other = ctx->inputs[1];
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, amp_div(g, other));
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *ratio = amp_div(self, other);
		struct amp_tensor *twice = ratio ? amp_div(ratio, other) : NULL;
		amp_tensor_free(ratio);
		status = grad_set(ctx, 1,
				  grad_mul_own_both(amp_neg(g), twice));
	}
	return status;
}

/* add.Scalar (self, Scalar other, Scalar alpha) */
int grad_add_scalar(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_tensor_ref(grad_out(ctx, 0)));
}

/* mul.Scalar (self, Scalar other) */
int grad_mul_scalar(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_mul_scalar(grad_out(ctx, 0),
					       grad_arg(ctx, 1)->scalar.value));
}

int grad_neg(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_neg(grad_out(ctx, 0)));
}

/* pow.Tensor_Tensor (self, exponent):
 *   self:     grad * (exponent * self ^ (exponent - 1))
 *   exponent: grad * (result * log(self)) */
int grad_pow(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	struct amp_tensor *self = ctx->inputs[0], *exponent = ctx->inputs[1];
	int status = AMP_OK;

	if (ctx->needs[0]) {
		struct amp_tensor *lowered = amp_add_scalar(exponent, -1);
		struct amp_tensor *power = lowered ? amp_pow(self, lowered)
						   : NULL;
		amp_tensor_free(lowered);
		struct amp_tensor *factor = power ? amp_mul(exponent, power)
						  : NULL;
		amp_tensor_free(power);
		status = grad_set(ctx, 0, factor ? amp_mul(g, factor) : NULL);
		amp_tensor_free(factor);
	}
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *log_self = amp_log(self);
		struct amp_tensor *factor =
			log_self ? amp_mul(ctx->outputs[0], log_self) : NULL;
		amp_tensor_free(log_self);
		status = grad_set(ctx, 1, factor ? amp_mul(g, factor) : NULL);
		amp_tensor_free(factor);
	}
	return status;
}

/* pow.Tensor_Scalar (self, Scalar exponent): zeros for exponent 0, else
 * grad * (exponent * self ^ (exponent - 1)) */
int grad_pow_scalar(struct amp_grad_ctx *ctx)
{
	double exponent = grad_arg(ctx, 1)->scalar.value;

	if (exponent == 0)
		return grad_set(ctx, 0, grad_zeros_like_input(ctx, 0));
	struct amp_tensor *power = amp_pow_scalar(ctx->inputs[0], exponent - 1);
	struct amp_tensor *factor = grad_scale(power, exponent);
	struct amp_tensor *result = factor ? amp_mul(grad_out(ctx, 0), factor)
					   : NULL;
	amp_tensor_free(factor);
	return grad_set(ctx, 0, result);
}

int grad_exp(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_mul(grad_out(ctx, 0), ctx->outputs[0]));
}

int grad_log(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_div(grad_out(ctx, 0), ctx->inputs[0]));
}

int grad_relu(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, grad_op_threshold_backward(grad_out(ctx, 0),
							   ctx->outputs[0], 0));
}

/* gelu (self, bool tanh) */
int grad_gelu(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, grad_op_gelu_backward(grad_out(ctx, 0),
						      ctx->inputs[0],
						      grad_arg(ctx, 1)->b));
}

int grad_sigmoid(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, grad_op_sigmoid_backward(grad_out(ctx, 0),
							 ctx->outputs[0]));
}

int grad_tanh(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, grad_op_tanh_backward(grad_out(ctx, 0),
						      ctx->outputs[0]));
}

/* addcmul (self, tensor1, tensor2, Scalar value) */
int grad_addcmul(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	double value = grad_arg(ctx, 3)->scalar.value;
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, amp_tensor_ref(g));
	if (status == AMP_OK && ctx->needs[1])
		status = grad_set(ctx, 1,
				  grad_scale(amp_mul(g, ctx->inputs[2]), value));
	if (status == AMP_OK && ctx->needs[2])
		status = grad_set(ctx, 2,
				  grad_scale(amp_mul(g, ctx->inputs[1]), value));
	return status;
}

/* grad / (2 * result) */
int grad_sqrt(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *twice = amp_mul_scalar(ctx->outputs[0], 2);
	struct amp_tensor *result = twice ? amp_div(grad_out(ctx, 0), twice)
					  : NULL;

	amp_tensor_free(twice);
	return grad_set(ctx, 0, result);
}

/* -grad * (result * result) */
int grad_reciprocal(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *square = amp_mul(ctx->outputs[0], ctx->outputs[0]);

	return grad_set(ctx, 0,
			grad_mul_own_both(amp_neg(grad_out(ctx, 0)), square));
}

/* clamp (self, double min, double max), NaN = None */
int grad_clamp(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0,
			grad_op_clamp_backward(grad_out(ctx, 0), ctx->inputs[0],
					       grad_arg(ctx, 1)->d,
					       grad_arg(ctx, 2)->d));
}

/* ---------------------------------------------------- double backward */

/* threshold_backward (grad, self, threshold): linear in grad; zero
 * almost everywhere in self. */
int grad_threshold_backward(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, grad_op_threshold_backward(
					grad_out(ctx, 0), ctx->inputs[1],
					grad_arg(ctx, 2)->scalar.value));
}

/* gelu''(x), composed from dispatched ops:
 *   none: phi(x) * (2 - x^2), phi the standard normal density
 *   tanh: (1 - T^2) * (u' - x * T * u'^2 + 3 k c x^2), with
 *         u = k (x + c x^3), T = tanh(u), u' = k (1 + 3 c x^2). */
static struct amp_tensor *gelu_second_derivative(struct amp_tensor *x,
						 bool tanh_form)
{
	const double k = 0.7978845608028654, c = 0.044715;
	struct amp_tensor *square = amp_mul(x, x);

	if (!square)
		return NULL;
	if (!tanh_form) {
		struct amp_tensor *half = amp_mul_scalar(square, -0.5);
		struct amp_tensor *e = half ? amp_exp(half) : NULL;
		amp_tensor_free(half);
		struct amp_tensor *phi = grad_scale(e, 0.3989422804014327);
		struct amp_tensor *negated = amp_neg(square);
		struct amp_tensor *shifted =
			negated ? amp_add_scalar(negated, 2) : NULL;
		amp_tensor_free(negated);
		amp_tensor_free(square);
		return grad_mul_own_both(phi, shifted);
	}
	/* u' = k (1 + 3 c x^2) */
	struct amp_tensor *cx2 = amp_mul_scalar(square, 3 * c);
	struct amp_tensor *derivative =
		grad_scale(cx2 ? amp_add_scalar(cx2, 1) : NULL, k);
	amp_tensor_free(cx2);
	/* u = k x (1 + c x^2) */
	struct amp_tensor *cx2_u = amp_mul_scalar(square, c);
	struct amp_tensor *one_plus = cx2_u ? amp_add_scalar(cx2_u, 1) : NULL;
	amp_tensor_free(cx2_u);
	struct amp_tensor *u =
		grad_scale(one_plus ? amp_mul(x, one_plus) : NULL, k);
	amp_tensor_free(one_plus);
	struct amp_tensor *t = u ? amp_tanh(u) : NULL;
	amp_tensor_free(u);
	/* 1 - T^2 */
	struct amp_tensor *t2 = t ? amp_mul(t, t) : NULL;
	struct amp_tensor *negated = grad_neg_own(t2);
	struct amp_tensor *sech2 = negated ? amp_add_scalar(negated, 1) : NULL;
	amp_tensor_free(negated);
	/* u' - x T u'^2 + 3 k c x^2 */
	struct amp_tensor *xt = t ? amp_mul(x, t) : NULL;
	amp_tensor_free(t);
	struct amp_tensor *d2 = derivative ? amp_mul(derivative, derivative)
					   : NULL;
	struct amp_tensor *middle = grad_mul_own_both(xt, d2);
	struct amp_tensor *last = grad_scale(amp_tensor_ref(square), 3 * k * c);
	amp_tensor_free(square);
	struct amp_tensor *inner = grad_add_own_both(
		grad_sub_own_both(derivative, middle), last);
	return grad_mul_own_both(sech2, inner);
}

/* gelu_backward (grad, self, tanh):
 *   grad: gelu_backward(gg, self);  self: gg * grad * gelu''(self) */
int grad_gelu_backward(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *gg = grad_out(ctx, 0);
	struct amp_tensor *grad = ctx->inputs[0], *self = ctx->inputs[1];
	bool tanh_form = grad_arg(ctx, 2)->b;
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0,
				  grad_op_gelu_backward(gg, self, tanh_form));
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *second = gelu_second_derivative(self,
								   tanh_form);
		struct amp_tensor *product = amp_mul(gg, grad);
		status = grad_set(ctx, 1, grad_mul_own_both(product, second));
	}
	return status;
}

/* sigmoid_backward (grad, output):
 *   grad: sigmoid_backward(gg, output);  output: gg * grad * (1 - 2 output) */
int grad_sigmoid_backward(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *gg = grad_out(ctx, 0);
	struct amp_tensor *grad = ctx->inputs[0], *output = ctx->inputs[1];
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, grad_op_sigmoid_backward(gg, output));
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *scaled = amp_mul_scalar(output, -2);
		struct amp_tensor *factor =
			scaled ? amp_add_scalar(scaled, 1) : NULL;
		amp_tensor_free(scaled);
		status = grad_set(ctx, 1,
				  grad_mul_own_both(amp_mul(gg, grad), factor));
	}
	return status;
}

/* tanh_backward (grad, output):
 *   grad: tanh_backward(gg, output);  output: -2 * output * grad * gg */
int grad_tanh_backward(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *gg = grad_out(ctx, 0);
	struct amp_tensor *grad = ctx->inputs[0], *output = ctx->inputs[1];
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, grad_op_tanh_backward(gg, output));
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *product =
			grad_mul_own(amp_mul(gg, grad), output);
		status = grad_set(ctx, 1, grad_scale(product, -2));
	}
	return status;
}

/* clamp_backward (grad, self, min, max): linear in grad. */
int grad_clamp_backward(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, grad_op_clamp_backward(grad_out(ctx, 0),
						       ctx->inputs[1],
						       grad_arg(ctx, 2)->d,
						       grad_arg(ctx, 3)->d));
}
