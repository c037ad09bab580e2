/* What every rule of the findings uses (findings_internal.h): the
 * context they share, recording an occurrence of a finding, labels of ops
 * and tensors, and the dtype and policy-table questions the rules ask of
 * the trace. */
#include "findings_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void findings_context_init(struct findings_context *cx,
			   const struct trace_index *ix, struct findings *out)
{
	*out = (struct findings){ 0 };
	*cx = (struct findings_context){ .t = ix->trace, .ix = ix, .out = out };
	cx->table = findings_policy_table(ix->trace);
	finding_regions_build(cx, &cx->regions);
}

/* Frees map `m` of the context, noting whether an insertion failed. */
static void free_map(struct findings_context *cx, struct id_map *m)
{
	cx->failed |= m->failed;
	id_map_free(m);
}

void findings_context_free(struct findings_context *cx)
{
	finding_regions_free(&cx->regions);
	finding_casts_free(cx);
	finding_steps_free(cx);
	finding_origins_free(cx, &cx->origins);
	free_map(cx, &cx->autocast_off);
	free_map(cx, &cx->other_dtype_ops);
	free_map(cx, &cx->uncached_casts);
	free_map(cx, &cx->conversions.first);
	free_map(cx, &cx->conversions.next);
	free_map(cx, &cx->overflow_verdicts.skipped);
	free_map(cx, &cx->jit_consumers.of_cast);
	free_map(cx, &cx->sites);
}

size_t finding_pid_index(struct finding_pids *p, int64_t pid)
{
	if (p->last < p->count && p->items[p->last] == pid)
		return p->last;
	for (p->last = 0; p->last < p->count; p->last++)
		if (p->items[p->last] == pid)
			return p->last;
	if (p->count == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 16;
		int64_t *grown = realloc(p->items, cap * sizeof *grown);
		if (!grown)
			return SIZE_MAX;
		p->items = grown;
		p->cap = cap;
	}
	p->items[p->count] = pid;
	return p->count++;
}

void finding_pids_free(struct finding_pids *p)
{
	free(p->items);
	*p = (struct finding_pids){ 0 };
}

