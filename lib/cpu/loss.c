/* Loss kernels: mse_loss, nll_loss, binary_cross_entropy and
 * binary_cross_entropy_with_logits.  Element terms are computed in
 * opmath; reductions ('mean', 'sum') accumulate in opmath and round once
 * to the loss dtype.  Where ATen rounds intermediate tensors to a
 * low-precision dtype (mse's difference, the unreduced loss that 'mean'
 * then reads) the kernels round there too.  Argument layouts:
 *   mse_loss (self, target, int reduction)
 *   nll_loss (self, target, weight?, int reduction, int ignore_index)
 *   binary_cross_entropy (self, target, weight?, int reduction)
 *   binary_cross_entropy_with_logits (self, target, weight?, pos_weight?,
 *                                     int reduction) */
#include "cpu_ops.h"
#include "amp_math.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

CPU_VECTORIZE_LOOPS

/* An f32 value rounded through a 16-bit storage dtype (no-op otherwise). */
static float round_through(enum amp_dtype dtype, float v)
{
	if (dtype == AMP_DTYPE_F16)
		return amp_scalar_f16_to_f32(amp_scalar_f32_to_f16(v));
	if (dtype == AMP_DTYPE_BF16)
		return amp_scalar_bf16_to_f32(amp_scalar_f32_to_bf16(v));
	return v;
}

/* Turns n unreduced opmath values into the op's output: the tensor of
 * `shape` for 'none', else their sum (or sum / divisor for 'mean') as a
 * 0-dim tensor.  `round_first`: the reduction reads the values as the
 * unreduced tensor holds them (rounded to dtype). */
static int finish_loss(struct amp_call *call, enum amp_dtype dtype,
		       enum amp_device_type device, int ndim,
		       const int64_t *shape, void *values, int64_t n,
		       enum amp_reduction reduction, double divisor,
		       bool round_first)
{
	enum amp_dtype opmath = cpu_opmath(dtype);
	struct amp_tensor *out;

	if (reduction == AMP_REDUCTION_NONE) {
		out = amp_tensor_alloc(ndim, shape, dtype, device);
		if (out)
			cpu_store(out, values, opmath);
		return cpu_set_output(call, out);
	}
	if (round_first && opmath == AMP_DTYPE_F32)
		for (int64_t i = 0; i < n; i++)
			((float *)values)[i] =
				round_through(dtype, ((float *)values)[i]);
	uint64_t total;
	cpu_reduce_rows(opmath, values, 1, n,
			reduction == AMP_REDUCTION_MEAN ? divisor : 1.0, &total);
	out = amp_tensor_alloc(0, NULL, dtype, device);
	if (out)
		cpu_store(out, &total, opmath);
	return cpu_set_output(call, out);
}

/* ------------------------------------------------------------- mse_loss */

int amp_forward_mse_loss(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *target = cpu_arg_tensor(call, 1);
	enum amp_reduction reduction = (enum amp_reduction)call->args[2].i;
	struct cpu_result_type state;
	int64_t shape[AMP_MAX_DIMS];
	int ndim = self->ndim;

	cpu_result_type_init(&state);
	cpu_result_type_tensor(&state, self);
	cpu_result_type_tensor(&state, target);
	enum amp_dtype dtype = cpu_result_type_get(&state);
	memcpy(shape, self->shape, sizeof shape);
	int status = cpu_broadcast_into(&ndim, shape, target->ndim,
					target->shape);
	if (status != AMP_OK)
		return cpu_error_with(status, self, target);
	if (!amp_dtype_is_floating(dtype))
		return cpu_not_implemented("mse_cpu", self);
	enum amp_dtype opmath = cpu_opmath(dtype);
	int64_t n = amp_shape_numel(ndim, shape);
	struct cpu_operand a = { 0 }, b = { 0 };
	void *values = cpu_alloc((size_t)n, opmath);
	status = values ? AMP_OK : amp_last_status();
	if (status == AMP_OK)
		status = cpu_operand_load(self, ndim, shape, dtype, opmath, &a);
	if (status == AMP_OK)
		status = cpu_operand_load(target, ndim, shape, dtype, opmath, &b);
	if (status == AMP_OK) {
		/* ATen's kernel: diff = a - b (rounded), diff * diff */
		if (opmath == AMP_DTYPE_F32) {
			const float *x = a.data, *y = b.data;
			float *out = values;
			for (int64_t i = 0; i < n; i++) {
				float diff = round_through(
					dtype, x[i * a.step] - y[i * b.step]);
				out[i] = diff * diff;
			}
		} else {
			const double *x = a.data, *y = b.data;
			double *out = values;
			for (int64_t i = 0; i < n; i++) {
				double diff = x[i * a.step] - y[i * b.step];
				out[i] = diff * diff;
			}
		}
		status = finish_loss(call, dtype, self->device, ndim, shape,
				     values, n, reduction, (double)n, true);
	}
	cpu_operand_release(&a);
	cpu_operand_release(&b);
	free(values);
	return status;
}

