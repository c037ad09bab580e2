/* policy-divergence: ops whose casts differ from what eager autocast, as
 * the policy table of the traced torch version says, does under the
 * recorded autocast state.  Two shapes are visible in a trace:
 *
 * - a cast made by TorchScript's autocast ops (_autocast_to_reduced_
 *   precision, _autocast_to_full_precision): eager autocast never makes
 *   them.  A scripted function's `with autocast()` casts as explicit ops
 *   with no region and no cache; a traced graph run under autocast gets
 *   the JIT's casts, its `autocast(enabled=False)` stripped by tracing and
 *   promote ops conservatively cast back to f32.
 * - an op the table casts, run with autocast enabled outside any region
 *   (torch.set_autocast_cpu_enabled(True), libamp's
 *   amp_autocast_set_enabled): nothing ever clears the cast cache, which
 *   is cleared only when the outermost region exits.  Only when the same
 *   thread ran an op with autocast off outside any region before, with no
 *   region event between: a region opened before recording began (an
 *   amptrace_torch.trace() block inside `with autocast`) also shows
 *   depth 0, but with autocast on from the thread's first op.
 *
 * A TorchScript cast under eager autocast that casts as eager autocast
 * would (cast_as_eager: a scripted model trained under autocast) is no
 * divergence.  Divergences that leave the eager trace unchanged (eager
 * autocast enabled around a scripted autocast(enabled=False); custom_fwd's
 * cast_inputs on CPU in 1.13) cannot be told from healthy programs. */
#include "findings_internal.h"

#include <string.h>

static const char jit_cast_prefix[] = "_autocast_to_";

static bool is_jit_cast(const char *op)
{
	return op && !strncmp(op, jit_cast_prefix, sizeof jit_cast_prefix - 1);
}

/* Op event `i` reads tensor `id`: it is the consumer of the casts of
 * its thread waiting for a reader of `id` (`pending`: the latest, each
 * chained to the one before by `earlier`), which stop waiting. */
static void consume(struct findings_context *cx, struct id_map *pending,
		    struct id_map *earlier, size_t i, uint64_t id)
{
	const struct trace_event *e = &cx->t->events[i];
	size_t *link = id_map_find(pending, e->pid, id, false);

	while (link && *link != SIZE_MAX) {
		size_t cast = *link;
		size_t *before = id_map_find(earlier, e->pid, cast, false);
		if (cx->t->events[cast].tid == e->tid) {
			id_map_put(&cx->jit_consumers.of_cast, e->pid, cast, i);
			*link = before ? *before : SIZE_MAX;
		} else {
			link = before;
		}
	}
}

/* Every TorchScript cast's consumer (findings_internal.h), in one pass:
 * a cast waits for the first later op of its thread that reads its
 * result.  SIZE_MAX ends a chain. */
static void jit_consumers_build(struct findings_context *cx)
{
	struct id_map pending = { 0 }, earlier = { 0 };

	cx->jit_consumers.built = true;
	for (size_t i = 0; i < cx->t->nevents; i++) {
		const struct trace_event *e = &cx->t->events[i];
		if (e->kind == TRACE_CAST && is_jit_cast(e->cast.op)) {
			size_t waiting = id_map_get(&pending, e->pid,
						    e->cast.result);
			if (waiting != SIZE_MAX)
				id_map_put(&earlier, e->pid, i, waiting);
			id_map_put(&pending, e->pid, e->cast.result, i);
		} else if (e->kind == TRACE_OP && !is_jit_cast(e->op.op) &&
			   pending.count) {
			for (int in = 0; in < e->op.ninputs; in++)
				consume(cx, &pending, &earlier, i,
					e->op.inputs[in].id);
		}
	}
	cx->failed |= pending.failed || earlier.failed;
	id_map_free(&pending);
	id_map_free(&earlier);
}

/* The op the cast at event `i` was made for: the first later op on its
 * thread, not a TorchScript cast, that reads the cast's result. */
static const struct trace_op *consumer(struct findings_context *cx, size_t i)
{
	if (!cx->jit_consumers.built)
		jit_consumers_build(cx);
	size_t k = id_map_get(&cx->jit_consumers.of_cast, cx->t->events[i].pid,
			      i);
	return k == SIZE_MAX ? NULL : &cx->t->events[k].op;
}

static bool one_of_policies(const char *policy, const char *const *list)
{
	for (; policy && *list; list++)
		if (!strcmp(policy, *list))
			return true;
	return false;
}

/* Whether eager autocast casts `use`'s input as the TorchScript cast did:
 * to the autocast dtype for a lower-precision op, to f32 for an fp32 one
 * or a promote op with another input in full precision (its policy, as
 * recorded, is the traced torch's table's).  A scripted model run under
 * eager autocast casts exactly these: no finding (timm's --torchscript
 * trains bit-identically to eager). */
