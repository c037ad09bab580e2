/* The bridge's value checks (values.h).
 *
 * fp16-overflow, for an op: a low-precision result holds inf or NaN
 *   although every floating argument was finite, and no cast of its
 *   arguments nor op inside it is the origin already.  Later ops that
 *   carry the value on are not reported: the first offending op of a
 *   step is the one reported.  An op writing its argument in place is
 *   not judged (its argument is gone).
 * fp16-overflow, for a cast: finite f32 values that become inf in f16
 *   (from 65520) or bf16 (amp_cast_limits_of).
 * cast-underflow: libamp's rule (amp_cast_verdict_of), the same code.
 *
 * Host tensors are judged when the op ends.  A device tensor's counts are
 * queued on the device by the observer (one small reduction per checked
 * op) and judged when values_flush reads them all, once per step; its
 * diag events then come at the step's end, in the order of the ops. */
#include "values.h"

#include "diag_scan.h"
#include "events.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

static atomic_bool enabled;
static struct obs_observer device; /* its cuda_* entries, or NULL */

/* Device checks queued and not read yet; past this many, they are read
 * at once (a sync) rather than held. */
#define PENDING_LIMIT 4096

/* What a message needs of a queued check, copied: the op's strings may
 * belong to a thread that is gone when the step's counts are read. */
struct pending {
	enum obs_reduce what;
	bool inner_origin;
	uint64_t op_id, forward_op_id;
	enum amp_phase phase;
	char op[96], place[192], tensor[160];
	uint64_t tensor_id;
	enum amp_dtype dtype, target;
	int64_t numel;
};

static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pending pending[PENDING_LIMIT];
static size_t npending;

/* Ops whose cast overflowed among the counts being read: their results'
 * inf is the cast's. */
#define RECENT_ORIGINS 64
static uint64_t recent_origins[RECENT_ORIGINS];
static size_t nrecent;

void values_set_enabled(bool on)
{
	atomic_store(&enabled, on);
}

bool values_enabled(void)
{
	return atomic_load_explicit(&enabled, memory_order_relaxed);
}

void values_bind(const struct obs_observer *observer)
{
	device = *observer;
}

static bool is_low_precision(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_F16 || dtype == AMP_DTYPE_BF16;
}

static bool is_floating(enum amp_dtype dtype)
{
	return is_low_precision(dtype) || dtype == AMP_DTYPE_F32 ||
	       dtype == AMP_DTYPE_F64;
}

static uint16_t exponent_mask(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_F16 ? 0x7c00 : 0x7f80;
}

/* ------------------------------------------------------------ messages */

/* A name the program gave (fc1.weight), not the bridge's "(...)" label. */
static bool real_name(const char *name)
{
	return name && name[0] && name[0] != '(';
}

static void describe_tensor(char *buf, size_t size,
			    const struct amp_tensor_info *t)
{
	if (real_name(t->name))
		snprintf(buf, size, "tensor %llu '%s'",
			 (unsigned long long)t->id, t->name);
	else
		snprintf(buf, size, "tensor %llu", (unsigned long long)t->id);
}

/* "linear (op 12, forward, weight 'fc2.weight')", "mm (op 40, backward
 * of op 12)": the op, and the layer where the trace can tell it (a named
 * argument: the parameters of the module that ran it). */
static void describe_op(char *buf, size_t size, const struct values_op *op)
{
	const char *weight = NULL;

	for (int i = 0; op->arguments && i < op->arguments->ntensors; i++)
		if (real_name(op->arguments->tensors[i].name)) {
			weight = op->arguments->tensors[i].name;
			break;
		}
	int n = snprintf(buf, size, "%s%s%s (op %llu, %s", op->op,
			 op->overload && op->overload[0] ? "." : "",
			 op->overload ? op->overload : "",
			 (unsigned long long)op->op_id, amp_phase_name(op->phase));
	if (n < 0 || (size_t)n >= size)
		return;
	if (op->phase == AMP_PHASE_BACKWARD && op->forward_op_id)
		n += snprintf(buf + n, size - (size_t)n, " of op %llu",
			      (unsigned long long)op->forward_op_id);
	if ((size_t)n < size && weight)
		n += snprintf(buf + n, size - (size_t)n, ", weight '%s'", weight);
	if ((size_t)n < size)
		snprintf(buf + n, size - (size_t)n, ")");
}

static void emit_diag(const char *kind, const char *message, uint64_t op_id,
		      uint64_t tensor_id)
{
	struct amp_event e = { .kind = AMP_EVENT_DIAG };

	e.diag = (struct amp_diag_event){ .kind = kind, .message = message,
					  .op_id = op_id,
					  .tensor_id = tensor_id };
	events_emit(&e);
}

static const char *overflow_advice(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_F16
		       ? "f16 overflows above 65504; run this op in f32 (the "
			 "fp32 policy: an autocast(enabled=False) region with "
			 ".float() inputs) or autocast to bf16, which has f32's "
			 "range"
		       : "run this op in f32 (an autocast(enabled=False) region "
			 "with .float() inputs)";
}

