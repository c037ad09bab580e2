/* Trace analysis for summary and check (see analyze.h). */
#include "analyze.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- steps */

static int assign_steps(const struct trace *t, struct analysis *a)
{
	if (trace_steps_find(t, &a->steps) != 0)
		return -1;
	a->step_of = a->steps.step_of;
	a->evaluating = a->steps.evaluating;
	a->nsteps = a->steps.nsteps;
	a->step_marker = a->steps.marker;
	return 0;
}

/* ------------------------------------------------------------ findings */

/* The findings engine's results, taken over: they point into nothing the
 * analysis outlives (kinds and fixes are static or interned in the trace). */
static int collect_findings(struct analysis *a)
{
	struct findings computed;
	int status = findings_compute_indexed(&a->index, &computed);

	a->findings = computed.items;
	a->nfindings = computed.count;
	a->finding_occurrences = computed.occurrences;
	a->nfinding_occurrences = computed.noccurrences;
	a->skips = computed.skips;
	a->nskips = computed.nskips;
	if (!rank_findings_fold(a->findings, a->nfindings, &a->ranks,
				&a->listed))
		status = -1;
	return status;
}

/* ---------------------------------------------------------- the cache */

static void count_cache(struct analysis *a, const char *cache, uint64_t n)
{
	if (!strcmp(cache, "hit"))
		a->cache_hits += n;
	else if (!strcmp(cache, "miss"))
		a->cache_misses += n;
	else if (!strcmp(cache, "uncacheable"))
		a->cache_uncacheable += n;
	else if (!strcmp(cache, "disabled"))
		a->cache_disabled += n;
}

/* A step recorded as aggregates counts as its events would (autocast's
 * casts: those of another origin, TRACE_OTHER_CAST's, are not the
 * cache's). */
static void count_aggregate(struct analysis *a, const struct trace_aggregate *g)
{
	for (int k = 0; k < g->ncasts; k++)
		if (!g->casts[k].origin)
			count_cache(a, g->casts[k].cache, g->casts[k].count);
	a->cache_clears += g->cache.clears;
	if (g->cache.max_entries > a->cache_max_entries)
		a->cache_max_entries = g->cache.max_entries;
	if (g->cache.max_bytes > a->cache_max_bytes)
		a->cache_max_bytes = g->cache.max_bytes;
}

/* ---------------------------------------------------------- GradScaler */

/* One GradScaler: a process's scaler id. */
struct scaler_seen {
	int64_t pid;
	uint64_t id;
	int group;      /* its process's rank's (ranks.h) */
	int ordinal;    /* of its process's GradScalers, by first event */
	double final;   /* its last scale; NaN: none seen */
};

struct scalers {
	struct scaler_seen *seen;  /* in the order they first appear */
	size_t count, cap;
	uint64_t *steps, *skipped; /* per rank group */
};

static struct scaler_seen *scaler_of(struct scalers *s,
				     const struct trace_event *e, int group)
{
	int ordinal = 0;

	for (size_t k = 0; k < s->count; k++) {
		if (s->seen[k].pid != e->pid)
			continue;
		if (s->seen[k].id == e->scaler.scaler_id)
			return &s->seen[k];
		ordinal++;
	}
	struct scaler_seen *grown =
		trace_grow(s->seen, &s->cap, s->count + 1, sizeof *grown);
	if (!grown)
		return NULL;
	s->seen = grown;
	s->seen[s->count] = (struct scaler_seen){ e->pid, e->scaler.scaler_id,
						  group, ordinal, NAN };
	return &s->seen[s->count++];
}

static bool is_scaler_step(const struct trace_event *e)
{
	return e->kind == TRACE_SCALER && e->scaler.what &&
	       !strcmp(e->scaler.what, "step");
}

/* Steps, skips and scales, in all and per rank; each GradScaler's last
 * scale.  A skip is a `step` event's, or, where a producer writes no
 * `step` events, whichever says so. */
