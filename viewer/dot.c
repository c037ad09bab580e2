/* Writes a graph (graph.h) as DOT: the palette, the legend, the title
 * that says what was shown, folded and left out, then clusters with
 * their nodes in the order they were made, then edges.  Nothing here
 * depends on memory addresses or hash order. */
#include "graph.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ palette */

struct dtype_palette {
	const char *dtype;
	const char *color;   /* edges and their labels */
	const char *fill;    /* ops whose output has the dtype */
	const char *tint;    /* autocast regions casting to it */
};

/* One fixed palette: integers and bool share grey. */
static const struct dtype_palette palette[] = {
	{ "f32", "#1f77b4", "#dce9f5", "#f1f6fb" },
	{ "f16", "#d62728", "#f9dcdc", "#fdf2f2" },
	{ "bf16", "#8c52c4", "#ebe0f5", "#f7f2fc" },
	{ "f64", "#2a9a2a", "#dbf0d8", "#f2faf1" },
	{ "i64", "#7f7f7f", "#ebebeb", "#f6f6f6" },
	{ "i32", "#7f7f7f", "#ebebeb", "#f6f6f6" },
	{ "bool", "#7f7f7f", "#ebebeb", "#f6f6f6" },
};
static const struct dtype_palette unknown_dtype = { "?", "#333333", "#ffffff",
						    "#f6f6f6" };

static const struct dtype_palette *palette_of(const char *dtype)
{
	for (size_t i = 0; dtype && i < sizeof palette / sizeof *palette; i++)
		if (!strcmp(palette[i].dtype, dtype))
			return &palette[i];
	return &unknown_dtype;
}

const char *graph_dtype_color(const char *dtype)
{
	return palette_of(dtype)->color;
}

const char *graph_dtype_fill(const char *dtype)
{
	return palette_of(dtype)->fill;
}

const char *graph_dtype_tint(const char *dtype)
{
	return palette_of(dtype)->tint;
}

/* ------------------------------------------------------------ quoting */

/* A C1 control (U+0080-U+009F) in UTF-8: 0xc2 and one of these. */
static bool is_c1_control(const char *p)
{
	return (unsigned char)p[0] == 0xc2 && (unsigned char)p[1] >= 0x80 &&
	       (unsigned char)p[1] <= 0x9f;
}

/* Graphviz reads an entity (&amp;, &#155;) in a string as its character,
 * so '&' is written as one, and so is a C1 control: the name comes out of
 * the layout exact, and the DOT holds no control byte for the terminal
 * that `-o -` may print it on.  C0 controls cannot be exact (an SVG, XML
 * 1.0, cannot hold them) and are spaces, '\n' and '\v' line breaks; so is
 * DEL, which XML could hold: Graphviz 2.43 reads &#127; as an invalid two
 * bytes, and a raw one would reach the terminal. */
void graph_quote(struct jsonw *w, const char *text)
{
	jsonw_cstr(w, "\"");
	for (const char *p = text ? text : ""; *p; p++) {
		const char *escape = NULL;
		switch (*p) {
		case '"': escape = "\\\""; break;
		case '\\': escape = "\\\\"; break;
		case '\n': escape = "\\n"; break;
		case '\v': escape = "\\l"; break;
		case '&': escape = "&amp;"; break;
		default:
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				escape = " ";
		}
		if (escape) {
			jsonw_cstr(w, escape);
		} else if (is_c1_control(p)) {
			jsonw_printf(w, "&#%u;", (unsigned char)p[1]);
			p++;
		} else {
			jsonw_raw(w, p, 1);
		}
	}
	jsonw_cstr(w, "\"");
}

static void html_escape(struct jsonw *w, const char *text)
{
	for (const char *p = text; *p; p++) {
		switch (*p) {
		case '&': jsonw_cstr(w, "&amp;"); break;
		case '<': jsonw_cstr(w, "&lt;"); break;
		case '>': jsonw_cstr(w, "&gt;"); break;
		case '"': jsonw_cstr(w, "&quot;"); break;
		default: jsonw_raw(w, p, 1);
		}
	}
}

