/* Folding repeated identical blocks of ops (the layers of a model, the
 * steps of --all-steps): a graph shows the first repetition and one node
 * standing for the others.
 *
 * Two ops "are the same" when they are the same op with the same policy,
 * autocast state, dtypes, shapes and casts (cache results included), and
 * their inputs are wired the same way (same_wiring). */
#include "view_internal.h"

#include <stdlib.h>
#include <string.h>

struct finder {
	view_fold_equal_fn equal;
	void *ctx;
	size_t max_period, min_hidden;
	struct view_fold *folds;
	size_t nfolds, cap;
	bool failed;
};

/* Ops start, start+1, ... that equal the op `period` later: the block
 * [start, start + period) repeats run / period more times. */
static size_t run_length(const struct finder *f, size_t start, size_t period,
			 size_t hi)
{
	size_t run = 0;

	while (start + run + period < hi &&
	       f->equal(f->ctx, start + run, start + run + period, period,
			start + run / period * period))
		run++;
	return run;
}

/* A run usually begins with an op or two that merely equal the ones a
 * period later (the last update of the step before, the softmax of the
 * forward pass before): the latest start that hides as many ops lines
 * the block up with the steps and passes it repeats. */
static size_t latest_start(const struct finder *f, size_t start, size_t period,
			   size_t count, size_t run, size_t hi)
{
	for (size_t shift = run % period; shift > 0; shift--)
		if (run_length(f, start + shift, period, hi) / period + 1 == count)
			return start + shift;
	return start;
}

static void find_range(struct finder *f, size_t lo, size_t hi)
{
	size_t i = lo;

	while (i < hi && !f->failed) {
		size_t best_period = 0, best_count = 0, best_hidden = 0;
		size_t best_run = 0;
		for (size_t p = 1; p <= f->max_period && i + 2 * p <= hi; p++) {
			size_t run = run_length(f, i, p, hi);
			size_t count = run / p + 1;
			size_t hidden = (count - 1) * p;
			if (hidden > best_hidden) {
				best_period = p;
				best_count = count;
				best_hidden = hidden;
				best_run = run;
			}
		}
		if (best_hidden < f->min_hidden || best_hidden == 0) {
			i++;
			continue;
		}
		i = latest_start(f, i, best_period, best_count, best_run, hi);
		if (f->nfolds == f->cap) {
			size_t cap = f->cap ? f->cap * 2 : 16;
			struct view_fold *grown = realloc(f->folds,
							  cap * sizeof *grown);
			if (!grown) {
				f->failed = true;
				return;
			}
			f->folds = grown;
			f->cap = cap;
		}
		f->folds[f->nfolds++] = (struct view_fold){ i, best_period,
							    best_count };
		find_range(f, i, i + best_period);
		i += best_period * best_count;
	}
}

static int compare_folds(const void *a, const void *b)
{
	const struct view_fold *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

int view_fold_find(size_t n, size_t max_period, size_t min_hidden,
		   view_fold_equal_fn equal, void *ctx,
		   struct view_fold **folds, size_t *nfolds)
{
	struct finder f = { .equal = equal, .ctx = ctx,
			    .max_period = max_period, .min_hidden = min_hidden };

	find_range(&f, 0, n);
	if (f.failed) {
		free(f.folds);
		*folds = NULL;
		*nfolds = 0;
		return -1;
	}
	/* a nested fold lies inside its outer fold's first repetition, so
	 * ordering by start keeps the outer one first */
	if (f.nfolds) /* qsort(NULL, 0) is undefined */
		qsort(f.folds, f.nfolds, sizeof *f.folds, compare_folds);
	*folds = f.folds;
	*nfolds = f.nfolds;
	return 0;
}

/* ------------------------------------------------ the selection's ops */

static bool same_tensor(const struct trace_tensor *a,
			const struct trace_tensor *b)
{
	if (!a || !b)
		return a == b;
	const struct trace_tensor_info *x = a->info, *y = b->info;
	return x->dtype == y->dtype && x->ndim == y->ndim &&
	       !memcmp(x->shape, y->shape, (size_t)x->ndim * sizeof *x->shape);
}

/* Inputs made inside their block must come from the same place in it;
 * inputs from before the block (the previous layer's output, the
 * attention mask, the activations a backward block reads, the gradient
 * it accumulates into) are the block's arguments: any will do. */
static bool same_wiring(const struct view_selection *s, size_t i, size_t j,
			size_t period, size_t block, const struct view_source *a,
			const struct view_source *b)
{
	size_t ma = view_source_ordinal(s, a), mb = view_source_ordinal(s, b);
	bool inside_a = ma != VIEW_NONE && ma >= block;
	bool inside_b = mb != VIEW_NONE && mb >= block + period;

	if (inside_a != inside_b)
		return false;
	return !inside_a || (a->kind == b->kind && i - ma == j - mb);
}

/* A hit is not the same as a miss: the first layer that uses a shared
 * weight converts it, the next ones only look it up. */
static bool same_cast(const struct trace_cast *a, const struct trace_cast *b)
{
	return a->from == b->from && a->to == b->to && a->arg == b->arg &&
	       a->cache == b->cache && a->stale == b->stale;
}

static bool ops_equal(void *ctx, size_t i, size_t j, size_t period,
		      size_t block)
{
	const struct view_selection *s = ctx;
	const struct view_op *x = &s->ops[i], *y = &s->ops[j];

	if (x->hash != y->hash || x->ninputs != y->ninputs ||
	    x->parent != y->parent || x->forward != y->forward)
		return false;
	const struct trace_op *a = view_op_of(s, i), *b = view_op_of(s, j);
	if (a->op != b->op || a->overload != b->overload ||
	    a->phase != b->phase || a->policy != b->policy ||
	    a->incomplete != b->incomplete ||
	    a->autocast->enabled != b->autocast->enabled ||
	    a->autocast->dtype != b->autocast->dtype ||
	    a->autocast->depth != b->autocast->depth ||
	    a->autocast->scope != b->autocast->scope ||
	    a->noutputs != b->noutputs)
		return false;
	for (int k = 0; k < a->noutputs; k++)
		if (!same_tensor(&a->outputs[k], &b->outputs[k]))
			return false;
	for (size_t k = 0; k < x->ninputs; k++) {
		const struct view_input *p = &s->inputs[x->first_input + k];
		const struct view_input *q = &s->inputs[y->first_input + k];
		if (!same_tensor(p->tensor, q->tensor) ||
		    (p->cast == VIEW_NONE) != (q->cast == VIEW_NONE))
			return false;
		if (p->cast != VIEW_NONE &&
		    !same_cast(&s->trace->events[p->cast].cast,
			       &s->trace->events[q->cast].cast))
			return false;
		if (!same_wiring(s, i, j, period, block, &p->source,
				 &q->source))
			return false;
	}
	return true;
}

/* Keeps folding near-linear on huge selections (--all-steps on a long
 * run): the longest block looked for shrinks as the selection grows. */
#define FOLD_MAX_PERIOD 2048
#define FOLD_WORK 100000000u
/* Folding a handful of ops saves little and makes the reader look twice. */
#define FOLD_MIN_HIDDEN 10

int view_fold_selection(const struct view_selection *s,
			struct view_fold **folds, size_t *nfolds)
{
	size_t max_period = FOLD_MAX_PERIOD;

	if (s->nops && FOLD_WORK / s->nops < max_period)
		max_period = FOLD_WORK / s->nops ? FOLD_WORK / s->nops : 1;
	return view_fold_find(s->nops, max_period, FOLD_MIN_HIDDEN, ops_equal,
			      (void *)s, folds, nfolds);
}
