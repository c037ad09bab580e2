// Elementwise kernels over f32/f16/bf16: unary activations and the four
// binary arithmetic ops with broadcasting; the scalar op of each is in
// kernels/amp_elementwise_math.h, shared with the tests' fake module.
// Each element is loaded as f32 (opmath), computed once and rounded once
// into the output dtype; inputs may be strided (views, broadcast strides
// 0), the output is contiguous.
#include "amp_elementwise_math.h"
#include "cuda_common.cuh"

static const int threads = 256;

__global__ void unary_kernel(enum amp_cuda_unary op, void *dst, const void *src,
			     int dtype, amp_cuda_index ix, int64_t n, float param)
{
	int64_t step = (int64_t)gridDim.x * blockDim.x;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += step) {
		float x = load_f32(src, dtype, strided_offset(ix, 0, i));
		store_f32(dst, dtype, i, amp_elementwise_unary(op, x, param));
	}
}

__global__ void binary_kernel(enum amp_cuda_binary op, void *dst, int dst_dtype,
			      const void *a, int a_dtype, const void *b,
			      int b_dtype, amp_cuda_index ix, int64_t n,
			      float alpha)
{
	int64_t step = (int64_t)gridDim.x * blockDim.x;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += step) {
		float x = load_f32(a, a_dtype, strided_offset(ix, 0, i));
		float y = load_f32(b, b_dtype, strided_offset(ix, 1, i));
		if (a_dtype != dst_dtype)
			x = round_through(x, dst_dtype);
		if (b_dtype != dst_dtype)
			y = round_through(y, dst_dtype);
		store_f32(dst, dst_dtype, i,
			  amp_elementwise_binary(op, x, y, alpha));
	}
}

extern "C" int amp_cuda_unary(enum amp_cuda_unary op, void *dst,
			      const void *src, enum amp_dtype dtype,
			      const struct amp_cuda_shape *shape,
			      const int64_t *src_strides, float param)
{
	amp_cuda_index ix;
	int64_t n = amp_cuda_index_init(&ix, shape, src_strides, NULL);

	if (!amp_cuda_float_dtype(dtype) || (unsigned)op >= AMP_CUDA_UNARY_COUNT)
		return AMP_CUDA_UNSUPPORTED;
	if (n == 0)
		return 0;
	unary_kernel<<<amp_cuda_grid(n, threads), threads>>>(op, dst, src, dtype,
							     ix, n, param);
	return amp_cuda_check_launch("unary_kernel");
}

extern "C" int amp_cuda_binary(enum amp_cuda_binary op, void *dst,
			       enum amp_dtype dst_dtype, const void *a,
			       enum amp_dtype a_dtype, const int64_t *a_strides,
			       const void *b, enum amp_dtype b_dtype,
			       const int64_t *b_strides,
			       const struct amp_cuda_shape *shape, float alpha)
{
	amp_cuda_index ix;
	int64_t n = amp_cuda_index_init(&ix, shape, a_strides, b_strides);

	if (!amp_cuda_float_dtype(dst_dtype) || !amp_cuda_float_dtype(a_dtype) ||
	    !amp_cuda_float_dtype(b_dtype) ||
	    (unsigned)op >= AMP_CUDA_BINARY_COUNT)
		return AMP_CUDA_UNSUPPORTED;
	if (n == 0)
		return 0;
	binary_kernel<<<amp_cuda_grid(n, threads), threads>>>(
		op, dst, dst_dtype, a, a_dtype, b, b_dtype, ix, n, alpha);
	return amp_cuda_check_launch("binary_kernel");
}
