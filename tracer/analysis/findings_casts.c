/* redundant-cast: a cast the program wrote (an explicit `to` op of the
 * forward between f32/f64 and f16/bf16, not inside a composite) that was
 * undone (every use of its result cast it back, by autocast for an op or
 * by the program) or repeated (autocast cast the same unchanged source to
 * the same dtype for an op given the source rather than the copy).
 * Autocast's casts alone are never blamed (an activation feeding the q, k
 * and v projections is cast once for each, as PyTorch does: the program
 * wrote none of them), nor autograd's (the backward of a cast casts the
 * gradient back). */
#include "findings_internal.h"

#include <string.h>

/* A cast the program wrote: x.to(dtype), x.half(), x.float(), an explicit
 * conversion op of the forward pass between a lower and a full
 * precision, not run inside another op (a composite's own conversion).
 * Autograd's (phase backward) and the optimizer's casts are not the
 * program's. */
static bool written_cast(const struct trace_event *e)
{
	const struct trace_op *op = &e->op;

	if (e->kind != TRACE_OP || op->parent_op_id || finding_op_failed(op) ||
	    (op->phase && strcmp(op->phase, "forward")) ||
	    (strcmp(op->op, "to") && strcmp(op->op, "_to_copy")) ||
	    op->ninputs < 1 || op->noutputs != 1)
		return false;
	const char *from = op->inputs[0].info->dtype;
	const char *to = op->outputs[0].info->dtype;
	return (finding_is_full_precision(from) && finding_is_low_precision(to)) ||
	       (finding_is_low_precision(from) && finding_is_full_precision(to));
}

/* One cast: the program's (an op) or autocast's (an amp.cast that did
 * work: a cache hit costs none). */
struct cast {
	uint64_t op_id, source, result;
	const char *from, *to;
	bool written;
};

static bool cast_at(const struct trace_event *e, struct cast *c)
{
	if (written_cast(e)) {
		*c = (struct cast){ e->op.op_id, e->op.inputs[0].id,
				    e->op.outputs[0].id, e->op.inputs[0].info->dtype,
				    e->op.outputs[0].info->dtype, true };
		return true;
	}
	if (e->kind != TRACE_CAST || !e->cast.cache ||
	    !strcmp(e->cast.cache, "hit") || !e->cast.from || !e->cast.to ||
	    (e->cast.phase && !strcmp(e->cast.phase, "backward")))
		return false;
	*c = (struct cast){ e->cast.op_id, e->cast.tensor, e->cast.result,
			    e->cast.from, e->cast.to, false };
	return true;
}

static bool same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Cast `c` (event i) took the program's cast `made` back to its source
 * dtype; reported at the last use of the copy when every use did. */
static void undone(struct findings_context *cx, struct finding_casts *st,
		   size_t i, const struct trace_op *made, const struct cast *c)
{
	const struct trace_event *e = &cx->t->events[i];
	char a[128], b[128], site[160], tensor[192];
	size_t *n = id_map_find(&st->undone, e->pid, c->source, true);

	if (!n || ++*n != id_map_get(&cx->ix->uses, e->pid, c->source))
		return;
	trace_op_label(made, a, sizeof a);
	finding_op_label(cx, e->pid, c->op_id, b, sizeof b);
	finding_text(site, sizeof site, "undo %s/%s%s", a, b,
		     c->written ? "" : " autocast");
	struct trace_finding *f =
		finding_of(cx, FINDING_REDUNDANT_CAST, site, e->pid, i);
	if (!f)
		return;
	f->op_id = made->op_id;
	f->tensor = made->inputs[0].id;
	finding_tensor_label(cx, e->pid, made->inputs[0].id, tensor, sizeof tensor);
	const char *rounds = finding_is_low_precision(c->from)
				     ? " and rounds the values" : "";
	if (c->written) {
		finding_text(f->message, sizeof f->message,
			     "%s was cast %s->%s (%s, op %llu) and back %s->%s "
			     "(%s, op %llu) with no use of the %s copy in "
			     "between: the round trip costs two casts%s; drop "
			     "both casts",
			     tensor, c->to, c->from, a,
			     (unsigned long long)made->op_id, c->from, c->to, b,
			     (unsigned long long)c->op_id, c->from, rounds);
		return;
	}
	finding_text(f->message, sizeof f->message,
		     "%s was cast %s->%s by the program (%s, op %llu), and "
		     "autocast cast the copy back %s->%s for %s (op %llu)%s: "
		     "the program's cast bought nothing and costs two casts%s; "
		     "pass %s the original tensor or drop the cast",
		     tensor, c->to, c->from, a, (unsigned long long)made->op_id,
		     c->from, c->to, b, (unsigned long long)c->op_id,
		     *n > 1 ? ", as for every other use of it" : ", its only use",
		     rounds, b);
}

