/* The CUDA module's device glue: probing device 0, memory, host<->device
 * copies and the per-thread error message.  Runtime API only: linking the
 * driver API (-lcuda) would make the module fail to load where the driver
 * is missing instead of reporting it (reference/toolchain.md §4). */
#include "cuda_kernels.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int amp_cuda_multiprocessors = 1;

static _Thread_local char error_text[512];
/* Stream-ordered allocation (a caching pool, like PyTorch's allocator) when
 * the device supports it, so freeing an op's temporaries does not
 * synchronise the device. */
static bool use_memory_pool;

int amp_cuda_fail(const char *what, const char *message)
{
	snprintf(error_text, sizeof error_text, "%s: %s", what, message);
	return -1;
}

int amp_cuda_fail_call(const char *what, int error)
{
	char message[256];

	snprintf(message, sizeof message, "%s (%s)",
		 cudaGetErrorString((cudaError_t)error),
		 cudaGetErrorName((cudaError_t)error));
	cudaGetLastError(); /* clear a non-sticky error for the next call */
	return amp_cuda_fail(what, message);
}

const char *amp_cuda_error(void)
{
	return error_text;
}

int amp_cuda_init(struct amp_cuda_device_info *info, char *message,
		  size_t size)
{
	struct cudaDeviceProp prop;
	int count = 0; /* left untouched on error */
	cudaError_t error;

	memset(info, 0, sizeof *info);
	cudaRuntimeGetVersion(&info->runtime_version);
	cudaDriverGetVersion(&info->driver_version);
	error = cudaGetDeviceCount(&count);
	if (error != cudaSuccess) {
		snprintf(message, size, "cudaGetDeviceCount: %s (%s, error %d)",
			 cudaGetErrorString(error), cudaGetErrorName(error),
			 (int)error);
		return -1;
	}
	if (count < 1) {
		snprintf(message, size, "cudaGetDeviceCount: no CUDA device");
		return -1;
	}
	info->device_count = count;
	error = cudaSetDevice(0);
	if (error == cudaSuccess)
		error = cudaGetDeviceProperties(&prop, 0);
	if (error == cudaSuccess)
		error = cudaFree(NULL); /* creates the context now */
	if (error != cudaSuccess) {
		snprintf(message, size, "device 0: %s (%s)",
			 cudaGetErrorString(error), cudaGetErrorName(error));
		return -1;
	}
	snprintf(info->name, sizeof info->name, "%s", prop.name);
	info->major = prop.major;
	info->minor = prop.minor;
	info->total_memory = prop.totalGlobalMem;
	info->multiprocessors = prop.multiProcessorCount;
	amp_cuda_multiprocessors =
		prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
	/* a device outside the gpu_arch list would fail every launch with
	 * "no kernel image": say so up front */
	if (amp_cuda_probe_kernels() != 0) {
		snprintf(message, size,
			 "%s (sm_%d%d): %s; rebuild with -Dgpu_arch=%d%d",
			 info->name, info->major, info->minor, amp_cuda_error(),
			 info->major, info->minor);
		return -1;
	}
	int pools = 0;
	cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, 0);
	if (pools) {
		cudaMemPool_t pool;
		uint64_t keep = UINT64_MAX;
		if (cudaDeviceGetDefaultMemPool(&pool, 0) == cudaSuccess &&
		    cudaMemPoolSetAttribute(pool,
					    cudaMemPoolAttrReleaseThreshold,
					    &keep) == cudaSuccess)
			use_memory_pool = true;
	}
	cudaGetLastError();
	return 0;
}

void *amp_cuda_alloc(size_t nbytes)
{
	void *ptr = NULL;
	cudaError_t error = use_memory_pool ? cudaMallocAsync(&ptr, nbytes, 0)
					    : cudaMalloc(&ptr, nbytes);

	if (error != cudaSuccess) {
		amp_cuda_fail_call("cudaMalloc", error);
		return NULL;
	}
	return ptr;
}

void amp_cuda_free(void *ptr)
{
	if (!ptr)
		return;
	if (use_memory_pool)
		cudaFreeAsync(ptr, 0);
	else
		cudaFree(ptr);
}

int amp_cuda_copy(void *dst, const void *src, size_t nbytes,
		  enum amp_cuda_copy_kind kind)
{
	static const enum cudaMemcpyKind kinds[AMP_CUDA_COPY_KIND_COUNT] = {
		[AMP_CUDA_COPY_HOST_TO_DEVICE] = cudaMemcpyHostToDevice,
		[AMP_CUDA_COPY_DEVICE_TO_HOST] = cudaMemcpyDeviceToHost,
		[AMP_CUDA_COPY_DEVICE_TO_DEVICE] = cudaMemcpyDeviceToDevice,
	};
	cudaError_t error;

	if (nbytes == 0)
		return 0;
	if ((unsigned)kind >= AMP_CUDA_COPY_KIND_COUNT)
		return amp_cuda_fail("cudaMemcpy", "bad copy kind");
	/* synchronous with respect to the host for pageable memory, and
	 * ordered after the kernels on the legacy stream */
	error = cudaMemcpy(dst, src, nbytes, kinds[kind]);
	return error == cudaSuccess ? 0 : amp_cuda_fail_call("cudaMemcpy", error);
}

int amp_cuda_synchronize(void)
{
	cudaError_t error = cudaDeviceSynchronize();

	return error == cudaSuccess ? 0 : amp_cuda_fail_call("cudaDeviceSynchronize", error);
}