/* `largest`: the input holding max |input| ("" when not known). */
static void report_result(const char *op, uint64_t op_id, const char *tensor,
			  uint64_t tensor_id, enum amp_dtype dtype, int64_t inf,
			  int64_t nan, int64_t numel, double max_abs,
			  const char *largest)
{
	char message[768];

	snprintf(message, sizeof message,
		 "%s produced inf/NaN in its %s output %s (%lld inf, %lld NaN "
		 "of %lld values) from finite inputs (max |input| %g%s%s): %s",
		 op, amp_dtype_name(dtype), tensor, (long long)inf,
		 (long long)nan, (long long)numel, max_abs,
		 largest[0] ? ", in " : "", largest, overflow_advice(dtype));
	emit_diag("fp16-overflow", message, op_id, tensor_id);
}

static void report_cast_overflow(const char *op, uint64_t op_id,
				 const char *tensor, uint64_t tensor_id,
				 enum amp_dtype target, int64_t overflowed,
				 int64_t numel, double max_abs)
{
	struct amp_cast_limits limits = amp_cast_limits_of(target);
	char message[768];

	snprintf(message, sizeof message,
		 "the f32->%s cast of %s for %s overflowed: %lld of %lld "
		 "values (max |x| %g) are beyond %s's largest %g and became "
		 "inf: scale them down before the cast, keep this op in f32 "
		 "(an autocast(enabled=False) region with .float() inputs), or "
		 "use bf16",
		 amp_dtype_name(target), tensor, op, (long long)overflowed,
		 (long long)numel, max_abs, amp_dtype_name(target),
		 (double)limits.largest);
	emit_diag("fp16-overflow", message, op_id, tensor_id);
}

static void report_underflow(const char *op, uint64_t op_id,
			     const char *tensor, uint64_t tensor_id,
			     enum amp_dtype target,
			     const struct amp_cast_verdict *v)
{
	char message[768];

	snprintf(message, sizeof message,
		 "the f32->%s cast of %s for %s flushed %.1f%% of its non-zero "
		 "values (%lld of %lld; about %lld to zero) below %s's smallest "
		 "normal %g: keep this tensor in f32 (an autocast(enabled=False) "
		 "region, or the fp32 policy), rescale it (as GradScaler does "
		 "for gradients), or use bf16",
		 amp_dtype_name(target), tensor, op,
		 100.0 * (double)v->flushed / (double)v->nonzero,
		 (long long)v->flushed, (long long)v->nonzero,
		 (long long)v->zeroed, amp_dtype_name(target),
		 (double)amp_cast_limits_of(target).tiny);
	emit_diag("cast-underflow", message, op_id, tensor_id);
}

/* ------------------------------------------------- checks on the host */

/* Whether every floating argument read in place is finite; their largest
 * finite |x| into *max_abs, and which argument holds it into *largest_at
 * (-1: none). */
static bool arguments_finite(const struct obs_args *arguments,
			     double *max_abs, int *largest_at)
{
	bool finite = true;

	*max_abs = 0.0;
	*largest_at = -1;
	for (int i = 0; arguments && i < arguments->ntensors; i++) {
		const struct amp_tensor_info *t = &arguments->tensors[i];
		double largest;
		if (!t->id || !arguments->data[i] || !is_floating(t->dtype))
			continue;
		finite &= amp_values_range(arguments->data[i], t->dtype,
					   (size_t)arguments->numel[i], &largest);
		if (largest > *max_abs) {
			*max_abs = largest;
			*largest_at = i;
		}
	}
	return finite;
}

static bool written_in_place(const struct values_op *op, uint64_t id)
{
	for (int i = 0; op->arguments && i < op->arguments->ntensors; i++)
		if (op->arguments->tensors[i].id == id)
			return true;
	return false;
}

static void queue_on_device(const struct values_op *op, enum obs_reduce what,
			    int index, const struct amp_tensor_info *tensor,
			    enum amp_dtype target, int64_t numel,
			    bool inner_origin);

bool values_check_results(const struct values_op *op,
			  const struct obs_args *results, bool inner_origin)
{
	for (int i = 0; i < results->ntensors; i++) {
		const struct amp_tensor_info *t = &results->tensors[i];
		if (!t->id || !is_low_precision(t->dtype) ||
		    written_in_place(op, t->id))
			continue;
		if (!results->data[i]) {
			if (t->device == AMP_DEVICE_CUDA)
				queue_on_device(op, OBS_REDUCE_RESULT, i, t,
						t->dtype, results->numel[i],
						inner_origin);
			continue;
		}
		const uint16_t *bits = results->data[i];
		size_t n = (size_t)results->numel[i];
		uint16_t mask = exponent_mask(t->dtype);
		if (!amp_non_finite_scan(amp_isa_best())(bits, n, mask))
			continue;
		double max_abs;
		int at;
		if (inner_origin ||
		    !arguments_finite(op->arguments, &max_abs, &at))
			return inner_origin;
		int64_t nan, inf = amp_count_inf_nan(bits, n, mask, &nan);
		char where[192], tensor[160], largest[160] = "";
		describe_op(where, sizeof where, op);
		describe_tensor(tensor, sizeof tensor, t);
		if (at >= 0)
			describe_tensor(largest, sizeof largest,
					&op->arguments->tensors[at]);
		report_result(where, op->op_id, tensor, t->id, t->dtype, inf, nan,
			      (int64_t)n, max_abs, largest);
		return true;
	}
	return inner_origin;
}

