/* Backward of normalisation, reductions, shape ops, embedding and
 * dropout, and the double backward of their backward ops. */
#include "grad/formulas.h"
#include "grad/grad_ops.h"

#include <stdlib.h>

/* softmax / log_softmax (self, int dim, dtype?): ATen's
 * _softmax_backward_data, which writes the input's dtype. */
int grad_softmax(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, grad_op_softmax_backward_data(
					grad_out(ctx, 0), ctx->outputs[0],
					grad_arg(ctx, 1)->i,
					grad_meta(ctx, 0)->dtype));
}

int grad_log_softmax(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, grad_op_log_softmax_backward_data(
					grad_out(ctx, 0), ctx->outputs[0],
					grad_arg(ctx, 1)->i,
					grad_meta(ctx, 0)->dtype));
}

/* layer_norm (input, ints normalized_shape, weight?, bias?, eps); flat
 * tensor inputs: input 0, weight 1, bias 2 */
int grad_layer_norm(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *out[3];
	struct amp_tensor *weight = ctx->inputs[1], *bias = ctx->inputs[2];
	int status = grad_op_layer_norm_backward(grad_out(ctx, 0),
						 ctx->inputs[0],
						 grad_arg(ctx, 1), weight, bias,
						 grad_arg(ctx, 4)->d, out);

	if (status != AMP_OK)
		return status;
	/* outputs: grad_input, then grad_weight / grad_bias when given */
	int inputs[3] = { 0, -1, -1 };
	int next = 1;
	if (weight)
		inputs[next++] = 1;
	if (bias)
		inputs[next++] = 2;
	for (int o = 0; o < 3; o++) {
		if (out[o] && inputs[o] >= 0 && ctx->needs[inputs[o]])
			grad_set(ctx, inputs[o], out[o]);
		else
			amp_tensor_free(out[o]);
	}
	return AMP_OK;
}

/* The input's shape with the reduced dimensions kept as 1 (dims wrapped;
 * none given means all). */
static void kept_shape(const struct amp_tensor_meta *meta,
		       const struct amp_arg *dims, int64_t *shape,
		       int64_t *reduced_count)
{
	bool reduced[AMP_MAX_DIMS] = { false };

	for (int i = 0; i < dims->ints.count; i++) {
		int64_t d = dims->ints.v[i];
		if (d < 0)
			d += meta->ndim;
		if (d >= 0 && d < meta->ndim)
			reduced[d] = true;
	}
	*reduced_count = 1;
	for (int d = 0; d < meta->ndim; d++) {
		bool all = dims->ints.count == 0;
		shape[d] = reduced[d] || all ? 1 : meta->shape[d];
		if (reduced[d] || all)
			*reduced_count *= meta->shape[d];
	}
}

/* grad expanded to the input's shape, after re-inserting the reduced
 * dimensions when keepdim was false (ATen's sum_backward). */
static struct amp_tensor *expand_reduced(struct amp_grad_ctx *ctx,
					 const struct amp_arg *dims,
					 bool keepdim, int64_t *count)
{
	const struct amp_tensor_meta *meta = grad_meta(ctx, 0);
	struct amp_tensor *g = grad_out(ctx, 0);
	int64_t shape[AMP_MAX_DIMS];

	*count = amp_shape_numel(meta->ndim, meta->shape);
	if (!dims)
		return grad_op_expand(g, meta->ndim, meta->shape);
	kept_shape(meta, dims, shape, count);
	struct amp_tensor *kept = keepdim ? amp_tensor_ref(g)
					  : amp_reshape(g, meta->ndim, shape);
	if (!kept)
		return NULL;
	struct amp_tensor *expanded =
		grad_op_expand(kept, meta->ndim, meta->shape);
	amp_tensor_free(kept);
	return expanded;
}

/* sum (self, dtype?) */
int grad_sum(struct amp_grad_ctx *ctx)
{
	int64_t count;

	return grad_set(ctx, 0, expand_reduced(ctx, NULL, false, &count));
}

/* sum.dim_IntList (self, ints dim, bool keepdim, dtype?) */
int grad_sum_dim(struct amp_grad_ctx *ctx)
{
	int64_t count;

	return grad_set(ctx, 0, expand_reduced(ctx, grad_arg(ctx, 1),
					       grad_arg(ctx, 2)->b, &count));
}

/* mean: sum's gradient divided by the count */
int grad_mean(struct amp_grad_ctx *ctx)
{
	int64_t count;
	struct amp_tensor *expanded = expand_reduced(ctx, NULL, false, &count);

	return grad_set(ctx, 0, grad_scale(expanded, 1.0 / (double)count));
}

int grad_mean_dim(struct amp_grad_ctx *ctx)
{
	int64_t count;
	struct amp_tensor *expanded = expand_reduced(
		ctx, grad_arg(ctx, 1), grad_arg(ctx, 2)->b, &count);

	return grad_set(ctx, 0, grad_scale(expanded, 1.0 / (double)count));
}

