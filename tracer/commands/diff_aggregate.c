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

/* A row's count summed over the compared steps of one side: `group` is
 * what it is compared within (ops: op, overload, phase; casts: op,
 * phase, from, to), `what` the rest (ops: policy, dtype; casts: cache).
 * The rows' strings are interned by the side's reader, so within a side
 * equal strings are equal pointers. */
struct tally {
	const char *group[4];
	const char *what[2];
	size_t count;
};

struct tallies {
	struct tally *items;
	size_t count, cap;
};

static bool add_tally(struct tallies *t, const struct tally *row)
{
	for (size_t i = 0; i < t->count; i++) {
		struct tally *x = &t->items[i];
		if (!memcmp(x->group, row->group, sizeof x->group) &&
		    !memcmp(x->what, row->what, sizeof x->what)) {
			x->count += row->count;
			return true;
		}
	}
	if (!grow((void **)&t->items, &t->cap, t->count + 1, sizeof *t->items))
		return false;
	t->items[t->count++] = *row;
	return true;
}

/* A step's rows into the side's op and cast tallies. */
static bool tally_step(struct tallies *ops, struct tallies *casts,
		       const struct diff_aggregate_side *s,
		       const struct aggregate_step *step)
{
	for (size_t i = 0; i < step->nops; i++) {
		const struct trace_aggregate_op *r = &s->ops[step->first_op + i];
		struct tally row = { { r->op, r->overload, r->phase, NULL },
				     { r->policy, r->dtype }, r->count };
		if (!add_tally(ops, &row))
			return false;
	}
	for (size_t i = 0; i < step->ncasts; i++) {
		const struct trace_aggregate_cast *r =
			&s->casts[step->first_cast + i];
		struct tally row = { { r->op, r->phase, r->from, r->to },
				     { r->cache, NULL }, r->count };
		if (!add_tally(casts, &row))
			return false;
	}
	return true;
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

/* What one side's compared steps hold: their op rows and cast rows. */
struct side_tallies {
	struct tallies ops, casts;
};

/* Both sides' tallies over the steps both hold. */
static bool tally_aligned(struct diff_aggregate_side *base,
			  const void *base_side,
			  struct diff_aggregate_side *now,
			  const void *now_side, diff_process_ordinal ordinal,
			  struct side_tallies *tb, struct side_tallies *tn,
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
			ok = tally_step(&tb->ops, &tb->casts, base, kb[i++].s) &&
			     tally_step(&tn->ops, &tn->casts, now, kn[j++].s);
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

static bool same_group(const struct tally *x, const struct tally *y)
{
	for (size_t i = 0; i < sizeof x->group / sizeof *x->group; i++)
		if (!same(x->group[i], y->group[i]))
			return false;
	return true;
}

static size_t smaller(size_t a, size_t b)
{
	return a < b ? a : b;
}

/* How the changes of one kind of row read (ops, casts): `changed` for a
 * count of base's `what` that new has as another, `left_over` for what
 * one side has and the other lacks. */
struct reporter;
struct change_words {
	void (*changed)(const struct reporter *r, const struct tally *base,
			const struct tally *now, size_t count);
	void (*left_over)(const struct reporter *r, const struct tally *t,
			  bool added, size_t count);
};

struct reporter {
	void (*report)(void *ctx, const struct diff_aggregate_change *change);
	void *ctx;
	const struct change_words *words;
};

/* One group's entries (b from base, n from new, `left` their counts not
 * matched yet): equal ones cancel out, the rest pair up, base's with
 * new's, as changes, and what is left over was removed or added. */
static void compare_group(const struct reporter *r, const struct tally **b,
			  size_t *b_left, size_t nb, const struct tally **n,
			  size_t *n_left, size_t nn)
{
	for (size_t i = 0; i < nb; i++)
		for (size_t j = 0; j < nn; j++)
			if (same(b[i]->what[0], n[j]->what[0]) &&
			    same(b[i]->what[1], n[j]->what[1])) {
				size_t m = smaller(b_left[i], n_left[j]);
				b_left[i] -= m;
				n_left[j] -= m;
			}
	for (size_t i = 0; i < nb; i++)
		for (size_t j = 0; j < nn && b_left[i]; j++) {
			size_t m = smaller(b_left[i], n_left[j]);
			if (!m)
				continue;
			r->words->changed(r, b[i], n[j], m);
			b_left[i] -= m;
			n_left[j] -= m;
		}
	for (size_t i = 0; i < nb; i++)
		if (b_left[i])
			r->words->left_over(r, b[i], false, b_left[i]);
	for (size_t j = 0; j < nn; j++)
		if (n_left[j])
			r->words->left_over(r, n[j], true, n_left[j]);
}

/* The entries of t in x's group not taken yet, taken. */
static size_t group_of(const struct tallies *t, bool *taken,
		       const struct tally *x, const struct tally **out,
		       size_t *left)
{
	size_t n = 0;

	for (size_t i = 0; i < t->count; i++)
		if (!taken[i] && same_group(&t->items[i], x)) {
			taken[i] = true;
			out[n] = &t->items[i];
			left[n++] = t->items[i].count;
		}
	return n;
}

/* Every group of either side compared. */
static bool compare_tallies(const struct reporter *r,
			    const struct tallies *tb, const struct tallies *tn)
{
	size_t most = tb->count + tn->count + 1;
	bool *taken = calloc(most, sizeof *taken);
	const struct tally **b = malloc(most * sizeof *b);
	const struct tally **n = malloc(most * sizeof *n);
	size_t *b_left = malloc(most * sizeof *b_left);
	size_t *n_left = malloc(most * sizeof *n_left);
	bool ok = taken && b && n && b_left && n_left;

	/* taken[k]: base's item k, then new's item k - tb->count */
	for (size_t k = 0; ok && k < tb->count + tn->count; k++) {
		if (taken[k])
			continue;
		const struct tally *x = k < tb->count
						? &tb->items[k]
						: &tn->items[k - tb->count];
		size_t nb = group_of(tb, taken, x, b, b_left);
		size_t nn = group_of(tn, taken + tb->count, x, n, n_left);
		compare_group(r, b, b_left, nb, n, n_left, nn);
	}
	free(taken);
	free(b);
	free(n);
	free(b_left);
	free(n_left);
	return ok;
}

static const char *or_none(const char *s)
{
	return s ? s : "none";
}

/* "linear" or "softmax.int", in buf. */
static const char *op_label(const struct tally *t, char *buf, size_t size)
{
	const char *overload = t->group[1];

	snprintf(buf, size, "%s%s%s", t->group[0],
		 overload && overload[0] ? "." : "",
		 overload ? overload : "");
	return buf;
}

static void say(const struct reporter *r, const char *kind, const char *op,
		const char *phase, const char *base, const char *now,
		size_t count)
{
	struct diff_aggregate_change c = { kind, op, phase, base, now, count };
	r->report(r->ctx, &c);
}

static void op_changed(const struct reporter *r, const struct tally *b,
		       const struct tally *n, size_t count)
{
	char label[160];

	op_label(b, label, sizeof label);
	if (!same(b->what[1], n->what[1]))
		say(r, "output", label, b->group[2],
		    or_none(b->what[1]), or_none(n->what[1]), count);
	if (!same(b->what[0], n->what[0]))
		say(r, "policy", label, b->group[2],
		    or_none(b->what[0]), or_none(n->what[0]), count);
}

static void op_left_over(const struct reporter *r, const struct tally *t,
			 bool added, size_t count)
{
	char label[160];

	say(r, added ? "op-added" : "op-removed",
	    op_label(t, label, sizeof label), t->group[2],
	    added ? "absent" : "present", added ? "present" : "absent", count);
}

/* "f32->bf16 cache miss" */
static const char *cast_text(const struct tally *t, const char *cache,
			     char *buf, size_t size)
{
	snprintf(buf, size, "%s->%s cache %s", t->group[2], t->group[3],
		 cache);
	return buf;
}

static void cast_changed(const struct reporter *r, const struct tally *b,
			 const struct tally *n, size_t count)
{
	char was[200], is[200];

	say(r, "cache", b->group[0], b->group[1],
	    cast_text(b, b->what[0], was, sizeof was),
	    cast_text(n, n->what[0], is, sizeof is), count);
}

static void cast_left_over(const struct reporter *r, const struct tally *t,
			   bool added, size_t count)
{
	char text[200];

	cast_text(t, t->what[0], text, sizeof text);
	say(r, added ? "cast-added" : "cast-removed", t->group[0],
	    t->group[1], added ? "-" : text, added ? text : "-", count);
}

static const struct change_words op_words = { op_changed, op_left_over };
static const struct change_words cast_words = { cast_changed,
						 cast_left_over };

static void free_tallies(struct side_tallies *t)
{
	free(t->ops.items);
	free(t->casts.items);
}

int diff_aggregates(struct diff_aggregate_side *base,
		    const void *base_side,
		    struct diff_aggregate_side *now,
		    const void *now_side, diff_process_ordinal ordinal,
		    void (*report)(void *ctx,
				   const struct diff_aggregate_change *change),
		    void *ctx, struct diff_aggregate_steps *steps)
{
	struct side_tallies tb = { 0 }, tn = { 0 };
	struct reporter ops = { report, ctx, &op_words };
	struct reporter casts = { report, ctx, &cast_words };

	*steps = (struct diff_aggregate_steps){ 0 };
	bool ok = !base->failed && !now->failed &&
		  tally_aligned(base, base_side, now, now_side, ordinal, &tb,
				&tn, steps) &&
		  compare_tallies(&ops, &tb.ops, &tn.ops) &&
		  compare_tallies(&casts, &tb.casts, &tn.casts);
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
