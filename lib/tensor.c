/* Tensors: storage, reference counting, views, element access.
 * A tensor owns one reference to its storage and, for views, one to its
 * base; freeing the last reference releases both. */
#include "amp_internal.h"
#include "alloc.h"
#include "backend.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t next_tensor_id = 1;

uint64_t amp_next_tensor_id(void)
{
	return atomic_fetch_add_explicit(&next_tensor_id, 1,
					 memory_order_relaxed);
}

int64_t amp_shape_numel(int ndim, const int64_t *shape)
{
	int64_t numel = 1;

	for (int i = 0; i < ndim; i++)
		numel *= shape[i];
	return numel;
}

/* What a storage of nbytes allocates: whole 64-byte lines. */
static size_t storage_bytes(size_t nbytes)
{
	return (nbytes + 63) & ~(size_t)63;
}

static struct amp_storage *storage_new(enum amp_device_type device,
				       size_t nbytes)
{
	struct amp_storage *storage = calloc(1, sizeof *storage);

	if (!storage)
		return NULL;
	size_t rounded = storage_bytes(nbytes);
	/* host storage comes from the step-to-step cache (alloc.h) */
	storage->data = device == AMP_DEVICE_CPU
				? amp_host_alloc(rounded)
				: amp_device_alloc(device, rounded ? rounded : 64);
	if (!storage->data) {
		free(storage);
		return NULL;
	}
	atomic_init(&storage->refcount, 1);
	atomic_init(&storage->version, 0);
	storage->nbytes = nbytes;
	storage->device = device;
	return storage;
}

static void storage_unref(struct amp_storage *storage)
{
	if (atomic_fetch_sub_explicit(&storage->refcount, 1,
				      memory_order_acq_rel) != 1)
		return;
	if (storage->device == AMP_DEVICE_CPU)
		amp_host_free(storage->data, storage_bytes(storage->nbytes));
	else
		amp_device_free(storage->device, storage->data);
	free(storage);
}

static void contiguous_strides(int ndim, const int64_t *shape,
			       int64_t *strides)
{
	int64_t stride = 1;

	for (int i = ndim - 1; i >= 0; i--) {
		strides[i] = stride;
		stride *= shape[i] > 1 ? shape[i] : 1;
	}
}

static struct amp_tensor *tensor_shell(int ndim, const int64_t *shape,
				       enum amp_dtype dtype,
				       enum amp_device_type device)
{
	struct amp_tensor *t;

	AMP_ASSERT(ndim >= 0 && ndim <= AMP_MAX_DIMS);
	AMP_ASSERT(dtype < AMP_DTYPE_COUNT);
	t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	atomic_init(&t->refcount, 1);
	t->magic = AMP_TENSOR_LIVE;
	t->id = amp_next_tensor_id();
	t->dtype = dtype;
	t->device = device;
	t->ndim = ndim;
	if (ndim)
		memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
	t->is_leaf = true;
	return t;
}

struct amp_tensor *amp_tensor_alloc(int ndim, const int64_t *shape,
				    enum amp_dtype dtype,
				    enum amp_device_type device)
{
	for (int i = 0; i < ndim; i++)
		if (shape[i] < 0) {
			amp_error(AMP_ERR_INVALID,
				  "negative dimension %lld at index %d",
				  (long long)shape[i], i);
			return NULL;
		}
	/* A wrapped element or byte count would give a small storage under
	 * a large shape: kernels walking the shape would run past it. */
	int64_t numel = 1, nbytes;
	bool overflow = false;
	for (int i = 0; i < ndim; i++)
		overflow |= __builtin_mul_overflow(numel, shape[i], &numel);
	overflow |= __builtin_mul_overflow(numel, (int64_t)amp_dtype_size(dtype),
					   &nbytes);
	if (overflow) {
		char text[256];
		int used = snprintf(text, sizeof text, "[");
		for (int i = 0; i < ndim && used < (int)sizeof text; i++)
			used += snprintf(text + used, sizeof text - (size_t)used,
					 i ? ", %lld" : "%lld", (long long)shape[i]);
		amp_error(AMP_ERR_INVALID,
			  "Storage size calculation overflowed with sizes=%s]",
			  text);
		return NULL;
	}
	struct amp_tensor *t = tensor_shell(ndim, shape, dtype, device);
	if (!t) {
		amp_error(AMP_ERR_NOMEM, "out of memory allocating a tensor");
		return NULL;
	}
	t->storage = storage_new(device, (size_t)nbytes);
	if (!t->storage) {
		free(t);
		amp_error(AMP_ERR_NOMEM,
			  "out of memory allocating %lld elements of %s",
			  (long long)numel, amp_dtype_name(dtype));
		return NULL;
	}
	contiguous_strides(ndim, shape, t->strides);
	return t;
}

