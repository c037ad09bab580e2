/* Helpers shared by the CPU kernels: opmath, PyTorch's result_type,
 * dimension wrapping, broadcasting, opmath buffers and error context. */
#include "cpu_ops.h"
#include "alloc.h"
#include "cast_rows.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cpu_set_output(struct amp_call *call, struct amp_tensor *out)
{
	if (!out)
		return amp_last_status() ? amp_last_status() : AMP_ERR_NOMEM;
	call->outputs[0] = out;
	call->noutputs = 1;
	return AMP_OK;
}

int cpu_set_output_or_free(struct amp_call *call, struct amp_tensor *out,
			   int status)
{
	if (status != AMP_OK) {
		amp_tensor_free(out);
		return status;
	}
	return cpu_set_output(call, out);
}

/* --------------------------------------------------------------- dtypes */

static const enum amp_dtype opmath_of[AMP_DTYPE_COUNT] = {
	[AMP_DTYPE_F64] = AMP_DTYPE_F64,  [AMP_DTYPE_F32] = AMP_DTYPE_F32,
	[AMP_DTYPE_F16] = AMP_DTYPE_F32,  [AMP_DTYPE_BF16] = AMP_DTYPE_F32,
	[AMP_DTYPE_I64] = AMP_DTYPE_I64,  [AMP_DTYPE_I32] = AMP_DTYPE_I64,
	[AMP_DTYPE_BOOL] = AMP_DTYPE_I64,
};

enum amp_dtype cpu_opmath(enum amp_dtype dtype)
{
	return opmath_of[dtype];
}

/* ------------------------------------------------------------ result_type */

static enum amp_dtype promote_skip_undefined(enum amp_dtype a,
					     enum amp_dtype b)
{
	if (a == CPU_DTYPE_UNDEFINED)
		return b;
	if (b == CPU_DTYPE_UNDEFINED)
		return a;
	return amp_promote_types(a, b);
}

/* c10's combine_categories: a lower tier only matters when its category
 * (bool < integral < floating) is above the higher tier's. */
static enum amp_dtype combine_categories(enum amp_dtype higher,
					 enum amp_dtype lower)
{
	if (higher != CPU_DTYPE_UNDEFINED && amp_dtype_is_floating(higher))
		return higher;
	if (higher == AMP_DTYPE_BOOL ||
	    (lower != CPU_DTYPE_UNDEFINED && amp_dtype_is_floating(lower)))
		return promote_skip_undefined(higher, lower);
	if (higher != CPU_DTYPE_UNDEFINED)
		return higher;
	return lower;
}

void cpu_result_type_init(struct cpu_result_type *state)
{
	state->dim_result = CPU_DTYPE_UNDEFINED;
	state->zero_result = CPU_DTYPE_UNDEFINED;
	state->wrapped_result = CPU_DTYPE_UNDEFINED;
}

void cpu_result_type_tensor(struct cpu_result_type *state,
			    const struct amp_tensor *t)
{
	enum amp_dtype *tier = t->ndim > 0 ? &state->dim_result
					   : &state->zero_result;
	*tier = promote_skip_undefined(*tier, t->dtype);
}

/* A wrapped number: an int Scalar is int64, a float Scalar the default
 * dtype (f32). */
void cpu_result_type_scalar(struct cpu_result_type *state, bool integral)
{
	state->wrapped_result = promote_skip_undefined(
		state->wrapped_result,
		integral ? AMP_DTYPE_I64 : AMP_DTYPE_F32);
}

enum amp_dtype cpu_result_type_get(const struct cpu_result_type *state)
{
	return combine_categories(
		state->dim_result,
		combine_categories(state->zero_result, state->wrapped_result));
}

/* --------------------------------------------------------------- shapes */

bool cpu_wrap_dim(int64_t *dim, int ndim)
{
	int64_t size = ndim > 0 ? ndim : 1;

	if (*dim < -size || *dim >= size) {
		amp_error(AMP_ERR_INVALID,
			  "Dimension out of range (expected to be in range of "
			  "[%" PRId64 ", %" PRId64 "], but got %" PRId64 ")",
			  -size, size - 1, *dim);
		return false;
	}
	if (*dim < 0)
		*dim += size;
	return true;
}

