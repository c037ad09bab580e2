/* Ops drawn as one node: the repetitions of a folded block (fold.c finds
 * them) and the optimizer's ops of a step (phase optimizer), each node
 * wired to what the ops it hides read from the drawn graph. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- folds */

struct cast_count {
	const char *from, *to;
	size_t casts, hits;
};

static void fold_label(struct graph_builder *b, const struct view_fold *f)
{
	const struct view_selection *s = b->s;
	struct cast_count counts[8];
	size_t ncounts = 0, casts = 0, first = f->start + f->period;
	size_t last = f->start + f->count * f->period - 1;
	char from[128], to[128];
	struct view_map outside = { 0 };
	uint64_t seen;

	for (size_t k = first; k <= last; k++) {
		const struct view_op *v = &s->ops[k];
		for (size_t i = 0; i < v->ninputs; i++) {
			const struct view_input *in = &s->inputs[v->first_input + i];
			if ((in->source.kind == VIEW_SOURCE_OUTSIDE ||
			     in->source.kind == VIEW_SOURCE_NONE) &&
			    !view_map_get(&outside, in->source.pid,
					  in->source.tensor, &seen) &&
			    !view_map_put(&outside, in->source.pid,
					  in->source.tensor, 1))
				b->g->failed = true;
			if (in->cast == VIEW_NONE)
				continue;
			const struct trace_cast *c = &s->trace->events[in->cast].cast;
			size_t j = 0;
			while (j < ncounts && !(counts[j].from == c->from &&
						counts[j].to == c->to))
				j++;
			if (j == ncounts && ncounts < 8)
				counts[ncounts++] = (struct cast_count){ c->from, c->to,
									 0, 0 };
			if (j < ncounts) {
				counts[j].casts++;
				counts[j].hits += !strcmp(c->cache, "hit");
			}
			casts++;
		}
	}
	jsonw_reset(&b->label);
	graph_text(&b->label, "folded: %zu more repetition%s\n", f->count - 1,
		 f->count > 2 ? "s" : "");
	if (f->calls)   /* module nodes (graph_modules.c), drawn above */
		graph_text(&b->label, "of the %zu %s %s … %s above\n",
			   f->calls, f->with_ops ? "nodes" : "modules",
			   b->g->nodes[b->node_of_op[f->start]].brief,
			   b->g->nodes[b->node_of_op[f->start + f->period - 1]].brief);
	else
		graph_text(&b->label, "of the %zu ops %s … %s above\n", f->period,
			   trace_op_label(view_op_of(s, f->start), from, sizeof from),
			   trace_op_label(view_op_of(s, f->start + f->period - 1),
					  to, sizeof to));
	graph_text(&b->label, "%zu ops, %zu casts hidden", last - first + 1, casts);
	for (size_t j = 0; j < ncounts; j++)
		graph_text(&b->label, "\n%s→%s ×%zu (%zu cache hits)",
			 counts[j].from, counts[j].to, counts[j].casts,
			 counts[j].hits);
	if (view_map_size(&outside))
		graph_text(&b->label, "\nreading %zu more tensors made outside "
			 "the view (weights, inputs)", view_map_size(&outside));
	view_map_free(&outside);
}

/* The fold's node sits in the cluster of the ops it hides when they all
 * share one (a layer's region), else at the top level; a fold of module
 * nodes beside them. */
static int cluster_of_fold(struct graph_builder *b, const struct view_fold *f)
{
	if (f->calls)   /* beside the module nodes it repeats */
		return b->g->nodes[b->node_of_op[f->start]].cluster;
	size_t first = f->start + f->period;
	size_t last = f->start + f->count * f->period - 1;
	const struct trace_op *a = view_op_of(b->s, first);
	const struct trace_op *z = view_op_of(b->s, last);

	if (b->s->ops[first].region == b->s->ops[last].region &&
	    a->phase == z->phase)
		return graph_cluster_of_op(b, first);
	b->backward_cluster = -1;
	return -1;
}

static void draw_fold(struct graph_builder *b, size_t fold)
{
	struct graph *g = b->g;
	const struct view_fold *f = &g->folds[fold];
	int cluster = cluster_of_fold(b, f);
	size_t node = graph_new_node(g, cluster, "fold%zu", ++b->folds_drawn);
	size_t start = g->text.len;

	graph_begin_unit(b, node, f->start + f->period);
	snprintf(g->nodes[node].brief, sizeof g->nodes[node].brief,
		 "folded block %zu", b->folds_drawn);
	graph_attr(g, start, "id", g->nodes[node].id);
	fold_label(b, f);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "shape", "box3d");
	graph_attr(g, start, "style", "filled");
	graph_attr(g, start, "fillcolor", "#e4e4e4");
	graph_end_node(g, node);
	b->fold_node[fold] = node;
}

