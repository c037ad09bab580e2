/* Copies between layouts, dtypes and devices.  Argument layouts:
 *   contiguous (self)   clone (self)
 *   to.dtype (self, dtype)   to.device (self, int device)
 * contiguous and to() return the input itself (a new reference) when
 * there is nothing to do, as PyTorch does. */
#include "cpu_ops.h"

static struct amp_tensor *copy_to(struct amp_tensor *self,
				  enum amp_dtype dtype,
				  enum amp_device_type device)
{
	struct amp_tensor *out =
		amp_tensor_alloc(self->ndim, self->shape, dtype, device);

	if (out)
		amp_tensor_gather(self, dtype, amp_tensor_data(out));
	return out;
}

int amp_forward_contiguous(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);

	if (amp_tensor_is_contiguous(self))
		return cpu_set_output(call, amp_tensor_ref(self));
	return cpu_set_output(call, copy_to(self, self->dtype, self->device));
}

int amp_forward_clone(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);

	return cpu_set_output(call, copy_to(self, self->dtype, self->device));
}

int amp_forward_to(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	enum amp_dtype dtype = call->args[1].dtype;

	if (dtype == AMP_DTYPE_NONE || dtype == self->dtype)
		return cpu_set_output(call, amp_tensor_ref(self));
	return cpu_set_output(call, copy_to(self, dtype, self->device));
}

/* cpu and the emulated cuda device both live in host memory; the move is
 * still a real copy with a new tensor id, as it is in PyTorch. */
int amp_forward_to_device(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	enum amp_device_type device = (enum amp_device_type)call->args[1].i;

	if (device == self->device)
		return cpu_set_output(call, amp_tensor_ref(self));
	return cpu_set_output(call, copy_to(self, self->dtype, device));
}
