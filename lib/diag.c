/* Value-dependent diagnostics: fp16-overflow and cast-underflow.
 *
 * Both read tensor values, so they run only while amp_set_value_checks()
 * (or AMP_VALUE_CHECKS=1 at load) turned them on; the dispatcher's test is
 * one relaxed atomic load.  Each emits an AMP_EVENT_DIAG event whose
 * message is the user's answer: the op, the tensor, the numbers, the fix.
 *
 * fp16-overflow: an op computed a low-precision (f16/bf16) output holding
 *   inf or NaN although every floating input was finite.  Only kernels are
 *   checked (composites would report their inner op's overflow again;
 *   in-place ops have overwritten their input).
 * cast-underflow: a cast to f16/bf16 turned a material part of the
 *   source's non-zero values into zero or subnormals (precision lost, or
 *   the value gone): amp_cast_verdict_of() (diag_scan.c, shared with the
 *   PyTorch bridge) says what is material. */
#include "amp_internal.h"
#include "backend.h"
#include "diag_scan.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

atomic_bool amp_value_checks_on;

/* AMP_VALUE_CHECKS=1 (amptrace run sets it) turns the checks on at load. */
__attribute__((constructor)) static void value_checks_from_environment(void)
{
	const char *value = getenv("AMP_VALUE_CHECKS");

	if (value && value[0] && strcmp(value, "0") != 0)
		atomic_store(&amp_value_checks_on, true);
}

void amp_set_value_checks(bool enabled)
{
	atomic_store(&amp_value_checks_on, enabled);
}

bool amp_value_checks_enabled(void)
{
	return atomic_load(&amp_value_checks_on);
}

static bool is_low_precision(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_F16 || dtype == AMP_DTYPE_BF16;
}

/* t's elements in place when they can be read so (contiguous, in host
 * memory): the checks then copy nothing, which is most of their cost. */
static const void *in_place(const struct amp_tensor *t)
{
	if (!amp_tensor_is_contiguous(t) || amp_storage_on_gpu(t->storage))
		return NULL;
	return amp_tensor_data(t);
}

/* The tensor's elements as f32, or NULL; *owned is what to free (NULL
 * when the elements are read in place). */
static const float *read_f32(const struct amp_tensor *t, int64_t *count,
			     void **owned)
{
	int64_t n = amp_tensor_numel(t);
	float *values;

	*count = n;
	*owned = NULL;
	if (t->dtype == AMP_DTYPE_F32 && in_place(t))
		return in_place(t);
	values = malloc((size_t)(n > 0 ? n : 1) * sizeof *values);
	if (values)
		amp_tensor_gather(t, AMP_DTYPE_F32, values);
	*owned = values;
	return values;
}

static void describe(char *buf, size_t size, const struct amp_tensor *t)
{
	if (t->name)
		snprintf(buf, size, "tensor %llu '%s'", (unsigned long long)t->id,
			 t->name);
	else
		snprintf(buf, size, "tensor %llu", (unsigned long long)t->id);
}

static void emit(const char *kind, const char *message, uint64_t op_id,
		 uint64_t tensor_id)
{
	struct amp_event event = { .kind = AMP_EVENT_DIAG };

	event.diag = (struct amp_diag_event){
		.kind = kind, .message = message, .op_id = op_id,
		.tensor_id = tensor_id,
	};
	amp_hook_emit(&event);
}

/* --------------------------------------------------------- fp16-overflow */

/* Scans a floating tensor: whether all values are finite, and max |x|. */
static bool all_finite(const struct amp_tensor *t, double *max_abs)
{
	int64_t n;
	void *owned;
	const float *values = read_f32(t, &n, &owned);
	bool finite = true;

	if (!values)
		return true;
	for (int64_t i = 0; i < n; i++) {
		if (!isfinite(values[i]))
			finite = false;
		else if (fabs(values[i]) > *max_abs)
			*max_abs = fabs(values[i]);
	}
	free(owned);
	return finite;
}

/* Inputs as executed (after autocast's casts): false when any floating
 * input already held inf/NaN (the op did not create them). */
static bool inputs_finite(const struct amp_call *c, double *max_abs)
{
	for (int a = 0; a < c->nargs; a++) {
		const struct amp_arg *arg = &c->args[a];
		struct amp_tensor *const *items = &arg->tensor;
		int count = 1;

		if (arg->kind == AMP_ARG_TENSOR_LIST) {
			items = arg->list.items;
			count = arg->list.count;
		} else if (arg->kind != AMP_ARG_TENSOR &&
			   arg->kind != AMP_ARG_OPT_TENSOR) {
			continue;
		}
		for (int i = 0; i < count; i++)
			if (items[i] && amp_dtype_is_floating(items[i]->dtype) &&
			    !all_finite(items[i], max_abs))
				return false;
	}
	return true;
}

/* Low-precision outputs are scanned as bit patterns: no conversion
 * (diag_scan.c). */
static bool has_non_finite(const struct amp_tensor *t)
{
	uint16_t mask = t->dtype == AMP_DTYPE_F16 ? 0x7c00 : 0x7f80;
	int64_t n = amp_tensor_numel(t);
	uint16_t *owned = NULL;
	const uint16_t *bits = in_place(t);

	if (!bits) {
		owned = malloc((size_t)(n > 0 ? n : 1) * sizeof *owned);
		if (!owned)
			return false;
		amp_tensor_gather(t, t->dtype, owned);
		bits = owned;
	}
	bool found = amp_non_finite_scan(amp_isa_best())(bits, (size_t)n, mask);
	free(owned);
	return found;
}