/* Whether the source is drawn already (an op, a cast, a fold), or is an
 * input whose node is near. */
static bool drawn_source(struct graph_builder *b, const struct view_source *src)
{
	uint64_t found;

	if (src->kind == VIEW_SOURCE_OP || (src->kind == VIEW_SOURCE_CAST &&
					    b->s->ordinal_of[src->index] !=
						    VIEW_NONE))
		return true;
	return view_map_get(&b->input_nodes, src->pid, src->tensor, &found) &&
	       graph_input_near(b, (size_t)found);
}

/* ----------------------------------------------------- optimizer boxes */

/* Folds of the optimizer's ops alone (its per-parameter updates) give
 * way to the box; folds of whole steps, optimizer included, stay. */
void graph_drop_optimizer_folds(struct graph *g)
{
	size_t kept = 0;

	for (size_t f = 0; f < g->nfolds; f++) {
		const struct view_fold *fold = &g->folds[f];
		bool optimizer_only = true;
		for (size_t k = fold->start;
		     k < fold->start + fold->count * fold->period && optimizer_only; k++)
			optimizer_only = g->s->ops[k].boxed;
		if (!optimizer_only)
			g->folds[kept++] = *fold;
	}
	g->nfolds = kept;
}

/* One box per step for the ops its optimizer (and GradScaler) ran that
 * no fold hides: a training step's graph is its forward and backward
 * passes, and the optimizer's per-parameter updates would be longer
 * than both. */
bool graph_plan_boxes(struct graph_builder *b)
{
	struct graph *g = b->g;
	const struct view_selection *s = b->s;
	size_t n = s->nops ? s->nops : 1;

	b->box_of = malloc(n * sizeof *b->box_of);
	if (!b->box_of)
		return false;
	for (size_t k = 0; k < s->nops; k++) {
		b->box_of[k] = VIEW_NONE;
		if (!s->ops[k].boxed || b->hidden_in[k] != VIEW_NONE)
			continue;
		int step = s->analysis.step_of[s->ops[k].event];
		size_t box = g->nboxes;
		while (box > 0 && g->boxes[box - 1].step != step)
			box--;
		if (box == 0 || g->boxes[box - 1].step != step) {
			struct graph_box *grown = realloc(
				g->boxes, (g->nboxes + 1) * sizeof *grown);
			if (!grown)
				return false;
			g->boxes = grown;
			g->boxes[g->nboxes++] = (struct graph_box){ k, 0, step };
			box = g->nboxes;
		}
		b->box_of[k] = box - 1;
		g->boxes[box - 1].nops++;
	}
	b->box_node = malloc((g->nboxes ? g->nboxes : 1) * sizeof *b->box_node);
	if (!b->box_node)
		return false;
	for (size_t box = 0; box < g->nboxes; box++)
		b->box_node[box] = VIEW_NONE;
	return true;
}

struct op_count {
	const struct trace_op *op;   /* the first of its name */
	size_t count;
};

#define BOX_NAMED_OPS 4

/* "optimizer step 1, folded: 12 ops, 0 casts / add_.Tensor ×8, ...";
 * returns whether all its ops ran in one autocast region. */
static bool box_label(struct graph_builder *b, const struct graph_box *box)
{
	const struct view_selection *s = b->s;
	struct op_count counts[32];
	size_t ncounts = 0, casts = 0, seen = 0;
	int region = s->ops[box->first].region;
	bool one_region = true;
	char name[128];

	for (size_t k = box->first; k < s->nops && seen < box->nops; k++) {
		if (b->box_of[k] != b->box_of[box->first])
			continue;
		seen++;
		const struct view_op *v = &s->ops[k];
		const struct trace_op *op = view_op_of(s, k);
		one_region &= v->region == region;
		for (size_t i = 0; i < v->ninputs; i++)
			casts += s->inputs[v->first_input + i].cast != VIEW_NONE;
		size_t j = 0;
		while (j < ncounts && !(counts[j].op->op == op->op &&
					counts[j].op->overload == op->overload))
			j++;
		if (j == ncounts && ncounts < sizeof counts / sizeof *counts)
			counts[ncounts++] = (struct op_count){ op, 0 };
		if (j < ncounts)
			counts[j].count++;
	}
	for (size_t i = 1; i < ncounts; i++)   /* most frequent first, stable */
		for (size_t j = i; j > 0 && counts[j].count > counts[j - 1].count; j--) {
			struct op_count t = counts[j];
			counts[j] = counts[j - 1];
			counts[j - 1] = t;
		}
	jsonw_reset(&b->label);
	graph_text(&b->label, "optimizer step %d, folded\n%zu op%s, %zu cast%s",
		   box->step, box->nops, box->nops == 1 ? "" : "s", casts,
		   casts == 1 ? "" : "s");
	size_t others = box->nops;
	for (size_t j = 0; j < ncounts && j < BOX_NAMED_OPS; j++) {
		graph_text(&b->label, "%s%s ×%zu", j % 2 ? ", " : "\n",
			   trace_op_label(counts[j].op, name, sizeof name),
			   counts[j].count);
		others -= counts[j].count;
	}
	if (others)
		graph_text(&b->label, "\n+%zu other ops", others);
	jsonw_cstr(&b->label, "\n--phase optimizer draws them");
	return one_region;
}

