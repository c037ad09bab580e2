/* The graph ampview draws, before it becomes DOT text: nodes with their
 * attributes already formatted, edges, clusters (autocast regions and
 * backward passes), findings, and what was folded or left out.
 * graph.c builds it from a selection; dot.c writes it out. */
#ifndef AMPTRACE_VIEW_GRAPH_H
#define AMPTRACE_VIEW_GRAPH_H

#include "jsonw.h"
#include "view_internal.h"

#include <stdbool.h>
#include <stddef.h>

/* An edge from a node drawn more than this many ops (or folds) above its
 * consumer goes to a reference node instead (graph.c, ref_node). */
#define GRAPH_LONG_EDGE 30

/* The fill of folded optimizer steps (graph_hidden.c, the legend). */
#define GRAPH_OPTIMIZER_FILL "#e3eedb"

/* Text spans in graph.text (DOT attribute lists, without brackets). */
struct graph_span {
	size_t at, len;
};

struct graph_node {
	char id[32];
	char brief[80];          /* "linear #12": what a reference to it says */
	int cluster;             /* -1: the top level */
	struct graph_span attrs;
	size_t unit;             /* drawing position (ops and folds drawn
				    before it); inputs: of their last use */
	bool flagged;            /* a finding concerns it: drawn in red */
};

struct graph_edge {
	size_t from, to;         /* node indices */
	struct graph_span attrs;
};

struct graph_cluster {
	char id[32];
	int parent;              /* -1: the top level */
	struct graph_span attrs;
};

/* A finding of the trace's analysis (tracer/analysis/findings.h) drawn as a
 * note on the first node of a step where it occurs, or on the first node of the
 * view with the same problem. */
struct graph_finding {
	const struct trace_finding *finding;
	size_t node;
	int step, last_step;     /* the steps of its occurrences here (a fold
				    hides several), or -1 */
	size_t count;            /* occurrences in those steps */
	bool first;              /* the first occurrence is among them */
};

/* Nodes of the view that show a problem of `kind` (red borders). */
struct graph_flag {
	const char *kind;
	size_t first_node, count;
};

/* The optimizer's ops of one step (phase optimizer), drawn as one node
 * (--phase optimizer draws them). */
struct graph_box {
	size_t first;            /* its first op's ordinal */
	size_t nops;             /* ops it stands for */
	int step;
};

/* A module drawn as one node (graph_modules.c): a run of consecutive
 * ops inside one module path cut to the view's depth. */
struct graph_module {
	size_t first, nops;      /* its first op's ordinal; ops it stands for */
	const char *module;      /* the first op's path (interned) */
	size_t len;              /* of its prefix drawn: the module's path */
	size_t calls;            /* >1: repeated sibling modules drawn as one
				    (h.0 … h.11), each call as the first */
	const char *last;        /* the last one's path, and its length */
	size_t last_len;
};

/* The order nodes and clusters were made in, which is the order dot.c
 * declares them (and so dot's initial ordering). */
struct graph_item {
	bool cluster;
	size_t index;
};

struct graph {
	const struct view_selection *s;
	const struct view_options *o;
	struct jsonw text;
	struct graph_node *nodes;
	size_t nnodes, cap_nodes;
	struct graph_edge *edges;
	size_t nedges, cap_edges;
	struct graph_cluster *clusters;
	size_t nclusters, cap_clusters;
	struct graph_item *items;
	size_t nitems, cap_items;
	struct graph_finding *findings;  /* drawn as notes */
	size_t nfindings;
	const struct trace_finding **elsewhere; /* about ops the view does not draw */
	size_t nelsewhere;
	struct graph_flag *flags;
	size_t nflags;
	/* what the view left out */
	struct view_fold *folds;
	size_t nfolds;
	struct graph_box *boxes;
	size_t nboxes;
	struct graph_module *modules;
	size_t nmodules, cap_modules;
	int module_depth;        /* parts of a collapsed module's path, or
				    VIEW_DEPTH_OPS when ops are drawn alone */
	size_t ops_collapsed;    /* inside modules */
	size_t casts_collapsed;  /* their casts */
	size_t module_nodes;     /* drawn (repetitions folded are not) */
	size_t ops_shown, ops_folded, ops_boxed, ops_left_out, casts_shown;
	/* the first node of each independent part (a forward pass that
	 * uses nothing the ones before it made, a step), in program order:
	 * dot.c puts them on one rank, left to right */
	size_t *heads;
	size_t nheads;
	bool failed;             /* out of memory somewhere */
};

