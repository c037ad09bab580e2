/* The report's adapter (see report_data.h): one pass over a loaded trace
 * and its analysis (steps, cache counts, findings) → the page's JSON:
 *
 *   trace, generator, format, framework, command, host, devices[],
 *   duration_us, exit, truncated, note, counts{events, ops, casts,
 *   regions, scaler, kernels, diag}, steps{count, marker}, graph_step,
 *   dtypes[] (output dtypes, "none" for ops without output),
 *   directions[] ("f32->f16"), findings[] (most severe first: kind,
 *   severity, count, message, fix, op_id, op, phase, tensor, pid, step,
 *   group), processes[] (pid, rank, name, steps, and per step:
 *   ops{dtype: []}, time_us{dtype: []}, casts{direction: []},
 *   cast_bytes[], hits[], misses[], uncacheable[]; scale[] (steps with a
 *   GradScaler value: step, scale, found_inf, skipped); tables op_table[],
 *   cast_table[], reasons[], regions[]).
 *
 * Steps are the analysis's (FORMAT.md §8), counted per process.  Op time
 * per step counts top-level ops only (parent_op_id 0), so that an op
 * running inside another is not counted twice. */
#include "report_data.h"

#include "analyze.h"
#include "trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first TRACE_DTYPE_COUNT are FORMAT.md's names in their order, then
 * "none" (no output), then any other name a trace carries. */
#define MAX_DTYPES 16
#define DTYPE_NONE TRACE_DTYPE_COUNT
#define MAX_DIRECTIONS 64

struct op_group {
	const char *op, *overload, *phase, *policy, *dtype;
	size_t count, casts;
	uint64_t cast_bytes;
	double time_us;
};

struct direction_total {
	size_t casts, hits;
	uint64_t bytes;
	double time_us;
};

struct reason_count {
	const char *reason;
	size_t count;
};

struct region_row {
	const char *scope, *device, *dtype;
	bool enabled;
	int depth;
	size_t entered, ops, casts;
	double time_us;
};

struct process {
	int64_t pid;
	int rank;
	const char *name;
	int nsteps;
	double *ops[MAX_DTYPES], *time_us[MAX_DTYPES];
	double *casts[MAX_DIRECTIONS];
	double *cast_bytes, *hits, *misses, *uncacheable;
	double *scale;          /* NaN: no value in the step */
	unsigned char *scaler;  /* bit 0 seen, 1 found_inf, 2 skipped */
	struct direction_total directions[MAX_DIRECTIONS];
	struct op_group *groups;
	size_t ngroups;
	struct reason_count *reasons;
	size_t nreasons;
	struct region_row *regions;
	size_t nregions;
};

/* Open regions of one thread (B events not yet closed). */
struct thread_regions {
	int64_t pid, tid;
	size_t *open;
	double *since;
	size_t n, cap;
};

struct builder {
	const struct trace *t;
	struct analysis a;
	bool failed;            /* out of memory */
	const char *dtypes[MAX_DTYPES];
	int ndtypes;
	const char *from[MAX_DIRECTIONS], *to[MAX_DIRECTIONS];
	int ndirections;
	struct process *procs;
	size_t nprocs;
	int *group_of;          /* per event: the op's group, or -1 */
	struct thread_regions *threads;
	size_t nthreads;
};

static void *grow(struct builder *b, void *array, size_t *n, size_t elem)
{
	char *grown = b->failed ? NULL : realloc(array, (*n + 1) * elem);

	if (!grown) {
		b->failed = true;
		return array;
	}
	memset(grown + *n * elem, 0, elem);
	(*n)++;
	return grown;
}

/* A per-step series of `p`, allocated on first use. */
static double *series(struct builder *b, double **slot)
{
	if (!*slot && !b->failed) {
		*slot = calloc((size_t)b->a.nsteps + 1, sizeof **slot);
		b->failed = !*slot;
	}
	return *slot;
}

static void add(struct builder *b, double **slot, int step, double value)
{
	double *s = series(b, slot);

	if (s)
		s[step] += value;
}

static int dtype_index(struct builder *b, const char *dtype)
{
	if (!dtype)
		return DTYPE_NONE;
	for (int i = 0; i < b->ndtypes; i++)
		if (b->dtypes[i] == dtype || !strcmp(b->dtypes[i], dtype))
			return i;
	if (b->ndtypes == MAX_DTYPES)
		return DTYPE_NONE;
	b->dtypes[b->ndtypes] = dtype;
	return b->ndtypes++;
}

