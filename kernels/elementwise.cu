// Elementwise kernels over f32/f16/bf16: unary activations (maths from
// kernels/amp_math.h, shared with the CPU backend) and the four binary
// arithmetic ops with broadcasting.  Each element is loaded as f32
// (opmath), computed once and rounded once into the output dtype; inputs
// may be strided (views, broadcast strides 0), the output is contiguous.
#include "amp_math.h"
#include "cuda_common.cuh"

static const int threads = 256;

static __device__ __forceinline__ float unary_op(int op, float x, float p)
{
	switch (op) {
	case AMP_CUDA_UNARY_NEG:
		return -x;
	case AMP_CUDA_UNARY_EXP:
		return expf(x);
	case AMP_CUDA_UNARY_LOG:
		return logf(x);
	case AMP_CUDA_UNARY_RELU:
		// NaN stays NaN, as clamp_min(x, 0) keeps it
		return x > 0.0f || x != x ? x : 0.0f;
	case AMP_CUDA_UNARY_GELU:
		return amp_gelu_erff(x);
	case AMP_CUDA_UNARY_GELU_TANH:
		return amp_gelu_tanhf(x);
	case AMP_CUDA_UNARY_SIGMOID:
		return amp_sigmoidf(x);
	case AMP_CUDA_UNARY_TANH:
		return tanhf(x);
	case AMP_CUDA_UNARY_ADD_SCALAR:
		return x + p;
	case AMP_CUDA_UNARY_MUL_SCALAR:
		return x * p;
	default: // AMP_CUDA_UNARY_POW_SCALAR
		return powf(x, p);
	}
}

__global__ void unary_kernel(int op, void *dst, const void *src, int dtype,
			     amp_cuda_index ix, int64_t n, float param)
{
	int64_t step = (int64_t)gridDim.x * blockDim.x;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += step) {
		float x = load_f32(src, dtype, strided_offset(ix, 0, i));
		store_f32(dst, dtype, i, unary_op(op, x, param));
	}
}

static __device__ __forceinline__ float binary_op(int op, float a, float b,
						  float alpha)
{
	switch (op) {
	case AMP_CUDA_BINARY_ADD:
		return alpha == 1.0f ? a + b : a + alpha * b;
	case AMP_CUDA_BINARY_SUB:
		return alpha == 1.0f ? a - b : a - alpha * b;
	case AMP_CUDA_BINARY_MUL:
		return a * b;
	default: // AMP_CUDA_BINARY_DIV, true division
		return a / b;
	}
}

__global__ void binary_kernel(int op, void *dst, int dst_dtype, const void *a,
			      int a_dtype, const void *b, int b_dtype,
			      amp_cuda_index ix, int64_t n, float alpha)
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
		store_f32(dst, dst_dtype, i, binary_op(op, x, y, alpha));
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