/* ------------------------------------------------------------- nll_loss */

static int nll_checks(const struct amp_tensor *self,
		      const struct amp_tensor *target,
		      const struct amp_tensor *weight, int64_t classes)
{
	char a[128], b[128];

	if (self->ndim < 1) {
		amp_error(AMP_ERR_INVALID,
			  "Expected 1 or more dimensions (got %d)", self->ndim);
		return cpu_error_with(AMP_ERR_INVALID, self, NULL);
	}
	if (self->ndim != 1 && target->ndim >= 1 &&
	    self->shape[0] != target->shape[0]) {
		amp_error(AMP_ERR_INVALID,
			  "Expected input batch_size (%" PRId64 ") to match "
			  "target batch_size (%" PRId64 ").",
			  self->shape[0], target->shape[0]);
		return cpu_error_with(AMP_ERR_INVALID, self, target);
	}
	/* target's shape is the input's without the class dimension */
	bool shape_ok = target->ndim == (self->ndim == 1 ? 0 : self->ndim - 1);
	for (int d = 0, s = 0; shape_ok && d < self->ndim; d++) {
		if (d == (self->ndim == 1 ? 0 : 1))
			continue;
		shape_ok = target->shape[s++] == self->shape[d];
	}
	if (!shape_ok) {
		if (self->ndim >= 3) {
			int64_t want[AMP_MAX_DIMS];
			want[0] = self->shape[0];
			memcpy(want + 1, self->shape + 2,
			       (size_t)(self->ndim - 2) * sizeof *want);
			amp_error(AMP_ERR_INVALID, "Expected target size %s, got %s",
				  cpu_shape_string(self->ndim - 1, want, a,
						   sizeof a),
				  cpu_shape_string(target->ndim, target->shape,
						   b, sizeof b));
		} else if (target->ndim > 1) {
			amp_error(AMP_ERR_INVALID,
				  "0D or 1D target tensor expected, multi-target "
				  "not supported");
		} else if (self->ndim == 1) {
			amp_error(AMP_ERR_INVALID,
				  "Expected target to be 0D when input is 1D, but "
				  "got target.dim =%d",
				  target->ndim);
		} else {
			amp_error(AMP_ERR_INVALID,
				  "size mismatch (got input: %s, target: %s)",
				  cpu_shape_string(self->ndim, self->shape, a,
						   sizeof a),
				  cpu_shape_string(target->ndim, target->shape,
						   b, sizeof b));
		}
		return cpu_error_with(AMP_ERR_INVALID, self, target);
	}
	if (weight && (weight->ndim != 1 || weight->shape[0] != classes)) {
		amp_error(AMP_ERR_INVALID,
			  "weight tensor should be defined either for all %"
			  PRId64 " classes or no classes but got weight tensor "
			  "of shape: %s",
			  classes,
			  cpu_shape_string(weight->ndim, weight->shape, a,
					   sizeof a));
		return cpu_error_with(AMP_ERR_INVALID, self, weight);
	}
	if (!amp_dtype_is_floating(self->dtype))
		return cpu_not_implemented("nll_loss_out_frame", self);
	/* the kernel reads target as int64 and weight as the input's type */
	if (target->dtype != AMP_DTYPE_I64) {
		amp_error(AMP_ERR_DTYPE, "expected scalar type Long but found %s",
			  amp_dtype_torch_name(target->dtype));
		return cpu_error_with(AMP_ERR_DTYPE, target, NULL);
	}
	if (weight && weight->dtype != self->dtype) {
		amp_error(AMP_ERR_DTYPE, "expected scalar type %s but found %s",
			  amp_dtype_torch_name(self->dtype),
			  amp_dtype_torch_name(weight->dtype));
		return cpu_error_with(AMP_ERR_DTYPE, self, weight);
	}
	return AMP_OK;
}

