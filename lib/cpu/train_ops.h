/* Helpers shared by the training kernels (inplace.c, optim_math.c,
 * amp_scaler_kernels.c).  Their forward functions are declared with every
 * other op's by cpu_ops.h from the op list.
 *
 * In-place kernels follow ATen's TensorIterator rules: the written tensor
 * (self, or out for out= overloads) keeps its shape and dtype, the other
 * operands broadcast to it, the maths runs in the opmath of the common
 * dtype of all operands, and the result is rounded once into the written
 * tensor.  Every in-place kernel bumps the written tensor's version (the
 * weight cache's staleness check relies on it) and returns it as its
 * output (+1 reference). */
#ifndef AMP_CPU_TRAIN_OPS_H
#define AMP_CPU_TRAIN_OPS_H

#include "cpu_ops.h"

#include <math.h>

#define TRAIN_MAX_OPERANDS 3

/* One elementwise update of `target` from up to three operands, in
 * opmath (f32 or f64).  values[0] holds target's elements and receives
 * the result; values[1..] the operands', broadcast to target's shape. */
struct train_elementwise {
	struct amp_tensor *target;
	enum amp_dtype common;  /* result_type of target and operands */
	enum amp_dtype opmath;
	size_t n;
	int nvalues;
	void *values[1 + TRAIN_MAX_OPERANDS];
	void *owned[1 + TRAIN_MAX_OPERANDS];
};

/* Checks dtypes and shapes (PyTorch's texts) and loads the values.
 * `kernel` names the op in "not implemented" errors.  Only floating
 * common dtypes are supported. */
int train_elementwise_begin(struct train_elementwise *e, const char *kernel,
			    struct amp_tensor *target, int noperands,
			    struct amp_tensor *const *operands,
			    bool has_float_scalar);
/* Rounds values[0] into target, bumps its version and sets it as the
 * call's output; frees the buffers.  Returns AMP_OK. */
int train_elementwise_finish(struct train_elementwise *e,
			     struct amp_call *call);
/* Frees the buffers (error paths). */
void train_elementwise_release(struct train_elementwise *e);

/* Writes n opmath values into t (any layout) and bumps its version. */
void train_store_inplace(struct amp_tensor *t, const void *values,
			 enum amp_dtype opmath);

/* The call's output is its written tensor: +1 reference. */
int train_set_inplace_output(struct amp_call *call, struct amp_tensor *t);

/* TensorIterator's "output with shape [2] doesn't match the broadcast
 * shape [3, 2]" check of `shape` against the written tensor. */
int train_check_output_shape(const struct amp_tensor *out, int ndim,
			     const int64_t *shape);

/* clamp propagates NaN and applies min first (so min > max gives max),
 * as std::min(std::max(x, min), max); a NaN bound is an absent one. */
#define TRAIN_CLAMP(v, lo, hi)                                               \
	(isnan(v) ? (v) : TRAIN_CLAMP_HIGH(TRAIN_CLAMP_LOW(v, lo), hi))
#define TRAIN_CLAMP_LOW(v, lo) (!isnan(lo) && (v) < (lo) ? (lo) : (v))
#define TRAIN_CLAMP_HIGH(v, hi) (!isnan(hi) && (hi) < (v) ? (hi) : (v))

#endif /* AMP_CPU_TRAIN_OPS_H */
