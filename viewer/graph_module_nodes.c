/* Module nodes and the clusters of the modules above them
 * (graph_modules.c plans which ops each node stands for): a node's
 * numbers are the module table summary's "by module" table counts
 * (tracer/analysis/module_table.h). */
#include "graph.h"
#include "module_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A module path prefix drawn as a cluster, inside `outer`. */
struct module_cluster {
	int outer;
	const char *module;
	size_t len;
	int cluster;
};

/* "transformer.h.3 · GPT2Block"; the model itself by its class. */
static void module_name(struct jsonw *w, const struct view_selection *s,
			const char *module, size_t len)
{
	const char *class = analysis_module_class(s->trace, module, len);

	if (len)
		graph_text(w, "%.*s%s%s", (int)len, module, class ? " · " : "",
			   class ? class : "");
	else if (class)
		graph_text(w, "%s (the model)", class);
	else
		graph_text(w, "the model");
}

/* The cluster of path prefix module[0..len) inside `outer`, made with
 * the clusters of its own prefixes down to --module's when new. */
static int module_cluster(struct graph_builder *b, int outer,
			  const char *module, size_t len, int parts)
{
	struct graph *g = b->g;

	/* a model recorded without its own path ("") has no cluster */
	if (parts < graph_module_base(g->o) ||
	    (!len && !analysis_module_class(b->s->trace, module, len)))
		return outer;
	for (size_t i = 0; i < b->nmodule_clusters; i++) {
		const struct module_cluster *c = &b->module_clusters[i];
		if (c->outer == outer &&
		    graph_same_path(c->module, c->len, module, len))
			return c->cluster;
	}
	int parent = outer;
	if (parts > graph_module_base(g->o))
		parent = module_cluster(b, outer, module,
					analysis_module_prefix(module, parts - 1),
					parts - 1);
	struct module_cluster *grown =
		trace_grow(b->module_clusters, &b->cap_module_clusters,
			   b->nmodule_clusters + 1, sizeof *grown);
	if (!grown) {
		g->failed = true;
		return outer;
	}
	b->module_clusters = grown;
	int c = graph_new_cluster(g, parent, "cluster_%zu", g->nclusters + 1);
	size_t start = g->text.len;
	jsonw_reset(&b->label);
	module_name(&b->label, b->s, module, len);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "style", "rounded");
	graph_attr(g, start, "color", "#9a9a9a");
	graph_attr(g, start, "fontcolor", "#444444");
	graph_end_cluster(g, c);
	b->module_clusters[b->nmodule_clusters++] =
		(struct module_cluster){ outer, module, len, c };
	return c;
}

int graph_module_cluster_of_op(struct graph_builder *b, size_t ordinal,
			       int outer)
{
	const char *module = graph_op_module(b, ordinal);

	if (b->g->module_depth == VIEW_DEPTH_OPS || !module)
		return outer;
	int parts = analysis_module_depth(module);
	return module_cluster(b, outer, module, strlen(module), parts);
}

/* The module's ops and their casts, counted as summary counts them. */
static bool count_module(const struct graph_builder *b,
			 const struct graph_module *m, struct module_table *t)
{
	const struct view_selection *s = b->s;

	for (size_t k = m->first; k < m->first + m->nops; k++) {
		const struct view_op *v = &s->ops[k];
		/* counted in the module it is drawn in */
		struct trace_event e = s->trace->events[v->event];
		e.op.module = graph_op_module(b, k);
		if (!module_table_add(t, &e, analysis_dtype_index(
				analysis_output_dtype(&e.op))))
			return false;
		for (size_t i = 0; i < v->ninputs; i++) {
			size_t cast = s->inputs[v->first_input + i].cast;
			if (cast == VIEW_NONE)
				continue;
			e = s->trace->events[cast];
			e.cast.module = graph_op_module(b, k);
			if (!module_table_add(t, &e, -1))
				return false;
		}
	}
	return true;
}

/* The time its ops took: an op that ran inside a composite one (the
 * `native_layer_norm` of a `layer_norm`, drawn instead of it) counts as
 * the composite's time, once. */
static double module_time(const struct graph_builder *b,
			  const struct graph_module *m)
{
	const struct view_selection *s = b->s;
	const struct trace_event *counted = NULL;
	double us = 0;

	for (size_t k = m->first; k < m->first + m->nops; k++) {
		const struct trace_event *e = &s->trace->events[s->ops[k].event];
		const struct trace_event *outer = e;
		while (outer->kind == TRACE_OP && outer->op.parent_op_id) {
			const struct trace_event *parent = analysis_op(
				&s->analysis, outer->pid, outer->op.parent_op_id);
			if (!parent || parent == outer)
				break;
			outer = parent;
		}
		if (outer != counted)
			us += outer->dur;
		counted = outer;
	}
	return us;
}

/* How many processes ran the module's ops: merged ranks' ops of one
 * module interleave, and a node sums them (0 when out of memory). */
static size_t module_processes(const struct graph_builder *b,
			       const struct graph_module *m)
{
	const struct view_selection *s = b->s;
	int64_t *pids = NULL;
	size_t npids = 0, cap = 0;

	for (size_t k = m->first; k < m->first + m->nops; k++) {
		int64_t pid = s->trace->events[s->ops[k].event].pid;
		size_t i = 0;
		while (i < npids && pids[i] != pid)
			i++;
		if (i < npids)
			continue;
		int64_t *grown = trace_grow(pids, &cap, npids + 1, sizeof *grown);
		if (!grown) {
			free(pids);
			return 0;
		}
		pids = grown;
		pids[npids++] = pid;
	}
	free(pids);
	return npids;
}

