/* Trace events as JSON (event_json.h).  Keys come in FORMAT.md's order;
 * optional keys are left out when the model holds their "absent" value. */
#include "event_json.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void write_us(struct jsonw *w, double us)
{
	jsonw_us(w, trace_us_to_ns(us));
}

/* e's first keys (name, cat, ph, ts, pid, tid, and dur for 'X'), the
 * object left open. */
static void write_head(struct jsonw *w, const struct trace_event *e)
{
	jsonw_reset(w);
	jsonw_lit(w, "{\"name\":");
	jsonw_str(w, e->name);
	jsonw_lit(w, ",\"cat\":");
	jsonw_str(w, e->cat);
	char ph[] = { ',', '"', 'p', 'h', '"', ':', '"', e->ph, '"' };
	jsonw_raw(w, ph, sizeof ph);
	jsonw_lit(w, ",\"ts\":");
	jsonw_hole_begin(w);
	write_us(w, e->ts);
	jsonw_hole_end(w);
	jsonw_lit(w, ",\"pid\":");
	jsonw_i64(w, e->pid);
	jsonw_lit(w, ",\"tid\":");
	jsonw_i64(w, e->tid);
	if (e->ph == 'X') {
		jsonw_lit(w, ",\"dur\":");
		jsonw_hole_begin(w);
		write_us(w, e->dur);
		jsonw_hole_end(w);
	}
}

static void write_optional_u64(struct jsonw *w, const char *key_text,
			       size_t key_len, uint64_t v)
{
	if (!v)
		return;
	jsonw_raw(w, key_text, key_len);
	jsonw_hole_begin(w);
	jsonw_u64(w, v);
	jsonw_hole_end(w);
}

/* An id that differs from one event to the next (a template's hole). */
static void write_id(struct jsonw *w, uint64_t id)
{
	jsonw_hole_begin(w);
	jsonw_u64(w, id);
	jsonw_hole_end(w);
}

#define OPTIONAL_U64(w, literal, v)                                         \
	write_optional_u64((w), "" literal, sizeof(literal) - 1, (v))

static void write_shape(struct jsonw *w, int ndim, const int64_t *shape)
{
	jsonw_raw(w, "[", 1);
	for (int d = 0; d < ndim; d++) {
		if (d)
			jsonw_raw(w, ",", 1);
		jsonw_i64(w, shape[d]);
	}
	jsonw_raw(w, "]", 1);
}

static void write_tensor(struct jsonw *w, const struct trace_tensor *t)
{
	jsonw_lit(w, "{\"tensor\":");
	write_id(w, t->id);
	OPTIONAL_U64(w, ",\"producer_op_id\":", t->producer_op_id);
	jsonw_lit(w, ",\"dtype\":");
	jsonw_str(w, t->dtype);
	jsonw_lit(w, ",\"shape\":");
	write_shape(w, t->ndim, t->shape);
	if (t->name) {
		jsonw_lit(w, ",\"name\":");
		jsonw_str(w, t->name);
	}
	if (t->requires_grad)
		jsonw_lit(w, ",\"requires_grad\":true");
	if (t->leaf)
		jsonw_lit(w, ",\"leaf\":true");
	if (t->view)
		jsonw_lit(w, ",\"view\":true");
	if (t->device) {
		jsonw_lit(w, ",\"device\":");
		jsonw_str(w, t->device);
	}
	jsonw_raw(w, "}", 1);
}

static void write_tensors(struct jsonw *w, const struct trace_tensor *list,
			  int n)
{
	jsonw_raw(w, "[", 1);
	for (int i = 0; i < n; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		write_tensor(w, &list[i]);
	}
	jsonw_raw(w, "]", 1);
}

