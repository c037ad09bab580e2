/* Operand loading and output stores shared by the backward kernels. */
#include "grad/kernels.h"

#include <stdlib.h>
#include <string.h>

int grad_operands_load(struct grad_operands *ops, int count,
		       struct amp_tensor *const *tensors,
		       enum amp_dtype opmath)
{
	AMP_ASSERT(count <= GRAD_MAX_OPERANDS);
	memset(ops, 0, sizeof *ops);
	ops->count = count;
	ops->opmath = opmath;
	for (int i = 0; i < count; i++) {
		if (!tensors[i])
			continue;
		int status = cpu_broadcast_into(&ops->ndim, ops->shape,
						tensors[i]->ndim,
						tensors[i]->shape);
		if (status != AMP_OK)
			return status;
	}
	ops->numel = (size_t)amp_shape_numel(ops->ndim, ops->shape);
	for (int i = 0; i < count; i++) {
		struct amp_tensor view;
		if (!tensors[i])
			continue;
		int status = cpu_expand(tensors[i], ops->ndim, ops->shape,
					&view);
		if (status != AMP_OK) {
			grad_operands_release(ops);
			return status;
		}
		ops->values[i] = cpu_load(&view, view.dtype, opmath,
					  &ops->owned[i]);
		if (!ops->values[i]) {
			grad_operands_release(ops);
			return amp_last_status();
		}
	}
	return AMP_OK;
}

void grad_operands_release(struct grad_operands *ops)
{
	for (int i = 0; i < ops->count; i++) {
		free(ops->owned[i]);
		ops->owned[i] = NULL;
		ops->values[i] = NULL;
	}
}

int grad_output_from(struct amp_call *call, int index, int ndim,
		     const int64_t *shape, enum amp_dtype dtype,
		     enum amp_device_type device, const void *values,
		     enum amp_dtype opmath)
{
	struct amp_tensor *out = amp_tensor_alloc(ndim, shape, dtype, device);

	if (!out)
		return amp_last_status();
	cpu_store(out, values, opmath);
	call->outputs[index] = out;
	if (call->noutputs < index + 1)
		call->noutputs = index + 1;
	return AMP_OK;
}

int grad_outputs_drop_on_error(struct amp_call *call, int status)
{
	if (status != AMP_OK) {
		for (int o = 0; o < call->noutputs; o++)
			amp_tensor_free(call->outputs[o]);
		call->noutputs = 0;
	}
	return status;
}

int grad_float_result(const char *kernel, int count,
		      struct amp_tensor *const *tensors, enum amp_dtype *out)
{
	enum amp_dtype result = AMP_DTYPE_NONE;
	const struct amp_tensor *first = NULL;

	for (int i = 0; i < count; i++) {
		if (!tensors[i])
			continue;
		if (!first)
			first = tensors[i];
		result = result == AMP_DTYPE_NONE
				 ? tensors[i]->dtype
				 : amp_promote_types(result, tensors[i]->dtype);
	}
	AMP_ASSERT(first);
	if (!amp_dtype_is_floating(result)) {
		amp_error(AMP_ERR_UNSUPPORTED, "\"%s\" not implemented for '%s'",
			  kernel, amp_dtype_torch_name(result));
		return cpu_error_with(AMP_ERR_UNSUPPORTED, first, NULL);
	}
	*out = result;
	return AMP_OK;
}
