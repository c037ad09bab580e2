/* A trace's steps (steps.h): from its amp.step events, else the rules
 * older traces were counted by. */
#include "steps.h"

#include "early_ends.h"
#include "marks.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The events the model reads: the trace's, then those `more` makes up
 * (trace_steps_find_more).  What reads only kinds it reads whole
 * (trace_steps_reads_whole) reads the trace's own events alone. */
struct events {
	const struct trace *t;
	const struct trace_steps_more *more;
	size_t count;
	struct trace_event scratch;
};

static const struct trace_event *event_at(struct events *ev, size_t i)
{
	if (i < ev->t->nevents)
		return &ev->t->events[i];
	return ev->more->event(ev->more->ctx, i - ev->t->nevents,
			       &ev->scratch);
}

bool trace_steps_reads_whole(const struct trace_event *e)
{
	switch (e->kind) {
	case TRACE_STEP:
	case TRACE_DIAG:
	case TRACE_META:
	case TRACE_SCOPE_BEGIN:
		return true;
	default:
		return false;
	}
}

static bool is_step(const struct trace_event *e)
{
	return e->kind == TRACE_STEP && e->ph == 'X' && e->step.marker;
}

static bool is_window(const struct trace_event *e)
{
	return e->kind == TRACE_STEP && e->ph == 'X' && e->step.evaluation;
}

static bool aggregate_has_backward(const struct trace_aggregate *g)
{
	for (int k = 0; k < g->nops; k++)
		if (!strcmp(g->ops[k].phase, "backward"))
			return true;
	return false;
}

bool trace_steps_trains(const struct trace_event *e, bool evaluating)
{
	if (evaluating)
		return false;
	switch (e->kind) {
	case TRACE_OP:
		return e->op.phase && !strcmp(e->op.phase, "backward");
	case TRACE_AGGREGATE:
		return aggregate_has_backward(&e->aggregate) ||
		       e->aggregate.regions > 0;
	case TRACE_CAST:
	case TRACE_SCOPE_BEGIN:
		return true;
	default:
		return false;
	}
}

/* Older traces' rule: any op, cast, scaler event or region. */
static bool counted_for_step(const struct trace_event *e)
{
	return e->kind == TRACE_OP || e->kind == TRACE_CAST ||
	       e->kind == TRACE_SCALER || e->kind == TRACE_SCOPE_BEGIN;
}

/* Inside a window of its process: windows are [begin, end] pairs, sorted,
 * and do not overlap within a process (they nest inside steps). */
static bool inside_window(const struct marks *begins, const struct marks *ends,
			  int64_t pid, double ts)
{
	size_t opened = marks_before(begins, pid, ts, true);
	size_t closed = marks_before(ends, pid, ts, false);

	return opened > closed;
}

/* An aggregate whose folded events all ran inside one evaluation window
 * of its process: the producer ends a thread's aggregates at each
 * window's edges (FORMAT.md §3.12), so a window in a step recorded as
 * aggregates has rows of its own.  Older aggregates say no end. */
static bool aggregate_inside_window(const struct trace_event *e,
				    const struct marks *begins,
				    const struct marks *ends)
{
	const struct trace_aggregate *g = &e->aggregate;
	double first = (double)g->begin_ns / 1e3, last = (double)g->end_ns / 1e3;

	if (g->end_ns <= 0 || !begins->count)
		return false;
	return inside_window(begins, ends, e->pid, first) &&
	       inside_window(begins, ends, e->pid, last) &&
	       marks_before(begins, e->pid, first, true) ==
		       marks_before(begins, e->pid, last, true);
}

/* Which marks of a process end its steps: the program's own marker
 * (amptrace_torch.step()) over an optimizer's or a GradScaler's, and those
 * over autocast regions; a producer step ended by a lower kind is part of
 * the step the next higher one ends (a program that marks its steps
 * after a few optimizer steps, regions before the optimizer was made). */
static int marker_rank(const char *marker)
{
	if (!strcmp(marker, "amptrace_torch.step()"))
		return 3;
	return strcmp(marker, "autocast region") ? 2 : 1;
}

/* A process's steps as its producer numbered them. */
struct producer_step {
	int64_t number;
	double end;
	int rank;
	bool detail;
	int counted;            /* the step it is part of */
};