static int direction_index(struct builder *b, const char *from, const char *to)
{
	for (int i = 0; i < b->ndirections; i++)
		if ((b->from[i] == from || !strcmp(b->from[i], from)) &&
		    (b->to[i] == to || !strcmp(b->to[i], to)))
			return i;
	if (b->ndirections == MAX_DIRECTIONS)
		return -1;
	b->from[b->ndirections] = from;
	b->to[b->ndirections] = to;
	return b->ndirections++;
}

static struct process *process_of(struct builder *b, int64_t pid)
{
	for (size_t i = 0; i < b->nprocs; i++)
		if (b->procs[i].pid == pid)
			return &b->procs[i];
	size_t n = b->nprocs;
	b->procs = grow(b, b->procs, &b->nprocs, sizeof *b->procs);
	if (b->nprocs == n)
		return NULL;
	struct process *p = &b->procs[n];
	p->pid = pid;
	p->rank = -1;
	p->scale = calloc((size_t)b->a.nsteps + 1, sizeof *p->scale);
	p->scaler = calloc((size_t)b->a.nsteps + 1, 1);
	if (!p->scale || !p->scaler)
		b->failed = true;
	for (int s = 0; p->scale && s <= b->a.nsteps; s++)
		p->scale[s] = NAN;
	return p;
}

static struct thread_regions *thread_of(struct builder *b, int64_t pid,
					int64_t tid)
{
	for (size_t i = 0; i < b->nthreads; i++)
		if (b->threads[i].pid == pid && b->threads[i].tid == tid)
			return &b->threads[i];
	size_t n = b->nthreads;
	b->threads = grow(b, b->threads, &b->nthreads, sizeof *b->threads);
	if (b->nthreads == n)
		return NULL;
	b->threads[n].pid = pid;
	b->threads[n].tid = tid;
	return &b->threads[n];
}

/* Counts an op or cast once in each distinct region open around it. */
static void count_in_regions(struct process *p, const struct thread_regions *th,
			     bool cast)
{
	for (size_t k = 0; th && k < th->n; k++) {
		bool again = false;
		for (size_t j = 0; j < k; j++)
			again |= th->open[j] == th->open[k];
		if (again)
			continue;
		if (cast)
			p->regions[th->open[k]].casts++;
		else
			p->regions[th->open[k]].ops++;
	}
}

static void on_op(struct builder *b, struct process *p, size_t index, int step)
{
	const struct trace_event *e = &b->t->events[index];
	const struct trace_op *op = &e->op;
	const char *dtype = analysis_output_dtype(op);
	int d = dtype_index(b, dtype);

	add(b, &p->ops[d], step, 1);
	if (!op->parent_op_id)
		add(b, &p->time_us[d], step, e->dur);
	size_t g = 0;
	while (g < p->ngroups &&
	       !(p->groups[g].op == op->op && p->groups[g].overload == op->overload &&
		 p->groups[g].phase == op->phase &&
		 p->groups[g].policy == op->policy && p->groups[g].dtype == dtype))
		g++;
	if (g == p->ngroups) {
		p->groups = grow(b, p->groups, &p->ngroups, sizeof *p->groups);
		if (g == p->ngroups)
			return;
		p->groups[g] = (struct op_group){ op->op, op->overload,
			op->phase, op->policy, dtype, 0, 0, 0, 0 };
	}
	p->groups[g].count++;
	p->groups[g].time_us += e->dur;
	b->group_of[index] = (int)g;
}

static void on_cast(struct builder *b, struct process *p,
		    const struct trace_event *e, int step)
{
	const struct trace_cast *c = &e->cast;
	bool hit = !strcmp(c->cache, "hit");
	int dir = direction_index(b, c->from, c->to);

	if (hit)
		add(b, &p->hits, step, 1);
	else if (!strcmp(c->cache, "miss"))
		add(b, &p->misses, step, 1);
	else if (!strcmp(c->cache, "uncacheable"))
		add(b, &p->uncacheable, step, 1);
	if (dir >= 0) {
		struct direction_total *d = &p->directions[dir];
		d->hits += hit;
		if (!hit) {
			d->casts++;
			d->bytes += c->bytes;
			d->time_us += e->dur;
			add(b, &p->casts[dir], step, 1);
		}
	}
	if (!hit)
		add(b, &p->cast_bytes, step, (double)c->bytes);
	if (!strcmp(c->cache, "uncacheable")) {
		const char *reason = c->reason ? c->reason : "";
		size_t r = 0;
		while (r < p->nreasons && strcmp(p->reasons[r].reason, reason))
			r++;
		if (r == p->nreasons) {
			p->reasons = grow(b, p->reasons, &p->nreasons,
					  sizeof *p->reasons);
			if (r == p->nreasons)
				return;
			p->reasons[r].reason = reason;
		}
		p->reasons[r].count++;
	}
}