int cpu_broadcast_into(int *ndim, int64_t *out, int other_ndim,
		       const int64_t *other)
{
	int result_ndim = *ndim > other_ndim ? *ndim : other_ndim;
	int64_t result[AMP_MAX_DIMS];

	for (int i = result_ndim - 1; i >= 0; i--) {
		int offset = result_ndim - 1 - i;
		int dim_a = *ndim - 1 - offset;
		int dim_b = other_ndim - 1 - offset;
		int64_t size_a = dim_a >= 0 ? out[dim_a] : 1;
		int64_t size_b = dim_b >= 0 ? other[dim_b] : 1;
		if (size_a != size_b && size_a != 1 && size_b != 1)
			return amp_error(AMP_ERR_INVALID,
					 "The size of tensor a (%" PRId64
					 ") must match the size of tensor b (%"
					 PRId64 ") at non-singleton dimension %d",
					 size_a, size_b, i);
		result[i] = size_a == 1 ? size_b : size_a;
	}
	*ndim = result_ndim;
	memcpy(out, result, (size_t)result_ndim * sizeof *out);
	return AMP_OK;
}

/* -------------------------------------------------------------- buffers */

void *cpu_alloc(size_t n, enum amp_dtype dtype)
{
	size_t bytes = (n ? n : 1) * amp_dtype_size(dtype);
	void *p = aligned_alloc(64, (bytes + 63) & ~(size_t)63);

	if (!p)
		amp_error(AMP_ERR_NOMEM, "out of memory allocating %zu bytes",
			  bytes);
	return p;
}

bool cpu_blocked_operand(const struct amp_tensor *t, enum amp_dtype dtype)
{
	return t->dtype == dtype &&
	       (dtype == AMP_DTYPE_BF16 || dtype == AMP_DTYPE_F16) &&
	       amp_tensor_is_contiguous(t);
}

void cpu_blocked_f32(enum amp_dtype dtype, int ninputs,
		     const void *const *inputs, void *out, size_t n,
		     cpu_block_fn fn, const void *context)
{
	_Alignas(64) float widened[CPU_BLOCK_MAX_INPUTS][CPU_BLOCK];
	_Alignas(64) float results[CPU_BLOCK];
	const float *in[CPU_BLOCK_MAX_INPUTS];
	amp_row_fn widen = amp_cast_row_for(AMP_DTYPE_F32, dtype);
	amp_row_fn round = amp_cast_row_for(dtype, AMP_DTYPE_F32);
	size_t size = amp_dtype_size(dtype);

	AMP_ASSERT(ninputs <= CPU_BLOCK_MAX_INPUTS && widen && round);
	for (int i = 0; i < ninputs; i++)
		in[i] = widened[i];
	for (size_t done = 0; done < n; done += CPU_BLOCK) {
		size_t count = n - done < CPU_BLOCK ? n - done : CPU_BLOCK;
		for (int i = 0; i < ninputs; i++)
			widen(widened[i],
			      (const char *)inputs[i] + done * size, count);
		fn(in, results, count, context);
		round((char *)out + done * size, results, count);
	}
}

#if defined(__x86_64__)
bool cpu_has_avx512(void)
{
	return amp_isa_best() >= AMP_ISA_AVX512;
}
#endif

/* Scratch results are a tensor's size every call: they come from the
 * storage cache, like the tensors themselves. */
static size_t result_bytes(const struct amp_tensor *out, enum amp_dtype opmath)
{
	int64_t n = amp_tensor_numel(out);

	return (size_t)(n ? n : 1) * amp_dtype_size(opmath);
}

void *cpu_result_buffer(struct amp_tensor *out, enum amp_dtype opmath)
{
	if (out->dtype == opmath)
		return amp_tensor_data(out);
	void *p = amp_host_alloc(result_bytes(out, opmath));
	if (!p)
		amp_error(AMP_ERR_NOMEM, "out of memory allocating %zu bytes",
			  result_bytes(out, opmath));
	return p;
}