static void write_autocast(struct jsonw *w, const struct trace_autocast *a)
{
	jsonw_lit(w, ",\"autocast\":{\"enabled\":");
	jsonw_bool(w, a->enabled);
	jsonw_lit(w, ",\"device\":");
	jsonw_str(w, a->device);
	jsonw_lit(w, ",\"dtype\":");
	jsonw_str(w, a->dtype);
	jsonw_lit(w, ",\"cache_enabled\":");
	jsonw_bool(w, a->cache_enabled);
	jsonw_lit(w, ",\"depth\":");
	jsonw_i64(w, a->depth);
	jsonw_lit(w, ",\"scope\":");
	jsonw_str(w, a->scope);
	if (a->nscopes) {
		jsonw_lit(w, ",\"scopes\":[");
		for (int i = 0; i < a->nscopes; i++) {
			if (i)
				jsonw_raw(w, ",", 1);
			jsonw_str(w, a->scopes[i]);
		}
		jsonw_raw(w, "]", 1);
	}
	jsonw_raw(w, "}", 1);
}

static void write_op(struct jsonw *w, const struct trace_op *op)
{
	jsonw_lit(w, ",\"args\":{\"op_id\":");
	write_id(w, op->op_id);
	jsonw_lit(w, ",\"op\":");
	jsonw_str(w, op->op);
	jsonw_lit(w, ",\"overload\":");
	jsonw_str(w, op->overload);
	jsonw_lit(w, ",\"phase\":");
	jsonw_str(w, op->phase);
	if (!op->incomplete) {
		jsonw_lit(w, ",\"policy\":");
		jsonw_str(w, op->policy);
	}
	jsonw_lit(w, ",\"device\":");
	jsonw_str(w, op->device);
	jsonw_lit(w, ",\"emulated\":");
	jsonw_bool(w, op->emulated);
	OPTIONAL_U64(w, ",\"parent_op_id\":", op->parent_op_id);
	OPTIONAL_U64(w, ",\"forward_op_id\":", op->forward_op_id);
	OPTIONAL_U64(w, ",\"graph\":", op->graph);
	write_autocast(w, &op->autocast);
	if (op->incomplete) {
		jsonw_lit(w, ",\"incomplete\":true,\"closed_by\":");
		jsonw_str(w, op->closed_by);
		jsonw_lit(w, "}}");
		return;
	}
	jsonw_lit(w, ",\"inputs\":");
	write_tensors(w, op->inputs, op->ninputs);
	jsonw_lit(w, ",\"outputs\":");
	write_tensors(w, op->outputs, op->noutputs);
	if (op->status) {
		jsonw_lit(w, ",\"status\":");
		jsonw_i64(w, op->status);
		jsonw_lit(w, ",\"error\":");
		jsonw_str(w, op->error);
	}
	/* torch.profiler's keys, for tools that read Kineto traces. */
	jsonw_lit(w, ",\"Input type\":[");
	for (int i = 0; i < op->ninputs; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, op->inputs[i].profiler_type);
	}
	jsonw_lit(w, "],\"Input Dims\":[");
	for (int i = 0; i < op->ninputs; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		write_shape(w, op->inputs[i].ndim, op->inputs[i].shape);
	}
	jsonw_lit(w, "],\"External id\":");
	write_id(w, op->op_id);
	jsonw_lit(w, "}}");
}

static void optional_string(struct jsonw *w, const char *key,
			    const char *value)
{
	if (!value)
		return;
	jsonw_raw(w, ",\"", 2);
	jsonw_raw(w, key, strlen(key));
	jsonw_raw(w, "\":", 2);
	jsonw_str(w, value);
}

/* A compiled graph's cast (FORMAT.md §3.3): where and what for. */
static void write_compiled_cast(struct jsonw *w, const struct trace_cast *c)
{
	jsonw_lit(w, ",\"origin\":\"compiled\",\"graph\":");
	jsonw_u64(w, c->graph);
	optional_string(w, "made_by", c->made_by);
	optional_string(w, "feeds", c->feeds);
	optional_string(w, "source", c->source);
	optional_string(w, "module", c->module);
	optional_string(w, "module_class", c->module_class);
	jsonw_lit(w, ",\"autocast\":{\"enabled\":");
	jsonw_bool(w, c->autocast.enabled);
	jsonw_lit(w, ",\"device\":");
	jsonw_str(w, c->autocast.device);
	jsonw_lit(w, ",\"dtype\":");
	jsonw_str(w, c->autocast.dtype);
	jsonw_raw(w, "}", 1);
}

