// Cast kernels: f32 <-> f16 <-> bf16 with the rounding of amp_scalar.h,
// plus same-dtype strided copies (contiguous(), clone(), broadcasting a
// bias).  Contiguous float casts move 4 elements per load/store (16-byte
// f32 vectors, 8-byte f16/bf16 vectors) in a grid-stride loop; strided or
// misaligned data takes the element-wise path.
#include "cuda_common.cuh"

#include <string.h>

static const int threads = 256;

// Four consecutive elements as f32, from a 16-byte (f32) or 8-byte
// (f16/bf16) aligned vector.
static __device__ __forceinline__ void load4(const void *src, int dtype,
					     int64_t v, float out[4])
{
	if (dtype == AMP_DTYPE_F32) {
		float4 x = ((const float4 *)src)[v];
		out[0] = x.x;
		out[1] = x.y;
		out[2] = x.z;
		out[3] = x.w;
		return;
	}
	uint2 x = ((const uint2 *)src)[v];
	uint16_t h[4] = { (uint16_t)(x.x & 0xffffu), (uint16_t)(x.x >> 16),
			  (uint16_t)(x.y & 0xffffu), (uint16_t)(x.y >> 16) };
	for (int j = 0; j < 4; j++)
		out[j] = dtype == AMP_DTYPE_F16 ? amp_scalar_f16_to_f32(h[j])
						: amp_scalar_bf16_to_f32(h[j]);
}

static __device__ __forceinline__ void store4(void *dst, int dtype, int64_t v,
					      const float in[4])
{
	if (dtype == AMP_DTYPE_F32) {
		((float4 *)dst)[v] = make_float4(in[0], in[1], in[2], in[3]);
		return;
	}
	uint32_t h[4];
	for (int j = 0; j < 4; j++)
		h[j] = dtype == AMP_DTYPE_F16 ? amp_scalar_f32_to_f16(in[j])
					      : amp_scalar_f32_to_bf16(in[j]);
	((uint2 *)dst)[v] = make_uint2(h[0] | (h[1] << 16), h[2] | (h[3] << 16));
}

// dst (n) = src (n), contiguous, converted; n4 = n / 4 vectors first.
__global__ void cast_contiguous_kernel(void *dst, int dst_dtype,
				       const void *src, int src_dtype,
				       int64_t n, bool vectorized)
{
	int64_t start = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
	int64_t step = (int64_t)gridDim.x * blockDim.x;
	int64_t scalar_from = 0;

	if (vectorized) {
		int64_t n4 = n / 4;
		for (int64_t v = start; v < n4; v += step) {
			float x[4];
			load4(src, src_dtype, v, x);
			store4(dst, dst_dtype, v, x);
		}
		scalar_from = n4 * 4;
	}
	for (int64_t i = scalar_from + start; i < n; i += step)
		store_f32(dst, dst_dtype, i, load_f32(src, src_dtype, i));
}

// dst (contiguous) = src viewed through strides, converted.
__global__ void cast_strided_kernel(void *dst, int dst_dtype, const void *src,
				    int src_dtype, amp_cuda_index ix,
				    int64_t n)
{
	int64_t step = (int64_t)gridDim.x * blockDim.x;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += step)
		store_f32(dst, dst_dtype, i,
			  load_f32(src, src_dtype, strided_offset(ix, 0, i)));
}

// Same-dtype strided copy of any element type (bool .. f64).
template <typename T>
__global__ void copy_strided_kernel(T *dst, const T *src, amp_cuda_index ix,
				    int64_t n)
{
	int64_t step = (int64_t)gridDim.x * blockDim.x;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += step)
		dst[i] = src[strided_offset(ix, 0, i)];
}

static size_t dtype_size(int dtype)
{
	switch (dtype) {
	case AMP_DTYPE_F64:
	case AMP_DTYPE_I64:
		return 8;
	case AMP_DTYPE_F32:
	case AMP_DTYPE_I32:
		return 4;
	case AMP_DTYPE_F16:
	case AMP_DTYPE_BF16:
		return 2;
	default:
		return 1;
	}
}

static int copy_same_dtype(void *dst, const void *src, size_t size,
			   const amp_cuda_index &ix, int64_t n)
{
	if (ix.contiguous[0]) {
		cudaError_t error = cudaMemcpyAsync(dst, src, (size_t)n * size,
						    cudaMemcpyDeviceToDevice, 0);
		if (error != cudaSuccess)
			return amp_cuda_check_launch("cudaMemcpyAsync");
		return 0;
	}
	unsigned grid = amp_cuda_grid(n, threads);
	switch (size) {
	case 8:
		copy_strided_kernel<<<grid, threads>>>((uint64_t *)dst,
						       (const uint64_t *)src, ix, n);
		break;
	case 4:
		copy_strided_kernel<<<grid, threads>>>((uint32_t *)dst,
						       (const uint32_t *)src, ix, n);
		break;
	case 2:
		copy_strided_kernel<<<grid, threads>>>((uint16_t *)dst,
						       (const uint16_t *)src, ix, n);
		break;
	default:
		copy_strided_kernel<<<grid, threads>>>((uint8_t *)dst,
						       (const uint8_t *)src, ix, n);
		break;
	}
	return amp_cuda_check_launch("copy_strided_kernel");
}

extern "C" int amp_cuda_convert(void *dst, enum amp_dtype dst_dtype,
				const void *src, enum amp_dtype src_dtype,
				const struct amp_cuda_shape *shape,
				const int64_t *src_strides)
{
	amp_cuda_index ix;
	int64_t n = amp_cuda_index_init(&ix, shape, src_strides, NULL);

	if (dst_dtype == src_dtype) {
		if (n == 0)
			return 0;
		return copy_same_dtype(dst, src, dtype_size(src_dtype), ix, n);
	}
	if (!amp_cuda_float_dtype(dst_dtype) || !amp_cuda_float_dtype(src_dtype))
		return AMP_CUDA_UNSUPPORTED;
	if (n == 0)
		return 0;
	unsigned grid;
	if (ix.contiguous[0]) {
		bool vectorized =
			(uintptr_t)src % (4 * dtype_size(src_dtype)) == 0 &&
			(uintptr_t)dst % (4 * dtype_size(dst_dtype)) == 0;
		grid = amp_cuda_grid(vectorized ? (n + 3) / 4 : n, threads);
		cast_contiguous_kernel<<<grid, threads>>>(dst, dst_dtype, src,
							  src_dtype, n,
							  vectorized);
		return amp_cuda_check_launch("cast_contiguous_kernel");
	}
	grid = amp_cuda_grid(n, threads);
	cast_strided_kernel<<<grid, threads>>>(dst, dst_dtype, src, src_dtype,
					       ix, n);
	return amp_cuda_check_launch("cast_strided_kernel");
}

// Called by amp_cuda_init: fails when the module holds no code for the
// device (built for other architectures).
extern "C" int amp_cuda_probe_kernels(void)
{
	cudaFuncAttributes attributes;
	cudaError_t error = cudaFuncGetAttributes(
		&attributes, (const void *)cast_contiguous_kernel);

	if (error == cudaSuccess)
		return 0;
	amp_cuda_check_launch("cudaFuncGetAttributes");
	return -1;
}