void cpu_result_release(struct amp_tensor *out, void *values,
			enum amp_dtype opmath)
{
	if (values != amp_tensor_data(out))
		amp_host_free(values, result_bytes(out, opmath));
}

const void *cpu_load(const struct amp_tensor *t, enum amp_dtype storage,
		     enum amp_dtype opmath, void **owned)
{
	size_t n = (size_t)amp_tensor_numel(t);

	*owned = NULL;
	if (t->dtype == storage && storage == opmath &&
	    amp_tensor_is_contiguous(t))
		return amp_tensor_data(t);
	void *buffer = cpu_alloc(n, opmath);
	if (!buffer)
		return NULL;
	if (t->dtype == storage || storage == opmath) {
		amp_tensor_gather(t, opmath, buffer);
	} else {
		void *rounded = cpu_alloc(n, storage);
		if (!rounded) {
			free(buffer);
			return NULL;
		}
		amp_tensor_gather(t, storage, rounded);
		amp_convert(buffer, opmath, rounded, storage, n);
		free(rounded);
	}
	*owned = buffer;
	return buffer;
}

void cpu_store(struct amp_tensor *out, const void *values,
	       enum amp_dtype opmath)
{
	void *data = amp_tensor_data(out);

	if (data == values && out->dtype == opmath)
		return;
	amp_convert(data, out->dtype, values, opmath,
		    (size_t)amp_tensor_numel(out));
}

/* --------------------------------------------------------------- errors */

static void describe_one(const struct amp_tensor *t)
{
	amp_error_append("tensor %" PRIu64, t->id);
	if (t->name)
		amp_error_append(" '%s'", t->name);
	amp_error_append(" %s [", amp_dtype_name(t->dtype));
	for (int d = 0; d < t->ndim; d++)
		amp_error_append(d ? ", %" PRId64 : "%" PRId64, t->shape[d]);
	amp_error_append("]");
}

void cpu_error_tensors(int count, struct amp_tensor *const *tensors)
{
	int described = 0;

	for (int i = 0; i < count; i++) {
		if (!tensors[i])
			continue;
		bool last = true;
		for (int j = i + 1; j < count; j++)
			if (tensors[j])
				last = false;
		amp_error_append(described == 0 ? " ("
				 : last		? " and "
						: ", ");
		describe_one(tensors[i]);
		described++;
	}
	if (described)
		amp_error_append(")");
}

int cpu_error_with(int status, const struct amp_tensor *a,
		   const struct amp_tensor *b)
{
	struct amp_tensor *both[2] = { (struct amp_tensor *)a,
				       (struct amp_tensor *)b };

	cpu_error_tensors(2, both);
	return status;
}

int cpu_not_implemented(const char *kernel, const struct amp_tensor *t)
{
	amp_error(AMP_ERR_UNSUPPORTED, "\"%s\" not implemented for '%s'",
		  kernel, amp_dtype_torch_name(t->dtype));
	return cpu_error_with(AMP_ERR_UNSUPPORTED, t, NULL);
}

bool cpu_same_shape(const struct amp_tensor *a, const struct amp_tensor *b)
{
	return a->ndim == b->ndim &&
	       !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape);
}

const char *cpu_shape_string(int ndim, const int64_t *shape, char *buf,
			     size_t size)
{
	size_t used = (size_t)snprintf(buf, size, "[");

	for (int d = 0; d < ndim && used < size; d++)
		used += (size_t)snprintf(buf + used, size - used,
					 d ? ", %" PRId64 : "%" PRId64,
					 shape[d]);
	if (used < size)
		snprintf(buf + used, size - used, "]");
	return buf;
}

void cpu_view_layout(const struct amp_tensor *t, struct amp_tensor *view)
{
	/* Field by field, never `*view = *t`: t may be shared with other
	 * threads that take and drop references (its atomic refcount) or
	 * accumulate its grad while this thread reads it. */
	*view = (struct amp_tensor){ .id = t->id, .dtype = t->dtype,
				     .device = t->device, .ndim = t->ndim,
				     .offset = t->offset, .storage = t->storage,
				     .name = t->name };
	memcpy(view->shape, t->shape, sizeof view->shape);
	memcpy(view->strides, t->strides, sizeof view->strides);
}