static void on_scope_begin(struct builder *b, struct process *p,
			   struct thread_regions *th, const struct trace_event *e)
{
	const struct trace_scope *sc = &e->scope;
	size_t r = 0;

	while (r < p->nregions &&
	       !(p->regions[r].scope == sc->scope &&
		 p->regions[r].device == sc->device &&
		 p->regions[r].dtype == sc->dtype &&
		 p->regions[r].enabled == sc->enabled &&
		 p->regions[r].depth == sc->depth))
		r++;
	if (r == p->nregions) {
		p->regions = grow(b, p->regions, &p->nregions, sizeof *p->regions);
		if (r == p->nregions)
			return;
		p->regions[r] = (struct region_row){ sc->scope, sc->device,
			sc->dtype, sc->enabled, sc->depth, 0, 0, 0, 0 };
	}
	p->regions[r].entered++;
	if (th->n == th->cap) {
		size_t cap = th->cap ? th->cap * 2 : 8;
		size_t *open = realloc(th->open, cap * sizeof *open);
		if (open)
			th->open = open;
		double *since = realloc(th->since, cap * sizeof *since);
		if (since)
			th->since = since;
		if (!open || !since) {
			b->failed = true;
			return;
		}
		th->cap = cap;
	}
	th->open[th->n] = r;
	th->since[th->n++] = e->ts;
}

static void on_scaler(struct process *p, const struct trace_scaler *s, int step)
{
	p->scaler[step] |= 1;
	if (isfinite(s->scale))
		p->scale[step] = s->scale;
	if (s->found_inf)
		p->scaler[step] |= 2;
	if (s->step_skipped)
		p->scaler[step] |= 4;
}

/* A cast's op ends after it, so its event comes later in the file: the
 * casts are given to their op's group once every op has one. */
static void count_casts_per_group(struct builder *b)
{
	const struct trace *t = b->t;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_CAST || !strcmp(e->cast.cache, "hit"))
			continue;
		const struct trace_event *op = analysis_op(&b->a, e->pid,
							   e->cast.op_id);
		int g = op ? b->group_of[op - t->events] : -1;
		struct process *p = g >= 0 ? process_of(b, e->pid) : NULL;
		if (p) {
			p->groups[g].casts++;
			p->groups[g].cast_bytes += e->cast.bytes;
		}
	}
}

static void tabulate(struct builder *b)
{
	const struct trace *t = b->t;

	for (int k = 0; k < TRACE_DTYPE_COUNT; k++)
		b->dtypes[k] = trace_dtype_names[k];
	b->dtypes[DTYPE_NONE] = "none";
	b->ndtypes = DTYPE_NONE + 1;
	for (size_t i = 0; i < t->nevents; i++)
		b->group_of[i] = -1;
	for (size_t i = 0; i < t->nevents && !b->failed; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_META) {
			if (e->name && !strcmp(e->name, "process_name")) {
				struct process *p = process_of(b, e->pid);
				if (p) {
					p->name = e->meta.value;
					p->rank = e->meta.rank;
				}
			}
			continue;
		}
		if (e->kind != TRACE_OP && e->kind != TRACE_CAST &&
		    e->kind != TRACE_SCALER && e->kind != TRACE_SCOPE_BEGIN &&
		    e->kind != TRACE_SCOPE_END)
			continue;
		struct process *p = process_of(b, e->pid);
		struct thread_regions *th = thread_of(b, e->pid, e->tid);
		int step = b->a.step_of[i];
		if (!p || !th || !p->scale)
			break;
		if (e->kind != TRACE_SCOPE_END && step + 1 > p->nsteps)
			p->nsteps = step + 1;
		switch (e->kind) {
		case TRACE_OP:
			on_op(b, p, i, step);
			count_in_regions(p, th, false);
			break;
		case TRACE_CAST:
			on_cast(b, p, e, step);
			count_in_regions(p, th, true);
			break;
		case TRACE_SCALER:
			on_scaler(p, &e->scaler, step);
			break;
		case TRACE_SCOPE_BEGIN:
			on_scope_begin(b, p, th, e);
			break;
		default: /* TRACE_SCOPE_END */
			if (th->n) {
				th->n--;
				p->regions[th->open[th->n]].time_us +=
					e->ts - th->since[th->n];
			}
			break;
		}
	}
	if (!b->failed)
		count_casts_per_group(b);
}

