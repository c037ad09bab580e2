/* The aggregated steps of `amptrace diff` (diff_aggregate.h). */
#include "diff_aggregate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One aggregated step: its rows are [first, first + n) of the side's. */
struct aggregate_step {
	int64_t pid, tid, step;
	size_t line;
	size_t first_op, nops, first_cast, ncasts;
	bool compared;  /* the other side holds it too */
};

static bool grow(void **array, size_t *cap, size_t want, size_t elem)
{
	if (want <= *cap)
		return true;
	size_t cap2 = *cap ? *cap : 64;
	while (cap2 < want)
		cap2 *= 2;
	void *grown = realloc(*array, cap2 * elem);
	if (!grown)
		return false;
	*array = grown;
	*cap = cap2;
	return true;
}

void diff_aggregate_add(struct diff_aggregate_side *s,
			const struct trace_event *e)
{
	if (e->kind != TRACE_AGGREGATE || s->failed)
		return;
	const struct trace_aggregate *a = &e->aggregate;
	if (!grow((void **)&s->steps, &s->cap_steps, s->nsteps + 1,
		  sizeof *s->steps) ||
	    !grow((void **)&s->ops, &s->cap_ops, s->nops + (size_t)a->nops,
		  sizeof *s->ops) ||
	    !grow((void **)&s->casts, &s->cap_casts,
		  s->ncasts + (size_t)a->ncasts, sizeof *s->casts)) {
		s->failed = true;
		return;
	}
	struct aggregate_step *step = &s->steps[s->nsteps++];
	*step = (struct aggregate_step){ e->pid, e->tid, a->step, e->line,
					 s->nops, (size_t)a->nops, s->ncasts,
					 0, false };
	memcpy(s->ops + s->nops, a->ops, (size_t)a->nops * sizeof *a->ops);
	s->nops += (size_t)a->nops;
	/* autocast's casts only, as diff compares of the detailed steps */
	for (int i = 0; i < a->ncasts; i++)
		if (!a->casts[i].origin)
			s->casts[s->ncasts++] = a->casts[i];
	step->ncasts = s->ncasts - step->first_cast;
}

void diff_aggregate_free(struct diff_aggregate_side *s)
{
	free(s->steps);
	free(s->ops);
	free(s->casts);
	*s = (struct diff_aggregate_side){ 0 };
}

/* ------------------------------------------------------------ tallies */

/* Counts summed over the compared steps of one side.  The rows' strings
 * are interned by the side's reader, so within a side equal strings are
 * equal pointers. */
struct op_tally {
	const char *op, *overload, *phase, *policy, *dtype;
	size_t count;
};

struct cast_tally {
	const char *op, *phase, *from, *to, *cache;
	size_t count;
};

struct tallies {
	struct op_tally *ops;
	size_t nops, cap_ops;
	struct cast_tally *casts;
	size_t ncasts, cap_casts;
};

static bool tally_op(struct tallies *t, const struct trace_aggregate_op *r)
{
	for (size_t i = 0; i < t->nops; i++) {
		struct op_tally *x = &t->ops[i];
		if (x->op == r->op && x->overload == r->overload &&
		    x->phase == r->phase && x->policy == r->policy &&
		    x->dtype == r->dtype) {
			x->count += r->count;
			return true;
		}
	}
	if (!grow((void **)&t->ops, &t->cap_ops, t->nops + 1, sizeof *t->ops))
		return false;
	t->ops[t->nops++] = (struct op_tally){ r->op, r->overload, r->phase,
					       r->policy, r->dtype, r->count };
	return true;
}

static bool tally_cast(struct tallies *t,
		       const struct trace_aggregate_cast *r)
{
	for (size_t i = 0; i < t->ncasts; i++) {
		struct cast_tally *x = &t->casts[i];
		if (x->op == r->op && x->phase == r->phase &&
		    x->from == r->from && x->to == r->to &&
		    x->cache == r->cache) {
			x->count += r->count;
			return true;
		}
	}
	if (!grow((void **)&t->casts, &t->cap_casts, t->ncasts + 1,
		  sizeof *t->casts))
		return false;
	t->casts[t->ncasts++] = (struct cast_tally){ r->op, r->phase, r->from,
						     r->to, r->cache,
						     r->count };
	return true;
}

