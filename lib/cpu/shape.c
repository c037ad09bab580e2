/* Joining and gathering: cat, stack, embedding.  cat and stack promote
 * their inputs to a common dtype as ATen's result_type does (cat(i64, f32)
 * -> f32, cat(f16, bf16) -> f32).  Argument layouts:
 *   cat (tensors, int dim)     stack (tensors, int dim)
 *   embedding (weight, indices) */
#include "cpu_ops.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ATen skips 1-D empty tensors in cat (legacy behaviour). */
static bool skipped_in_cat(const struct amp_tensor *t)
{
	return t->ndim == 1 && t->shape[0] == 0;
}

static int cat_checks(struct amp_tensor **items, int count, int64_t *dim,
		      const struct amp_tensor **reference)
{
	if (count == 0)
		return amp_error(AMP_ERR_INVALID, "torch.cat(): expected a "
						  "non-empty list of Tensors");
	for (int i = 0; i < count; i++)
		if (items[i]->ndim == 0) {
			amp_error(AMP_ERR_INVALID,
				  "zero-dimensional tensor (at position %d) "
				  "cannot be concatenated",
				  i);
			return cpu_error_with(AMP_ERR_INVALID, items[i], NULL);
		}
	*reference = items[0];
	for (int i = 0; i < count; i++)
		if (!skipped_in_cat(items[i])) {
			*reference = items[i];
			break;
		}
	const struct amp_tensor *ref = *reference;
	if (!cpu_wrap_dim(dim, ref->ndim))
		return cpu_error_with(amp_last_status(), ref, NULL);
	for (int i = 0; i < count; i++) {
		const struct amp_tensor *t = items[i];
		if (skipped_in_cat(t))
			continue;
		if (t->ndim != ref->ndim) {
			amp_error(AMP_ERR_INVALID,
				  "Tensors must have same number of dimensions: "
				  "got %d and %d",
				  ref->ndim, t->ndim);
			return cpu_error_with(AMP_ERR_INVALID, ref, t);
		}
		for (int d = 0; d < t->ndim; d++)
			if (d != *dim && t->shape[d] != ref->shape[d]) {
				amp_error(AMP_ERR_INVALID,
					  "Sizes of tensors must match except in "
					  "dimension %" PRId64 ". Expected size %"
					  PRId64 " but got size %" PRId64
					  " for tensor number %d in the list.",
					  *dim, ref->shape[d], t->shape[d], i);
				return cpu_error_with(AMP_ERR_INVALID, ref, t);
			}
	}
	return AMP_OK;
}

/* Copies each input (converted to the output dtype) into its slice of
 * the output, seen as (outer, total along dim, inner). */
static int cat_into(struct amp_tensor *out, struct amp_tensor **items,
		    int count, int64_t dim)
{
	size_t esize = amp_dtype_size(out->dtype);
	int64_t outer = amp_shape_numel((int)dim, out->shape);
	int64_t inner = amp_shape_numel(out->ndim - (int)dim - 1,
					out->shape + dim + 1);
	int64_t total = out->shape[dim], at = 0;
	char *dst = amp_tensor_data(out);

	for (int i = 0; i < count; i++) {
		const struct amp_tensor *t = items[i];
		if (skipped_in_cat(t) && out->ndim != 1)
			continue;
		int64_t size = t->shape[dim];
		void *owned = NULL;
		const char *src = cpu_load(t, out->dtype, out->dtype, &owned);
		if (!src)
			return amp_last_status();
		size_t block = (size_t)(size * inner) * esize;
		for (int64_t o = 0; o < outer; o++)
			memcpy(dst + (size_t)((o * total + at) * inner) * esize,
			       src + (size_t)o * block, block);
		free(owned);
		at += size;
	}
	return AMP_OK;
}

static enum amp_dtype list_result_type(struct amp_tensor **items, int count)
{
	struct cpu_result_type state;

	cpu_result_type_init(&state);
	for (int i = 0; i < count; i++)
		cpu_result_type_tensor(&state, items[i]);
	return cpu_result_type_get(&state);
}

int amp_forward_cat(struct amp_call *call)
{
	struct amp_tensor **items = call->args[0].list.items;
	int count = call->args[0].list.count;
	int64_t dim = call->args[1].i;
	const struct amp_tensor *ref = NULL;
	int status = cat_checks(items, count, &dim, &ref);

	if (status != AMP_OK)
		return status;
	AMP_ASSERT(ref);
	int64_t shape[AMP_MAX_DIMS];
	memcpy(shape, ref->shape, sizeof shape);
	shape[dim] = 0;
	for (int i = 0; i < count; i++)
		if (!skipped_in_cat(items[i]) || ref->ndim == 1)
			shape[dim] += items[i]->shape[dim];
	struct amp_tensor *out = amp_tensor_alloc(
		ref->ndim, shape, list_result_type(items, count), ref->device);
	if (!out)
		return amp_last_status();
	status = cat_into(out, items, count, dim);
	return cpu_set_output_or_free(call, out, status);
}

/* stack = cat of the inputs each unsqueezed at dim: the copy is the same
 * as cat's on shapes with a 1 inserted. */
