/* The fake CUDA module (see cuda_fake.h): each entry does on the host
 * what the real one does on the GPU.  GEMM goes through the real
 * row-major -> cuBLAS mapping (kernels/gemm_map.h) and a column-major
 * reference GEMM, so the mapping is exercised end to end. */
#include "cuda_fake.h"

#include "amp_elementwise_math.h"
#include "amp_scaler.h"
#include "gemm_map.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TAG ((uintptr_t)1 << 62)

struct cuda_fake_counts cuda_fake_counts;
bool cuda_fake_fail;
char cuda_fake_log[CUDA_FAKE_LOG_MAX][64];
int cuda_fake_log_count;
static char error_text[128] = "";

static void profile_kernel(void);
static void profile_copy(size_t nbytes, enum amp_cuda_copy_kind kind);

void cuda_fake_reset(void)
{
	memset(&cuda_fake_counts, 0, sizeof cuda_fake_counts);
	cuda_fake_log_count = 0;
	cuda_fake_fail = false;
}

static void *host(const void *device)
{
	return (void *)((uintptr_t)device & ~TAG);
}

static int kernel_start(void)
{
	cuda_fake_counts.kernels++;
	profile_kernel();
	if (!cuda_fake_fail)
		return 0;
	cuda_fake_fail = false;
	snprintf(error_text, sizeof error_text, "fake failure");
	return -1;
}

static int fake_init(struct amp_cuda_device_info *info, char *message,
		     size_t size)
{
	memset(info, 0, sizeof *info);
	snprintf(info->name, sizeof info->name, "fake");
	(void)message;
	(void)size;
	return 0;
}

static void *fake_alloc(size_t nbytes)
{
	void *p = aligned_alloc(64, (nbytes + 63) & ~(size_t)63);

	return p ? (void *)((uintptr_t)p | TAG) : NULL;
}

static void fake_free(void *ptr)
{
	free(host(ptr));
}

static int fake_copy(void *dst, const void *src, size_t nbytes,
		     enum amp_cuda_copy_kind kind)
{
	bool dst_device = kind != AMP_CUDA_COPY_DEVICE_TO_HOST;
	bool src_device = kind != AMP_CUDA_COPY_HOST_TO_DEVICE;

	cuda_fake_counts.copies++;
	/* the kind must match the pointers, as cudaMemcpy requires */
	if (dst_device != (((uintptr_t)dst & TAG) != 0) ||
	    src_device != (((uintptr_t)src & TAG) != 0)) {
		snprintf(error_text, sizeof error_text,
			 "cudaMemcpy kind %d does not match the pointers", kind);
		return -1;
	}
	memmove(host(dst), host(src), nbytes);
	profile_copy(nbytes, kind);
	return 0;
}

static int fake_synchronize(void)
{
	return 0;
}

static const char *fake_error(void)
{
	return error_text;
}

/* --------------------------------------------------------- elementwise */

static bool float_dtype(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_F32 || dtype == AMP_DTYPE_F16 ||
	       dtype == AMP_DTYPE_BF16;
}

static float load(const void *p, enum amp_dtype dtype, int64_t i)
{
	if (dtype == AMP_DTYPE_F16)
		return amp_f16_to_f32(((const uint16_t *)p)[i]);
	if (dtype == AMP_DTYPE_BF16)
		return amp_bf16_to_f32(((const uint16_t *)p)[i]);
	return ((const float *)p)[i];
}

static void store(void *p, enum amp_dtype dtype, int64_t i, float v)
{
	if (dtype == AMP_DTYPE_F16)
		((uint16_t *)p)[i] = amp_f32_to_f16(v);
	else if (dtype == AMP_DTYPE_BF16)
		((uint16_t *)p)[i] = amp_f32_to_bf16(v);
	else
		((float *)p)[i] = v;
}

static float through(float v, enum amp_dtype dtype)
{
	float out;

	store(&out, dtype, 0, v);
	return load(&out, dtype, 0);
}

static int64_t numel_of(const struct amp_cuda_shape *shape)
{
	int64_t n = 1;

	for (int d = 0; d < shape->ndim; d++)
		n *= shape->size[d];
	return n;
}