/* -------------------------------------------------------------- title */

/* The program's name from the trace header (the same every run), else
 * the file's. */
static const char *program_name(const struct trace *t)
{
	const char *path = t->header.ncommand ? t->header.command[0] : t->path;
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* " · 40 ops outside the region and phase filters" */
static void filtered_title(const struct graph *g, struct jsonw *w)
{
	const char *filters[3];
	size_t n = 0;

	if (g->o->scope)
		filters[n++] = "region";
	if (g->o->phase)
		filters[n++] = "phase";
	if (g->o->module)
		filters[n++] = "module";
	jsonw_printf(w, " · %zu ops outside the ", g->s->ops_filtered);
	for (size_t i = 0; i < n; i++)
		jsonw_printf(w, "%s%s", i == 0 ? "" : i + 1 < n ? ", " : " and ",
			     filters[i]);
	jsonw_cstr(w, n > 1 ? " filters" : " filter");
}

/* What the modules drawn as one node stand for, and how to see more. */
static void modules_title(const struct graph *g, struct jsonw *w)
{
	if (g->module_depth == VIEW_DEPTH_OPS)
		return;
	if (g->o->module)
		jsonw_printf(w, "module %s · ", g->o->module);
	jsonw_printf(w, "modules %d level%s deep%s: %zu op%s in %zu module "
		     "node%s", g->module_depth, g->module_depth == 1 ? "" : "s",
		     g->o->module ? " below it" : "", g->ops_collapsed,
		     g->ops_collapsed == 1 ? "" : "s",
		     g->module_nodes, g->module_nodes == 1 ? "" : "s");
	if (g->ops_folded > g->ops_boxed)
		jsonw_printf(w, ", %zu in their folded repetitions",
			     g->ops_folded - g->ops_boxed);
	jsonw_cstr(w, " (--depth N, --module PATH zooms, --no-modules draws "
		   "every op)");
	if (g->o->phase && !strcmp(g->o->phase, "forward"))
		jsonw_cstr(w, " · --phase backward draws the backward pass");
	jsonw_cstr(w, "\v");
}

/* "the whole trace (no training step; 3 evaluation windows)" */
static void no_step_title(const struct analysis *a, struct jsonw *w)
{
	int windows = a->steps.nevaluations;

	jsonw_cstr(w, "the whole trace (no training step");
	if (windows)
		jsonw_printf(w, "; %d evaluation window%s", windows,
			     windows == 1 ? "" : "s");
	jsonw_cstr(w, ")");
}

static void title(const struct graph *g, struct jsonw *w)
{
	const struct view_selection *s = g->s;
	const struct analysis *a = &s->analysis;
	char note[600];

	jsonw_printf(w, "%s: ", program_name(s->trace));
	if (!a->nsteps)
		no_step_title(a, w);
	else if (s->step == VIEW_STEP_ALL)
		jsonw_printf(w, "all %d step%s", a->nsteps, a->nsteps == 1 ? "" : "s");
	else if (a->nsteps <= 1)
		jsonw_cstr(w, "the whole trace (one step)");
	else
		jsonw_printf(w, "step %d of 0..%d (steps marked by %s; --step N "
			     "shows another)", s->step, a->nsteps - 1,
			     a->step_marker);
	if (s->group >= 0)
		jsonw_printf(w, " · %s", trace_ranks_name(&a->ranks, s->group,
							  note, sizeof note));
	if (s->group >= 0 && s->groups_training > 1)
		jsonw_printf(w, a->ranks.rank_of_group[s->group] >= 0
				     ? ", of %d ranks that train (--rank N shows "
				       "another)"
				     : ", of %d processes that train (--rank all "
				       "shows them all)", s->groups_training);
	if (g->o->scope)
		jsonw_printf(w, " · region '%s'", g->o->scope);
	if (g->o->phase)
		jsonw_printf(w, " · %s ops only", g->o->phase);
	/* a module node draws its ops and casts, summed */
	jsonw_printf(w, "\vshown: %zu ops, %zu casts",
		     g->ops_shown + g->ops_collapsed,
		     g->casts_shown + g->casts_collapsed);
	size_t folds = 0;
	for (size_t f = 0; f < g->nfolds; f++)
		folds += g->folds[f].count > 0;
	if (g->ops_folded > g->ops_boxed)
		jsonw_printf(w, " · folded: %zu ops of repeated blocks into %zu "
			     "node%s", g->ops_folded - g->ops_boxed, folds,
			     folds == 1 ? "" : "s");
	if (g->ops_boxed)
		jsonw_printf(w, " · the optimizer's %zu ops folded into %zu "
			     "box%s (--phase optimizer draws them)", g->ops_boxed,
			     g->nboxes, g->nboxes == 1 ? "" : "es");
	if (g->ops_left_out)
		jsonw_printf(w, " · left out: the last %zu ops (--ops %zu)",
			     g->ops_left_out, g->o->max_ops);
	if (s->ops_other_steps)
		jsonw_printf(w, " · not shown: %zu ops of other steps",
			     s->ops_other_steps);
	if (s->ops_filtered)
		filtered_title(g, w);
	jsonw_cstr(w, "\v");
	modules_title(g, w);
	if (trace_end_note(s->trace, note, sizeof note))
		jsonw_printf(w, "trace: %s\v", note);
	if (g->nfindings)
		jsonw_printf(w, "findings: %zu drawn as note%s", g->nfindings,
			     g->nfindings == 1 ? "" : "s");
	if (g->nelsewhere) {
		jsonw_printf(w, "%sabout ops not drawn:", g->nfindings ?
			     "; " : "findings ");
		for (size_t i = 0; i < g->nelsewhere; i++) {
			jsonw_cstr(w, i ? ", " : " ");
			graph_elsewhere_text(g, g->elsewhere[i], w);
		}
	}
	if (g->nfindings || g->nelsewhere)
		jsonw_cstr(w, " (amptrace summary explains them)\v");
}

/* ------------------------------------------------------------- legend */

struct legend_row {
	const char *fill, *sample, *text;
};

static const struct legend_row legend_shapes[] = {
	{ "#dce9f5", "op", "forward op: name, policy → output, time; "
			   "fill = output dtype" },
	{ "#dce9f5", "op", "dashed: backward op" },
	{ "#ffc870", "cast", "cast, cache miss (converted, cached); "
			     "double border: uncacheable" },
	{ "#ffffff", "cast", "cast, cache hit (dashed: reused, no work); "
			     "dashed arrow to the miss that cached it" },
	{ "#fff6c8", "leaf", "named tensor (weight, input)" },
	{ "#e4e4e4", "×N", "folded repetitions of the block above" },
	{ GRAPH_OPTIMIZER_FILL, "opt", "a step's optimizer ops, folded" },
	{ "#ffe4e1", "⚠", "finding (red border on the ops it concerns)" },
};

static const struct {
	const char *dtype, *text;
} legend_dtypes[] = {
	{ "f32", "f32" }, { "f16", "f16" }, { "bf16", "bf16" },
	{ "f64", "f64" }, { "i64", "integer, bool" },
};

/* One line of legend text, with its slack (graph_slack). */
static void legend_text(struct jsonw *w, const char *text)
{
	html_escape(w, text);
	for (size_t n = graph_slack(strlen(text)); n > 0; n--)
		jsonw_cstr(w, "&#160;");
}

static void legend(struct jsonw *w)
{
	jsonw_cstr(w, "\tlegend [shape=\"plaintext\", style=\"\", label=<"
		   "<TABLE BORDER=\"1\" COLOR=\"#bbbbbb\" CELLBORDER=\"0\" "
		   "CELLSPACING=\"2\" CELLPADDING=\"2\">"
		   "<TR><TD COLSPAN=\"2\" ALIGN=\"LEFT\"><B>legend</B></TD></TR>");
	jsonw_cstr(w, "<TR><TD ALIGN=\"LEFT\" COLSPAN=\"2\">");
	legend_text(w, "edges: tensors, coloured by dtype");
	jsonw_cstr(w, "</TD></TR>");
	for (size_t i = 0; i < sizeof legend_dtypes / sizeof *legend_dtypes; i++) {
		jsonw_printf(w, "<TR><TD BGCOLOR=\"%s\" WIDTH=\"30\"></TD>"
			     "<TD ALIGN=\"LEFT\"><FONT COLOR=\"%s\">",
			     graph_dtype_color(legend_dtypes[i].dtype),
			     graph_dtype_color(legend_dtypes[i].dtype));
		legend_text(w, legend_dtypes[i].text);
		jsonw_cstr(w, "</FONT></TD></TR>");
	}
	for (size_t i = 0; i < sizeof legend_shapes / sizeof *legend_shapes; i++) {
		jsonw_printf(w, "<TR><TD BGCOLOR=\"%s\" BORDER=\"1\">",
			     legend_shapes[i].fill);
		html_escape(w, legend_shapes[i].sample);
		jsonw_cstr(w, "</TD><TD ALIGN=\"LEFT\">");
		legend_text(w, legend_shapes[i].text);
		jsonw_cstr(w, "</TD></TR>");
	}
	jsonw_cstr(w, "<TR><TD ALIGN=\"LEFT\" COLSPAN=\"2\">");
	legend_text(w, "boxes around ops: autocast regions (device, dtype, "
		    "depth, name)");
	jsonw_cstr(w, "</TD></TR></TABLE>>];\n");
}

/* -------------------------------------------------------------- body */

/* Above this many nodes dot's network simplex gets one pass (nslimit):
 * 1,000 nodes lay out in ~0.3 s instead of ~2 s, still readable. */
#define GRAPH_BIG_NODES 300

static void indent(struct jsonw *w, int depth)
{
	for (int i = 0; i < depth; i++)
		jsonw_cstr(w, "\t");
}

static void write_span(const struct graph *g, struct jsonw *w,
		       struct graph_span span)
{
	jsonw_raw(w, g->text.data + span.at, span.len);
}

struct containers {
	size_t *head, *tail, *next;   /* item lists per container */
};

static void write_node(const struct graph *g, struct jsonw *w, size_t n,
		       int depth)
{
	const struct graph_node *node = &g->nodes[n];

	indent(w, depth);
	jsonw_printf(w, "\"%s\" [", node->id);
	write_span(g, w, node->attrs);
	if (node->flagged)
		jsonw_cstr(w, ", color=\"#cc0000\", penwidth=\"2.5\"");
	jsonw_cstr(w, "];\n");
}

/* Container 0 is the top level, c + 1 is cluster c. */
static void write_container(const struct graph *g, const struct containers *c,
			    size_t container, struct jsonw *w, int depth)
{
	for (size_t i = c->head[container]; i != VIEW_NONE; i = c->next[i]) {
		const struct graph_item *item = &g->items[i];
		if (!item->cluster) {
			write_node(g, w, item->index, depth);
			continue;
		}
		const struct graph_cluster *cl = &g->clusters[item->index];
		indent(w, depth);
		jsonw_printf(w, "subgraph \"%s\" {\n", cl->id);
		indent(w, depth + 1);
		jsonw_cstr(w, "graph [");
		write_span(g, w, cl->attrs);
		jsonw_cstr(w, "];\n");
		write_container(g, c, item->index + 1, w, depth + 1);
		indent(w, depth);
		jsonw_cstr(w, "}\n");
	}
}

/* A title line longer than this many characters wraps: the longest the
 * title says on its own (179 on the committed fixtures) is ~1300 px,
 * so a long --module path or findings list never makes the title, not
 * the graph, decide whether a depth fits (view.c, choose_depth). */
#define TITLE_WIDTH 180

/* Characters, not bytes: "·" and "…" are one each. */
static size_t chars(const char *text, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)text[i] & 0xc0) != 0x80;
	return n;
}

