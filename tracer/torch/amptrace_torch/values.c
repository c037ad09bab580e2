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
 * Host tensors are judged when the op ends.  A tensor whose elements the
 * host cannot read (on a GPU) is queued to the observer, which counts it
 * on the device where the op ends (observer.cpp), and judged
 * when values_flush reads them all, once per step; its diag events then
 * come at the step's end, in the order of the ops. */
#include "values.h"

#include "diag_scan.h"
#include "events.h"
#include "gpu.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_bool enabled;
static atomic_int captures; /* CUDA graphs capturing now */
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

void values_capturing(bool began)
{
	if (began) {
		atomic_fetch_add(&captures, 1);
		return;
	}
	/* an end without its beginning (recording began inside a capture,
	 * or capture_end raised) does not go below none */
	int now = atomic_load(&captures);
	while (now > 0 &&
	       !atomic_compare_exchange_weak(&captures, &now, now - 1))
		;
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
			    const struct producer_tensor *t)
{
	if (real_name(t->name))
		snprintf(buf, size, "tensor %llu '%s'",
			 (unsigned long long)t->id, t->name);
	else
		snprintf(buf, size, "tensor %llu", (unsigned long long)t->id);
}

/* Whether `name` ("fc2.weight") lies under the module path `module`
 * ("fc2"), which then says all it says. */
static bool under_module(const char *name, const char *module)
{
	size_t n = strlen(module);

	return !strncmp(name, module, n) && name[n] == '.';
}

/* "linear (op 12, forward, module 'fc2')", "mm (op 40, backward of op
 * 12, weight 'fc2.weight')": the op, and the layer where the trace can
 * tell it: the module that ran it (not the root, whose path is ""), and
 * a named argument (a parameter) that the module's path does not name
 * already. */
static void describe_op(char *buf, size_t size, const struct values_op *op)
{
	const char *weight = NULL;
	const char *module = op->module && op->module[0] ? op->module : NULL;

	for (int i = 0; op->arguments && i < op->arguments->ntensors; i++)
		if (real_name(op->arguments->tensors[i].name)) {
			weight = op->arguments->tensors[i].name;
			break;
		}
	if (weight && module && under_module(weight, module))
		weight = NULL;
	int n = snprintf(buf, size, "%s%s%s (op %llu, %s", op->op,
			 op->overload && op->overload[0] ? "." : "",
			 op->overload ? op->overload : "",
			 (unsigned long long)op->op_id, amp_phase_name(op->phase));
	if (n < 0 || (size_t)n >= size)
		return;
	if (op->phase == AMP_PHASE_BACKWARD && op->forward_op_id)
		n += snprintf(buf + n, size - (size_t)n, " of op %llu",
			      (unsigned long long)op->forward_op_id);
	if ((size_t)n < size && module)
		n += snprintf(buf + n, size - (size_t)n, ", module '%s'", module);
	if ((size_t)n < size && weight)
		n += snprintf(buf + n, size - (size_t)n, ", weight '%s'", weight);
	if ((size_t)n < size)
		snprintf(buf + n, size - (size_t)n, ")");
}

