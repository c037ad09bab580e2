/* The torch.compile'd graphs of a trace (FORMAT.md §3.13): per graph,
 * its compiles, its calls and the casts its forward and backward make,
 * which every call runs.  Built from the `compile:` and `compiled:` ops
 * and the compiled casts (their `graph`); summary prints it.
 *
 * Ownership: compiled_graphs_build() fills a struct that owns its array;
 * the names point into the trace. */
#ifndef AMPTRACE_COMPILED_GRAPHS_H
#define AMPTRACE_COMPILED_GRAPHS_H

#include "trace.h"

#include <stddef.h>
#include <stdint.h>

/* forward and backward, as the arrays below index them */
enum compiled_part { COMPILED_FORWARD, COMPILED_BACKWARD, COMPILED_PARTS };

struct compiled_graph {
	int64_t pid;
	uint64_t graph;
	const char *name;             /* "M.forward": the compiled region */
	size_t compiles;              /* compile ops (a lazy backward too) */
	size_t failed;                /* of which ended in an error */
	double compile_us;
	size_t calls[COMPILED_PARTS]; /* compiled: ops */
	size_t casts[COMPILED_PARTS]; /* the graph's casts, per part */
	size_t by_autocast, by_program, by_autograd;
};

struct compiled_graphs {
	struct compiled_graph *items; /* in the order graphs appear */
	size_t count;
	/* calls in steps recorded as aggregates, whose rows name the region
	 * but not the graph: counted for the region's graph when its process
	 * has one, else here (a recompiled region's graphs are not told
	 * apart) */
	size_t unattributed_calls;
};

/* Returns 0, or -1 when out of memory. */
int compiled_graphs_build(const struct trace *trace,
			  struct compiled_graphs *out);
void compiled_graphs_free(struct compiled_graphs *graphs);
/* The op name's region: "M.forward" of "compiled:M.forward" and of
 * "compile:M.forward", NULL for other ops. */
const char *compiled_region(const char *op);

#endif /* AMPTRACE_COMPILED_GRAPHS_H */
