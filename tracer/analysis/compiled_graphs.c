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
	const char *made_by = trace_cast_graph(c)->made_by;
	const char *by = made_by ? made_by : "";

	g->casts[part_of(trace_cast_for_phase(c))]++;
	if (!strcmp(by, "program"))
		g->by_program++;
	else if (!strcmp(by, "autograd"))
		g->by_autograd++;
	else
		g->by_autocast++;
}

/* The one graph of `region` in process pid, or NULL (none, or several). */
static struct compiled_graph *only_graph_of(struct compiled_graphs *g,
					    int64_t pid, const char *region)
{
	struct compiled_graph *found = NULL;

	for (size_t i = 0; i < g->count; i++) {
		struct compiled_graph *c = &g->items[i];
		if (c->pid != pid || !c->name || strcmp(c->name, region))
			continue;
		if (found)
			return NULL;
		found = c;
	}
	return found;
}

/* The calls of an aggregated step: its op rows of `compiled:` ops. */
static void count_aggregated_calls(struct compiled_graphs *g,
				   const struct trace_event *e)
{
	for (int i = 0; i < e->aggregate.nops; i++) {
		const struct trace_aggregate_op *row = &e->aggregate.ops[i];
		if (strncmp(row->op, "compiled:", 9))
			continue;
		struct compiled_graph *c = only_graph_of(g, e->pid, row->op + 9);
		if (c)
			c->calls[part_of(row->phase)] += row->count;
		else
			g->unattributed_calls += row->count;
	}
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
				  ? trace_cast_graph(&e->cast)->graph
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
	/* after the graphs: a compile may be written after a call */
	for (size_t i = 0; trace->counts[TRACE_AGGREGATE] && i < trace->nevents;
	     i++)
		if (trace->events[i].kind == TRACE_AGGREGATE)
			count_aggregated_calls(out, &trace->events[i]);
	return 0;
}

void compiled_graphs_free(struct compiled_graphs *graphs)
{
	free(graphs->items);
	*graphs = (struct compiled_graphs){ 0 };
}
