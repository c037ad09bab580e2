/* Where a non-finite gradient came from (findings_internal.h): the
 * GradScaler rules name, for each skipped step, the first gradient that
 * held inf/NaN (the scaler event's inf_tensor), the backward op that
 * computed it, and, walking back from that op through the producers of
 * its inputs and from backward ops to the forward ops they differentiate
 * (forward_op_id), the op whose fp16-overflow (a value check's amp.diag
 * event) came first: the step's origin of inf/NaN.  An origin in the
 * backward pass comes before one in the forward: a forward op's inf
 * that reached the loss leaves the backward no finite input to overflow
 * from, so a backward origin on the gradient's path means the forward's
 * inf went nowhere (a ReLU took it, a metric nobody reads). */
#include "findings_internal.h"

#include <stdlib.h>
#include <string.h>

/* Ops that move or relabel values without computing any: the op that
 * made a gradient is the first op below them. */
static bool moves_values(const char *op)
{
	static const char *const names[] = {
		"detach", "to", "_to_copy", "t", "view", "reshape",
		"_unsafe_view", "expand", "clone", "contiguous", "transpose",
		"permute", "squeeze", "unsqueeze", "alias", "copy_",
	};
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (!strcmp(op, names[i]))
			return true;
	return false;
}

void finding_origins_build(struct findings_context *cx,
			   struct finding_origins *o)
{
	*o = (struct finding_origins){ .built = true };
	for (size_t i = 0; i < cx->t->nevents; i++) {
		const struct trace_event *e = &cx->t->events[i];
		if (e->kind == TRACE_DIAG && e->diag.kind && e->diag.op_id &&
		    !strcmp(e->diag.kind, "fp16-overflow") &&
		    id_map_get(&o->by_op, e->pid, e->diag.op_id) == SIZE_MAX)
			id_map_put(&o->by_op, e->pid, e->diag.op_id, i);
	}
}

void finding_origins_free(struct findings_context *cx,
			  struct finding_origins *o)
{
	cx->failed |= o->by_op.failed;
	id_map_free(&o->by_op);
}

/* The event of the op that made tensor `id` of process `pid` before
 * event `before`, or SIZE_MAX. */
static size_t made_before(struct findings_context *cx, int64_t pid,
			  uint64_t id, size_t before)
{
	size_t p = id_map_get(&cx->ix->producer, pid, id);

	return p < before ? p : SIZE_MAX;
}

/* Down from the op that made a gradient through the ops that only move
 * values, along their first input. */
static size_t computing_op(struct findings_context *cx, size_t event)
{
	for (int hops = 0; hops < 16 && event != SIZE_MAX; hops++) {
		const struct trace_event *e = &cx->t->events[event];
		if (e->kind != TRACE_OP || !moves_values(e->op.op) ||
		    !e->op.ninputs)
			return event;
		size_t below = trace_index_input_producer(cx->ix, event, 0);
		if (below == SIZE_MAX || below >= event)
			return event;
		event = below;
	}
	return event;
}

struct walk {
	size_t *queue;
	size_t head, tail, cap;
	struct id_map seen;  /* (pid, event) -> 1 */
};

static void visit(struct findings_context *cx, struct walk *w, int64_t pid,
		  size_t event, size_t floor)
{
	if (event == SIZE_MAX || event < floor ||
	    id_map_get(&w->seen, pid, event) != SIZE_MAX)
		return;
	id_map_put(&w->seen, pid, event, 1);
	if (w->tail == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 256;
		size_t *grown = realloc(w->queue, cap * sizeof *grown);
		if (!grown) {
			cx->failed = true;
			return;
		}
		w->queue = grown;
		w->cap = cap;
	}
	w->queue[w->tail++] = event;
}

static bool is_backward_diag(struct findings_context *cx, size_t diag)
{
	const struct trace_event *d = &cx->t->events[diag];
	const struct trace_op *op = finding_op_of(cx, d->pid, d->diag.op_id);

	return op && finding_op_is_backward(op);
}

/* The earlier of two origins, a backward one first. */
static size_t preferred(struct findings_context *cx, size_t a, size_t b)
{
	if (a == SIZE_MAX || b == SIZE_MAX)
		return a == SIZE_MAX ? b : a;
	bool back_a = is_backward_diag(cx, a), back_b = is_backward_diag(cx, b);
	if (back_a != back_b)
		return back_a ? a : b;
	return a < b ? a : b;
}

/* The first fp16-overflow (preferred()) among the ops reachable from
 * `start` going back, no further than event `floor` (the step's
 * beginning). */
static size_t first_origin(struct findings_context *cx,
			   const struct finding_origins *o, int64_t pid,
			   size_t start, size_t floor)
{
	struct walk w = { 0 };
	size_t best = SIZE_MAX;

	visit(cx, &w, pid, start, floor);
	while (w.head < w.tail) {
		size_t i = w.queue[w.head++];
		const struct trace_event *e = &cx->t->events[i];
		if (e->kind == TRACE_CAST) {
			visit(cx, &w, pid, made_before(cx, pid, e->cast.tensor, i),
			      floor);
			continue;
		}
		size_t diag = id_map_get(&o->by_op, pid, e->op.op_id);
		if (diag != SIZE_MAX && diag >= floor)
			best = preferred(cx, best, diag);
		for (int k = 0; k < e->op.ninputs; k++) {
			size_t p = trace_index_input_producer(cx->ix, i, k);
			visit(cx, &w, pid, p < i ? p : SIZE_MAX, floor);
		}
		if (e->op.forward_op_id)
			visit(cx, &w, pid,
			      id_map_get(&cx->ix->ops, pid, e->op.forward_op_id),
			      floor);
	}
	cx->failed |= w.seen.failed;
	id_map_free(&w.seen);
	free(w.queue);
	return best;
}