struct process_steps {
	int64_t pid;
	struct producer_step *steps;
	size_t count, cap;
	int rank;               /* the kind that ends its steps */
	int final;              /* the step after its last kept end */
	bool last_aggregated;   /* the step before `final`: no full detail */
	/* in `final`: the regions its aggregates count, and those that
	 * are evaluation windows ("autocast region under no_grad"); whether
	 * a model.eval() window is there; and whether any of its threads'
	 * aggregates ran a backward op */
	uint64_t final_regions, final_region_windows;
	bool final_module_window, final_backward;
};

static int compare_numbers(const void *a, const void *b)
{
	const struct producer_step *x = a, *y = b;

	return (x->number > y->number) - (x->number < y->number);
}

static struct process_steps *process_of(struct process_steps **list,
					size_t *n, int64_t pid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*list)[i].pid == pid)
			return &(*list)[i];
	struct process_steps *grown = realloc(*list, (*n + 1) * sizeof *grown);
	if (!grown)
		return NULL;
	*list = grown;
	grown[*n] = (struct process_steps){ .pid = pid };
	return &grown[(*n)++];
}

/* Step `step` of some process was recorded in full detail, or not (a
 * step is aggregated when no process recorded it in full). */
static bool note_detail(struct trace_steps *s, int step, bool detail)
{
	if (step >= s->naggregated_cap) {
		int cap = s->naggregated_cap ? s->naggregated_cap * 2 : 64;
		while (cap <= step)
			cap *= 2;
		bool *grown = realloc(s->aggregated, (size_t)cap * sizeof *grown);
		if (!grown)
			return false;
		for (int k = s->naggregated_cap; k < cap; k++)
			grown[k] = true;
		s->aggregated = grown;
		s->naggregated_cap = cap;
	}
	if (step >= s->nseen)
		s->nseen = step + 1;
	s->aggregated[step] &= !detail;
	return true;
}

/* Numbers each process's producer steps as steps, and lists the ends of
 * those that end one.  The producer steps stay sorted by number, to be
 * looked up: a long run's numbers can be far larger than its count of
 * step events (a table by number would be as large). */
static bool number_steps(struct process_steps *p, struct marks *ends,
			 struct trace_steps *s)
{
	trace_sort(p->steps, p->count, sizeof *p->steps, compare_numbers);
	int step = 0;
	bool detail = false;
	for (size_t i = 0; i < p->count; i++) {
		struct producer_step *ps = &p->steps[i];
		ps->counted = step;
		detail |= ps->detail;
		if (ps->rank != p->rank)
			continue;
		if (!marks_add(ends, p->pid, ps->end) ||
		    !note_detail(s, step, detail))
			return false;
		p->last_aggregated = !detail;
		detail = false;
		step++;
	}
	p->final = step;
	return true;
}

/* The step that producer step `number` is part of: a number with no
 * step event of its own (an aggregate after the last step's end) is in
 * the next numbered one, else in the final step. */
static int step_numbered(const struct process_steps *p, int64_t number)
{
	size_t lo = 0, hi = p ? p->count : 0;

	if (!p)
		return 0;
	if (number < 0)
		return p->final;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (p->steps[mid].number < number)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->count ? p->steps[lo].counted : p->final;
}

static const struct process_steps *find_process(const struct process_steps *list,
						size_t n, int64_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (list[i].pid == pid)
			return &list[i];
	return NULL;
}

/* An evaluation window that is one outermost autocast region (under
 * no_grad or inference_mode), not model.eval()'s. */
static bool is_region_window(const struct trace_event *e)
{
	return is_window(e) &&
	       !strncmp(e->step.evaluation, "autocast region", 15);
}

/* The regions that the aggregates of each process's final step count,
 * and the evaluation windows there: a program that evaluates after its
 * last step (a no_grad region, model.eval()) leaves an aggregate there
 * when that step is not in full detail, its rows the window's; an
 * aggregate without `end` (an older trace) has no span to tell them from
 * training by (aggregate_inside_window tells the others). */
static void count_final_regions(struct events *ev,
				struct process_steps *procs, size_t nprocs)
{
	for (size_t i = 0; i < ev->count; i++) {
		const struct trace_event *e = event_at(ev, i);
		struct process_steps *p = NULL;
		for (size_t k = 0; k < nprocs && !p; k++)
			if (procs[k].pid == e->pid)
				p = &procs[k];
		if (!p)
			continue;
		if (e->kind == TRACE_AGGREGATE &&
		    step_numbered(p, e->aggregate.step) == p->final) {
			p->final_regions += e->aggregate.regions;
			p->final_backward |= aggregate_has_backward(&e->aggregate);
		} else if (is_window(e) &&
			   step_numbered(p, e->step.step) == p->final) {
			if (is_region_window(e))
				p->final_region_windows++;
			else
				p->final_module_window = true;
		}
	}
}