static int64_t offset_of(const struct amp_cuda_shape *shape,
			 const int64_t *strides, int64_t i)
{
	int64_t offset = 0;

	for (int d = shape->ndim - 1; d >= 0; d--) {
		offset += (i % shape->size[d]) * strides[d];
		i /= shape->size[d];
	}
	return offset;
}

static int fake_convert(void *dst, enum amp_dtype dst_dtype, const void *src,
			enum amp_dtype src_dtype, const struct amp_cuda_shape *shape,
			const int64_t *src_strides)
{
	if (dst_dtype != src_dtype &&
	    (!float_dtype(dst_dtype) || !float_dtype(src_dtype)))
		return AMP_CUDA_UNSUPPORTED;
	if (kernel_start())
		return -1;
	cuda_fake_counts.convert++;
	char *d = host(dst);
	const char *s = host(src);
	size_t size = amp_dtype_size(src_dtype);
	for (int64_t i = 0, n = numel_of(shape); i < n; i++) {
		int64_t at = offset_of(shape, src_strides, i);
		if (dst_dtype == src_dtype)
			memcpy(d + (size_t)i * size, s + (size_t)at * size, size);
		else
			store(d, dst_dtype, i, load(s, src_dtype, at));
	}
	return 0;
}

static int fake_unary(enum amp_cuda_unary op, void *dst, const void *src,
		      enum amp_dtype dtype, const struct amp_cuda_shape *shape,
		      const int64_t *src_strides, float param)
{
	if (!float_dtype(dtype))
		return AMP_CUDA_UNSUPPORTED;
	if (kernel_start())
		return -1;
	for (int64_t i = 0, n = numel_of(shape); i < n; i++)
		store(host(dst), dtype, i,
		      amp_elementwise_unary(op,
					    load(host(src), dtype,
						 offset_of(shape, src_strides, i)),
					    param));
	return 0;
}

static int fake_binary(enum amp_cuda_binary op, void *dst,
		       enum amp_dtype dst_dtype, const void *a,
		       enum amp_dtype a_dtype, const int64_t *a_strides,
		       const void *b, enum amp_dtype b_dtype,
		       const int64_t *b_strides,
		       const struct amp_cuda_shape *shape, float alpha)
{
	if (!float_dtype(dst_dtype) || !float_dtype(a_dtype) ||
	    !float_dtype(b_dtype))
		return AMP_CUDA_UNSUPPORTED;
	if (kernel_start())
		return -1;
	for (int64_t i = 0, n = numel_of(shape); i < n; i++) {
		float x = through(load(host(a), a_dtype,
				       offset_of(shape, a_strides, i)),
				  dst_dtype);
		float y = through(load(host(b), b_dtype,
				       offset_of(shape, b_strides, i)),
				  dst_dtype);
		store(host(dst), dst_dtype, i,
		      amp_elementwise_binary(op, x, y, alpha));
	}
	return 0;
}

/* ---------------------------------------------------------------- GEMM */

/* cublasGemmEx's contract: column-major, C = alpha op(A) op(B) + beta C. */
static void reference_cublas(const struct amp_cublas_gemm *g,
			     enum amp_dtype dtype, float alpha, float beta)
{
	for (int batch = 0; batch < g->batch; batch++) {
		const char *a = (const char *)host(g->first);
		const char *b = (const char *)host(g->second);
		char *c = host(g->c);
		size_t size = amp_dtype_size(dtype);
		a += (size_t)(batch * g->stride_first) * size;
		b += (size_t)(batch * g->stride_second) * size;
		c += (size_t)(batch * g->stride_c) * size;
		for (int i = 0; i < g->m; i++) {
			for (int j = 0; j < g->n; j++) {
				float sum = 0.0f;
				for (int l = 0; l < g->k; l++) {
					int64_t ia = g->trans_first
							     ? l + (int64_t)i * g->ld_first
							     : i + (int64_t)l * g->ld_first;
					int64_t ib = g->trans_second
							     ? j + (int64_t)l * g->ld_second
							     : l + (int64_t)j * g->ld_second;
					sum += load(a, dtype, ia) * load(b, dtype, ib);
				}
				int64_t ic = i + (int64_t)j * g->ldc;
				float value = alpha * sum;
				if (beta != 0.0f)
					value += beta * load(c, dtype, ic);
				store(c, dtype, ic, value);
			}
		}
	}
}

