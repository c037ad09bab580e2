/* The report's aggregates (see report_agg.h).  Everything is per process:
 * a merged trace's ranks are shown one at a time.  Series are arrays
 * indexed by step, allocated on first use, so a process pays only for
 * the dtypes and directions it has. */
#include "report_agg.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DTYPES 16
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
	bool opens;             /* the page opens on the first such */
	int nsteps;             /* steps that hold its events */
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
	/* regions entered in its steps recorded as aggregates, whose rows
	 * count them but name none */
	uint64_t aggregated_regions;
};

/* Regions open on one thread (begun, not yet ended). */
struct thread_regions {
	int64_t pid, tid;
	size_t *open;
	double *since;
	size_t n, cap;
};

struct report_agg {
	int nsteps;
	bool failed;
	const char *dtypes[MAX_DTYPES]; /* the last slot: "none" */
	int ndtypes;
	const char *from[MAX_DIRECTIONS], *to[MAX_DIRECTIONS];
	int ndirections;
	struct process *procs;
	size_t nprocs;
	struct thread_regions *threads;
	size_t nthreads;
};

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static void *grow(struct report_agg *agg, void *array, size_t *n, size_t elem)
{
	char *grown = agg->failed ? NULL : realloc(array, (*n + 1) * elem);

	if (!grown) {
		agg->failed = true;
		return array;
	}
	memset(grown + *n * elem, 0, elem);
	(*n)++;
	return grown;
}

static void add(struct report_agg *agg, double **series, int step, double value)
{
	if (!*series && !agg->failed) {
		*series = calloc((size_t)agg->nsteps, sizeof **series);
		agg->failed = !*series;
	}
	if (*series)
		(*series)[step] += value;
}

/* "none" (no output) is the last slot, so that it is listed last. */
static int dtype_index(struct report_agg *agg, const char *dtype)
{
	if (!dtype)
		return MAX_DTYPES - 1;
	for (int i = 0; i < agg->ndtypes; i++)
		if (same(agg->dtypes[i], dtype))
			return i;
	if (agg->ndtypes == MAX_DTYPES - 1)
		return MAX_DTYPES - 1;
	agg->dtypes[agg->ndtypes] = dtype;
	return agg->ndtypes++;
}

static int direction_index(struct report_agg *agg, const char *from,
			   const char *to)
{
	for (int i = 0; i < agg->ndirections; i++)
		if (same(agg->from[i], from) && same(agg->to[i], to))
			return i;
	if (agg->ndirections == MAX_DIRECTIONS)
		return -1;
	agg->from[agg->ndirections] = from;
	agg->to[agg->ndirections] = to;
	return agg->ndirections++;
}

static struct process *process_of(struct report_agg *agg, int64_t pid)
{
	for (size_t i = 0; i < agg->nprocs; i++)
		if (agg->procs[i].pid == pid)
			return &agg->procs[i];
	size_t n = agg->nprocs;
	agg->procs = grow(agg, agg->procs, &agg->nprocs, sizeof *agg->procs);
	if (agg->nprocs == n)
		return NULL;
	struct process *p = &agg->procs[n];
	p->pid = pid;
	p->rank = -1;
	p->scale = malloc((size_t)agg->nsteps * sizeof *p->scale);
	p->scaler = calloc((size_t)agg->nsteps, 1);
	if (!p->scale || !p->scaler) {
		agg->failed = true;
		return NULL;
	}
	for (int s = 0; s < agg->nsteps; s++)
		p->scale[s] = NAN;
	return p;
}

/* The process of a record in step `step`, which it then covers. */
static struct process *process_at(struct report_agg *agg, int64_t pid,
				  int step)
{
	struct process *p = step >= 0 && step < agg->nsteps
				    ? process_of(agg, pid) : NULL;

	if (p && step + 1 > p->nsteps)
		p->nsteps = step + 1;
	return p;
}

