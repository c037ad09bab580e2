/* Helpers shared by the CPU kernels of the backward ops
 * (lib/grad/kernels_*.c): operands broadcast to one shape and loaded as
 * contiguous opmath buffers, and the store of an opmath result.  As in
 * lib/cpu/, kernels compute in opmath (f32 for f16/bf16/f32, f64 for f64)
 * and round once to the output dtype. */
#ifndef AMP_GRAD_KERNELS_H
#define AMP_GRAD_KERNELS_H

#include "cpu/cpu_ops.h"

#define GRAD_MAX_OPERANDS 4

struct grad_operands {
	int count;
	int ndim;                 /* the broadcast shape */
	int64_t shape[AMP_MAX_DIMS];
	size_t numel;
	enum amp_dtype opmath;
	const void *values[GRAD_MAX_OPERANDS]; /* NULL for absent operands */
	void *owned[GRAD_MAX_OPERANDS];
};

/* Broadcasts the present tensors (NULL entries stay absent) to one shape
 * and loads each as `opmath` values.  Returns status (PyTorch's broadcast
 * message on mismatch). */
int grad_operands_load(struct grad_operands *ops, int count,
		       struct amp_tensor *const *tensors,
		       enum amp_dtype opmath);
void grad_operands_release(struct grad_operands *ops);

/* A new contiguous tensor of `dtype` holding n opmath values, set as the
 * call's output `index` (noutputs grows to index + 1).  Returns status. */
int grad_output_from(struct amp_call *call, int index, int ndim,
		     const int64_t *shape, enum amp_dtype dtype,
		     enum amp_device_type device, const void *values,
		     enum amp_dtype opmath);

/* Returns status; when it is a failure, first frees the outputs a
 * multi-output kernel already set, so a failed call hands back none. */
int grad_outputs_drop_on_error(struct amp_call *call, int status);

/* The promoted floating dtype of the present tensors, or an error naming
 * the kernel when it is not floating. */
int grad_float_result(const char *kernel, int count,
		      struct amp_tensor *const *tensors, enum amp_dtype *out);

#endif /* AMP_GRAD_KERNELS_H */