static void write_cast(struct jsonw *w, const struct trace_cast *c)
{
	jsonw_lit(w, ",\"args\":{\"op_id\":");
	jsonw_u64(w, c->op_id);
	if (c->op) {
		jsonw_lit(w, ",\"op\":");
		jsonw_str(w, c->op);
		jsonw_lit(w, ",\"phase\":");
		jsonw_str(w, c->phase);
		if (c->scope) {
			jsonw_lit(w, ",\"scope\":");
			jsonw_str(w, c->scope);
		}
	}
	jsonw_lit(w, ",\"arg\":");
	jsonw_i64(w, c->arg);
	jsonw_lit(w, ",\"tensor\":");
	jsonw_u64(w, c->tensor);
	jsonw_lit(w, ",\"result\":");
	jsonw_u64(w, c->result);
	jsonw_lit(w, ",\"from\":");
	jsonw_str(w, c->from);
	jsonw_lit(w, ",\"to\":");
	jsonw_str(w, c->to);
	jsonw_lit(w, ",\"cache\":");
	jsonw_str(w, c->cache);
	jsonw_lit(w, ",\"reason\":");
	jsonw_str(w, c->reason);
	jsonw_lit(w, ",\"bytes\":");
	jsonw_u64(w, c->bytes);
	if (c->stale)
		jsonw_lit(w, ",\"stale\":true");
	if (c->name) {
		jsonw_lit(w, ",\"name\":");
		jsonw_str(w, c->name);
	}
	jsonw_lit(w, ",\"shape\":");
	write_shape(w, c->ndim, c->shape);
	if (c->requires_grad)
		jsonw_lit(w, ",\"requires_grad\":true");
	if (c->leaf)
		jsonw_lit(w, ",\"leaf\":true");
	if (c->compiled)
		write_compiled_cast(w, c);
	jsonw_lit(w, "}}");
}

static void write_scope(struct jsonw *w, const struct trace_event *e)
{
	const struct trace_scope *s = &e->scope;

	if (e->kind == TRACE_SCOPE_END) {
		jsonw_lit(w, ",\"args\":{\"depth\":");
		jsonw_i64(w, s->depth);
		if (s->closed_by) {
			jsonw_lit(w, ",\"closed_by\":");
			jsonw_str(w, s->closed_by);
		}
		jsonw_lit(w, "}}");
		return;
	}
	jsonw_lit(w, ",\"args\":{\"scope\":");
	jsonw_str(w, s->scope);
	jsonw_lit(w, ",\"depth\":");
	jsonw_i64(w, s->depth);
	jsonw_lit(w, ",\"device\":");
	jsonw_str(w, s->device);
	jsonw_lit(w, ",\"dtype\":");
	jsonw_str(w, s->dtype);
	jsonw_lit(w, ",\"enabled\":");
	jsonw_bool(w, s->enabled);
	jsonw_lit(w, ",\"cache_enabled\":");
	jsonw_bool(w, s->cache_enabled);
	jsonw_lit(w, "}}");
}

static void write_counter(struct jsonw *w, const struct trace_counter *c)
{
	jsonw_lit(w, ",\"args\":{");
	for (int i = 0; i < c->nseries; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, c->series[i]);
		jsonw_raw(w, ":", 1);
		jsonw_double(w, c->value[i]);
	}
	jsonw_lit(w, "}}");
}

static void write_scaler(struct jsonw *w, const struct trace_scaler *s)
{
	jsonw_lit(w, ",\"s\":\"t\",\"args\":{\"what\":");
	jsonw_str(w, s->what);
	jsonw_lit(w, ",\"scaler_id\":");
	jsonw_u64(w, s->scaler_id);
	OPTIONAL_U64(w, ",\"optimizer_id\":", s->optimizer_id);
	/* JSON has no NaN: an absent or non-finite scale is null */
	jsonw_lit(w, ",\"scale\":");
	jsonw_double(w, s->scale);
	jsonw_lit(w, ",\"found_inf\":");
	jsonw_bool(w, s->found_inf);
	jsonw_lit(w, ",\"step_skipped\":");
	jsonw_bool(w, s->step_skipped);
	OPTIONAL_U64(w, ",\"inf_tensor\":", s->inf_tensor);
	jsonw_lit(w, "}}");
}

