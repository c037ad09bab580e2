/* Findings computed from a trace (see findings.h).  The rules:
 *
 * backward-under-autocast  a backward op whose autocast.enabled is true.
 * stale-cache              a cast cache hit marked `stale` (its source was
 *                          modified in place after the cached cast was made).
 * cache-growth             the autocast cache's entry count, read at the end
 *                          of each step, rose in CACHE_GROWTH_STEPS
 *                          consecutive steps with no cache clear.
 * autocast-off-in-thread   thread T ran a lower-precision-list op (matmul,
 *                          linear, conv, ...; LOW_PRECISION_OPS) with
 *                          autocast off, while another thread S was inside
 *                          an enabled region that was already open when T
 *                          made its first event (S started T, as
 *                          DataParallel's workers are started).
 * dtype-mismatch           an op outside autocast failed with f16/bf16 and
 *                          f32/f64 inputs; names the low-precision input
 *                          and the op that produced it.
 * banned-op                an op whose policy is `banned`.
 * scaler-skipped-step      a GradScaler `step` event with step_skipped.
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
 * fp16-overflow, cast-underflow, process-died, recording-stopped and any
 *                          other kind: amp.diag events of the file (libamp,
 *                          amptrace run and its recorder).
 *
 * Steps (for cache-growth), per process: a step ends at each GradScaler
 * `update`; without one, at the end of each optimizer update (a run of
 * in-place forward ops on leaves that require grad); without those, each
 * entry into an outermost autocast region starts one. */
