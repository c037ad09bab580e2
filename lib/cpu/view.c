/* View kernels: outputs share the input's storage (amp_tensor_view) with
 * new shape/strides/offset, as ATen's view ops do.  reshape falls back to
 * a contiguous copy when no strides can express the new shape, and detach
 * aliases the storage without being a view (x.detach()._is_view() is
 * False in PyTorch).  Argument layouts:
 *   transpose.int (self, int dim0, int dim1)     t (self)
 *   reshape (self, ints shape)                   unsqueeze (self, int dim)
 *   slice.Tensor (self, int dim, int start, int end, int step)
 *   detach (self) */
#include "cpu_ops.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static int view_output(struct amp_call *call, struct amp_tensor *base,
		       int ndim, const int64_t *shape, const int64_t *strides,
		       int64_t offset)
{
	return cpu_set_output(call, amp_tensor_view(base, ndim, shape, strides,
						    offset));
}

static int transpose(struct amp_call *call, struct amp_tensor *self,
		     int64_t dim0, int64_t dim1)
{
	int64_t shape[AMP_MAX_DIMS], strides[AMP_MAX_DIMS];

	if (!cpu_wrap_dim(&dim0, self->ndim) || !cpu_wrap_dim(&dim1, self->ndim))
		return cpu_error_with(amp_last_status(), self, NULL);
	memcpy(shape, self->shape, sizeof shape);
	memcpy(strides, self->strides, sizeof strides);
	if (self->ndim > 0) {
		shape[dim0] = self->shape[dim1];
		shape[dim1] = self->shape[dim0];
		strides[dim0] = self->strides[dim1];
		strides[dim1] = self->strides[dim0];
	}
	return view_output(call, self, self->ndim, shape, strides,
			   self->offset);
}

int amp_forward_transpose(struct amp_call *call)
{
	return transpose(call, cpu_arg_tensor(call, 0), call->args[1].i,
			 call->args[2].i);
}

int amp_forward_t(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);

	if (self->ndim > 2) {
		amp_error(AMP_ERR_INVALID,
			  "t() expects a tensor with <= 2 dimensions, but self "
			  "is %dD",
			  self->ndim);
		return cpu_error_with(AMP_ERR_INVALID, self, NULL);
	}
	return transpose(call, self, 0, self->ndim < 2 ? 0 : 1);
}

/* at::infer_size: resolves one -1 and checks the element count. */
static int infer_shape(const struct amp_tensor *self, int ndim, int64_t *shape)
{
	int64_t numel = amp_tensor_numel(self), known = 1;
	int infer = -1;

	for (int d = 0; d < ndim; d++) {
		if (shape[d] == -1) {
			if (infer >= 0)
				return amp_error(AMP_ERR_INVALID,
						 "only one dimension can be "
						 "inferred");
			infer = d;
		} else if (shape[d] < 0) {
			return amp_error(AMP_ERR_INVALID,
					 "invalid shape dimension %" PRId64,
					 shape[d]);
		} else {
			known *= shape[d];
		}
	}
	if (infer >= 0 && known != 0 && numel % known == 0) {
		shape[infer] = numel / known;
		return AMP_OK;
	}
	if (infer < 0 && known == numel)
		return AMP_OK;
	char text[160];
	int used = snprintf(text, sizeof text, "shape '[");
	for (int d = 0; d < ndim && used < (int)sizeof text; d++)
		used += snprintf(text + used, sizeof text - (size_t)used,
				 d ? ", %" PRId64 : "%" PRId64, shape[d]);
	return amp_error(AMP_ERR_INVALID,
			 "%s]' is invalid for input of size %" PRId64, text,
			 numel);
}

/* ATen's computeStride: strides viewing `self` with the new shape, or
 * false when the old strides cannot express it (then reshape copies). */