/* An aggregate of a final step in which no thread ran a backward op and
 * whose regions are evaluation windows: all of them no_grad regions, or,
 * where an optimizer, a GradScaler or the program ends the steps, inside
 * a model.eval() window (the usual evaluation after training; its
 * regions are no windows of their own, so they cannot be counted, but
 * after the last optimizer step nothing trains without a backward): an
 * evaluation after the last step, no training (its rows belong to no
 * step's training either).  A region-marked process's final step is its
 * last training step, ended by no next region: its regions must all be
 * windows.  Decided for the step, not for each thread's aggregate: a
 * backward that ran on autograd's own thread (CUDA's) trained the step
 * the forward thread's rows are part of. */
static bool evaluates_after_last_step(const struct trace_event *e,
				      const struct process_steps *p, int step)
{
	if (e->kind != TRACE_AGGREGATE || !p || step != p->final ||
	    p->final_backward)
		return false;
	if (p->final_module_window && p->rank > marker_rank("autocast region"))
		return true;
	return p->final_region_windows &&
	       p->final_regions <= p->final_region_windows;
}

/* Step `step` was cut short: a process's record ended in it (it died,
 * or its trace stops there).  Listed once (a few: a process's final
 * step, or the ranks' of a killed job); sorted by note_cut_short. */
static bool add_cut_short(struct trace_steps *s, int step)
{
	for (int k = 0; k < s->ncut_short; k++)
		if (s->cut_short[k] == step)
			return true;
	if (s->ncut_short == s->cut_short_cap) {
		int cap = s->cut_short_cap ? 2 * s->cut_short_cap : 4;
		int *grown = realloc(s->cut_short, (size_t)cap * sizeof *grown);
		if (!grown)
			return false;
		s->cut_short = grown;
		s->cut_short_cap = cap;
	}
	s->cut_short[s->ncut_short++] = step;
	return true;
}

/* A process whose record stops where its trace's writer stopped
 * (early_ends_at_end): its last ended step, counted as aggregates, may
 * lack its threads' rows, which come after its end; the trace stops
 * before some or all of them (a step read whole with no count). */
static bool note_rows_lost(const struct process_steps *p,
			   const struct early_ends *early, struct trace_steps *s)
{
	if (p->final == 0 || !p->last_aggregated ||
	    !early_ends_at_end(early, p->pid))
		return true;
	return add_cut_short(s, p->final - 1);
}

/* The steps the producer marked (amp.step events).  A process whose
 * record ends early (early_ends.h: it died, or its trace stops) in its
 * final step, one its training had begun and no end marked, left that
 * step cut short. */
