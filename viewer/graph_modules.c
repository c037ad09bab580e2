/* nn.Modules in the graph (the `module` key of torch traces): a module
 * whose path has the view's depth is drawn as one node standing for its
 * ops (a run of consecutive ops inside it), the modules above it as
 * nested clusters holding the ops that ran in them directly.  A node's
 * numbers come from the module table summary's "by module" table uses
 * (tracer/analysis/module_table.h). */
#include "graph.h"
#include "module_table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The longest repeating pattern of module nodes folded (conv, norm,
 * activation is 3). */
#define MODULE_FOLD_PERIOD 8

/* A module path prefix drawn as a cluster, inside `outer`. */
struct module_cluster {
	int outer;
	const char *module;
	size_t len;
	int cluster;
};

/* How many dot-separated parts `module` has ("" has none). */
static int module_parts(const char *module)
{
	int parts = module[0] != '\0';

	for (const char *p = module; *p; p++)
		parts += *p == '.';
	return parts;
}

int graph_max_module_depth(const struct view_selection *s)
{
	int deepest = -1;

	for (size_t k = 0; k < s->nops; k++) {
		const char *module = view_op_of(s, k)->module;
		int parts = module ? module_parts(module) : -1;
		if (parts > deepest)
			deepest = parts;
	}
	return deepest;
}

int graph_module_base(const struct view_options *o)
{
	return o->module ? module_parts(o->module) : 0;
}

/* The parts of a path a module node is cut to: --module's and --depth's. */
static int cut_depth(const struct graph *g)
{
	return graph_module_base(g->o) + g->module_depth;
}

static bool same_prefix(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && !strncmp(a, b, alen);
}

/* Whether some op of the selection ran in a module inside module[0..len). */
static bool has_submodules(const struct view_selection *s, const char *module,
			   size_t len)
{
	const char *last = NULL;

	for (size_t k = 0; k < s->nops; k++) {
		const char *other = view_op_of(s, k)->module;
		if (!other || other == last)   /* interned: runs repeat it */
			continue;
		last = other;
		if (strlen(other) > len && !strncmp(other, module, len) &&
		    (!len || other[len] == '.'))
			return true;
	}
	return false;
}

/* The length of the path an op's module node is drawn for, or VIEW_NONE
 * when the op is drawn alone: a module at the cut depth stands for all
 * of its ops, and so does one above it with no modules inside (an
 * Embedding, a LayerNorm): a cluster around its few ops would say no
 * more. */
static size_t collapsed_len(const struct graph_builder *b, const char *module)
{
	const struct graph *g = b->g;

	if (g->module_depth == VIEW_DEPTH_OPS || !module)
		return VIEW_NONE;
	if (module_parts(module) >= cut_depth(g))
		return analysis_module_prefix(module, cut_depth(g));
	size_t len = strlen(module);
	return has_submodules(b->s, module, len) ? VIEW_NONE : len;
}

/* The length of the path of the module holding module[0..len), the
 * part before its last dot ("" for an outermost one). */
static size_t parent_len(const char *module, size_t len)
{
	while (len && module[len - 1] != '.')
		len--;
	return len ? len - 1 : 0;
}

/* Whether module call `call` repeats the calls of `group`: a sibling
 * (h.3 after h.2) that ran the same ops in the same order. */
static bool repeats(const struct graph_builder *b,
		    const struct graph_module *call,
		    const struct graph_module *group)
{
	size_t nops = group->nops / group->calls;
	size_t parent = parent_len(call->module, call->len);

	if (call->nops != nops || !call->len || !group->len ||
	    parent != parent_len(group->module, group->len) ||
	    strncmp(call->module, group->module, parent) ||
	    same_prefix(call->module, call->len, group->last, group->last_len))
		return false;
	for (size_t k = 0; k < nops; k++) {
		const struct trace_op *x = view_op_of(b->s, call->first + k);
		const struct trace_op *y = view_op_of(b->s, group->first + k);
		if (x->op != y->op || x->overload != y->overload ||
		    x->module_class != y->module_class)
			return false;
	}
	return true;
}

