/* Backward of views, layout ops and casts: the gradient is the inverse
 * view or cast of the output gradient.  Also the view-like backward ops
 * (expand, slice_backward) for double backward. */
#include "grad/formulas.h"
#include "grad/grad_ops.h"

int grad_transpose(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_transpose(grad_out(ctx, 0),
					      (int)grad_arg(ctx, 1)->i,
					      (int)grad_arg(ctx, 2)->i));
}

int grad_t(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_t(grad_out(ctx, 0)));
}

/* reshape and unsqueeze: back to the input's shape (PyTorch's
 * ViewBackward / UnsqueezeBackward). */
int grad_reshape(struct amp_grad_ctx *ctx)
{
	const struct amp_tensor_meta *meta = grad_meta(ctx, 0);

	return grad_set(ctx, 0,
			amp_reshape(grad_out(ctx, 0), meta->ndim, meta->shape));
}

/* slice (self, dim, start, end, step) */
int grad_slice(struct amp_grad_ctx *ctx)
{
	const struct amp_tensor_meta *meta = grad_meta(ctx, 0);

	return grad_set(ctx, 0,
			grad_op_slice_backward(grad_out(ctx, 0), meta->ndim,
					       meta->shape, grad_arg(ctx, 1)->i,
					       grad_arg(ctx, 2)->i,
					       grad_arg(ctx, 3)->i,
					       grad_arg(ctx, 4)->i));
}

/* contiguous and clone pass the gradient through (CloneBackward0). */
int grad_identity(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_tensor_ref(grad_out(ctx, 0)));
}

/* ToCopyBackward0: back to the source dtype, a traced cast.  Also the
 * node of every autocast cast, so gradients reach f32 leaves as f32. */
int grad_to(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_to(grad_out(ctx, 0), grad_meta(ctx, 0)->dtype));
}

int grad_to_device(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_to_device(grad_out(ctx, 0),
					      grad_meta(ctx, 0)->device));
}

/* The engine sums the gradient to the input's shape (sum_to_size). */
int grad_expand(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0, amp_tensor_ref(grad_out(ctx, 0)));
}

/* slice_backward (grad, ints sizes, dim, start, end, step): linear in
 * grad, whose gradient is the slice again. */
int grad_slice_backward(struct amp_grad_ctx *ctx)
{
	return grad_set(ctx, 0,
			amp_slice(grad_out(ctx, 0), (int)grad_arg(ctx, 2)->i,
				  grad_arg(ctx, 3)->i, grad_arg(ctx, 4)->i,
				  grad_arg(ctx, 5)->i));
}