static bool compute_strides(const struct amp_tensor *self, int ndim,
			    const int64_t *shape, int64_t *strides)
{
	int64_t numel = amp_tensor_numel(self);

	if (self->ndim == 0) {
		for (int d = 0; d < ndim; d++)
			strides[d] = 1;
		return true;
	}
	if (numel == 0) {
		if (ndim == self->ndim &&
		    !memcmp(shape, self->shape, (size_t)ndim * sizeof *shape)) {
			memcpy(strides, self->strides,
			       (size_t)ndim * sizeof *strides);
			return true;
		}
		for (int d = ndim - 1; d >= 0; d--)
			strides[d] = d == ndim - 1
					     ? 1
					     : (shape[d + 1] > 1 ? shape[d + 1] : 1) *
						       strides[d + 1];
		return true;
	}
	int view_d = ndim - 1;
	int64_t chunk_base_stride = self->strides[self->ndim - 1];
	int64_t tensor_numel = 1, view_numel = 1;
	for (int tensor_d = self->ndim - 1; tensor_d >= 0; tensor_d--) {
		tensor_numel *= self->shape[tensor_d];
		if (tensor_d == 0 ||
		    (self->shape[tensor_d - 1] != 1 &&
		     self->strides[tensor_d - 1] !=
			     tensor_numel * chunk_base_stride)) {
			while (view_d >= 0 &&
			       (view_numel < tensor_numel || shape[view_d] == 1)) {
				strides[view_d] = view_numel * chunk_base_stride;
				view_numel *= shape[view_d];
				view_d--;
			}
			if (view_numel != tensor_numel)
				return false;
			if (tensor_d > 0) {
				chunk_base_stride = self->strides[tensor_d - 1];
				tensor_numel = 1;
				view_numel = 1;
			}
		}
	}
	return view_d == -1;
}

int amp_forward_reshape(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	int ndim = call->args[1].ints.count;
	int64_t shape[AMP_MAX_DIMS], strides[AMP_MAX_DIMS];
	int status;

	memcpy(shape, call->args[1].ints.v, sizeof shape);
	status = infer_shape(self, ndim, shape);
	if (status != AMP_OK)
		return cpu_error_with(status, self, NULL);
	if (compute_strides(self, ndim, shape, strides))
		return view_output(call, self, ndim, shape, strides,
				   self->offset);
	/* _unsafe_view(clone(contiguous)): a fresh tensor, not a view */
	struct amp_tensor *copy = amp_tensor_alloc(ndim, shape, self->dtype,
						   self->device);
	if (copy)
		amp_tensor_gather(self, self->dtype, amp_tensor_data(copy));
	return cpu_set_output(call, copy);
}

int amp_forward_slice(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	int64_t dim = call->args[1].i, start = call->args[2].i;
	int64_t end = call->args[3].i, step = call->args[4].i;
	int64_t shape[AMP_MAX_DIMS], strides[AMP_MAX_DIMS];

	if (self->ndim == 0) {
		amp_error(AMP_ERR_INVALID,
			  "slice() cannot be applied to a 0-dim tensor.");
		return cpu_error_with(AMP_ERR_INVALID, self, NULL);
	}
	if (!cpu_wrap_dim(&dim, self->ndim))
		return cpu_error_with(amp_last_status(), self, NULL);
	if (step <= 0)
		return amp_error(AMP_ERR_INVALID, "slice step must be positive");
	int64_t size = self->shape[dim];
	if (start < 0)
		start += size;
	if (end < 0)
		end += size;
	start = start < 0 ? 0 : start > size ? size : start;
	end = end < start ? start : end > size ? size : end;
	memcpy(shape, self->shape, sizeof shape);
	memcpy(strides, self->strides, sizeof strides);
	shape[dim] = (end - start + step - 1) / step;
	strides[dim] = self->strides[dim] * step;
	return view_output(call, self, self->ndim, shape, strides,
			   self->offset + start * self->strides[dim]);
}

int amp_forward_unsqueeze(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	int64_t dim = call->args[1].i;
	int64_t shape[AMP_MAX_DIMS], strides[AMP_MAX_DIMS];
	int ndim = self->ndim + 1;

	if (!cpu_wrap_dim(&dim, ndim))
		return cpu_error_with(amp_last_status(), self, NULL);
	if (ndim > AMP_MAX_DIMS)
		return amp_error(AMP_ERR_UNSUPPORTED,
				 "unsqueeze: more than %d dimensions",
				 AMP_MAX_DIMS);
	for (int d = 0, s = 0; d < ndim; d++) {
		if (d == dim) {
			shape[d] = 1;
			strides[d] = dim >= self->ndim
					     ? 1
					     : self->shape[dim] * self->strides[dim];
			continue;
		}
		shape[d] = self->shape[s];
		strides[d] = self->strides[s];
		s++;
	}
	return view_output(call, self, ndim, shape, strides, self->offset);
}

/* An alias of the storage that is not a view: the view helper links the
 * base for views, which detach's output must not have. */
int amp_forward_detach(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *alias = amp_tensor_view(self, self->ndim, self->shape,
						   self->strides, self->offset);

	if (alias) {
		amp_tensor_free(alias->base);
		alias->base = NULL;
	}
	return cpu_set_output(call, alias);
}
