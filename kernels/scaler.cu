// GradScaler on the device: the fused non-finite check + unscale over a
// list of gradients, and the scale update, with the per-element and
// per-step rules of kernels/amp_scaler.h (PyTorch's AmpKernels.cu).
#include "amp_scaler.h"
#include "cuda_common.cuh"

static const int threads = 256;

// One gradient, in place.  Every thread that meets a non-finite value
// writes 1 to found_inf; the race is benign (same value).
__global__ void unscale_kernel(void *grad, int dtype, int64_t n,
			       float *found_inf, const float *inv_scale)
{
	int64_t step = (int64_t)gridDim.x * blockDim.x;
	float inv = *inv_scale;
	bool found = false;

	for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += step)
		store_f32(grad, dtype, i,
			  amp_scaler_unscale(load_f32(grad, dtype, i), inv,
					     &found));
	if (found)
		*found_inf = 1.0f;
}

__global__ void update_scale_kernel(float *scale, int32_t *growth_tracker,
				    const float *found_inf,
				    double growth_factor, double backoff_factor,
				    int32_t growth_interval)
{
	amp_scaler_update(scale, growth_tracker, *found_inf, growth_factor,
			  backoff_factor, growth_interval);
}

extern "C" int amp_cuda_unscale(void *const *tensors,
				const enum amp_dtype *dtypes,
				const int64_t *counts, int count,
				float *found_inf, const float *inv_scale)
{
	for (int t = 0; t < count; t++)
		if (!amp_cuda_float_dtype(dtypes[t]))
			return AMP_CUDA_UNSUPPORTED;
	// one launch per gradient: a model has tens to hundreds of them,
	// which PyTorch packs into multi-tensor launches; this is simpler
	for (int t = 0; t < count; t++) {
		if (counts[t] == 0)
			continue;
		unscale_kernel<<<amp_cuda_grid(counts[t], threads), threads>>>(
			tensors[t], dtypes[t], counts[t], found_inf, inv_scale);
		if (amp_cuda_check_launch("unscale_kernel") != 0)
			return -1;
	}
	return 0;
}

extern "C" int amp_cuda_update_scale(float *scale, int32_t *growth_tracker,
				     const float *found_inf,
				     double growth_factor, double backoff_factor,
				     int32_t growth_interval)
{
	update_scale_kernel<<<1, 1>>>(scale, growth_tracker, found_inf,
				      growth_factor, backoff_factor,
				      growth_interval);
	return amp_cuda_check_launch("update_scale_kernel");
}
