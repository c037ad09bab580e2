/* dtype-mismatch: an op failed on mixed low-precision (f16/bf16) and full
 * precision (f32/f64) inputs, run where autocast did not cast them (off,
 * or on but the op is on none of its lists).  For each floating input the
 * rule walks back through the ops that made it (the producers of their
 * inputs, through ops that keep the dtype) to where its dtype came from:
 *
 *   autocast      an op autocast ran in low precision (its policy), or
 *                 autocast's cast of it
 *   .to()         the program's own cast (x.half(), x.to(torch.bfloat16))
 *   gradient      autograd's cast of a gradient in backward (the backward
 *                 of a cast: the `to` op carries an autograd amp.cast)
 *   model.half()  a parameter whose dtype a conversion of the module set
 *                 (its id was the input of a cast to that dtype, whose
 *                 result became its data: Module._apply), or a parameter
 *                 first seen in that dtype
 *   made          an op that made the tensor in that dtype (randn, a
 *                 factory with a dtype)
 *
 * and the fix follows from where the odd dtype came from and where the op
 * ran: outside the region that made its input, an op autocast does not
 * cover (a custom op), a converted model, an explicit cast, a gradient
 * autograd cast for a backward that does not expect its dtype. */
#include "findings_internal.h"

#include <string.h>

enum origin_kind {
	ORIGIN_UNKNOWN,       /* made outside the recorded ops */
	ORIGIN_AUTOCAST_OP,   /* an op autocast ran in low precision */
	ORIGIN_AUTOCAST_CAST, /* autocast's cast */
	ORIGIN_EXPLICIT_CAST, /* the program's .to() / .half() */
	ORIGIN_GRADIENT_CAST, /* autograd's cast of a gradient */
	ORIGIN_CONVERTED,     /* a parameter a module conversion cast */
	ORIGIN_PARAMETER,     /* a parameter, in this dtype from the start */
	ORIGIN_MADE,          /* an op that made it in this dtype */
};

struct dtype_origin {
	enum origin_kind kind;
	size_t event;         /* the op or cast event, SIZE_MAX: none */
};

static bool is_cast_op(const struct trace_op *op)
{
	return !strcmp(op->op, "to") || !strcmp(op->op, "_to_copy") ||
	       !strcmp(op->op, "type_as");
}