/* ------------------------------------------------------------- output */

/* Times and bytes to the microsecond's thousandth: shorter JSON, no
 * visible difference. */
static double rounded(double v)
{
	return round(v * 1000) / 1000;
}

static void add_series(cJSON *object, const char *key, const double *values,
		       int n)
{
	cJSON *array = cJSON_AddArrayToObject(object, key);

	for (int s = 0; s < n; s++)
		cJSON_AddItemToArray(array, cJSON_CreateNumber(
			values ? rounded(values[s]) : 0));
}

static void add_string_or_null(cJSON *object, const char *key, const char *s)
{
	if (s)
		cJSON_AddStringToObject(object, key, s);
	else
		cJSON_AddNullToObject(object, key);
}

static void direction_label(const struct builder *b, int d, char *buf,
			    size_t size)
{
	snprintf(buf, size, "%s->%s", b->from[d], b->to[d]);
}

static void emit_process(const struct builder *b, size_t index, cJSON *out)
{
	const struct process *p = &b->procs[index];
	char label[256];
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "pid", (double)p->pid);
	if (p->rank >= 0)
		cJSON_AddNumberToObject(o, "rank", p->rank);
	else
		cJSON_AddNullToObject(o, "rank");
	add_string_or_null(o, "name", p->name);
	cJSON_AddNumberToObject(o, "steps", p->nsteps);
	cJSON *ops = cJSON_AddObjectToObject(o, "ops");
	cJSON *time = cJSON_AddObjectToObject(o, "time_us");
	for (int d = 0; d < b->ndtypes; d++) {
		if (!p->ops[d])
			continue;
		add_series(ops, b->dtypes[d], p->ops[d], p->nsteps);
		add_series(time, b->dtypes[d], p->time_us[d], p->nsteps);
	}
	cJSON *casts = cJSON_AddObjectToObject(o, "casts");
	for (int d = 0; d < b->ndirections; d++) {
		if (!p->casts[d])
			continue;
		direction_label(b, d, label, sizeof label);
		add_series(casts, label, p->casts[d], p->nsteps);
	}
	add_series(o, "cast_bytes", p->cast_bytes, p->nsteps);
	add_series(o, "hits", p->hits, p->nsteps);
	add_series(o, "misses", p->misses, p->nsteps);
	add_series(o, "uncacheable", p->uncacheable, p->nsteps);

	cJSON *scale = cJSON_AddArrayToObject(o, "scale");
	for (int s = 0; s < p->nsteps; s++) {
		if (!(p->scaler[s] & 1))
			continue;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddNumberToObject(x, "step", s);
		if (isfinite(p->scale[s]))
			cJSON_AddNumberToObject(x, "scale", p->scale[s]);
		else
			cJSON_AddNullToObject(x, "scale");
		cJSON_AddBoolToObject(x, "found_inf", p->scaler[s] & 2);
		cJSON_AddBoolToObject(x, "skipped", p->scaler[s] & 4);
		cJSON_AddItemToArray(scale, x);
	}

	cJSON *table = cJSON_AddArrayToObject(o, "op_table");
	for (size_t g = 0; g < p->ngroups; g++) {
		const struct op_group *r = &p->groups[g];
		cJSON *x = cJSON_CreateObject();
		snprintf(label, sizeof label, "p%zu-g%zu", index, g);
		cJSON_AddStringToObject(x, "id", label);
		snprintf(label, sizeof label, "%s%s%s", r->op,
			 r->overload[0] ? "." : "", r->overload);
		cJSON_AddStringToObject(x, "op", label);
		cJSON_AddStringToObject(x, "phase", r->phase);
		cJSON_AddStringToObject(x, "policy", r->policy ? r->policy : "");
		cJSON_AddStringToObject(x, "dtype", r->dtype ? r->dtype : "none");
		cJSON_AddNumberToObject(x, "count", (double)r->count);
		cJSON_AddNumberToObject(x, "time_us", rounded(r->time_us));
		cJSON_AddNumberToObject(x, "casts", (double)r->casts);
		cJSON_AddNumberToObject(x, "cast_bytes", (double)r->cast_bytes);
		cJSON_AddItemToArray(table, x);
	}
	cJSON *directions = cJSON_AddArrayToObject(o, "cast_table");
	for (int d = 0; d < b->ndirections; d++) {
		const struct direction_total *r = &p->directions[d];
		if (!r->casts && !r->hits)
			continue;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "from", b->from[d]);
		cJSON_AddStringToObject(x, "to", b->to[d]);
		cJSON_AddNumberToObject(x, "casts", (double)r->casts);
		cJSON_AddNumberToObject(x, "hits", (double)r->hits);
		cJSON_AddNumberToObject(x, "bytes", (double)r->bytes);
		cJSON_AddNumberToObject(x, "time_us", rounded(r->time_us));
		cJSON_AddItemToArray(directions, x);
	}
	cJSON *reasons = cJSON_AddArrayToObject(o, "reasons");
	for (size_t r = 0; r < p->nreasons; r++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "reason", p->reasons[r].reason);
		cJSON_AddNumberToObject(x, "count", (double)p->reasons[r].count);
		cJSON_AddItemToArray(reasons, x);
	}
	cJSON *regions = cJSON_AddArrayToObject(o, "regions");
	for (size_t r = 0; r < p->nregions; r++) {
		const struct region_row *g = &p->regions[r];
		cJSON *x = cJSON_CreateObject();
		add_string_or_null(x, "scope", g->scope);
		cJSON_AddNumberToObject(x, "depth", g->depth);
		add_string_or_null(x, "device", g->device);
		add_string_or_null(x, "dtype", g->enabled ? g->dtype : "off");
		cJSON_AddNumberToObject(x, "entered", (double)g->entered);
		cJSON_AddNumberToObject(x, "ops", (double)g->ops);
		cJSON_AddNumberToObject(x, "casts", (double)g->casts);
		cJSON_AddNumberToObject(x, "time_us", rounded(g->time_us));
		cJSON_AddItemToArray(regions, x);
	}
	cJSON_AddItemToArray(out, o);
}

