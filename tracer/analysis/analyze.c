/* Trace analysis for summary and check (see analyze.h). */
#include "analyze.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* -------------------------------------------------------------- steps */

struct marker {
	int64_t pid;
	double ts;
};

static int compare_markers(const void *a, const void *b)
{
	const struct marker *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Markers of `pid` with ts < `ts` (or <= when `inclusive`). */
static size_t markers_before(const struct marker *m, size_t n, int64_t pid,
			     double ts, bool inclusive)
{
	size_t lo = 0, hi = n;

	/* first marker of pid */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = lo;
	hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m[mid].pid < pid ||
		    (m[mid].pid == pid &&
		     (inclusive ? m[mid].ts <= ts : m[mid].ts < ts)))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo - first;
}

static int assign_steps(const struct trace *t, struct analysis *a)
{
	struct marker *markers = NULL;
	size_t n = 0, cap = 0;
	bool updates = false, regions = false;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_SCALER && e->scaler.what &&
		    !strcmp(e->scaler.what, "update"))
			updates = true;
		if (e->kind == TRACE_SCOPE_BEGIN && e->scope.depth == 1)
			regions = true;
	}
	a->step_marker = updates ? "scaler update" : regions ? "autocast region"
							     : "none";
	a->step_of = calloc(t->nevents ? t->nevents : 1, sizeof *a->step_of);
	if (!a->step_of)
		return -1;
	for (size_t i = 0; i < t->nevents && (updates || regions); i++) {
		const struct trace_event *e = &t->events[i];
		bool marker = updates ? e->kind == TRACE_SCALER && e->scaler.what &&
						!strcmp(e->scaler.what, "update")
				      : e->kind == TRACE_SCOPE_BEGIN &&
						e->scope.depth == 1;
		if (!marker)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			struct marker *grown = realloc(markers, cap * sizeof *grown);
			if (!grown) {
				free(markers);
				return -1;
			}
			markers = grown;
		}
		markers[n++] = (struct marker){ e->pid, e->ts };
	}
	trace_sort(markers, n, sizeof *markers, compare_markers);
	a->nsteps = t->nevents ? 1 : 0;
	for (size_t i = 0; i < t->nevents && n; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_META)
			continue;
		size_t before = markers_before(markers, n, e->pid, e->ts, regions &&
								      !updates);
		int step = updates ? (int)before : before ? (int)before - 1 : 0;
		a->step_of[i] = step;
		if (step + 1 > a->nsteps &&
		    (e->kind == TRACE_OP || e->kind == TRACE_CAST ||
		     e->kind == TRACE_SCALER || e->kind == TRACE_SCOPE_BEGIN))
			a->nsteps = step + 1;
	}
	free(markers);
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
	return status;
}

/* -------------------------------------------------------------- public */

int analysis_run(const struct trace *t, struct analysis *a)
{
	*a = (struct analysis){ .trace = t, .first_skipped_step = -1,
				.scale_min = NAN, .scale_max = NAN,
				.scale_final = NAN };
	if (trace_index_build(t, &a->index) != 0 || assign_steps(t, a) != 0)
		return -1;
	uint64_t scaler_events_with_step = 0;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_SCALER && e->scaler.what &&
		    !strcmp(e->scaler.what, "step"))
			scaler_events_with_step++;
	}
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		switch (e->kind) {
		case TRACE_CAST:
			if (!strcmp(e->cast.cache, "hit"))
				a->cache_hits++;
			else if (!strcmp(e->cast.cache, "miss"))
				a->cache_misses++;
			else if (!strcmp(e->cast.cache, "uncacheable"))
				a->cache_uncacheable++;
			else if (!strcmp(e->cast.cache, "disabled"))
				a->cache_disabled++;
			break;
		case TRACE_CACHE_CLEAR:
			a->cache_clears++;
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
		case TRACE_SCALER: {
			const struct trace_scaler *s = &e->scaler;
			bool is_step = s->what && !strcmp(s->what, "step");
			if (is_step)
				a->scaler_steps++;
			if (s->step_skipped &&
			    (is_step || !scaler_events_with_step)) {
				a->skipped_steps++;
				if (a->first_skipped_step < 0)
					a->first_skipped_step = a->step_of[i];
			}
			if (isfinite(s->scale)) {
				if (isnan(a->scale_final) || s->scale != a->scale_final) {
					struct scale_change *grown = realloc(
						a->scale_history,
						(a->nscale_history + 1) * sizeof *grown);
					if (!grown)
						return -1;
					a->scale_history = grown;
					a->scale_history[a->nscale_history++] =
						(struct scale_change){
							e->ts, s->scale,
							a->step_of[i], s->found_inf
						};
				}
				a->scale_final = s->scale;
				if (isnan(a->scale_min) || s->scale < a->scale_min)
					a->scale_min = s->scale;
				if (isnan(a->scale_max) || s->scale > a->scale_max)
					a->scale_max = s->scale;
			}
			break;
		}
		default:
			break;
		}
	}
	return collect_findings(a);
}

void analysis_free(struct analysis *a)
{
	free(a->step_of);
	free(a->scale_history);
	free(a->findings);
	free(a->finding_occurrences);
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
	return op->noutputs > 0 ? op->outputs[0].dtype : NULL;
}

bool analysis_op_in_scope(const struct trace_op *op, const char *scope)
{
	for (int i = 0; i < op->autocast.nscopes; i++)
		if (!fnmatch(scope, op->autocast.scopes[i], 0))
			return true;
	return op->autocast.scope && !fnmatch(scope, op->autocast.scope, 0);
}

bool analysis_cast_in_scope(const struct analysis *a,
			    const struct trace_event *cast, const char *scope)
{
	const struct trace_event *op = analysis_op(a, cast->pid, cast->cast.op_id);

	if (op)
		return analysis_op_in_scope(&op->op, scope);
	return cast->cast.scope && !fnmatch(scope, cast->cast.scope, 0);
}
