// sum and mean of each row of a contiguous (rows, cols) tensor, one block
// per row, accumulated in f32 and rounded once into the input's dtype.  A
// full reduction is one row: a single block strides over all elements,
// deterministic and simple rather than fast (one SM).
#include "cuda_common.cuh"

static const int threads = 1024;

__global__ void reduce_kernel(int op, void *dst, const void *src, int dtype,
			      int64_t cols)
{
	__shared__ float shared[32];
	int64_t row = (int64_t)blockIdx.x * cols;
	float sum = 0.0f;

	for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
		sum += load_f32(src, dtype, row + j);
	sum = block_sum(sum, shared);
	if (threadIdx.x == 0)
		store_f32(dst, dtype, blockIdx.x,
			  op == AMP_CUDA_REDUCE_MEAN ? sum / (float)cols : sum);
}

extern "C" int amp_cuda_reduce(enum amp_cuda_reduce op, void *dst,
			       const void *src, enum amp_dtype dtype,
			       int64_t rows, int64_t cols)
{
	if (!amp_cuda_float_dtype(dtype) || rows > 0x7fffffff || cols == 0 ||
	    (unsigned)op >= AMP_CUDA_REDUCE_COUNT)
		return AMP_CUDA_UNSUPPORTED; // empty rows: 0 or NaN, the CPU knows
	if (rows == 0)
		return 0;
	reduce_kernel<<<(unsigned)rows, threads>>>(op, dst, src, dtype, cols);
	return amp_cuda_check_launch("reduce_kernel");
}
