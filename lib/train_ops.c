/* The public training ops of amp_train.h: each builds an amp_call with
 * ATen's argument order and runs it through the dispatcher (so traces
 * show add_, lerp_, _amp_update_scale_ ...).  The kernels are in
 * lib/cpu/inplace.c, optim_math.c and amp_scaler_kernels.c; each
 * file's header comment repeats the layouts built here. */
#include "train_internal.h"

#include <math.h>
#include <stdint.h>

/* In-place ops return their written tensor (+1): the C API returns a
 * status instead, so the reference is dropped here. */
static int run_inplace(struct amp_call call)
{
	int status = amp_dispatch(&call);

	for (int o = 0; o < call.noutputs; o++)
		amp_tensor_free(call.outputs[o]);
	return status;
}

static struct amp_tensor *run(struct amp_call call)
{
	return amp_dispatch1(&call);
}

/* A Python float Scalar (optimizer hyper-parameters always are). */
static struct amp_arg number(double value)
{
	return amp_arg_scalar(value, false);
}

int amp_add_(amp_tensor *self, amp_tensor *other, double alpha)
{
	return run_inplace(AMP_CALL(ADD_INPLACE, amp_arg_tensor(self),
				    amp_arg_tensor(other), number(alpha)));
}

int amp_add_scalar_(amp_tensor *self, double other)
{
	return run_inplace(AMP_CALL(ADD_SCALAR_INPLACE, amp_arg_tensor(self),
				    number(other), amp_arg_scalar(1, true)));
}

int amp_mul_(amp_tensor *self, amp_tensor *other)
{
	return run_inplace(AMP_CALL(MUL_INPLACE, amp_arg_tensor(self),
				    amp_arg_tensor(other)));
}

int amp_mul_scalar_(amp_tensor *self, double other)
{
	return run_inplace(AMP_CALL(MUL_SCALAR_INPLACE, amp_arg_tensor(self),
				    number(other)));
}

int amp_div_scalar_(amp_tensor *self, double other)
{
	return run_inplace(AMP_CALL(DIV_SCALAR_INPLACE, amp_arg_tensor(self),
				    number(other)));
}

int amp_addcmul_(amp_tensor *self, amp_tensor *tensor1, amp_tensor *tensor2,
		 double value)
{
	return run_inplace(AMP_CALL(ADDCMUL_INPLACE, amp_arg_tensor(self),
				    amp_arg_tensor(tensor1),
				    amp_arg_tensor(tensor2), number(value)));
}

int amp_addcdiv_(amp_tensor *self, amp_tensor *tensor1, amp_tensor *tensor2,
		 double value)
{
	return run_inplace(AMP_CALL(ADDCDIV_INPLACE, amp_arg_tensor(self),
				    amp_arg_tensor(tensor1),
				    amp_arg_tensor(tensor2), number(value)));
}

int amp_lerp_(amp_tensor *self, amp_tensor *end, double weight)
{
	return run_inplace(AMP_CALL(LERP_INPLACE, amp_arg_tensor(self),
				    amp_arg_tensor(end), number(weight)));
}

int amp_clamp_(amp_tensor *self, double min, double max)
{
	return run_inplace(AMP_CALL(CLAMP_INPLACE, amp_arg_tensor(self),
				    amp_arg_double(min), amp_arg_double(max)));
}

int amp_fill_(amp_tensor *self, double value)
{
	return run_inplace(AMP_CALL(FILL_INPLACE, amp_arg_tensor(self),
				    number(value)));
}

int amp_copy_(amp_tensor *self, amp_tensor *src)
{
	return run_inplace(AMP_CALL(COPY_INPLACE, amp_arg_tensor(self),
				    amp_arg_tensor(src), amp_arg_bool(false)));
}

int amp_maximum_out(amp_tensor *self, amp_tensor *other, amp_tensor *out)
{
	return run_inplace(AMP_CALL(MAXIMUM_OUT, amp_arg_tensor(self),
				    amp_arg_tensor(other),
				    amp_arg_tensor(out)));
}

amp_tensor *amp_sqrt(amp_tensor *a)
{
	return run(AMP_CALL(SQRT, amp_arg_tensor(a)));
}

amp_tensor *amp_reciprocal(amp_tensor *a)
{
	return run(AMP_CALL(RECIPROCAL, amp_arg_tensor(a)));
}

amp_tensor *amp_clamp(amp_tensor *a, double min, double max)
{
	return run(AMP_CALL(CLAMP, amp_arg_tensor(a), amp_arg_double(min),
			    amp_arg_double(max)));
}