static int fake_gemm(const struct amp_cuda_gemm *gemm)
{
	struct amp_cublas_gemm g;

	if (!float_dtype(gemm->dtype) || !amp_gemm_to_cublas(gemm, &g))
		return AMP_CUDA_UNSUPPORTED;
	if (kernel_start())
		return -1;
	cuda_fake_counts.gemm++;
	reference_cublas(&g, gemm->dtype, gemm->alpha, gemm->beta);
	return 0;
}

/* ---------------------------------------------------------------- rows */

static int fake_softmax(void *dst, const void *src, enum amp_dtype dtype,
			int64_t rows, int64_t cols, bool log)
{
	if (!float_dtype(dtype))
		return AMP_CUDA_UNSUPPORTED;
	if (kernel_start())
		return -1;
	for (int64_t r = 0; r < rows; r++) {
		float max = -INFINITY, sum = 0.0f;
		for (int64_t j = 0; j < cols; j++)
			max = fmaxf(max, load(host(src), dtype, r * cols + j));
		for (int64_t j = 0; j < cols; j++)
			sum += expf(load(host(src), dtype, r * cols + j) - max);
		for (int64_t j = 0; j < cols; j++) {
			float shifted = load(host(src), dtype, r * cols + j) - max;
			store(host(dst), dtype, r * cols + j,
			      log ? shifted - logf(sum) : expf(shifted) / sum);
		}
	}
	return 0;
}

static int fake_layer_norm(void *dst, const void *src, const void *weight,
			   const void *bias, enum amp_dtype dtype, int64_t rows,
			   int64_t cols, float eps)
{
	if (!float_dtype(dtype))
		return AMP_CUDA_UNSUPPORTED;
	if (kernel_start())
		return -1;
	for (int64_t r = 0; r < rows; r++) {
		float mean = 0.0f, var = 0.0f;
		for (int64_t j = 0; j < cols; j++)
			mean += load(host(src), dtype, r * cols + j);
		mean /= (float)cols;
		for (int64_t j = 0; j < cols; j++) {
			float d = load(host(src), dtype, r * cols + j) - mean;
			var += d * d;
		}
		float rstd = 1.0f / sqrtf(var / (float)cols + eps);
		for (int64_t j = 0; j < cols; j++) {
			float y = (load(host(src), dtype, r * cols + j) - mean) * rstd;
			if (weight)
				y *= load(host(weight), dtype, j);
			if (bias)
				y += load(host(bias), dtype, j);
			store(host(dst), dtype, r * cols + j, y);
		}
	}
	return 0;
}

static int fake_reduce(enum amp_cuda_reduce op, void *dst, const void *src,
		       enum amp_dtype dtype, int64_t rows, int64_t cols)
{
	if (!float_dtype(dtype) || cols == 0)
		return AMP_CUDA_UNSUPPORTED;
	if (kernel_start())
		return -1;
	for (int64_t r = 0; r < rows; r++) {
		float sum = 0.0f;
		for (int64_t j = 0; j < cols; j++)
			sum += load(host(src), dtype, r * cols + j);
		store(host(dst), dtype, r,
		      op == AMP_CUDA_REDUCE_MEAN ? sum / (float)cols : sum);
	}
	return 0;
}

/* ---------------------------------------------------------- GradScaler */

static int fake_unscale(void *const *tensors, const enum amp_dtype *dtypes,
			const int64_t *counts, int count, float *found_inf,
			const float *inv_scale)
{
	for (int t = 0; t < count; t++)
		if (!float_dtype(dtypes[t]))
			return AMP_CUDA_UNSUPPORTED;
	if (kernel_start())
		return -1;
	cuda_fake_counts.unscale++;
	float inv = *(const float *)host(inv_scale);
	for (int t = 0; t < count; t++) {
		bool found = false;
		for (int64_t i = 0; i < counts[t]; i++)
			store(host(tensors[t]), dtypes[t], i,
			      amp_scaler_unscale(load(host(tensors[t]), dtypes[t], i),
						 inv, &found));
		if (found)
			*(float *)host(found_inf) = 1.0f;
	}
	return 0;
}