static bool tally_step(struct tallies *t, const struct diff_aggregate_side *s,
		       const struct aggregate_step *step)
{
	for (size_t i = 0; i < step->nops; i++)
		if (!tally_op(t, &s->ops[step->first_op + i]))
			return false;
	for (size_t i = 0; i < step->ncasts; i++)
		if (!tally_cast(t, &s->casts[step->first_cast + i]))
			return false;
	return true;
}

static void free_tallies(struct tallies *t)
{
	free(t->ops);
	free(t->casts);
}

/* ------------------------------------------------------ aligned steps */

struct keyed_step {
	size_t process;
	int64_t tid, step;
	struct aggregate_step *s;
};

static int compare_keyed(const void *a, const void *b)
{
	const struct keyed_step *x = a, *y = b;

	if (x->process != y->process)
		return x->process < y->process ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->step > y->step) - (x->step < y->step);
}

static struct keyed_step *keyed_steps(struct diff_aggregate_side *s,
				      const void *side,
				      diff_process_ordinal ordinal)
{
	struct keyed_step *k = malloc((s->nsteps ? s->nsteps : 1) * sizeof *k);

	if (!k)
		return NULL;
	for (size_t i = 0; i < s->nsteps; i++)
		k[i] = (struct keyed_step){ ordinal(side, s->steps[i].pid),
					    s->steps[i].tid, s->steps[i].step,
					    &s->steps[i] };
	trace_sort(k, s->nsteps, sizeof *k, compare_keyed);
	return k;
}

static void note_compared(struct diff_aggregate_steps *steps,
			  const struct keyed_step *b,
			  const struct keyed_step *n)
{
	if (!steps->compared++ || b->step < steps->first) {
		steps->first = b->step;
		steps->base_line = b->s->line;
		steps->new_line = n->s->line;
	}
	if (steps->compared == 1 || b->step > steps->last)
		steps->last = b->step;
}

/* Both sides' tallies over the steps both hold. */
static bool tally_aligned(struct diff_aggregate_side *base,
			  const void *base_side,
			  struct diff_aggregate_side *now,
			  const void *now_side, diff_process_ordinal ordinal,
			  struct tallies *tb, struct tallies *tn,
			  struct diff_aggregate_steps *steps)
{
	struct keyed_step *kb = keyed_steps(base, base_side, ordinal);
	struct keyed_step *kn = keyed_steps(now, now_side, ordinal);
	bool ok = kb && kn;
	size_t i = 0, j = 0;

	while (ok && (i < base->nsteps || j < now->nsteps)) {
		int order = i == base->nsteps ? 1
			    : j == now->nsteps ? -1
					       : compare_keyed(&kb[i], &kn[j]);
		if (order < 0) {
			steps->base_only++;
			i++;
		} else if (order > 0) {
			steps->new_only++;
			j++;
		} else {
			note_compared(steps, &kb[i], &kn[j]);
			kb[i].s->compared = kn[j].s->compared = true;
			ok = tally_step(tb, base, kb[i++].s) &&
			     tally_step(tn, now, kn[j++].s);
		}
	}
	free(kb);
	free(kn);
	return ok;
}

/* -------------------------------------------------------- comparison */

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static const char *or_none(const char *s)
{
	return s ? s : "none";
}

struct reporter {
	void (*report)(void *ctx, const struct diff_aggregate_change *change);
	void *ctx;
};

static void say(const struct reporter *r, const char *kind, const char *op,
		const char *phase, const char *base, const char *now,
		size_t count)
{
	if (!count)
		return;
	struct diff_aggregate_change c = { kind, op, phase, base, now, count };
	r->report(r->ctx, &c);
}

/* An entry of one group (same op, phase; same direction for casts) on
 * one side: what it is and how many are not matched yet. */
struct entry {
	const char *a, *b;  /* ops: policy, dtype; casts: cache, unused */
	size_t left;
};

/* The group's entries that match exactly cancel out; the rest pair up,
 * base's with new's, as changes (`changed`), and what is left over is
 * removed (`removed`) or added (`added`). */
