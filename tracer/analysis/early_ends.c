/* The processes whose record ends early (early_ends.h). */
#include "early_ends.h"

#include "trace_schema.h"

#include <math.h>
#include <string.h>

static bool is_death(const struct trace_event *e)
{
	return e->kind == TRACE_DIAG && e->diag.kind &&
	       !strcmp(e->diag.kind, "process-died");
}

/* The last event of a process whose record is whole: its label, how it
 * ended (FORMAT.md §2), written once amptrace wrote all it left; not an
 * image that exec()ed another, whose process goes on under its pid. */
static bool is_end_label(const struct trace_event *e)
{
	return e->kind == TRACE_META &&
	       trace_meta_holds(e) == TRACE_META_LABELS && e->meta.value &&
	       strcmp(e->meta.value, "replaced by exec()") != 0;
}

/* A merged input's events are those of its own process, the pid its
 * trailer row names (FORMAT.md §6; without a trailer the merged trace
 * itself ended early, every process with it); a second process of one
 * input gets a pid no key of the merged file ties to its input, and is
 * not known here. */
static bool add_truncated_inputs(const struct trace *t, struct marks *m)
{
	for (int i = 0; i < t->trailer.ninputs; i++)
		if (t->trailer.inputs[i].truncated &&
		    !marks_add(m, t->trailer.inputs[i].pid, INFINITY))
			return false;
	return true;
}

bool early_ends_find(const struct trace *t, struct early_ends *ends)
{
	ends->every = trace_unfinished(t);
	if (!add_truncated_inputs(t, &ends->stopped))
		return false;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (is_death(e) && !marks_add(&ends->deaths, e->pid, e->ts))
			return false;
		if (is_end_label(e) && !marks_add(&ends->whole, e->pid, e->ts))
			return false;
	}
	marks_sort(&ends->deaths);
	marks_sort(&ends->stopped);
	marks_sort(&ends->whole);
	return true;
}

static bool died(const struct early_ends *ends, int64_t pid)
{
	return marks_before(&ends->deaths, pid, INFINITY, false) > 0;
}

bool early_ends_at_end(const struct early_ends *ends, int64_t pid)
{
	bool writer_stopped =
		ends->every || marks_before(&ends->stopped, pid, INFINITY, true);

	return writer_stopped &&
	       marks_before(&ends->whole, pid, INFINITY, true) == 0;
}

bool early_ends_has(const struct early_ends *ends, int64_t pid)
{
	return died(ends, pid) || early_ends_at_end(ends, pid);
}

void early_ends_free(struct early_ends *ends)
{
	marks_free(&ends->deaths);
	marks_free(&ends->stopped);
	marks_free(&ends->whole);
	ends->every = false;
}