amp_tensor *amp_linalg_vector_norm(amp_tensor *a, double ord,
				   enum amp_dtype dtype)
{
	AMP_ASSERT(dtype <= AMP_DTYPE_NONE);
	return run(AMP_CALL(LINALG_VECTOR_NORM, amp_arg_tensor(a),
			    number(ord), amp_arg_dtype(dtype)));
}

/* ------------------------------------------------------ scaler kernels */

/* ATen picks the CUDA kernel when any argument is a CUDA tensor; that
 * kernel's first checks are about devices, with its device's name.
 * `name` NULL: a gradient of the list. */
static int check_kernel_device(enum amp_device_type kernel,
			       const struct amp_tensor *t, const char *name)
{
	const char *label = kernel == AMP_DEVICE_CUDA ? "CUDA" : "CPU";

	if (t->device == kernel)
		return AMP_OK;
	if (!name)
		return amp_error(AMP_ERR_DEVICE,
				 "one of scaled_grads was not a %s tensor.",
				 label);
	return amp_error(AMP_ERR_DEVICE, "%s must be a %s tensor.", name,
			 label);
}

static enum amp_device_type kernel_device(amp_tensor *const *tensors,
					  int count, amp_tensor *a,
					  amp_tensor *b)
{
	bool cuda = a->device == AMP_DEVICE_CUDA ||
		    b->device == AMP_DEVICE_CUDA;

	for (int i = 0; i < count; i++)
		cuda = cuda || tensors[i]->device == AMP_DEVICE_CUDA;
	return cuda ? AMP_DEVICE_CUDA : AMP_DEVICE_CPU;
}

/* Chunks lists longer than one call holds (the dispatcher's list limit);
 * the sink gets the first non-finite gradient of the whole list. */
int amp_non_finite_check_and_unscale_sink(amp_tensor *const *grads, int count,
					  amp_tensor *found_inf,
					  amp_tensor *inv_scale,
					  uint64_t *first_non_finite)
{
	AMP_ASSERT(found_inf && inv_scale && count >= 0);
	AMP_ASSERT(count == 0 || grads);
	if (count > 0) {
		enum amp_device_type kernel =
			kernel_device(grads, count, found_inf, inv_scale);
		int status =
			check_kernel_device(kernel, inv_scale, "inv_scale");
		if (status == AMP_OK)
			status = check_kernel_device(kernel, found_inf,
						     "found_inf");
		for (int i = 0; i < count && status == AMP_OK; i++)
			status = check_kernel_device(kernel, grads[i], NULL);
		if (status != AMP_OK)
			return status;
	}
	/* an empty list still dispatches (ATen's kernel returns at once);
	 * the dispatcher copies the list, so it must not be NULL */
	amp_tensor *none[1] = { NULL };
	if (count == 0)
		grads = none;
	int done = 0;
	do {
		int n = count - done < AMP_MAX_LIST ? count - done
						    : AMP_MAX_LIST;
		int status = run_inplace(AMP_CALL(
			AMP_UNSCALE_INPLACE, amp_arg_list(grads + done, n),
			amp_arg_tensor(found_inf), amp_arg_tensor(inv_scale),
			amp_arg_int((int64_t)(intptr_t)first_non_finite)));
		if (status != AMP_OK)
			return status;
		if (first_non_finite && *first_non_finite)
			first_non_finite = NULL;
		done += n;
	} while (done < count);
	return AMP_OK;
}

int amp_non_finite_check_and_unscale_(amp_tensor *const *grads, int count,
				      amp_tensor *found_inf,
				      amp_tensor *inv_scale)
{
	return amp_non_finite_check_and_unscale_sink(grads, count, found_inf,
						     inv_scale, NULL);
}

int amp_update_scale_(amp_tensor *scale, amp_tensor *growth_tracker,
		      amp_tensor *found_inf, double growth_factor,
		      double backoff_factor, int64_t growth_interval)
{
	enum amp_device_type kernel =
		kernel_device(&scale, 1, growth_tracker, found_inf);
	int status = check_kernel_device(kernel, growth_tracker,
					 "growth_tracker");

	if (status == AMP_OK)
		status = check_kernel_device(kernel, scale, "current_scale");
	if (status == AMP_OK)
		status = check_kernel_device(kernel, found_inf, "found_inf");
	if (status != AMP_OK)
		return status;
	return run_inplace(AMP_CALL(AMP_UPDATE_SCALE_INPLACE,
				    amp_arg_tensor(scale),
				    amp_arg_tensor(growth_tracker),
				    amp_arg_tensor(found_inf),
				    amp_arg_double(growth_factor),
				    amp_arg_double(backoff_factor),
				    amp_arg_int(growth_interval)));
}