static struct thread_regions *thread_of(struct report_agg *agg, int64_t pid,
					int64_t tid)
{
	for (size_t i = 0; i < agg->nthreads; i++)
		if (agg->threads[i].pid == pid && agg->threads[i].tid == tid)
			return &agg->threads[i];
	size_t n = agg->nthreads;
	agg->threads = grow(agg, agg->threads, &agg->nthreads,
			    sizeof *agg->threads);
	if (agg->nthreads == n)
		return NULL;
	agg->threads[n].pid = pid;
	agg->threads[n].tid = tid;
	return &agg->threads[n];
}

/* Counts an op or cast once in each distinct region open around it. */
static void count_in_regions(struct report_agg *agg, struct process *p,
			     int64_t tid, bool cast)
{
	const struct thread_regions *th = thread_of(agg, p->pid, tid);

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

struct report_agg *report_agg_new(int nsteps, const char *const *dtype_order)
{
	struct report_agg *agg = calloc(1, sizeof *agg);

	if (!agg)
		return NULL;
	agg->nsteps = nsteps > 0 ? nsteps : 1;
	for (int i = 0; dtype_order && dtype_order[i] && i < MAX_DTYPES - 1; i++)
		agg->dtypes[agg->ndtypes++] = dtype_order[i];
	agg->dtypes[MAX_DTYPES - 1] = "none";
	return agg;
}

void report_agg_free(struct report_agg *agg)
{
	if (!agg)
		return;
	for (size_t i = 0; i < agg->nprocs; i++) {
		struct process *p = &agg->procs[i];
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
	free(agg->procs);
	for (size_t i = 0; i < agg->nthreads; i++) {
		free(agg->threads[i].open);
		free(agg->threads[i].since);
	}
	free(agg->threads);
	free(agg);
}

bool report_agg_failed(const struct report_agg *agg)
{
	return agg->failed;
}

void report_agg_process(struct report_agg *agg, int64_t pid, int rank,
			const char *name)
{
	struct process *p = process_of(agg, pid);

	if (p) {
		p->rank = rank;
		p->name = name;
	}
}

void report_agg_process_opens(struct report_agg *agg, int64_t pid)
{
	struct process *p = process_of(agg, pid);

	if (p)
		p->opens = true;
}

int report_agg_op(struct report_agg *agg, const struct report_op *op)
{
	struct process *p = process_at(agg, op->pid, op->step);
	int d = dtype_index(agg, op->dtype);

	if (!p)
		return -1;
	add(agg, &p->ops[d], op->step, (double)op->count);
	if (op->top_level)
		add(agg, &p->time_us[d], op->step, op->dur_us);
	if (!op->aggregated)
		count_in_regions(agg, p, op->tid, false);
	size_t g = 0;
	while (g < p->ngroups &&
	       !(same(p->groups[g].op, op->op) &&
		 same(p->groups[g].overload, op->overload) &&
		 same(p->groups[g].phase, op->phase) &&
		 same(p->groups[g].policy, op->policy) &&
		 same(p->groups[g].dtype, op->dtype)))
		g++;
	if (g == p->ngroups) {
		p->groups = grow(agg, p->groups, &p->ngroups, sizeof *p->groups);
		if (g == p->ngroups)
			return -1;
		p->groups[g] = (struct op_group){ op->op, op->overload,
			op->phase, op->policy, op->dtype, 0, 0, 0, 0 };
	}
	p->groups[g].count += op->count;
	p->groups[g].time_us += op->dur_us;
	return (int)g;
}

static void count_reason(struct report_agg *agg, struct process *p,
			 const char *reason, size_t count)
{
	size_t r = 0;

	while (r < p->nreasons && !same(p->reasons[r].reason, reason))
		r++;
	if (r == p->nreasons) {
		p->reasons = grow(agg, p->reasons, &p->nreasons,
				  sizeof *p->reasons);
		if (r == p->nreasons)
			return;
		p->reasons[r].reason = reason;
	}
	p->reasons[r].count += count;
}

void report_agg_cast(struct report_agg *agg, const struct report_cast *c)
{
	struct process *p = process_at(agg, c->pid, c->step);
	bool hit = same(c->cache, "hit");
	int dir = direction_index(agg, c->from, c->to);

	double n = (double)c->count;
	if (!p)
		return;
	if (hit)
		add(agg, &p->hits, c->step, n);
	else if (same(c->cache, "miss"))
		add(agg, &p->misses, c->step, n);
	else if (same(c->cache, "uncacheable"))
		add(agg, &p->uncacheable, c->step, n);
	if (!hit)
		add(agg, &p->cast_bytes, c->step, (double)c->bytes);
	if (dir >= 0) {
		struct direction_total *d = &p->directions[dir];
		d->hits += hit ? c->count : 0;
		if (!hit) {
			d->casts += c->count;
			d->bytes += c->bytes;
			d->time_us += c->dur_us;
			add(agg, &p->casts[dir], c->step, n);
		}
	}
	if (same(c->cache, "uncacheable"))
		count_reason(agg, p, c->reason ? c->reason
					       : "(not recorded: steps without "
						 "full detail)", c->count);
	if (!c->aggregated)
		count_in_regions(agg, p, c->tid, true);
}

void report_agg_cast_for_group(struct report_agg *agg, int64_t pid, int group,
			       uint64_t bytes)
{
	struct process *p = process_of(agg, pid);

	if (p && group >= 0 && (size_t)group < p->ngroups) {
		p->groups[group].casts++;
		p->groups[group].cast_bytes += bytes;
	}
}

void report_agg_casts_for_op(struct report_agg *agg, int64_t pid,
			     const char *op, size_t count, uint64_t bytes)
{
	struct process *p = process_of(agg, pid);
	size_t found = (size_t)-1;

	for (size_t g = 0; p && g < p->ngroups; g++)
		if (same(p->groups[g].op, op) &&
		    (found == (size_t)-1 || same(p->groups[g].phase, "forward")))
			found = g;
	if (found != (size_t)-1) {
		p->groups[found].casts += count;
		p->groups[found].cast_bytes += bytes;
	}
}

void report_agg_scaler(struct report_agg *agg, int64_t pid, int step,
		       double scale, bool found_inf, bool skipped)
{
	struct process *p = process_at(agg, pid, step);

	if (!p)
		return;
	p->scaler[step] |= 1;
	if (isfinite(scale))
		p->scale[step] = scale;
	if (found_inf)
		p->scaler[step] |= 2;
	if (skipped)
		p->scaler[step] |= 4;
}

void report_agg_aggregated_regions(struct report_agg *agg, int64_t pid,
				   int step, uint64_t entered)
{
	struct process *p = process_at(agg, pid, step);

	if (p)
		p->aggregated_regions += entered;
}

void report_agg_region_begin(struct report_agg *agg,
			     const struct report_region *sc)
{
	struct process *p = process_at(agg, sc->pid, sc->step);
	struct thread_regions *th = thread_of(agg, sc->pid, sc->tid);
	size_t r = 0;

	if (!p || !th)
		return;
	while (r < p->nregions &&
	       !(same(p->regions[r].scope, sc->scope) &&
		 same(p->regions[r].device, sc->device) &&
		 same(p->regions[r].dtype, sc->dtype) &&
		 p->regions[r].enabled == sc->enabled &&
		 p->regions[r].depth == sc->depth))
		r++;
	if (r == p->nregions) {
		p->regions = grow(agg, p->regions, &p->nregions, sizeof *p->regions);
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
			agg->failed = true;
			return;
		}
		th->cap = cap;
	}
	th->open[th->n] = r;
	th->since[th->n++] = sc->ts_us;
}

void report_agg_region_end(struct report_agg *agg, int64_t pid, int64_t tid,
			   double ts_us)
{
	struct thread_regions *th = thread_of(agg, pid, tid);
	struct process *p = process_of(agg, pid);

	if (th && p && th->n) {
		th->n--;
		p->regions[th->open[th->n]].time_us += ts_us - th->since[th->n];
	}
}

/* Ops that keep training going but are not what a mixed-precision
 * question is about: reading a value, zeroing and accumulating gradients,
 * copies and fresh buffers.  Those no cast was made for, and every op of
 * phase other (data, initialisation), are folded into one row after the
 * others: the table leads with where the casts and the time go. */
static const char *const bookkeeping_ops[] = {
	"item", "_local_scalar_dense", "add_", "zero_", "fill_", "copy_",
	"detach", "detach_", "clone", "zeros", "zeros_like", "empty",
	"empty_like", "ones_like", "full", "lift_fresh", "set_", "resize_",
	NULL,
};

static bool is_bookkeeping(const struct op_group *g)
{
	if (g->casts)
		return false;
	if (same(g->phase, "other"))
		return true;
	for (int k = 0; bookkeeping_ops[k]; k++)
		if (same(g->op, bookkeeping_ops[k]))
			return true;
	return false;
}

void report_agg_group_id(const struct report_agg *agg, int64_t pid, int group,
			 char *buf, size_t size)
{
	for (size_t i = 0; i < agg->nprocs; i++) {
		const struct process *p = &agg->procs[i];
		if (p->pid != pid)
			continue;
		if (group >= 0 && (size_t)group < p->ngroups &&
		    is_bookkeeping(&p->groups[group]))
			snprintf(buf, size, "p%zu-bookkeeping", i);
		else
			snprintf(buf, size, "p%zu-g%d", i, group);
		return;
	}
	snprintf(buf, size, "none");
}

/* ------------------------------------------------------------- output */

/* Times and bytes to the thousandth: shorter JSON, no visible change. */
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

static void direction_label(const struct report_agg *agg, int d, char *buf,
			    size_t size)
{
	snprintf(buf, size, "%s->%s", agg->from[d], agg->to[d]);
}

static void emit_series(const struct report_agg *agg,
			const struct process *p, cJSON *o)
{
	char label[256];
	cJSON *ops = cJSON_AddObjectToObject(o, "ops");
	cJSON *time = cJSON_AddObjectToObject(o, "time_us");

	for (int d = 0; d < MAX_DTYPES; d++) {
		if (!p->ops[d])
			continue;
		add_series(ops, agg->dtypes[d], p->ops[d], p->nsteps);
		add_series(time, agg->dtypes[d], p->time_us[d], p->nsteps);
	}
	cJSON *casts = cJSON_AddObjectToObject(o, "casts");
	for (int d = 0; d < agg->ndirections; d++) {
		if (!p->casts[d])
			continue;
		direction_label(agg, d, label, sizeof label);
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
}

/* The bookkeeping ops' one row: every name in it (the page's filter
 * finds them), their counts and time summed. */
static void emit_bookkeeping(const struct process *p, size_t index,
			     cJSON *table)
{
	char label[1024] = "bookkeeping:", id[64];
	size_t used = strlen(label), count = 0;
	double time_us = 0;

	for (size_t g = 0; g < p->ngroups; g++) {
		const struct op_group *r = &p->groups[g];
		if (!is_bookkeeping(r))
			continue;
		if (used < sizeof label)
			used += (size_t)snprintf(label + used, sizeof label - used,
						 "%s %s%s%s", count ? "," : "",
						 r->op, r->overload && r->overload[0]
						 ? "." : "",
						 r->overload ? r->overload : "");
		count += r->count;
		time_us += r->time_us;
	}
	if (!count)
		return;
	cJSON *x = cJSON_CreateObject();
	snprintf(id, sizeof id, "p%zu-bookkeeping", index);
	cJSON_AddStringToObject(x, "id", id);
	cJSON_AddStringToObject(x, "op", label);
	cJSON_AddStringToObject(x, "phase", "");
	cJSON_AddStringToObject(x, "policy", "");
	cJSON_AddStringToObject(x, "dtype", "");
	cJSON_AddNumberToObject(x, "count", (double)count);
	cJSON_AddNumberToObject(x, "time_us", rounded(time_us));
	cJSON_AddNumberToObject(x, "casts", 0);
	cJSON_AddNumberToObject(x, "cast_bytes", 0);
	cJSON_AddBoolToObject(x, "folded", true);
	cJSON_AddItemToArray(table, x);
}

static void emit_tables(const struct report_agg *agg, size_t index, cJSON *o)
{
	const struct process *p = &agg->procs[index];
	char label[256];
	cJSON *table = cJSON_AddArrayToObject(o, "op_table");

	for (size_t g = 0; g < p->ngroups; g++) {
		const struct op_group *r = &p->groups[g];
		if (is_bookkeeping(r))
			continue;
		cJSON *x = cJSON_CreateObject();
		snprintf(label, sizeof label, "p%zu-g%zu", index, g);
		cJSON_AddStringToObject(x, "id", label);
		snprintf(label, sizeof label, "%s%s%s", r->op,
			 r->overload && r->overload[0] ? "." : "",
			 r->overload ? r->overload : "");
		cJSON_AddStringToObject(x, "op", label);
		cJSON_AddStringToObject(x, "phase", r->phase ? r->phase : "");
		cJSON_AddStringToObject(x, "policy", r->policy ? r->policy : "");
		cJSON_AddStringToObject(x, "dtype", r->dtype ? r->dtype : "none");
		cJSON_AddNumberToObject(x, "count", (double)r->count);
		cJSON_AddNumberToObject(x, "time_us", rounded(r->time_us));
		cJSON_AddNumberToObject(x, "casts", (double)r->casts);
		cJSON_AddNumberToObject(x, "cast_bytes", (double)r->cast_bytes);
		cJSON_AddItemToArray(table, x);
	}
	emit_bookkeeping(p, index, table);
	cJSON *directions = cJSON_AddArrayToObject(o, "cast_table");
	for (int d = 0; d < agg->ndirections; d++) {
		const struct direction_total *r = &p->directions[d];
		if (!r->casts && !r->hits)
			continue;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "from", agg->from[d]);
		cJSON_AddStringToObject(x, "to", agg->to[d]);
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
	cJSON_AddNumberToObject(o, "regions_aggregated",
				(double)p->aggregated_regions);
}

void report_agg_json(const struct report_agg *agg, cJSON *root)
{
	char label[256];
	cJSON *dtypes = cJSON_AddArrayToObject(root, "dtypes");

	for (int d = 0; d < MAX_DTYPES; d++)
		for (size_t p = 0; p < agg->nprocs; p++)
			if (agg->procs[p].ops[d]) {
				cJSON_AddItemToArray(dtypes,
					cJSON_CreateString(agg->dtypes[d]));
				break;
			}
	cJSON *directions = cJSON_AddArrayToObject(root, "directions");
	for (int d = 0; d < agg->ndirections; d++) {
		direction_label(agg, d, label, sizeof label);
		cJSON_AddItemToArray(directions, cJSON_CreateString(label));
	}
	cJSON *processes = cJSON_AddArrayToObject(root, "processes");
	int listed = 0, opens = -1;
	for (size_t i = 0; i < agg->nprocs; i++) {
		const struct process *p = &agg->procs[i];
		if (!p->nsteps)
			continue; /* named, but recorded nothing */
		if (p->opens && opens < 0)
			opens = listed;
		listed++;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "pid", (double)p->pid);
		if (p->rank >= 0)
			cJSON_AddNumberToObject(o, "rank", p->rank);
		else
			cJSON_AddNullToObject(o, "rank");
		add_string_or_null(o, "name", p->name);
		cJSON_AddNumberToObject(o, "steps", p->nsteps);
		emit_series(agg, p, o);
		emit_tables(agg, i, o);
		cJSON_AddItemToArray(processes, o);
	}
	/* the process the page opens on: of the group ampview's graph
	 * shows (ranks.h: the first rank that trains, else the first
	 * process without a rank that does; an mp.spawn parent that ran
	 * the model once before spawning its ranks is not it) */
	cJSON_AddNumberToObject(root, "opens", opens >= 0 ? opens : 0);
}