static int fake_update_scale(float *scale, int32_t *growth_tracker,
			     const float *found_inf, double growth_factor,
			     double backoff_factor, int32_t growth_interval)
{
	if (kernel_start())
		return -1;
	cuda_fake_counts.update_scale++;
	amp_scaler_update(host(scale), host(growth_tracker),
			  *(const float *)host(found_inf), growth_factor,
			  backoff_factor, growth_interval);
	return 0;
}

/* ------------------------------------------------------------ profiling */

static void log_line(const char *format, const char *what, uint64_t id)
{
	if (cuda_fake_log_count < CUDA_FAKE_LOG_MAX)
		snprintf(cuda_fake_log[cuda_fake_log_count++],
			 sizeof cuda_fake_log[0], format, what,
			 (unsigned long long)id);
}

/* Kernel timing: while started, every kernel entry and copy becomes one
 * activity, linked to the innermost op and cast pushed, timed back to
 * back on stream 7 (1 us each), and held until flush or stop delivers
 * them to the sink, as CUPTI's buffers do. */
#define FAKE_STREAM 7
#define FAKE_DURATION_NS 1000
static struct {
	amp_gpu_activity_fn sink;
	void *user;
	bool running;
	struct amp_gpu_activity held[CUDA_FAKE_ACTIVITY_MAX];
	size_t nheld;
	struct {
		enum amp_gpu_correlation kind;
		uint64_t id;
	} stack[32];
	int depth;
	uint32_t correlation;
	uint64_t last_end_ns;
	struct amp_gpu_profiler_stats stats;
} profiler;

static struct amp_gpu_activity *profile_next(void)
{
	if (!profiler.running)
		return NULL;
	/* amptrace's own work: left out and counted, as cupti_convert.c does */
	if (profiler.depth > 0 && profiler.depth <= 32 &&
	    profiler.stack[profiler.depth - 1].id == AMP_GPU_OWN_WORK) {
		profiler.stats.own++;
		return NULL;
	}
	if (profiler.nheld == CUDA_FAKE_ACTIVITY_MAX) {
		profiler.stats.dropped++;
		return NULL;
	}
	struct amp_gpu_activity *a = &profiler.held[profiler.nheld++];
	cuda_fake_counts.activities++;
	uint64_t now = amp_now_ns();
	*a = (struct amp_gpu_activity){
		.start_ns = now > profiler.last_end_ns ? now : profiler.last_end_ns,
		.stream = FAKE_STREAM,
		.correlation_id = ++profiler.correlation,
	};
	a->end_ns = a->start_ns + FAKE_DURATION_NS;
	profiler.last_end_ns = a->end_ns;
	/* as CUPTI: one stack per kind, each activity linked to the top of
	 * each (a cast's kernel names its op too) */
	for (int i = profiler.depth < 32 ? profiler.depth : 32; i-- > 0;) {
		uint64_t *id = profiler.stack[i].kind == AMP_GPU_CORRELATION_CAST
				       ? &a->cast_id : &a->op_id;
		if (!*id)
			*id = profiler.stack[i].id;
	}
	if (!a->op_id && !a->cast_id)
		profiler.stats.unlinked++;
	return a;
}

static void profile_kernel(void)
{
	struct amp_gpu_activity *a = profile_next();

	if (!a)
		return;
	a->kind = AMP_GPU_ACTIVITY_KERNEL;
	a->name = "fake_kernel";
	for (int i = 0; i < 3; i++) {
		a->grid[i] = i ? 1 : 4;
		a->block[i] = i ? 1 : 256;
	}
	a->registers = 32;
	a->shared_memory = 1024;
	profiler.stats.kernels++;
}