/* Consecutive calls of sibling modules that run the same ops (the 12
 * blocks of a GPT-2, the bottlenecks of a ResNet stage) become one node,
 * so that a deep model's structure shows at a depth where twelve copies
 * of one box would not fit. */
static void merge_repeats(struct graph_builder *b)
{
	struct graph *g = b->g;
	size_t kept = 0;

	for (size_t m = 0; m < g->nmodules; m++) {
		struct graph_module call = g->modules[m];
		struct graph_module *group = kept ? &g->modules[kept - 1] : NULL;
		size_t into = kept;
		if (group && group->first + group->nops == call.first &&
		    repeats(b, &call, group)) {
			group->nops += call.nops;
			group->calls++;
			group->last = call.module;
			group->last_len = call.len;
			into = kept - 1;
		} else {
			g->modules[kept++] = call;
		}
		for (size_t k = call.first; k < call.first + call.nops; k++)
			b->module_of[k] = into;
	}
	g->nmodules = kept;
}

/* Module calls `call` and `call - 1` ran back to back, no op between. */
static bool follows(const struct graph *g, size_t call)
{
	const struct graph_module *before = &g->modules[call - 1];

	return before->first + before->nops == g->modules[call].first;
}

/* Whether module calls i and j (a period later) are the same: sibling
 * modules (or groups of as many calls) that ran the same ops with the
 * same casts, each call right after the one before it. */
static bool same_call(void *ctx, size_t i, size_t j, size_t period,
		      size_t block)
{
	const struct graph_builder *b = ctx;
	const struct graph *g = b->g;
	const struct view_selection *s = b->s;
	const struct graph_module *x = &g->modules[i], *y = &g->modules[j];
	size_t parent = parent_len(x->module, x->len);

	(void)period;
	(void)block;
	if (!follows(g, i + 1) || !follows(g, j) || x->nops != y->nops ||
	    x->calls != y->calls || !x->len || !y->len ||
	    parent != parent_len(y->module, y->len) ||
	    strncmp(x->module, y->module, parent))
		return false;
	for (size_t k = 0; k < x->nops; k++) {
		const struct view_op *vx = &s->ops[x->first + k];
		const struct view_op *vy = &s->ops[y->first + k];
		const struct trace_op *ox = view_op_of(s, x->first + k);
		const struct trace_op *oy = view_op_of(s, y->first + k);
		if (ox->op != oy->op || ox->overload != oy->overload ||
		    ox->module_class != oy->module_class ||
		    vx->ninputs != vy->ninputs)
			return false;
		for (size_t a = 0; a < vx->ninputs; a++) {
			size_t cx = s->inputs[vx->first_input + a].cast;
			size_t cy = s->inputs[vy->first_input + a].cast;
			if ((cx == VIEW_NONE) != (cy == VIEW_NONE))
				return false;
			if (cx != VIEW_NONE &&
			    strcmp(s->trace->events[cx].cast.cache,
				   s->trace->events[cy].cast.cache))
				return false;
		}
	}
	return true;
}

/* Module nodes whose pattern repeats (a CNN's conv, batch norm, ReLU,
 * conv, ...) fold as repeated ops do: the first repetition drawn, one
 * node for the rest (graph_hidden.c), each fold turned into the ops it
 * spans. */
static bool fold_modules(struct graph_builder *b)
{
	struct graph *g = b->g;
	struct view_fold *folds;
	size_t nfolds;

	if (g->nmodules < 2)
		return true;
	if (view_fold_find(g->nmodules, MODULE_FOLD_PERIOD, 2, same_call, b,
			   &folds, &nfolds) != 0)
		return false;
	struct view_fold *grown = realloc(g->folds, (g->nfolds + nfolds + 1) *
						    sizeof *grown);
	if (!grown) {
		free(folds);
		return false;
	}
	g->folds = grown;
	for (size_t f = 0; f < nfolds; f++) {
		const struct view_fold *m = &folds[f];
		size_t first = g->modules[m->start].first;
		size_t period = g->modules[m->start + m->period].first - first;
		g->folds[g->nfolds++] = (struct view_fold){
			first, period, m->count, m->period };
		/* the repetitions after the first are the fold's, not
		 * module nodes */
		for (size_t k = first + period; k < first + m->count * period; k++)
			b->module_of[k] = VIEW_NONE;
	}
	free(folds);
	return true;
}

