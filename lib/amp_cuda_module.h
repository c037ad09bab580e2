/* The interface between libamp and the CUDA backend module
 * (libamp_cuda.so).  libamp dlopen()s the module only when a CUDA driver is
 * present and looks up ONE symbol, AMP_CUDA_MODULE_SYMBOL: a versioned
 * struct of function pointers (the ggml backend pattern).  Optional
 * entries may be NULL; libamp then runs the CPU kernel over host copies.
 *
 * Conventions for every entry:
 *   - Pointers named dst/src/a/b/... are device pointers unless the
 *     comment says host.  Shapes and strides are in elements, row-major.
 *   - Return 0 on success, AMP_CUDA_UNSUPPORTED when the entry does not
 *     handle this dtype/layout (libamp falls back to the CPU, nothing was
 *     written), or -1 on a CUDA failure (error() has the message).
 *   - Kernels run on the legacy default stream, in issue order.
 *   - Low-precision inputs are computed in f32 ("opmath") and rounded once
 *     to the output dtype, with the conversions of kernels/amp_scalar.h.
 *
 * The module depends only on libcudart, libcublas, libcupti and glibc: it
 * never calls back into libamp (the build checks this), so it also loads
 * when libamp itself was loaded with RTLD_LOCAL.
 *
 * The interface is libamp's, so it lives in lib/: the module's sources
 * (kernels/) include it and amp.h from here.  The elementwise ops it
 * names are kernels/amp_elementwise_ops.h's, which includes nothing: no
 * lib header includes a kernels header that includes lib's back. */
#ifndef AMP_CUDA_MODULE_H
#define AMP_CUDA_MODULE_H

#include "amp.h"
#include "amp_elementwise_ops.h"
#include "amp_value_stats.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AMP_CUDA_MODULE_SYMBOL "amp_cuda_module"
/* Bumped on any incompatible change; libamp refuses other versions. */
#define AMP_CUDA_MODULE_VERSION 3
#define AMP_CUDA_UNSUPPORTED 1
#define AMP_CUDA_MAX_DIMS AMP_MAX_DIMS

enum amp_cuda_copy_kind {
	AMP_CUDA_COPY_HOST_TO_DEVICE,
	AMP_CUDA_COPY_DEVICE_TO_HOST,
	AMP_CUDA_COPY_DEVICE_TO_DEVICE,
	AMP_CUDA_COPY_KIND_COUNT
};

enum amp_cuda_reduce {
	AMP_CUDA_REDUCE_SUM,
	AMP_CUDA_REDUCE_MEAN,
	AMP_CUDA_REDUCE_COUNT
};

/* The logical shape of an elementwise result (always written contiguous);
 * each input comes with its own strides over this shape, 0 where it is
 * broadcast. */
struct amp_cuda_shape {
	int ndim;
	int64_t size[AMP_CUDA_MAX_DIMS];
};

/* A (batched) matrix product with row-major semantics, as llm.c writes
 * them: C (m, n) = alpha * A (m, k) @ B (k, n) + beta * C.  A is stored
 * (m, k) with leading dimension lda, or (k, m) when trans_a (likewise B);
 * C is (m, n) with leading dimension ldc.  Batch i adds i * stride_x
 * elements to each pointer.  A, B and C share `dtype` (f32, f16, bf16);
 * the product accumulates in f32 and rounds once into C. */
struct amp_cuda_gemm {
	enum amp_dtype dtype;
	bool trans_a, trans_b;
	int64_t m, n, k;
	const void *a;
	int64_t lda, stride_a;
	const void *b;
	int64_t ldb, stride_b;
	void *c;
	int64_t ldc, stride_c;
	int64_t batch;
	float alpha, beta;
};

struct amp_cuda_device_info {
	char name[256];
	int major, minor;        /* compute capability */
	int device_count;
	int driver_version;      /* cudaDriverGetVersion, e.g. 13000 */
	int runtime_version;
	size_t total_memory;
	int multiprocessors;
};

/* ------------------------------------------------------------ the table */

struct amp_cuda_module {
	uint32_t version;   /* AMP_CUDA_MODULE_VERSION */
	uint32_t size;      /* sizeof (struct amp_cuda_module) in the module */
	const char *build;  /* "CUDA 13.0, cuBLAS 13.0, CUPTI 130001, sm_80 sm_90" */

	/* Required.  init probes device 0 and makes it current; < 0 with a
	 * readable reason in `message` when there is no usable GPU.  It
	 * never aborts or prints. */
	int (*init)(struct amp_cuda_device_info *info, char *message,
		    size_t size);
	void *(*alloc)(size_t nbytes);
	void (*free)(void *ptr);
	int (*copy)(void *dst, const void *src, size_t nbytes,
		    enum amp_cuda_copy_kind kind);
	int (*synchronize)(void);
	/* The calling thread's last failure, "" when none. */
	const char *(*error)(void);