int cpu_expand(const struct amp_tensor *t, int ndim, const int64_t *shape,
	       struct amp_tensor *view)
{
	char target[128], sizes[128];

	if (ndim < t->ndim)
		return amp_error(AMP_ERR_INVALID,
				 "expand(%s{%s}, size=%s): the number of sizes "
				 "provided (%d) must be greater or equal to the "
				 "number of dimensions in the tensor (%d)",
				 amp_dtype_torch_name(t->dtype),
				 cpu_shape_string(t->ndim, t->shape, sizes,
						  sizeof sizes),
				 cpu_shape_string(ndim, shape, target,
						  sizeof target),
				 ndim, t->ndim);
	cpu_view_layout(t, view);
	view->ndim = ndim;
	for (int d = ndim - 1; d >= 0; d--) {
		int source = d - (ndim - t->ndim);
		int64_t size = source >= 0 ? t->shape[source] : 1;
		int64_t stride = source >= 0 ? t->strides[source] : 0;
		if (size != shape[d] && size != 1)
			return amp_error(
				AMP_ERR_INVALID,
				"The expanded size of the tensor (%" PRId64
				") must match the existing size (%" PRId64
				") at non-singleton dimension %d.  Target "
				"sizes: %s.  Tensor sizes: %s",
				shape[d], size, d,
				cpu_shape_string(ndim, shape, target,
						 sizeof target),
				cpu_shape_string(t->ndim, t->shape, sizes,
						 sizeof sizes));
		view->shape[d] = shape[d];
		view->strides[d] = size == shape[d] ? stride : 0;
	}
	return AMP_OK;
}

void cpu_wrap_number(struct cpu_wrapped *w, double value, bool integral)
{
	memset(w, 0, sizeof *w);
	if (integral)
		w->value.i = (int64_t)value;
	else
		w->value.d = value;
	w->storage.data = &w->value;
	w->storage.nbytes = sizeof w->value;
	w->tensor.dtype = integral ? AMP_DTYPE_I64 : AMP_DTYPE_F64;
	w->tensor.storage = &w->storage;
	w->tensor.is_leaf = true;
}

int cpu_operand_load(const struct amp_tensor *t, int ndim,
		     const int64_t *shape, enum amp_dtype storage,
		     enum amp_dtype opmath, struct cpu_operand *op)
{
	op->owned = NULL;
	if (amp_tensor_numel(t) == 1) {
		uint64_t rounded;
		amp_tensor_gather(t, storage, &rounded);
		amp_convert(&op->inline_value, opmath, &rounded, storage, 1);
		op->data = &op->inline_value;
		op->step = 0;
		return AMP_OK;
	}
	op->step = 1;
	if (t->ndim == ndim &&
	    !memcmp(t->shape, shape, (size_t)ndim * sizeof *shape)) {
		op->data = cpu_load(t, storage, opmath, &op->owned);
	} else {
		struct amp_tensor view;
		int status = cpu_expand(t, ndim, shape, &view);
		if (status != AMP_OK)
			return status;
		op->data = cpu_load(&view, storage, opmath, &op->owned);
	}
	return op->data ? AMP_OK : amp_last_status();
}

void cpu_operand_release(struct cpu_operand *op)
{
	free(op->owned);
	op->owned = NULL;
}

/* ScalarType names inside legacy tensor type names. */
static const char *const legacy_names[AMP_DTYPE_COUNT] = {
	[AMP_DTYPE_F64] = "Double", [AMP_DTYPE_F32] = "Float",
	[AMP_DTYPE_F16] = "Half",   [AMP_DTYPE_BF16] = "BFloat16",
	[AMP_DTYPE_I64] = "Long",   [AMP_DTYPE_I32] = "Int",
	[AMP_DTYPE_BOOL] = "Bool",
};

const char *cpu_tensor_type_name(const struct amp_tensor *t, char *buf,
				 size_t size)
{
	snprintf(buf, size, "torch.%s%sTensor",
		 t->device == AMP_DEVICE_CUDA ? "cuda." : "",
		 legacy_names[t->dtype]);
	return buf;
}
