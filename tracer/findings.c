/* Findings computed from a trace (see findings.h).  The rules:
 *
 * backward-under-autocast  a backward op whose autocast.enabled is true.
 * stale-cache              a cast cache hit marked `stale` (its source was
 *                          modified in place after the cached cast was made).
 * cache-growth             the autocast cache's entry count, read at the end
 *                          of each step, rose in CACHE_GROWTH_STEPS
 *                          consecutive steps with no cache clear.
 * autocast-off-in-thread   thread T ran a lower-precision-list op (matmul,
 *                          linear, conv, ...: the policy table's, see
 *                          gen_low_precision_ops.c) with
 *                          autocast off, while another thread S was inside
 *                          an enabled region that was already open when T
 *                          made its first event (S started T, as
 *                          DataParallel's workers are started).
 * dtype-mismatch           an op outside autocast failed with f16/bf16 and
 *                          f32/f64 inputs; names the low-precision input
 *                          and the op that produced it.
 * banned-op                an op whose policy is `banned`.
 * scaler-skipped-step      a GradScaler `step` event with step_skipped (info
 *                          before its first step taken: calibration).
 * scaler-collapse          a scale below SCALER_COLLAPSE_SCALE, or
 *                          SCALER_COLLAPSE_HALVINGS updates in a row that
 *                          each lowered the scale.
 * redundant-cast           a tensor cast f32->low precision whose only use
 *                          is the cast back (round trip, no low-precision
 *                          compute in between), or the same tensor cast to
 *                          the same dtype (cache miss each time) by
 *                          several ops.
 * cache-disabled           a cacheable cast redone (cache_enabled off).
 * op-error                 an op failed, not explained by the kinds above.
 * policy-divergence        a cast by TorchScript's autocast ops, or a
 *                          table op under autocast with no region open
 *                          (findings_divergence.c).
 * fp16-overflow, cast-underflow, process-died, recording-stopped and any
 *                          other kind: amp.diag events of the file (libamp,
 *                          amptrace run and its recorder).
 *
 * Steps (for cache-growth), per process: a step ends at each GradScaler
 * `update`; without one, at the end of each optimizer update (a run of
 * in-place forward ops on leaves that require grad); without those, each
 * entry into an outermost autocast region starts one. */
#include "findings_internal.h"

#include <cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* snprintf that may cut: messages and labels are cut on purpose. */
void finding_text(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}


static const char advice_backward[] =
	"exit the autocast region before backward(): wrap only the forward "
	"pass and the loss";

const struct finding_kind finding_kinds[FINDING_KIND_COUNT] = {
	[FINDING_PROCESS_DIED] = { "process-died", FINDING_ERROR,
	  "see the signal or exit status; the trace holds every event up to "
	  "the end", false },
	[FINDING_DTYPE_MISMATCH] = { "dtype-mismatch", FINDING_ERROR,
	  "cast the autocast region's output back with .float() "
	  "(amp_to(t, AMP_DTYPE_F32)) before mixing it with f32 tensors", false },
	[FINDING_BANNED_OP] = { "banned-op", FINDING_ERROR,
	  "use binary_cross_entropy_with_logits on the logits (drop the "
	  "sigmoid), or compute the loss with autocast disabled on .float() "
	  "inputs", false },
	[FINDING_FP16_OVERFLOW] = { "fp16-overflow", FINDING_ERROR,
	  "run the op in f32 (autocast(enabled=False) with .float() inputs) "
	  "or autocast to bf16", true },
	[FINDING_SCALER_COLLAPSE] = { "scaler-collapse", FINDING_ERROR,
	  "find the op producing inf/NaN (fp16-overflow findings), use bf16, "
	  "or lower the learning rate", false },
	[FINDING_OP_ERROR] = { "op-error", FINDING_ERROR,
	  "read the op's error in the trace", false },
	[FINDING_RECORDING_STOPPED] = { "recording-stopped", FINDING_WARNING,
	  "give amptrace run a raw directory with room (--raw-dir DIR or "
	  "TMPDIR; about 2 MiB per thread): the trace lacks what followed",
	  false },
	[FINDING_STALE_CACHE] = { "stale-cache", FINDING_WARNING,
	  "enter autocast per iteration around forward + loss only, so the "
	  "cache is cleared before the next forward", false },
	[FINDING_BACKWARD_UNDER_AUTOCAST] = { "backward-under-autocast",
	  FINDING_WARNING, advice_backward, false },
	[FINDING_AUTOCAST_OFF_IN_THREAD] = { "autocast-off-in-thread",
	  FINDING_WARNING,
	  "enter autocast inside the worker's forward (autocast state is "
	  "thread-local)", false },
	[FINDING_POLICY_DIVERGENCE] = { "policy-divergence", FINDING_WARNING,
	  "cast as eager autocast does: run the code eagerly inside `with "
	  "torch.autocast(...)` (no TorchScript autocast, no autocast "
	  "switched on outside a region)", false },
	[FINDING_CACHE_GROWTH] = { "cache-growth", FINDING_WARNING,
	  "exit the outermost autocast region every iteration (the cache is "
	  "cleared only then), or disable the cache for the long region", false },
	[FINDING_SCALER_SKIPPED_STEP] = { "scaler-skipped-step", FINDING_WARNING,
	  "a few skips while the scale calibrates are normal; many mean a "
	  "gradient overflows: find its op", false },
	[FINDING_CAST_UNDERFLOW] = { "cast-underflow", FINDING_WARNING,
	  "keep the tensor in f32 (fp32 policy or a disabled region), rescale "
	  "it, or use bf16", true },
	[FINDING_REDUNDANT_CAST] = { "redundant-cast", FINDING_INFO,
	  "cast once and reuse the result, or drop the cast pair", false },
	[FINDING_CACHE_DISABLED] = { "cache-disabled", FINDING_INFO,
	  "leave cache_enabled on so weight casts are made once per region",
	  false },
};