bool values_check_cast(const struct values_op *op,
		       const struct amp_tensor_info *source, const void *data,
		       int64_t numel, const struct amp_tensor_info *result)
{
	if (source->dtype != AMP_DTYPE_F32 || !is_low_precision(result->dtype))
		return false;
	if (!data) {
		if (source->device == AMP_DEVICE_CUDA)
			queue_on_device(op, OBS_REDUCE_CAST_SOURCE, 0, source,
					result->dtype, numel, false);
		return false;
	}
	struct amp_cast_verdict v;
	amp_cast_verdict_of(data, (size_t)numel, result->dtype, &v);
	if (!v.overflowed && !v.underflow)
		return false;
	char where[192], tensor[160];
	describe_op(where, sizeof where, op);
	describe_tensor(tensor, sizeof tensor, source);
	if (v.overflowed) {
		double max_abs;
		amp_values_range(data, AMP_DTYPE_F32, (size_t)numel, &max_abs);
		report_cast_overflow(where, op->op_id, tensor, source->id,
				     result->dtype, v.overflowed, numel, max_abs);
	}
	if (v.underflow)
		report_underflow(where, op->op_id, tensor, source->id,
				 result->dtype, &v);
	return v.overflowed > 0;
}

/* ---------------------------------------------- checks on the device */

static void queue_on_device(const struct values_op *op, enum obs_reduce what,
			    int index, const struct amp_tensor_info *tensor,
			    enum amp_dtype target, int64_t numel,
			    bool inner_origin)
{
	struct amp_cast_limits l = amp_cast_limits_of(target);
	const float limits[3] = { l.tiny, l.zero, l.overflow };

	if (!device.cuda_queue)
		return;
	pthread_mutex_lock(&pending_lock);
	bool full = npending == PENDING_LIMIT;
	pthread_mutex_unlock(&pending_lock);
	if (full)
		values_flush();
	pthread_mutex_lock(&pending_lock);
	if (npending < PENDING_LIMIT &&
	    device.cuda_queue(what, index, limits, npending)) {
		struct pending *p = &pending[npending++];
		*p = (struct pending){
			.what = what, .inner_origin = inner_origin,
			.op_id = op->op_id, .forward_op_id = op->forward_op_id,
			.phase = op->phase, .tensor_id = tensor->id,
			.dtype = tensor->dtype, .target = target, .numel = numel,
		};
		snprintf(p->op, sizeof p->op, "%s", op->op);
		describe_op(p->place, sizeof p->place, op);
		describe_tensor(p->tensor, sizeof p->tensor, tensor);
	}
	pthread_mutex_unlock(&pending_lock);
}

static bool recent_origin(uint64_t op_id)
{
	for (size_t i = 0; i < nrecent && i < RECENT_ORIGINS; i++)
		if (recent_origins[i] == op_id)
			return true;
	return false;
}

/* The counts of pending[tag], judged as the host checks judge. */
static void deliver(uint64_t tag, const struct obs_reduction *r)
{
	if (tag >= npending)
		return;
	const struct pending *p = &pending[tag];
	if (r->what == OBS_REDUCE_RESULT) {
		if (!r->inf && !r->nan)
			return;
		if (p->inner_origin || r->arguments_non_finite ||
		    recent_origin(p->op_id))
			return;
		report_result(p->place, p->op_id, p->tensor, p->tensor_id,
			      p->dtype, r->inf, r->nan, p->numel,
			      r->arguments_max_abs, "");
		return;
	}
	if (r->overflowed) {
		recent_origins[nrecent++ % RECENT_ORIGINS] = p->op_id;
		report_cast_overflow(p->place, p->op_id, p->tensor, p->tensor_id,
				     p->target, r->overflowed, p->numel,
				     r->max_abs);
	}
	if (amp_underflow_material(r->flushed, r->nonzero, r->lost, r->total)) {
		struct amp_cast_verdict v = { .overflowed = r->overflowed,
					      .flushed = r->flushed,
					      .nonzero = r->nonzero,
					      .zeroed = r->zeroed,
					      .underflow = true };
		report_underflow(p->place, p->op_id, p->tensor, p->tensor_id,
				 p->target, &v);
	}
}

void values_flush(void)
{
	if (!device.cuda_collect)
		return;
	pthread_mutex_lock(&pending_lock);
	if (npending) {
		nrecent = 0;
		device.cuda_collect(deliver);
		npending = 0;
	}
	pthread_mutex_unlock(&pending_lock);
}