/* The title's '\v'-ended lines, each wrapped at spaces into lines of at
 * most TITLE_WIDTH characters (a longer word stays whole). */
static void wrap_title(const char *text, struct jsonw *w)
{
	size_t line = 0;

	while (*text) {
		if (*text == '\v') {
			jsonw_cstr(w, "\v");
			line = 0;
			text++;
			continue;
		}
		size_t word = strcspn(text, " \v");
		size_t width = chars(text, word);
		if (line && line + 1 + width > TITLE_WIDTH) {
			jsonw_cstr(w, "\v");
			line = 0;
		} else if (line) {
			jsonw_cstr(w, " ");
			line++;
		}
		jsonw_raw(w, text, word);
		line += width;
		text += word;
		while (*text == ' ')
			text++;
	}
}

void graph_write_dot(const struct graph *g, struct jsonw *w)
{
	struct containers c;
	size_t ncontainers = g->nclusters + 1;
	struct jsonw text, wrapped;

	jsonw_init(&text);
	jsonw_init(&wrapped);
	title(g, &text);
	wrap_title(text.data ? text.data : "", &wrapped);
	jsonw_free(&text);
	jsonw_cstr(w, "digraph amptrace {\n\tgraph [");
	jsonw_cstr(w, "fontname=\"Helvetica,Arial,sans-serif\", fontsize=\"12\", "
		   "labelloc=\"t\", labeljust=\"l\", rankdir=\"TB\", "
		   "nodesep=\"0.25\", ranksep=\"0.35\", "
		   "outputorder=\"edgesfirst\", label=");
	graph_quote(w, wrapped.data);
	w->failed |= wrapped.failed;
	jsonw_free(&wrapped);
	if (g->nnodes > GRAPH_BIG_NODES)
		jsonw_cstr(w, ", nslimit=\"1\", nslimit1=\"1\"");
	/* rank=same across clusters needs the global ranking (ordering=in
	 * would keep the parts in order too, but crashes dot with clusters) */
	if (g->nheads)
		jsonw_cstr(w, ", newrank=\"true\"");
	jsonw_cstr(w, "];\n"
		   "\tnode [shape=\"box\", style=\"rounded,filled\", "
		   "fontname=\"Helvetica,Arial,sans-serif\", fontsize=\"10\", "
		   "margin=\"0.08,0.04\", color=\"#555555\"];\n"
		   "\tedge [fontname=\"Helvetica,Arial,sans-serif\", "
		   "fontsize=\"8\", arrowsize=\"0.6\", penwidth=\"1.2\"];\n");
	legend(w);

	c.head = malloc(ncontainers * sizeof *c.head);
	c.tail = malloc(ncontainers * sizeof *c.tail);
	c.next = malloc((g->nitems ? g->nitems : 1) * sizeof *c.next);
	if (!c.head || !c.tail || !c.next) {
		w->failed = true;
		goto out;
	}
	for (size_t i = 0; i < ncontainers; i++)
		c.head[i] = c.tail[i] = VIEW_NONE;
	for (size_t i = 0; i < g->nitems; i++) {
		const struct graph_item *item = &g->items[i];
		int parent = item->cluster ? g->clusters[item->index].parent
					   : g->nodes[item->index].cluster;
		size_t container = (size_t)(parent + 1);
		c.next[i] = VIEW_NONE;
		if (c.tail[container] == VIEW_NONE)
			c.head[container] = i;
		else
			c.next[c.tail[container]] = i;
		c.tail[container] = i;
	}
	write_container(g, &c, 0, w, 1);
	/* the independent parts' first nodes side by side, in program order
	 * (graph.c joins them with invisible edges, left to right) */
	if (g->nheads) {
		jsonw_cstr(w, "\t{ rank=\"same\";");
		for (size_t h = 0; h < g->nheads; h++)
			jsonw_printf(w, " \"%s\";", g->nodes[g->heads[h]].id);
		jsonw_cstr(w, " }\n");
	}
	for (size_t e = 0; e < g->nedges; e++) {
		const struct graph_edge *edge = &g->edges[e];
		jsonw_printf(w, "\t\"%s\" -> \"%s\" [", g->nodes[edge->from].id,
			     g->nodes[edge->to].id);
		write_span(g, w, edge->attrs);
		jsonw_cstr(w, "];\n");
	}
	jsonw_cstr(w, "}\n");
out:
	free(c.head);
	free(c.tail);
	free(c.next);
}