cJSON *finding_json(const struct trace_finding *f)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "kind", f->kind);
	cJSON_AddStringToObject(o, "severity",
				finding_severity_name(f->severity));
	cJSON_AddNumberToObject(o, "count", (double)f->count);
	cJSON_AddStringToObject(o, "message", f->message);
	cJSON_AddStringToObject(o, "fix", f->fix ? f->fix : "");
	cJSON_AddNumberToObject(o, "op_id", (double)f->op_id);
	cJSON_AddNumberToObject(o, "tensor", (double)f->tensor);
	return o;
}

const char *finding_severity_name(enum finding_severity severity)
{
	static const char *const names[FINDING_SEVERITY_COUNT] = {
		"error", "warning", "info",
	};
	return severity < FINDING_SEVERITY_COUNT ? names[severity] : "info";
}

const struct finding_kind *finding_kind_lookup(const char *name)
{
	for (int k = 0; name && k < FINDING_KIND_COUNT; k++)
		if (!strcmp(finding_kinds[k].name, name))
			return &finding_kinds[k];
	return NULL;
}

/* The table's order; kinds it does not know (amp.diag events of other
 * producers) after its own. */
static int kind_rank(const char *name)
{
	const struct finding_kind *k = finding_kind_lookup(name);

	return k ? (int)(k - finding_kinds) : FINDING_KIND_COUNT;
}

/* ------------------------------------------------------------ context */


/* Chains `event` onto the finding's occurrences (findings.h). */
static void record_occurrence(struct context *cx, struct trace_finding *f,
			      size_t event)
{
	struct findings *fs = cx->out;

	if (fs->noccurrences == fs->cap_occurrences) {
		size_t cap = fs->cap_occurrences ? fs->cap_occurrences * 2 : 64;
		struct finding_occurrence *grown =
			realloc(fs->occurrences, cap * sizeof *grown);
		if (!grown) {
			cx->failed = true;
			return;
		}
		fs->occurrences = grown;
		fs->cap_occurrences = cap;
	}
	fs->occurrences[fs->noccurrences] =
		(struct finding_occurrence){ event, f->occurrences };
	f->occurrences = fs->noccurrences++;
}

/* The finding of (kind, site, pid), counted; or a new one to fill (its
 * message empty), or NULL when it exists already or memory ran out. */