static void compare_group(const struct reporter *r, struct entry *b,
			  size_t nb, struct entry *n, size_t nn,
			  void (*changed)(const struct reporter *,
					  const struct entry *,
					  const struct entry *, size_t,
					  const void *),
			  void (*left_over)(const struct reporter *,
					    const struct entry *, bool,
					    const void *),
			  const void *group)
{
	for (size_t i = 0; i < nb; i++)
		for (size_t j = 0; j < nn; j++)
			if (same(b[i].a, n[j].a) && same(b[i].b, n[j].b)) {
				size_t m = b[i].left < n[j].left ? b[i].left
								 : n[j].left;
				b[i].left -= m;
				n[j].left -= m;
			}
	for (size_t i = 0; i < nb; i++)
		for (size_t j = 0; j < nn && b[i].left; j++) {
			size_t m = b[i].left < n[j].left ? b[i].left
							 : n[j].left;
			if (!m)
				continue;
			changed(r, &b[i], &n[j], m, group);
			b[i].left -= m;
			n[j].left -= m;
		}
	for (size_t i = 0; i < nb; i++)
		left_over(r, &b[i], false, group);
	for (size_t j = 0; j < nn; j++)
		left_over(r, &n[j], true, group);
}

struct op_group {
	char label[160];
	const char *phase;
};

static void op_changed(const struct reporter *r, const struct entry *b,
		       const struct entry *n, size_t m, const void *group)
{
	const struct op_group *g = group;

	if (!same(b->b, n->b))
		say(r, "output", g->label, g->phase, or_none(b->b),
		    or_none(n->b), m);
	if (!same(b->a, n->a))
		say(r, "policy", g->label, g->phase, or_none(b->a),
		    or_none(n->a), m);
}

static void op_left_over(const struct reporter *r, const struct entry *e,
			 bool added, const void *group)
{
	const struct op_group *g = group;

	say(r, added ? "op-added" : "op-removed", g->label, g->phase,
	    added ? "absent" : "present", added ? "present" : "absent",
	    e->left);
}

static bool same_op_group(const struct op_tally *x, const struct op_tally *y)
{
	return same(x->op, y->op) && same(x->overload, y->overload) &&
	       same(x->phase, y->phase);
}

/* The entries of `t`'s ops in x's group, each marked done. */
static size_t op_entries(const struct tallies *t, bool *done,
			 const struct op_tally *x, struct entry *out)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nops; i++)
		if (!done[i] && same_op_group(&t->ops[i], x)) {
			done[i] = true;
			out[n++] = (struct entry){ t->ops[i].policy,
						   t->ops[i].dtype,
						   t->ops[i].count };
		}
	return n;
}

static bool compare_ops(const struct reporter *r, const struct tallies *tb,
			const struct tallies *tn)
{
	bool *done_b = calloc(tb->nops + 1, 1), *done_n = calloc(tn->nops + 1, 1);
	struct entry *eb = malloc((tb->nops + 1) * sizeof *eb);
	struct entry *en = malloc((tn->nops + 1) * sizeof *en);
	bool ok = done_b && done_n && eb && en;

	for (size_t k = 0; ok && k < tb->nops + tn->nops; k++) {
		bool base = k < tb->nops;
		size_t i = base ? k : k - tb->nops;
		if (base ? done_b[i] : done_n[i])
			continue;
		const struct op_tally *x = base ? &tb->ops[i] : &tn->ops[i];
		struct op_group g = { .phase = x->phase };
		if (x->overload && x->overload[0])
			snprintf(g.label, sizeof g.label, "%s.%s", x->op,
				 x->overload);
		else
			snprintf(g.label, sizeof g.label, "%s", x->op);
		size_t nb = op_entries(tb, done_b, x, eb);
		size_t nn = op_entries(tn, done_n, x, en);
		compare_group(r, eb, nb, en, nn, op_changed, op_left_over, &g);
	}
	free(done_b);
	free(done_n);
	free(eb);
	free(en);
	return ok;
}

struct cast_group {
	const char *op, *phase, *from, *to;
};