#define DEFINE_NLL(name, T)                                                  \
	/* x: (batch, classes, spatial); target: (batch, spatial) */         \
	static int name(const T *x, const int64_t *target, const T *weight,  \
			int64_t batch, int64_t classes, int64_t spatial,      \
			int64_t ignore_index, T *values, double *total_weight) \
	{                                                                    \
		double weights = 0;                                          \
		for (int64_t n = 0; n < batch; n++)                          \
			for (int64_t s = 0; s < spatial; s++) {              \
				int64_t i = n * spatial + s;                 \
				int64_t t = target[i];                       \
				if (t == ignore_index) {                     \
					values[i] = 0;                       \
					continue;                            \
				}                                            \
				if (t < 0 || t >= classes)                   \
					return amp_error(AMP_ERR_INVALID,    \
							 "Target %" PRId64    \
							 " is out of bounds.", \
							 t);                  \
				T w = weight ? weight[t] : (T)1;             \
				values[i] = -w * x[(n * classes + t) * spatial + s]; \
				weights += w;                                \
			}                                                    \
		*total_weight = weights;                                     \
		return AMP_OK;                                               \
	}

DEFINE_NLL(nll_f32, float)
DEFINE_NLL(nll_f64, double)

int amp_forward_nll_loss(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *target = cpu_arg_tensor(call, 1);
	struct amp_tensor *weight = cpu_arg_tensor(call, 2);
	enum amp_reduction reduction = (enum amp_reduction)call->args[3].i;
	int64_t ignore_index = call->args[4].i;
	int64_t classes = self->ndim == 0 ? 0 : self->shape[self->ndim == 1 ? 0 : 1];
	int status = nll_checks(self, target, weight, classes);

	if (status != AMP_OK)
		return status;
	enum amp_dtype opmath = cpu_opmath(self->dtype);
	int64_t batch = self->ndim == 1 ? 1 : self->shape[0];
	int64_t spatial = self->ndim <= 2 ? 1
					  : amp_shape_numel(self->ndim - 2,
							    self->shape + 2);
	int64_t n = amp_tensor_numel(target);
	void *owned[3] = { NULL, NULL, NULL };
	const void *x = cpu_load(self, self->dtype, opmath, &owned[0]);
	const int64_t *t = cpu_load(target, AMP_DTYPE_I64, AMP_DTYPE_I64,
				    &owned[1]);
	const void *w = weight ? cpu_load(weight, weight->dtype, opmath,
					  &owned[2])
			       : NULL;
	void *values = cpu_alloc((size_t)n, opmath);
	double total_weight = 0;
	status = x && t && (w || !weight) && values ? AMP_OK : amp_last_status();
	if (status == AMP_OK)
		status = opmath == AMP_DTYPE_F32
				 ? nll_f32(x, t, w, batch, classes, spatial,
					   ignore_index, values, &total_weight)
				 : nll_f64(x, t, w, batch, classes, spatial,
					   ignore_index, values, &total_weight);
	if (status == AMP_OK)
		status = finish_loss(call, self->dtype, self->device,
				     target->ndim, target->shape, values, n,
				     reduction, total_weight, false);
	else
		cpu_error_with(status, target, NULL);
	for (int i = 0; i < 3; i++)
		free(owned[i]);
	free(values);
	return status;
}