static int tally_scalers(const struct trace *t, struct analysis *a,
			 struct scalers *s)
{
	bool with_step = false;

	for (size_t i = 0; i < t->nevents && !with_step; i++)
		with_step = is_scaler_step(&t->events[i]);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_SCALER)
			continue;
		int group = trace_ranks_group(&a->ranks, e->pid);
		struct scaler_seen *seen = scaler_of(s, e, group);
		if (!seen)
			return -1;
		bool is_step = is_scaler_step(e);
		a->scaler_steps += is_step;
		s->steps[group] += is_step;
		if (e->scaler.step_skipped && (is_step || !with_step)) {
			a->skipped_steps++;
			s->skipped[group]++;
			if (a->first_skipped_step < 0)
				a->first_skipped_step = a->step_of[i];
		}
		double scale = e->scaler.scale;
		if (!isfinite(scale))
			continue;
		seen->final = scale;
		if (isnan(a->scale_min) || scale < a->scale_min)
			a->scale_min = scale;
		if (isnan(a->scale_max) || scale > a->scale_max)
			a->scale_max = scale;
	}
	return 0;
}

/* The process the history follows: the first of the lowest rank that
 * has a GradScaler.  A job's ranks' GradScalers are replicas, which one
 * stands for; a process's own (a GAN's two) are not: the history and
 * the skips are all of its process's, as for a trace of one process.
 * Of the other processes' GradScalers, how many end at another scale
 * than the followed process's of the same order. */
static const struct scaler_seen *follow_one(const struct scalers *s,
					    struct analysis *a)
{
	const struct scaler_seen *one = NULL;

	for (size_t k = 0; k < s->count; k++)
		if (!one || s->seen[k].group < one->group)
			one = &s->seen[k];
	a->nscalers = (int)s->count;
	if (!one)
		return NULL;
	for (size_t k = 0; k < s->count; k++) {
		const struct scaler_seen *other = &s->seen[k], *mine = NULL;
		if (other->pid == one->pid) {
			a->nscalers_followed++;
			continue;
		}
		for (size_t j = 0; j < s->count && !mine; j++)
			if (s->seen[j].pid == one->pid &&
			    s->seen[j].ordinal == other->ordinal)
				mine = &s->seen[j];
		if (!mine || !(other->final == mine->final ||
			       (isnan(other->final) && isnan(mine->final))))
			a->nscalers_ending_apart++;
	}
	a->history_pid = one->pid;
	return one;
}

/* Each change of the followed process's scale, and its last. */
static int record_history(const struct trace *t, struct analysis *a,
			  const struct scaler_seen *one)
{
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_SCALER || e->pid != one->pid ||
		    !isfinite(e->scaler.scale) || e->scaler.scale == a->scale_final)
			continue;
		struct scale_change *grown = realloc(
			a->scale_history, (a->nscale_history + 1) * sizeof *grown);
		if (!grown)
			return -1;
		a->scale_history = grown;
		a->scale_history[a->nscale_history++] = (struct scale_change){
			e->ts, e->scaler.scale, a->step_of[i], e->scaler.found_inf
		};
		a->scale_final = e->scaler.scale;
	}
	return 0;
}

static int count_scalers(const struct trace *t, struct analysis *a)
{
	size_t n = (size_t)a->ranks.ngroups;
	struct scalers s = { .steps = calloc(n, sizeof *s.steps),
			     .skipped = calloc(n, sizeof *s.skipped) };
	int status = -1;

	if (s.steps && s.skipped && tally_scalers(t, a, &s) == 0) {
		for (size_t g = 0; g < n; g++) {
			if (s.steps[g] > a->rank_scaler_steps)
				a->rank_scaler_steps = s.steps[g];
			if (s.skipped[g] > a->rank_skipped_steps)
				a->rank_skipped_steps = s.skipped[g];
		}
		const struct scaler_seen *one = follow_one(&s, a);
		status = one ? record_history(t, a, one) : 0;
	}
	free(s.seen);
	free(s.steps);
	free(s.skipped);
	return status;
}