static void profile_copy(size_t nbytes, enum amp_cuda_copy_kind kind)
{
	struct amp_gpu_activity *a = profile_next();

	if (!a)
		return;
	a->kind = AMP_GPU_ACTIVITY_MEMCPY;
	/* CUpti_ActivityMemcpyKind: 1 HtoD, 2 DtoH, 8 DtoD */
	a->name = kind == AMP_CUDA_COPY_HOST_TO_DEVICE	 ? "Memcpy HtoD"
		  : kind == AMP_CUDA_COPY_DEVICE_TO_HOST ? "Memcpy DtoH"
							 : "Memcpy DtoD";
	a->copy_kind = kind == AMP_CUDA_COPY_HOST_TO_DEVICE   ? 1
		       : kind == AMP_CUDA_COPY_DEVICE_TO_HOST ? 2
							      : 8;
	a->bytes = nbytes;
	profiler.stats.memcpys++;
}

static int fake_profiler_start(amp_gpu_activity_fn sink, void *user)
{
	if (!sink || profiler.running)
		return -1;
	memset(&profiler, 0, sizeof profiler);
	profiler.sink = sink;
	profiler.user = user;
	profiler.running = true;
	return 0;
}

static int fake_profiler_flush(void)
{
	if (profiler.nheld) {
		profiler.stats.buffers++;
		profiler.sink(profiler.held, profiler.nheld, profiler.user);
	}
	profiler.nheld = 0;
	return 0;
}

static int fake_profiler_stop(struct amp_gpu_profiler_stats *stats)
{
	fake_profiler_flush();
	profiler.running = false;
	profiler.depth = 0;
	if (stats)
		*stats = profiler.stats;
	return 0;
}

static void fake_push(enum amp_gpu_correlation kind, uint64_t id)
{
	if (profiler.depth < 32) {
		profiler.stack[profiler.depth].kind = kind;
		profiler.stack[profiler.depth].id = id;
	}
	profiler.depth++;
	log_line("push %s %llu", kind == AMP_GPU_CORRELATION_OP ? "op" : "cast",
		 id);
}

static void fake_pop(enum amp_gpu_correlation kind)
{
	if (profiler.depth > 0)
		profiler.depth--;
	if (cuda_fake_log_count < CUDA_FAKE_LOG_MAX)
		snprintf(cuda_fake_log[cuda_fake_log_count++],
			 sizeof cuda_fake_log[0], "pop %s",
			 kind == AMP_GPU_CORRELATION_OP ? "op" : "cast");
}

static const struct amp_cuda_module full = {
	.version = AMP_CUDA_MODULE_VERSION,
	.size = sizeof(struct amp_cuda_module),
	.build = "fake (host)",
	.init = fake_init,
	.alloc = fake_alloc,
	.free = fake_free,
	.copy = fake_copy,
	.synchronize = fake_synchronize,
	.error = fake_error,
	.convert = fake_convert,
	.unary = fake_unary,
	.binary = fake_binary,
	.gemm = fake_gemm,
	.softmax = fake_softmax,
	.layer_norm = fake_layer_norm,
	.reduce = fake_reduce,
	.unscale = fake_unscale,
	.update_scale = fake_update_scale,
	.profiler_start = fake_profiler_start,
	.profiler_flush = fake_profiler_flush,
	.profiler_stop = fake_profiler_stop,
	.correlation_push = fake_push,
	.correlation_pop = fake_pop,
};

/* A module of an older revision: its table ends before the kernels. */
static const struct amp_cuda_module bare = {
	.version = AMP_CUDA_MODULE_VERSION,
	.size = offsetof(struct amp_cuda_module, convert),
	.build = "fake (host, no kernels)",
	.init = fake_init,
	.alloc = fake_alloc,
	.free = fake_free,
	.copy = fake_copy,
	.synchronize = fake_synchronize,
	.error = fake_error,
	.convert = fake_convert, /* beyond `size`: must be ignored */
};

const struct amp_cuda_module *cuda_fake_module(enum cuda_fake_kind kind)
{
	return kind == CUDA_FAKE_FULL ? &full : &bare;
}