struct amp_tensor *amp_tensor_view(struct amp_tensor *base, int ndim,
				   const int64_t *shape,
				   const int64_t *strides, int64_t offset)
{
	struct amp_tensor *t =
		tensor_shell(ndim, shape, base->dtype, base->device);

	if (!t) {
		amp_error(AMP_ERR_NOMEM, "out of memory allocating a view");
		return NULL;
	}
	if (ndim)
		memcpy(t->strides, strides, (size_t)ndim * sizeof *strides);
	t->offset = offset;
	t->storage = base->storage;
	atomic_fetch_add_explicit(&t->storage->refcount, 1,
				  memory_order_relaxed);
	t->base = amp_tensor_ref(base->base ? base->base : base);
	return t;
}

/* Catches a use after the last free in release builds too (the memory
 * usually still holds AMP_TENSOR_FREED), before the refcount of freed
 * memory is touched. */
static void check_live(const struct amp_tensor *t, const char *caller)
{
	if (__builtin_expect(t->magic != AMP_TENSOR_LIVE, 0))
		amp_abort(__FILE__, __LINE__,
			  "%s: %p is not a live tensor (freed already?)",
			  caller, (const void *)t);
}

amp_tensor *amp_tensor_ref(amp_tensor *t)
{
	AMP_ASSERT(t);
	check_live(t, "amp_tensor_ref");
	atomic_fetch_add_explicit(&t->refcount, 1, memory_order_relaxed);
	return t;
}

void amp_tensor_free(amp_tensor *t)
{
	if (!t)
		return;
	check_live(t, "amp_tensor_free");
	int before = atomic_fetch_sub_explicit(&t->refcount, 1,
					       memory_order_acq_rel);
	if (before > 1)
		return;
	if (before < 1)
		amp_abort(__FILE__, __LINE__,
			  "amp_tensor_free: tensor %" PRIu64 " freed more "
			  "often than referenced", t->id);
	t->magic = AMP_TENSOR_FREED;
	storage_unref(t->storage);
	amp_tensor_free(t->base);
	amp_tensor_free(t->grad);
	amp_node_release(t->grad_fn);
	free(t->name);
	free(t);
}

uint64_t amp_tensor_id(const amp_tensor *t)
{
	return t->id;
}

enum amp_dtype amp_tensor_dtype(const amp_tensor *t)
{
	return t->dtype;
}

enum amp_device_type amp_tensor_device(const amp_tensor *t)
{
	return t->device;
}

int amp_tensor_ndim(const amp_tensor *t)
{
	return t->ndim;
}

const int64_t *amp_tensor_shape(const amp_tensor *t)
{
	return t->shape;
}

const int64_t *amp_tensor_strides(const amp_tensor *t)
{
	return t->strides;
}

int64_t amp_tensor_numel(const amp_tensor *t)
{
	return amp_shape_numel(t->ndim, t->shape);
}

size_t amp_tensor_nbytes(const amp_tensor *t)
{
	return (size_t)amp_tensor_numel(t) * amp_dtype_size(t->dtype);
}

bool amp_tensor_is_contiguous(const amp_tensor *t)
{
	int64_t expected = 1;

	for (int i = t->ndim - 1; i >= 0; i--) {
		if (t->shape[i] == 1)
			continue;
		if (t->strides[i] != expected)
			return false;
		expected *= t->shape[i];
	}
	return true;
}

bool amp_tensor_is_view(const amp_tensor *t)
{
	return t->base != NULL;
}

bool amp_tensor_is_leaf(const amp_tensor *t)
{
	return t->is_leaf;
}

bool amp_tensor_requires_grad(const amp_tensor *t)
{
	return t->requires_grad;
}

int amp_tensor_set_requires_grad(amp_tensor *t, bool requires_grad)
{
	if (!t->is_leaf)
		return amp_error(
			AMP_ERR_STATE,
			"you can only change requires_grad flags of leaf "
			"variables. If you want to use a computed variable in a "
			"subgraph that doesn't require differentiation use "
			"var_no_grad = var.detach().");
	if (requires_grad && !amp_dtype_is_floating(t->dtype))
		return amp_error(AMP_ERR_DTYPE,
				 "only Tensors of floating point dtype can "
				 "require gradients");
	t->requires_grad = requires_grad;
	return AMP_OK;
}

void amp_tensor_set_name(amp_tensor *t, const char *name)
{
	free(t->name);
	t->name = name ? strdup(name) : NULL;
}

const char *amp_tensor_name(const amp_tensor *t)
{
	return t->name;
}

uint64_t amp_tensor_version(const amp_tensor *t)
{
	return atomic_load_explicit(&t->storage->version,
				    memory_order_relaxed);
}