/* A backward op that names no module (the bridge names the forward op's
 * for most; a gradient's accumulation into a leaf has none) is drawn in
 * the module of the op that made its first input, so that a module's
 * backward stays one node. */
static bool find_op_modules(struct graph_builder *b)
{
	const struct view_selection *s = b->s;

	b->op_module = malloc((s->nops ? s->nops : 1) * sizeof *b->op_module);
	if (!b->op_module)
		return false;
	for (size_t k = 0; k < s->nops; k++) {
		const struct view_op *v = &s->ops[k];
		const struct trace_op *op = view_op_of(s, k);
		b->op_module[k] = op->module;
		if (op->module || strcmp(op->phase, "backward") || !v->ninputs)
			continue;
		size_t from = view_source_ordinal(s, &s->inputs[v->first_input].source);
		if (from < k)
			b->op_module[k] = b->op_module[from];
	}
	return true;
}

const char *graph_op_module(const struct graph_builder *b, size_t ordinal)
{
	return b->op_module ? b->op_module[ordinal]
			    : view_op_of(b->s, ordinal)->module;
}

bool graph_plan_modules(struct graph_builder *b)
{
	struct graph *g = b->g;
	const struct view_selection *s = b->s;
	size_t n = s->nops ? s->nops : 1;
	const char *module = NULL;
	size_t len = VIEW_NONE;

	b->module_of = malloc(n * sizeof *b->module_of);
	if (!b->module_of || !find_op_modules(b))
		return false;
	for (size_t k = 0; k < s->nops; k++) {
		const char *own = graph_op_module(b, k);
		if (k == 0 || own != module) {
			module = own;
			len = collapsed_len(b, module);
		}
		b->module_of[k] = VIEW_NONE;
		if (len == VIEW_NONE)
			continue;
		struct graph_module *last = g->nmodules ?
			&g->modules[g->nmodules - 1] : NULL;
		if (k && b->module_of[k - 1] != VIEW_NONE && last &&
		    same_prefix(last->module, last->len, module, len)) {
			b->module_of[k] = g->nmodules - 1;
			last->nops++;
			continue;
		}
		struct graph_module *grown = realloc(
			g->modules, (g->nmodules + 1) * sizeof *grown);
		if (!grown)
			return false;
		g->modules = grown;
		g->modules[g->nmodules] = (struct graph_module){
			k, 1, module, len, 1, module, len };
		b->module_of[k] = g->nmodules++;
	}
	merge_repeats(b);
	if (!fold_modules(b))
		return false;
	b->module_node = malloc((g->nmodules ? g->nmodules : 1) *
				sizeof *b->module_node);
	if (!b->module_node)
		return false;
	for (size_t m = 0; m < g->nmodules; m++)
		b->module_node[m] = VIEW_NONE;
	return true;
}

/* The class of the module at exactly this path, from an op that ran in
 * it directly (a ModuleList, never called, has none). */
static const char *module_class(const struct view_selection *s,
				const char *module, size_t len)
{
	for (size_t k = 0; k < s->nops; k++) {
		const struct trace_op *op = view_op_of(s, k);
		if (op->module && op->module_class &&
		    same_prefix(op->module, strlen(op->module), module, len))
			return op->module_class;
	}
	return NULL;
}

/* "transformer.h.3 · GPT2Block"; the model itself by its class. */
static void module_name(struct jsonw *w, const struct view_selection *s,
			const char *module, size_t len)
{
	const char *class = module_class(s, module, len);

	if (len)
		graph_text(w, "%.*s%s%s", (int)len, module, class ? " · " : "",
			   class ? class : "");
	else
		graph_text(w, "%s (the model)", class ? class : "module ''");
}