/* ------------------------------------------------------------------ BCE */

/* Loads up to two optional per-element factors broadcast to (ndim, shape). */
static int load_factor(const struct amp_tensor *t, int ndim,
		       const int64_t *shape, enum amp_dtype opmath,
		       struct cpu_operand *op)
{
	if (!t) {
		op->data = NULL;
		op->owned = NULL;
		return AMP_OK;
	}
	int status = cpu_operand_load(t, ndim, shape, t->dtype, opmath, op);
	if (status != AMP_OK)
		cpu_error_with(status, t, NULL);
	return status;
}

static double factor_at(const struct cpu_operand *op, enum amp_dtype opmath,
			int64_t i)
{
	if (!op->data)
		return 1.0;
	return opmath == AMP_DTYPE_F32 ? ((const float *)op->data)[i * op->step]
				       : ((const double *)op->data)[i * op->step];
}

static bool shapes_equal(const struct amp_tensor *a, int ndim,
			 const int64_t *shape)
{
	return a->ndim == ndim &&
	       !memcmp(a->shape, shape, (size_t)ndim * sizeof *shape);
}

int amp_forward_binary_cross_entropy(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *target = cpu_arg_tensor(call, 1);
	struct amp_tensor *weight = cpu_arg_tensor(call, 2);
	enum amp_reduction reduction = (enum amp_reduction)call->args[3].i;
	enum amp_dtype dtype = self->dtype, opmath = cpu_opmath(dtype);
	int64_t shape[AMP_MAX_DIMS];
	int ndim = self->ndim;
	char a[128], b[128];

	if (!amp_dtype_is_floating(dtype))
		return cpu_not_implemented("binary_cross_entropy", self);
	/* TensorIterator with all dtypes equal: the loss has self's dtype */
	if (target->dtype != dtype) {
		amp_error(AMP_ERR_DTYPE, "Found dtype %s but expected %s",
			  amp_dtype_torch_name(target->dtype),
			  amp_dtype_torch_name(dtype));
		return cpu_error_with(AMP_ERR_DTYPE, self, target);
	}
	memcpy(shape, self->shape, sizeof shape);
	int status = cpu_broadcast_into(&ndim, shape, target->ndim,
					target->shape);
	if (status != AMP_OK)
		return cpu_error_with(status, self, target);
	if (!shapes_equal(self, ndim, shape)) {
		amp_error(AMP_ERR_INVALID,
			  "output with shape %s doesn't match the broadcast "
			  "shape %s",
			  cpu_shape_string(self->ndim, self->shape, a, sizeof a),
			  cpu_shape_string(ndim, shape, b, sizeof b));
		return cpu_error_with(AMP_ERR_INVALID, self, target);
	}
	int64_t n = amp_tensor_numel(self);
	struct cpu_operand x = { 0 }, y = { 0 }, w = { 0 };
	void *values = cpu_alloc((size_t)n, opmath);
	status = values ? AMP_OK : amp_last_status();
	if (status == AMP_OK)
		status = cpu_operand_load(self, ndim, shape, dtype, opmath, &x);
	if (status == AMP_OK)
		status = cpu_operand_load(target, ndim, shape, dtype, opmath, &y);
	if (status == AMP_OK)
		status = load_factor(weight, ndim, shape, opmath, &w);
	for (int64_t i = 0; status == AMP_OK && i < n; i++) {
		double xi = factor_at(&x, opmath, i), yi = factor_at(&y, opmath, i);
		if (!(xi >= 0 && xi <= 1))
			status = amp_error(AMP_ERR_INVALID,
					   "all elements of input should be "
					   "between 0 and 1");
		else if (!(yi >= 0 && yi <= 1))
			status = amp_error(AMP_ERR_INVALID,
					   "all elements of target should be "
					   "between 0 and 1");
		else if (opmath == AMP_DTYPE_F32)
			/* the loss tensor (self's dtype) is then mul_(weight) */
			((float *)values)[i] =
				round_through(dtype,
					      amp_bcef((float)xi, (float)yi)) *
				(float)factor_at(&w, opmath, i);
		else
			((double *)values)[i] =
				amp_bce(xi, yi) * factor_at(&w, opmath, i);
	}
	if (status == AMP_OK)
		status = finish_loss(call, dtype, self->device, ndim, shape,
				     values, n, reduction, (double)n, true);
	else
		cpu_error_with(status, self, target);
	cpu_operand_release(&x);
	cpu_operand_release(&y);
	cpu_operand_release(&w);
	free(values);
	return status;
}