/* linalg_vector_norm (self, Scalar ord, dtype?) over all elements:
 * ord 2 only, self * (grad / norm). */
int grad_linalg_vector_norm(struct amp_grad_ctx *ctx)
{
	if (grad_arg(ctx, 1)->scalar.value != 2)
		return amp_error(AMP_ERR_UNSUPPORTED,
				 "the derivative for 'linalg_vector_norm' is "
				 "implemented for ord=2 only");
	struct amp_tensor *ratio = amp_div(grad_out(ctx, 0), ctx->outputs[0]);

	struct amp_tensor *result = ratio ? amp_mul(ctx->inputs[0], ratio)
					  : NULL;

	amp_tensor_free(ratio);
	return grad_set(ctx, 0, result);
}

/* cat (tensors, dim): each input's slice of the gradient. */
int grad_cat(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	int64_t dim = grad_arg(ctx, 1)->i;
	int64_t offset = 0;

	if (dim < 0)
		dim += g->ndim;
	for (int i = 0; i < ctx->node->ninputs; i++) {
		const struct amp_tensor_meta *meta = grad_meta(ctx, i);
		/* legacy empty 1-D inputs take no part */
		if (meta->ndim == 1 && meta->shape[0] == 0 && g->ndim != 1)
			continue;
		int64_t size = meta->shape[dim];
		if (ctx->needs[i]) {
			int status = grad_set(ctx, i,
					      amp_slice(g, (int)dim, offset,
							offset + size, 1));
			if (status != AMP_OK)
				return status;
		}
		offset += size;
	}
	return AMP_OK;
}

/* stack (tensors, dim): slice i of the gradient, without the new dim. */
int grad_stack(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *g = grad_out(ctx, 0);
	int64_t dim = grad_arg(ctx, 1)->i;

	if (dim < 0)
		dim += g->ndim;
	for (int i = 0; i < ctx->node->ninputs; i++) {
		if (!ctx->needs[i])
			continue;
		const struct amp_tensor_meta *meta = grad_meta(ctx, i);
		struct amp_tensor *slice = amp_slice(g, (int)dim, i, i + 1, 1);
		int status = grad_set(ctx, i,
				      slice ? amp_reshape(slice, meta->ndim,
							  meta->shape)
					    : NULL);
		amp_tensor_free(slice);
		if (status != AMP_OK)
			return status;
	}
	return AMP_OK;
}

/* embedding (weight, indices): a dense gradient for the weight; the
 * indices get none. */
int grad_embedding(struct amp_grad_ctx *ctx)
{
	if (!ctx->needs[0])
		return AMP_OK;
	return grad_set(ctx, 0, grad_op_embedding_dense_backward(
					grad_out(ctx, 0), ctx->inputs[1],
					grad_meta(ctx, 0)->shape[0], -1));
}

/* dropout (input, p, train): grad * mask * 1/(1-p), the mask rebuilt
 * from the saved input and output (an element was kept when its output is
 * not zero; a zero input counts as kept).  The mask is a traced tensor. */
int grad_dropout(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *input = ctx->inputs[0], *output = ctx->outputs[0];
	double p = grad_arg(ctx, 1)->d;
	size_t n = (size_t)amp_tensor_numel(input);
	double *x = malloc((n ? n : 1) * sizeof *x);
	double *y = malloc((n ? n : 1) * sizeof *y);

	if (!x || !y) {
		free(x);
		free(y);
		return amp_error(AMP_ERR_NOMEM, "out of memory in dropout "
						"backward");
	}
	amp_tensor_gather(input, AMP_DTYPE_F64, x);
	amp_tensor_gather(output, AMP_DTYPE_F64, y);
	double scale = p < 1 ? 1.0 / (1.0 - p) : 0.0;
	for (size_t i = 0; i < n; i++)
		x[i] = y[i] != 0 || x[i] == 0 ? scale : 0.0;
	free(y);
	struct amp_tensor *mask = amp_from_data(input->ndim, input->shape,
						AMP_DTYPE_F64, input->device,
						x);
	free(x);
	struct amp_tensor *typed = mask ? amp_to(mask, input->dtype) : NULL;
	amp_tensor_free(mask);
	return grad_set(ctx, 0, grad_mul_own_both(
					amp_tensor_ref(grad_out(ctx, 0)), typed));
}

/* _softmax_backward_data (grad, output, dim, input_dtype):
 *   grad:   _softmax_backward_data(gg, output, dim, grad's dtype)
 *   output: gg * (grad - sum(grad * output)) - grad * sum(gg * output) */
