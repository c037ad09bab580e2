/* A trace's training steps (FORMAT.md §8): one definition for every
 * reader (summary, check's `per step` rules, report, ampview, the
 * findings).
 *
 * A trace with amp.step events has the steps its producer marked: step k
 * holds the events of its process from the end of step k-1 (exclusive)
 * to its own end (inclusive: an event at the very nanosecond a step
 * ends is the next step's); events after the last end are a final step
 * when a training op is among them; an amp.aggregate event is in the
 * step it names.  Events inside an evaluation window are `evaluating`:
 * in a step, but not part of its training; so is an amp.aggregate whose
 * events' span (begin to end) lies inside one window, whenever it was
 * written, and one that is no step's, an evaluation after the last step.  A trace whose amp.step
 * events are evaluation windows only (a program that only evaluated) has
 * no step end: no step, unless training ran outside its windows (the
 * final step).  Older traces: a step ends at
 * each GradScaler update; without one, each entry into an outermost
 * autocast region begins one; without those, the trace is one step. */
#ifndef AMPTRACE_STEPS_H
#define AMPTRACE_STEPS_H

#include "trace.h"

#include <stdbool.h>
#include <stdint.h>

struct trace_steps {
	int *step_of;         /* per event (0 for metadata) */
	bool *evaluating;     /* per event: inside an evaluation window */
	int nsteps;           /* 0: no event, or no training step */
	/* what marks them: "optimizer step", "scaler update",
	 * "amptrace_torch.step()", "autocast region", "none" */
	const char *marker;
	bool marked;          /* from amp.step events (windows too) */
	int nevaluations;     /* evaluation windows */
	int ndetail;          /* steps recorded in full detail */
	int naggregated;      /* steps recorded as aggregates only */
	bool *aggregated;     /* per step: recorded as aggregates only */
	/* the steps cut short, its process or its trace ended in it
	 * (early_ends.h): while its threads counted them as aggregates,
	 * or in full detail, its final step begun and not ended;
	 * ascending, each once */
	int *cut_short;
	int ncut_short, cut_short_cap;
	/* the step a graph shows by default: the second in full detail
	 * (the first warms up), else the first */
	int default_step;
	/* internals */
	int naggregated_cap, nseen;
	/* full detail stopped for size from this step on (-1: it did
	 * not), past `detail_stop_limit` bytes of `detail_stop_measured` */
	int64_t detail_stop_step;
	uint64_t detail_stop_limit;
	const char *detail_stop_measured;
};

/* Returns 0, or -1 when out of memory. */
int trace_steps_find(const struct trace *t, struct trace_steps *s);

/* The steps of a trace its reader does not hold whole (amptrace diff
 * streams its inputs and keeps of most events a record): the trace's
 * own events hold every event trace_steps_reads_whole() says (and may
 * hold others), and `more` hands over, one at a time, the ops, autocast
 * casts (TRACE_CAST), GradScaler events and amp.aggregate events it
 * kept a record of, made up in *scratch with what the model reads of
 * them: kind, pid, ts; an
 * op's phase; a GradScaler event's what (TRACE_SCALER: one a step,
 * held whole it would be most of what a streamed aggregated step
 * costs); an aggregate's step, regions, cut_short and op rows.
 * step_of and evaluating number the trace's events first, then these. */
struct trace_steps_more {
	size_t count;
	const struct trace_event *(*event)(const void *ctx, size_t k,
					   struct trace_event *scratch);
	const void *ctx;
};
int trace_steps_find_more(const struct trace *t,
			  const struct trace_steps_more *more,
			  struct trace_steps *s);
/* Whether the model reads more of `e` than trace_steps_more gives:
 * amp.step events, diags and labels (early_ends.h) and regions'
 * entries.  Other events, GPU kernels and counters among
 * them, it does not read. */
bool trace_steps_reads_whole(const struct trace_event *e);
void trace_steps_free(struct trace_steps *s);
/* Whether event `e` trains (outside an evaluation window: `evaluating`
 * says it is inside one): a backward pass, an autocast region, a cast
 * (not the gradients zeroed after the last step, nor a loss read or a
 * prediction made after the loop).  Events after the last step's end
 * are a step of their own when one does; a rank takes part in the steps
 * it trains in (ranks.h). */
bool trace_steps_trains(const struct trace_event *e, bool evaluating);
/* Whether the steps end where a training step really ends (an optimizer,
 * a GradScaler, the program's own marker), not at autocast regions. */
bool trace_steps_are_training(const struct trace_steps *s);

#endif /* AMPTRACE_STEPS_H */