void finding_skip_cause(struct findings_context *cx,
			const struct finding_origins *o, size_t step,
			size_t floor, struct finding_cause *out)
{
	const struct trace_event *e = &cx->t->events[step];
	int64_t pid = e->pid;

	*out = (struct finding_cause){ .gradient = e->scaler.inf_tensor,
				       .maker = SIZE_MAX, .origin = SIZE_MAX };
	if (out->gradient) {
		size_t made = made_before(cx, pid, out->gradient, step);
		out->maker = computing_op(cx, made);
		if (out->maker != SIZE_MAX)
			out->origin = first_origin(cx, o, pid, out->maker, floor);
	}
	/* no gradient named, or none reached: the step's first overflow */
	for (size_t i = floor; out->maker == SIZE_MAX && i < step; i++) {
		const struct trace_event *d = &cx->t->events[i];
		if (d->kind == TRACE_DIAG && d->pid == pid && d->diag.kind &&
		    !strcmp(d->diag.kind, "fp16-overflow"))
			out->origin = preferred(cx, out->origin, i);
	}
	if (out->origin != SIZE_MAX) {
		const struct trace_event *d = &cx->t->events[out->origin];
		const struct trace_op *op = finding_op_of(cx, pid, d->diag.op_id);
		out->forward = op && !finding_op_is_backward(op);
	}
}

/* Whether `name` ("fc1.weight") lies under the module path `module`
 * ("fc1"), which then says all it says. */
static bool under_module(const char *name, const char *module)
{
	size_t n = strlen(module);

	return !strncmp(name, module, n) && name[n] == '.';
}

/* "linear (op 21: forward, module 'fc1')": the op, and its layer: the
 * module that ran it (format 1.4; not the root, whose path is ""), and
 * the parameter it read (directly, or through autocast's cast of it)
 * where the module's path does not name it already; a backward op by its
 * forward op's. */
const char *finding_op_with_layer(struct findings_context *cx, int64_t pid,
				  const struct trace_op *op, char *buf,
				  size_t size)
{
	char label[128];
	const char *weight = NULL;
	const struct trace_op *forward =
		op->forward_op_id ? finding_op_of(cx, pid, op->forward_op_id)
				  : NULL;
	const struct trace_op *named = forward ? forward : op;
	size_t at = id_map_get(&cx->ix->ops, pid, named->op_id);

	for (int k = 0; k < named->ninputs && !weight; k++) {
		const char *n = named->inputs[k].info->name;
		if (n && n[0] != '(') {
			weight = n;
			break;
		}
		size_t p = at == SIZE_MAX ? SIZE_MAX
					  : trace_index_input_producer(cx->ix, at, k);
		if (p != SIZE_MAX && cx->t->events[p].kind == TRACE_CAST)
			weight = cx->t->events[p].cast.source->name;
	}
	const char *module = named->module && named->module[0] ? named->module
							       : NULL;
	char layer[512] = "";
	if (module)
		finding_text(layer, sizeof layer, ", module '%s'", module);
	if (weight && !(module && under_module(weight, module)))
		finding_text(layer + strlen(layer), sizeof layer - strlen(layer),
			     ", weight '%s'", weight);
	trace_op_label(op, label, sizeof label);
	if (forward) {
		char of[128];
		trace_op_label(forward, of, sizeof of);
		finding_text(buf, size, "%s (op %llu: backward of %s op %llu%s)",
			     label, (unsigned long long)op->op_id, of,
			     (unsigned long long)forward->op_id, layer);
	} else {
		finding_text(buf, size, "%s (op %llu: %s%s)", label,
			     (unsigned long long)op->op_id,
			     op->phase ? op->phase : "forward", layer);
	}
	return buf;
}

void finding_cause_text(struct findings_context *cx, int64_t pid,
			const struct finding_cause *c, char *buf, size_t size)
{
	char gradient[192], maker[256], origin[256];
	const struct trace_op *made =
		c->maker != SIZE_MAX && cx->t->events[c->maker].kind == TRACE_OP
			? &cx->t->events[c->maker].op : NULL;
	const struct trace_op *first =
		c->origin != SIZE_MAX
			? finding_op_of(cx, pid, cx->t->events[c->origin].diag.op_id)
			: NULL;

	if (c->gradient)
		finding_tensor_label(cx, pid, c->gradient, gradient, sizeof gradient);
	if (made)
		finding_op_with_layer(cx, pid, made, maker, sizeof maker);
	if (first)
		finding_op_with_layer(cx, pid, first, origin, sizeof origin);
	finding_text(buf, size, "%s%s%s%s%s held inf/NaN%s%s",
		     c->gradient ? "gradient " : "a gradient",
		     c->gradient ? gradient : "", made ? ", made by " : "",
		     made ? maker : "", made ? "," : "",
		     first ? "; the step's first inf/NaN came from " : "",
		     first ? origin : "");
	if (first && c->forward)
		finding_text(buf + strlen(buf), size - strlen(buf),
			     ", a forward op whose low-precision output "
			     "overflowed (no scale helps: the scale multiplies "
			     "only the backward pass)");
	else if (first)
		finding_text(buf + strlen(buf), size - strlen(buf),
			     ", a backward op (the scaled gradients overflowed)");
}