	/* Kernels; any may be NULL. */
	/* dst (contiguous, shape) = src viewed with src_strides, converted.
	 * Also the strided copy of contiguous()/clone() and the broadcast
	 * of a bias into a GEMM's C. */
	int (*convert)(void *dst, enum amp_dtype dst_dtype, const void *src,
		       enum amp_dtype src_dtype, const struct amp_cuda_shape *shape,
		       const int64_t *src_strides);
	int (*unary)(enum amp_cuda_unary op, void *dst, const void *src,
		     enum amp_dtype dtype, const struct amp_cuda_shape *shape,
		     const int64_t *src_strides, float param);
	/* Inputs are read in their own dtype, rounded through `dst_dtype`
	 * (PyTorch casts operands to the common dtype first), computed in
	 * f32 and rounded once into dst. */
	int (*binary)(enum amp_cuda_binary op, void *dst, enum amp_dtype dst_dtype,
		      const void *a, enum amp_dtype a_dtype,
		      const int64_t *a_strides, const void *b,
		      enum amp_dtype b_dtype, const int64_t *b_strides,
		      const struct amp_cuda_shape *shape, float alpha);
	int (*gemm)(const struct amp_cuda_gemm *gemm);
	/* Over the last dim of a contiguous (rows, cols) src. */
	int (*softmax)(void *dst, const void *src, enum amp_dtype dtype,
		       int64_t rows, int64_t cols, bool log);
	/* weight, bias: (cols) or NULL; all in `dtype`; f32 statistics. */
	int (*layer_norm)(void *dst, const void *src, const void *weight,
			  const void *bias, enum amp_dtype dtype, int64_t rows,
			  int64_t cols, float eps);
	/* dst (rows) = sum or mean of each row of contiguous src (rows, cols). */
	int (*reduce)(enum amp_cuda_reduce op, void *dst, const void *src,
		      enum amp_dtype dtype, int64_t rows, int64_t cols);
	/* PyTorch's _amp_foreach_non_finite_check_and_unscale_: for each
	 * element of each tensor (host arrays of `count` device pointers,
	 * dtypes and element counts), in f32: a non-finite value sets
	 * *found_inf = 1; the value is stored back as inv_scale == 1 ? v :
	 * v * inv_scale, non-finite or not.  found_inf, inv_scale: device
	 * f32 scalars. */
	int (*unscale)(void *const *tensors, const enum amp_dtype *dtypes,
		       const int64_t *counts, int count, float *found_inf,
		       const float *inv_scale);
	/* PyTorch's _amp_update_scale_ on device scalars (kernels/amp_scaler.h). */
	int (*update_scale)(float *scale, int32_t *growth_tracker,
			    const float *found_inf, double growth_factor,
			    double backoff_factor, int32_t growth_interval);

	/* Profiling (CUPTI) and annotations (NVTX); any may be NULL. */
	int (*profiler_start)(amp_gpu_activity_fn sink, void *user);
	int (*profiler_flush)(void);
	int (*profiler_stop)(struct amp_gpu_profiler_stats *stats);
	void (*correlation_push)(enum amp_gpu_correlation kind, uint64_t id);
	void (*correlation_pop)(enum amp_gpu_correlation kind);
	void (*range_push)(const char *message);
	void (*range_pop)(void);

	/* The tracer's value checks on a GPU, without a sync per check; both
	 * or neither may be NULL.  Unlike the kernels above, these run on
	 * `stream` (a cudaStream_t of device `device`; NULL: its legacy
	 * default stream) and make `device` current only while they launch.
	 * value_stats reduces `count` contiguous elements of `data` (f32,
	 * f16 or bf16) into a new row of statistics kept on the device
	 * (kernels/amp_value_stats.h) and sets *row to its number: 0, 1, ...
	 * since the device's last read.  The rows not yet read are capped
	 * (16384 a device, 38 MB): past it, -1, and the caller reduces
	 * another way. */
	int (*value_stats)(const void *data, enum amp_dtype dtype,
			   int64_t count, const struct amp_value_limits *limits,
			   int device, void *stream, int64_t *row);
	/* Once the work queued on `stream` (of `device`) is done, copies the
	 * device's first `count` rows to host `rows`, and the next row is 0
	 * again; a failed read keeps them.  Rows made on other streams must
	 * be ordered before `stream` by the caller (an event). */
	int (*value_stats_read)(int device, void *stream,
				struct amp_value_stats *rows, int64_t count);
};

#ifdef __cplusplus
}
#endif

#endif /* AMP_CUDA_MODULE_H */