static void write_optional_i64(struct jsonw *w, const char *key_text,
			       size_t key_len, int64_t v)
{
	if (!v)
		return;
	jsonw_raw(w, key_text, key_len);
	jsonw_i64(w, v);
}

static void write_diag(struct jsonw *w, const struct trace_diag *d)
{
	char scope[] = { ',', '"', 's', '"', ':', '"', d->scope ? d->scope : 't',
			 '"' };

	jsonw_raw(w, scope, sizeof scope);
	jsonw_lit(w, ",\"args\":{\"kind\":");
	jsonw_str(w, d->kind);
	jsonw_lit(w, ",\"message\":");
	jsonw_str(w, d->message);
	if (d->fix) {
		jsonw_lit(w, ",\"fix\":");
		jsonw_str(w, d->fix);
		jsonw_lit(w, ",\"severity\":");
		jsonw_str(w, d->severity);
		jsonw_lit(w, ",\"count\":");
		jsonw_u64(w, d->count);
	}
	/* ids only when known: a reader folds a finding's event into the
	 * finding it recomputes by (kind, op_id, tensor), absent meaning 0 */
	OPTIONAL_U64(w, ",\"op_id\":", d->op_id);
	OPTIONAL_U64(w, ",\"tensor\":", d->tensor);
	write_optional_i64(w, ",\"thread\":", 10, d->thread);
	write_optional_i64(w, ",\"other_thread\":", 16, d->other_thread);
	jsonw_lit(w, "}}");
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !memcmp(s + n - k, tail, k);
}

/* M events have no cat and no ts (FORMAT.md §2). */
static void write_meta(struct jsonw *w, const struct trace_event *e)
{
	const struct trace_meta *m = &e->meta;

	jsonw_reset(w);
	jsonw_lit(w, "{\"name\":");
	jsonw_str(w, e->name);
	jsonw_lit(w, ",\"ph\":\"M\",\"pid\":");
	jsonw_i64(w, e->pid);
	jsonw_lit(w, ",\"tid\":");
	jsonw_i64(w, e->tid);
	if (ends_with(e->name, "sort_index")) {
		jsonw_lit(w, ",\"args\":{\"sort_index\":");
		jsonw_i64(w, m->sort_index);
		jsonw_lit(w, "}}");
		return;
	}
	if (!strcmp(e->name, "process_labels")) {
		jsonw_lit(w, ",\"args\":{\"labels\":");
		jsonw_str(w, m->value);
		jsonw_lit(w, "}}");
		return;
	}
	jsonw_lit(w, ",\"args\":{\"name\":");
	jsonw_str(w, m->value);
	if (m->rank >= 0) {
		jsonw_lit(w, ",\"rank\":");
		jsonw_i64(w, m->rank);
	}
	if (m->argv) {
		jsonw_lit(w, ",\"argv\":[");
		for (int i = 0; i < m->argc; i++) {
			if (i)
				jsonw_raw(w, ",", 1);
			jsonw_str(w, m->argv[i]);
		}
		jsonw_raw(w, "]", 1);
	}
	if (m->framework) {
		jsonw_lit(w, ",\"framework\":");
		jsonw_str(w, m->framework);
	}
	if (m->host_pid) {
		jsonw_lit(w, ",\"device\":");
		jsonw_i64(w, m->device);
		jsonw_lit(w, ",\"host_pid\":");
		jsonw_i64(w, m->host_pid);
	}
	write_optional_i64(w, ",\"os_tid\":", 10, m->os_tid);
	jsonw_lit(w, "}}");
}

/* A kernel or a copy as Kineto writes it, linked to its op or cast by
 * "External id". */
