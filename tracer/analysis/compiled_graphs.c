/* The compiled graphs of a trace (compiled_graphs.h), counted from their
 * ops and casts in one pass. */
#include "compiled_graphs.h"

#include <stdlib.h>
#include <string.h>

static const char *const prefixes[] = {
	"compiled:", "compile backward:", "compile:",
};

const char *compiled_region(const char *op)
{
	for (size_t i = 0; op && i < sizeof prefixes / sizeof *prefixes; i++) {
		size_t n = strlen(prefixes[i]);
		if (!strncmp(op, prefixes[i], n))
			return op + n;
	}
	return NULL;
}

static struct compiled_graph *graph_of(struct compiled_graphs *g, int64_t pid,
				       uint64_t graph)
{
	for (size_t i = g->count; i-- > 0;)
		if (g->items[i].pid == pid && g->items[i].graph == graph)
			return &g->items[i];
	struct compiled_graph *grown =
		realloc(g->items, (g->count + 1) * sizeof *grown);
	if (!grown)
		return NULL;
	g->items = grown;
	grown[g->count] = (struct compiled_graph){ .pid = pid, .graph = graph };
	return &grown[g->count++];
}

static enum compiled_part part_of(const char *phase)
{
	return phase && !strcmp(phase, "backward") ? COMPILED_BACKWARD
						   : COMPILED_FORWARD;
}

static void count_op(struct compiled_graph *g, const struct trace_event *e)
{
	const struct trace_op *op = &e->op;
	const char *region = compiled_region(op->op);

	if (!g->name && region)
		g->name = region;
	if (!strncmp(op->op, "compiled:", 9)) {
		g->calls[part_of(op->phase)]++;
		return;
	}
	g->compiles++;
	g->compile_us += e->dur;
	if (op->status || op->incomplete)
		g->failed++;
}

static void count_cast(struct compiled_graph *g, const struct trace_cast *c)
{
	const char *by = c->made_by ? c->made_by : "";

	g->casts[part_of(trace_cast_for_phase(c))]++;
	if (!strcmp(by, "program"))
		g->by_program++;
	else if (!strcmp(by, "autograd"))
		g->by_autograd++;
	else
		g->by_autocast++;
}

int compiled_graphs_build(const struct trace *trace,
			  struct compiled_graphs *out)
{
	*out = (struct compiled_graphs){ 0 };
	for (size_t i = 0; i < trace->nevents; i++) {
		const struct trace_event *e = &trace->events[i];
		uint64_t graph = e->kind == TRACE_OP ? e->op.graph
			: e->kind == TRACE_OTHER_CAST &&
					  trace_cast_is_compiled(&e->cast)
				  ? e->cast.graph
				  : 0;
		if (!graph)
			continue;
		struct compiled_graph *g = graph_of(out, e->pid, graph);
		if (!g)
			return -1;
		if (e->kind == TRACE_OP)
			count_op(g, e);
		else
			count_cast(g, &e->cast);
	}
	return 0;
}

void compiled_graphs_free(struct compiled_graphs *graphs)
{
	free(graphs->items);
	*graphs = (struct compiled_graphs){ 0 };
}