static struct trace_finding *finding_at(struct context *cx, const char *kind,
					const char *site, int64_t pid,
					size_t event)
{
	struct findings *fs = cx->out;

	for (size_t i = 0; i < fs->count; i++) {
		struct trace_finding *f = &fs->items[i];
		if (f->pid == pid && !strcmp(f->kind, kind) &&
		    !strcmp(f->site, site)) {
			f->count++;
			record_occurrence(cx, f, event);
			return NULL;
		}
	}
	if (fs->count == fs->cap) {
		size_t cap = fs->cap ? fs->cap * 2 : 16;
		struct trace_finding *items = realloc(fs->items, cap * sizeof *items);
		if (!items) {
			cx->failed = true;
			return NULL;
		}
		fs->items = items;
		fs->cap = cap;
	}
	const struct finding_kind *k = finding_kind_lookup(kind);
	struct trace_finding *f = &fs->items[fs->count++];
	*f = (struct trace_finding){
		.kind = k ? k->name : kind,
		.severity = k ? k->severity : FINDING_WARNING,
		.fix = k ? k->fix : "",
		.count = 1, .event = event, .pid = pid,
		.thread = cx->t->events[event].tid,
	};
	finding_text(f->site, sizeof f->site, "%s", site);
	f->occurrences = SIZE_MAX;
	record_occurrence(cx, f, event);
	return f;
}

/* finding_at for one of the kinds of the table. */
struct trace_finding *finding_of(struct context *cx,
					enum finding_kind_id kind,
					const char *site, int64_t pid,
					size_t event)
{
	return finding_at(cx, finding_kinds[kind].name, site, pid, event);
}

static const struct trace_op *op_of(struct context *cx, int64_t pid,
				    uint64_t op_id)
{
	size_t i = id_map_get(&cx->ix->ops, pid, op_id);

	return i == SIZE_MAX ? NULL : &cx->t->events[i].op;
}

static const char *op_label(struct context *cx, int64_t pid, uint64_t op_id,
			    char *buf, size_t size)
{
	const struct trace_op *op = op_of(cx, pid, op_id);

	if (op)
		return trace_op_label(op, buf, size);
	finding_text(buf, size, "op %llu", (unsigned long long)op_id);
	return buf;
}

/* "tensor 12 'fc1.weight'" or "tensor 12". */
const char *finding_tensor_label(struct context *cx, int64_t pid, uint64_t id,
				char *buf, size_t size)
{
	size_t i = id_map_get(&cx->ix->names, pid, id);
	const char *name = NULL;

	if (i != SIZE_MAX) {
		const struct trace_event *e = &cx->t->events[i];
		if (e->kind == TRACE_CAST)
			name = e->cast.name;
		for (int k = 0; e->kind == TRACE_OP && k < e->op.ninputs + e->op.noutputs; k++) {
			const struct trace_tensor *tt = k < e->op.ninputs
				? &e->op.inputs[k] : &e->op.outputs[k - e->op.ninputs];
			if (tt->id == id && tt->name)
				name = tt->name;
		}
	}
	if (name)
		finding_text(buf, size, "tensor %llu '%s'", (unsigned long long)id, name);
	else
		finding_text(buf, size, "tensor %llu", (unsigned long long)id);
	return buf;
}

static bool is_low_precision(const char *dtype)
{
	return dtype && (!strcmp(dtype, "f16") || !strcmp(dtype, "bf16"));
}

static bool is_full_precision(const char *dtype)
{
	return dtype && (!strcmp(dtype, "f32") || !strcmp(dtype, "f64"));
}

bool finding_op_is_backward(const struct trace_op *op)
{
	return op->phase && !strcmp(op->phase, "backward");
}

static bool op_failed(const struct trace_op *op)
{
	return !op->incomplete && (op->status != 0 || op->error);
}

/* An explicit cast op (x.to(dtype), x.half()). */
static bool is_conversion_op(const struct trace_op *op)
{
	return (!strcmp(op->op, "to") || !strcmp(op->op, "_to_copy")) &&
	       op->ninputs >= 1 && op->noutputs == 1 &&
	       op->inputs[0].dtype && op->outputs[0].dtype &&
	       strcmp(op->inputs[0].dtype, op->outputs[0].dtype) != 0;
}

/* ------------------------------------------------------------- indexes */

/* The first event of each thread (for autocast-off-in-thread). */
static void index_threads(struct context *cx)
{
	const struct trace *t = cx->t;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		uint64_t key = (uint64_t)e->tid;
		if (e->tid != 0 && e->kind != TRACE_META &&
		    id_map_get(&cx->first_ts, e->pid, key) == SIZE_MAX)
			id_map_put(&cx->first_ts, e->pid, key, i);
	}
	cx->failed |= cx->first_ts.failed;
}

/* ----------------------------------------------------------- op rules */