/* The cluster of path prefix module[0..len) inside `outer`, made with
 * the clusters of its own prefixes down to --module's when new. */
static int module_cluster(struct graph_builder *b, int outer,
			  const char *module, size_t len, int parts)
{
	struct graph *g = b->g;

	/* a model recorded without its own path ("") has no cluster */
	if (parts < graph_module_base(g->o) ||
	    (!len && !module_class(b->s, module, len)))
		return outer;
	for (size_t i = 0; i < b->nmodule_clusters; i++) {
		const struct module_cluster *c = &b->module_clusters[i];
		if (c->outer == outer &&
		    same_prefix(c->module, c->len, module, len))
			return c->cluster;
	}
	int parent = outer;
	if (parts > graph_module_base(g->o))
		parent = module_cluster(b, outer, module,
					analysis_module_prefix(module, parts - 1),
					parts - 1);
	struct module_cluster *grown = realloc(
		b->module_clusters, (b->nmodule_clusters + 1) * sizeof *grown);
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
	int parts = module_parts(module);
	return module_cluster(b, outer, module, strlen(module), parts);
}

/* The table column of an output dtype: its index among the trace's
 * dtypes (-1: no output, or one the table has no name for). */
static int dtype_column(const char *dtype)
{
	for (int d = 0; dtype && d < TRACE_DTYPE_COUNT; d++)
		if (!strcmp(dtype, trace_dtype_names[d]))
			return d;
	return -1;
}

/* The module's ops and their casts, counted as summary counts them. */
static bool count_module(const struct graph_builder *b,
			 const struct graph_module *m, struct module_table *t)
{
	const struct view_selection *s = b->s;

	for (size_t k = m->first; k < s->nops; k++) {
		if (b->module_of[k] != b->module_of[m->first])
			continue;
		const struct view_op *v = &s->ops[k];
		/* counted in the module it is drawn in */
		struct trace_event e = s->trace->events[v->event];
		e.op.module = graph_op_module(b, k);
		if (!module_table_add(t, &e, dtype_column(
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
	char path[512];
	snprintf(path, sizeof path, "%.*s", (int)m->len, m->module);
	module_table_init(&t, module_parts(path) - (m->calls > 1),
			  TRACE_DTYPE_COUNT);
	jsonw_reset(&b->label);
	module_name(&b->label, b->s, m->module, m->len);
	if (m->calls > 1) {
		size_t parent = parent_len(m->last, m->last_len);
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
	graph_text(&b->label, "\n%zu op%s · %s →", r->ops, r->ops == 1 ? "" : "s",
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
	char path[512];
	snprintf(path, sizeof path, "%.*s", (int)m->len, m->module);
	int parts = module_parts(path);
	int cluster = parts > graph_module_base(g->o) ?
		module_cluster(b, outer, m->module,
			       analysis_module_prefix(m->module, parts - 1),
			       parts - 1) : outer;
	size_t node = graph_new_node(g, cluster, "module%zu", index + 1);
	size_t start = g->text.len;

	graph_begin_unit(b, node, m->first);
	const char *class = module_class(b->s, m->module, m->len);
	snprintf(g->nodes[node].brief, sizeof g->nodes[node].brief, "%.*s%s%.20s",
		 (int)(m->len < 50 ? m->len : 50), m->len ? m->module : "model",
		 class ? " · " : "", class ? class : "");
	graph_attr(g, start, "id", g->nodes[node].id);
	const char *fill = module_label(b, m);
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "shape", "box");
	graph_attr(g, start, "style", "filled,bold");
	graph_attr(g, start, "fillcolor", graph_dtype_fill(fill));
	jsonw_reset(&b->label);
	graph_text(&b->label, "module %.*s, collapsed: --module %.*s draws "
		   "its ops", (int)m->len, m->module, (int)m->len, m->module);
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

void graph_free_modules(struct graph_builder *b)
{
	free(b->module_of);
	free(b->module_node);
	free(b->op_module);
	free(b->module_clusters);
}