#include "findings.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* snprintf that may cut: messages and labels are cut on purpose. */
static void text(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void text(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

#define CACHE_GROWTH_STEPS 3
#define SCALER_COLLAPSE_SCALE 1.0
#define SCALER_COLLAPSE_HALVINGS 8

static const char advice_backward[] =
	"exit the autocast region before backward(): wrap only the forward "
	"pass and the loss";

const struct finding_kind finding_kinds[] = {
	{ "process-died", FINDING_ERROR,
	  "see the signal or exit status; the trace holds every event up to "
	  "the end", false },
	{ "dtype-mismatch", FINDING_ERROR,
	  "cast the autocast region's output back with .float() "
	  "(amp_to(t, AMP_DTYPE_F32)) before mixing it with f32 tensors", false },
	{ "banned-op", FINDING_ERROR,
	  "use binary_cross_entropy_with_logits on the logits (drop the "
	  "sigmoid), or compute the loss with autocast disabled on .float() "
	  "inputs", false },
	{ "fp16-overflow", FINDING_ERROR,
	  "run the op in f32 (autocast(enabled=False) with .float() inputs) "
	  "or autocast to bf16", true },
	{ "scaler-collapse", FINDING_ERROR,
	  "find the op producing inf/NaN (fp16-overflow findings), use bf16, "
	  "or lower the learning rate", false },
	{ "op-error", FINDING_ERROR, "read the op's error in the trace", false },
	{ "recording-stopped", FINDING_WARNING,
	  "give amptrace run a raw directory with room (--raw-dir DIR or "
	  "TMPDIR; about 2 MiB per thread): the trace lacks what followed",
	  false },
	{ "stale-cache", FINDING_WARNING,
	  "enter autocast per iteration around forward + loss only, so the "
	  "cache is cleared before the next forward", false },
	{ "backward-under-autocast", FINDING_WARNING, advice_backward, false },
	{ "autocast-off-in-thread", FINDING_WARNING,
	  "enter autocast inside the worker's forward (autocast state is "
	  "thread-local)", false },
	{ "cache-growth", FINDING_WARNING,
	  "exit the outermost autocast region every iteration (the cache is "
	  "cleared only then), or disable the cache for the long region", false },
	{ "scaler-skipped-step", FINDING_WARNING,
	  "a few skips while the scale calibrates are normal; many mean a "
	  "gradient overflows: find its op", false },
	{ "cast-underflow", FINDING_WARNING,
	  "keep the tensor in f32 (fp32 policy or a disabled region), rescale "
	  "it, or use bf16", true },
	{ "redundant-cast", FINDING_INFO,
	  "cast once and reuse the result, or drop the cast pair", false },
	{ "cache-disabled", FINDING_INFO,
	  "leave cache_enabled on so weight casts are made once per region",
	  false },
	{ NULL, FINDING_INFO, NULL, false },
};

/* Ops of both PyTorch lower-precision lists (CUDA and CPU) that a model's
 * forward runs: the ones whose dtype shows a thread is not autocasting. */
static const char *const LOW_PRECISION_OPS[] = {
	"linear", "mm", "matmul", "bmm", "addmm", "addbmm", "baddbmm",
	"addmv", "addr", "mv", "einsum", "chain_matmul", "linalg_multi_dot",
	"conv1d", "conv2d", "conv3d", "conv_tbc", "conv_transpose1d",
	"conv_transpose2d", "conv_transpose3d", "convolution", "_convolution",
	"prelu", "lstm_cell", "gru_cell", "rnn_tanh_cell", "rnn_relu_cell",
	"scaled_dot_product_attention", NULL,
};

const char *finding_severity_name(enum finding_severity severity)
{
	static const char *const names[FINDING_SEVERITY_COUNT] = {
		"error", "warning", "info",
	};
	return severity < FINDING_SEVERITY_COUNT ? names[severity] : "info";
}

const struct finding_kind *finding_kind_lookup(const char *name)
{
	for (const struct finding_kind *k = finding_kinds; name && k->name; k++)
		if (!strcmp(k->name, name))
			return k;
	return NULL;
}

static int kind_rank(const char *name)
{
	int rank = 0;

	for (const struct finding_kind *k = finding_kinds; k->name; k++, rank++)
		if (!strcmp(k->name, name))
			return rank;
	return rank;
}

/* ------------------------------------------------ (pid, id) -> value */

struct id_slot {
	int64_t pid;
	uint64_t id;
	size_t value;
	bool used;
};

struct id_map {
	struct id_slot *slots;
	size_t cap, count;
	bool failed;
};

static size_t id_hash(int64_t pid, uint64_t id)
{
	uint64_t h = id * 0x9e3779b97f4a7c15ull ^ (uint64_t)pid * 0xc2b2ae3d27d4eb4full;
	return (size_t)(h ^ (h >> 29));
}

static size_t *id_map_find(struct id_map *m, int64_t pid, uint64_t id,
			   bool insert)
{
	if (insert && (m->count + 1) * 2 > m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 1024;
		struct id_slot *slots = calloc(cap, sizeof *slots);
		if (!slots) {
			m->failed = true;
			return NULL;
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->slots[i].used)
				continue;
			size_t j = id_hash(m->slots[i].pid, m->slots[i].id) & (cap - 1);
			while (slots[j].used)
				j = (j + 1) & (cap - 1);
			slots[j] = m->slots[i];
		}
		free(m->slots);
		m->slots = slots;
		m->cap = cap;
	}
	if (!m->cap)
		return NULL;
	size_t j = id_hash(pid, id) & (m->cap - 1);
	while (m->slots[j].used) {
		if (m->slots[j].pid == pid && m->slots[j].id == id)
			return &m->slots[j].value;
		j = (j + 1) & (m->cap - 1);
	}
	if (!insert)
		return NULL;
	m->slots[j] = (struct id_slot){ .pid = pid, .id = id, .used = true };
	m->count++;
	return &m->slots[j].value;
}

static void id_map_put(struct id_map *m, int64_t pid, uint64_t id, size_t value)
{
	size_t *slot = id_map_find(m, pid, id, true);

	if (slot)
		*slot = value;
}

static size_t id_map_get(struct id_map *m, int64_t pid, uint64_t id)
{
	size_t *slot = id_map_find(m, pid, id, false);

	return slot ? *slot : SIZE_MAX;
}

/* ------------------------------------------------------------ context */

struct context {
	const struct trace *t;
	struct findings *out;
	bool failed;
	struct id_map ops;       /* (pid, op_id) -> event */
	struct id_map producer;  /* (pid, tensor) -> op or cast event */
	struct id_map names;     /* (pid, tensor) -> event naming it */
	struct id_map uses;      /* (pid, tensor) -> uses as an input */
	struct id_map first_ts;  /* (pid, tid) -> first event */
};

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
	text(f->site, sizeof f->site, "%s", site);
	return f;
}