static int compare_op_name(const void *key, const void *entry)
{
	return strcmp(key, ((const struct finding_lp_op *)entry)->name);
}

/* An op of a PyTorch lower-precision list (any device) in the trace's
 * policy table: its dtype shows whether a thread autocasts. */
static bool low_precision_op(const struct context *cx, const char *name)
{
	const struct finding_lp_op *op = bsearch(
		name, finding_low_precision_ops, finding_low_precision_op_count,
		sizeof *finding_low_precision_ops, compare_op_name);
	return op && (op->versions >> cx->table & 1u);
}

static void rule_backward(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	const char *scope = op->autocast.scope ? op->autocast.scope : "";
	char label[128];

	if (!finding_op_is_backward(op) || !op->autocast.enabled)
		return;
	struct trace_finding *f = finding_of(cx, FINDING_BACKWARD_UNDER_AUTOCAST,
					     scope, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	finding_text(f->message, sizeof f->message,
		     "backward op %s (op %llu, thread %lld) ran inside the %s%s%s "
		     "autocast region (%s %s): backward passes under autocast are "
		     "not recommended, backward ops already run in the dtypes "
		     "autocast chose for their forward ops; %s",
		     trace_op_label(op, label, sizeof label),
		     (unsigned long long)op->op_id, (long long)e->tid,
		     scope[0] ? "'" : "", scope[0] ? scope : "unnamed",
		     scope[0] ? "'" : "", op->autocast.device ? op->autocast.device : "?",
		     op->autocast.dtype ? op->autocast.dtype : "?", advice_backward);
}

static void rule_banned(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128];

	if (!op->policy || strcmp(op->policy, "banned"))
		return;
	trace_op_label(op, label, sizeof label);
	struct trace_finding *f =
		finding_of(cx, FINDING_BANNED_OP, label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	f->tensor = op->ninputs ? op->inputs[0].id : 0;
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) is banned under %s autocast%s%s. PyTorch: "
		     "\"torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss "
		     "are unsafe to autocast. Many models use a sigmoid layer right "
		     "before the binary cross entropy layer. In this case, combine "
		     "the two layers using "
		     "torch.nn.functional.binary_cross_entropy_with_logits or "
		     "torch.nn.BCEWithLogitsLoss. binary_cross_entropy_with_logits and "
		     "BCEWithLogits are safe to autocast.\" Otherwise compute the loss "
		     "with autocast disabled on .float() inputs",
		     label, (unsigned long long)op->op_id,
		     op->autocast.device ? op->autocast.device : op->device,
		     op->emulated ? " (emulated)" : "",
		     op_failed(op) ? ", so it failed" : "");
}

/* The op (inside autocast, when one is) that produced tensor `id`. */
static const struct trace_op *producer_op(struct context *cx, int64_t pid,
					  uint64_t id)
{
	size_t i = id_map_get(&cx->ix->producer, pid, id);

	if (i == SIZE_MAX)
		return NULL;
	const struct trace_event *e = &cx->t->events[i];
	if (e->kind == TRACE_CAST)
		return op_of(cx, pid, e->cast.op_id);
	return &e->op;
}

static bool rule_dtype_mismatch(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	const struct trace_tensor *low = NULL, *full = NULL;
	char label[128], from[128], tensor[192];

	if (!op_failed(op) || op->autocast.enabled)
		return false;
	for (int k = 0; k < op->ninputs; k++) {
		if (!low && is_low_precision(op->inputs[k].dtype))
			low = &op->inputs[k];
		if (!full && is_full_precision(op->inputs[k].dtype))
			full = &op->inputs[k];
	}
	if (!low || !full)
		return false;
	const struct trace_op *source = producer_op(cx, e->pid, low->id);
	trace_op_label(op, label, sizeof label);
	if (source)
		trace_op_label(source, from, sizeof from);
	else
		finding_text(from, sizeof from, "?");
	char site[160];
	finding_text(site, sizeof site, "%s<-%s", label, from);
	struct trace_finding *f =
		finding_of(cx, FINDING_DTYPE_MISMATCH, site, e->pid, i);
	if (!f)
		return true;
	f->op_id = op->op_id;
	f->tensor = low->id;
	finding_tensor_label(cx, e->pid, low->id, tensor, sizeof tensor);
	char origin[256];
	if (source && source->autocast.enabled)
		finding_text(origin, sizeof origin,
			     "produced by %s (op %llu) inside the %s%s%s autocast "
			     "region", from, (unsigned long long)source->op_id,
			     source->autocast.scope ? "'" : "",
			     source->autocast.scope ? source->autocast.scope : "unnamed",
			     source->autocast.scope ? "'" : "");
	else if (source)
		finding_text(origin, sizeof origin, "produced by %s (op %llu)", from,
			     (unsigned long long)source->op_id);
	else
		finding_text(origin, sizeof origin, "of unknown origin");
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) ran outside autocast and rejected mixed dtypes: "
		     "input %s is %s, %s, and tensor %llu is %s (%s); cast the "
		     "autocast output back with .float() / amp_to(t, AMP_DTYPE_F32) "
		     "before using it outside the region",
		     label, (unsigned long long)op->op_id, tensor, low->dtype, origin,
		     (unsigned long long)full->id, full->dtype,
		     op->error ? op->error : "failed");
	return true;
}

