/* `amptrace diff` of traces holding torch.compile'd graphs
 * (diff_compiled.c): casts compared by module path, source line and op,
 * since ops of an eager and a compiled run do not align. */
#ifndef AMPTRACE_DIFF_COMPILED_H
#define AMPTRACE_DIFF_COMPILED_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one side holds for it: its casts' signatures, gathered as diff.c's
 * reader hands the events over (their strings are the trace's). */
struct diff_compiled_side {
	struct compiled_signature *items;
	size_t count, cap;
	uint32_t *slots;  /* items by hash of the signature: index + 1 */
	size_t nslots;    /* a power of two, over twice count */
	size_t compiled;  /* casts of compiled graphs among them */
	bool has_graphs;  /* a compiled cast or call seen */
	bool failed;      /* out of memory */
};

/* One event of the side's trace; events of no interest are ignored. */
void diff_compiled_add(struct diff_compiled_side *side,
		       const struct trace_event *e);
void diff_compiled_free(struct diff_compiled_side *side);
/* Whether either trace has a compiled graph (compiled casts or calls). */
bool diff_compiled_applies(const struct diff_compiled_side *base,
			   const struct diff_compiled_side *now);
/* Prints the cast behaviour changes from base to now (text, or JSON);
 * returns 0 when there is none, 1 when there are, 2 out of memory. */
int diff_compiled(const struct trace *base_trace,
		  struct diff_compiled_side *base,
		  const struct trace *now_trace,
		  struct diff_compiled_side *now, bool json);

#endif /* AMPTRACE_DIFF_COMPILED_H */