static void report_overflow(const struct amp_call *c,
			    const struct amp_tensor *out)
{
	const struct amp_op_def *def = &amp_op_defs[c->op];
	double max_abs = 0.0;
	char tensor[160], message[768];

	if (!inputs_finite(c, &max_abs))
		return;
	describe(tensor, sizeof tensor, out);
	const char *dtype = amp_dtype_name(out->dtype);
	snprintf(message, sizeof message,
		 "%s%s%s (op %llu) produced inf/NaN in its %s output %s from "
		 "finite inputs (max |input| %g): %s",
		 def->name, def->overload[0] ? "." : "", def->overload,
		 (unsigned long long)c->op_id, dtype, tensor, max_abs,
		 out->dtype == AMP_DTYPE_F16
			 ? "f16 overflows above 65504; run this op in f32 (the "
			   "fp32 policy: an autocast(enabled=False) region with "
			   ".float() inputs) or autocast to bf16, which has f32's "
			   "range"
			 : "run this op in f32 (an autocast(enabled=False) "
			   "region with .float() inputs)");
	emit("fp16-overflow", message, c->op_id, out->id);
}

/* --------------------------------------------------------- cast-underflow */

/* Reads the source only (diag_scan.c). */
static void check_underflow(uint64_t op_id, const char *op_name,
			    const struct amp_tensor *source,
			    const struct amp_tensor *cast)
{
	int64_t n;
	void *owned;
	const float *values = read_f32(source, &n, &owned);
	struct amp_cast_verdict verdict;

	if (!values)
		return;
	amp_cast_verdict_of(values, (size_t)n, cast->dtype, &verdict);
	free(owned);
	if (!verdict.underflow)
		return;

	char from[160], to[160], message[768];
	describe(from, sizeof from, source);
	describe(to, sizeof to, cast);
	snprintf(message, sizeof message,
		 "the %s->%s cast of %s for %s (op %llu) flushed %.1f%% of its "
		 "non-zero values (%lld of %lld; about %lld to zero) below %s's "
		 "smallest normal %g, result %s: keep this tensor in f32 (an "
		 "autocast(enabled=False) region, or the fp32 policy), rescale "
		 "it (as GradScaler does for gradients), or use bf16",
		 amp_dtype_name(source->dtype), amp_dtype_name(cast->dtype), from,
		 op_name, (unsigned long long)op_id,
		 100.0 * (double)verdict.flushed / (double)verdict.nonzero,
		 (long long)verdict.flushed, (long long)verdict.nonzero,
		 (long long)verdict.zeroed, amp_dtype_name(cast->dtype),
		 (double)amp_cast_limits_of(cast->dtype).tiny, to);
	emit("cast-underflow", message, op_id, source->id);
}

/* ------------------------------------------------------- dispatcher calls */

/* The first tensor argument (explicit casts: the source). */
static const struct amp_tensor *first_tensor(const struct amp_call *c)
{
	for (int a = 0; a < c->nargs; a++)
		if ((c->args[a].kind == AMP_ARG_TENSOR ||
		     c->args[a].kind == AMP_ARG_OPT_TENSOR) &&
		    c->args[a].tensor)
			return c->args[a].tensor;
	return NULL;
}

static void check_outputs(const struct amp_call *call)
{
	const struct amp_op_def *def = &amp_op_defs[call->op];

	if (def->kind != AMP_OP_KIND_COMPUTE)
		return;
	for (int o = 0; o < call->noutputs; o++) {
		const struct amp_tensor *out = call->outputs[o];
		if (!out || !is_low_precision(out->dtype))
			continue;
		/* explicit casts (x.half()): an underflow check, never an
		 * overflow (an f32 value above 65504 is the cast's input) */
		const struct amp_tensor *source = first_tensor(call);
		if (!strcmp(def->name, "_to_copy") || !strcmp(def->name, "to")) {
			if (source && (source->dtype == AMP_DTYPE_F32 ||
				       source->dtype == AMP_DTYPE_F64))
				check_underflow(call->op_id, def->name, source,
						out);
			return;
		}
		if (has_non_finite(out)) {
			report_overflow(call, out);
			return;
		}
	}
}

/* The checks read device tensors through copies: amptrace's own work. */
void amp_diag_check_outputs(const struct amp_call *call)
{
	bool own = call->device == AMP_DEVICE_CUDA &&
		   amp_backend_own_work_begin();

	check_outputs(call);
	amp_backend_own_work_end(own);
}

void amp_diag_check_cast(const struct amp_call *call,
			 const struct amp_tensor *source,
			 const struct amp_tensor *cast)
{
	if (!is_low_precision(cast->dtype) ||
	    !(source->dtype == AMP_DTYPE_F32 || source->dtype == AMP_DTYPE_F64))
		return;
	bool own = amp_storage_on_gpu(source->storage) &&
		   amp_backend_own_work_begin();
	check_underflow(call->op_id, amp_op_defs[call->op].name, source, cast);
	amp_backend_own_work_end(own);
}
