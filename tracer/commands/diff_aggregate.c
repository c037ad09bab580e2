/* The aggregated steps of `amptrace diff` (diff_aggregate.h). */
#include "diff_aggregate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One amp.aggregate event of a step: its rows are [first, first + n)
 * of the side's. */
struct aggregate_step {
	int64_t pid, tid, step;  /* step: the one it names */
	size_t line;
	size_t first_op, nops, first_cast, ncasts;
	bool compared;  /* the other side holds it too */
	int counted;    /* its step as the steps model numbers them */
	/* what else the steps model reads of it (trace_steps_more) */
	double ts;
	uint64_t regions;
	bool cut_short;
};

/* *array given room for `need` (trace_grow); false when out of memory. */
static bool grow(void **array, size_t *cap, size_t need, size_t elem)
{
	void *grown = trace_grow(*array, cap, need, elem);

	if (grown)
		*array = grown;
	return grown != NULL;
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
	*step = (struct aggregate_step){
		.pid = e->pid, .tid = e->tid, .step = a->step, .line = e->line,
		.first_op = s->nops, .nops = (size_t)a->nops,
		.first_cast = s->ncasts, .ts = e->ts,
		.regions = a->regions, .cut_short = a->cut_short,
	};
	memcpy(s->ops + s->nops, a->ops, (size_t)a->nops * sizeof *a->ops);
	s->nops += (size_t)a->nops;
	/* autocast's casts only, as diff compares of the detailed steps */
	for (int i = 0; i < a->ncasts; i++)
		if (!a->casts[i].origin)
			s->casts[s->ncasts++] = a->casts[i];
	step->ncasts = s->ncasts - step->first_cast;
}

const struct trace_event *diff_aggregate_event(
	const struct diff_aggregate_side *s, size_t k,
	struct trace_event *scratch)
{
	const struct aggregate_step *step = &s->steps[k];

	*scratch = (struct trace_event){ .kind = TRACE_AGGREGATE,
					 .pid = step->pid, .tid = step->tid,
					 .ts = step->ts };
	scratch->aggregate.step = step->step;
	scratch->aggregate.regions = step->regions;
	scratch->aggregate.cut_short = step->cut_short;
	scratch->aggregate.nops = (int)step->nops;
	scratch->aggregate.ops = s->ops + step->first_op;
	return scratch;
}

void diff_aggregate_number(struct diff_aggregate_side *s, const int *step_of)
{
	for (size_t k = 0; k < s->nsteps; k++)
		s->steps[k].counted = step_of[k];
}

void diff_aggregate_free(struct diff_aggregate_side *s)
{
	free(s->steps);
	free(s->ops);
	free(s->casts);
	*s = (struct diff_aggregate_side){ 0 };
}

/* ------------------------------------------------------------ tallies */

/* A row's count in one step of one side.  Rows are compared within their
 * group: the same op and phase, and for ops the same overload, for casts
 * the same direction; `what` is what may differ (ops: policy, output
 * dtype; casts: cache result).  The rows' strings are interned by the
 * side's reader, so within a side equal strings are equal pointers. */
