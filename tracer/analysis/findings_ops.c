/* The rules about one op or one cast at a time (findings_internal.h):
 * banned-op, op-error, stale-cache, cache-other-dtype, cache-disabled
 * (dtype-mismatch: findings_dtype.c). */
#include "findings_internal.h"

#include <string.h>

static bool is_banned(const struct trace_op *op)
{
	return op->policy && op->policy[0] == 'b' &&
	       !strcmp(op->policy, "banned");
}

/* banned-op: an op whose policy is `banned`. */
void finding_rule_banned_op(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128];

	if (!is_banned(op))
		return;
	trace_op_label(op, label, sizeof label);
	struct trace_finding *f =
		finding_of(cx, FINDING_BANNED_OP, label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	f->tensor = op->ninputs ? op->inputs[0].id : 0;
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) is banned under %s autocast%s%s. PyTorch: "
		     "\"torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss "
		     "are unsafe to autocast. Many models use a sigmoid layer right "
		     "before the binary cross entropy layer. In this case, combine "
		     "the two layers using "
		     "torch.nn.functional.binary_cross_entropy_with_logits or "
		     "torch.nn.BCEWithLogitsLoss. binary_cross_entropy_with_logits and "
		     "BCEWithLogits are safe to autocast.\" Otherwise compute the loss "
		     "with autocast disabled on .float() inputs",
		     label, (unsigned long long)op->op_id,
		     op->autocast->device ? op->autocast->device : op->device,
		     op->emulated ? " (emulated)" : "",
		     finding_op_failed(op) ? ", so it failed" : "");
}

/* op-error: an op failed, and neither banned-op nor dtype-mismatch
 * explains why (of it, or of the op inside it whose exception it
 * raised).  A compile whose error Dynamo handled failed for Dynamo
 * alone: the program ran on (compile-error-suppressed). */
void finding_rule_op_error(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128];

	if (!finding_op_failed(op) || op->handled || is_banned(op) ||
	    finding_dtype_mismatch_explains(op) ||
	    finding_failure_is_dtype_mismatch(cx, i))
		return;
	trace_op_label(op, label, sizeof label);
	struct trace_finding *f =
		finding_of(cx, FINDING_OP_ERROR, label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	finding_text(f->message, sizeof f->message, "%s (op %llu, thread %lld) "
		     "failed: %s", label, (unsigned long long)op->op_id,
		     (long long)e->tid, op->error ? op->error : "(no message)");
}

/* compile-error-suppressed: a compile failed, and Dynamo's
 * suppress_errors kept its error from the program (`handled`
 * "suppressed"; "skipped", a soft failure, is Dynamo's own graph break). */
void finding_rule_compile_error_suppressed(struct findings_context *cx,
					   size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128];

	if (!op->handled || strcmp(op->handled, "suppressed"))
		return;
	trace_op_label(op, label, sizeof label);
	struct trace_finding *f = finding_of(
		cx, FINDING_COMPILE_ERROR_SUPPRESSED, label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	finding_text(f->message, sizeof f->message, "%s (op %llu, thread "
		     "%lld) failed, and torch._dynamo.config.suppress_errors "
		     "kept the error from the program, which ran the frame "
		     "eagerly: %s", label, (unsigned long long)op->op_id,
		     (long long)e->tid, op->error ? op->error : "(no message)");
}

/* stale-cache: a cast cache hit marked `stale` (its source was modified
 * in place after the cached cast was made). */
void finding_rule_stale_cache(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	char label[128], tensor[192];

	if (!c->stale)
		return;
	struct trace_finding *f =
		finding_of(cx, FINDING_STALE_CACHE, "", e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) used the cached %s->%s cast of %s made before the "
		     "tensor was updated in place (an optimizer step inside the same "
		     "autocast region): the forward computed with the old weights; "
		     "the cache is cleared only when the outermost region exits, so "
		     "enter autocast per iteration around forward + loss only",
		     finding_op_label(cx, e->pid, c->op_id, label, sizeof label),
		     (unsigned long long)c->op_id, c->from, c->to,
		     finding_tensor_label(cx, e->pid, c->tensor, tensor, sizeof tensor));
}

/* "bf16 autocast region 'train.py:30'" or "unnamed bf16 autocast
 * region". */
static const char *region_label(const struct trace_autocast *a, char *buf,
				size_t size)
{
	if (a->scope)
		finding_text(buf, size, "%s autocast region '%s'", a->dtype,
			     a->scope);
	else
		finding_text(buf, size, "unnamed %s autocast region", a->dtype);
	return buf;
}

/* "linear (op 5) in the f16 autocast region 'train.py:26'": the op the
 * cached copy `result` was made for, from the miss that made it. */