static void write_gpu(struct jsonw *w, const struct trace_event *e)
{
	const struct trace_kernel *k = &e->kernel;
	bool copy = e->kind != TRACE_KERNEL;

	jsonw_lit(w, ",\"args\":{");
	if (k->linked) {
		jsonw_lit(w, "\"External id\":");
		jsonw_u64(w, k->external_id);
		jsonw_raw(w, ",", 1);
		if (k->cast) {
			jsonw_lit(w, "\"amp.cast_result\":true,");
			if (k->op_id) {
				jsonw_lit(w, "\"amp.op_id\":");
				jsonw_u64(w, k->op_id);
				jsonw_raw(w, ",", 1);
			}
		}
	}
	jsonw_lit(w, "\"amp.pid\":");
	jsonw_i64(w, k->host_pid);
	jsonw_lit(w, ",\"correlation\":");
	jsonw_u64(w, k->correlation);
	jsonw_lit(w, ",\"device\":");
	jsonw_u64(w, k->device);
	jsonw_lit(w, ",\"stream\":");
	jsonw_u64(w, k->stream);
	if (copy) {
		jsonw_lit(w, ",\"bytes\":");
		jsonw_u64(w, k->bytes);
		double ns = e->dur * 1000.0;
		int64_t dur = (int64_t)(ns + 0.5);
		if (dur > 0) {
			jsonw_lit(w, ",\"memory bandwidth (GB/s)\":");
			jsonw_double(w, (double)k->bytes / (double)dur);
		}
	} else {
		jsonw_lit(w, ",\"grid\":");
		for (int i = 0; i < 3; i++) {
			jsonw_raw(w, i ? "," : "[", 1);
			jsonw_i64(w, k->grid[i]);
		}
		jsonw_lit(w, "],\"block\":");
		for (int i = 0; i < 3; i++) {
			jsonw_raw(w, i ? "," : "[", 1);
			jsonw_i64(w, k->block[i]);
		}
		jsonw_lit(w, "],\"registers per thread\":");
		jsonw_i64(w, k->registers);
		jsonw_lit(w, ",\"shared memory\":");
		jsonw_i64(w, k->shared_memory);
	}
	jsonw_lit(w, "}}");
}

/* ------------------------------------------------------------ templates */

/* The ops of a training loop repeat: the same op, on tensors of the same
 * dtypes, shapes and names, under the same autocast state; only times and
 * ids change.  An op event's text is kept as a template, its times and
 * ids cut out (the jsonw holes), and the next op alike is written by
 * copying the text between its own times and ids.  "Alike" compares
 * every other field, strings by address (they are interned: see
 * event_json_memo_new). */
#define MEMO_SETS 128
#define MEMO_WAYS 4
#define MEMO_TENSORS 8
#define MEMO_TEXT 2048

struct tensor_key {
	const char *dtype, *name, *device, *profiler_type;
	int64_t shape[TRACE_MAX_DIMS];
	int32_t ndim;
	uint32_t flags;
};

struct op_key {
	const char *name, *cat, *op, *overload, *phase, *policy, *device;
	const char *closed_by, *error, *ac_device, *ac_dtype, *ac_scope;
	const char **ac_scopes;
	int64_t pid, tid;
	int32_t status, ac_depth, ac_nscopes, ninputs, noutputs;
	uint32_t flags;
	struct tensor_key tensors[MEMO_TENSORS];
};

struct op_template {
	struct op_key key;
	size_t key_size;        /* 0: the slot is empty */
	size_t len;
	int nholes;
	uint16_t at[JSONW_MAX_HOLES]; /* where each hole goes in text */
	char text[MEMO_TEXT];
};

/* MEMO_WAYS templates per set: the ops of one step (a hundred or so)
 * then rarely push each other out. */
struct event_json_memo {
	struct op_template slots[MEMO_SETS][MEMO_WAYS];
	unsigned next[MEMO_SETS]; /* the way replaced next */
};

struct event_json_memo *event_json_memo_new(void)
{
	return calloc(1, sizeof(struct event_json_memo));
}

void event_json_memo_free(struct event_json_memo *m)
{
	free(m);
}