static void emit_findings(const struct builder *b, cJSON *root)
{
	const struct trace *t = b->t;
	cJSON *findings = cJSON_AddArrayToObject(root, "findings");
	char label[160];

	for (size_t i = 0; i < b->a.nfindings; i++) {
		const struct finding *f = &b->a.findings[i];
		const struct trace_event *at = &t->events[f->event];
		const struct trace_event *op =
			f->op_id ? analysis_op(&b->a, at->pid, f->op_id) : NULL;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "kind", f->kind);
		cJSON_AddStringToObject(x, "severity",
					finding_severity_name(f->severity));
		cJSON_AddNumberToObject(x, "count", (double)f->count);
		cJSON_AddStringToObject(x, "message", f->message);
		cJSON_AddStringToObject(x, "fix", f->fix ? f->fix : "");
		cJSON_AddNumberToObject(x, "op_id", (double)f->op_id);
		cJSON_AddNumberToObject(x, "tensor", (double)f->tensor);
		cJSON_AddNumberToObject(x, "pid", (double)at->pid);
		cJSON_AddNumberToObject(x, "step", b->a.step_of[f->event]);
		cJSON_AddNullToObject(x, "group");
		if (op) {
			cJSON_ReplaceItemInObject(x, "step", cJSON_CreateNumber(
				b->a.step_of[op - t->events]));
			cJSON_AddStringToObject(x, "op", trace_op_label(
				&op->op, label, sizeof label));
			cJSON_AddStringToObject(x, "phase", op->op.phase);
			int g = b->group_of[op - t->events];
			for (size_t p = 0; p < b->nprocs && g >= 0; p++)
				if (b->procs[p].pid == op->pid) {
					snprintf(label, sizeof label, "p%zu-g%d", p, g);
					cJSON_ReplaceItemInObject(
						x, "group", cJSON_CreateString(label));
				}
		}
		cJSON_AddItemToArray(findings, x);
	}
}