/* -------------------------------------------- building (graph*.c only) */

/* Per-build state that does not outlive graph_build(). */
struct graph_builder {
	struct graph *g;
	const struct view_selection *s;
	size_t *hidden_in;        /* per op: the fold hiding it, or VIEW_NONE */
	size_t *node_of_op;       /* per op: its node (a fold's when hidden) */
	size_t *fold_node;        /* per fold: its node, VIEW_NONE until made */
	size_t *box_of;           /* per op: its optimizer box, or VIEW_NONE */
	size_t *box_node;         /* per box: its node, VIEW_NONE until made */
	bool *part_start;         /* per op: the first of an independent part */
	size_t part_unit;         /* the unit the current part began at */
	int *region_cluster;      /* per region: its cluster, -1 until made */
	int backward_cluster;     /* the open backward-pass cluster, or -1 */
	size_t *module_of;        /* per op: its collapsed module, or VIEW_NONE */
	const char **op_module;   /* per op: the module it is drawn in */
	size_t *module_node;      /* per module: its node, VIEW_NONE until made */
	struct module_cluster *module_clusters;
	size_t nmodule_clusters, cap_module_clusters;
	size_t unit;              /* ops and folds drawn so far */
	size_t last_unit;         /* the node of the last op or fold drawn */
	size_t anchor;            /* the one before the op being drawn */
	size_t folds_drawn, inputs_drawn, refs_drawn;
	struct view_map cast_nodes;   /* (0, cast event) -> node */
	struct view_map cache_fills;  /* (cache_key, tensor) -> miss node */
	struct view_map input_nodes;  /* (pid, tensor) -> node */
	struct view_map ref_nodes;    /* (0, node) -> its reference node */
	struct view_map fold_edges;   /* (from node, to node) -> 1 */
	struct jsonw label;           /* scratch for one label */
};

/* graph_store.c: a new node, edge or cluster whose attributes are the
 * text appended after it, until graph_end_*(). */