/* ------------------------------------------------------------- ranks */

/* How many steps each rank trains in, where more than one does (summary:
 * "steps: 6 on each of 2 ranks"). */
static int count_rank_steps(const struct trace *t, struct analysis *a)
{
	const struct trace_ranks *r = &a->ranks;

	if (trace_ranks_count(r) < 2)
		return 0;
	int *steps = calloc((size_t)r->ngroups, sizeof *steps);
	if (!steps)
		return -1;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (a->step_of[i] < 0 || !trace_steps_trains(e, a->evaluating[i]))
			continue;
		int g = trace_ranks_group(r, e->pid);
		if (r->rank_of_group[g] >= 0 && a->step_of[i] >= steps[g])
			steps[g] = a->step_of[i] + 1;
	}
	for (int g = 0; g < r->ngroups; g++) {
		if (!steps[g])
			continue;
		if (!a->ranks_training || steps[g] < a->rank_steps_least)
			a->rank_steps_least = steps[g];
		if (steps[g] > a->rank_steps_most)
			a->rank_steps_most = steps[g];
		a->ranks_training++;
	}
	if (a->ranks_training < 2)
		a->ranks_training = a->rank_steps_least = a->rank_steps_most = 0;
	free(steps);
	return 0;
}

/* -------------------------------------------------------------- public */

int analysis_run(const struct trace *t, struct analysis *a)
{
	*a = (struct analysis){ .trace = t, .first_skipped_step = -1,
				.scale_min = NAN, .scale_max = NAN,
				.scale_final = NAN };
	if (trace_index_build(t, &a->index) != 0 || assign_steps(t, a) != 0)
		return -1;
	if (!trace_ranks_find(t, &a->ranks) || count_scalers(t, a) != 0 ||
	    count_rank_steps(t, a) != 0)
		return -1;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		switch (e->kind) {
		case TRACE_OP:
			a->names_modules |= e->op.module != NULL;
			break;
		case TRACE_CAST:
			count_cache(a, e->cast.cache, 1);
			a->names_modules |= e->cast.module != NULL;
			break;
		case TRACE_CACHE_CLEAR:
			a->cache_clears++;
			break;
		case TRACE_AGGREGATE:
			count_aggregate(a, &e->aggregate);
			break;
		case TRACE_COUNTER:
			if (!strcmp(e->name, "autocast cache"))
				for (int s = 0; s < e->counter.nseries; s++) {
					uint64_t v = (uint64_t)e->counter.value[s];
					if (!strcmp(e->counter.series[s], "entries") &&
					    v > a->cache_max_entries)
						a->cache_max_entries = v;
					if (!strcmp(e->counter.series[s], "bytes") &&
					    v > a->cache_max_bytes)
						a->cache_max_bytes = v;
				}
			break;
		default:
			break;
		}
	}
	return collect_findings(a);
}

void analysis_free(struct analysis *a)
{
	trace_steps_free(&a->steps);
	trace_ranks_free(&a->ranks);
	free(a->scale_history);
	free(a->findings);
	rank_findings_free(&a->listed);
	free(a->finding_occurrences);
	free(a->skips);
	trace_index_free(&a->index);
	*a = (struct analysis){ 0 };
}

const struct trace_event *analysis_op(const struct analysis *a, int64_t pid,
				      uint64_t op_id)
{
	return trace_index_op(&a->index, pid, op_id);
}

const char *analysis_output_dtype(const struct trace_op *op)
{
	return op->noutputs > 0 ? op->outputs[0].info->dtype : NULL;
}

bool analysis_op_in_scope(const struct trace_op *op, const char *scope)
{
	for (int i = 0; i < op->autocast->nscopes; i++)
		if (!fnmatch(scope, op->autocast->scopes[i], 0))
			return true;
	return op->autocast->scope && !fnmatch(scope, op->autocast->scope, 0);
}