static int marked_steps(struct events *ev, struct trace_steps *s)
{
	const struct trace *t = ev->t;
	struct marks ends = { 0 }, begins = { 0 }, stops = { 0 };
	struct early_ends early = { 0 };
	struct process_steps *procs = NULL;
	size_t nprocs = 0;
	int status = -1;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (is_step(e)) {
			struct process_steps *p = process_of(&procs, &nprocs,
							     e->pid);
			if (!p)
				goto out;
			if (p->count == p->cap) {
				size_t cap = p->cap ? p->cap * 2 : 64;
				struct producer_step *grown =
					realloc(p->steps, cap * sizeof *grown);
				if (!grown)
					goto out;
				p->steps = grown;
				p->cap = cap;
			}
			int rank = marker_rank(e->step.marker);
			p->steps[p->count++] = (struct producer_step){
				e->step.step, e->ts + e->dur, rank,
				e->step.detail,
			};
			if (rank > p->rank)
				p->rank = rank;
			if (!s->marker || marker_rank(s->marker) < rank)
				s->marker = e->step.marker;
		} else if (is_window(e)) {
			if (!marks_add(&begins, e->pid, e->ts) ||
			    !marks_add(&stops, e->pid, e->ts + e->dur))
				goto out;
			s->nevaluations++;
		} else if (e->kind == TRACE_STEP && e->ph != 'X' &&
			   s->detail_stop_step < 0) {
			s->detail_stop_step = e->step.step;
			s->detail_stop_limit = e->step.size_limit;
			s->detail_stop_measured = e->step.measured;
		}
	}
	if (!early_ends_find(t, &early))
		goto out;
	for (size_t k = 0; k < nprocs; k++)
		if (!number_steps(&procs[k], &ends, s) ||
		    !note_rows_lost(&procs[k], &early, s))
			goto out;
	marks_sort(&ends);
	marks_sort(&begins);
	marks_sort(&stops);
	count_final_regions(ev, procs, nprocs);
	for (size_t i = 0; i < ev->count; i++) {
		const struct trace_event *e = event_at(ev, i);
		const struct process_steps *p = find_process(procs, nprocs,
							     e->pid);
		int step;
		if (e->kind == TRACE_META)
			continue;
		if (e->kind == TRACE_STEP)
			step = step_numbered(p, e->step.step);
		else if (e->kind == TRACE_AGGREGATE)
			step = step_numbered(p, e->aggregate.step);
		else
			step = (int)marks_before(&ends, e->pid, e->ts, true);
		s->step_of[i] = step;
		/* a final step has no step event of its own (a region-marked
		 * one ends at the next region): its rows say it is aggregated */
		if (e->kind == TRACE_AGGREGATE && !note_detail(s, step, false))
			goto out;
		/* an aggregate's time is when its thread moved on, often
		 * into the window of an evaluation after the step: its
		 * rows are judged by the span of their events */
		if (e->kind == TRACE_AGGREGATE)
			s->evaluating[i] =
				aggregate_inside_window(e, &begins, &stops) ||
				evaluates_after_last_step(e, p, step);
		else
			s->evaluating[i] = e->kind != TRACE_STEP &&
					   begins.count &&
					   inside_window(&begins, &stops,
							 e->pid, e->ts);
		bool training = trace_steps_trains(e, s->evaluating[i]);
		if (step + 1 > s->nsteps &&
		    ((is_step(e) && p && step < p->final) || training))
			s->nsteps = step + 1;
		if (training && e->kind != TRACE_AGGREGATE &&
		    step == (p ? p->final : 0) &&
		    early_ends_has(&early, e->pid) &&
		    !add_cut_short(s, step))
			goto out;
	}
	if (!s->marker)
		s->marker = "none";
	status = 0;
out:
	for (size_t k = 0; k < nprocs; k++)
		free(procs[k].steps);
	free(procs);
	marks_free(&ends);
	marks_free(&begins);
	marks_free(&stops);
	early_ends_free(&early);
	return status;
}

static bool is_update(const struct trace_event *e)
{
	return e->kind == TRACE_SCALER && e->scaler.what &&
	       !strcmp(e->scaler.what, "update");
}

/* The step of process `pid` at time `ts`, counted by `marks`:
 * GradScaler updates end steps, outermost regions' entries begin them
 * (at INFINITY: the last step it began). */
static int counted_step(const struct marks *marks, int64_t pid, double ts,
			bool updates)
{
	size_t before = marks_before(marks, pid, ts, !updates);

	return updates ? (int)before : before ? (int)before - 1 : 0;
}

/* Older traces (FORMAT.md §8 before 1.4), and those that stop before
 * their first amp.step (a run killed, or a live trace read, in its first
 * step): GradScaler updates, else outermost regions' entries.  A process
 * whose record ends early (early_ends.h) in its final step, once it
 * trained there, left that step cut short, as marked_steps says. */
static int counted_steps(struct events *ev, struct trace_steps *s)
{
	const struct trace *t = ev->t;
	struct marks marks = { 0 };
	struct early_ends early = { 0 };
	bool updates = false, regions = false, ran = false;
	int status = -1;

	for (size_t i = 0; i < ev->count; i++) {
		const struct trace_event *e = event_at(ev, i);
		ran |= counted_for_step(e) || e->kind == TRACE_AGGREGATE;
		updates |= is_update(e);
		regions |= e->kind == TRACE_SCOPE_BEGIN && e->scope.depth == 1;
	}
	s->marker = updates ? "scaler update" : regions ? "autocast region"
							: "none";
	for (size_t i = 0; i < ev->count && (updates || regions); i++) {
		const struct trace_event *e = event_at(ev, i);
		bool mark = updates ? is_update(e)
				    : e->kind == TRACE_SCOPE_BEGIN &&
					      e->scope.depth == 1;
		if (mark && !marks_add(&marks, e->pid, e->ts))
			goto out;
	}
	marks_sort(&marks);
	if (!early_ends_find(t, &early))
		goto out;
	/* a run that ran nothing (killed right after import torch) is no
	 * step, whatever its process events and diags */
	s->nsteps = ran ? 1 : 0;
	for (size_t i = 0; i < ev->count && marks.count; i++) {
		const struct trace_event *e = event_at(ev, i);
		if (e->kind == TRACE_META)
			continue;
		int step = counted_step(&marks, e->pid, e->ts, updates);
		s->step_of[i] = step;
		if (step + 1 > s->nsteps && counted_for_step(e))
			s->nsteps = step + 1;
		if (trace_steps_trains(e, false) && e->kind != TRACE_AGGREGATE &&
		    step == counted_step(&marks, e->pid, INFINITY, updates) &&
		    early_ends_has(&early, e->pid) && !add_cut_short(s, step))
			goto out;
	}
	status = 0;
out:
	marks_free(&marks);
	early_ends_free(&early);
	return status;
}

