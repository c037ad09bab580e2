/* view.h's entry points: options, formats, trace → DOT. */
#include "graph.h"
#include "view.h"

#include <stdlib.h>
#include <string.h>

static const char *const format_names[] = {
	[VIEW_FORMAT_SVG] = "svg",
	[VIEW_FORMAT_DOT] = "dot",
	[VIEW_FORMAT_PNG] = "png",
};
_Static_assert(sizeof format_names / sizeof *format_names == VIEW_FORMAT_COUNT,
	       "a name for every format");

void view_options_init(struct view_options *options)
{
	*options = (struct view_options){
		.step = VIEW_STEP_DEFAULT,
		.rank = VIEW_RANK_DEFAULT,
		.depth = VIEW_DEPTH_AUTO,
		.max_ops = VIEW_DEFAULT_MAX_OPS,
		.fold = true,
	};
}

int view_format_from_name(const char *name, enum view_format *format)
{
	for (int f = 0; f < VIEW_FORMAT_COUNT; f++)
		if (!strcmp(name, format_names[f])) {
			*format = (enum view_format)f;
			return 0;
		}
	return -1;
}

const char *view_format_name(enum view_format format)
{
	return format < VIEW_FORMAT_COUNT ? format_names[format] : "?";
}

/* The selection's graph as DOT text in `out`.  Returns 0 or -1 (memory). */
static int graph_dot(const struct view_selection *s,
		     const struct view_options *o, struct graph *g,
		     struct jsonw *out)
{
	jsonw_init(out);
	if (graph_build(g, s, o) != 0)
		return -1;
	graph_write_dot(g, out);
	return out->failed ? -1 : 0;
}

/* Whether the trace's ops name their nn.Module (torch traces): those
 * are drawn by module unless told otherwise. */
static bool ops_name_modules(const struct trace *t)
{
	for (size_t i = 0; i < t->nevents; i++)
		if (t->events[i].kind == TRACE_OP && t->events[i].op.module)
			return true;
	return false;
}

/* A depth with more nodes than this is taken not to fit VIEW_FIT_PX
 * without laying it out: 2000 px hold ~25 ranks of module nodes, and
 * 300 nodes would need 12 a rank at under 170 px each; laying out a
 * few thousand takes seconds. */
#define VIEW_FIT_NODES 300

/* Lays out `dot`: whether it fits VIEW_FIT_PX both ways, its size in
 * px in `size`.  Returns 0, or -1 with err set. */
static int layout_fits(const char *dot, double size[2], bool *fits,
		       struct trace_error *err)
{
	double width, height;

	if (view_layout_size(dot, &width, &height, err) != 0)
		return -1;
	/* 96 CSS px per inch, 72 points */
	size[0] = width * 96.0 / 72;
	size[1] = height * 96.0 / 72;
	*fits = size[0] <= VIEW_FIT_PX && size[1] <= VIEW_FIT_PX;
	return 0;
}

/* The deepest module depth whose graph Graphviz lays out within
 * VIEW_FIT_PX both ways: each depth is laid out, from the model as one
 * node down, until one does not fit (a deeper one only adds nodes); one
 * with over VIEW_FIT_NODES nodes does not, unlaid.  The real size is
 * used rather than an estimate from node counts: dot lays out a small
 * module graph in well under a second.  The chosen depth's graph and
 * DOT are kept in `g` and `out`, built once.  Returns 0, or -1 with err
 * set; `size` gets the chosen depth's layout size in px, `layouts` how
 * many were made. */
static int choose_depth(const struct view_selection *s,
			struct view_options *o, struct graph *g,
			struct jsonw *out, double size[2], size_t *layouts,
			struct trace_error *err)
{
	int deepest = graph_max_module_depth(s) - graph_module_base(o);
	int chosen = 0;