static bool cast_as_eager(const struct trace_cast *c, const struct trace_op *use)
{
	static const char *const fp32[] = { "fp32", "fp32_set_opt_dtype",
					     "fp32_append_dtype", NULL };

	if (finding_is_low_precision(c->to))
		return use->policy && !strcmp(use->policy, "lower_precision_fp") &&
		       use->autocast->dtype && !strcmp(use->autocast->dtype, c->to);
	if (!finding_is_full_precision(c->to))
		return false;
	if (one_of_policies(use->policy, fp32))
		return true;
	if (!use->policy || strcmp(use->policy, "promote"))
		return false;
	for (int in = 0; in < use->ninputs; in++)
		if (use->inputs[in].id != c->result &&
		    finding_is_full_precision(use->inputs[in].info->dtype))
			return true;
	return false;
}

static void rule_jit_cast(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;

	if (!is_jit_cast(c->op))
		return;
	const struct trace_event *oe = trace_index_op(cx->ix, e->pid, c->op_id);
	bool eager = oe && oe->op.autocast->enabled;
	const struct trace_op *use = consumer(cx, i);
	const char *name = use ? use->op : "?";

	if (eager && use && cast_as_eager(c, use))
		return;
	char site[160];

	finding_text(site, sizeof site, "jit:%s:%s:%s", eager ? "on" : "off",
		     name, c->op);
	struct trace_finding *f = finding_of(cx, FINDING_POLICY_DIVERGENCE,
					     site, e->pid, i);
	if (!f)
		return;
	/* the finding (and ampview's note) sits on the op the cast feeds */
	f->op_id = use ? use->op_id : c->op_id;
	f->tensor = c->result;
	if (eager)
		finding_text(f->message, sizeof f->message,
			     "%s's input was cast %s->%s by TorchScript's %s "
			     "while eager autocast was enabled: eager autocast "
			     "casts only the table's ops and leaves the others "
			     "in the dtype they get; a TorchScript graph (a "
			     "traced or scripted function) ran its own autocast "
			     "pass, which drops a traced autocast(enabled=False) "
			     "and casts promote ops back to f32; call the "
			     "function eagerly, or script it with its autocast "
			     "regions inside",
			     name, c->from, c->to, c->op);
	else
		finding_text(f->message, sizeof f->message,
			     "%s's input was cast %s->%s by TorchScript's %s "
			     "with eager autocast disabled and no region: a "
			     "scripted function's autocast casts as explicit "
			     "ops, with no cast cache (eager autocast would "
			     "cast the same inputs inside a region and reuse "
			     "weight casts); run the function eagerly under "
			     "torch.autocast if the casts matter",
			     name, c->from, c->to, c->op);
}

/* cx->autocast_off: (pid, tid) -> 1 while the thread's last op outside
 * any region ran with autocast off and no region event came since. */
static void rule_no_region(struct findings_context *cx, size_t i)
{
	struct id_map *off = &cx->autocast_off;
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char site[160];

	if (op->autocast->depth != 0 || finding_op_is_backward(op))
		return;
	bool was_off = id_map_get(off, e->pid, (uint64_t)e->tid) == 1;
	id_map_put(off, e->pid, (uint64_t)e->tid, !op->autocast->enabled);
	if (!was_off || !op->autocast->enabled ||
	    finding_op_is_backward(op) || !op->policy ||
	    !strcmp(op->policy, "none") || is_jit_cast(op->op))
		return;
	finding_text(site, sizeof site, "noregion:%s",
		     op->autocast->device ? op->autocast->device : "?");
	struct trace_finding *f = finding_of(cx, FINDING_POLICY_DIVERGENCE,
					     site, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	f->tensor = op->noutputs ? op->outputs[0].id : 0;
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) ran under autocast (%s %s, policy %s, "
		     "output %s) with no autocast region open: autocast was "
		     "switched on directly (%s, "
		     "amp_autocast_set_enabled), so its cast cache is never "
		     "cleared, as a region's exit would; use `with "
		     "torch.autocast(...)` (amp_autocast_enter) around the "
		     "forward pass",
		     op->op, (unsigned long long)op->op_id,
		     op->autocast->device ? op->autocast->device : "?",
		     op->autocast->dtype ? op->autocast->dtype : "?", op->policy,
		     op->noutputs && op->outputs[0].info->dtype
			     ? op->outputs[0].info->dtype : "?",
		     op->autocast->device && !strcmp(op->autocast->device, "cuda")
			     ? "torch.set_autocast_enabled"
			     : "torch.set_autocast_cpu_enabled");
}

/* TorchScript casts appear in PyTorch traces only; autocast outside a
 * region in libamp programs too.  Fed ops, casts and region events. */
void finding_rule_policy_divergence(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];

	if (e->kind == TRACE_CAST)
		rule_jit_cast(cx, i);
	else if (e->kind == TRACE_OP)
		rule_no_region(cx, i);
	else if (e->kind == TRACE_SCOPE_BEGIN || e->kind == TRACE_SCOPE_END)
		id_map_put(&cx->autocast_off, e->pid, (uint64_t)e->tid, 0);
}
