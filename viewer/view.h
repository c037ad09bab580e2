/* ampview's library: a loaded trace (tracer/trace/trace.h) → an annotated
 * computation graph as DOT text → SVG or PNG through Graphviz's libgvc.
 *
 * The DOT text is a pure function of the trace's content and the options:
 * node ids are derived from positions in the shown window, never from
 * tensor or op ids, pointers or hash order, so one trace always gives the
 * same bytes (the golden tests rely on it).
 *
 * Ownership: view_dot() and view_render() return malloc'd buffers the
 * caller frees with free(). */
#ifndef AMPTRACE_VIEW_H
#define AMPTRACE_VIEW_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>

enum view_format {
	VIEW_FORMAT_SVG,
	VIEW_FORMAT_DOT,
	VIEW_FORMAT_PNG,
	VIEW_FORMAT_COUNT
};

/* view_options.step: a step number (0-based, as `amptrace summary` counts
 * them), or one of these. */
#define VIEW_STEP_DEFAULT (-1) /* steps.h default_step: the second in full detail */
#define VIEW_STEP_ALL (-2)     /* the whole trace */
/* view_options.rank: a job's ranks each run the step; a graph shows one */
#define VIEW_RANK_DEFAULT (-1) /* the first of several ranks that train,
				  else every process */
#define VIEW_RANK_ALL (-2)     /* every rank's processes */

/* How many op nodes (a folded block counts as one) a graph shows unless
 * told otherwise: keeps dot's layout time around a second. */
#define VIEW_DEFAULT_MAX_OPS 1000

/* view_options.depth: how deep module paths are drawn before a module
 * becomes one node (0: the model, or --module's, is one node), or: */
#define VIEW_DEPTH_AUTO (-1) /* the deepest whose layout fits VIEW_FIT_PX */
#define VIEW_DEPTH_OPS (-2)  /* no modules: every op drawn, as for libamp */

/* The size, in CSS px (96 per inch) both ways, the default module view
 * is made to fit. */
#define VIEW_FIT_PX 2000

struct view_options {
	int step;
	int rank;            /* a rank's processes only, or VIEW_RANK_* */
	const char *scope;   /* only ops inside the named autocast region */
	const char *phase;   /* "forward", "backward", "optimizer", or NULL
				for all (the optimizer's ops of each step
				folded into one box unless !fold) */
	const char *module;  /* only ops inside this nn.Module path (a glob) */
	int depth;           /* VIEW_DEPTH_*, or module parts below --module
				drawn before a module is one node; traces
				whose ops name no module are drawn as ops */
	size_t max_ops;      /* 0: no limit */
	bool fold;           /* fold repeated identical blocks of ops */
};

/* What a graph shows, for callers that report it (ampview -v, the bench). */
struct view_stats {
	int step, nsteps;           /* step shown (VIEW_STEP_ALL: all) */
	size_t ops_selected;        /* ops in the step and filters */
	size_t ops_shown;           /* drawn as op nodes */
	size_t ops_folded;          /* inside folded blocks and boxes */
	size_t ops_boxed;           /* of those: in optimizer boxes */
	size_t ops_left_out;        /* beyond max_ops */
	size_t folds;
	size_t boxes;               /* optimizer boxes */
	size_t nodes, edges, clusters;
	int depth;                  /* the modules' depth drawn, or
				       VIEW_DEPTH_OPS */
	size_t ops_collapsed;       /* inside collapsed modules */
	size_t modules;             /* their nodes */
	double width_px, height_px; /* laid out, when the depth was chosen
				       by size (else 0) */
	size_t layouts;             /* made to choose it */
	const char *phase;          /* the phase drawn, or NULL: all */
	bool phase_by_default;      /* forward: a module view's default */
	size_t ops_matching_elsewhere; /* in the filters, in other steps */
	int step_matching;          /* the first of those steps */
};

void view_options_init(struct view_options *options);

/* The phases view_options.phase takes (tracer/FORMAT.md's), NULL-ended,
 * and whether `phase` is one. */
extern const char *const view_phase_names[];
bool view_phase_known(const char *phase);

/* "svg" → VIEW_FORMAT_SVG.  Returns 0, or -1 when unknown. */
int view_format_from_name(const char *name, enum view_format *format);
const char *view_format_name(enum view_format format);

/* The DOT text of `trace` under `options`, NUL-terminated.  Returns 0, or
 * -1 with err set when the options do not fit the trace (no such step,
 * no such scope) or memory ran out.  `stats` may be NULL. */
int view_dot(const struct trace *trace, const struct view_options *options,
	     char **dot, size_t *len, struct view_stats *stats,
	     struct trace_error *err);

/* Lays `dot` out with Graphviz's dot engine and renders it as `format`
 * (SVG or PNG; DOT is returned as is).  Returns 0, or -1 with err set. */
int view_render(const char *dot, size_t len, enum view_format format,
		char **out, size_t *out_len, struct trace_error *err);

/* The size `dot` lays out to, in points (72 per inch), with Graphviz's
 * dot engine.  Returns 0, or -1 with err set. */
int view_layout_size(const char *dot, double *width_pt, double *height_pt,
		     struct trace_error *err);

#endif /* AMPTRACE_VIEW_H */
