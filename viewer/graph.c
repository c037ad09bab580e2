/* Builds the graph of a selection (graph.h): folds repeated blocks, keeps
 * the first --ops units, and turns ops, casts and inputs into nodes and
 * edges with their labels.  Folded blocks and optimizer boxes are in
 * graph_hidden.c, storage and text helpers in graph_store.c, findings in
 * graph_notes.c. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------- clusters */

static int region_cluster(struct graph_builder *b, int region)
{
	struct graph *g = b->g;
	const struct view_region *r = &b->s->regions[region];

	if (b->region_cluster[region] >= 0)
		return b->region_cluster[region];
	int parent = r->parent >= 0 ? region_cluster(b, r->parent) : -1;
	int c = graph_new_cluster(g, parent, "cluster_%zu", g->nclusters + 1);
	size_t start = g->text.len;
	jsonw_reset(&b->label);
	graph_text(&b->label, "autocast%s", r->enabled ? "" : " disabled");
	if (r->scope)
		graph_text(&b->label, " '%s'", r->scope);
	graph_text(&b->label, " · %s", r->device ? r->device : "?");
	if (r->enabled && r->dtype)
		graph_text(&b->label, " %s", r->dtype);
	graph_text(&b->label, " · depth %d", r->depth);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "style", r->enabled ? "rounded,filled" : "rounded,filled,dashed");
	graph_attr(g, start, "fillcolor", r->enabled ? graph_dtype_tint(r->dtype)
					       : "#f4f4f4");
	graph_attr(g, start, "color", r->enabled ? graph_dtype_color(r->dtype)
					   : "#888888");
	graph_end_cluster(g, c);
	b->region_cluster[region] = c;
	return c;
}

/* Ops outside any region that run backward share one cluster per run. */
static int backward_cluster(struct graph_builder *b)
{
	struct graph *g = b->g;

	if (b->backward_cluster >= 0)
		return b->backward_cluster;
	int c = graph_new_cluster(g, -1, "cluster_%zu", g->nclusters + 1);
	size_t start = g->text.len;
	graph_attr(g, start, "label", "backward pass");
	graph_attr(g, start, "style", "rounded,filled,dashed");
	graph_attr(g, start, "fillcolor", "#f6f5ef");
	graph_attr(g, start, "color", "#8c8c7a");
	graph_end_cluster(g, c);
	b->backward_cluster = c;
	return c;
}

int graph_cluster_of_op(struct graph_builder *b, size_t ordinal)
{
	const struct view_op *v = &b->s->ops[ordinal];
	const struct trace_op *op = view_op_of(b->s, ordinal);

	if (v->region >= 0) {
		b->backward_cluster = -1;
		return region_cluster(b, v->region);
	}
	if (!strcmp(op->phase, "backward"))
		return backward_cluster(b);
	b->backward_cluster = -1;
	return -1;
}

/* ------------------------------------------------------------- inputs */

/* Keeps a node that has no inputs (an input, a reference) next to its
 * consumer: without an edge in, dot ranks it at the very top. */
static void anchor_node(struct graph_builder *b, size_t node)
{
	struct graph *g = b->g;

	if (b->anchor == VIEW_NONE)
		return;
	size_t edge = graph_new_edge(g, b->anchor, node);
	size_t start = g->text.len;
	graph_attr(g, start, "style", "invis");
	graph_end_edge(g, edge);
}

/* Near enough, and drawn in the current independent part: a part that
 * shared its predecessor's leaves would be pulled under it. */
bool graph_input_near(const struct graph_builder *b, size_t node)
{
	size_t unit = b->g->nodes[node].unit;

	return b->unit - unit <= GRAPH_LONG_EDGE && unit >= b->part_unit;
}

/* A tensor the view did not make: a named leaf, or what an op outside
 * the view (another step, phase or scope) produced.  One node each, drawn
 * again when its next use is far below the last. */