int grad_softmax_backward_data(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *gg = grad_out(ctx, 0);
	struct amp_tensor *grad = ctx->inputs[0], *output = ctx->inputs[1];
	int64_t dim = grad_arg(ctx, 2)->i;
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, grad_op_softmax_backward_data(
						  gg, output, dim,
						  grad_meta(ctx, 0)->dtype));
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *gy = amp_mul(grad, output);
		struct amp_tensor *s = gy ? amp_sum_dim(gy, 1, &dim, true,
							AMP_DTYPE_NONE)
					  : NULL;
		amp_tensor_free(gy);
		struct amp_tensor *first = grad_mul_own_both(
			amp_tensor_ref(gg),
			grad_sub_own_both(amp_tensor_ref(grad), s));
		struct amp_tensor *ggy = amp_mul(gg, output);
		struct amp_tensor *s2 = ggy ? amp_sum_dim(ggy, 1, &dim, true,
							  AMP_DTYPE_NONE)
					    : NULL;
		amp_tensor_free(ggy);
		struct amp_tensor *second =
			grad_mul_own_both(amp_tensor_ref(grad), s2);
		status = grad_set(ctx, 1, grad_sub_own_both(first, second));
	}
	return status;
}

/* _log_softmax_backward_data (grad, output, dim, input_dtype):
 *   grad:   _log_softmax_backward_data(gg, output, dim, grad's dtype)
 *   output: -(gg * exp(output)) * sum(grad) */
int grad_log_softmax_backward_data(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *gg = grad_out(ctx, 0);
	struct amp_tensor *grad = ctx->inputs[0], *output = ctx->inputs[1];
	int64_t dim = grad_arg(ctx, 2)->i;
	int status = AMP_OK;

	if (ctx->needs[0])
		status = grad_set(ctx, 0, grad_op_log_softmax_backward_data(
						  gg, output, dim,
						  grad_meta(ctx, 0)->dtype));
	if (status == AMP_OK && ctx->needs[1]) {
		struct amp_tensor *e = amp_exp(output);
		struct amp_tensor *product =
			grad_mul_own_both(amp_tensor_ref(gg), e);
		struct amp_tensor *s =
			amp_sum_dim(grad, 1, &dim, true, AMP_DTYPE_NONE);
		status = grad_set(ctx, 1, grad_neg_own(grad_mul_own_both(
						  product, s)));
	}
	return status;
}

/* embedding_dense_backward (grad, indices, num_weights, ...): linear in
 * grad, whose gradient is the embedding lookup of gg. */
int grad_embedding_dense_backward(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_embedding(grad_out(ctx, 0), ctx->inputs[1]));
}

/* ------------------------------------- layer_norm's double backward */

/* Mean over the normalized (last k) dimensions, kept. */
static struct amp_tensor *row_mean(struct amp_tensor *t, int k)
{
	int64_t dims[AMP_MAX_DIMS];

	for (int d = 0; d < k; d++)
		dims[d] = t->ndim - k + d;
	return amp_mean_dim(t, k, dims, true, AMP_DTYPE_NONE);
}

/* Sum over the leading (not normalized) dimensions. */
static struct amp_tensor *leading_sum(struct amp_tensor *t, int k)
{
	int64_t dims[AMP_MAX_DIMS];
	int lead = t->ndim - k;

	for (int d = 0; d < lead; d++)
		dims[d] = d;
	return lead ? amp_sum_dim(t, lead, dims, false, AMP_DTYPE_NONE)
		    : amp_tensor_ref(t);
}

/* native_layer_norm_backward composed from differentiable ops:
 *   xhat = (x - mean) * rstd,  dy = grad * weight,
 *   grad_input  = rstd * (dy - mean(dy) - xhat * mean(dy * xhat)),
 *   grad_weight = sum(grad * xhat),  grad_bias = sum(grad).
 * out[] receives the three (grad_weight/grad_bias only when wanted). */
