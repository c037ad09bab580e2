// softmax and log_softmax over the last dim of a contiguous (rows, cols)
// tensor, one block per row, f32 statistics:
//   softmax(x)_j     = exp(x_j - max) / sum_k exp(x_k - max)
//   log_softmax(x)_j = x_j - max - log(sum_k exp(x_k - max))
// The input and output share the dtype (libamp converts first when the
// op's dtype argument asks for another, as ATen does).
#include "cuda_common.cuh"

static const int threads = 256;

__global__ void softmax_kernel(void *dst, const void *src, int dtype,
			       int64_t cols, bool log)
{
	__shared__ float shared[32];
	int64_t row = (int64_t)blockIdx.x * cols;
	float max = -INFINITY, sum = 0.0f;

	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
		max = fmaxf(max, load_f32(src, dtype, row + j));
	max = block_max(max, shared);
	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
		sum += expf(load_f32(src, dtype, row + j) - max);
	sum = block_sum(sum, shared);
	float log_sum = logf(sum);
	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
		float shifted = load_f32(src, dtype, row + j) - max;
		store_f32(dst, dtype, row + j,
			  log ? shifted - log_sum : expf(shifted) / sum);
	}
}

extern "C" int amp_cuda_softmax(void *dst, const void *src,
				enum amp_dtype dtype, int64_t rows, int64_t cols,
				bool log)
{
	if (!amp_cuda_float_dtype(dtype) || rows > 0x7fffffff)
		return AMP_CUDA_UNSUPPORTED;
	if (rows == 0 || cols == 0)
		return 0;
	softmax_kernel<<<(unsigned)rows, threads>>>(dst, src, dtype, cols, log);
	return amp_cuda_check_launch("softmax_kernel");
}
