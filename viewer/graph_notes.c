/* Findings on the graph (graph.h): red borders on every node that shows
 * a problem the trace's analysis (tracer/findings.h) names, and one note
 * per finding on the node of the op it names. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Marks a node that shows a problem the analysis names `kind`; the
 * analysis reports one occurrence per site, the view marks them all. */
void graph_flag(struct graph_builder *b, size_t node, const char *kind)
{
	struct graph *g = b->g;

	if (node >= g->nnodes)
		return;
	g->nodes[node].flagged = true;
	for (size_t i = 0; i < g->nflags; i++)
		if (!strcmp(g->flags[i].kind, kind)) {
			g->flags[i].count++;
			return;
		}
	struct graph_flag *grown = realloc(g->flags, (g->nflags + 1) *
						     sizeof *grown);
	if (!grown) {
		g->failed = true;
		return;
	}
	g->flags = grown;
	g->flags[g->nflags++] = (struct graph_flag){ kind, node, 1 };
}

void graph_op_flags(struct graph_builder *b, size_t node, const struct trace_op *op)
{
	if (!strcmp(op->phase, "backward") && op->autocast.enabled)
		graph_flag(b, node, "backward-under-autocast");
	if (op->status || op->error)
		graph_flag(b, node, "op-error");
}

void graph_cast_flags(struct graph_builder *b, size_t node,
		       const struct trace_cast *c)
{
	if (c->stale)
		graph_flag(b, node, "stale-cache");
	if (!strcmp(c->cache, "disabled"))
		graph_flag(b, node, "cache-disabled");
}

/* The node drawn for the op (or cast) a finding names, or VIEW_NONE. */
static size_t node_of_finding(struct graph_builder *b, const struct trace_finding *f,
			      size_t shown_ops)
{
	const struct view_selection *s = b->s;
	const struct trace *t = s->trace;
	size_t event = f->event < t->nevents ? f->event : VIEW_NONE;
	const struct trace_event *op = NULL;

	if (event != VIEW_NONE && f->op_id)
		op = analysis_op(&s->analysis, t->events[event].pid, f->op_id);
	if (op)
		event = (size_t)(op - t->events);
	if (event == VIEW_NONE || (t->events[event].kind != TRACE_OP &&
				   t->events[event].kind != TRACE_CAST))
		return VIEW_NONE;
	size_t ordinal = s->ordinal_of[event];
	if (ordinal == VIEW_NONE || ordinal >= shown_ops)
		return VIEW_NONE;
	uint64_t cast;
	if (t->events[event].kind == TRACE_CAST &&
	    view_map_get(&b->cast_nodes, 0, event, &cast))
		return (size_t)cast;
	return b->node_of_op[ordinal];
}

/* At most this many notes: the others are listed in the title. */
#define GRAPH_MAX_NOTES 12

/* Every finding of the trace goes on the node it names when the view
 * draws it, else on the first node flagged with its kind, else into the
 * title. */
void graph_place_findings(struct graph_builder *b, size_t shown_ops)
{
	struct graph *g = b->g;
	const struct analysis *a = &b->s->analysis;

	g->findings = calloc(a->nfindings ? a->nfindings : 1,
			     sizeof *g->findings);
	g->elsewhere = calloc(a->nfindings ? a->nfindings : 1,
			      sizeof *g->elsewhere);
	if (!g->findings || !g->elsewhere) {
		g->failed = true;
		return;
	}
	for (size_t i = 0; i < a->nfindings; i++) {
		const struct trace_finding *f = &a->findings[i];
		size_t node = node_of_finding(b, f, shown_ops);
		for (size_t k = 0; k < g->nflags && node == VIEW_NONE; k++)
			if (!strcmp(g->flags[k].kind, f->kind))
				node = g->flags[k].first_node;
		for (size_t k = 0; k < g->nfindings && node != VIEW_NONE; k++)
			if (g->findings[k].node == node &&
			    !strcmp(g->findings[k].finding->kind, f->kind))
				node = VIEW_NONE;  /* one note per kind and node */
		if (node == VIEW_NONE || g->nfindings == GRAPH_MAX_NOTES) {
			g->elsewhere[g->nelsewhere++] = f;
			continue;
		}
		if (!g->nodes[node].flagged)
			graph_flag(b, node, f->kind);
		g->findings[g->nfindings++] = (struct graph_finding){ f, node };
	}
}

/* One note per placed finding: severity, kind, the analysis's message
 * (its first occurrence) and fix. */
void graph_draw_findings(struct graph_builder *b)
{
	struct graph *g = b->g;

	for (size_t i = 0; i < g->nfindings; i++) {
		const struct trace_finding *f = g->findings[i].finding;
		size_t target = g->findings[i].node;
		size_t flagged = 0;
		for (size_t k = 0; k < g->nflags; k++)
			if (!strcmp(g->flags[k].kind, f->kind))
				flagged = g->flags[k].count;
		size_t node = graph_new_node(g, g->nodes[target].cluster, "finding%zu",
				       i + 1);
		size_t start = g->text.len;
		jsonw_reset(&b->label);
		graph_text(&b->label, "⚠ %s: %s", finding_severity_name(f->severity),
			 f->kind);
		if (f->count > 1)
			graph_text(&b->label, " (×%zu in the trace)", f->count);
		if (flagged > 1)
			graph_text(&b->label, "\n%zu red-bordered nodes here",
				 flagged);
		jsonw_cstr(&b->label, "\n");
		graph_wrap(&b->label, f->message, 56, 6);
		if (f->fix) {
			jsonw_cstr(&b->label, "\nfix: ");
			graph_wrap(&b->label, f->fix, 56, 3);
		}
		graph_attr(g, start, "label", b->label.data);
		graph_attr(g, start, "shape", "note");
		graph_attr(g, start, "style", "filled");
		graph_attr(g, start, "fillcolor", "#ffe4e1");
		graph_attr(g, start, "color", "#cc0000");
		graph_attr(g, start, "fontcolor", "#990000");
		graph_attr(g, start, "tooltip", f->message);
		graph_end_node(g, node);
		size_t edge = graph_new_edge(g, node, target);
		start = g->text.len;
		graph_attr(g, start, "style", "dashed");
		graph_attr(g, start, "color", "#cc0000");
		graph_attr(g, start, "arrowhead", "none");
		graph_end_edge(g, edge);
	}
}

/* Marks the ops each fold hides; returns how many ops fit in max_ops
 * units (an op node or a fold node each). */