/* The framework the trace comes from: the header's "framework" (a string,
 * or an object with name and version) and optional "framework_version";
 * libamp programs write neither. */
static void emit_framework(const struct trace *t, cJSON *root)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(t->header, "framework");
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(t->header,
							  "framework_version");
	char text[256] = "libamp";

	if (cJSON_IsObject(f)) {
		v = cJSON_GetObjectItemCaseSensitive(f, "version");
		f = cJSON_GetObjectItemCaseSensitive(f, "name");
	}
	if (cJSON_IsString(f) && f->valuestring[0])
		snprintf(text, sizeof text, "%s%s%s", f->valuestring,
			 cJSON_IsString(v) ? " " : "",
			 cJSON_IsString(v) ? v->valuestring : "");
	cJSON_AddStringToObject(root, "framework", text);
}

/* How the program ended, from the trailer. */
static void emit_exit(const struct trace *t, cJSON *root)
{
	const cJSON *exit = cJSON_GetObjectItemCaseSensitive(t->end, "exit");
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(exit, "status");
	const cJSON *code = cJSON_GetObjectItemCaseSensitive(exit, "code");
	const cJSON *signal = cJSON_GetObjectItemCaseSensitive(exit, "signal_name");
	char text[128] = "unknown (the trace has no trailer)";

	if (cJSON_IsString(status) && cJSON_IsNumber(code))
		snprintf(text, sizeof text, "%s with %d", status->valuestring,
			 code->valueint);
	else if (cJSON_IsString(signal))
		snprintf(text, sizeof text, "killed by %s", signal->valuestring);
	else if (cJSON_IsString(status))
		snprintf(text, sizeof text, "%s", status->valuestring);
	cJSON_AddStringToObject(root, "exit", text);
}

static void emit_header(const struct builder *b, cJSON *root)
{
	const struct trace *t = b->t;
	const cJSON *h = t->header;
	const cJSON *v;
	char text[4096] = "";
	size_t len = 0;

	cJSON_AddStringToObject(root, "trace", t->path);
	v = cJSON_GetObjectItemCaseSensitive(h, "generator");
	add_string_or_null(root, "generator", cJSON_IsString(v) ? v->valuestring
								: NULL);
	add_string_or_null(root, "format", t->amptrace ? t->format : NULL);
	emit_framework(t, root);
	v = cJSON_GetObjectItemCaseSensitive(h, "command");
	const cJSON *arg;
	cJSON_ArrayForEach(arg, v)
		if (cJSON_IsString(arg) && len < sizeof text)
			len += (size_t)snprintf(text + len, sizeof text - len,
						"%s%s", len ? " " : "",
						arg->valuestring);
	add_string_or_null(root, "command", len ? text : NULL);
	v = cJSON_GetObjectItemCaseSensitive(h, "host");
	add_string_or_null(root, "host", cJSON_IsString(v) ? v->valuestring : NULL);

	/* devices the ops ran on, "cuda (emulated)" when no GPU ran them */
	cJSON *devices = cJSON_AddArrayToObject(root, "devices");
	double t0 = INFINITY, t1 = 0;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_META)
			continue;
		t0 = fmin(t0, e->ts);
		t1 = fmax(t1, e->ts + e->dur);
		if (e->kind != TRACE_OP || !e->op.device)
			continue;
		snprintf(text, sizeof text, "%s%s", e->op.device,
			 e->op.emulated ? " (emulated)" : "");
		bool seen = false;
		cJSON_ArrayForEach(arg, devices)
			seen |= !strcmp(arg->valuestring, text);
		if (!seen)
			cJSON_AddItemToArray(devices, cJSON_CreateString(text));
	}
	v = cJSON_GetObjectItemCaseSensitive(t->end, "duration_us");
	cJSON_AddNumberToObject(root, "duration_us", rounded(
		cJSON_IsNumber(v) ? v->valuedouble : t1 > t0 ? t1 - t0 : 0));
	emit_exit(t, root);
	cJSON *counts = cJSON_AddObjectToObject(root, "counts");
	cJSON_AddNumberToObject(counts, "events", (double)t->nevents);
	cJSON_AddNumberToObject(counts, "ops", (double)t->counts[TRACE_OP]);
	cJSON_AddNumberToObject(counts, "casts", (double)t->counts[TRACE_CAST]);
	cJSON_AddNumberToObject(counts, "regions",
				(double)t->counts[TRACE_SCOPE_BEGIN]);
	cJSON_AddNumberToObject(counts, "scaler", (double)t->counts[TRACE_SCALER]);
	cJSON_AddNumberToObject(counts, "kernels", (double)t->counts[TRACE_KERNEL]);
	cJSON_AddNumberToObject(counts, "diag", (double)t->counts[TRACE_DIAG]);
	cJSON *steps = cJSON_AddObjectToObject(root, "steps");
	cJSON_AddNumberToObject(steps, "count", b->a.nsteps);
	cJSON_AddStringToObject(steps, "marker", b->a.step_marker);
}

