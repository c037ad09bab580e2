/* What `amptrace run` appends to a trace after its events (tail.c): the
 * findings and the flows, both computed from the events the converter
 * kept while writing them. */
#ifndef AMPTRACE_TAIL_H
#define AMPTRACE_TAIL_H

#include "trace.h"
#include "trace_index.h"
#include "trace_writer.h"

#include <stdint.h>

/* Appends to w the findings computed from `kept` (every event w was
 * given) as amp.diag events at `ts_ns` (the end of the run), then the
 * flow events.  `ix`: kept's index (trace_index_init), brought up to date
 * here; the flows need it whole (NULL, or out of memory: the findings
 * only). */
void tail_append(struct trace_writer *w, const struct trace *kept,
		 struct trace_index *ix, int64_t ts_ns);

#endif /* AMPTRACE_TAIL_H */