void amp_tensor_describe(const struct amp_tensor *t,
			 struct amp_tensor_info *info)
{
	info->id = t->id;
	info->dtype = t->dtype;
	info->device = t->device;
	info->ndim = t->ndim;
	memcpy(info->shape, t->shape, sizeof info->shape);
	info->name = t->name;
	info->is_leaf = t->is_leaf;
	info->requires_grad = t->requires_grad;
	info->is_view = t->base != NULL;
	info->producer_op_id = t->producer_op_id;
}

/* Visits t's elements in logical order as runs of `run` elements with a
 * constant storage stride, so the inner loop can convert whole runs. */
typedef void (*run_fn)(void *ctx, int64_t storage_index, int64_t stride,
		       int64_t run, int64_t logical_index);

static void for_each_run(const struct amp_tensor *t, run_fn fn, void *ctx)
{
	int64_t numel = amp_tensor_numel(t);
	if (numel == 0)
		return;
	if (t->ndim == 0) {
		fn(ctx, t->offset, 1, 1, 0);
		return;
	}
	int last = t->ndim - 1;
	int64_t run = t->shape[last];
	int64_t index[AMP_MAX_DIMS] = { 0 };
	for (int64_t logical = 0; logical < numel; logical += run) {
		int64_t position = t->offset;
		for (int d = 0; d < last; d++)
			position += index[d] * t->strides[d];
		fn(ctx, position, t->strides[last], run, logical);
		for (int d = last - 1; d >= 0; d--) {
			if (++index[d] < t->shape[d])
				break;
			index[d] = 0;
		}
	}
}

struct copy_ctx {
	const struct amp_tensor *t;
	enum amp_dtype dtype;
	char *host;
	char *data; /* t's storage bytes, or a host copy of GPU storage */
};

/* On a real GPU a cuda storage is device memory: element access goes
 * through a host copy of it (lib/backend.h). */
static char *host_copy_of(const struct amp_storage *storage)
{
	char *copy = malloc(storage->nbytes ? storage->nbytes : 1);

	if (!copy) {
		amp_error(AMP_ERR_NOMEM, "out of memory copying %zu bytes from "
			  "the GPU", storage->nbytes);
		return NULL;
	}
	if (amp_device_copy(copy, AMP_DEVICE_CPU, storage->data,
			    storage->device, storage->nbytes) != AMP_OK) {
		free(copy);
		return NULL;
	}
	return copy;
}

/* Strided runs are staged through a small packed buffer so each chunk is
 * converted by one amp_convert call (its SIMD path) instead of one call
 * per element; elements are moved with fixed-size memcpy, which compiles
 * to plain loads and stores. */
#define STAGE_ELEMENTS 1024

#define MOVE_STRIDED(size, dst, dst_step, src, src_step, count)             \
	for (int64_t i_ = 0; i_ < (count); i_++)                            \
		memcpy((dst) + i_ * (dst_step) * (size),                    \
		       (src) + i_ * (src_step) * (size), (size))

static void move_strided(char *dst, int64_t dst_step, const char *src,
			 int64_t src_step, size_t size, int64_t count)
{
	switch (size) {
	case 1: MOVE_STRIDED(1, dst, dst_step, src, src_step, count); break;
	case 2: MOVE_STRIDED(2, dst, dst_step, src, src_step, count); break;
	case 4: MOVE_STRIDED(4, dst, dst_step, src, src_step, count); break;
	case 8: MOVE_STRIDED(8, dst, dst_step, src, src_step, count); break;
	default: AMP_ASSERT(!"unexpected element size");
	}
}

static void gather_run(void *opaque, int64_t at, int64_t stride, int64_t run,
		       int64_t logical)
{
	struct copy_ctx *c = opaque;
	size_t src_size = amp_dtype_size(c->t->dtype);
	size_t dst_size = amp_dtype_size(c->dtype);
	const char *src = c->data + at * (int64_t)src_size;
	char *dst = c->host + logical * (int64_t)dst_size;
	_Alignas(64) char stage[STAGE_ELEMENTS * 8];

	if (stride == 1) {
		amp_convert(dst, c->dtype, src, c->t->dtype, (size_t)run);
		return;
	}
	for (int64_t done = 0; done < run; done += STAGE_ELEMENTS) {
		int64_t n = run - done < STAGE_ELEMENTS ? run - done
							: STAGE_ELEMENTS;
		move_strided(stage, 1, src + done * stride * (int64_t)src_size,
			     stride, src_size, n);
		amp_convert(dst + done * (int64_t)dst_size, c->dtype, stage,
			    c->t->dtype, (size_t)n);
	}
}

