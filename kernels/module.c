/* The CUDA backend module's one exported symbol: the table libamp finds
 * with dlsym(AMP_CUDA_MODULE_SYMBOL) after dlopen (lib/backend.c).  All
 * other symbols of the module are hidden. */
#include "cuda_kernels.h"

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cupti_version.h>

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

__attribute__((visibility("default"))) extern const struct amp_cuda_module
	amp_cuda_module;

const struct amp_cuda_module amp_cuda_module = {
	.version = AMP_CUDA_MODULE_VERSION,
	.size = sizeof(struct amp_cuda_module),
	.build = "CUDA runtime " STRINGIFY(CUDART_VERSION) ", cuBLAS " STRINGIFY(
		CUBLAS_VER_MAJOR) "." STRINGIFY(CUBLAS_VER_MINOR) ", CUPTI " STRINGIFY(CUPTI_API_VERSION) ", " AMP_CUDA_ARCHS,
	.init = amp_cuda_init,
	.alloc = amp_cuda_alloc,
	.free = amp_cuda_free,
	.copy = amp_cuda_copy,
	.synchronize = amp_cuda_synchronize,
	.error = amp_cuda_error,
	.convert = amp_cuda_convert,
	.unary = amp_cuda_unary,
	.binary = amp_cuda_binary,
	.gemm = amp_cuda_gemm,
	.softmax = amp_cuda_softmax,
	.layer_norm = amp_cuda_layer_norm,
	.reduce = amp_cuda_reduce,
	.unscale = amp_cuda_unscale,
	.update_scale = amp_cuda_update_scale,
	.profiler_start = amp_cuda_profiler_start,
	.profiler_flush = amp_cuda_profiler_flush,
	.profiler_stop = amp_cuda_profiler_stop,
	.correlation_push = amp_cuda_correlation_push,
	.correlation_pop = amp_cuda_correlation_pop,
	.range_push = amp_cuda_range_push,
	.range_pop = amp_cuda_range_pop,
	.value_stats = amp_cuda_value_stats,
	.value_stats_read = amp_cuda_value_stats_read,
};