/* Fills e's key; returns its size, 0 when e has too many tensors. */
static size_t op_key_of(const struct trace_event *e, struct op_key *k)
{
	const struct trace_op *op = &e->op;
	int ntensors = op->ninputs + op->noutputs;

	if (op->ninputs < 0 || op->noutputs < 0 || ntensors > MEMO_TENSORS)
		return 0;
	size_t size = offsetof(struct op_key, tensors) +
		      (size_t)ntensors * sizeof(struct tensor_key);
	/* field by field on zeros: keys are compared as bytes */
	memset(k, 0, size);
	k->name = e->name;
	k->cat = e->cat;
	k->op = op->op;
	k->overload = op->overload;
	k->phase = op->phase;
	k->policy = op->policy;
	k->device = op->device;
	k->closed_by = op->closed_by;
	k->error = op->error;
	k->ac_device = op->autocast.device;
	k->ac_dtype = op->autocast.dtype;
	k->ac_scope = op->autocast.scope;
	k->ac_scopes = op->autocast.scopes;
	k->pid = e->pid;
	k->tid = e->tid;
	k->status = op->status;
	k->ac_depth = op->autocast.depth;
	k->ac_nscopes = op->autocast.nscopes;
	k->ninputs = op->ninputs;
	k->noutputs = op->noutputs;
	k->flags = (uint32_t)op->emulated | (uint32_t)op->incomplete << 1 |
		   (uint32_t)(op->parent_op_id != 0) << 2 |
		   (uint32_t)(op->forward_op_id != 0) << 3 |
		   (uint32_t)op->autocast.enabled << 4 |
		   (uint32_t)op->autocast.cache_enabled << 5 |
		   (uint32_t)(e->ph == 'X') << 6 |
		   (uint32_t)(op->graph != 0) << 7;
	for (int i = 0; i < ntensors; i++) {
		const struct trace_tensor *t = i < op->ninputs
			? &op->inputs[i] : &op->outputs[i - op->ninputs];
		struct tensor_key *tk = &k->tensors[i];
		int ndim = t->ndim < 0 ? 0
			   : t->ndim > TRACE_MAX_DIMS ? TRACE_MAX_DIMS : t->ndim;
		tk->dtype = t->dtype;
		tk->name = t->name;
		tk->device = t->device;
		tk->profiler_type = t->profiler_type;
		tk->ndim = t->ndim;
		tk->flags = (uint32_t)t->requires_grad | (uint32_t)t->leaf << 1 |
			    (uint32_t)t->view << 2 |
			    (uint32_t)(t->producer_op_id != 0) << 3;
		memcpy(tk->shape, t->shape, (size_t)ndim * sizeof *tk->shape);
	}
	return size;
}

static size_t op_key_slot(const struct op_key *k)
{
	uint64_t h = (uintptr_t)k->op ^ (uint64_t)k->ninputs << 48 ^
		     (uint64_t)k->tid << 32;
	int ntensors = k->ninputs + k->noutputs;

	for (int i = 0; i < ntensors; i++)
		h = (h ^ (uint64_t)k->tensors[i].shape[0] ^
		     (uint64_t)k->tensors[i].shape[1] << 20 ^
		     (uintptr_t)k->tensors[i].name) * 0x9E3779B97F4A7C15ull;
	h ^= h >> 29;
	return (size_t)(h % MEMO_SETS);
}

/* A hole's value: a time (µs, written as ns) or an id. */
struct hole {
	bool time;
	double us;
	uint64_t id;
};

/* A list's tensor ids and producers, as write_tensor writes them. */
static int tensor_holes(struct hole *h, int n, const struct trace_tensor *list,
			int count)
{
	for (int i = 0; i < count && n < JSONW_MAX_HOLES; i++) {
		h[n++] = (struct hole){ .id = list[i].id };
		if (list[i].producer_op_id && n < JSONW_MAX_HOLES)
			h[n++] = (struct hole){ .id = list[i].producer_op_id };
	}
	return n;
}

/* e's holes in the order the writer writes them. */
static int op_holes(const struct trace_event *e, struct hole *h)
{
	const struct trace_op *op = &e->op;
	int n = 0;

	h[n++] = (struct hole){ .time = true, .us = e->ts };
	h[n++] = (struct hole){ .time = true, .us = e->dur };
	h[n++] = (struct hole){ .id = op->op_id };
	if (op->parent_op_id)
		h[n++] = (struct hole){ .id = op->parent_op_id };
	if (op->forward_op_id)
		h[n++] = (struct hole){ .id = op->forward_op_id };
	if (op->graph)
		h[n++] = (struct hole){ .id = op->graph };
	if (op->incomplete)
		return n;
	n = tensor_holes(h, n, op->inputs, op->ninputs);
	n = tensor_holes(h, n, op->outputs, op->noutputs);
	if (n < JSONW_MAX_HOLES)
		h[n++] = (struct hole){ .id = op->op_id };
	return n;
}