static void scatter_run(void *opaque, int64_t at, int64_t stride, int64_t run,
			int64_t logical)
{
	struct copy_ctx *c = opaque;
	size_t dst_size = amp_dtype_size(c->t->dtype);
	size_t src_size = amp_dtype_size(c->dtype);
	char *dst = c->data + at * (int64_t)dst_size;
	const char *src = c->host + logical * (int64_t)src_size;
	_Alignas(64) char stage[STAGE_ELEMENTS * 8];

	if (stride == 1) {
		amp_convert(dst, c->t->dtype, src, c->dtype, (size_t)run);
		return;
	}
	for (int64_t done = 0; done < run; done += STAGE_ELEMENTS) {
		int64_t n = run - done < STAGE_ELEMENTS ? run - done
							: STAGE_ELEMENTS;
		amp_convert(stage, c->t->dtype, src + done * (int64_t)src_size,
			    c->dtype, (size_t)n);
		move_strided(dst + done * stride * (int64_t)dst_size, stride,
			     stage, 1, dst_size, n);
	}
}

static int gather(const struct amp_tensor *t, enum amp_dtype dtype, void *dst)
{
	struct copy_ctx c = { t, dtype, dst, t->storage->data };
	char *copy = NULL;

	if (amp_storage_on_gpu(t->storage)) {
		copy = host_copy_of(t->storage);
		if (!copy)
			return amp_last_status();
		c.data = copy;
	}
	for_each_run(t, gather_run, &c);
	free(copy);
	return AMP_OK;
}

void amp_tensor_gather(const struct amp_tensor *t, enum amp_dtype dtype,
		       void *dst)
{
	if (gather(t, dtype, dst) != AMP_OK) /* GPU copy failed: recorded */
		memset(dst, 0, (size_t)amp_tensor_numel(t) * amp_dtype_size(dtype));
}

int amp_tensor_read(const amp_tensor *t, enum amp_dtype dtype, void *dst,
		    size_t count)
{
	AMP_ASSERT(t && dst);
	if (count != (size_t)amp_tensor_numel(t))
		return amp_error(AMP_ERR_INVALID,
				 "amp_tensor_read: buffer holds %zu elements, "
				 "tensor %llu has %lld",
				 count, (unsigned long long)t->id,
				 (long long)amp_tensor_numel(t));
	return gather(t, dtype, dst);
}

int amp_tensor_write(amp_tensor *t, enum amp_dtype dtype, const void *src,
		     size_t count)
{
	AMP_ASSERT(t && src);
	if (count != (size_t)amp_tensor_numel(t))
		return amp_error(AMP_ERR_INVALID,
				 "amp_tensor_write: buffer holds %zu elements, "
				 "tensor %llu has %lld",
				 count, (unsigned long long)t->id,
				 (long long)amp_tensor_numel(t));
	struct copy_ctx c = { t, dtype, (char *)src, t->storage->data };
	char *copy = NULL;
	if (amp_storage_on_gpu(t->storage)) {
		copy = host_copy_of(t->storage);
		if (!copy)
			return amp_last_status();
		c.data = copy;
	}
	for_each_run(t, scatter_run, &c);
	if (copy) {
		int status = amp_device_copy(t->storage->data, t->storage->device,
					     copy, AMP_DEVICE_CPU,
					     t->storage->nbytes);
		free(copy);
		if (status != AMP_OK)
			return status;
	}
	amp_tensor_bump_version(t);
	return AMP_OK;
}

double amp_tensor_item(const amp_tensor *t)
{
	double value;

	AMP_ASSERT(t);
	if (amp_tensor_numel(t) != 1) {
		amp_error(AMP_ERR_INVALID,
			  "a Tensor with %lld elements cannot be converted to "
			  "Scalar",
			  (long long)amp_tensor_numel(t));
		return __builtin_nan("");
	}
	if (gather(t, AMP_DTYPE_F64, &value) != AMP_OK)
		return __builtin_nan("");
	return value;
}

struct amp_tensor *amp_tensor_convert(struct amp_tensor *src,
				      enum amp_dtype dtype)
{
	struct amp_tensor *out =
		amp_tensor_alloc(src->ndim, src->shape, dtype, src->device);

	if (!out)
		return NULL;
	if (!amp_storage_on_gpu(src->storage)) {
		amp_tensor_gather(src, dtype, amp_tensor_data(out));
		return out;
	}
	/* the cast kernel; dtypes it lacks go through the host */
	int status = amp_backend_convert(out, src);
	if (status == AMP_CUDA_UNSUPPORTED) {
		size_t nbytes = amp_tensor_nbytes(out);
		void *staging = malloc(nbytes ? nbytes : 1);
		status = staging ? gather(src, dtype, staging)
				 : amp_error(AMP_ERR_NOMEM, "out of memory");
		if (status == AMP_OK)
			status = amp_device_copy(amp_tensor_data(out),
						 out->device, staging,
						 AMP_DEVICE_CPU, nbytes);
		free(staging);
	}
	if (status != AMP_OK) {
		amp_tensor_free(out);
		return NULL;
	}
	return out;
}
