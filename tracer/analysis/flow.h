/* Flow events (FORMAT.md §3.10): the arrows Perfetto and chrome://tracing
 * draw between slices, from each forward op to the backward ops autograd
 * ran for it, and from each cast to every op that read its result.
 * Computed from a trace in memory (its index), after the events: a pure
 * function gives the flows, a writer appends them to a trace file. */
#ifndef AMPTRACE_FLOW_H
#define AMPTRACE_FLOW_H

#include "jsonw.h"
#include "trace_index.h"
#include "trace_writer.h"

#include <stddef.h>
#include <stdint.h>

enum flow_kind {
	FLOW_BACKWARD, /* forward op -> a backward op with its forward_op_id */
	FLOW_CAST,     /* cast -> an op whose input is the cast's result */
	FLOW_KIND_COUNT
};

/* One arrow.  Each end is a point of time (ns since ts 0) at which the
 * end's slice is the innermost open slice of its thread: a viewer binds
 * a flow event to that slice (Perfetto's rule for `s`, and for `f` with
 * "bp":"e"), so a point inside a child (a cast inside its op) would bind
 * the child. */
struct trace_flow {
	enum flow_kind kind;
	int64_t pid;
	int64_t from_tid, to_tid;
	int64_t from_ns, to_ns;  /* to_ns > from_ns */
	uint64_t from_op_id;     /* the forward op, or the op the cast was for */
	uint64_t to_op_id;       /* the backward op, or the consumer */
	uint64_t tensor;         /* FLOW_CAST: the cast's result */
};

struct trace_flows {
	struct trace_flow *items;
	size_t count;
	/* arrows left out: no point of an end's slice is free of its
	 * children (or of the source's time), so no viewer could bind it */
	size_t unbindable;
};

/* The flows of the trace indexed by ix, in event order of their targets.
 * Returns 0, or -1 when out of memory (flows is then empty). */
int flow_build(const struct trace_index *ix, struct trace_flows *flows);
void flow_free(struct trace_flows *flows);

/* Each flow as an `s` and an `f` event (category amp.flow) with ids
 * first_id, first_id + 1, ..., appended to out joined by ",\n" (as
 * trace_writer_events takes them).  Returns the next free id; first_id
 * and out unchanged but for out->failed when out of memory. */
uint64_t flow_text(const struct trace_flows *flows, uint64_t first_id,
		   struct jsonw *out);

/* Appends each flow to w as an `s` and an `f` event (category amp.flow)
 * with ids first_id, first_id + 1, ...  Returns the next free id. */
uint64_t flow_write(const struct trace_flows *flows, struct trace_writer *w,
		    uint64_t first_id);

#endif /* AMPTRACE_FLOW_H */