static void rule_op_error(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128];

	if (!op_failed(op))
		return;
	trace_op_label(op, label, sizeof label);
	struct trace_finding *f =
		finding_of(cx, FINDING_OP_ERROR, label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	finding_text(f->message, sizeof f->message, "%s (op %llu, thread %lld) "
		     "failed: %s", label, (unsigned long long)op->op_id,
		     (long long)e->tid, op->error ? op->error : "(no message)");
}

/* ------------------------------------------------- threads and regions */

struct region {
	int64_t pid, tid;
	double start, end;
	const char *scope, *device, *dtype;
	bool enabled;
	size_t parent; /* SIZE_MAX: outermost */
};

struct regions {
	struct region *items;
	size_t count, cap;
	struct id_map open; /* (pid, tid) -> innermost open region + 1 */
};

static void collect_regions(struct context *cx, struct regions *r)
{
	const struct trace *t = cx->t;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		size_t top = id_map_get(&r->open, e->pid, (uint64_t)e->tid);
		top = top == SIZE_MAX ? 0 : top;
		if (e->kind == TRACE_SCOPE_BEGIN) {
			if (r->count == r->cap) {
				size_t cap = r->cap ? r->cap * 2 : 64;
				struct region *items = realloc(r->items, cap * sizeof *items);
				if (!items) {
					cx->failed = true;
					return;
				}
				r->items = items;
				r->cap = cap;
			}
			r->items[r->count] = (struct region){
				.pid = e->pid, .tid = e->tid, .start = e->ts,
				.end = INFINITY, .scope = e->scope.scope,
				.device = e->scope.device, .dtype = e->scope.dtype,
				.enabled = e->scope.enabled,
				.parent = top ? top - 1 : SIZE_MAX,
			};
			id_map_put(&r->open, e->pid, (uint64_t)e->tid, ++r->count);
		} else if (e->kind == TRACE_SCOPE_END && top) {
			struct region *g = &r->items[top - 1];
			g->end = e->ts;
			id_map_put(&r->open, e->pid, (uint64_t)e->tid,
				   g->parent == SIZE_MAX ? 0 : g->parent + 1);
		}
	}
}

static void rule_thread(struct context *cx, const struct regions *r, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128], site[160];

	if (finding_op_is_backward(op) || op->autocast.enabled ||
	    !low_precision_op(cx, op->op))
		return;
	size_t first = id_map_get(&cx->first_ts, e->pid, (uint64_t)e->tid);
	double born = first == SIZE_MAX ? e->ts : cx->t->events[first].ts;
	for (size_t k = 0; k < r->count; k++) {
		const struct region *g = &r->items[k];
		if (g->pid != e->pid || g->tid == e->tid || !g->enabled ||
		    g->start > born || e->ts < g->start || e->ts > g->end)
			continue;
		finding_text(site, sizeof site, "%lld:%s", (long long)g->tid,
			     trace_op_label(op, label, sizeof label));
		struct trace_finding *f = finding_of(
			cx, FINDING_AUTOCAST_OFF_IN_THREAD, site, e->pid, i);
		if (!f)
			return;
		f->op_id = op->op_id;
		f->tensor = op->noutputs ? op->outputs[0].id : 0;
		f->other_thread = g->tid;
		finding_text(f->message, sizeof f->message,
			     "thread %lld ran %s (op %llu) with autocast disabled, "
			     "output %s, while thread %lld, which was inside the "
			     "%s%s%s autocast region (%s %s) when thread %lld started, "
			     "had autocast enabled: autocast state is thread-local, so "
			     "worker threads (DataParallel replicas) do not inherit it; "
			     "enter autocast inside the worker's forward",
			     (long long)e->tid, label, (unsigned long long)op->op_id,
			     op->noutputs && op->outputs[0].dtype ? op->outputs[0].dtype : "?",
			     (long long)g->tid, g->scope ? "'" : "",
			     g->scope ? g->scope : "unnamed", g->scope ? "'" : "",
			     g->device ? g->device : "?", g->dtype ? g->dtype : "?",
			     (long long)e->tid);
		return;
	}
}