/* "transformer.h.3 · GPT2Block / 52 ops · 1.2 ms → bf16 ×30, f32 ×22 /
 * casts f32→bf16 ×8 · 4 cache hits"; returns the most frequent
 * output dtype (the fill), or NULL. */
static const char *module_label(struct graph_builder *b,
				const struct graph_module *m)
{
	struct module_table t;
	const char *fill = NULL;
	size_t most = 0;
	char time[32];

	/* a group of calls counts as one row: their parent's */
	module_table_init(&t, analysis_path_depth(m->module, m->len) -
			      (m->calls > 1),
			  TRACE_DTYPE_COUNT);
	jsonw_reset(&b->label);
	module_name(&b->label, b->s, m->module, m->len);
	if (m->calls > 1) {
		size_t parent = graph_parent_len(m->last, m->last_len);
		size_t skip = parent ? parent + 1 : 0;
		graph_text(&b->label, "\n… %.*s: %zu calls of the same ops",
			   (int)(m->last_len - skip), m->last + skip, m->calls);
	}
	if (!count_module(b, m, &t)) {
		b->g->failed = true;
		module_table_free(&t);
		return NULL;
	}
	const struct module_row *r = &t.rows[0];
	size_t processes = module_processes(b, m);
	if (!processes) {
		b->g->failed = true;
		module_table_free(&t);
		return NULL;
	}
	graph_text(&b->label, "\n%zu op%s", r->ops, r->ops == 1 ? "" : "s");
	if (processes > 1)
		graph_text(&b->label, " of %zu processes", processes);
	graph_text(&b->label, " · %s →",
		   graph_time_text(time, sizeof time, module_time(b, m)));
	const char *sep = " ";
	for (int d = 0; d <= TRACE_DTYPE_COUNT; d++) {
		if (!r->by_dtype[d])
			continue;
		const char *dtype = d < TRACE_DTYPE_COUNT ? trace_dtype_names[d]
							  : "no output";
		graph_text(&b->label, "%s%s ×%zu", sep, dtype, r->by_dtype[d]);
		sep = ", ";
		if (d < TRACE_DTYPE_COUNT && r->by_dtype[d] > most) {
			most = r->by_dtype[d];
			fill = trace_dtype_names[d];
		}
	}
	size_t casts = module_row_casts(r);
	b->g->casts_collapsed += casts;
	if (casts || r->hits)
		graph_text(&b->label, "\ncasts");
	for (size_t i = 0; i < r->ndirections; i++)
		graph_text(&b->label, "%s %s→%s ×%zu", i ? "," : "",
			   r->directions[i].from, r->directions[i].to,
			   r->directions[i].casts);
	if (r->other_directions)
		graph_text(&b->label, ", %zu other", r->other_directions);
	if (r->hits)
		graph_text(&b->label, "%s%zu cache hit%s", casts ? " · " : " ",
			   r->hits, r->hits == 1 ? "" : "s");
	module_table_free(&t);
	return fill;
}

static void draw_module(struct graph_builder *b, size_t index)
{
	struct graph *g = b->g;
	const struct graph_module *m = &g->modules[index];
	int outer = graph_cluster_of_op(b, m->first);
	int parts = analysis_path_depth(m->module, m->len);
	int cluster = parts > graph_module_base(g->o) ?
		module_cluster(b, outer, m->module,
			       analysis_module_prefix(m->module, parts - 1),
			       parts - 1) : outer;
	size_t node = graph_new_node(g, cluster, "module%zu", index + 1);
	size_t start = g->text.len;

	graph_begin_unit(b, node, m->first);
	const char *class = analysis_module_class(b->s->trace, m->module, m->len);
	if (m->len)
		snprintf(g->nodes[node].brief, sizeof g->nodes[node].brief,
			 "%.*s%s%.20s", (int)(m->len < 50 ? m->len : 50),
			 m->module, class ? " · " : "", class ? class : "");
	else
		snprintf(g->nodes[node].brief, sizeof g->nodes[node].brief,
			 "the model%s%.20s", class ? " · " : "",
			 class ? class : "");
	graph_attr(g, start, "id", g->nodes[node].id);
	const char *fill = module_label(b, m);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "shape", "box");
	graph_attr(g, start, "style", "filled,bold");
	graph_attr(g, start, "fillcolor", graph_dtype_fill(fill));
	jsonw_reset(&b->label);
	if (m->len)
		graph_text(&b->label, "module %.*s, collapsed: --module %.*s "
			   "draws its ops", (int)m->len, m->module, (int)m->len,
			   m->module);
	else
		graph_text(&b->label, "the model, collapsed: --depth 1 draws "
			   "its modules");
	graph_attr(g, start, "tooltip", b->label.data);
	graph_end_node(g, node);
	b->module_node[index] = node;
	g->module_nodes++;
}

void graph_collapse_op(struct graph_builder *b, size_t ordinal)
{
	size_t m = b->module_of[ordinal];

	if (b->module_node[m] == VIEW_NONE)
		draw_module(b, m);
	b->g->ops_collapsed++;
	graph_wire_hidden(b, ordinal, b->module_node[m]);
}