static int compare_steps(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The steps a process's record ended in, cut short, not whole: those a
 * thread counted as aggregates (amp.aggregate's cut_short, FORMAT.md
 * §3.12), aggregated, and those marked_steps found in full detail; each
 * once, though several threads or processes (the ranks of a killed job)
 * were cut short in it. */
static int note_cut_short(struct events *ev, struct trace_steps *s)
{
	for (size_t i = 0; i < ev->count; i++) {
		const struct trace_event *e = event_at(ev, i);
		if (e->kind != TRACE_AGGREGATE || !e->aggregate.cut_short)
			continue;
		int step = s->step_of[i];
		if (step + 1 > s->nsteps)
			s->nsteps = step + 1;
		if (!note_detail(s, step, false) || !add_cut_short(s, step))
			return -1;
	}
	if (s->ncut_short > 1)
		qsort(s->cut_short, (size_t)s->ncut_short, sizeof *s->cut_short,
		      compare_steps);
	return 0;
}

/* Steps in full detail and as aggregates (a step after the last marked
 * one, or of an unmarked trace, is in full detail), and the default
 * graph's step. */
static int count_detail(struct trace_steps *s)
{
	bool *aggregated = calloc((size_t)(s->nsteps ? s->nsteps : 1),
				  sizeof *aggregated);
	int detailed = 0;

	if (!aggregated)
		return -1;
	s->ndetail = s->naggregated = 0;
	s->default_step = -1;
	for (int k = 0; k < s->nsteps; k++) {
		aggregated[k] = k < s->nseen && s->aggregated[k];
		if (aggregated[k]) {
			s->naggregated++;
			continue;
		}
		s->ndetail++;
		if (detailed++ < 2)
			s->default_step = k;
	}
	if (s->default_step < 0)
		s->default_step = 0;
	free(s->aggregated);
	s->aggregated = aggregated;
	return 0;
}

int trace_steps_find(const struct trace *t, struct trace_steps *s)
{
	return trace_steps_find_more(t, NULL, s);
}

int trace_steps_find_more(const struct trace *t,
			  const struct trace_steps_more *more,
			  struct trace_steps *s)
{
	struct events ev = { t, more, t->nevents + (more ? more->count : 0),
			     { 0 } };
	size_t n = ev.count ? ev.count : 1;
	bool marked = false;

	*s = (struct trace_steps){ .detail_stop_step = -1 };
	s->step_of = calloc(n, sizeof *s->step_of);
	s->evaluating = calloc(n, sizeof *s->evaluating);
	if (!s->step_of || !s->evaluating) {
		trace_steps_free(s);
		return -1;
	}
	/* any amp.step event, an evaluation window's too: a program that
	 * only evaluated has no training step, and the older rules would
	 * count its windows' regions as steps */
	for (size_t i = 0; i < t->nevents && !marked; i++)
		marked = t->events[i].kind == TRACE_STEP;
	s->marked = marked;
	int status = marked ? marked_steps(&ev, s) : counted_steps(&ev, s);
	if (status == 0)
		status = note_cut_short(&ev, s);
	if (status == 0)
		status = count_detail(s);
	if (status != 0)
		trace_steps_free(s);
	return status;
}

void trace_steps_free(struct trace_steps *s)
{
	free(s->step_of);
	free(s->evaluating);
	free(s->aggregated);
	free(s->cut_short);
	s->step_of = NULL;
	s->evaluating = NULL;
	s->aggregated = NULL;
	s->cut_short = NULL;
	s->ncut_short = s->cut_short_cap = 0;
}

bool trace_steps_are_training(const struct trace_steps *s)
{
	return s->marked && s->marker && strcmp(s->marker, "autocast region");
}