static int layer_norm_backward_composed(struct amp_tensor *grad,
					struct amp_tensor *x,
					struct amp_tensor *weight, int k,
					double eps, const bool want[3],
					struct amp_tensor *out[3])
{
	struct amp_tensor *mean = row_mean(x, k);
	struct amp_tensor *centered = mean ? amp_sub(x, mean) : NULL;
	amp_tensor_free(mean);
	struct amp_tensor *square = centered ? amp_mul(centered, centered)
					     : NULL;
	struct amp_tensor *variance = square ? row_mean(square, k) : NULL;
	amp_tensor_free(square);
	struct amp_tensor *shifted = variance ? amp_add_scalar(variance, eps)
					      : NULL;
	amp_tensor_free(variance);
	struct amp_tensor *rstd = shifted ? amp_pow_scalar(shifted, -0.5)
					  : NULL;
	amp_tensor_free(shifted);
	struct amp_tensor *xhat = centered && rstd ? amp_mul(centered, rstd)
						   : NULL;
	amp_tensor_free(centered);
	if (!xhat) {
		amp_tensor_free(rstd);
		return amp_last_status();
	}
	int status = AMP_OK;
	if (want[0]) {
		struct amp_tensor *dy = weight ? amp_mul(grad, weight)
					       : amp_tensor_ref(grad);
		struct amp_tensor *mean_dy = dy ? row_mean(dy, k) : NULL;
		struct amp_tensor *dy_xhat = dy ? amp_mul(dy, xhat) : NULL;
		struct amp_tensor *mean_dy_xhat =
			dy_xhat ? row_mean(dy_xhat, k) : NULL;
		amp_tensor_free(dy_xhat);
		struct amp_tensor *term =
			mean_dy_xhat ? amp_mul(xhat, mean_dy_xhat) : NULL;
		amp_tensor_free(mean_dy_xhat);
		struct amp_tensor *inner = grad_sub_own_both(
			grad_sub_own_both(dy, mean_dy), term);
		out[0] = inner ? amp_mul(rstd, inner) : NULL;
		amp_tensor_free(inner);
		if (!out[0])
			status = amp_last_status();
	}
	if (status == AMP_OK && want[1]) {
		struct amp_tensor *product = amp_mul(grad, xhat);
		out[1] = product ? leading_sum(product, k) : NULL;
		amp_tensor_free(product);
		if (!out[1])
			status = amp_last_status();
	}
	if (status == AMP_OK && want[2]) {
		out[2] = leading_sum(grad, k);
		if (!out[2])
			status = amp_last_status();
	}
	amp_tensor_free(xhat);
	amp_tensor_free(rstd);
	return status;
}

/* A tensor the nested differentiation can start from: the saved tensor
 * itself under create_graph (so the result stays connected), else a
 * detached alias requiring grad. */
static struct amp_tensor *differentiable_leaf(struct amp_tensor *t,
					      bool create_graph)
{
	if (create_graph && t->requires_grad)
		return amp_tensor_ref(t);
	struct amp_tensor *leaf = amp_detach(t);
	if (leaf && amp_tensor_set_requires_grad(leaf, true) != AMP_OK) {
		amp_tensor_free(leaf);
		return NULL;
	}
	return leaf;
}

/* native_layer_norm_backward (grad, input, ints normalized_shape,
 * weight?, bias?, eps): the gradient of sum(gg_input * grad_input +
 * gg_weight * grad_weight + gg_bias * grad_bias) with respect to grad,
 * input and weight, by differentiating the composed backward above
 * (ATen writes layer_norm_double_backward out by hand). */
int grad_layer_norm_backward(struct amp_grad_ctx *ctx)
{
	struct amp_tensor *weight = ctx->inputs[2];
	int k = grad_arg(ctx, 2)->ints.count;
	double eps = grad_arg(ctx, 5)->d;
	struct amp_tensor *gg[3] = { grad_out(ctx, 0), NULL, NULL };
	int next = 1;

	if (weight)
		gg[1] = grad_out(ctx, next++);
	if (grad_meta(ctx, 3)->ndim >= 0)
		gg[2] = grad_out(ctx, next);
	bool want[3] = { gg[0] != NULL, gg[1] != NULL, gg[2] != NULL };
	int nleaves = weight ? 3 : 2;
	struct amp_tensor *leaves[3] = { NULL, NULL, NULL };
	struct amp_tensor *out[3] = { NULL, NULL, NULL };
	struct amp_tensor *grads[3] = { NULL, NULL, NULL };
	bool previous = amp_set_grad_enabled(true);
	int status = AMP_OK;

	for (int i = 0; i < nleaves && status == AMP_OK; i++) {
		leaves[i] = differentiable_leaf(ctx->inputs[i],
						ctx->create_graph);
		if (!leaves[i])
			status = amp_last_status();
	}
	if (status == AMP_OK)
		status = layer_norm_backward_composed(
			leaves[0], leaves[1], weight ? leaves[2] : NULL, k, eps,
			want, out);
	amp_set_grad_enabled(previous);
	struct amp_tensor *outputs[3], *grad_outputs[3];
	int n = 0;
	for (int o = 0; o < 3; o++)
		if (out[o] && amp_tensor_requires_grad(out[o])) {
			outputs[n] = out[o];
			grad_outputs[n++] = gg[o];
		}
	if (status == AMP_OK && n)
		status = amp_grad(n, outputs, grad_outputs, nleaves, leaves,
				  grads, ctx->create_graph, ctx->create_graph,
				  true);
	for (int i = 0; i < nleaves; i++) {
		if (status == AMP_OK && grads[i] && ctx->needs[i])
			grad_set(ctx, i, grads[i]);
		else
			amp_tensor_free(grads[i]);
		amp_tensor_free(leaves[i]);
	}
	for (int o = 0; o < 3; o++)
		amp_tensor_free(out[o]);
	return status;
}