static size_t input_node(struct graph_builder *b, const struct view_source *src,
			 const char *dtype, const struct trace_tensor *shape)
{
	struct graph *g = b->g;
	const struct view_selection *s = b->s;
	uint64_t found;
	char tensor[160];

	if (view_map_get(&b->input_nodes, src->pid, src->tensor, &found) &&
	    graph_input_near(b, (size_t)found)) {
		g->nodes[found].unit = b->unit;
		return (size_t)found;
	}
	const char *name = view_tensor_name(s, src->pid, src->tensor);
	size_t node = graph_new_node(g, -1, "in%zu", ++b->inputs_drawn);
	size_t start = g->text.len;
	g->nodes[node].unit = b->unit;
	jsonw_reset(&b->label);
	graph_tensor_text(tensor, sizeof tensor, dtype, shape);
	const struct trace_event *e = src->kind == VIEW_SOURCE_OUTSIDE ?
		&s->trace->events[src->index] : NULL;
	bool factory = e && e->kind == TRACE_OP && view_op_is_factory(&e->op);
	char op[128];
	if (name) {
		graph_text(&b->label, "%s\n%s", name, tensor);
	} else if (factory) {
		graph_text(&b->label, "%s\n%s",
			 trace_op_label(&e->op, op, sizeof op), tensor);
	} else if (e) {
		if (e->kind == TRACE_CAST)
			snprintf(op, sizeof op, "cast %s→%s", e->cast.from,
				 e->cast.to);
		else
			trace_op_label(&e->op, op, sizeof op);
		int step = s->analysis.step_of[src->index];
		if (s->step != VIEW_STEP_ALL && step != s->step)
			graph_text(&b->label, "from step %d: %s\n%s", step, op,
				 tensor);
		else
			graph_text(&b->label, "from %s (not shown)\n%s", op,
				 tensor);
	} else {
		graph_text(&b->label, "input\n%s", tensor);
	}
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "shape", "ellipse");
	graph_attr(g, start, "style", name || factory ? "filled" : "filled,dashed");
	graph_attr(g, start, "fillcolor", name ? "#fff6c8" : "#f2f2f2");
	graph_end_node(g, node);
	if (!view_map_put(&b->input_nodes, src->pid, src->tensor, node))
		g->failed = true;
	anchor_node(b, node);
	return node;
}

/* A stand-in for a node drawn far above: "from linear #12", linked to it
 * (click in a browser).  Edges over hundreds of ranks are what make dot
 * slow (each rank crossed is a virtual node to place and route) and they
 * cannot be followed by eye anyway. */
static size_t ref_node(struct graph_builder *b, size_t target)
{
	struct graph *g = b->g;
	uint64_t found;
	char url[40];

	if (view_map_get(&b->ref_nodes, 0, target, &found) &&
	    b->unit - g->nodes[found].unit <= GRAPH_LONG_EDGE) {
		g->nodes[found].unit = b->unit;
		return (size_t)found;
	}
	size_t node = graph_new_node(g, -1, "ref%zu", ++b->refs_drawn);
	size_t start = g->text.len;
	g->nodes[node].unit = b->unit;
	jsonw_reset(&b->label);
	graph_text(&b->label, "from %s ↑", g->nodes[target].brief);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "style", "rounded,dashed");
	graph_attr(g, start, "fontsize", "8");
	snprintf(url, sizeof url, "#%s", g->nodes[target].id);
	graph_attr(g, start, "URL", url);
	jsonw_reset(&b->label);
	graph_text(&b->label, "drawn above: %s (click to go there)",
		 g->nodes[target].brief);
	graph_attr(g, start, "tooltip", b->label.data);
	graph_end_node(g, node);
	if (!view_map_put(&b->ref_nodes, 0, target, node))
		g->failed = true;
	anchor_node(b, node);
	return node;
}

/* The node a source is drawn as: its op, its cast, the fold hiding it (or
 * a reference to one of those when it is far above), or an input node. */
