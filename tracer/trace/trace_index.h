/* A loaded trace's index, built in one pass and shared by the analysis,
 * the findings, check and the viewer: ops by id, and for each tensor the
 * event that produced it, the last that named it and how often it was
 * used, per process (ids are unique within a process).  A tensor's
 * producer here is rebuilt from tensor ids (the last op output or cast
 * result with its id); trace_index_input_producer prefers the producer
 * libamp recorded for each use. */
#ifndef AMPTRACE_TRACE_INDEX_H
#define AMPTRACE_TRACE_INDEX_H

#include "id_map.h"
#include "trace.h"

struct trace_index {
	const struct trace *trace;
	struct id_map ops;      /* (pid, op_id) -> amp.op event */
	struct id_map producer; /* (pid, tensor) -> the op or cast (not a
				   cache hit) event that made it */
	struct id_map names;    /* (pid, tensor) -> last event naming it */
	struct id_map uses;     /* (pid, tensor) -> uses as an op or cast input */
	size_t indexed;         /* the events indexed so far */
};

/* Returns 0, or -1 when out of memory (the index is then partial). */
int trace_index_build(const struct trace *trace, struct trace_index *ix);
/* The same built as the trace grows: trace_index_init() starts an empty
 * index of `trace`, each trace_index_update() adds the events appended
 * since the last (`amptrace run` indexes the events it keeps while the
 * program runs, not all of them after it ended).  -1: out of memory,
 * now or before. */
void trace_index_init(const struct trace *trace, struct trace_index *ix);
int trace_index_update(struct trace_index *ix);
void trace_index_free(struct trace_index *ix);
/* The event that made input k of op event `event` (an index into the
 * trace): the op libamp recorded as its producer (producer_op_id), else,
 * in traces without one (older traces, PyTorch's, a cast's result), the
 * producer rebuilt from the tensor's id.  SIZE_MAX when none is known. */
size_t trace_index_input_producer(const struct trace_index *ix, size_t event,
				  int k);
/* The amp.op event of (pid, op_id), or NULL. */
const struct trace_event *trace_index_op(const struct trace_index *ix,
					 int64_t pid, uint64_t op_id);

#endif /* AMPTRACE_TRACE_INDEX_H */