int amp_forward_stack(struct amp_call *call)
{
	struct amp_tensor **items = call->args[0].list.items;
	int count = call->args[0].list.count;
	int64_t dim = call->args[1].i;
	char a[128], b[128];

	if (count == 0)
		return amp_error(AMP_ERR_INVALID,
				 "stack expects a non-empty TensorList");
	const struct amp_tensor *first = items[0];
	for (int i = 1; i < count; i++)
		if (items[i]->ndim != first->ndim ||
		    memcmp(items[i]->shape, first->shape,
			   (size_t)first->ndim * sizeof(int64_t))) {
			amp_error(AMP_ERR_INVALID,
				  "stack expects each tensor to be equal size, "
				  "but got %s at entry 0 and %s at entry %d",
				  cpu_shape_string(first->ndim, first->shape, a,
						   sizeof a),
				  cpu_shape_string(items[i]->ndim,
						   items[i]->shape, b, sizeof b),
				  i);
			return cpu_error_with(AMP_ERR_INVALID, first, items[i]);
		}
	if (!cpu_wrap_dim(&dim, first->ndim + 1))
		return cpu_error_with(amp_last_status(), first, NULL);
	if (first->ndim + 1 > AMP_MAX_DIMS)
		return amp_error(AMP_ERR_UNSUPPORTED,
				 "stack: more than %d dimensions", AMP_MAX_DIMS);
	/* each item viewed with a size-1 dim inserted (no copy) */
	struct amp_tensor views[AMP_MAX_LIST];
	struct amp_tensor *view_ptrs[AMP_MAX_LIST];
	for (int i = 0; i < count; i++) {
		struct amp_tensor *v = &views[i];
		cpu_view_layout(items[i], v);
		v->ndim = first->ndim + 1;
		for (int d = 0, s = 0; d < v->ndim; d++) {
			if (d == dim) {
				v->shape[d] = 1;
				v->strides[d] = 1;
				continue;
			}
			v->shape[d] = items[i]->shape[s];
			v->strides[d] = items[i]->strides[s++];
		}
		view_ptrs[i] = v;
	}
	int64_t shape[AMP_MAX_DIMS];
	memcpy(shape, views[0].shape, sizeof shape);
	shape[dim] = count;
	struct amp_tensor *out =
		amp_tensor_alloc(first->ndim + 1, shape,
				 list_result_type(items, count), first->device);
	if (!out)
		return amp_last_status();
	int status = cat_into(out, view_ptrs, count, dim);
	return cpu_set_output_or_free(call, out, status);
}

int amp_forward_embedding(struct amp_call *call)
{
	struct amp_tensor *weight = cpu_arg_tensor(call, 0);
	struct amp_tensor *indices = cpu_arg_tensor(call, 1);

	if (indices->dtype != AMP_DTYPE_I64 && indices->dtype != AMP_DTYPE_I32) {
		char type[48];
		amp_error(AMP_ERR_DTYPE,
			  "Expected tensor for argument #1 'indices' to have one "
			  "of the following scalar types: Long, Int; but got "
			  "%s instead (while checking arguments for embedding)",
			  cpu_tensor_type_name(indices, type, sizeof type));
		return cpu_error_with(AMP_ERR_DTYPE, indices, NULL);
	}
	if (weight->ndim != 2) {
		amp_error(AMP_ERR_INVALID, "'weight' must be 2-D");
		return cpu_error_with(AMP_ERR_INVALID, weight, NULL);
	}
	if (indices->ndim + 1 > AMP_MAX_DIMS)
		return amp_error(AMP_ERR_UNSUPPORTED,
				 "embedding: more than %d dimensions",
				 AMP_MAX_DIMS);
	int64_t rows = weight->shape[0], width = weight->shape[1];
	int64_t count = amp_tensor_numel(indices);
	int64_t shape[AMP_MAX_DIMS];
	memcpy(shape, indices->shape, sizeof(int64_t) * (size_t)indices->ndim);
	shape[indices->ndim] = width;
	int64_t *index = cpu_alloc((size_t)count, AMP_DTYPE_I64);
	if (!index)
		return amp_last_status();
	amp_tensor_gather(indices, AMP_DTYPE_I64, index);
	for (int64_t i = 0; i < count; i++)
		if (index[i] < 0 || index[i] >= rows) {
			free(index);
			amp_error(AMP_ERR_INVALID, "index out of range in self");
			return cpu_error_with(AMP_ERR_INVALID, weight, indices);
		}
	struct amp_tensor *out = amp_tensor_alloc(indices->ndim + 1, shape,
						  weight->dtype, weight->device);
	void *owned = NULL;
	const char *table =
		out ? cpu_load(weight, weight->dtype, weight->dtype, &owned)
		    : NULL;
	if (!table) {
		free(index);
		amp_tensor_free(out);
		return amp_last_status();
	}
	size_t row_bytes = (size_t)width * amp_dtype_size(weight->dtype);
	char *dst = amp_tensor_data(out);
	for (int64_t i = 0; i < count; i++)
		memcpy(dst + (size_t)i * row_bytes,
		       table + (size_t)index[i] * row_bytes, row_bytes);
	free(owned);
	free(index);
	return cpu_set_output(call, out);
}