/* --------------------------------------------------------- cast rules */

static void rule_stale(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	char label[128], tensor[192];

	if (!c->stale)
		return;
	struct trace_finding *f =
		finding_of(cx, FINDING_STALE_CACHE, "", e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) used the cached %s->%s cast of %s made before the "
		     "tensor was updated in place (an optimizer step inside the same "
		     "autocast region): the forward computed with the old weights; "
		     "the cache is cleared only when the outermost region exits, so "
		     "enter autocast per iteration around forward + loss only",
		     op_label(cx, e->pid, c->op_id, label, sizeof label),
		     (unsigned long long)c->op_id, c->from, c->to,
		     finding_tensor_label(cx, e->pid, c->tensor, tensor, sizeof tensor));
}

static void rule_cache_disabled(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	char tensor[192];

	if (!c->cache || strcmp(c->cache, "disabled"))
		return;
	struct trace_finding *f =
		finding_of(cx, FINDING_CACHE_DISABLED, "", e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	finding_text(f->message, sizeof f->message,
		     "the cacheable %s->%s cast of %s was redone because the "
		     "autocast cache is disabled (cache_enabled=False)",
		     c->from, c->to,
		     finding_tensor_label(cx, e->pid, c->tensor, tensor, sizeof tensor));
}

/* A conversion (an autocast cast or an explicit to op): source -> result. */
struct conversion {
	uint64_t op_id, source, result;
	const char *from, *to;
};

static bool conversion_at(const struct trace_event *e, struct conversion *cv)
{
	if (e->kind == TRACE_CAST && e->cast.cache && strcmp(e->cast.cache, "hit")) {
		*cv = (struct conversion){ e->cast.op_id, e->cast.tensor,
					   e->cast.result, e->cast.from, e->cast.to };
		return true;
	}
	if (e->kind == TRACE_OP && !op_failed(&e->op) && is_conversion_op(&e->op)) {
		*cv = (struct conversion){ e->op.op_id, e->op.inputs[0].id,
					   e->op.outputs[0].id,
					   e->op.inputs[0].dtype,
					   e->op.outputs[0].dtype };
		return true;
	}
	return false;
}

static void rule_redundant(struct context *cx, struct id_map *down,
			   struct id_map *recast, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	struct conversion cv;
	char a[128], b[128], site[160], tensor[192];

	if (!conversion_at(e, &cv))
		return;
	/* a round trip: f32 -> low -> f32 with no use of the low copy */
	size_t before = is_full_precision(cv.to) && is_low_precision(cv.from)
				? id_map_get(down, e->pid, cv.source) : SIZE_MAX;
	if (before != SIZE_MAX &&
	    id_map_get(&cx->ix->uses, e->pid, cv.source) == 1) {
		struct conversion first;
		conversion_at(&cx->t->events[before], &first);
		if (!strcmp(first.from, cv.to)) {
			op_label(cx, e->pid, first.op_id, a, sizeof a);
			op_label(cx, e->pid, cv.op_id, b, sizeof b);
			finding_text(site, sizeof site, "round trip %s/%s", a, b);
			struct trace_finding *f = finding_of(cx, FINDING_REDUNDANT_CAST, site,
							     e->pid, i);
			if (f) {
				f->op_id = cv.op_id;
				f->tensor = first.source;
				finding_text(f->message, sizeof f->message,
					     "%s was cast %s->%s (for %s, op %llu) and "
					     "back %s->%s (for %s, op %llu) with no "
					     "low-precision compute in between: the round "
					     "trip costs two casts and rounds the values; "
					     "drop both casts",
					     finding_tensor_label(cx, e->pid, first.source, tensor,
					     sizeof tensor),
					     first.from, first.to, a,
					     (unsigned long long)first.op_id, cv.from, cv.to,
					     b, (unsigned long long)cv.op_id);
			}
		}
	}
	if (is_full_precision(cv.from) && is_low_precision(cv.to))
		id_map_put(down, e->pid, cv.result, i);

	/* the same tensor cast to the same dtype again by another op */
	if (e->kind != TRACE_CAST || strcmp(e->cast.cache, "uncacheable"))
		return;
	size_t earlier = id_map_get(recast, e->pid, cv.source);
	if (earlier == SIZE_MAX) {
		id_map_put(recast, e->pid, cv.source, i);
		return;
	}
	const struct trace_cast *first = &cx->t->events[earlier].cast;
	const struct trace_op *producer = producer_op(cx, e->pid, cv.source);
	/* inputs and other factory-made leaves are left out: an activation
	 * (computed by an op) is what casting once helps */
	if (first->op_id == cv.op_id || strcmp(first->to, cv.to) || !producer ||
	    !producer->ninputs)
		return;
	finding_text(site, sizeof site, "recast %s %s",
		     producer ? trace_op_label(producer, a, sizeof a) : "input", cv.to);
	struct trace_finding *f =
		finding_of(cx, FINDING_REDUNDANT_CAST, site, e->pid, i);
	if (!f)
		return;
	f->op_id = cv.op_id;
	f->tensor = cv.source;
	op_label(cx, e->pid, first->op_id, a, sizeof a);
	op_label(cx, e->pid, cv.op_id, b, sizeof b);
	finding_text(f->message, sizeof f->message,
		     "%s was cast %s->%s by autocast once for each op using it (%s, "
		     "op %llu, and %s, op %llu): it is not a cacheable weight, so each "
		     "use pays a new cast; cast it once (x16 = x.to(%s)) and pass the "
		     "result to both ops",
		     finding_tensor_label(cx, e->pid, cv.source, tensor, sizeof tensor),
		     cv.from, cv.to, a, (unsigned long long)first->op_id, b,
		     (unsigned long long)cv.op_id, cv.to);
}

/* ---------------------------------------------------- amp.diag events */

/* An overflow in a backward op followed by a skipped GradScaler step of
 * the same process: the scaled gradients overflowed and the scaler did
 * its job (skipped the step, lowered the scale), as it does while it
 * calibrates from 65536.  That is scaler-skipped-step's to report, not an
 * fp16-overflow error. */
static bool overflow_handled_by_scaler(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = e->diag.op_id
					    ? op_of(cx, e->pid, e->diag.op_id)
					    : NULL;

	if (!op || !finding_op_is_backward(op))
		return false;
	for (size_t j = i + 1; j < cx->t->nevents; j++) {
		const struct trace_event *n = &cx->t->events[j];
		if (n->pid == e->pid && n->kind == TRACE_SCALER &&
		    n->scaler.what && !strcmp(n->scaler.what, "step"))
			return n->scaler.step_skipped;
	}
	return false;
}

static void fold_diag(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_diag *d = &e->diag;
	const struct finding_kind *k = finding_kind_lookup(d->kind);
	char label[128], site[160];

	if (!d->kind)
		return;
	if (!strcmp(d->kind, "fp16-overflow") &&
	    overflow_handled_by_scaler(cx, i))
		return;
	/* a finding amptrace appended earlier: already computed */
	if (k && !k->value_dependent) {
		for (size_t f = 0; f < cx->out->count; f++) {
			struct trace_finding *x = &cx->out->items[f];
			if (!x->from_trace && x->pid == e->pid &&
			    !strcmp(x->kind, d->kind) && x->op_id == d->op_id &&
			    x->tensor == d->tensor) {
				x->from_trace = true;
				return;
			}
		}
	}
	const char *name = NULL;
	size_t named = d->tensor ? id_map_get(&cx->ix->names, e->pid, d->tensor) : SIZE_MAX;
	if (named != SIZE_MAX) {
		char tensor[192];
		finding_tensor_label(cx, e->pid, d->tensor, tensor, sizeof tensor);
		name = strchr(tensor, '\'');
		finding_text(site, sizeof site, "%s %s",
			     d->op_id ? op_label(cx, e->pid, d->op_id, label, sizeof label) : "",
			     name ? name : "");
	} else {
		finding_text(site, sizeof site, "%s",
			     d->op_id ? op_label(cx, e->pid, d->op_id, label, sizeof label) : "");
	}
	struct trace_finding *f = finding_at(cx, d->kind, site, e->pid, i);
	if (!f)
		return;
	f->from_trace = true;
	f->op_id = d->op_id;
	f->tensor = d->tensor;
	finding_text(f->message, sizeof f->message, "%s", d->message ? d->message : "");
}

/* ------------------------------------------------------------ public */

static int compare_findings(const void *pa, const void *pb)
{
	const struct trace_finding *a = pa, *b = pb;

	if (a->severity != b->severity)
		return a->severity < b->severity ? -1 : 1;
	int ra = kind_rank(a->kind), rb = kind_rank(b->kind);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->event != b->event)
		return a->event < b->event ? -1 : 1;
	return 0;
}

