/* The processes whose record ends early (early_ends.h). */
#include "early_ends.h"

#include <math.h>
#include <string.h>

static bool is_death(const struct trace_event *e)
{
	return e->kind == TRACE_DIAG && e->diag.kind &&
	       !strcmp(e->diag.kind, "process-died");
}

/* A merged input's events are those of its own process, pid rank + 1
 * (FORMAT.md §6); a second process of one input gets a pid no key of
 * the merged file ties to its input, and is not known here. */
static bool add_truncated_inputs(const struct trace *t, struct marks *m)
{
	for (int i = 0; i < t->header.nmerged; i++)
		if (t->header.merged[i].truncated &&
		    !marks_add(m, (int64_t)t->header.merged[i].rank + 1,
			       INFINITY))
			return false;
	return true;
}

bool early_ends_find(const struct trace *t, struct early_ends *ends)
{
	ends->every = trace_unfinished(t);
	if (!add_truncated_inputs(t, &ends->processes))
		return false;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (is_death(e) && !marks_add(&ends->processes, e->pid, e->ts))
			return false;
	}
	marks_sort(&ends->processes);
	return true;
}

bool early_ends_has(const struct early_ends *ends, int64_t pid)
{
	return ends->every ||
	       marks_before(&ends->processes, pid, INFINITY, true) > 0;
}

bool early_ends_at_end(const struct early_ends *ends, int64_t pid)
{
	const struct marks *m = &ends->processes;

	return ends->every || marks_before(m, pid, INFINITY, true) >
				      marks_before(m, pid, INFINITY, false);
}

void early_ends_free(struct early_ends *ends)
{
	marks_free(&ends->processes);
	ends->every = false;
}
