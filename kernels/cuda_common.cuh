// Helpers shared by the .cu files of the CUDA module: element loads and
// stores by run-time dtype (through kernels/amp_scalar.h, so a CUDA f16 is
// rounded exactly as a CPU f16), strided indexing, launch sizes and block
// reductions.  C++ (nvcc) only.
#ifndef AMP_CUDA_COMMON_CUH
#define AMP_CUDA_COMMON_CUH

#include "amp_cuda_module.h"
#include "amp_scalar.h"
#include "cuda_kernels.h"

#include <cuda_runtime.h>
#include <stdint.h>

// The elementwise dtypes the kernels compute (others fall back to the CPU).
static inline __host__ __device__ bool amp_cuda_float_dtype(int dtype)
{
	return dtype == AMP_DTYPE_F32 || dtype == AMP_DTYPE_F16 ||
	       dtype == AMP_DTYPE_BF16;
}

static __device__ __forceinline__ float load_f32(const void *p, int dtype,
						 int64_t i)
{
	switch (dtype) {
	case AMP_DTYPE_F16:
		return amp_scalar_f16_to_f32(((const uint16_t *)p)[i]);
	case AMP_DTYPE_BF16:
		return amp_scalar_bf16_to_f32(((const uint16_t *)p)[i]);
	default:
		return ((const float *)p)[i];
	}
}

static __device__ __forceinline__ void store_f32(void *p, int dtype, int64_t i,
						 float value)
{
	switch (dtype) {
	case AMP_DTYPE_F16:
		((uint16_t *)p)[i] = amp_scalar_f32_to_f16(value);
		break;
	case AMP_DTYPE_BF16:
		((uint16_t *)p)[i] = amp_scalar_f32_to_bf16(value);
		break;
	default:
		((float *)p)[i] = value;
		break;
	}
}

// value rounded to `dtype` and back: an operand cast to the common dtype.
static __device__ __forceinline__ float round_through(float value, int dtype)
{
	switch (dtype) {
	case AMP_DTYPE_F16:
		return amp_scalar_f16_to_f32(amp_scalar_f32_to_f16(value));
	case AMP_DTYPE_BF16:
		return amp_scalar_bf16_to_f32(amp_scalar_f32_to_bf16(value));
	default:
		return value;
	}
}

// Shape and per-input strides passed by value to kernels.
struct amp_cuda_index {
	int ndim;
	int64_t size[AMP_CUDA_MAX_DIMS];
	int64_t stride[2][AMP_CUDA_MAX_DIMS];
	bool contiguous[2]; // the input is laid out like the output
};

// Storage offset of logical (row-major) element i for input `which`.
static __device__ __forceinline__ int64_t strided_offset(
	const amp_cuda_index &ix, int which, int64_t i)
{
	if (ix.contiguous[which])
		return i;
	int64_t offset = 0;
	for (int d = ix.ndim - 1; d >= 0; d--) {
		int64_t size = ix.size[d];
		offset += (i % size) * ix.stride[which][d];
		i /= size;
	}
	return offset;
}

// Fills an amp_cuda_index on the host; numel is returned.
int64_t amp_cuda_index_init(amp_cuda_index *ix, const amp_cuda_shape *shape,
			    const int64_t *strides0, const int64_t *strides1);

// Grid size for a grid-stride loop over n items with `threads` per block.
unsigned amp_cuda_grid(int64_t n, int threads);

// Records the launch error (if any) and returns 0 or -1.
int amp_cuda_check_launch(const char *what);

// Sum over the block; every thread gets the result.  `shared` holds 32
// floats.  blockDim.x must be a multiple of 32.
static __device__ __forceinline__ float block_sum(float value, float *shared)
{
	for (int offset = 16; offset > 0; offset >>= 1)
		value += __shfl_xor_sync(0xffffffffu, value, offset);
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	__syncthreads(); // `shared` may still be read by a previous call
	if (lane == 0)
		shared[warp] = value;
	__syncthreads();
	int warps = (int)(blockDim.x >> 5);
	value = lane < warps ? shared[lane] : 0.0f;
	for (int offset = 16; offset > 0; offset >>= 1)
		value += __shfl_xor_sync(0xffffffffu, value, offset);
	return value;
}

static __device__ __forceinline__ float block_max(float value, float *shared)
{
	for (int offset = 16; offset > 0; offset >>= 1)
		value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
	__syncthreads();
	if (lane == 0)
		shared[warp] = value;
	__syncthreads();
	int warps = (int)(blockDim.x >> 5);
	value = lane < warps ? shared[lane] : -INFINITY;
	for (int offset = 16; offset > 0; offset >>= 1)
		value = fmaxf(value, __shfl_xor_sync(0xffffffffu, value, offset));
	return value;
}

#endif // AMP_CUDA_COMMON_CUH
