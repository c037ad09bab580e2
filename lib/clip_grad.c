/* torch.nn.utils.clip_grad_norm_ and clip_grad_value_, with grad mode
 * off, op for op:
 *   norms = [linalg_vector_norm(g, p) for g in grads]
 *   total = linalg_vector_norm(stack(norms), p)
 *   coef = clamp(reciprocal(total + 1e-6) * max_norm, max=1.0)
 *   g.mul_(coef) for every gradient (also when coef is 1: PyTorch avoids
 *   the host sync a test would need)
 * and g.clamp_(-clip_value, clip_value). */
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The gradients of the parameters that have one (new references). */
static int collect_grads(amp_tensor *const *params, int count,
			 amp_tensor **grads)
{
	int n = 0;

	for (int i = 0; i < count; i++) {
		AMP_ASSERT(params[i]);
		amp_tensor *g = amp_tensor_grad(params[i]);
		if (g)
			grads[n++] = g;
	}
	return n;
}

static void free_all(amp_tensor **tensors, int count)
{
	for (int i = 0; i < count; i++)
		amp_tensor_free(tensors[i]);
}

/* torch.stack(norms): the dispatcher takes at most AMP_MAX_LIST tensors
 * per list, so longer lists are stacked in chunks and the chunks
 * concatenated (the same vector). */
static amp_tensor *stack_all(amp_tensor **norms, int n)
{
	amp_tensor *chunks[AMP_MAX_LIST];
	int nchunks = (n + AMP_MAX_LIST - 1) / AMP_MAX_LIST;
	int made = 0;

	if (n <= AMP_MAX_LIST)
		return amp_stack(norms, n, 0);
	if (nchunks > AMP_MAX_LIST) {
		amp_error(AMP_ERR_UNSUPPORTED,
			  "clip_grad_norm_: more than %d gradients",
			  AMP_MAX_LIST * AMP_MAX_LIST);
		return NULL;
	}
	for (; made < nchunks; made++) {
		int first = made * AMP_MAX_LIST;
		int size = n - first < AMP_MAX_LIST ? n - first : AMP_MAX_LIST;
		if (!(chunks[made] = amp_stack(norms + first, size, 0)))
			break;
	}
	amp_tensor *all = made == nchunks ? amp_cat(chunks, nchunks, 0) : NULL;
	free_all(chunks, made);
	return all;
}

/* _get_total_norm: the norm of the per-gradient norms, stacked on the
 * first gradient's device. */
static amp_tensor *total_norm(amp_tensor **grads, int n, double norm_type)
{
	amp_tensor **norms = calloc((size_t)n, sizeof *norms);
	amp_tensor *total = NULL;
	int made = 0;

	if (!norms) {
		amp_error(AMP_ERR_NOMEM, "out of memory clipping gradients");
		return NULL;
	}
	for (; made < n; made++) {
		amp_tensor *norm =
			amp_linalg_vector_norm(grads[made], norm_type, AMP_DTYPE_NONE);
		if (norm && norm->device != grads[0]->device) {
			amp_tensor *moved = amp_to_device(norm, grads[0]->device);
			amp_tensor_free(norm);
			norm = moved;
		}
		if (!norm)
			break;
		norms[made] = norm;
	}
	if (made == n) {
		amp_tensor *stacked = stack_all(norms, n);
		if (stacked)
			total = amp_linalg_vector_norm(stacked, norm_type,
						       AMP_DTYPE_NONE);
		amp_tensor_free(stacked);
	}
	free_all(norms, made);
	free(norms);
	return total;
}

/* clip_coef_clamped = clamp(max_norm / (total_norm + 1e-6), max=1.0),
 * where Python's float / Tensor is reciprocal() * float. */
static amp_tensor *clip_coefficient(amp_tensor *total, double max_norm)
{
	amp_tensor *shifted = amp_add_scalar(total, 1e-6);
	amp_tensor *inverse = shifted ? amp_reciprocal(shifted) : NULL;
	amp_tensor *coef = inverse ? amp_mul_scalar(inverse, max_norm) : NULL;
	amp_tensor *clamped = coef ? amp_clamp(coef, NAN, 1.0) : NULL;

	amp_tensor_free(shifted);
	amp_tensor_free(inverse);
	amp_tensor_free(coef);
	return clamped;
}

static int clip_with_norm(amp_tensor **grads, int n, amp_tensor *total,
			  double max_norm)
{
	amp_tensor *coef = clip_coefficient(total, max_norm);
	int status = coef ? AMP_OK : amp_last_status();

	for (int i = 0; i < n && status == AMP_OK; i++) {
		amp_tensor *on_device = coef->device == grads[i]->device
						? amp_tensor_ref(coef)
						: amp_to_device(coef, grads[i]->device);
		status = on_device ? amp_mul_(grads[i], on_device)
				   : amp_last_status();
		amp_tensor_free(on_device);
	}
	amp_tensor_free(coef);
	return status;
}

amp_tensor *amp_clip_grad_norm_(amp_tensor *const *params, int count,
				double max_norm, double norm_type,
				bool error_if_nonfinite)
{
	AMP_ASSERT(count >= 0 && (count == 0 || params));
	amp_tensor **grads = calloc(count ? (size_t)count : 1, sizeof *grads);
	if (!grads) {
		amp_error(AMP_ERR_NOMEM, "out of memory clipping gradients");
		return NULL;
	}
	bool grad_mode = amp_set_grad_enabled(false);
	int n = collect_grads(params, count, grads);
	amp_tensor *total = n == 0 ? amp_scalar_tensor(0.0, AMP_DTYPE_F32,
						       AMP_DEVICE_CPU)
				   : total_norm(grads, n, norm_type);
	if (total && n > 0 && error_if_nonfinite &&
	    !isfinite(amp_tensor_item(total))) {
		char order[48];
		train_format_float(order, sizeof order, norm_type);
		amp_error(AMP_ERR_INVALID,
			  "The total norm of order %s for gradients from "
			  "`parameters` is non-finite, so it cannot be clipped. "
			  "To disable this error and scale the gradients by "
			  "the non-finite norm anyway, set "
			  "`error_if_nonfinite=False`",
			  order);
		amp_tensor_free(total);
		total = NULL;
	}
	if (total && n > 0 && clip_with_norm(grads, n, total, max_norm) != AMP_OK) {
		amp_tensor_free(total);
		total = NULL;
	}
	amp_set_grad_enabled(grad_mode);
	free_all(grads, n);
	free(grads);
	return total;
}

int amp_clip_grad_value_(amp_tensor *const *params, int count,
			 double clip_value)
{
	int status = AMP_OK;

	AMP_ASSERT(count >= 0 && (count == 0 || params));
	bool grad_mode = amp_set_grad_enabled(false);
	for (int i = 0; i < count && status == AMP_OK; i++) {
		AMP_ASSERT(params[i]);
		amp_tensor *g = amp_tensor_grad(params[i]);
		if (g)
			status = amp_clamp_(g, -clip_value, clip_value);
		amp_tensor_free(g);
	}
	amp_set_grad_enabled(grad_mode);
	return status;
}
