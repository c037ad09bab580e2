/* GradScaler's two kernels, with ATen's checks and texts (AmpKernels.cu
 * and cpu/AmpGradScalerKernels.cpp) and the per-element and per-step
 * rules of kernels/amp_scaler.h, shared with the CUDA module.  The device
 * checks (which kernel PyTorch would pick) are made by the public
 * wrappers before dispatch, since the dispatcher refuses mixed devices
 * with its own text.
 * Argument layouts:
 *   _amp_foreach_non_finite_check_and_unscale_
 *       (TensorList scaled_grads, found_inf, inv_scale, int sink)
 *       sink: 0, or the address of a uint64_t that receives the id of the
 *       first gradient holding inf/NaN (for the scaler's hook event)
 *   _amp_update_scale_ (current_scale, growth_tracker, found_inf,
 *       double growth_factor, double backoff_factor, int growth_interval) */
#include "train_ops.h"
#include "amp_scaler.h"

#include <stdlib.h>

CPU_VECTORIZE_LOOPS

static int check_one_element(const struct amp_tensor *t, const char *name)
{
	if (amp_tensor_numel(t) != 1)
		return amp_error(AMP_ERR_INVALID, "%s must be a 1-element tensor.",
				 name);
	return AMP_OK;
}

static int check_dtype(const struct amp_tensor *t, enum amp_dtype dtype,
		       const char *name, const char *kind)
{
	if (t->dtype != dtype)
		return amp_error(AMP_ERR_DTYPE, "%s must be a%s %s tensor.", name,
				 kind[0] == 'i' ? "n" : "", kind);
	return AMP_OK;
}

/* f32 gradient values in place; whether one was inf/NaN.  The flag is an
 * integer OR over the elements, a reduction gcc vectorises (a bool |= is
 * not); amp_scaler_unscale's rule. */
static inline __attribute__((always_inline)) bool
unscale_f32_loop(float *v, size_t n, float inv_scale)
{
	unsigned bad = 0;

	if (inv_scale == 1.0f) {
		/* the check alone (_check_inf_per_device) */
		for (size_t i = 0; i < n; i++)
			bad |= !amp_scaler_is_finite(v[i]);
	} else {
		for (size_t i = 0; i < n; i++) {
			bad |= !amp_scaler_is_finite(v[i]);
			v[i] *= inv_scale;
		}
	}
	return bad != 0;
}

CPU_AVX512 static bool unscale_f32_avx512(float *v, size_t n, float inv_scale)
{
	bool bad = unscale_f32_loop(v, n, inv_scale);

	_mm256_zeroupper();
	return bad;
}

static bool unscale_f32(float *v, size_t n, float inv_scale)
{
	return cpu_has_avx512() ? unscale_f32_avx512(v, n, inv_scale)
				: unscale_f32_loop(v, n, inv_scale);
}

/* One gradient in place; returns whether it held a non-finite value. */
static int unscale_one(struct amp_tensor *grad, float inv_scale, bool *found)
{
	enum amp_dtype opmath = cpu_opmath(grad->dtype);
	size_t n = (size_t)amp_tensor_numel(grad);
	void *owned;
	void *values = (void *)cpu_load(grad, grad->dtype, opmath, &owned);

	if (!values)
		return amp_last_status();
	bool non_finite = false;
	if (opmath == AMP_DTYPE_F64) {
		double *v = values;
		for (size_t i = 0; i < n; i++)
			v[i] = amp_scaler_unscale_f64(v[i], inv_scale,
						      &non_finite);
	} else {
		non_finite = unscale_f32(values, n, inv_scale);
	}
	*found = non_finite;
	train_store_inplace(grad, values, opmath);
	free(owned);
	return AMP_OK;
}

int amp_forward_amp_unscale_inplace(struct amp_call *call)
{
	struct amp_tensor **grads = call->args[0].list.items;
	int count = call->args[0].list.count;
	struct amp_tensor *found_inf = cpu_arg_tensor(call, 1);
	struct amp_tensor *inv_scale = cpu_arg_tensor(call, 2);
	uint64_t *first_non_finite = (uint64_t *)(intptr_t)call->args[3].i;
	bool cuda = call->device == AMP_DEVICE_CUDA;
	int status;

	if (count == 0)
		return AMP_OK;
	if ((status = check_one_element(inv_scale, "inv_scale")) ||
	    (status = check_one_element(found_inf, "found_inf")) ||
	    (status = check_dtype(inv_scale, AMP_DTYPE_F32, "inv_scale",
				  "float")) ||
	    (status = check_dtype(found_inf, AMP_DTYPE_F32, "found_inf",
				  "float")))
		return status;
	for (int i = 0; i < count; i++) {
		enum amp_dtype dtype = grads[i]->dtype;
		/* ATen's CUDA kernel has no bf16 case; the CPU one has. */
		if (!amp_dtype_is_floating(dtype) ||
		    (cuda && dtype == AMP_DTYPE_BF16))
			return cpu_not_implemented(
				cuda ? "_amp_foreach_non_finite_check_and_unscale_cuda"
				     : "_amp_foreach_non_finite_check_and_unscale_cpu",
				grads[i]);
	}
	float inv = *(const float *)amp_tensor_data(inv_scale);
	bool any = false;
	for (int i = 0; i < count; i++) {
		bool found = false;
		status = unscale_one(grads[i], inv, &found);
		if (status != AMP_OK)
			return status;
		if (found && !any && first_non_finite)
			*first_non_finite = grads[i]->id;
		any = any || found;
	}
	/* only ever set, never cleared: the caller zeroes found_inf */
	if (any)
		*(float *)amp_tensor_data(found_inf) = 1.0f;
	amp_tensor_bump_version(found_inf);
	return AMP_OK;
}

int amp_forward_amp_update_scale_inplace(struct amp_call *call)
{
	struct amp_tensor *scale = cpu_arg_tensor(call, 0);
	struct amp_tensor *tracker = cpu_arg_tensor(call, 1);
	struct amp_tensor *found_inf = cpu_arg_tensor(call, 2);
	int status;

	if ((status = check_one_element(tracker, "growth_tracker")) ||
	    (status = check_one_element(scale, "current_scale")) ||
	    (status = check_one_element(found_inf, "found_inf")) ||
	    (status = check_dtype(tracker, AMP_DTYPE_I32, "growth_tracker",
				  "int")) ||
	    (status = check_dtype(scale, AMP_DTYPE_F32, "current_scale",
				  "float")) ||
	    (status = check_dtype(found_inf, AMP_DTYPE_F32, "found_inf",
				  "float")))
		return status;
	amp_scaler_update(amp_tensor_data(scale), amp_tensor_data(tracker),
			  *(const float *)amp_tensor_data(found_inf),
			  call->args[3].d, call->args[4].d, call->args[5].i);
	amp_tensor_bump_version(scale);
	amp_tensor_bump_version(tracker);
	return train_set_inplace_output(call, scale);
}