	for (int depth = 0; depth <= deepest; depth++) {
		struct graph trial = { 0 };
		struct jsonw dot;
		double trial_size[2];
		bool fits = false;
		o->depth = depth;
		if (graph_dot(s, o, &trial, &dot) != 0) {
			graph_free(&trial);
			jsonw_free(&dot);
			return trace_error_set(err, "%s: out of memory while "
					       "building the graph",
					       s->trace->path);
		}
		if (!depth || trial.nnodes <= VIEW_FIT_NODES) {
			(*layouts)++;
			if (layout_fits(dot.data, trial_size, &fits, err) != 0) {
				graph_free(&trial);
				jsonw_free(&dot);
				return -1;
			}
		}
		if (depth && !fits) {
			graph_free(&trial);
			jsonw_free(&dot);
			break;
		}
		graph_free(g);
		jsonw_free(out);
		*g = trial;
		*out = dot;
		chosen = depth;
		size[0] = trial_size[0];
		size[1] = trial_size[1];
	}
	o->depth = chosen;
	return 0;
}

/* The options as drawn: a trace whose ops name their modules is drawn
 * by module, forward only unless --phase says otherwise (its module
 * nodes fold, not its ops: graph.c); others as given. */
static struct view_options resolve(const struct trace *trace,
				   const struct view_options *options)
{
	struct view_options o = *options;

	if (o.depth == VIEW_DEPTH_OPS || !ops_name_modules(trace)) {
		o.depth = VIEW_DEPTH_OPS;
		return o;
	}
	if (!o.phase)
		o.phase = "forward";
	return o;
}

int view_dot(const struct trace *trace, const struct view_options *options,
	     char **dot, size_t *len, struct view_stats *stats,
	     struct trace_error *err)
{
	struct view_options o = resolve(trace, options);
	struct view_selection s;
	struct graph g = { 0 };
	struct jsonw out;
	double size[2] = { 0, 0 };
	size_t layouts = 0;
	int status = -1, built;

	*dot = NULL;
	*len = 0;
	jsonw_init(&out);
	if (view_select(trace, &o, &s, err) != 0)
		return -1;
	int deepest = graph_max_module_depth(&s) - graph_module_base(&o);
	if (o.depth != VIEW_DEPTH_OPS && graph_max_module_depth(&s) < 0)
		o.depth = VIEW_DEPTH_OPS;   /* no op of the view names one */
	else if (deepest >= 0 && o.depth > deepest)
		o.depth = deepest;          /* draws the same, says so */
	if (o.depth == VIEW_DEPTH_AUTO) {
		if (choose_depth(&s, &o, &g, &out, size, &layouts, err) != 0) {
			graph_free(&g);
			jsonw_free(&out);
			view_selection_free(&s);
			return -1;
		}
		built = 0;
	} else {
		built = graph_dot(&s, &o, &g, &out);
	}
	if (built == 0) {
		*dot = out.data;
		*len = out.len;
		out.data = NULL;
		status = 0;
	}
	if (status)
		trace_error_set(err, "%s: out of memory while building the graph",
				trace->path);
	if (stats && !status) {
		*stats = (struct view_stats){
			.step = s.step,
			.nsteps = s.analysis.nsteps,
			.ops_selected = s.nops,
			.ops_shown = g.ops_shown,
			.ops_folded = g.ops_folded,
			.ops_boxed = g.ops_boxed,
			.boxes = g.nboxes,
			.ops_left_out = g.ops_left_out,
			.nodes = g.nnodes,
			.edges = g.nedges,
			.clusters = g.nclusters,
			.depth = g.module_depth,
			.ops_collapsed = g.ops_collapsed,
			.modules = g.module_nodes,
			.width_px = size[0],
			.height_px = size[1],
			.layouts = layouts,
			.phase = o.phase,
			.phase_by_default = o.phase && !options->phase,
			.ops_matching_elsewhere = s.ops_matching_elsewhere,
			.step_matching = s.step_matching,
		};
		for (size_t f = 0; f < g.nfolds; f++)
			stats->folds += g.folds[f].count > 0;
	}
	jsonw_free(&out);
	graph_free(&g);
	view_selection_free(&s);
	return status;
}
