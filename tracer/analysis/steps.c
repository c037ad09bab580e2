/* A trace's steps (steps.h): from its amp.step events, else the rules
 * older traces were counted by. */
#include "steps.h"

#include <stdlib.h>
#include <string.h>

/* A moment of a process: a step's end, a region's entry, a window's
 * edge. */
struct mark {
	int64_t pid;
	double ts;
};

static int compare_marks(const void *a, const void *b)
{
	const struct mark *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ts > y->ts) - (x->ts < y->ts);
}

/* Marks of `pid` at `ts` or before (`inclusive`), or strictly before. */
static size_t marks_before(const struct mark *m, size_t n, int64_t pid,
			   double ts, bool inclusive)
{
	size_t lo = 0, hi = n;

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

struct marks {
	struct mark *items;
	size_t count, cap;
};

static bool add_mark(struct marks *m, int64_t pid, double ts)
{
	if (m->count == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct mark *grown = realloc(m->items, cap * sizeof *grown);
		if (!grown)
			return false;
		m->items = grown;
		m->cap = cap;
	}
	m->items[m->count++] = (struct mark){ pid, ts };
	return true;
}

static bool is_step(const struct trace_event *e)
{
	return e->kind == TRACE_STEP && e->ph == 'X' && e->step.marker;
}

static bool is_window(const struct trace_event *e)
{
	return e->kind == TRACE_STEP && e->ph == 'X' && e->step.evaluation;
}

static bool training_phase(const char *phase)
{
	return phase && (!strcmp(phase, "forward") || !strcmp(phase, "backward"));
}

/* What makes events after the last step's end a step of their own: the
 * program's training, outside evaluation windows (not the gradients
 * zeroed after the last step, nor what runs after the loop). */
static bool counts_for_step(const struct trace_event *e, bool evaluating)
{
	if (evaluating)
		return false;
	switch (e->kind) {
	case TRACE_OP:
		return training_phase(e->op.phase);
	case TRACE_AGGREGATE:
		for (int k = 0; k < e->aggregate.nops; k++)
			if (training_phase(e->aggregate.ops[k].phase))
				return true;
		return false;
	case TRACE_CAST:
	case TRACE_SCALER:
	case TRACE_SCOPE_BEGIN:
		return true;
	default:
		return false;
	}
}

/* Inside a window of its process: windows are [begin, end] pairs, sorted,
 * and do not overlap within a process (they nest inside steps). */
static bool inside_window(const struct marks *begins, const struct marks *ends,
			  int64_t pid, double ts)
{
	size_t opened = marks_before(begins->items, begins->count, pid, ts,
				     true);
	size_t closed = marks_before(ends->items, ends->count, pid, ts, false);

	return opened > closed;
}

/* The steps the producer marked (amp.step events). */
static int marked_steps(const struct trace *t, struct trace_steps *s)
{
	struct marks ends = { 0 }, begins = { 0 }, stops = { 0 };
	int status = -1;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (is_step(e)) {
			if (!add_mark(&ends, e->pid, e->ts + e->dur))
				goto out;
			if (!s->marker)
				s->marker = e->step.marker;
			if (e->step.detail)
				s->ndetail++;
			else
				s->naggregated++;
		} else if (is_window(e)) {
			if (!add_mark(&begins, e->pid, e->ts) ||
			    !add_mark(&stops, e->pid, e->ts + e->dur))
				goto out;
			s->nevaluations++;
		} else if (e->kind == TRACE_STEP && e->ph != 'X' &&
			   s->detail_stop_step < 0) {
			s->detail_stop_step = e->step.step;
			s->detail_stop_limit = e->step.size_limit;
			s->detail_stop_measured = e->step.measured;
		}
	}
	trace_sort(ends.items, ends.count, sizeof *ends.items, compare_marks);
	trace_sort(begins.items, begins.count, sizeof *begins.items,
		   compare_marks);
	trace_sort(stops.items, stops.count, sizeof *stops.items,
		   compare_marks);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		int step;
		if (e->kind == TRACE_META)
			continue;
		if (e->kind == TRACE_STEP)
			step = (int)e->step.step;
		else if (e->kind == TRACE_AGGREGATE)
			step = (int)e->aggregate.step;
		else
			step = (int)marks_before(ends.items, ends.count, e->pid,
						 e->ts, true);
		s->step_of[i] = step;
		s->evaluating[i] = e->kind != TRACE_STEP && begins.count &&
				   inside_window(&begins, &stops, e->pid, e->ts);
		if (step + 1 > s->nsteps &&
		    (is_step(e) || counts_for_step(e, s->evaluating[i])))
			s->nsteps = step + 1;
	}
	status = 0;
out:
	free(ends.items);
	free(begins.items);
	free(stops.items);
	return status;
}

/* Older traces (FORMAT.md §8 before 1.4): GradScaler updates, else
 * outermost regions' entries. */
static int counted_steps(const struct trace *t, struct trace_steps *s)
{
	struct marks marks = { 0 };
	bool updates = false, regions = false;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_SCALER && e->scaler.what &&
		    !strcmp(e->scaler.what, "update"))
			updates = true;
		if (e->kind == TRACE_SCOPE_BEGIN && e->scope.depth == 1)
			regions = true;
	}
	s->marker = updates ? "scaler update" : regions ? "autocast region"
							: "none";
	for (size_t i = 0; i < t->nevents && (updates || regions); i++) {
		const struct trace_event *e = &t->events[i];
		bool mark = updates ? e->kind == TRACE_SCALER && e->scaler.what &&
					      !strcmp(e->scaler.what, "update")
				    : e->kind == TRACE_SCOPE_BEGIN &&
					      e->scope.depth == 1;
		if (mark && !add_mark(&marks, e->pid, e->ts)) {
			free(marks.items);
			return -1;
		}
	}
	trace_sort(marks.items, marks.count, sizeof *marks.items,
		   compare_marks);
	s->nsteps = t->nevents ? 1 : 0;
	for (size_t i = 0; i < t->nevents && marks.count; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_META)
			continue;
		size_t before = marks_before(marks.items, marks.count, e->pid,
					     e->ts, regions && !updates);
		int step = updates ? (int)before : before ? (int)before - 1 : 0;
		s->step_of[i] = step;
		if (step + 1 > s->nsteps && counts_for_step(e, false))
			s->nsteps = step + 1;
	}
	free(marks.items);
	return 0;
}

int trace_steps_find(const struct trace *t, struct trace_steps *s)
{
	size_t n = t->nevents ? t->nevents : 1;
	bool marked = false;

	*s = (struct trace_steps){ .detail_stop_step = -1 };
	s->step_of = calloc(n, sizeof *s->step_of);
	s->evaluating = calloc(n, sizeof *s->evaluating);
	if (!s->step_of || !s->evaluating) {
		trace_steps_free(s);
		return -1;
	}
	for (size_t i = 0; i < t->nevents && !marked; i++)
		marked = is_step(&t->events[i]);
	s->marked = marked;
	int status = marked ? marked_steps(t, s) : counted_steps(t, s);
	if (status != 0)
		trace_steps_free(s);
	else if (!s->nsteps && t->nevents)
		s->nsteps = 1;
	return status;
}

void trace_steps_free(struct trace_steps *s)
{
	free(s->step_of);
	free(s->evaluating);
	s->step_of = NULL;
	s->evaluating = NULL;
}

bool trace_steps_are_training(const struct trace_steps *s)
{
	return s->marked && s->marker && strcmp(s->marker, "autocast region");
}
