/* The CUDA module's internal functions: the kernel launchers of the .cu
 * files and the host glue of the .c files, which module.c collects into
 * the exported struct amp_cuda_module.  Each launcher has the contract of
 * the struct entry of the same name (lib/amp_cuda_module.h). */
#ifndef AMP_CUDA_KERNELS_H
#define AMP_CUDA_KERNELS_H

#include "amp_cuda_module.h"

#ifdef __cplusplus
extern "C" {
#endif

/* device.c: the device, memory, copies and the thread's error message. */
int amp_cuda_init(struct amp_cuda_device_info *info, char *message,
		  size_t size);
void *amp_cuda_alloc(size_t nbytes);
void amp_cuda_free(void *ptr);
int amp_cuda_copy(void *dst, const void *src, size_t nbytes,
		  enum amp_cuda_copy_kind kind);
int amp_cuda_synchronize(void);
const char *amp_cuda_error(void);
/* Records "what: message" as the thread's error and returns -1. */
int amp_cuda_fail(const char *what, const char *message);
/* The same for a CUDA call that returned `error` (a cudaError_t), which
 * it clears: the program's next launch check must not take it for its
 * own. */
int amp_cuda_fail_call(const char *what, int error);
/* Multiprocessors of the current device (launch sizing), >= 1. */
extern int amp_cuda_multiprocessors;

/* cast.cu: 0 when the module holds code for the current device (it is
 * built for the gpu_arch list only), else -1 with the error recorded. */
int amp_cuda_probe_kernels(void);

/* cast.cu */
int amp_cuda_convert(void *dst, enum amp_dtype dst_dtype, const void *src,
		     enum amp_dtype src_dtype, const struct amp_cuda_shape *shape,
		     const int64_t *src_strides);
/* elementwise.cu */
int amp_cuda_unary(enum amp_cuda_unary op, void *dst, const void *src,
		   enum amp_dtype dtype, const struct amp_cuda_shape *shape,
		   const int64_t *src_strides, float param);
int amp_cuda_binary(enum amp_cuda_binary op, void *dst, enum amp_dtype dst_dtype,
		    const void *a, enum amp_dtype a_dtype,
		    const int64_t *a_strides, const void *b,
		    enum amp_dtype b_dtype, const int64_t *b_strides,
		    const struct amp_cuda_shape *shape, float alpha);
/* softmax.cu */
int amp_cuda_softmax(void *dst, const void *src, enum amp_dtype dtype,
		     int64_t rows, int64_t cols, bool log);
/* layer_norm.cu */
int amp_cuda_layer_norm(void *dst, const void *src, const void *weight,
			const void *bias, enum amp_dtype dtype, int64_t rows,
			int64_t cols, float eps);
/* reduce.cu */
int amp_cuda_reduce(enum amp_cuda_reduce op, void *dst, const void *src,
		    enum amp_dtype dtype, int64_t rows, int64_t cols);
/* scaler.cu */
int amp_cuda_unscale(void *const *tensors, const enum amp_dtype *dtypes,
		     const int64_t *counts, int count, float *found_inf,
		     const float *inv_scale);
int amp_cuda_update_scale(float *scale, int32_t *growth_tracker,
			  const float *found_inf, double growth_factor,
			  double backoff_factor, int32_t growth_interval);
/* value_stats.cu */
int amp_cuda_value_stats(const void *data, enum amp_dtype dtype, int64_t count,
			 const struct amp_value_limits *limits, int device,
			 void *stream, int64_t *row);
int amp_cuda_value_stats_read(int device, void *stream,
			      struct amp_value_stats *rows, int64_t count);
/* gemm.c */
int amp_cuda_gemm(const struct amp_cuda_gemm *gemm);
/* cupti.c */
int amp_cuda_profiler_start(amp_gpu_activity_fn sink, void *user);
int amp_cuda_profiler_flush(void);
int amp_cuda_profiler_stop(struct amp_gpu_profiler_stats *stats);
void amp_cuda_correlation_push(enum amp_gpu_correlation kind, uint64_t id);
void amp_cuda_correlation_pop(enum amp_gpu_correlation kind);
/* nvtx.c */
void amp_cuda_range_push(const char *message);
void amp_cuda_range_pop(void);

#ifdef __cplusplus
}
#endif

#endif /* AMP_CUDA_KERNELS_H */