/* Autocast cast `c` (event i) made again the program's cast `made` of the
 * same, unchanged tensor: the op was given the source, not the copy. */
static void repeated(struct findings_context *cx, size_t i,
		     const struct trace_op *made, const struct cast *c)
{
	const struct trace_event *e = &cx->t->events[i];
	char a[128], b[128], site[160], tensor[192];

	trace_op_label(made, a, sizeof a);
	finding_op_label(cx, e->pid, c->op_id, b, sizeof b);
	finding_text(site, sizeof site, "repeat %s/%s", a, b);
	struct trace_finding *f =
		finding_of(cx, FINDING_REDUNDANT_CAST, site, e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->source;
	finding_text(f->message, sizeof f->message,
		     "%s was cast %s->%s by the program (%s, op %llu, result "
		     "tensor %llu) and again by autocast for %s (op %llu), "
		     "which was given the source rather than the copy: the "
		     "cast is made twice; pass %s tensor %llu",
		     finding_tensor_label(cx, e->pid, c->source, tensor, sizeof tensor),
		     c->from, c->to, a, (unsigned long long)made->op_id,
		     (unsigned long long)made->outputs[0].id, b,
		     (unsigned long long)c->op_id, b,
		     (unsigned long long)made->outputs[0].id);
}

/* An op writing a tensor in place: a cast of it made before is of other
 * values now, so a later cast is neither a repeat nor an undo. */
static void forget_written(struct finding_casts *st, const struct trace_event *e)
{
	if (!st->written.count)
		return; /* the program wrote no cast yet: nothing to forget */
	for (int k = 0; k < e->op.noutputs; k++) {
		uint64_t id = e->op.outputs[k].id;
		if (id_map_get(&st->sources, e->pid, id) != SIZE_MAX)
			id_map_put(&st->sources, e->pid, id, SIZE_MAX);
		if (id_map_get(&st->written, e->pid, id) != SIZE_MAX)
			id_map_put(&st->written, e->pid, id, SIZE_MAX);
	}
}

void finding_rule_redundant_cast(struct findings_context *cx, size_t i)
{
	struct finding_casts *st = &cx->casts;
	const struct trace_event *e = &cx->t->events[i];
	struct cast c;

	if (!cast_at(e, &c)) {
		if (e->kind == TRACE_OP)
			forget_written(st, e);
		return;
	}
	size_t made = id_map_get(&st->written, e->pid, c.source);
	if (made != SIZE_MAX &&
	    same(cx->t->events[made].op.inputs[0].info->dtype, c.to))
		undone(cx, st, i, &cx->t->events[made].op, &c);
	size_t earlier = c.written ? SIZE_MAX
				   : id_map_get(&st->sources, e->pid, c.source);
	if (earlier != SIZE_MAX) {
		const struct trace_op *first = &cx->t->events[earlier].op;
		if (same(first->outputs[0].info->dtype, c.to))
			repeated(cx, i, first, &c);
	}
	if (c.written) {
		id_map_put(&st->written, e->pid, c.result, i);
		id_map_put(&st->sources, e->pid, c.source, i);
	}
}

void finding_casts_free(struct findings_context *cx)
{
	struct finding_casts *st = &cx->casts;

	cx->failed |= st->written.failed || st->sources.failed ||
		      st->undone.failed;
	id_map_free(&st->written);
	id_map_free(&st->sources);
	id_map_free(&st->undone);
}
