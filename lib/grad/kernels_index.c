/* expand (the view sum/mean backward use) and the backward kernels of
 * indexing ops.  Argument layouts:
 *   expand (self, ints size)                      -1 keeps a size
 *   slice_backward (grad_output, ints input_sizes, int dim, int start,
 *                   int end, int step)
 *   embedding_dense_backward (grad_output, indices, int num_weights,
 *                             int padding_idx, bool scale_grad_by_freq) */
#include "grad/kernels.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int amp_forward_expand(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	const struct amp_arg *size = &call->args[1];
	int64_t shape[AMP_MAX_DIMS];
	struct amp_tensor view;

	for (int d = 0; d < size->ints.count; d++) {
		int source = d - (size->ints.count - self->ndim);
		shape[d] = size->ints.v[d] == -1 && source >= 0
				   ? self->shape[source]
				   : size->ints.v[d];
	}
	int status = cpu_expand(self, size->ints.count, shape, &view);
	if (status != AMP_OK)
		return cpu_error_with(status, self, NULL);
	return cpu_set_output(call, amp_tensor_view(self, view.ndim, view.shape,
						    view.strides,
						    self->offset));
}

/* ATen's slice bounds: negative indices wrap, then clamp to [0, size]. */
static void slice_bounds(int64_t size, int64_t *start, int64_t *end)
{
	if (*start < 0)
		*start += size;
	if (*end < 0)
		*end += size;
	*start = *start < 0 ? 0 : *start > size ? size : *start;
	*end = *end < *start ? *start : *end > size ? size : *end;
}

int amp_forward_slice_backward(struct amp_call *call)
{
	struct amp_tensor *grad = cpu_arg_tensor(call, 0);
	const struct amp_arg *sizes = &call->args[1];
	int64_t dim = call->args[2].i;
	int64_t start = call->args[3].i, end = call->args[4].i;
	int64_t step = call->args[5].i;
	int ndim = sizes->ints.count;

	if (!cpu_wrap_dim(&dim, ndim))
		return cpu_error_with(amp_last_status(), grad, NULL);
	if (step <= 0 || grad->ndim != ndim)
		return amp_error(AMP_ERR_INVALID,
				 "slice_backward: bad step or dimensions");
	slice_bounds(sizes->ints.v[dim], &start, &end);
	struct amp_tensor *out = amp_tensor_alloc(ndim, sizes->ints.v,
						  grad->dtype, grad->device);
	if (!out)
		return amp_last_status();
	memset(amp_tensor_data(out), 0, amp_tensor_nbytes(out));
	int64_t shape[AMP_MAX_DIMS], strides[AMP_MAX_DIMS];
	memcpy(shape, out->shape, sizeof shape);
	memcpy(strides, out->strides, sizeof strides);
	shape[dim] = (end - start + step - 1) / step;
	strides[dim] *= step;
	if (amp_shape_numel(ndim, shape) != amp_tensor_numel(grad)) {
		amp_tensor_free(out);
		return amp_error(AMP_ERR_INVALID,
				 "slice_backward: grad_output does not match "
				 "the slice");
	}
	struct amp_tensor *window = amp_tensor_view(
		out, ndim, shape, strides, start * out->strides[dim]);
	size_t n = (size_t)amp_tensor_numel(grad);
	void *values = cpu_alloc(n, grad->dtype);
	int status = window && values ? AMP_OK : amp_last_status();
	if (status == AMP_OK) {
		amp_tensor_gather(grad, grad->dtype, values);
		status = amp_tensor_write(window, grad->dtype, values, n);
	}
	free(values);
	amp_tensor_free(window);
	return cpu_set_output_or_free(call, out, status);
}

#define DEFINE_EMBEDDING_BACKWARD(name, T)                                   \
	static int name(const T *g, const int64_t *indices, T *out,          \
			int64_t count, int64_t width, int64_t num_weights,   \
			int64_t padding_idx)                                 \
	{                                                                    \
		for (int64_t i = 0; i < count; i++) {                        \
			int64_t row = indices[i];                            \
			if (row == padding_idx)                              \
				continue;                                    \
			if (row < 0 || row >= num_weights)                   \
				return amp_error(AMP_ERR_INVALID,            \
						 "index %" PRId64 " is out of " \
						 "bounds for dimension 0 with " \
						 "size %" PRId64,              \
						 row, num_weights);           \
			for (int64_t j = 0; j < width; j++)                  \
				out[row * width + j] += g[i * width + j];    \
		}                                                            \
		return AMP_OK;                                               \
	}

DEFINE_EMBEDDING_BACKWARD(embedding_backward_f32, float)
DEFINE_EMBEDDING_BACKWARD(embedding_backward_f64, double)

int amp_forward_embedding_dense_backward(struct amp_call *call)
{
	struct amp_tensor *grad = cpu_arg_tensor(call, 0);
	struct amp_tensor *indices = cpu_arg_tensor(call, 1);
	int64_t num_weights = call->args[2].i;
	int64_t padding_idx = call->args[3].i;

	if (!amp_dtype_is_floating(grad->dtype))
		return cpu_not_implemented("embedding_dense_backward", grad);
	int64_t count = amp_tensor_numel(indices);
	int64_t width = grad->ndim ? grad->shape[grad->ndim - 1] : 1;
	if (amp_tensor_numel(grad) != count * width)
		return amp_error(AMP_ERR_INVALID,
				 "embedding_dense_backward: grad_output does "
				 "not match indices");
	enum amp_dtype opmath = cpu_opmath(grad->dtype);
	void *owned = NULL;
	const void *g = cpu_load(grad, grad->dtype, opmath, &owned);
	int64_t *index = cpu_alloc((size_t)count, AMP_DTYPE_I64);
	void *values = calloc((size_t)(num_weights * width) + 1,
			      amp_dtype_size(opmath));
	int status = g && index && values
			     ? AMP_OK
			     : amp_error(AMP_ERR_NOMEM, "out of memory in "
							"embedding backward");
	if (status == AMP_OK) {
		amp_tensor_gather(indices, AMP_DTYPE_I64, index);
		status = opmath == AMP_DTYPE_F32
				 ? embedding_backward_f32(g, index, values,
							  count, width,
							  num_weights,
							  padding_idx)
				 : embedding_backward_f64(g, index, values,
							  count, width,
							  num_weights,
							  padding_idx);
	}
	if (status == AMP_OK) {
		int64_t shape[2] = { num_weights, width };
		status = grad_output_from(call, 0, 2, shape, grad->dtype,
					  grad->device, values, opmath);
	}
	free(owned);
	free(index);
	free(values);
	return status;
}