size_t graph_source_node(struct graph_builder *b, const struct view_source *src,
			 const char *dtype, const struct trace_tensor *shape)
{
	uint64_t found;
	size_t node = VIEW_NONE;

	switch (src->kind) {
	case VIEW_SOURCE_OP:
		node = b->node_of_op[src->index];
		break;
	case VIEW_SOURCE_CAST:
		if (view_map_get(&b->cast_nodes, 0, src->index, &found))
			node = (size_t)found;
		else if (b->s->ordinal_of[src->index] != VIEW_NONE)
			node = b->node_of_op[b->s->ordinal_of[src->index]];
		break;
	default:
		break;
	}
	if (node == VIEW_NONE)
		return input_node(b, src, dtype, shape);
	if (b->unit - b->g->nodes[node].unit > GRAPH_LONG_EDGE)
		return ref_node(b, node);
	return node;
}

static void tensor_edge(struct graph_builder *b, size_t from, size_t to,
			const char *dtype, const struct trace_tensor *shape)
{
	struct graph *g = b->g;
	char tensor[160];
	size_t edge = graph_new_edge(g, from, to);
	size_t start = g->text.len;

	graph_attr(g, start, "xlabel", graph_tensor_text(tensor, sizeof tensor, dtype, shape));
	graph_attr(g, start, "color", graph_dtype_color(dtype));
	graph_attr(g, start, "fontcolor", graph_dtype_color(dtype));
	graph_end_edge(g, edge);
}

/* ----------------------------------------------------------------- ops */

struct cast_style {
	const char *cache, *text, *style, *fill;
	const char *peripheries;
};

/* A hit did no work (dashed, white); an uncacheable cast is redone on
 * every use (double border). */
static const struct cast_style cast_styles[] = {
	{ "miss", "cache miss: converted, cached", "filled,diagonals",
	  "#ffc870", "1" },
	{ "hit", "cache hit: reused, no work", "filled,diagonals,dashed",
	  "#ffffff", "1" },
	{ "uncacheable", "uncacheable", "filled,diagonals", "#ffc870", "2" },
	{ "disabled", "cache disabled: redone", "filled,diagonals", "#ff9f80",
	  "1" },
};

static const struct cast_style *cast_style(const char *cache)
{
	for (size_t i = 0; i < sizeof cast_styles / sizeof *cast_styles; i++)
		if (!strcmp(cast_styles[i].cache, cache))
			return &cast_styles[i];
	return &cast_styles[0];
}

/* The weight cache is per process and keyed by source tensor and target
 * dtype: (pid, dtype) packed into the map's first key. */
static int64_t cache_key(const struct trace_event *e)
{
	int64_t dtype = TRACE_DTYPE_COUNT;

	for (int d = 0; d < TRACE_DTYPE_COUNT; d++)
		if (e->cast.to && !strcmp(e->cast.to, trace_dtype_names[d]))
			dtype = d;
	return e->pid * (TRACE_DTYPE_COUNT + 1) + dtype;
}

/* A cache hit points (dashed, grey, not ranked) at the drawn miss that
 * filled the cache entry it reused; the newest miss of the same tensor
 * and dtype is the one, since a clear makes the next use miss again. */
static void link_cache_fill(struct graph_builder *b, size_t node,
			    const struct trace_event *e)
{
	struct graph *g = b->g;
	uint64_t miss;

	if (!strcmp(e->cast.cache, "miss")) {
		if (!view_map_put(&b->cache_fills, cache_key(e), e->cast.tensor,
				  node))
			g->failed = true;
		return;
	}
	if (strcmp(e->cast.cache, "hit") ||
	    !view_map_get(&b->cache_fills, cache_key(e), e->cast.tensor, &miss))
		return;
	size_t edge = graph_new_edge(g, node, (size_t)miss);
	size_t start = g->text.len;
	graph_attr(g, start, "style", "dashed");
	graph_attr(g, start, "color", "#a0620a");
	graph_attr(g, start, "arrowhead", "onormal");
	graph_attr(g, start, "constraint", "false");
	graph_attr(g, start, "tooltip", "cache hit: reuses the cast of this miss");
	graph_end_edge(g, edge);
}