static void cast_text(const struct cast_group *g, const char *cache,
		      char *buf, size_t size)
{
	snprintf(buf, size, "%s->%s cache %s", g->from, g->to, cache);
}

static void cast_changed(const struct reporter *r, const struct entry *b,
			 const struct entry *n, size_t m, const void *group)
{
	char was[200], is[200];

	cast_text(group, b->a, was, sizeof was);
	cast_text(group, n->a, is, sizeof is);
	say(r, "cache", ((const struct cast_group *)group)->op,
	    ((const struct cast_group *)group)->phase, was, is, m);
}

static void cast_left_over(const struct reporter *r, const struct entry *e,
			   bool added, const void *group)
{
	const struct cast_group *g = group;
	char text[200];

	cast_text(g, e->a, text, sizeof text);
	say(r, added ? "cast-added" : "cast-removed", g->op, g->phase,
	    added ? "-" : text, added ? text : "-", e->left);
}

static bool same_cast_group(const struct cast_tally *x,
			    const struct cast_tally *y)
{
	return same(x->op, y->op) && same(x->phase, y->phase) &&
	       same(x->from, y->from) && same(x->to, y->to);
}

static size_t cast_entries(const struct tallies *t, bool *done,
			   const struct cast_tally *x, struct entry *out)
{
	size_t n = 0;

	for (size_t i = 0; i < t->ncasts; i++)
		if (!done[i] && same_cast_group(&t->casts[i], x)) {
			done[i] = true;
			out[n++] = (struct entry){ t->casts[i].cache, NULL,
						   t->casts[i].count };
		}
	return n;
}

static bool compare_casts(const struct reporter *r, const struct tallies *tb,
			  const struct tallies *tn)
{
	bool *done_b = calloc(tb->ncasts + 1, 1);
	bool *done_n = calloc(tn->ncasts + 1, 1);
	struct entry *eb = malloc((tb->ncasts + 1) * sizeof *eb);
	struct entry *en = malloc((tn->ncasts + 1) * sizeof *en);
	bool ok = done_b && done_n && eb && en;

	for (size_t k = 0; ok && k < tb->ncasts + tn->ncasts; k++) {
		bool base = k < tb->ncasts;
		size_t i = base ? k : k - tb->ncasts;
		if (base ? done_b[i] : done_n[i])
			continue;
		const struct cast_tally *x = base ? &tb->casts[i]
						  : &tn->casts[i];
		struct cast_group g = { x->op, x->phase, x->from, x->to };
		size_t nb = cast_entries(tb, done_b, x, eb);
		size_t nn = cast_entries(tn, done_n, x, en);
		compare_group(r, eb, nb, en, nn, cast_changed, cast_left_over,
			      &g);
	}
	free(done_b);
	free(done_n);
	free(eb);
	free(en);
	return ok;
}

int diff_aggregates(struct diff_aggregate_side *base,
		    const void *base_side,
		    struct diff_aggregate_side *now,
		    const void *now_side, diff_process_ordinal ordinal,
		    void (*report)(void *ctx,
				   const struct diff_aggregate_change *change),
		    void *ctx, struct diff_aggregate_steps *steps)
{
	struct tallies tb = { 0 }, tn = { 0 };
	struct reporter r = { report, ctx };

	*steps = (struct diff_aggregate_steps){ 0 };
	bool ok = !base->failed && !now->failed &&
		  tally_aligned(base, base_side, now, now_side, ordinal, &tb,
				&tn, steps) &&
		  compare_ops(&r, &tb, &tn) && compare_casts(&r, &tb, &tn);
	free_tallies(&tb);
	free_tallies(&tn);
	return ok ? 0 : -1;
}

void diff_aggregate_each_compared_cast(
	const struct diff_aggregate_side *s,
	void (*each)(void *ctx, const struct trace_aggregate_cast *cast),
	void *ctx)
{
	for (size_t i = 0; i < s->nsteps; i++)
		for (size_t k = 0; s->steps[i].compared && k < s->steps[i].ncasts;
		     k++)
			each(ctx, &s->casts[s->steps[i].first_cast + k]);
}