static void draw_box(struct graph_builder *b, size_t index)
{
	struct graph *g = b->g;
	const struct graph_box *box = &g->boxes[index];
	bool one_region = box_label(b, box);
	int cluster = -1;

	if (one_region)
		cluster = graph_cluster_of_op(b, box->first);
	else
		b->backward_cluster = -1;
	size_t node = graph_new_node(g, cluster, "optimizer%zu", index + 1);
	size_t start = g->text.len;
	graph_begin_unit(b, node, box->first);
	snprintf(g->nodes[node].brief, sizeof g->nodes[node].brief,
		 "optimizer step %d", box->step);
	graph_attr(g, start, "id", g->nodes[node].id);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "shape", "box3d");
	graph_attr(g, start, "style", "filled");
	graph_attr(g, start, "fillcolor", GRAPH_OPTIMIZER_FILL);
	jsonw_reset(&b->label);
	graph_text(&b->label, "the ops of step %d's optimizer (phase optimizer), "
		   "folded into one node: --phase optimizer draws them",
		   box->step);
	graph_attr(g, start, "tooltip", b->label.data);
	graph_end_node(g, node);
	b->box_node[index] = node;
}

/* A hidden op: its inputs from the drawn graph become (one) edge each
 * into the node of its fold or box. */
void graph_hide_op(struct graph_builder *b, size_t ordinal)
{
	struct graph *g = b->g;
	size_t box = b->box_of[ordinal], node;

	if (box != VIEW_NONE) {
		if (b->box_node[box] == VIEW_NONE)
			draw_box(b, box);
		node = b->box_node[box];
		g->ops_boxed++;
	} else {
		size_t fold = b->hidden_in[ordinal];
		const struct view_fold *f = &g->folds[fold];
		if (ordinal == f->start + f->period)
			draw_fold(b, fold);
		node = b->fold_node[fold];
	}
	g->ops_folded++;
	graph_wire_hidden(b, ordinal, node);
}

void graph_wire_hidden(struct graph_builder *b, size_t ordinal, size_t node)
{
	struct graph *g = b->g;
	const struct view_selection *s = b->s;
	const struct view_op *v = &s->ops[ordinal];

	b->node_of_op[ordinal] = node;
	graph_op_flags(b, node, view_op_of(s, ordinal));
	for (size_t k = 0; k < v->ninputs; k++) {
		const struct view_input *in = &s->inputs[v->first_input + k];
		const struct trace_cast *c =
			in->cast != VIEW_NONE ? &s->trace->events[in->cast].cast
					      : NULL;
		const char *dtype = c ? c->from : in->tensor->info->dtype;
		if (c) {
			if (!view_map_put(&b->cast_nodes, 0, in->cast, node))
				g->failed = true;
			graph_cast_flags(b, node, c);
		}
		/* the hidden repetitions' own weights and inputs stand in
		 * the shown block's, the optimizer's parameters in the
		 * forward pass's, a module's weights in its node: counted
		 * in the label, not drawn */
		if (!drawn_source(b, &in->source))
			continue;
		size_t from = graph_source_node(b, &in->source, dtype, in->tensor);
		uint64_t seen;
		if (from == node ||
		    view_map_get(&b->fold_edges, (int64_t)from, node, &seen))
			continue;
		if (!view_map_put(&b->fold_edges, (int64_t)from, node, 1))
			g->failed = true;
		size_t edge = graph_new_edge(g, from, node);
		size_t start = g->text.len;
		graph_attr(g, start, "xlabel", dtype);
		graph_attr(g, start, "color", graph_dtype_color(dtype));
		graph_attr(g, start, "fontcolor", graph_dtype_color(dtype));
		graph_end_edge(g, edge);
	}
}