static size_t draw_cast(struct graph_builder *b, int cluster, size_t ordinal,
			size_t slot, const struct view_input *in)
{
	struct graph *g = b->g;
	const struct trace_cast *c = &b->s->trace->events[in->cast].cast;
	const struct cast_style *style = cast_style(c->cache);
	char bytes[32];
	size_t node = graph_new_node(g, cluster, "op%zu_cast%zu", ordinal + 1, slot);
	size_t start = g->text.len;

	g->nodes[node].unit = b->unit;
	snprintf(g->nodes[node].brief, sizeof g->nodes[node].brief,
		 "cast %s→%s #%zu", c->from, c->to, ordinal + 1);
	graph_attr(g, start, "id", g->nodes[node].id);
	jsonw_reset(&b->label);
	graph_text(&b->label, "cast %s→%s\n", c->from, c->to);
	if (c->source->name)
		graph_text(&b->label, "%s · ", c->source->name);
	graph_text(&b->label, "%s\n", graph_bytes_text(bytes, sizeof bytes, c->bytes));
	if (!strcmp(c->cache, "uncacheable") && c->reason)
		graph_text(&b->label, "uncacheable: %s", c->reason);
	else if (!strcmp(style->cache, c->cache))
		jsonw_cstr(&b->label, style->text);
	else
		graph_text(&b->label, "cache %s", c->cache);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "shape", "box");
	graph_attr(g, start, "style", style->style);
	graph_attr(g, start, "fillcolor", style->fill);
	graph_attr(g, start, "color", "#a0620a");
	graph_attr(g, start, "peripheries", style->peripheries);
	jsonw_reset(&b->label);
	graph_text(&b->label, "cast arg %d %s→%s, cache %s%s%s", c->arg, c->from,
		 c->to, c->cache, c->reason ? ": " : "",
		 c->reason ? c->reason : "");
	graph_attr(g, start, "tooltip", b->label.data);
	graph_end_node(g, node);
	if (!view_map_put(&b->cast_nodes, 0, in->cast, node))
		g->failed = true;
	g->casts_shown++;
	graph_cast_flags(b, node, c);
	link_cache_fill(b, node, &b->s->trace->events[in->cast]);
	return node;
}

static void op_label(struct graph_builder *b, size_t ordinal)
{
	const struct view_op *v = &b->s->ops[ordinal];
	const struct trace_event *e = &b->s->trace->events[v->event];
	const struct trace_op *op = &e->op;
	char name[128], tensor[160], time[32];

	jsonw_reset(&b->label);
	graph_text(&b->label, "%s\n", trace_op_label(op, name, sizeof name));
	if (!strcmp(op->phase, "backward") && v->forward)
		graph_text(&b->label, "backward of %s\n", v->forward);
	if (v->parent)
		graph_text(&b->label, "in %s\n", v->parent);
	if (op->incomplete) {
		jsonw_cstr(&b->label, "in flight when the process ended");
		return;
	}
	graph_text(&b->label, "%s → ", op->policy);
	if (op->noutputs)
		graph_text(&b->label, "%s", graph_tensor_text(tensor, sizeof tensor,
						      op->outputs[0].info->dtype,
						      &op->outputs[0]));
	else
		jsonw_cstr(&b->label, "no output");
	if (op->noutputs > 1)
		graph_text(&b->label, " +%d", op->noutputs - 1);
	graph_text(&b->label, "\n%s", graph_time_text(time, sizeof time, e->dur));
}

static void op_tooltip(struct graph_builder *b, const struct trace_op *op)
{
	const struct trace_autocast *a = op->autocast;

	jsonw_reset(&b->label);
	graph_text(&b->label, "%s on %s%s · autocast ", op->phase, op->device,
		 op->emulated ? " (emulated)" : "");
	if (a->enabled)
		graph_text(&b->label, "%s %s, depth %d%s%s%s", a->device,
			 a->dtype, a->depth, a->scope ? ", in '" : "",
			 a->scope ? a->scope : "", a->scope ? "'" : "");
	else
		jsonw_cstr(&b->label, "off");
}

/* The first unit of an independent part hangs from nothing above it, so
 * dot can put the part beside the one before (graph_write_dot). */
