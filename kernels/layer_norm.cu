// layer_norm over the last `cols` elements of a contiguous (rows, cols)
// tensor, one block per row.  Statistics in f32, two passes (mean, then
// the mean of squared deviations: the biased variance), then
//   y = (x - mean) / sqrt(var + eps) * weight + bias
// rounded once into the input's dtype.
#include "cuda_common.cuh"

static const int threads = 256;

__global__ void layer_norm_kernel(void *dst, const void *src,
				  const void *weight, const void *bias,
				  int dtype, int64_t cols, float eps)
{
	__shared__ float shared[32];
	int64_t row = (int64_t)blockIdx.x * cols;
	float sum = 0.0f, squares = 0.0f;

	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
		sum += load_f32(src, dtype, row + j);
	float mean = block_sum(sum, shared) / (float)cols;
	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
		float d = load_f32(src, dtype, row + j) - mean;
		squares += d * d;
	}
	float var = block_sum(squares, shared) / (float)cols;
	float rstd = 1.0f / sqrtf(var + eps);
	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
		float y = (load_f32(src, dtype, row + j) - mean) * rstd;
		if (weight)
			y *= load_f32(weight, dtype, j);
		if (bias)
			y += load_f32(bias, dtype, j);
		store_f32(dst, dtype, row + j, y);
	}
}

extern "C" int amp_cuda_layer_norm(void *dst, const void *src,
				   const void *weight, const void *bias,
				   enum amp_dtype dtype, int64_t rows,
				   int64_t cols, float eps)
{
	if (!amp_cuda_float_dtype(dtype) || rows > 0x7fffffff)
		return AMP_CUDA_UNSUPPORTED;
	if (rows == 0 || cols == 0)
		return 0;
	layer_norm_kernel<<<(unsigned)rows, threads>>>(dst, src, weight, bias,
						       dtype, cols, eps);
	return amp_cuda_check_launch("layer_norm_kernel");
}