/* ATen composes this op from in-place steps on (1 - target), so the loss
 * takes the target's dtype and shape; input, weight and pos_weight
 * broadcast to it. */
int amp_forward_bce_with_logits(struct amp_call *call)
{
	struct amp_tensor *self = cpu_arg_tensor(call, 0);
	struct amp_tensor *target = cpu_arg_tensor(call, 1);
	struct amp_tensor *weight = cpu_arg_tensor(call, 2);
	struct amp_tensor *pos_weight = cpu_arg_tensor(call, 3);
	enum amp_reduction reduction = (enum amp_reduction)call->args[4].i;
	enum amp_dtype dtype = target->dtype, opmath = cpu_opmath(dtype);
	int ndim = target->ndim;
	const int64_t *shape = target->shape;

	if (!amp_dtype_is_floating(dtype) || !amp_dtype_is_floating(self->dtype)) {
		amp_error(AMP_ERR_DTYPE,
			  "result type %s can't be cast to the desired output "
			  "type %s",
			  amp_dtype_torch_name(amp_promote_types(self->dtype,
								  dtype)),
			  amp_dtype_torch_name(dtype));
		return cpu_error_with(AMP_ERR_DTYPE, self, target);
	}
	int64_t n = amp_tensor_numel(target);
	struct cpu_operand x = { 0 }, y = { 0 }, w = { 0 }, pw = { 0 };
	void *values = cpu_alloc((size_t)n, opmath);
	int status = values ? AMP_OK : amp_last_status();
	if (status == AMP_OK) {
		status = cpu_operand_load(self, ndim, shape, self->dtype,
					  opmath, &x);
		if (status != AMP_OK)
			cpu_error_with(status, self, target);
	}
	if (status == AMP_OK)
		status = cpu_operand_load(target, ndim, shape, dtype, opmath, &y);
	if (status == AMP_OK)
		status = load_factor(weight, ndim, shape, opmath, &w);
	if (status == AMP_OK)
		status = load_factor(pos_weight, ndim, shape, opmath, &pw);
	for (int64_t i = 0; status == AMP_OK && i < n; i++) {
		double xi = factor_at(&x, opmath, i), yi = factor_at(&y, opmath, i);
		double wi = factor_at(&w, opmath, i), pwi = factor_at(&pw, opmath, i);
		if (opmath == AMP_DTYPE_F32)
			((float *)values)[i] =
				amp_bce_logitsf((float)xi, (float)yi, (float)pwi) *
				(float)wi;
		else
			((double *)values)[i] = amp_bce_logits(xi, yi, pwi) * wi;
	}
	if (status == AMP_OK)
		status = finish_loss(call, dtype, target->device, ndim, shape,
				     values, n, reduction, (double)n, true);
	cpu_operand_release(&x);
	cpu_operand_release(&y);
	cpu_operand_release(&w);
	cpu_operand_release(&pw);
	free(values);
	return status;
}