/* Whether module[0..len) matches `glob` part by part: a '*' or '?'
 * stays within one dot-separated part, as a path's '/' does with
 * FNM_PATHNAME, so "*fc1" is an outermost module, never "blocks.0.fc1". */
static bool parts_match(const char *glob, const char *module, size_t len)
{
	char glob_part[256], module_part[256];

	for (;;) {
		size_t g = strcspn(glob, ".");
		size_t m = 0;
		while (m < len && module[m] != '.')
			m++;
		if (g >= sizeof glob_part || m >= sizeof module_part) {
			if (g != m || strncmp(glob, module, g))
				return false;   /* too long for a pattern */
		} else {
			memcpy(glob_part, glob, g);
			glob_part[g] = '\0';
			memcpy(module_part, module, m);
			module_part[m] = '\0';
			if (fnmatch(glob_part, module_part, 0))
				return false;
		}
		if (!glob[g] || m == len)
			return !glob[g] && m == len;
		glob += g + 1;
		module += m + 1;
		len -= m + 1;
	}
}

/* Whether module[0..len) matches `glob` as a whole: '*' crosses dots. */
static bool whole_match(const char *glob, const char *module, size_t len)
{
	char buffer[512];
	char *path = len < sizeof buffer ? buffer : malloc(len + 1);

	if (!path)
		return false;
	memcpy(path, module, len);
	path[len] = '\0';
	bool match = !fnmatch(glob, path, 0);
	if (path != buffer)
		free(path);
	return match;
}

static bool in_module(const char *module, const char *glob, bool by_part)
{
	if (!module)
		return false;
	/* the module, then each one it is inside, outermost last; a name
	 * is itself before it is a pattern (a ModuleDict key may hold
	 * '*' or '[') */
	for (size_t len = strlen(module);;) {
		if ((strlen(glob) == len && !strncmp(module, glob, len)) ||
		    (by_part ? parts_match(glob, module, len)
			     : whole_match(glob, module, len)))
			return true;
		while (len && module[len - 1] != '.')
			len--;
		if (!len)
			return false;
		len--;
	}
}

bool analysis_in_module(const char *module, const char *glob)
{
	return in_module(module, glob, false);
}

bool analysis_in_module_by_part(const char *module, const char *glob)
{
	return in_module(module, glob, true);
}

size_t analysis_module_prefix(const char *module, int depth)
{
	size_t len = 0;

	for (int part = 0; module[len] && part < depth; part++) {
		if (part)
			len++; /* the dot */
		len += strcspn(module + len, ".");
	}
	return len;
}

int analysis_path_depth(const char *module, size_t len)
{
	int parts = len != 0;

	for (size_t i = 0; i < len; i++)
		parts += module[i] == '.';
	return parts;
}

int analysis_module_depth(const char *module)
{
	return analysis_path_depth(module, strlen(module));
}

const char *analysis_new_module(const char *module, const char **last)
{
	if (!module || module == *last)
		return NULL;
	*last = module;
	return module;
}

const char *analysis_module_class(const struct trace *t, const char *module,
				  size_t len)
{
	const char *last = NULL;

	for (size_t i = 0; i < t->nevents; i++) {
		if (t->events[i].kind != TRACE_OP)
			continue;
		const struct trace_op *op = &t->events[i].op;
		const char *path = analysis_new_module(op->module, &last);
		if (path && op->module_class && strlen(path) == len &&
		    !strncmp(path, module, len))
			return op->module_class;
	}
	return NULL;
}

int analysis_dtype_index(const char *dtype)
{
	for (int d = 0; dtype && d < TRACE_DTYPE_COUNT; d++)
		if (!strcmp(dtype, trace_dtype_names[d]))
			return d;
	return -1;
}

bool analysis_cast_in_scope(const struct analysis *a,
			    const struct trace_event *cast, const char *scope)
{
	const struct trace_event *op = analysis_op(a, cast->pid, cast->cast.op_id);

	if (op)
		return analysis_op_in_scope(&op->op, scope);
	return cast->cast.scope && !fnmatch(scope, cast->cast.scope, 0);
}
