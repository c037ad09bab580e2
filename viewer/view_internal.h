/* ampview internals: the selection (which ops a graph shows and where
 * each of their inputs comes from), repeated-block folding, and the
 * (pid, id) map both use.  See view.h for the public side. */
#ifndef AMPTRACE_VIEW_INTERNAL_H
#define AMPTRACE_VIEW_INTERNAL_H

#include "analyze.h"
#include "id_map.h"
#include "trace.h"
#include "view.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VIEW_NONE SIZE_MAX

/* ------------------------------------------------- (pid, id) -> value */

/* The trace tools' map (id_map.h), holding the viewer's values. */
struct view_map {
	struct id_map map;
};

/* Returns false when out of memory. */
bool view_map_put(struct view_map *m, int64_t pid, uint64_t id,
		  uint64_t value);
/* Returns false when absent. */
bool view_map_get(const struct view_map *m, int64_t pid, uint64_t id,
		  uint64_t *value);
/* How many keys it holds. */
size_t view_map_size(const struct view_map *m);
void view_map_free(struct view_map *m);

/* ------------------------------------------------------------ selection */

enum view_source_kind {
	VIEW_SOURCE_NONE,    /* never produced in the trace (an input made
				before tracing started) */
	VIEW_SOURCE_OP,      /* an op of the selection: `index` is its ordinal */
	VIEW_SOURCE_CAST,    /* a cast of the selection: `index` is its event */
	VIEW_SOURCE_OUTSIDE, /* an op or cast not selected: `index` is its event */
	VIEW_SOURCE_KIND_COUNT
};

struct view_source {
	enum view_source_kind kind;
	size_t index;
	int64_t pid;
	uint64_t tensor;
};

/* One input slot of a selected op: the tensor it read and, when autocast
 * cast it first, the cast; `source` is where the tensor (or the cast's
 * source tensor) came from.  A cast whose op lists no matching input (an
 * op that never finished) gets a slot with tensor NULL. */
struct view_input {
	const struct trace_tensor *tensor;
	size_t cast;
	struct view_source source;
};

/* An autocast region instance (amp.scope B..E on one thread). */
struct view_region {
	const char *scope, *device, *dtype;
	int depth;
	bool enabled;
	int parent;          /* enclosing region, or -1 */
};

struct view_op {
	size_t event;
	size_t first_input, ninputs;  /* into view_selection.inputs */
	int region;                   /* innermost region, or -1 */
	const char *parent;           /* composite op it ran inside, or NULL */
	const char *forward;          /* backward ops: the forward op */
	uint64_t hash;                /* of the fields fold compares */
	bool boxed;                   /* an optimizer op: drawn in its
					 step's box unless a fold hides it */
};

struct view_selection {
	const struct trace *trace;
	struct analysis analysis;
	bool analysed;
	int step;                     /* chosen step, or VIEW_STEP_ALL */
	int group;                    /* the rank group shown (ranks.h), or
					 -1: every process */
	int groups_training;          /* ranks that train (the processes
					 without a rank are no rank) */
	size_t ops_other_ranks;       /* of processes of other ranks */
	struct view_op *ops;
	size_t nops, cap_ops;
	struct view_input *inputs;
	size_t ninputs, cap_inputs;
	struct view_region *regions;
	size_t nregions;
	size_t *ordinal_of;           /* per event: op ordinal, for casts their
					 op's, VIEW_NONE when not selected */
	struct view_map names;        /* (pid, tensor) -> interned name */
	size_t ops_other_steps;       /* not in the chosen step */
	size_t ops_filtered;          /* in the step, not in scope/phase */
	size_t ops_matching_elsewhere; /* in the filters, not in the step */
	int step_matching;            /* the first step of those, or -1 */
};

/* Chooses the step and the ops, links every input to its source.
 * Returns 0, or -1 with err set. */
int view_select(const struct trace *trace, const struct view_options *o,
		struct view_selection *s, struct trace_error *err);
void view_selection_free(struct view_selection *s);

/* Whether the options fold each step's optimizer ops into one box: by
 * default; not with --no-fold or a --phase filter. */
bool view_boxes_optimizer(const struct view_options *o);

/* The ordinal of the op (or the cast's op) that made the source, or
 * VIEW_NONE when outside the selection. */
size_t view_source_ordinal(const struct view_selection *s,
			   const struct view_source *src);

/* An op with no inputs that makes tensors (randn, zeros, tensor): drawn
 * as the tensors it makes, not as an op. */
bool view_op_is_factory(const struct trace_op *op);

/* The op event of selected op `ordinal`. */
static inline const struct trace_op *view_op_of(const struct view_selection *s,
						size_t ordinal)
{
	return &s->trace->events[s->ops[ordinal].event].op;
}

/* The tensor's name, or NULL. */
const char *view_tensor_name(const struct view_selection *s, int64_t pid,
			     uint64_t tensor);

/* ------------------------------------------------------------- folding */

/* A repeated block: ops [start, start + period) are shown, the next
 * `count - 1` repetitions, [start + period, start + count * period), are
 * folded into one node. */
struct view_fold {
	size_t start, period, count;
	size_t calls;   /* module calls per repetition (graph_modules.c's
			   folds of module nodes), or 0 for ops */
	bool with_ops;  /* those calls' pattern holds ops drawn alone too */
};

/* Whether ops i and j = i + period are the same op in the same place of
 * two repetitions of a block of length `period`; i's repetition starts at
 * `block`, j's at block + period. */
typedef bool (*view_fold_equal_fn)(void *ctx, size_t i, size_t j,
				   size_t period, size_t block);

/* Greedy from the left: at each position the period that hides the most
 * ops wins; blocks nested in a shown repetition fold too.  Only blocks
 * hiding at least `min_hidden` ops fold.  Returns 0 or -1 (memory). */
int view_fold_find(size_t n, size_t max_period, size_t min_hidden,
		   view_fold_equal_fn equal, void *ctx,
		   struct view_fold **folds, size_t *nfolds);

/* view_fold_find over a selection with its equality (same op, policy,
 * dtypes, shapes, casts and wiring). */
int view_fold_selection(const struct view_selection *s,
			struct view_fold **folds, size_t *nfolds);

#endif /* AMPTRACE_VIEW_INTERNAL_H */