size_t graph_new_node(struct graph *g, int cluster, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void graph_end_node(struct graph *g, size_t node);
/* Declares a top-level node before all others: of the nodes dot ranks
 * first, the first declared goes leftmost (next to the legend). */
void graph_declare_first(struct graph *g, size_t node);
size_t graph_new_edge(struct graph *g, size_t from, size_t to);
void graph_end_edge(struct graph *g, size_t edge);
int graph_new_cluster(struct graph *g, int parent, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void graph_end_cluster(struct graph *g, int cluster);
/* key="value", after a comma when the list begun at `start` has one. */
void graph_attr(struct graph *g, size_t start, const char *key,
		const char *value);

/* Label text: printf, "f16[32,64]", "8.0 KiB", "12.3 µs", and wrapping
 * into at most `max_lines` lines ("…" when cut). */
void graph_text(struct jsonw *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
const char *graph_tensor_text(char *buf, size_t size, const char *dtype,
			      const struct trace_tensor *t);
const char *graph_bytes_text(char *buf, size_t size, uint64_t bytes);
const char *graph_time_text(char *buf, size_t size, double us);
void graph_wrap(struct jsonw *w, const char *text, size_t width,
		int max_lines);
/* Graphviz sizes a box with Pango's metrics; browsers shape the same
 * font a little wider (Chromium: ~2%, 6.5 px on the legend's longest
 * line), so a left-justified line of `len` bytes carries this many
 * trailing no-break spaces as slack (tests/test_viewer_browser.sh
 * measures the legend and the notes in Chromium). */
size_t graph_slack(size_t len);

/* graph.c: nodes for sources and the wiring of ops drawn as one node. */
int graph_cluster_of_op(struct graph_builder *b, size_t ordinal);
size_t graph_source_node(struct graph_builder *b, const struct view_source *src,
			 const char *dtype, const struct trace_tensor *shape);
/* Whether an input node drawn before can be used again now. */
bool graph_input_near(const struct graph_builder *b, size_t node);
/* Starts a unit (an op, fold or box node) at `node`. */
void graph_begin_unit(struct graph_builder *b, size_t node, size_t ordinal);

/* graph_hidden.c: ops drawn as one node, a folded block's repetitions or
 * a step's optimizer ops: plans the boxes, then draws each hidden op. */
void graph_drop_optimizer_folds(struct graph *g);
bool graph_plan_boxes(struct graph_builder *b);
void graph_hide_op(struct graph_builder *b, size_t ordinal);

/* Draws a hidden op's inputs from the drawn graph as (one) edge each
 * into `node`, the node standing for it. */
void graph_wire_hidden(struct graph_builder *b, size_t ordinal, size_t node);

/* graph_modules.c: which ops each module node stands for. */
/* The depth a module node's path is cut to: --module's and --depth's. */
int graph_module_cut(const struct graph *g);
/* Whether paths a[0..alen) and b[0..blen) are the same module. */
bool graph_same_path(const char *a, size_t alen, const char *b, size_t blen);
/* The length of the path of the module holding module[0..len), the part
 * before its last dot (0 for an outermost one). */
size_t graph_parent_len(const char *module, size_t len);
/* The deepest module path among the selection's ops, in parts (-1:
 * none names a module). */
int graph_max_module_depth(const struct view_selection *s);
/* The parts of the --module path: module depths count from it. */
int graph_module_base(const struct view_options *o);
/* Finds the runs of ops drawn as one module node (module_of) and folds
 * repeating patterns of them into g->folds; returns false when out of
 * memory. */
bool graph_plan_modules(struct graph_builder *b);
/* The module op `ordinal` is drawn in (its own, or for a backward op
 * naming none, its first input's maker's), or NULL. */
const char *graph_op_module(const struct graph_builder *b, size_t ordinal);
void graph_free_modules(struct graph_builder *b);

/* graph_module_nodes.c: module nodes and module clusters. */
/* The cluster an op drawn alone sits in: its module's, inside `outer`
 * (its autocast region's or the backward pass's). */
int graph_module_cluster_of_op(struct graph_builder *b, size_t ordinal,
			       int outer);
/* A collapsed op: its module's node, drawn at its first op. */
void graph_collapse_op(struct graph_builder *b, size_t ordinal);

/* graph_notes.c: red borders while drawing, then the notes. */
void graph_flag(struct graph_builder *b, size_t node, const char *kind);
void graph_op_flags(struct graph_builder *b, size_t node,
		    const struct trace_op *op);
void graph_cast_flags(struct graph_builder *b, size_t node,
		      const struct trace_cast *c);
void graph_place_findings(struct graph_builder *b, size_t shown_ops);
void graph_draw_findings(struct graph_builder *b);
/* "warning stale-cache ×2 (first in step 1: --step 1 draws it)": a
 * finding the view has no note for, in the title and the note about
 * them. */
void graph_elsewhere_text(const struct graph *g, const struct trace_finding *f,
			  struct jsonw *w);

/* ------------------------------------------------------------ the API */

/* Builds the graph of a selection.  Returns 0 or -1 (memory). */
int graph_build(struct graph *g, const struct view_selection *s,
		const struct view_options *o);
void graph_free(struct graph *g);

/* Writes the graph as DOT into `out`. */
void graph_write_dot(const struct graph *g, struct jsonw *out);

/* A dtype's colours (one fixed palette, dot.c): edges, op fills, and
 * the light tint of autocast regions casting to it. */
const char *graph_dtype_color(const char *dtype);
const char *graph_dtype_fill(const char *dtype);
const char *graph_dtype_tint(const char *dtype);

/* Appends `text` as a DOT quoted string: '\n' ends a centred line, '\v'
 * a left-justified one; '&' and C1 controls as entities, other controls
 * as spaces (dot.c says why). */
void graph_quote(struct jsonw *w, const char *text);

#endif /* AMPTRACE_VIEW_GRAPH_H */
