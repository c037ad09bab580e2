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

int view_dot(const struct trace *trace, const struct view_options *options,
	     char **dot, size_t *len, struct view_stats *stats,
	     struct trace_error *err)
{
	struct view_selection s;
	struct graph g;
	struct jsonw out;
	int status = -1;

	*dot = NULL;
	*len = 0;
	if (view_select(trace, options, &s, err) != 0)
		return -1;
	jsonw_init(&out);
	if (graph_build(&g, &s, options) == 0) {
		graph_write_dot(&g, &out);
		if (!out.failed) {
			*dot = out.data;
			*len = out.len;
			out.data = NULL;
			status = 0;
		}
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
		};
		for (size_t f = 0; f < g.nfolds; f++)
			stats->folds += g.folds[f].count > 0;
	}
	jsonw_free(&out);
	graph_free(&g);
	view_selection_free(&s);
	return status;
}
