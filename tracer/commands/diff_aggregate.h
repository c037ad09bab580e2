/* `amptrace diff` of the steps both traces recorded as aggregates
 * (amp.aggregate, FORMAT.md §3.12; diff_aggregate.c): a run recorded
 * with the default --steps holds its later steps only so, and a change
 * there must not go unseen.  Steps align by process, thread and step
 * number; their rows are compared as counts, since aggregates hold no
 * single op to align. */
#ifndef AMPTRACE_DIFF_AGGREGATE_H
#define AMPTRACE_DIFF_AGGREGATE_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one side holds of its aggregates, gathered as diff.c's reader
 * hands the events over (the rows' strings are the trace's). */
struct diff_aggregate_side {
	struct aggregate_step *steps; /* one per amp.aggregate event */
	size_t nsteps, cap_steps;
	struct trace_aggregate_op *ops;
	size_t nops, cap_ops;
	struct trace_aggregate_cast *casts;
	size_t ncasts, cap_casts;
	bool failed;      /* out of memory */
};

/* One event of the side's trace; events of no interest are ignored. */
void diff_aggregate_add(struct diff_aggregate_side *side,
			const struct trace_event *e);
/* Its k-th amp.aggregate event as the steps model reads it, made up in
 * *scratch (steps.h: trace_steps_more), its op rows the side's. */
const struct trace_event *diff_aggregate_event(
	const struct diff_aggregate_side *side, size_t k,
	struct trace_event *scratch);
/* Each of its events' step as the steps model numbers them, step_of[k]
 * for its k-th: what the steps cut short (diff_aggregates) are told in;
 * its steps are still keyed and named by the step each event names. */
void diff_aggregate_number(struct diff_aggregate_side *side,
			   const int *step_of);
void diff_aggregate_free(struct diff_aggregate_side *side);

/* A change in one compared step, in diff.c's terms: kind (output,
 * policy, op-added, op-removed, cast-added, cast-removed, cache), the
 * op's label and phase, what base had and new has, how many times, and
 * where: the step and its (first) amp.aggregate event's line in each
 * file. */
struct diff_aggregate_change {
	const char *kind, *op, *phase, *base, *now;
	size_t count;
	int64_t step;
	size_t base_line, new_line;
};

/* Which aggregated steps were compared (by step number, whatever
 * threads and processes ran them): those both traces hold, `first` to
 * `last`, and those only one holds (not compared). */
struct diff_aggregate_steps {
	/* cut_short: steps not compared, cut short in either trace (its
	 * process or its trace ended in it: steps.h), whether or not the
	 * other holds them */
	size_t compared, base_only, new_only, cut_short;
	int64_t first, last;
};

/* The process of `pid` as diff.c orders a side's processes (by rank, then
 * start), so that two runs' pids align. */
typedef size_t (*diff_process_ordinal)(const void *side, int64_t pid);

/* Compares the steps both sides aggregated, step by step (a step's
 * events, when it was written as several, together): per op and phase,
 * output dtypes and policies; per op, phase and direction, cache
 * results; not the steps an event of which is among the `ncut_short`
 * steps of `cut_short` (ascending, numbered as diff_aggregate_number's),
 * which either trace cut short.  Each change is handed to `report`; the steps
 * compared are marked.  Returns -1 when out of memory. */
int diff_aggregates(struct diff_aggregate_side *base,
		    const void *base_side,
		    struct diff_aggregate_side *now,
		    const void *now_side, diff_process_ordinal ordinal,
		    const int *cut_short, size_t ncut_short,
		    void (*report)(void *ctx,
				   const struct diff_aggregate_change *change),
		    void *ctx, struct diff_aggregate_steps *steps);

/* Each autocast cast row of the steps diff_aggregates() compared. */
void diff_aggregate_each_compared_cast(
	const struct diff_aggregate_side *side,
	void (*each)(void *ctx, const struct trace_aggregate_cast *cast),
	void *ctx);

#endif /* AMPTRACE_DIFF_AGGREGATE_H */