/* snprintf that may cut: messages and labels are cut on purpose. */
void finding_text(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

/* Chains `event` onto the finding's occurrences (findings.h). */
static void record_occurrence(struct findings_context *cx,
			      struct trace_finding *f, size_t event)
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

/* The site as a finding keeps it (cut to its size), and (kind, site) as
 * one id of the sites map: two of one hash are told apart by their
 * strings (finding_find). */
typedef char finding_site[sizeof ((struct trace_finding *)0)->site];

static uint64_t site_key(const char *kind, const char *site)
{
	return trace_string_hash(kind, strlen(kind)) ^
	       trace_string_hash(site, strlen(site)) * 0x9e3779b97f4a7c15ull;
}

static bool finding_is(const struct trace_finding *f, const char *kind,
		       const char *site, int64_t pid)
{
	return f->pid == pid && !strcmp(f->kind, kind) && !strcmp(f->site, site);
}

struct trace_finding *finding_find(struct findings_context *cx,
				   const char *kind, const char *site,
				   int64_t pid)
{
	struct findings *fs = cx->out;
	finding_site cut;

	finding_text(cut, sizeof cut, "%s", site);
	size_t first = id_map_get(&cx->sites, pid, site_key(kind, cut));
	if (first == SIZE_MAX)
		return NULL;
	/* the first finding of the hash, and those after it: another
	 * (kind, site) of the same hash may have come first */
	for (size_t i = first - 1; i < fs->count; i++)
		if (finding_is(&fs->items[i], kind, cut, pid))
			return &fs->items[i];
	return NULL;
}

/* A new finding of (kind, site, pid), its first occurrence at `event`, or
 * NULL when out of memory. */
static struct trace_finding *finding_new(struct findings_context *cx,
					 const char *kind, const char *site,
					 int64_t pid, size_t event)
{
	struct findings *fs = cx->out;

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
	struct trace_finding *f = &fs->items[fs->count];
	*f = (struct trace_finding){
		.kind = k ? k->name : kind,
		.severity = k ? k->severity : FINDING_WARNING,
		.fix = k ? k->fix : "",
		.count = 1, .event = event, .pid = pid,
		.thread = cx->t->events[event].tid,
		.occurrences = SIZE_MAX,
	};
	finding_text(f->site, sizeof f->site, "%s", site);
	/* the index of the hash's first finding, plus one (0: none yet) */
	size_t *first = id_map_find(&cx->sites, pid, site_key(kind, f->site),
				    true);
	if (!first) {
		cx->failed = true;
		return NULL;
	}
	if (!*first)
		*first = fs->count + 1;
	fs->count++;
	return f;
}

struct trace_finding *finding_at(struct findings_context *cx, const char *kind,
				 const char *site, int64_t pid, size_t event)
{
	struct trace_finding *f = finding_find(cx, kind, site, pid);

	if (f) {
		f->count++;
		record_occurrence(cx, f, event);
		return NULL;
	}
	f = finding_new(cx, kind, site, pid, event);
	if (f)
		record_occurrence(cx, f, event);
	return f;
}

struct trace_finding *finding_of(struct findings_context *cx,
					enum finding_kind_id kind,
					const char *site, int64_t pid,
					size_t event)
{
	return finding_at(cx, finding_kinds[kind].name, site, pid, event);
}

const struct trace_op *finding_op_of(struct findings_context *cx, int64_t pid,
				     uint64_t op_id)
{
	size_t i = id_map_get(&cx->ix->ops, pid, op_id);

	return i == SIZE_MAX ? NULL : &cx->t->events[i].op;
}

const char *finding_op_label(struct findings_context *cx, int64_t pid,
			     uint64_t op_id, char *buf, size_t size)
{
	const struct trace_op *op = finding_op_of(cx, pid, op_id);

	if (op)
		return trace_op_label(op, buf, size);
	finding_text(buf, size, "op %llu", (unsigned long long)op_id);
	return buf;
}

/* "tensor 12 'fc1.weight'" or "tensor 12". */
const char *finding_tensor_label(struct findings_context *cx, int64_t pid,
				 uint64_t id,
				char *buf, size_t size)
{
	size_t i = id_map_get(&cx->ix->names, pid, id);
	const char *name = NULL;

	if (i != SIZE_MAX) {
		const struct trace_event *e = &cx->t->events[i];
		if (e->kind == TRACE_CAST)
			name = e->cast.source->name;
		for (int k = 0; e->kind == TRACE_OP && k < e->op.ninputs + e->op.noutputs; k++) {
			const struct trace_tensor *tt = k < e->op.ninputs
				? &e->op.inputs[k] : &e->op.outputs[k - e->op.ninputs];
			if (tt->id == id && tt->info->name)
				name = tt->info->name;
		}
	}
	if (name)
		finding_text(buf, size, "tensor %llu '%s'", (unsigned long long)id, name);
	else
		finding_text(buf, size, "tensor %llu", (unsigned long long)id);
	return buf;
}

bool finding_is_low_precision(const char *dtype)
{
	return dtype && (dtype[0] == 'f' || dtype[0] == 'b') &&
	       (!strcmp(dtype, "f16") || !strcmp(dtype, "bf16"));
}

bool finding_is_full_precision(const char *dtype)
{
	return dtype && dtype[0] == 'f' &&
	       (!strcmp(dtype, "f32") || !strcmp(dtype, "f64"));
}

static int compare_op_name(const void *key, const void *entry)
{
	return strcmp(key, ((const struct finding_lp_op *)entry)->name);
}

/* An op of a PyTorch lower-precision list (any device) in the trace's
 * policy table: its dtype shows whether a thread autocasts. */
bool finding_low_precision_op(struct findings_context *cx, const char *name)
{
	struct finding_lp_memo *m = &cx->lp_memo;
	size_t slot = ((uintptr_t)name >> 4) % LP_MEMO_SLOTS;

	if (m->name[slot] == name)
		return m->low[slot];
	const struct finding_lp_op *op = bsearch(
		name, finding_low_precision_ops, finding_low_precision_op_count,
		sizeof *finding_low_precision_ops, compare_op_name);
	bool low = op && (op->versions >> cx->table & 1u);
	m->name[slot] = name;
	m->low[slot] = low;
	return low;
}