static void emit_diag(const char *kind, const char *message, uint64_t op_id,
		      uint64_t tensor_id)
{
	struct producer_event e = { .kind = PRODUCER_DIAG };

	e.diag = (struct producer_diag){ .kind = kind, .message = message,
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

/* What a result holds: counted (the host's checks, a GPU's through the
 * CUDA module), or only whether (torch's reductions on a GPU:
 * obs_reduction.counted). */
struct non_finite {
	int64_t inf, nan;
	bool counted;
};

/* `largest`: the input holding max |input| ("" when not known). */
static void report_result(const char *op, uint64_t op_id, const char *tensor,
			  uint64_t tensor_id, enum amp_dtype dtype,
			  struct non_finite held, int64_t numel,
			  double max_abs, const char *largest)
{
	char message[768], counts[96];

	if (held.counted)
		snprintf(counts, sizeof counts, "%lld inf, %lld NaN of %lld values",
			 (long long)held.inf, (long long)held.nan,
			 (long long)numel);
	else
		snprintf(counts, sizeof counts, "some %s of %lld values",
			 held.nan ? "NaN" : "inf, no NaN,", (long long)numel);
	snprintf(message, sizeof message,
		 "%s produced inf/NaN in its %s output %s (%s) from finite "
		 "inputs (max |input| %g%s%s): %s",
		 op, amp_dtype_name(dtype), tensor, counts, max_abs,
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

void values_tensor_of(const struct obs_args *args, int index,
		      struct values_tensor *out)
{
	out->info = args->tensors[index];
	out->data = args->data[index];
	out->numel = args->numel[index];
	out->dense = args->dense[index];
	memcpy(out->strides, args->strides[index], sizeof out->strides);
}

/* A tensor's elements, contiguous in some order (what the scans need): in
 * place when it is dense, else copied in logical order into *owned (the
 * caller frees it).  NULL when they cannot be read. */
static const void *elements(const struct values_tensor *t, void **owned)
{
	const struct producer_tensor *info = &t->info;
	size_t size = amp_dtype_size(info->dtype);
	int64_t index[PRODUCER_MAX_DIMS] = { 0 };

	*owned = NULL;
	if (!t->data || t->dense)
		return t->data;
	char *copy = malloc(t->numel > 0 ? (size_t)t->numel * size : 1);
	if (!copy)
		return NULL;
	for (int64_t k = 0; k < t->numel; k++) {
		int64_t offset = 0;
		for (int d = 0; d < info->ndim; d++)
			offset += index[d] * t->strides[d];
		memcpy(copy + (size_t)k * size,
		       (const char *)t->data + offset * (int64_t)size, size);
		for (int d = info->ndim - 1;
		     d >= 0 && ++index[d] == info->shape[d]; d--)
			index[d] = 0;
	}
	*owned = copy;
	return copy;
}

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
		struct values_tensor t;
		void *owned;
		double largest;
		values_tensor_of(arguments, i, &t);
		if (!t.info.id || !is_floating(t.info.dtype))
			continue;
		const void *values = elements(&t, &owned);
		if (!values)
			continue;
		finite &= amp_values_range(values, t.info.dtype, (size_t)t.numel,
					   &largest);
		free(owned);
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
			    int index, const struct producer_tensor *tensor,
			    enum amp_dtype target, int64_t numel,
			    bool inner_origin);

/* Result t (its elements in `bits`) holds inf/NaN: reported when it is
 * the origin.  Returns whether the op holds an origin. */
static bool judge_result(const struct values_op *op,
			 const struct producer_tensor *t, const uint16_t *bits,
			 size_t n, bool inner_origin)
{
	double max_abs;
	int at;

	if (inner_origin || !arguments_finite(op->arguments, &max_abs, &at))
		return inner_origin;
	uint16_t mask = exponent_mask(t->dtype);
	int64_t nan, inf = amp_count_inf_nan(bits, n, mask, &nan);
	char where[192], tensor[160], largest[160] = "";
	describe_op(where, sizeof where, op);
	describe_tensor(tensor, sizeof tensor, t);
	if (at >= 0)
		describe_tensor(largest, sizeof largest,
				&op->arguments->tensors[at]);
	report_result(where, op->op_id, tensor, t->id, t->dtype,
		      (struct non_finite){ inf, nan, true }, (int64_t)n,
		      max_abs, largest);
	return true;
}

/* An op that allocates without writing (torch.empty, empty_like,
 * new_empty, empty_strided: in a compiled backward too): its results
 * hold whatever the memory held, NaN under
 * torch.utils.deterministic.fill_uninitialized_memory, none of it
 * computed. */
static bool leaves_uninitialized(const struct values_op *op)
{
	const char *name = op->op;

	if (!name)
		return false;
	if (*name == '_')
		name++;
	if (!strncmp(name, "new_", 4))
		name += 4;
	return !strncmp(name, "empty", 5);
}

bool values_check_results(const struct values_op *op,
			  const struct obs_args *results, bool inner_origin)
{
	if (leaves_uninitialized(op))
		return inner_origin;
	for (int i = 0; i < results->ntensors; i++) {
		struct values_tensor t;
		void *owned;
		values_tensor_of(results, i, &t);
		if (!t.info.id || !is_low_precision(t.info.dtype) ||
		    written_in_place(op, t.info.id))
			continue;
		if (!t.data) {
			queue_on_device(op, OBS_REDUCE_RESULT, i, &t.info,
					t.info.dtype, t.numel, inner_origin);
			continue;
		}
		const uint16_t *bits = elements(&t, &owned);
		size_t n = (size_t)t.numel;
		bool found = bits && amp_non_finite_scan(amp_isa_best())(
					     bits, n, exponent_mask(t.info.dtype));
		bool origin = found && judge_result(op, &t.info, bits, n,
						    inner_origin);
		free(owned);
		if (found)
			return origin;
	}
	return inner_origin;
}

bool values_check_cast(const struct values_op *op,
		       const struct values_tensor *source,
		       const struct producer_tensor *result)
{
	const struct producer_tensor *from = &source->info;
	void *owned;

	if (from->dtype != AMP_DTYPE_F32 || !is_low_precision(result->dtype))
		return false;
	if (!source->data) {
		queue_on_device(op, OBS_REDUCE_CAST_SOURCE, 0, from,
				result->dtype, source->numel, false);
		return false;
	}
	const float *values = elements(source, &owned);
	if (!values)
		return false;
	size_t n = (size_t)source->numel;
	struct amp_cast_verdict v;
	double max_abs = 0.0;
	amp_cast_verdict_of(values, n, result->dtype, &v);
	if (v.overflowed)
		amp_values_range(values, AMP_DTYPE_F32, n, &max_abs);
	free(owned);
	if (!v.overflowed && !v.underflow)
		return false;
	char where[192], tensor[160];
	describe_op(where, sizeof where, op);
	describe_tensor(tensor, sizeof tensor, from);
	if (v.overflowed)
		report_cast_overflow(where, op->op_id, tensor, from->id,
				     result->dtype, v.overflowed, (int64_t)n,
				     max_abs);
	if (v.underflow)
		report_underflow(where, op->op_id, tensor, from->id,
				 result->dtype, &v);
	return v.overflowed > 0;
}

/* ---------------------------------------------- checks on the device */

static void queue_on_device(const struct values_op *op, enum obs_reduce what,
			    int index, const struct producer_tensor *tensor,
			    enum amp_dtype target, int64_t numel,
			    bool inner_origin)
{
	struct amp_cast_limits l = amp_cast_limits_of(target);
	const struct amp_value_limits limits = {
		l.tiny, l.zero, l.overflow, what == OBS_REDUCE_CAST_SOURCE
	};

	if (!device.cuda_queue || atomic_load(&captures) > 0)
		return;
	pthread_mutex_lock(&pending_lock);
	bool full = npending == PENDING_LIMIT;
	pthread_mutex_unlock(&pending_lock);
	if (full)
		values_flush();
	pthread_mutex_lock(&pending_lock);
	bool own = gpu_push_own();
	bool queued = npending < PENDING_LIMIT &&
		      device.cuda_queue(what, index, &limits, npending);
	if (own)
		gpu_pop();
	if (queued) {
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
			      p->dtype,
			      (struct non_finite){ r->inf, r->nan, r->counted },
			      p->numel, r->arguments_max_abs, "");
		return;
	}
	struct amp_cast_verdict v;
	amp_cast_verdict_of_stats(&r->source, &v);
	if (v.overflowed) {
		recent_origins[nrecent++ % RECENT_ORIGINS] = p->op_id;
		report_cast_overflow(p->place, p->op_id, p->tensor, p->tensor_id,
				     p->target, v.overflowed, p->numel,
				     r->source.max_abs);
	}
	if (v.underflow)
		report_underflow(p->place, p->op_id, p->tensor, p->tensor_id,
				 p->target, &v);
}

void values_flush(void)
{
	if (!device.cuda_collect)
		return;
	pthread_mutex_lock(&pending_lock);
	if (npending) {
		nrecent = 0;
		bool own = gpu_push_own();
		device.cuda_collect(deliver);
		if (own)
			gpu_pop();
		npending = 0;
	}
	pthread_mutex_unlock(&pending_lock);
}