void graph_begin_unit(struct graph_builder *b, size_t node, size_t ordinal)
{
	struct graph *g = b->g;

	g->nodes[node].unit = ++b->unit;
	if (b->part_start[ordinal]) {
		b->anchor = VIEW_NONE;
		b->part_unit = b->unit;
		g->heads[g->nheads++] = node;
	} else {
		b->anchor = b->last_unit;
	}
	b->last_unit = node;
}

static void draw_op(struct graph_builder *b, size_t ordinal)
{
	struct graph *g = b->g;
	const struct view_selection *s = b->s;
	const struct view_op *v = &s->ops[ordinal];
	const struct trace_op *op = view_op_of(s, ordinal);
	int cluster = graph_module_cluster_of_op(b, ordinal,
						 graph_cluster_of_op(b, ordinal));
	bool backward = !strcmp(op->phase, "backward");
	size_t node = graph_new_node(g, cluster, "op%zu", ordinal + 1);
	size_t start = g->text.len;
	char name[64];

	graph_begin_unit(b, node, ordinal);
	snprintf(g->nodes[node].brief, sizeof g->nodes[node].brief, "%s #%zu",
		 trace_op_label(op, name, sizeof name), ordinal + 1);
	graph_attr(g, start, "id", g->nodes[node].id);
	op_label(b, ordinal);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "style", backward ? "filled,dashed" : "rounded,filled");
	graph_attr(g, start, "fillcolor", graph_dtype_fill(op->noutputs ?
						     op->outputs[0].info->dtype : NULL));
	op_tooltip(b, op);
	graph_attr(g, start, "tooltip", b->label.data);
	graph_end_node(g, node);
	b->node_of_op[ordinal] = node;
	g->ops_shown++;
	graph_op_flags(b, node, op);

	for (size_t k = 0; k < v->ninputs; k++) {
		const struct view_input *in = &s->inputs[v->first_input + k];
		if (in->cast == VIEW_NONE) {
			size_t from = graph_source_node(b, &in->source,
							in->tensor->info->dtype,
							in->tensor);
			tensor_edge(b, from, node, in->tensor->info->dtype,
				    in->tensor);
			continue;
		}
		const struct trace_cast *c = &s->trace->events[in->cast].cast;
		size_t from = graph_source_node(b, &in->source, c->from, in->tensor);
		size_t cast = draw_cast(b, cluster, ordinal, k, in);
		tensor_edge(b, from, cast, c->from, in->tensor);
		tensor_edge(b, cast, node, c->to, in->tensor);
	}
}

/* Marks the ops each fold or box hides; returns how many ops fit in
 * max_ops units (an op, fold or box node each). */
static size_t plan(struct graph_builder *b, const struct view_options *o)
{
	struct graph *g = b->g;
	size_t n = b->s->nops, units = 0;

	/* node_of_op too: a malformed trace can use a cast's result in an
	 * op drawn before the cast's own op (drawn as an input then) */
	for (size_t k = 0; k < n; k++)
		b->hidden_in[k] = b->node_of_op[k] = VIEW_NONE;
	for (size_t f = 0; f < g->nfolds; f++) {
		const struct view_fold *fold = &g->folds[f];
		for (size_t k = fold->start + fold->period;
		     k < fold->start + fold->count * fold->period; k++)
			b->hidden_in[k] = f;
		b->fold_node[f] = VIEW_NONE;
	}
	if (!graph_plan_boxes(b)) {
		g->failed = true;
		return 0;
	}
	for (size_t k = 0; k < n; k++) {
		size_t f = b->hidden_in[k], box = b->box_of[k];
		size_t module = b->module_of[k];
		bool unit = module != VIEW_NONE ? g->modules[module].first == k :
			    box != VIEW_NONE ? g->boxes[box].first == k :
			    f == VIEW_NONE ||
			    k == g->folds[f].start + g->folds[f].period;
		if (unit && o->max_ops && units == o->max_ops)
			return k;
		units += unit;
	}
	return n;
}

/* Independent parts: op k starts one when no op from k on reads what an
 * op before k made (the infer sample's second forward pass, the steps of
 * a program whose optimizer runs no ops).  One pass from the end keeps
 * the earliest source any later op reads. */