struct tally {
	const char *op, *phase;
	const char *detail[2];  /* ops: overload; casts: from, to */
	const char *what[2];    /* ops: policy, dtype; casts: cache */
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
		if (x->op == row->op && x->phase == row->phase &&
		    !memcmp(x->detail, row->detail, sizeof x->detail) &&
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

/* What one side's step holds: its op rows and cast rows. */
struct step_tallies {
	struct tallies ops, casts;
};

/* An aggregate event's rows into its step's tallies (a step may be
 * written as several events: FORMAT.md §3.12). */
static bool tally_event(struct step_tallies *t,
			const struct diff_aggregate_side *s,
			const struct aggregate_step *step)
{
	for (size_t i = 0; i < step->nops; i++) {
		const struct trace_aggregate_op *r = &s->ops[step->first_op + i];
		struct tally row = { r->op, r->phase, { r->overload, NULL },
				     { r->policy, r->dtype }, r->count };
		if (!add_tally(&t->ops, &row))
			return false;
	}
	for (size_t i = 0; i < step->ncasts; i++) {
		const struct trace_aggregate_cast *r =
			&s->casts[step->first_cast + i];
		struct tally row = { r->op, r->phase, { r->from, r->to },
				     { r->cache, NULL }, r->count };
		if (!add_tally(&t->casts, &row))
			return false;
	}
	return true;
}

static void free_tallies(struct step_tallies *t)
{
	free(t->ops.items);
	free(t->casts.items);
}

/* -------------------------------------------------------- comparison */

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool same_group(const struct tally *x, const struct tally *y)
{
	return same(x->op, y->op) && same(x->phase, y->phase) &&
	       same(x->detail[0], y->detail[0]) &&
	       same(x->detail[1], y->detail[1]);
}

static size_t smaller(size_t a, size_t b)
{
	return a < b ? a : b;
}

struct reporter;

/* How the changes of one kind of row read (ops, casts): `changed` for a
 * count of base's `what` that new has as another, `left_over` for what
 * one side has and the other lacks. */
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
	/* the step compared now, and its first event's line on each side */
	int64_t step;
	size_t base_line, new_line;
};

/* Whether base's entry and new's pair up in `pass`: the same policy or
 * cache result first, then the same output dtype, then any, so that a
 * change reads as what changed (bf16 -> f16), not as two. */
static bool pairs_in(int pass, const struct tally *b, const struct tally *n)
{
	switch (pass) {
	case 0:
		return same(b->what[0], n->what[0]) && same(b->what[1], n->what[1]);
	case 1:
		return same(b->what[0], n->what[0]);
	case 2:
		return same(b->what[1], n->what[1]);
	default:
		return true;
	}
}

/* One group's entries (b from base, n from new, `left` their counts not
 * matched yet): equal ones cancel out, the rest pair up as changes, and
 * what is left over was removed or added. */
static void compare_group(const struct reporter *r, const struct tally **b,
			  size_t *b_left, size_t nb, const struct tally **n,
			  size_t *n_left, size_t nn)
{
	for (int pass = 0; pass < 4; pass++)
		for (size_t i = 0; i < nb; i++)
			for (size_t j = 0; j < nn && b_left[i]; j++) {
				size_t m = smaller(b_left[i], n_left[j]);
				if (!m || !pairs_in(pass, b[i], n[j]))
					continue;
				if (pass)
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

/* Every group of either side's tallies of a step compared. */
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

static void say(const struct reporter *r, const char *kind, const char *op,
		const char *phase, const char *base, const char *now,
		size_t count)
{
	struct diff_aggregate_change c = { kind, op, phase, base, now, count,
					   r->step, r->base_line, r->new_line };
	r->report(r->ctx, &c);
}

/* "linear" or "softmax.int", in buf. */
static const char *op_label(const struct tally *t, char *buf, size_t size)
{
	const char *overload = t->detail[0];

	snprintf(buf, size, "%s%s%s", t->op, overload && overload[0] ? "." : "",
		 overload ? overload : "");
	return buf;
}

static void op_changed(const struct reporter *r, const struct tally *b,
		       const struct tally *n, size_t count)
{
	char label[160];

	op_label(b, label, sizeof label);
	if (!same(b->what[1], n->what[1]))
		say(r, "output", label, b->phase, or_none(b->what[1]),
		    or_none(n->what[1]), count);
	if (!same(b->what[0], n->what[0]))
		say(r, "policy", label, b->phase, or_none(b->what[0]),
		    or_none(n->what[0]), count);
}

static void op_left_over(const struct reporter *r, const struct tally *t,
			 bool added, size_t count)
{
	char label[160];

	say(r, added ? "op-added" : "op-removed",
	    op_label(t, label, sizeof label), t->phase,
	    added ? "absent" : "present", added ? "present" : "absent", count);
}

/* "f32->bf16 cache miss" */
static const char *cast_text(const struct tally *t, char *buf, size_t size)
{
	snprintf(buf, size, "%s->%s cache %s", t->detail[0], t->detail[1],
		 t->what[0]);
	return buf;
}

static void cast_changed(const struct reporter *r, const struct tally *b,
			 const struct tally *n, size_t count)
{
	char was[200], is[200];

	say(r, "cache", b->op, b->phase, cast_text(b, was, sizeof was),
	    cast_text(n, is, sizeof is), count);
}

static void cast_left_over(const struct reporter *r, const struct tally *t,
			   bool added, size_t count)
{
	char text[200];

	cast_text(t, text, sizeof text);
	say(r, added ? "cast-added" : "cast-removed", t->op, t->phase,
	    added ? "-" : text, added ? text : "-", count);
}

static const struct change_words op_words = { op_changed, op_left_over };
static const struct change_words cast_words = { cast_changed,
						 cast_left_over };

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
	if (x->step != y->step)
		return x->step < y->step ? -1 : 1;
	return (x->s > y->s) - (x->s < y->s); /* file order */
}

static bool same_key(const struct keyed_step *x, const struct keyed_step *y)
{
	return x->process == y->process && x->tid == y->tid &&
	       x->step == y->step;
}

/* A side's steps in key order, their events in file order. */
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

/* The events of k[from]'s step (same process, thread and step). */
static size_t run_of(const struct keyed_step *k, size_t from, size_t n)
{
	size_t end = from + 1;

	while (end < n && same_key(&k[from], &k[end]))
		end++;
	return end - from;
}

/* The step numbers seen, to count each once (threads and processes
 * share them). */
struct step_numbers {
	int64_t *items;
	size_t count, cap;
	bool failed;
};

static void note_step(struct step_numbers *n, int64_t step)
{
	if (!grow((void **)&n->items, &n->cap, n->count + 1, sizeof *n->items))
		n->failed = true;
	else
		n->items[n->count++] = step;
}

static int compare_steps(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

static size_t distinct_steps(struct step_numbers *n)
{
	size_t distinct = 0;

	trace_sort(n->items, n->count, sizeof *n->items, compare_steps);
	for (size_t i = 0; i < n->count; i++)
		if (!i || n->items[i] != n->items[i - 1])
			distinct++;
	free(n->items);
	return distinct;
}

/* Whether `step` is among the `n` steps cut short (ascending). */
static bool is_cut_short(int step, const int *cut_short, size_t n)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cut_short[mid] < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && cut_short[lo] == step;
}

/* Whether any of a step's n events is in a step cut short, as the
 * steps model numbers them. */
static bool run_cut_short(const struct keyed_step *k, size_t n,
			  const int *cut_short, size_t ncut_short)
{
	for (size_t i = 0; i < n; i++)
		if (is_cut_short(k[i].s->counted, cut_short, ncut_short))
			return true;
	return false;
}

/* One step both sides hold: its events on each side tallied, compared. */
static bool compare_step(const struct diff_aggregate_side *base,
			 const struct keyed_step *kb, size_t nb,
			 const struct diff_aggregate_side *now,
			 const struct keyed_step *kn, size_t nn,
			 struct reporter *ops, struct reporter *casts)
{
	struct step_tallies tb = { 0 }, tn = { 0 };
	bool ok = true;

	for (size_t i = 0; ok && i < nb; i++) {
		kb[i].s->compared = true;
		ok = tally_event(&tb, base, kb[i].s);
	}
	for (size_t j = 0; ok && j < nn; j++) {
		kn[j].s->compared = true;
		ok = tally_event(&tn, now, kn[j].s);
	}
	ops->step = casts->step = kb->step;
	ops->base_line = casts->base_line = kb->s->line;
	ops->new_line = casts->new_line = kn->s->line;
	ok = ok && compare_tallies(ops, &tb.ops, &tn.ops) &&
	     compare_tallies(casts, &tb.casts, &tn.casts);
	free_tallies(&tb);
	free_tallies(&tn);
	return ok;
}

int diff_aggregates(struct diff_aggregate_side *base,
		    const void *base_side,
		    struct diff_aggregate_side *now,
		    const void *now_side, diff_process_ordinal ordinal,
		    const int *cut_short_steps, size_t ncut_short,
		    void (*report)(void *ctx,
				   const struct diff_aggregate_change *change),
		    void *ctx, struct diff_aggregate_steps *steps)
{
	struct keyed_step *kb = keyed_steps(base, base_side, ordinal);
	struct keyed_step *kn = keyed_steps(now, now_side, ordinal);
	struct reporter ops = { report, ctx, &op_words, 0, 0, 0 };
	struct reporter casts = { report, ctx, &cast_words, 0, 0, 0 };
	struct step_numbers compared = { 0 }, base_only = { 0 },
			    new_only = { 0 }, cut_short = { 0 };
	bool ok = kb && kn && !base->failed && !now->failed;
	size_t i = 0, j = 0;

	*steps = (struct diff_aggregate_steps){ 0 };
	while (ok && (i < base->nsteps || j < now->nsteps)) {
		size_t rb = i < base->nsteps ? run_of(kb, i, base->nsteps) : 0;
		size_t rn = j < now->nsteps ? run_of(kn, j, now->nsteps) : 0;
		int order = !rb ? 1 : !rn ? -1 : compare_keyed(&kb[i], &kn[j]);
		if (rb && rn && same_key(&kb[i], &kn[j]))
			order = 0;
		if ((order <= 0 && run_cut_short(&kb[i], rb, cut_short_steps,
						  ncut_short)) ||
		    (order >= 0 && run_cut_short(&kn[j], rn, cut_short_steps,
						  ncut_short))) {
			/* not whole in one trace, whether or not the other
			 * holds it too (its rows may be lost: steps.h) */
			note_step(&cut_short, order > 0 ? kn[j].step
							: kb[i].step);
			i += order <= 0 ? rb : 0;
			j += order >= 0 ? rn : 0;
		} else if (order < 0) {
			note_step(&base_only, kb[i].step);
			i += rb;
		} else if (order > 0) {
			note_step(&new_only, kn[j].step);
			j += rn;
		} else {
			if (!compared.count || kb[i].step < steps->first)
				steps->first = kb[i].step;
			if (!compared.count || kb[i].step > steps->last)
				steps->last = kb[i].step;
			note_step(&compared, kb[i].step);
			ok = compare_step(base, &kb[i], rb, now, &kn[j], rn, &ops,
					  &casts);
			i += rb;
			j += rn;
		}
	}
	ok = ok && !compared.failed && !base_only.failed && !new_only.failed &&
	     !cut_short.failed;
	steps->compared = distinct_steps(&compared);
	steps->cut_short = distinct_steps(&cut_short);
	steps->base_only = distinct_steps(&base_only);
	steps->new_only = distinct_steps(&new_only);
	free(kb);
	free(kn);
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
