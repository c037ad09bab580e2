// Host-side helpers of the .cu files: launch sizing, launch-error
// recording and the strided-index set-up (kernels/cuda_common.cuh).
#include "cuda_common.cuh"

#include <stdio.h>

int64_t amp_cuda_index_init(amp_cuda_index *ix, const amp_cuda_shape *shape,
			    const int64_t *strides0, const int64_t *strides1)
{
	const int64_t *strides[2] = { strides0, strides1 };
	int64_t numel = 1;

	ix->ndim = shape->ndim;
	for (int d = 0; d < shape->ndim; d++) {
		ix->size[d] = shape->size[d];
		numel *= shape->size[d];
	}
	for (int which = 0; which < 2; which++) {
		int64_t expected = 1;
		bool contiguous = true;
		for (int d = shape->ndim - 1; d >= 0; d--) {
			int64_t stride = strides[which] ? strides[which][d] : 0;
			ix->stride[which][d] = stride;
			// size-1 dims never move the offset, whatever their stride
			if (shape->size[d] != 1 && stride != expected)
				contiguous = false;
			expected *= shape->size[d];
		}
		ix->contiguous[which] = contiguous;
	}
	return numel;
}

unsigned amp_cuda_grid(int64_t n, int threads)
{
	int64_t blocks = (n + threads - 1) / threads;
	// enough blocks to fill every SM several times; the loops stride
	int64_t cap = (int64_t)amp_cuda_multiprocessors * 32;

	if (blocks > cap)
		blocks = cap;
	return blocks < 1 ? 1u : (unsigned)blocks;
}

int amp_cuda_check_launch(const char *what)
{
	cudaError_t error = cudaGetLastError();

	return error == cudaSuccess ? 0 : amp_cuda_fail_call(what, error);
}
