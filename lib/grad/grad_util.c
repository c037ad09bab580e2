/* Small helpers the backward formulas share: storing a result, chaining
 * dispatched ops while releasing intermediates, sum_to_size. */
#include "grad/grad.h"

int grad_set(struct amp_grad_ctx *ctx, int input, struct amp_tensor *grad)
{
	if (!grad)
		return amp_last_status() ? amp_last_status() : AMP_ERR_NOMEM;
	amp_tensor_free(ctx->grad_inputs[input]);
	ctx->grad_inputs[input] = grad;
	return AMP_OK;
}

struct amp_tensor *grad_scale(struct amp_tensor *t, double factor)
{
	if (!t || factor == 1.0)
		return t;
	struct amp_tensor *scaled = amp_mul_scalar(t, factor);
	amp_tensor_free(t);
	return scaled;
}

struct amp_tensor *grad_mul_own(struct amp_tensor *a, struct amp_tensor *b)
{
	if (!a)
		return NULL;
	struct amp_tensor *product = amp_mul(a, b);
	amp_tensor_free(a);
	return product;
}

/* op(a, b), releasing both.  Either may be NULL (an earlier step failed
 * with its error recorded): the result is then NULL and the other operand
 * is still released, so a chain of formulas needs one check at its end. */
static struct amp_tensor *binary_own_both(
	struct amp_tensor *(*op)(struct amp_tensor *, struct amp_tensor *),
	struct amp_tensor *a, struct amp_tensor *b)
{
	struct amp_tensor *result = a && b ? op(a, b) : NULL;

	amp_tensor_free(a);
	amp_tensor_free(b);
	return result;
}

struct amp_tensor *grad_mul_own_both(struct amp_tensor *a,
				     struct amp_tensor *b)
{
	return binary_own_both(amp_mul, a, b);
}

struct amp_tensor *grad_sub_own_both(struct amp_tensor *a,
				     struct amp_tensor *b)
{
	return binary_own_both(amp_sub, a, b);
}

struct amp_tensor *grad_add_own_both(struct amp_tensor *a,
				     struct amp_tensor *b)
{
	return binary_own_both(amp_add, a, b);
}

struct amp_tensor *grad_neg_own(struct amp_tensor *a)
{
	if (!a)
		return NULL;
	struct amp_tensor *negated = amp_neg(a);
	amp_tensor_free(a);
	return negated;
}

struct amp_tensor *grad_sum_own(struct amp_tensor *a)
{
	if (!a)
		return NULL;
	struct amp_tensor *sum = amp_sum(a, AMP_DTYPE_NONE);
	amp_tensor_free(a);
	return sum;
}

struct amp_tensor *grad_reduce_scale(struct amp_tensor *t, int64_t reduction,
				     int64_t numel)
{
	if (reduction != AMP_REDUCTION_MEAN)
		return t;
	return grad_scale(t, 1.0 / (double)numel);
}

struct amp_tensor *grad_zeros_like_input(const struct amp_grad_ctx *ctx,
					 int input)
{
	const struct amp_tensor_meta *meta = grad_meta(ctx, input);

	return amp_zeros(meta->ndim, meta->shape, meta->dtype, meta->device);
}

struct amp_tensor *grad_sum_to(struct amp_tensor *grad, int ndim,
			       const int64_t *shape)
{
	int lead = grad->ndim - ndim;
	int64_t dims[AMP_MAX_DIMS];
	int ndims = 0;

	if (lead < 0)
		return NULL;
	for (int d = 0; d < lead; d++)
		dims[ndims++] = d;
	for (int d = 0; d < ndim; d++) {
		int64_t size = grad->shape[lead + d];
		if (shape[d] == 1 && size != 1)
			dims[ndims++] = lead + d;
		else if (shape[d] != size)
			return NULL;
	}
	struct amp_tensor *sum =
		ndims ? amp_sum_dim(grad, ndims, dims, true, AMP_DTYPE_NONE)
		      : amp_tensor_ref(grad);
	if (!sum || !lead)
		return sum;
	struct amp_tensor *shaped = amp_reshape(sum, ndim, shape);
	amp_tensor_free(sum);
	return shaped;
}