static const struct trace_op *op_of(struct context *cx, int64_t pid,
				    uint64_t op_id)
{
	size_t i = id_map_get(&cx->ops, pid, op_id);

	return i == SIZE_MAX ? NULL : &cx->t->events[i].op;
}

static const char *op_label(struct context *cx, int64_t pid, uint64_t op_id,
			    char *buf, size_t size)
{
	const struct trace_op *op = op_of(cx, pid, op_id);

	if (op)
		return trace_op_label(op, buf, size);
	text(buf, size, "op %llu", (unsigned long long)op_id);
	return buf;
}

/* "tensor 12 'fc1.weight'" or "tensor 12". */
static const char *tensor_label(struct context *cx, int64_t pid, uint64_t id,
				char *buf, size_t size)
{
	size_t i = id_map_get(&cx->names, pid, id);
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
		text(buf, size, "tensor %llu '%s'", (unsigned long long)id, name);
	else
		text(buf, size, "tensor %llu", (unsigned long long)id);
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

static bool is_backward(const struct trace_op *op)
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

static void index_trace(struct context *cx)
{
	const struct trace *t = cx->t;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->tid != 0) {
			uint64_t key = (uint64_t)e->tid;
			if (id_map_get(&cx->first_ts, e->pid, key) == SIZE_MAX &&
			    e->kind != TRACE_META)
				id_map_put(&cx->first_ts, e->pid, key, i);
		}
		if (e->kind == TRACE_OP) {
			const struct trace_op *op = &e->op;
			id_map_put(&cx->ops, e->pid, op->op_id, i);
			for (int k = 0; k < op->ninputs; k++) {
				size_t *n = id_map_find(&cx->uses, e->pid,
							op->inputs[k].id, true);
				if (n)
					(*n)++;
				if (op->inputs[k].name)
					id_map_put(&cx->names, e->pid,
						   op->inputs[k].id, i);
			}
			for (int k = 0; k < op->noutputs; k++) {
				id_map_put(&cx->producer, e->pid,
					   op->outputs[k].id, i);
				if (op->outputs[k].name)
					id_map_put(&cx->names, e->pid,
						   op->outputs[k].id, i);
			}
		} else if (e->kind == TRACE_CAST) {
			size_t *n = id_map_find(&cx->uses, e->pid, e->cast.tensor, true);
			if (n)
				(*n)++;
			if (e->cast.cache && strcmp(e->cast.cache, "hit"))
				id_map_put(&cx->producer, e->pid, e->cast.result, i);
			if (e->cast.name)
				id_map_put(&cx->names, e->pid, e->cast.tensor, i);
		}
	}
	cx->failed |= cx->ops.failed || cx->producer.failed ||
		      cx->names.failed || cx->uses.failed || cx->first_ts.failed;
}

/* ----------------------------------------------------------- op rules */

static bool low_precision_op(const char *name)
{
	for (int i = 0; LOW_PRECISION_OPS[i]; i++)
		if (!strcmp(LOW_PRECISION_OPS[i], name))
			return true;
	return false;
}