static const char *copy_maker(struct findings_context *cx, int64_t pid,
			      uint64_t result, char *buf, size_t size)
{
	size_t i = id_map_get(&cx->ix->producer, pid, result);
	const struct trace_op *op = NULL;
	char label[128], region[160];

	if (i != SIZE_MAX && cx->t->events[i].kind == TRACE_CAST)
		op = finding_op_of(cx, pid, cx->t->events[i].cast.op_id);
	if (!op) {
		finding_text(buf, size, "an op the trace does not show");
		return buf;
	}
	finding_text(buf, size, "%s (op %llu) in the %s",
		     trace_op_label(op, label, sizeof label),
		     (unsigned long long)op->op_id,
		     region_label(op->autocast, region, sizeof region));
	return buf;
}

/* cache-other-dtype: a cache hit whose copy is in a dtype other than its
 * op's region's (made by an earlier region of that dtype: torch keys the
 * cache by the source alone), for an op that ran on it.  One per op. */
void finding_rule_cache_other_dtype(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	char label[128], tensor[192], region[160], maker[320];

	if (!c->cache || c->cache[0] != 'h' || strcmp(c->cache, "hit") ||
	    !finding_is_low_precision(c->to))
		return;
	const struct trace_op *op = finding_op_of(cx, e->pid, c->op_id);
	if (!op || op->incomplete || finding_op_failed(op) ||
	    !op->autocast->enabled || !op->autocast->dtype ||
	    !strcmp(op->autocast->dtype, c->to))
		return;
	size_t *reported = id_map_find(&cx->other_dtype_ops, e->pid, c->op_id,
				       true);
	if (!reported || *reported)
		return;
	*reported = 1;
	trace_op_label(op, label, sizeof label);
	region_label(op->autocast, region, sizeof region);
	char site[400];
	finding_text(site, sizeof site, "%s in %s ran in %s", label, region,
		     c->to);
	struct trace_finding *f =
		finding_of(cx, FINDING_CACHE_OTHER_DTYPE, site, e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) in the %s ran in %s, not %s: autocast's cache "
		     "handed it the %s copy of %s (argument %d) made for %s, "
		     "within the same outermost region%s%s; torch keys its cast "
		     "cache by the source tensor alone and empties it only when "
		     "the outermost region exits",
		     label, (unsigned long long)op->op_id, region, c->to,
		     op->autocast->dtype, c->to,
		     finding_tensor_label(cx, e->pid, c->tensor, tensor,
					  sizeof tensor),
		     c->arg, copy_maker(cx, e->pid, c->result, maker,
					sizeof maker),
		     op->noutputs ? "; its output is " : "",
		     op->noutputs ? op->outputs[0].info->dtype : "");
}

/* The outermost autocast region open on event i's thread, or SIZE_MAX:
 * autocast's cache lives until that one exits. */
static size_t outermost_region(const struct findings_context *cx, size_t i)
{
	const struct finding_regions *r = &cx->regions;

	if (!r->at || !r->at[i])
		return SIZE_MAX;
	size_t k = r->at[i] - 1;
	while (r->items[k].parent != SIZE_MAX)
		k = r->items[k].parent;
	return k;
}

/* cache-disabled: a cacheable cast made again, in the outermost region
 * an earlier one of the same tensor was made in, because cache_enabled
 * is off.  A tensor cast once per region costs what a cache miss would:
 * no finding (Lightning's MixedPrecision turns the cache off for every
 * run). */
void finding_rule_cache_disabled(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	size_t region = outermost_region(cx, i);
	char tensor[192];

	if (!c->cache || strcmp(c->cache, "disabled") || region == SIZE_MAX)
		return;
	size_t *last = id_map_find(&cx->uncached_casts, e->pid, c->tensor,
				   true);
	if (!last) {
		cx->failed = true;
		return;
	}
	bool again = *last == region + 1;
	*last = region + 1;
	if (!again)
		return;
	struct trace_finding *f =
		finding_of(cx, FINDING_CACHE_DISABLED, "", e->pid, i);
	if (!f)
		return;
	const char *scope = cx->regions.items[region].scope;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	finding_text(f->message, sizeof f->message,
		     "the cacheable %s->%s cast of %s was made again in the "
		     "%s%s%s autocast region, because the autocast cache is "
		     "disabled (cache_enabled=False): a cache makes it once "
		     "per region",
		     c->from, c->to,
		     finding_tensor_label(cx, e->pid, c->tensor, tensor,
					  sizeof tensor),
		     scope ? "'" : "", scope ? scope : "unnamed",
		     scope ? "'" : "");
}
