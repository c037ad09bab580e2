/* The rules about one op or one cast at a time (findings_internal.h):
 * dtype-mismatch, banned-op, op-error, stale-cache, cache-disabled. */
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
		     op->autocast.device ? op->autocast.device : op->device,
		     op->emulated ? " (emulated)" : "",
		     finding_op_failed(op) ? ", so it failed" : "");
}

/* The op (inside autocast, when one is) that produced input k of op
 * event `event`. */
static const struct trace_op *producer_op(struct findings_context *cx,
					  size_t event, int k)
{
	size_t i = trace_index_input_producer(cx->ix, event, k);

	if (i == SIZE_MAX)
		return NULL;
	const struct trace_event *e = &cx->t->events[i];
	if (e->kind == TRACE_CAST)
		return finding_op_of(cx, e->pid, e->cast.op_id);
	return &e->op;
}

/* A failed op outside autocast with a low-precision (*low) and a
 * full-precision (*full) input: what dtype-mismatch reports. */
static bool mixed_dtypes_failed(const struct trace_op *op,
				const struct trace_tensor **low,
				const struct trace_tensor **full)
{
	*low = *full = NULL;
	if (!finding_op_failed(op) || op->autocast.enabled)
		return false;
	for (int k = 0; k < op->ninputs; k++) {
		if (!*low && finding_is_low_precision(op->inputs[k].dtype))
			*low = &op->inputs[k];
		if (!*full && finding_is_full_precision(op->inputs[k].dtype))
			*full = &op->inputs[k];
	}
	return *low && *full;
}

/* dtype-mismatch: an op outside autocast failed with f16/bf16 and f32/f64
 * inputs; names the low-precision input and the op that produced it. */
void finding_rule_dtype_mismatch(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	const struct trace_tensor *low, *full;
	char label[128], from[128], tensor[192];

	if (!mixed_dtypes_failed(op, &low, &full))
		return;
	const struct trace_op *source =
		producer_op(cx, i, (int)(low - op->inputs));
	trace_op_label(op, label, sizeof label);
	if (source)
		trace_op_label(source, from, sizeof from);
	else
		finding_text(from, sizeof from, "?");
	char site[160];
	finding_text(site, sizeof site, "%s<-%s", label, from);
	struct trace_finding *f =
		finding_of(cx, FINDING_DTYPE_MISMATCH, site, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	f->tensor = low->id;
	finding_tensor_label(cx, e->pid, low->id, tensor, sizeof tensor);
	char origin[256];
	if (source && source->autocast.enabled)
		finding_text(origin, sizeof origin,
			     "produced by %s (op %llu) inside the %s%s%s autocast "
			     "region", from, (unsigned long long)source->op_id,
			     source->autocast.scope ? "'" : "",
			     source->autocast.scope ? source->autocast.scope : "unnamed",
			     source->autocast.scope ? "'" : "");
	else if (source)
		finding_text(origin, sizeof origin, "produced by %s (op %llu)", from,
			     (unsigned long long)source->op_id);
	else
		finding_text(origin, sizeof origin, "of unknown origin");
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) ran outside autocast and rejected mixed dtypes: "
		     "input %s is %s, %s, and tensor %llu is %s (%s); cast the "
		     "autocast output back with .float() / amp_to(t, AMP_DTYPE_F32) "
		     "before using it outside the region",
		     label, (unsigned long long)op->op_id, tensor, low->dtype, origin,
		     (unsigned long long)full->id, full->dtype,
		     op->error ? op->error : "failed");
}

/* op-error: an op failed, and neither banned-op nor dtype-mismatch
 * explains why. */
void finding_rule_op_error(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	const struct trace_tensor *low, *full;
	char label[128];

	if (!finding_op_failed(op) || is_banned(op) ||
	    mixed_dtypes_failed(op, &low, &full))
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

/* cache-disabled: a cacheable cast redone (cache_enabled off). */
void finding_rule_cache_disabled(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	char tensor[192];

	if (!c->cache || strcmp(c->cache, "disabled"))
		return;
	struct trace_finding *f =
		finding_of(cx, FINDING_CACHE_DISABLED, "", e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	finding_text(f->message, sizeof f->message,
		     "the cacheable %s->%s cast of %s was redone because the "
		     "autocast cache is disabled (cache_enabled=False)",
		     c->from, c->to,
		     finding_tensor_label(cx, e->pid, c->tensor, tensor, sizeof tensor));
}