static void rule_backward(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	const char *scope = op->autocast.scope ? op->autocast.scope : "";
	char label[128];

	if (!is_backward(op) || !op->autocast.enabled)
		return;
	struct trace_finding *f = finding_at(cx, "backward-under-autocast",
					     scope, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	text(f->message, sizeof f->message,
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
	struct trace_finding *f = finding_at(cx, "banned-op", label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	f->tensor = op->ninputs ? op->inputs[0].id : 0;
	text(f->message, sizeof f->message,
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
	size_t i = id_map_get(&cx->producer, pid, id);

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
		text(from, sizeof from, "?");
	char site[160];
	text(site, sizeof site, "%s<-%s", label, from);
	struct trace_finding *f = finding_at(cx, "dtype-mismatch", site, e->pid, i);
	if (!f)
		return true;
	f->op_id = op->op_id;
	f->tensor = low->id;
	tensor_label(cx, e->pid, low->id, tensor, sizeof tensor);
	char origin[256];
	if (source && source->autocast.enabled)
		text(origin, sizeof origin,
			 "produced by %s (op %llu) inside the %s%s%s autocast "
			 "region", from, (unsigned long long)source->op_id,
			 source->autocast.scope ? "'" : "",
			 source->autocast.scope ? source->autocast.scope : "unnamed",
			 source->autocast.scope ? "'" : "");
	else if (source)
		text(origin, sizeof origin, "produced by %s (op %llu)", from,
			 (unsigned long long)source->op_id);
	else
		text(origin, sizeof origin, "of unknown origin");
	text(f->message, sizeof f->message,
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
	struct trace_finding *f = finding_at(cx, "op-error", label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	text(f->message, sizeof f->message, "%s (op %llu, thread %lld) "
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

	if (is_backward(op) || op->autocast.enabled || !low_precision_op(op->op))
		return;
	size_t first = id_map_get(&cx->first_ts, e->pid, (uint64_t)e->tid);
	double born = first == SIZE_MAX ? e->ts : cx->t->events[first].ts;
	for (size_t k = 0; k < r->count; k++) {
		const struct region *g = &r->items[k];
		if (g->pid != e->pid || g->tid == e->tid || !g->enabled ||
		    g->start > born || e->ts < g->start || e->ts > g->end)
			continue;
		text(site, sizeof site, "%lld:%s", (long long)g->tid,
			 trace_op_label(op, label, sizeof label));
		struct trace_finding *f = finding_at(cx, "autocast-off-in-thread",
						     site, e->pid, i);
		if (!f)
			return;
		f->op_id = op->op_id;
		f->tensor = op->noutputs ? op->outputs[0].id : 0;
		f->other_thread = g->tid;
		text(f->message, sizeof f->message,
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
	struct trace_finding *f = finding_at(cx, "stale-cache", "", e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	text(f->message, sizeof f->message,
		 "%s (op %llu) used the cached %s->%s cast of %s made before the "
		 "tensor was updated in place (an optimizer step inside the same "
		 "autocast region): the forward computed with the old weights; "
		 "the cache is cleared only when the outermost region exits, so "
		 "enter autocast per iteration around forward + loss only",
		 op_label(cx, e->pid, c->op_id, label, sizeof label),
		 (unsigned long long)c->op_id, c->from, c->to,
		 tensor_label(cx, e->pid, c->tensor, tensor, sizeof tensor));
}

static void rule_cache_disabled(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	char tensor[192];

	if (!c->cache || strcmp(c->cache, "disabled"))
		return;
	struct trace_finding *f = finding_at(cx, "cache-disabled", "", e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	text(f->message, sizeof f->message,
		 "the cacheable %s->%s cast of %s was redone because the "
		 "autocast cache is disabled (cache_enabled=False)",
		 c->from, c->to,
		 tensor_label(cx, e->pid, c->tensor, tensor, sizeof tensor));
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
	    id_map_get(&cx->uses, e->pid, cv.source) == 1) {
		struct conversion first;
		conversion_at(&cx->t->events[before], &first);
		if (!strcmp(first.from, cv.to)) {
			op_label(cx, e->pid, first.op_id, a, sizeof a);
			op_label(cx, e->pid, cv.op_id, b, sizeof b);
			text(site, sizeof site, "round trip %s/%s", a, b);
			struct trace_finding *f = finding_at(cx, "redundant-cast", site,
							     e->pid, i);
			if (f) {
				f->op_id = cv.op_id;
				f->tensor = first.source;
				text(f->message, sizeof f->message,
					 "%s was cast %s->%s (for %s, op %llu) and "
					 "back %s->%s (for %s, op %llu) with no "
					 "low-precision compute in between: the round "
					 "trip costs two casts and rounds the values; "
					 "drop both casts",
					 tensor_label(cx, e->pid, first.source, tensor,
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
	text(site, sizeof site, "recast %s %s",
		 producer ? trace_op_label(producer, a, sizeof a) : "input", cv.to);
	struct trace_finding *f = finding_at(cx, "redundant-cast", site, e->pid, i);
	if (!f)
		return;
	f->op_id = cv.op_id;
	f->tensor = cv.source;
	op_label(cx, e->pid, first->op_id, a, sizeof a);
	op_label(cx, e->pid, cv.op_id, b, sizeof b);
	text(f->message, sizeof f->message,
		 "%s was cast %s->%s by autocast once for each op using it (%s, "
		 "op %llu, and %s, op %llu): it is not a cacheable weight, so each "
		 "use pays a new cast; cast it once (x16 = x.to(%s)) and pass the "
		 "result to both ops",
		 tensor_label(cx, e->pid, cv.source, tensor, sizeof tensor),
		 cv.from, cv.to, a, (unsigned long long)first->op_id, b,
		 (unsigned long long)cv.op_id, cv.to);
}

/* ------------------------------------------------------- GradScaler */

struct scaler_state {
	int64_t pid;
	uint64_t id;
	double previous, first;
	int halvings;
	uint64_t inf_tensor;
	bool reported;
};

static struct scaler_state *scaler_state(struct scaler_state *states,
					 size_t *count, size_t cap, int64_t pid,
					 uint64_t id)
{
	for (size_t i = 0; i < *count; i++)
		if (states[i].pid == pid && states[i].id == id)
			return &states[i];
	if (*count == cap)
		return NULL;
	states[*count] = (struct scaler_state){ .pid = pid, .id = id,
						.previous = NAN, .first = NAN };
	return &states[(*count)++];
}

static void rule_scaler(struct context *cx)
{
	const struct trace *t = cx->t;
	struct scaler_state states[32];
	size_t nstates = 0;
	char site[160], tensor[192];

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_SCALER || !e->scaler.what)
			continue;
		const struct trace_scaler *s = &e->scaler;
		struct scaler_state *st = scaler_state(states, &nstates, 32,
						       e->pid, s->scaler_id);
		if (!st)
			continue;
		if (s->inf_tensor)
			st->inf_tensor = s->inf_tensor;
		if (!strcmp(s->what, "step") && s->step_skipped) {
			text(site, sizeof site, "%llu/%llu",
				 (unsigned long long)s->scaler_id,
				 (unsigned long long)s->optimizer_id);
			struct trace_finding *f = finding_at(
				cx, "scaler-skipped-step", site, e->pid, i);
			if (f) {
				f->tensor = st->inf_tensor;
				text(f->message, sizeof f->message,
					 "GradScaler %llu skipped the step of "
					 "optimizer %llu: %s%s held inf/NaN after "
					 "unscaling (scale %g), so optimizer.step() "
					 "was not called and the scale was lowered",
					 (unsigned long long)s->scaler_id,
					 (unsigned long long)s->optimizer_id,
					 st->inf_tensor ? "gradient " : "a gradient",
					 st->inf_tensor ? tensor_label(cx, e->pid,
								       st->inf_tensor,
								       tensor,
								       sizeof tensor)
							: "",
					 s->scale);
			}
		}
		if (strcmp(s->what, "update") || isnan(s->scale))
			continue;
		if (isnan(st->first))
			st->first = s->scale;
		st->halvings = !isnan(st->previous) && s->scale < st->previous
				       ? st->halvings + 1 : 0;
		st->previous = s->scale;
		if (st->reported || (s->scale >= SCALER_COLLAPSE_SCALE &&
				     st->halvings < SCALER_COLLAPSE_HALVINGS))
			continue;
		st->reported = true;
		text(site, sizeof site, "%llu", (unsigned long long)s->scaler_id);
		struct trace_finding *f = finding_at(cx, "scaler-collapse", site,
						     e->pid, i);
		if (!f)
			continue;
		f->tensor = st->inf_tensor;
		text(f->message, sizeof f->message,
			 "GradScaler %llu's scale fell to %g (from %g) after %d "
			 "consecutive reductions (collapse: below %g or %d in a "
			 "row): the gradients hold inf/NaN at every step%s%s%s, so "
			 "no optimizer step is taken and training has stopped",
			 (unsigned long long)s->scaler_id, s->scale, st->first,
			 st->halvings, SCALER_COLLAPSE_SCALE,
			 SCALER_COLLAPSE_HALVINGS,
			 st->inf_tensor ? " (last seen in gradient " : "",
			 st->inf_tensor ? tensor_label(cx, e->pid, st->inf_tensor,
						       tensor, sizeof tensor)
					: "",
			 st->inf_tensor ? ")" : "");
	}
}

/* ------------------------------------------------------ cache growth */

static bool is_optimizer_write(const struct trace_event *e)
{
	if (e->kind != TRACE_OP || is_backward(&e->op) || !e->op.noutputs)
		return false;
	size_t n = strcspn(e->op.op, ".");
	return n > 1 && e->op.op[n - 1] == '_' && e->op.op[0] != '_' &&
	       e->op.outputs[0].leaf && e->op.outputs[0].requires_grad;
}

struct step_end {
	double entries, bytes;
	bool cleared;
	size_t event;
};

static void cache_growth_of(struct context *cx, int64_t pid)
{
	const struct trace *t = cx->t;
	bool updates = false, writes = false;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->pid != pid)
			continue;
		updates |= e->kind == TRACE_SCALER && e->scaler.what &&
			   !strcmp(e->scaler.what, "update");
		writes |= is_optimizer_write(e);
	}
	struct step_end *ends = NULL;
	size_t nends = 0, cap = 0;
	struct step_end now = { 0 };
	bool in_write = false, counted = false;
	for (size_t i = 0; i <= t->nevents; i++) {
		const struct trace_event *e = i < t->nevents ? &t->events[i] : NULL;
		if (e && e->pid != pid)
			continue;
		bool boundary_before = false, boundary_after = false;
		if (!e) {
			boundary_before = counted;
		} else if (updates) {
			boundary_after = e->kind == TRACE_SCALER && e->scaler.what &&
					 !strcmp(e->scaler.what, "update");
		} else if (writes) {
			if (e->kind == TRACE_OP) {
				bool w = is_optimizer_write(e);
				boundary_before = in_write && !w;
				in_write = w;
			}
		} else {
			boundary_before = e->kind == TRACE_SCOPE_BEGIN &&
					  e->scope.depth == 1 && counted;
		}
		for (int pass = 0; pass < 2; pass++) {
			if (pass == 1 && e) {
				if (e->kind == TRACE_COUNTER && e->cat &&
				    !strcmp(e->cat, "amp.cache")) {
					for (int s = 0; s < e->counter.nseries; s++) {
						if (!strcmp(e->counter.series[s], "entries"))
							now.entries = e->counter.value[s];
						else if (!strcmp(e->counter.series[s], "bytes"))
							now.bytes = e->counter.value[s];
					}
					now.event = i;
				}
				if (e->kind == TRACE_CACHE_CLEAR)
					now.cleared = true;
				counted = true;
			}
			bool boundary = pass == 0 ? boundary_before : boundary_after;
			if (!boundary)
				continue;
			if (nends == cap) {
				cap = cap ? cap * 2 : 64;
				struct step_end *grown = realloc(ends, cap * sizeof *grown);
				if (!grown) {
					cx->failed = true;
					free(ends);
					return;
				}
				ends = grown;
			}
			ends[nends++] = now;
			now.cleared = false;
		}
	}
	size_t run = 0, best = 0, best_end = 0;
	for (size_t k = 1; k < nends; k++) {
		run = ends[k].entries > ends[k - 1].entries && !ends[k].cleared
			      ? run + 1 : 0;
		if (run > best) {
			best = run;
			best_end = k;
		}
	}
	if (best >= CACHE_GROWTH_STEPS) {
		const struct step_end *from = &ends[best_end - best];
		const struct step_end *to = &ends[best_end];
		struct trace_finding *f = finding_at(cx, "cache-growth", "", pid,
						     to->event);
		if (f)
			text(f->message, sizeof f->message,
				 "the autocast cache grew in %zu consecutive steps "
				 "without being cleared: %.0f entries (%.0f bytes) "
				 "after step %zu, %.0f entries (%.0f bytes) after "
				 "step %zu (steps: %s); cached casts are freed only "
				 "when the outermost autocast region exits, so a "
				 "region around the whole loop keeps every one",
				 best, from->entries, from->bytes, best_end - best + 1,
				 to->entries, to->bytes, best_end + 1,
				 updates ? "GradScaler updates"
				 : writes ? "optimizer updates"
					  : "outermost autocast regions");
	}
	free(ends);
}

static void rule_cache_growth(struct context *cx)
{
	int64_t pids[64];
	size_t npids = 0;

	for (size_t i = 0; i < cx->t->nevents; i++) {
		int64_t pid = cx->t->events[i].pid;
		size_t k = 0;
		while (k < npids && pids[k] != pid)
			k++;
		if (k == npids && npids < 64)
			pids[npids++] = pid;
	}
	for (size_t k = 0; k < npids; k++)
		cache_growth_of(cx, pids[k]);
}

/* ---------------------------------------------------- amp.diag events */

static void fold_diag(struct context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_diag *d = &e->diag;
	const struct finding_kind *k = finding_kind_lookup(d->kind);
	char label[128], site[160];

	if (!d->kind)
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
	size_t named = d->tensor ? id_map_get(&cx->names, e->pid, d->tensor) : SIZE_MAX;
	if (named != SIZE_MAX) {
		char tensor[192];
		tensor_label(cx, e->pid, d->tensor, tensor, sizeof tensor);
		name = strchr(tensor, '\'');
		text(site, sizeof site, "%s %s",
			 d->op_id ? op_label(cx, e->pid, d->op_id, label, sizeof label) : "",
			 name ? name : "");
	} else {
		text(site, sizeof site, "%s",
			 d->op_id ? op_label(cx, e->pid, d->op_id, label, sizeof label) : "");
	}
	struct trace_finding *f = finding_at(cx, d->kind, site, e->pid, i);
	if (!f)
		return;
	f->from_trace = true;
	f->op_id = d->op_id;
	f->tensor = d->tensor;
	text(f->message, sizeof f->message, "%s", d->message ? d->message : "");
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
	struct context cx = { .t = trace, .out = out };
	struct regions regions = { 0 };
	struct id_map down = { 0 }, recast = { 0 };

	*out = (struct findings){ 0 };
	index_trace(&cx);
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
	rule_scaler(&cx);
	rule_cache_growth(&cx);
	for (size_t i = 0; i < trace->nevents; i++)
		if (trace->events[i].kind == TRACE_DIAG)
			fold_diag(&cx, i);
	if (out->count)
		qsort(out->items, out->count, sizeof *out->items, compare_findings);

	free(regions.items);
	free(regions.open.slots);
	free(down.slots);
	free(recast.slots);
	free(cx.ops.slots);
	free(cx.producer.slots);
	free(cx.names.slots);
	free(cx.uses.slots);
	free(cx.first_ts.slots);
	cx.failed |= down.failed || recast.failed || regions.open.failed;
	return cx.failed ? -1 : 0;
}

void findings_free(struct findings *findings)
{
	if (!findings)
		return;
	free(findings->items);
	*findings = (struct findings){ 0 };
}

const struct trace_finding *findings_get(const struct findings *findings,
					 const char *kind)
{
	for (size_t i = 0; i < findings->count; i++)
		if (!strcmp(findings->items[i].kind, kind))
			return &findings->items[i];
	return NULL;
}