static cJSON *emit(const struct builder *b, struct report_data *data)
{
	cJSON *root = cJSON_CreateObject();

	emit_header(b, root);
	cJSON_AddBoolToObject(root, "truncated", data->truncated);
	add_string_or_null(root, "note", data->note[0] ? data->note : NULL);
	cJSON_AddNumberToObject(root, "graph_step", data->graph_step);
	cJSON *dtypes = cJSON_AddArrayToObject(root, "dtypes");
	for (int d = 0; d < b->ndtypes; d++)
		for (size_t p = 0; p < b->nprocs; p++)
			if (b->procs[p].ops[d]) {
				cJSON_AddItemToArray(dtypes,
					cJSON_CreateString(b->dtypes[d]));
				break;
			}
	cJSON *directions = cJSON_AddArrayToObject(root, "directions");
	for (int d = 0; d < b->ndirections; d++) {
		char label[128];
		direction_label(b, d, label, sizeof label);
		cJSON_AddItemToArray(directions, cJSON_CreateString(label));
	}
	emit_findings(b, root);
	cJSON *processes = cJSON_AddArrayToObject(root, "processes");
	for (size_t p = 0; p < b->nprocs; p++)
		if (b->procs[p].nsteps)
			emit_process(b, p, processes);
	return root;
}

static void builder_free(struct builder *b)
{
	for (size_t i = 0; i < b->nprocs; i++) {
		struct process *p = &b->procs[i];
		for (int d = 0; d < MAX_DTYPES; d++) {
			free(p->ops[d]);
			free(p->time_us[d]);
		}
		for (int d = 0; d < MAX_DIRECTIONS; d++)
			free(p->casts[d]);
		free(p->cast_bytes);
		free(p->hits);
		free(p->misses);
		free(p->uncacheable);
		free(p->scale);
		free(p->scaler);
		free(p->groups);
		free(p->reasons);
		free(p->regions);
	}
	free(b->procs);
	for (size_t i = 0; i < b->nthreads; i++) {
		free(b->threads[i].open);
		free(b->threads[i].since);
	}
	free(b->threads);
	free(b->group_of);
	analysis_free(&b->a);
}

int report_data_load(const char *path, struct report_data *data,
		     char *error, size_t error_size)
{
	struct trace trace;
	struct trace_error err;

	*data = (struct report_data){ 0 };
	if (trace_load(path, &trace, &err) != 0) {
		snprintf(error, error_size, "%s", err.message);
		return -1;
	}
	struct builder b = { .t = &trace };
	b.group_of = malloc((trace.nevents ? trace.nevents : 1) *
			    sizeof *b.group_of);
	b.failed = !b.group_of || analysis_run(&trace, &b.a) != 0;
	data->nsteps = b.a.nsteps;
	/* ampview's default view (view.h, VIEW_STEP_DEFAULT): the second
	 * step when there are several, the first being warm-up. */
	data->graph_step = b.a.nsteps > 1 ? 1 : 0;
	data->truncated = trace.truncated || (trace.amptrace && !trace.finalized);
	if (trace_end_note(&trace, data->note, sizeof data->note))
		data->truncated = true;
	if (!b.failed)
		tabulate(&b);
	if (!b.failed)
		data->json = emit(&b, data);
	builder_free(&b);
	trace_free(&trace);
	if (!data->json) {
		snprintf(error, error_size, "%s: out of memory", path);
		return -1;
	}
	return 0;
}

void report_data_free(struct report_data *data)
{
	cJSON_Delete(data->json);
	data->json = NULL;
}
