/* The processes whose record ends early, inside whatever step they were
 * in (FORMAT.md §8, "A step cut short"): one notion, which the steps
 * model reads, fed by the three things that say so:
 *   - a process-died diag: the process died, at the diag's time;
 *   - an unfinished trace (trace_unfinished: its writer was stopped, or
 *     is still writing it): every process, at the trace's end;
 *   - a merged trace's input that merge read truncated (amptraceEnd's
 *     inputs, §6): that input's process, the pid its row names, at its
 *     end;
 * the last two spare a process whose end label (process_labels, §2: its
 * last event) is in the trace: amptrace wrote its whole record first. */
#ifndef AMPTRACE_EARLY_ENDS_H
#define AMPTRACE_EARLY_ENDS_H

#include "marks.h"
#include "trace.h"

#include <stdbool.h>
#include <stdint.h>

struct early_ends {
	struct marks deaths;    /* pid, and when it died */
	struct marks stopped;   /* pid of a merged input read truncated */
	struct marks whole;     /* pid, and its end label's time */
	bool every;             /* the whole trace ends early */
};

/* Fills `ends` (zeroed by the caller).  false when out of memory. */
bool early_ends_find(const struct trace *t, struct early_ends *ends);
/* Whether the record of process `pid` ends early: it died, or the
 * writer stopped before its end label. */
bool early_ends_has(const struct early_ends *ends, int64_t pid);
/* Whether it stops where its trace's writer stopped (an unfinished trace,
 * a truncated merged input), not at the process's death, after which
 * amptrace wrote what the process left: what the writer had still to
 * write of it is lost. */
bool early_ends_at_end(const struct early_ends *ends, int64_t pid);
void early_ends_free(struct early_ends *ends);

#endif