static void find_parts(struct graph_builder *b)
{
	const struct view_selection *s = b->s;
	size_t earliest = VIEW_NONE;

	for (size_t k = s->nops; k-- > 0;) {
		const struct view_op *v = &s->ops[k];
		for (size_t i = 0; i < v->ninputs; i++) {
			size_t from = view_source_ordinal(
				s, &s->inputs[v->first_input + i].source);
			if (from < earliest)
				earliest = from;
		}
		b->part_start[k] = earliest == VIEW_NONE || earliest >= k;
	}
}

/* The parts' first nodes (graph_begin_unit collects them), left to
 * right in program order, joined by invisible edges that dot.c puts on
 * one rank. */
static void link_parts(struct graph_builder *b)
{
	struct graph *g = b->g;

	if (g->nheads < 2) {
		g->nheads = 0;
		return;
	}
	for (size_t h = 1; h < g->nheads; h++) {
		size_t edge = graph_new_edge(g, g->heads[h - 1], g->heads[h]);
		size_t start = g->text.len;
		graph_attr(g, start, "style", "invis");
		graph_end_edge(g, edge);
	}
}

int graph_build(struct graph *g, const struct view_selection *s,
		const struct view_options *o)
{
	struct graph_builder b = { .g = g, .s = s, .backward_cluster = -1,
			     .last_unit = VIEW_NONE, .anchor = VIEW_NONE };
	size_t n = s->nops ? s->nops : 1;

	*g = (struct graph){ .s = s, .o = o, .module_depth =
			     o->depth >= 0 ? o->depth : VIEW_DEPTH_OPS };
	/* in a module view the module nodes fold instead (graph_modules.c) */
	if (o->fold && o->depth == VIEW_DEPTH_OPS &&
	    view_fold_selection(s, &g->folds, &g->nfolds) != 0)
		return -1;
	graph_drop_optimizer_folds(g);
	/* module nodes first: repeated runs of them fold, as ops do */
	if (!graph_plan_modules(&b)) {
		g->failed = true;
		goto out;
	}
	b.hidden_in = malloc(n * sizeof *b.hidden_in);
	b.node_of_op = malloc(n * sizeof *b.node_of_op);
	b.part_start = malloc(n * sizeof *b.part_start);
	g->heads = malloc(n * sizeof *g->heads);
	b.fold_node = malloc((g->nfolds ? g->nfolds : 1) * sizeof *b.fold_node);
	b.region_cluster = malloc((s->nregions ? s->nregions : 1) *
				  sizeof *b.region_cluster);
	if (!b.hidden_in || !b.node_of_op || !b.part_start || !g->heads ||
	    !b.fold_node ||
	    !b.region_cluster) {
		g->failed = true;
		goto out;
	}
	for (size_t r = 0; r < s->nregions; r++)
		b.region_cluster[r] = -1;
	size_t shown = plan(&b, o);
	find_parts(&b);
	for (size_t k = 0; k < shown && !g->failed; k++) {
		if (b.module_of[k] != VIEW_NONE)
			graph_collapse_op(&b, k);
		else if (b.hidden_in[k] == VIEW_NONE && b.box_of[k] == VIEW_NONE)
			draw_op(&b, k);
		else
			graph_hide_op(&b, k);
	}
	g->ops_left_out = s->nops - shown;
	link_parts(&b);
	graph_place_findings(&b, shown);
	graph_draw_findings(&b);
	for (size_t f = 0; f < g->nfolds; f++)
		if (b.fold_node[f] == VIEW_NONE)
			g->folds[f].count = 0;   /* left out by max_ops */
out:
	free(b.hidden_in);
	free(b.node_of_op);
	free(b.part_start);
	free(b.fold_node);
	free(b.box_of);
	free(b.box_node);
	free(b.region_cluster);
	graph_free_modules(&b);
	view_map_free(&b.cast_nodes);
	view_map_free(&b.cache_fills);
	view_map_free(&b.input_nodes);
	view_map_free(&b.ref_nodes);
	view_map_free(&b.fold_edges);
	if (g->text.failed || b.label.failed)
		g->failed = true;
	jsonw_free(&b.label);
	return g->failed ? -1 : 0;
}