/* Writes the op event e through its template; false when it has none
 * yet (one is then made from the text written the usual way). */
static bool write_op_memo(struct jsonw *w, const struct trace_event *e,
			  struct event_json_memo *m)
{
	struct op_key key;
	size_t size = op_key_of(e, &key);
	struct hole holes[JSONW_MAX_HOLES];

	if (!size)
		return false;
	size_t set = op_key_slot(&key);
	struct op_template *t = NULL;
	int nholes = op_holes(e, holes);
	for (int way = 0; way < MEMO_WAYS && !t; way++) {
		struct op_template *c = &m->slots[set][way];
		if (c->key_size == size && c->nholes == nholes &&
		    !memcmp(&c->key, &key, size))
			t = c;
	}
	if (t) {
		jsonw_reset(w);
		if (!jsonw_reserve(w, t->len + (size_t)nholes * 26))
			return true;
		char *out = w->data;
		size_t from = 0;
		for (int i = 0; i < nholes; i++) {
			memcpy(out, t->text + from, t->at[i] - from);
			out += t->at[i] - from;
			from = t->at[i];
			if (holes[i].time) {
				out = jsonw_us_text(out,
						    trace_us_to_ns(holes[i].us));
			} else {
				out = jsonw_digits(out, holes[i].id);
			}
		}
		memcpy(out, t->text + from, t->len - from);
		out += t->len - from;
		*out = '\0';
		w->len = (size_t)(out - w->data);
		return true;
	}
	/* A new template: the event written with its holes noted. */
	t = &m->slots[set][m->next[set]++ % MEMO_WAYS];
	t->key_size = 0;
	struct jsonw_holes noted = { 0 };
	w->holes = &noted;
	write_head(w, e);
	write_op(w, &e->op);
	w->holes = NULL;
	if (w->failed || noted.count != nholes || w->len >= MEMO_TEXT)
		return true;
	size_t len = 0, from = 0;
	for (int i = 0; i < nholes; i++) {
		memcpy(t->text + len, w->data + from, noted.start[i] - from);
		len += noted.start[i] - from;
		t->at[i] = (uint16_t)len;
		from = noted.end[i];
	}
	memcpy(t->text + len, w->data + from, w->len - from);
	t->len = len + w->len - from;
	t->nholes = nholes;
	t->key = key;
	t->key_size = size;
	return true;
}

void event_json_write_memo(struct jsonw *w, const struct trace_event *e,
			   struct event_json_memo *m)
{
	if (e->kind == TRACE_OP && m && write_op_memo(w, e, m))
		return;
	event_json_write(w, e);
}

void event_json_write(struct jsonw *w, const struct trace_event *e)
{
	if (e->kind == TRACE_META) {
		write_meta(w, e);
		return;
	}
	write_head(w, e);
	switch (e->kind) {
	case TRACE_OP:
		write_op(w, &e->op);
		return;
	case TRACE_CAST:
		write_cast(w, &e->cast);
		return;
	case TRACE_SCOPE_BEGIN:
	case TRACE_SCOPE_END:
		write_scope(w, e);
		return;
	case TRACE_CACHE_CLEAR:
		jsonw_lit(w, ",\"s\":\"t\",\"args\":{\"entries\":");
		jsonw_u64(w, e->cache.entries);
		jsonw_lit(w, ",\"bytes\":");
		jsonw_u64(w, e->cache.bytes);
		jsonw_lit(w, "}}");
		return;
	case TRACE_COUNTER:
		write_counter(w, &e->counter);
		return;
	case TRACE_SCALER:
		write_scaler(w, &e->scaler);
		return;
	case TRACE_DIAG:
		write_diag(w, &e->diag);
		return;
	case TRACE_KERNEL:
		write_gpu(w, e);
		return;
	default:
		if (e->cat && !strcmp(e->cat, "gpu_memcpy"))
			write_gpu(w, e);
		else
			jsonw_raw(w, "}", 1);
		return;
	}
}