int findings_compute(const struct trace *trace, struct findings *out)
{
	struct trace_index ix;
	int status = trace_index_build(trace, &ix);

	if (findings_compute_indexed(&ix, out) != 0)
		status = -1;
	trace_index_free(&ix);
	return status;
}

int findings_compute_indexed(const struct trace_index *ix,
			     struct findings *out)
{
	const struct trace *trace = ix->trace;
	struct context cx = { .t = trace, .ix = ix, .out = out };
	struct regions regions = { 0 };
	struct id_map down = { 0 }, recast = { 0 };

	*out = (struct findings){ 0 };
	cx.table = findings_policy_table(trace);
	index_threads(&cx);
	collect_regions(&cx, &regions);
	for (size_t i = 0; i < trace->nevents; i++) {
		const struct trace_event *e = &trace->events[i];
		if (e->kind == TRACE_OP) {
			rule_backward(&cx, i);
			rule_banned(&cx, i);
			bool policy_banned = e->op.policy &&
					     !strcmp(e->op.policy, "banned");
			if (!rule_dtype_mismatch(&cx, i) && !policy_banned)
				rule_op_error(&cx, i);
			if (regions.count)
				rule_thread(&cx, &regions, i);
		} else if (e->kind == TRACE_CAST) {
			rule_stale(&cx, i);
			rule_cache_disabled(&cx, i);
		}
		rule_redundant(&cx, &down, &recast, i);
	}
	finding_rule_scaler(&cx);
	finding_rule_cache_growth(&cx);
	finding_rule_divergence(&cx);
	for (size_t i = 0; i < trace->nevents; i++)
		if (trace->events[i].kind == TRACE_DIAG)
			fold_diag(&cx, i);
	trace_sort(out->items, out->count, sizeof *out->items, compare_findings);

