/* Backward of the matrix products and convolutions.  The gradients are
 * matrix products of the output gradient with the saved operands as
 * executed (after autocast's casts), so under autocast they run in f16 /
 * bf16 exactly as the forward did. */
#include "grad/formulas.h"
#include "grad/grad_ops.h"

/* a @ b^T, releasing the transposed view. */
static struct amp_tensor *mm_transposed(struct amp_tensor *a,
					struct amp_tensor *b, bool batched,
					bool transpose_first)
{
	struct amp_tensor *view = transpose_first
					  ? (batched ? amp_transpose(a, 1, 2)
						     : amp_t(a))
					  : (batched ? amp_transpose(b, 1, 2)
						     : amp_t(b));
	if (!view)
		return NULL;
	struct amp_tensor *product =
		transpose_first ? (batched ? amp_bmm(view, b) : amp_mm(view, b))
				: (batched ? amp_bmm(a, view) : amp_mm(a, view));
	amp_tensor_free(view);
	return product;
}

/* The two operand gradients of (self +) m1 @ m2, scaled by alpha. */
static int product_grads(struct amp_grad_ctx *ctx, int first, bool batched,
			 double alpha)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	struct amp_tensor *m1 = ctx->inputs[first];
	struct amp_tensor *m2 = ctx->inputs[first + 1];
	int status = AMP_OK;

	if (ctx->needs[first])
		status = grad_set(ctx, first,
				  grad_scale(mm_transposed(g, m2, batched, false),
					     alpha));
	if (status == AMP_OK && ctx->needs[first + 1])
		status = grad_set(ctx, first + 1,
				  grad_scale(mm_transposed(m1, g, batched, true),
					     alpha));
	return status;
}

int grad_mm(struct amp_grad_ctx *ctx)
{
	return product_grads(ctx, 0, false, 1.0);
}

int grad_bmm(struct amp_grad_ctx *ctx)
{
	return product_grads(ctx, 0, true, 1.0);
}

/* addmm / baddbmm (self, m1, m2, Scalar beta, Scalar alpha) */
static int add_product(struct amp_grad_ctx *ctx, bool batched)
{
	double beta = grad_arg(ctx, 3)->scalar.value;
	double alpha = grad_arg(ctx, 4)->scalar.value;
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0,
				  grad_scale(amp_tensor_ref(grad_out(ctx, 0)),
					     beta));
	if (status == AMP_OK)
		status = product_grads(ctx, 1, batched, alpha);
	return status;
}

int grad_addmm(struct amp_grad_ctx *ctx)
{
	return add_product(ctx, false);
}

int grad_baddbmm(struct amp_grad_ctx *ctx)
{
	return add_product(ctx, true);
}

/* linear (input, weight, bias?): input (..., in), weight (out, in).  The
 * leading dimensions are flattened, as ATen's matmul does:
 *   grad_input = grad @ weight,  grad_weight = grad^T @ input,
 *   grad_bias = grad summed over the leading dimensions. */
int grad_linear(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	struct amp_tensor *input = ctx->inputs[0];
	struct amp_tensor *weight = ctx->inputs[1];
	const struct amp_tensor_meta *in_meta = grad_meta(ctx, 0);
	int64_t out_features = g->ndim ? g->shape[g->ndim - 1] : 1;
	int64_t in_features = in_meta->ndim ? in_meta->shape[in_meta->ndim - 1]
					    : 1;
	int64_t rows = amp_tensor_numel(g) / (out_features ? out_features : 1);
	int64_t g_shape[2] = { rows, out_features };
	int64_t in_shape[2] = { rows, in_features };
	struct amp_tensor *g2 = amp_reshape(g, 2, g_shape);
	int status = g2 ? AMP_OK : amp_last_status();

	if (status == AMP_OK && ctx->needs[0]) {
		struct amp_tensor *product = amp_mm(g2, weight);
		status = grad_set(ctx, 0,
				  product ? amp_reshape(product, in_meta->ndim,
							in_meta->shape)
					  : NULL);
		amp_tensor_free(product);
	}
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *input2 = amp_reshape(input, 2, in_shape);
		status = grad_set(ctx, 1,
				  input2 ? mm_transposed(g2, input2, false, true)
					 : NULL);
		amp_tensor_free(input2);
	}
	if (status == AMP_OK && ctx->needs[2]) {
		int64_t dim = 0;
		status = grad_set(ctx, 2,
				  amp_sum_dim(g2, 1, &dim, false,
					      AMP_DTYPE_NONE));
	}
	amp_tensor_free(g2);
	return status;
}

/* conv1d / conv2d (input, weight, bias?, stride, padding, dilation,
 * groups): ATen's convolution_backward. */