static bool same(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* A cast op event that converts its input to another dtype. */
static bool is_conversion(const struct trace_event *e)
{
	return e->kind == TRACE_OP && is_cast_op(&e->op) && e->op.ninputs &&
	       e->op.noutputs && e->op.outputs[0].info->dtype &&
	       !same(e->op.inputs[0].info->dtype, e->op.outputs[0].info->dtype);
}

/* The first conversion of each tensor to each dtype, chained from the
 * tensor (findings_internal.h): a few per parameter, the dtypes it was
 * converted to. */
static void conversions_build(struct findings_context *cx,
			      struct finding_conversions *c)
{
	c->built = true;
	for (size_t i = 0; i < cx->t->nevents; i++) {
		const struct trace_event *e = &cx->t->events[i];
		if (!is_conversion(e))
			continue;
		uint64_t id = e->op.inputs[0].id;
		size_t head = id_map_get(&c->first, e->pid, id), k = head;
		while (k != SIZE_MAX &&
		       !same(cx->t->events[k].op.outputs[0].info->dtype,
			     e->op.outputs[0].info->dtype))
			k = id_map_get(&c->next, e->pid, k);
		if (k != SIZE_MAX)
			continue;  /* converted to this dtype before */
		if (head != SIZE_MAX)
			id_map_put(&c->next, e->pid, i, head);
		id_map_put(&c->first, e->pid, id, i);
	}
}

/* A module conversion before event `before`: a cast op whose input was
 * tensor `id` in another dtype and whose result is in `dtype` (the
 * parameter's data was then replaced by it, keeping its identity). */
static size_t conversion_of(struct findings_context *cx, int64_t pid,
			    uint64_t id, const char *dtype, size_t before)
{
	struct finding_conversions *c = &cx->conversions;

	if (!c->built)
		conversions_build(cx, c);
	for (size_t k = id_map_get(&c->first, pid, id); k != SIZE_MAX;
	     k = id_map_get(&c->next, pid, k))
		if (same(cx->t->events[k].op.outputs[0].info->dtype, dtype))
			return k < before ? k : SIZE_MAX;
	return SIZE_MAX;
}

/* The autograd amp.cast of cast op event `op` (a `to` that autograd ran
 * in backward to cast a gradient), or SIZE_MAX: the program's own.  The
 * bridge writes it on the op's thread, inside the op, just before the
 * op's own event: the search ends at an event of that thread that ended
 * before the op began (a thread's events are written as they end), so a
 * long trace is not walked back to its start for each mismatch. */
static size_t autograd_cast_of(struct findings_context *cx, size_t op)
{
	const struct trace_event *e = &cx->t->events[op];

	if (!same(e->op.phase, "backward"))
		return SIZE_MAX;
	for (size_t i = op; i-- > 0;) {
		const struct trace_event *c = &cx->t->events[i];
		if (c->kind == TRACE_OTHER_CAST && c->pid == e->pid &&
		    c->cast.op_id == e->op.op_id &&
		    same(c->cast.origin, "autograd"))
			return i;
		if (c->kind == TRACE_OP && c->pid == e->pid &&
		    c->op.op_id == e->op.op_id)
			return SIZE_MAX;  /* an earlier record of the op */
		if (c->pid == e->pid && c->tid == e->tid &&
		    c->ts + c->dur < e->ts)
			return SIZE_MAX;
	}
	return SIZE_MAX;
}

static bool autocast_ran(const struct trace_op *op)
{
	return op->autocast->enabled && op->policy && strcmp(op->policy, "none");
}

/* Where input k of op event `event` got its dtype. */
static void origin_of(struct findings_context *cx, size_t event, int k,
		      struct dtype_origin *out)
{
	const struct trace_event *e = &cx->t->events[event];
	const struct trace_tensor *t = &e->op.inputs[k];
	const char *dtype = t->info->dtype;

	/* A parameter's dtype is the module's: made so, or converted (its
	 * data replaced, which no op shows, after an op cast it). */
	if (t->info->name && t->info->name[0] != '(' && t->info->leaf) {
		size_t c = conversion_of(cx, e->pid, t->id, dtype, event);
		*out = (struct dtype_origin){
			c != SIZE_MAX ? ORIGIN_CONVERTED : ORIGIN_PARAMETER, c };
		return;
	}
	for (int hops = 0; hops < 64; hops++) {
		size_t p = trace_index_input_producer(cx->ix, event, k);
		if (p == SIZE_MAX || p >= event) {
			*out = (struct dtype_origin){ ORIGIN_UNKNOWN, SIZE_MAX };
			return;
		}
		const struct trace_event *q = &cx->t->events[p];
		if (q->kind == TRACE_CAST) {
			*out = (struct dtype_origin){ ORIGIN_AUTOCAST_CAST, p };
			return;
		}
		const struct trace_op *op = &q->op;
		if (is_cast_op(op) && op->ninputs &&
		    !same(op->inputs[0].info->dtype, dtype)) {
			size_t c = autograd_cast_of(cx, p);
			*out = c != SIZE_MAX
			     ? (struct dtype_origin){ ORIGIN_GRADIENT_CAST, c }
			     : (struct dtype_origin){ ORIGIN_EXPLICIT_CAST, p };
			return;
		}
		if (autocast_ran(op)) {
			*out = (struct dtype_origin){ ORIGIN_AUTOCAST_OP, p };
			return;
		}
		int next = -1;
		for (int j = 0; j < op->ninputs && next < 0; j++)
			if (same(op->inputs[j].info->dtype, dtype))
				next = j;
		if (next < 0) {
			*out = (struct dtype_origin){ ORIGIN_MADE, p };
			return;
		}
		event = p;
		e = q;
		k = next;
		t = &op->inputs[k];
	}
	*out = (struct dtype_origin){ ORIGIN_UNKNOWN, SIZE_MAX };
}

/* "autocast ran linear (op 5, lower_precision_fp) in region 'x.py:7'" */
static void origin_text(struct findings_context *cx,
			const struct dtype_origin *o, char *buf, size_t size)
{
	const struct trace_event *e =
		o->event != SIZE_MAX ? &cx->t->events[o->event] : NULL;
	char label[128];

	if (e && e->kind == TRACE_OP)
		trace_op_label(&e->op, label, sizeof label);
	switch (o->kind) {
	case ORIGIN_AUTOCAST_OP: {
		const char *scope = e->op.autocast->scope;
		finding_text(buf, size, "autocast: %s (op %llu, policy %s) ran in "
			     "%s in the %s%s%s autocast region", label,
			     (unsigned long long)e->op.op_id, e->op.policy,
			     e->op.noutputs ? e->op.outputs[0].info->dtype
					    : e->op.autocast->dtype,
			     scope ? "'" : "", scope ? scope : "unnamed",
			     scope ? "'" : "");
		break;
	}
	case ORIGIN_AUTOCAST_CAST: {
		char op[128];
		finding_text(buf, size, "autocast: its %s->%s cast for %s (op %llu)",
			     e->cast.from, e->cast.to,
			     finding_op_label(cx, e->pid, e->cast.op_id, op,
					      sizeof op),
			     (unsigned long long)e->cast.op_id);
		break;
	}
	case ORIGIN_EXPLICIT_CAST:
		finding_text(buf, size, "the program's own cast %s->%s (%s, op "
			     "%llu: .to()/.half())", e->op.inputs[0].info->dtype,
			     e->op.outputs[0].info->dtype, label,
			     (unsigned long long)e->op.op_id);
		break;
	case ORIGIN_GRADIENT_CAST:
		finding_text(buf, size, "autograd's cast of the gradient %s->%s "
			     "(op %llu: %s)", e->cast.from, e->cast.to,
			     (unsigned long long)e->cast.op_id,
			     e->cast.reason ? e->cast.reason
					    : "the backward of a cast");
		break;
	case ORIGIN_CONVERTED:
		finding_text(buf, size, "a parameter of a converted module: cast "
			     "%s->%s by %s (op %llu: model.half() or .to())",
			     e->op.inputs[0].info->dtype,
			     e->op.outputs[0].info->dtype, label,
			     (unsigned long long)e->op.op_id);
		break;
	case ORIGIN_PARAMETER:
		finding_text(buf, size, "a parameter, in this dtype since the "
			     "trace first saw it");
		break;
	case ORIGIN_MADE:
		finding_text(buf, size, "%s (op %llu), which made it so", label,
			     (unsigned long long)e->op.op_id);
		break;
	default:
		finding_text(buf, size, "made outside the recorded ops");
	}
}

/* The fix, by what explains the mismatch best. */
enum mismatch_cause {
	CAUSE_UNCOVERED,  /* autocast on, the op on none of its lists */
	CAUSE_CONVERTED,  /* a converted model meets full-precision inputs */
	CAUSE_EXPLICIT,   /* the program's cast */
	CAUSE_GRADIENT,   /* autograd's cast of a gradient */
	CAUSE_OUTSIDE,    /* the op ran outside the region of its input */
	CAUSE_OTHER,
};

static const char *const cause_fix[] = {
	[CAUSE_UNCOVERED] = "autocast does not cover this op (on none of its "
	"lists, as a custom op): cast its inputs to one dtype yourself, or "
	"give it custom_fwd(cast_inputs=torch.float32)",
	[CAUSE_CONVERTED] = "the module was converted (model.half()): keep it "
	"in f32 and run it under torch.autocast, which casts per op, or "
	"convert its inputs too (x.half())",
	[CAUSE_EXPLICIT] = "the program's own cast made the odd dtype: drop "
	"it (autocast casts where it pays) or cast the op's other inputs "
	"alike",
	[CAUSE_GRADIENT] = "autograd cast the gradient back to the dtype its "
	"forward tensor had (the backward of a cast), and a backward that "
	"expects another met it: in a custom Function's backward cast the "
	"gradient to the dtype of the tensors it meets (grad.float()), or "
	"run its forward in that dtype (custom_fwd with the device_type of "
	"the autocast region)",
	[CAUSE_OUTSIDE] = "the op ran outside the autocast region that made "
	"its input: run it inside the region, or cast the region's output "
	"back with .float() (amp_to(t, AMP_DTYPE_F32)) before using it",
	[CAUSE_OTHER] = "cast the op's inputs to one dtype",
};

/* Whether op event `inner` ran inside op event `outer` (one thread). */
static bool runs_inside(const struct trace_event *inner,
			const struct trace_event *outer)
{
	return inner->pid == outer->pid && inner->tid == outer->tid &&
	       inner->ts >= outer->ts &&
	       inner->ts + inner->dur <= outer->ts + outer->dur;
}

/* The op that failed with op event i's exception: the op of its thread
 * that ended right before it, when that one ran inside it and failed
 * (its exception came out of i: a custom Function's backward raising
 * the error of the mm in it); else SIZE_MAX.  The walk back stops at
 * the thread's previous op, or at an event of the thread that ended
 * before i began. */
static size_t failed_inside(struct findings_context *cx, size_t i)
{
	const struct trace_event *outer = &cx->t->events[i];

	for (size_t j = i; j-- > 0;) {
		const struct trace_event *e = &cx->t->events[j];
		if (e->pid != outer->pid || e->tid != outer->tid)
			continue;
		if (e->kind == TRACE_OP) {
			bool raised = runs_inside(e, outer) &&
				      finding_op_failed(&e->op);
			return raised ? j : SIZE_MAX;
		}
		if (e->ts + e->dur < outer->ts)
			return SIZE_MAX;
	}
	return SIZE_MAX;
}

/* The failed op around op event i whose failure is i's (failed_inside
 * of it is i), or SIZE_MAX: the thread's next op. */
static size_t failed_around(struct findings_context *cx, size_t i)
{
	const struct trace_event *inner = &cx->t->events[i];

	for (size_t j = i + 1; j < cx->t->nevents; j++) {
		const struct trace_event *e = &cx->t->events[j];
		if (e->kind != TRACE_OP || e->pid != inner->pid ||
		    e->tid != inner->tid)
			continue;
		bool raised = runs_inside(inner, e) &&
			      finding_op_failed(&e->op);
		return raised ? j : SIZE_MAX;
	}
	return SIZE_MAX;
}

/* How many ops around one an exception is followed out of: a Function's
 * backward in a checkpoint's in a hook's is deep already. */
#define FAILED_AROUND_DEPTH 8

/* The exception text the bridge attached to the op (its op-error diag),
 * or to an op around it that failed with its exception (the one that
 * ended the program: the Function's backward the mm raised in), or
 * NULL. */
static const char *torch_message(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	uint64_t failed[FAILED_AROUND_DEPTH];
	int n = 0;

	for (size_t k = i; k != SIZE_MAX && n < FAILED_AROUND_DEPTH;
	     k = failed_around(cx, k))
		failed[n++] = cx->t->events[k].op.op_id;
	for (size_t j = i + 1; j < cx->t->nevents; j++) {
		const struct trace_event *d = &cx->t->events[j];
		if (d->kind != TRACE_DIAG || d->pid != e->pid ||
		    !same(d->diag.kind, "op-error"))
			continue;
		for (int k = 0; k < n; k++)
			if (d->diag.op_id == failed[k])
				return d->diag.message;
	}
	return NULL;
}

/* The first low- and full-precision inputs (*low, *full) of a failed op
 * autocast did not cast; false when it has not both. */
static bool mixed_dtypes(const struct trace_op *op, int *low, int *full)
{
	*low = *full = -1;
	if (!finding_op_failed(op) || autocast_ran(op))
		return false;
	for (int k = 0; k < op->ninputs; k++) {
		if (*low < 0 && finding_is_low_precision(op->inputs[k].info->dtype))
			*low = k;
		if (*full < 0 && finding_is_full_precision(op->inputs[k].info->dtype))
			*full = k;
	}
	return *low >= 0 && *full >= 0;
}

bool finding_dtype_mismatch_explains(const struct trace_op *op)
{
	int low, full;

	return mixed_dtypes(op, &low, &full);
}

/* dtype-mismatch (the rule at the top of this file).  Fed ops. */
void finding_rule_dtype_mismatch(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	int low, full;

	if (!mixed_dtypes(op, &low, &full))
		return;
	struct dtype_origin lo, fu;
	origin_of(cx, i, low, &lo);
	origin_of(cx, i, full, &fu);
	enum mismatch_cause cause =
		op->autocast->enabled ? CAUSE_UNCOVERED
		: lo.kind == ORIGIN_CONVERTED || lo.kind == ORIGIN_PARAMETER
			? CAUSE_CONVERTED
		: lo.kind == ORIGIN_EXPLICIT_CAST ? CAUSE_EXPLICIT
		: lo.kind == ORIGIN_GRADIENT_CAST ? CAUSE_GRADIENT
		: lo.kind == ORIGIN_AUTOCAST_OP || lo.kind == ORIGIN_AUTOCAST_CAST
			? CAUSE_OUTSIDE
			: CAUSE_OTHER;

	char label[128], from[128] = "?", site[160];
	trace_op_label(op, label, sizeof label);
	const struct trace_event *source =
		lo.event != SIZE_MAX ? &cx->t->events[lo.event] : NULL;
	if (source && source->kind == TRACE_OP)
		trace_op_label(&source->op, from, sizeof from);
	else if (source && source->kind == TRACE_OTHER_CAST) /* autograd's */
		finding_op_label(cx, source->pid, source->cast.op_id, from,
				 sizeof from);
	finding_text(site, sizeof site, "%s<-%s %d", label, from, (int)cause);
	struct trace_finding *f =
		finding_of(cx, FINDING_DTYPE_MISMATCH, site, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	f->tensor = op->inputs[low].id;
	f->fix = cause_fix[cause];

	char low_name[192], full_name[192], low_from[256], full_from[256];
	finding_tensor_label(cx, e->pid, op->inputs[low].id, low_name,
			     sizeof low_name);
	finding_tensor_label(cx, e->pid, op->inputs[full].id, full_name,
			     sizeof full_name);
	origin_text(cx, &lo, low_from, sizeof low_from);
	origin_text(cx, &fu, full_from, sizeof full_from);
	const char *torch = torch_message(cx, i);
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) %s and failed on mixed dtypes (%.200s): input "
		     "%s (%s) came from %s; input %s (%s) from %s",
		     label, (unsigned long long)op->op_id,
		     op->autocast->enabled ? "ran under autocast, which does not "
					    "cover it,"
					  : "ran outside autocast",
		     torch ? strstr(torch, ": ") ? strstr(torch, ": ") + 2 : torch
			   : op->error ? op->error : "failed",
		     low_name, op->inputs[low].info->dtype, low_from, full_name,
		     op->inputs[full].info->dtype, full_from);
}

bool finding_failure_is_dtype_mismatch(struct findings_context *cx,
				       size_t event)
{
	size_t k = event;

	for (int depth = 0; depth < FAILED_AROUND_DEPTH; depth++) {
		k = failed_inside(cx, k);
		if (k == SIZE_MAX)
			return false;
		if (finding_dtype_mismatch_explains(&cx->t->events[k].op))
			return true;
	}
	return false;
}

bool finding_op_has_dtype_mismatch(struct findings_context *cx, int64_t pid,
				   uint64_t op_id)
{
	for (size_t f = 0; f < cx->out->count; f++) {
		const struct trace_finding *x = &cx->out->items[f];
		if (x->pid == pid && x->op_id == op_id &&
		    !strcmp(x->kind, finding_kinds[FINDING_DTYPE_MISMATCH].name))
			return true;
	}
	return false;
}