	free(regions.items);
	cx.failed |= down.failed || recast.failed || regions.open.failed;
	id_map_free(&regions.open);
	id_map_free(&down);
	id_map_free(&recast);
	id_map_free(&cx.first_ts);
	return cx.failed ? -1 : 0;
}

void findings_free(struct findings *findings)
{
	if (!findings)
		return;
	free(findings->items);
	free(findings->occurrences);
	*findings = (struct findings){ 0 };
}

const char *findings_framework(const struct trace *trace)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(trace->header,
							  "framework");
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(trace->end,
							      "processes");

	/* Traces of format 1.0 name it per process only. */
	if (!cJSON_IsString(f) && cJSON_IsArray(procs))
		f = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(procs, 0), "framework");
	return cJSON_IsString(f) ? f->valuestring : NULL;
}

int findings_policy_table(const struct trace *trace)
{
	static const char tag[] = "(policy table: ";
	const char *framework = findings_framework(trace);
	const char *at = framework ? strstr(framework, tag) : NULL;
	int newest = finding_policy_table_count - 1;

	if (!at)
		return newest;
	at += sizeof tag - 1;
	size_t len = strcspn(at, ",)");
	for (int v = 0; v < finding_policy_table_count; v++)
		if (strlen(finding_policy_tables[v]) == len &&
		    !strncmp(at, finding_policy_tables[v], len))
			return v;
	return newest;
}

const char *finding_policy_table_name(int table)
{
	return finding_policy_tables[table];
}

const struct trace_finding *findings_get(const struct findings *findings,
					 const char *kind)
{
	for (size_t i = 0; i < findings->count; i++)
		if (!strcmp(findings->items[i].kind, kind))
			return &findings->items[i];
	return NULL;
}