int grad_conv(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *out[3];
	bool has_bias = grad_meta(ctx, 2)->ndim >= 0;
	int status = grad_op_convolution_backward(
		grad_out(ctx, 0), ctx->inputs[0], ctx->inputs[1],
		grad_arg(ctx, 3), grad_arg(ctx, 4), grad_arg(ctx, 5),
		grad_arg(ctx, 6)->i, has_bias, out);

	if (status != AMP_OK)
		return status;
	for (int i = 0; i < 3; i++) {
		if (out[i] && ctx->needs[i])
			grad_set(ctx, i, out[i]);
		else
			amp_tensor_free(out[i]);
	}
	return AMP_OK;
}

/* The convolution of the forward (same stride, padding, dilation and
 * groups, no bias) of `input` with `weight`, dispatched. */
static struct amp_tensor *convolve(struct amp_grad_ctx *ctx,
				   struct amp_tensor *input,
				   struct amp_tensor *weight)
{
	struct amp_call call = {
		.op = weight->ndim == 3 ? AMP_OP_CONV1D : AMP_OP_CONV2D,
		.nargs = 7,
		.args = { amp_arg_tensor(input), amp_arg_tensor(weight),
			  amp_arg_opt_tensor(NULL), *grad_arg(ctx, 3),
			  *grad_arg(ctx, 4), *grad_arg(ctx, 5),
			  *grad_arg(ctx, 6) },
	};
	return amp_dispatch1(&call);
}

/* One output of convolution_backward(grad, input, weight), dispatched. */
static struct amp_tensor *convolution_backward_part(struct amp_grad_ctx *ctx,
						    struct amp_tensor *input,
						    struct amp_tensor *weight,
						    int part)
{
	struct amp_tensor *out[3];
	int status = grad_op_convolution_backward(
		ctx->inputs[0], input, weight, grad_arg(ctx, 3),
		grad_arg(ctx, 4), grad_arg(ctx, 5), grad_arg(ctx, 6)->i, false,
		out);

	if (status != AMP_OK)
		return NULL;
	for (int o = 0; o < 3; o++)
		if (o != part)
			amp_tensor_free(out[o]);
	return out[part];
}

/* convolution_backward (grad, input, weight, stride, padding, dilation,
 * groups, has_bias), with gg_input, gg_weight, gg_bias the gradients of
 * its outputs (ATen's _convolution_double_backward):
 *   grad:   conv(gg_input, weight) + conv(input, gg_weight) + gg_bias
 *   weight: the weight gradient of conv(gg_input, weight) for grad
 *   input:  the input gradient of conv(input, gg_weight) for grad */
int grad_convolution_backward(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *gg_input = grad_out(ctx, 0);
	struct amp_tensor *gg_weight = grad_out(ctx, 1);
	struct amp_tensor *gg_bias = ctx->node->noutputs > 2 ? grad_out(ctx, 2)
							     : NULL;
	struct amp_tensor *input = ctx->inputs[1], *weight = ctx->inputs[2];
	int status = AMP_OK;

	if (ctx->needs[0]) {
		const struct amp_tensor_meta *meta = grad_meta(ctx, 0);
		struct amp_tensor *sum = NULL;
		if (gg_input)
			sum = convolve(ctx, gg_input, weight);
		if (gg_weight && (sum || !gg_input)) {
			struct amp_tensor *term = convolve(ctx, input, gg_weight);
			sum = sum ? grad_add_own_both(sum, term) : term;
		}
		if (gg_bias && (sum || (!gg_input && !gg_weight))) {
			/* (O) -> (1, O, 1[, 1]) broadcast over the gradient */
			int64_t shape[AMP_MAX_DIMS];
			int channel = meta->ndim == weight->ndim ? 1 : 0;
			for (int d = 0; d < meta->ndim; d++)
				shape[d] = d == channel ? meta->shape[d] : 1;
			struct amp_tensor *bias = amp_reshape(gg_bias, meta->ndim,
							      shape);
			struct amp_tensor *term =
				bias ? grad_op_expand(bias, meta->ndim,
						      meta->shape)
				     : NULL;
			amp_tensor_free(bias);
			sum = sum ? grad_add_own_both(sum, term) : term;
		}
		status = sum ? grad_set(ctx, 0, sum)
			     : (gg_input || gg_weight || gg_bias
					? amp_last_status()
					: AMP_OK);
	}
	if (status == AMP_OK && ctx->needs[1] && gg_weight)
		status = grad_set(ctx, 1, convolution_backward_part(
						  ctx, input, gg_weight, 0));
	if (status == AMP_OK && ctx->needs[2] && gg_input)
		status = grad_set(ctx, 2, convolution_backward_part(
						  ctx, gg_input, weight, 1));
	return status;
}
