/* nn.Modules in the graph (the `module` key of torch traces): which ops
 * each module node stands for.  A module whose path has the view's depth
 * is one node for a run of consecutive ops inside it (a leaf module above
 * that depth too); consecutive sibling modules that ran the same ops are
 * one node; repeating patterns of module nodes, and of the ops drawn
 * alone between them, fold as repeated ops do.  graph_module_nodes.c
 * draws them. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

/* The longest repeating pattern of module nodes folded (conv, norm,
 * activation is 3). */
#define MODULE_FOLD_PERIOD 8

int graph_max_module_depth(const struct view_selection *s)
{
	int deepest = -1;

	for (size_t k = 0; k < s->nops; k++) {
		const char *module = view_op_of(s, k)->module;
		int parts = module ? analysis_module_depth(module) : -1;
		if (parts > deepest)
			deepest = parts;
	}
	return deepest;
}

int graph_module_base(const struct view_options *o)
{
	return o->module ? analysis_module_depth(o->module) : 0;
}

int graph_module_cut(const struct graph *g)
{
	return graph_module_base(g->o) + g->module_depth;
}

bool graph_same_path(const char *a, size_t alen, const char *b, size_t blen)
{
	return alen == blen && !strncmp(a, b, alen);
}

/* Whether some op of the selection ran in a module inside module[0..len). */
static bool has_submodules(const struct view_selection *s, const char *module,
			   size_t len)
{
	const char *last = NULL;

	for (size_t k = 0; k < s->nops; k++) {
		const char *other = analysis_new_module(view_op_of(s, k)->module,
							&last);
		if (other && strlen(other) > len && !strncmp(other, module, len) &&
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
	if (analysis_module_depth(module) >= graph_module_cut(g))
		return analysis_module_prefix(module, graph_module_cut(g));
	size_t len = strlen(module);
	return has_submodules(b->s, module, len) ? VIEW_NONE : len;
}

size_t graph_parent_len(const char *module, size_t len)
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
	size_t parent = graph_parent_len(call->module, call->len);

	if (call->nops != nops || !call->len || !group->len ||
	    parent != graph_parent_len(group->module, group->len) ||
	    strncmp(call->module, group->module, parent) ||
	    graph_same_path(call->module, call->len, group->last, group->last_len))
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

/* What a module view draws, in the order its ops ran: module nodes and
 * the ops drawn alone between them (a functional relu between the
 * layers of a ModuleList), which a repeating pattern takes in too. */
struct module_unit {
	size_t first, nops;
	size_t module;   /* its module node, or VIEW_NONE: an op alone */
};

struct unit_folding {
	const struct graph_builder *b;
	struct module_unit *units;
	size_t count;
};

/* Whether the n ops from x and from y ran the same ops in the same
 * modules' classes, their inputs cast alike (cache results included). */
static bool same_ops(const struct view_selection *s, size_t x, size_t y,
		     size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const struct view_op *vx = &s->ops[x + k];
		const struct view_op *vy = &s->ops[y + k];
		const struct trace_op *ox = view_op_of(s, x + k);
		const struct trace_op *oy = view_op_of(s, y + k);
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

/* Whether units i and j (a period later) are the same: two ops alone
 * that are the same op, or sibling modules (or groups of as many calls)
 * that ran the same ops with the same casts. */
static bool same_unit(void *ctx, size_t i, size_t j, size_t period,
		      size_t block)
{
	const struct unit_folding *u = ctx;
	const struct graph *g = u->b->g;
	const struct module_unit *a = &u->units[i], *c = &u->units[j];

	(void)period;
	(void)block;
	if ((a->module == VIEW_NONE) != (c->module == VIEW_NONE) ||
	    a->nops != c->nops)
		return false;
	if (a->module != VIEW_NONE) {
		const struct graph_module *x = &g->modules[a->module];
		const struct graph_module *y = &g->modules[c->module];
		size_t parent = graph_parent_len(x->module, x->len);
		if (x->calls != y->calls || !x->len || !y->len ||
		    parent != graph_parent_len(y->module, y->len) ||
		    strncmp(x->module, y->module, parent))
			return false;
	}
	return same_ops(u->b->s, a->first, c->first, a->nops);
}

/* The units of the view, each module node once and each op alone;
 * NULL when out of memory. */
static struct module_unit *module_units(const struct graph_builder *b,
					size_t *count)
{
	const struct view_selection *s = b->s;
	struct module_unit *units = malloc((s->nops ? s->nops : 1) *
					   sizeof *units);
	size_t n = 0;

	if (!units)
		return NULL;
	for (size_t k = 0; k < s->nops;) {
		size_t m = b->module_of[k];
		size_t nops = m == VIEW_NONE ? 1 : b->g->modules[m].nops;
		units[n++] = (struct module_unit){ k, nops, m };
		k += nops;
	}
	*count = n;
	return units;
}

/* Patterns of module nodes that repeat (a CNN's conv, batch norm, ReLU,
 * conv, ...; a ModuleList's layers with a functional activation between
 * them) fold as repeated ops do: the first repetition drawn, one node for
 * the rest (graph_hidden.c), each fold turned into the ops it spans. */
static bool fold_modules(struct graph_builder *b)
{
	struct graph *g = b->g;
	struct unit_folding u = { b, NULL, 0 };
	struct view_fold *folds = NULL;
	size_t nfolds = 0;
	bool ok = false;

	if (g->nmodules < 2 || !g->o->fold)   /* --no-fold */
		return true;
	u.units = module_units(b, &u.count);
	if (!u.units || view_fold_find(u.count, MODULE_FOLD_PERIOD, 2,
				       same_unit, &u, &folds, &nfolds) != 0)
		goto out;
	struct view_fold *grown = realloc(g->folds, (g->nfolds + nfolds + 1) *
						    sizeof *grown);
	if (!grown)
		goto out;
	g->folds = grown;
	for (size_t f = 0; f < nfolds; f++) {
		const struct view_fold *m = &folds[f];
		const struct module_unit *unit = &u.units[m->start];
		size_t first = unit->first;
		size_t period = u.units[m->start + m->period].first - first;
		bool modules_only = true;
		for (size_t k = 0; k < m->period; k++)
			modules_only &= unit[k].module != VIEW_NONE;
		g->folds[g->nfolds++] = (struct view_fold){
			first, period, m->count, m->period, !modules_only };
		/* the repetitions after the first are the fold's, not
		 * module nodes */
		for (size_t k = first + period; k < first + m->count * period; k++)
			b->module_of[k] = VIEW_NONE;
	}
	ok = true;
out:
	free(folds);
	free(u.units);
	return ok;
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
		    graph_same_path(last->module, last->len, module, len)) {
			b->module_of[k] = g->nmodules - 1;
			last->nops++;
			continue;
		}
		struct graph_module *grown =
			trace_grow(g->modules, &g->cap_modules, g->nmodules + 1,
				   sizeof *grown);
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

void graph_free_modules(struct graph_builder *b)
{
	free(b->module_of);
	free(b->module_node);
	free(b->op_module);
	free(b->module_clusters);
}
