/* The dispatcher: every op goes through amp_dispatch().  It checks
 * devices, applies the autocast policy of the op's row (casts through the
 * weight cache), runs the kernel with the device's autocast excluded (as
 * PyTorch's wrappers do), marks outputs for autograd and publishes
 * op/cast events to the hooks. */
#include "amp_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

static atomic_uint_fast64_t next_op_id = 1;

/* Each op's policy row per device, resolved once from the table. */
static const struct amp_policy_row *op_rows[AMP_DEVICE_TYPE_COUNT][AMP_OP_COUNT];
static pthread_once_t op_rows_once = PTHREAD_ONCE_INIT;

static void resolve_op_rows(void)
{
	for (int d = 0; d < AMP_DEVICE_TYPE_COUNT; d++)
		for (int op = 0; op < AMP_OP_COUNT; op++)
			op_rows[d][op] = amp_policy_lookup(AMP_TORCH_NEWEST,
				(enum amp_device_type)d, amp_op_defs[op].name,
				amp_op_defs[op].overload);
}

/* The call's tensor arguments, flattened in order (list items inline),
 * with a pointer back to the slot holding each so casts can replace it. */
struct flat_args {
	int count;
	struct amp_tensor **slot[AMP_PLAN_MAX_ARGS];
	bool optional[AMP_PLAN_MAX_ARGS];
	/* lists are copied before casting so the caller's array is kept */
	struct amp_tensor *list_copy[AMP_MAX_ARGS][AMP_MAX_LIST];
};

static int flatten(struct amp_call *c, struct flat_args *f)
{
	f->count = 0;
	for (int a = 0; a < c->nargs; a++) {
		struct amp_arg *arg = &c->args[a];
		switch (arg->kind) {
		case AMP_ARG_TENSOR:
		case AMP_ARG_OPT_TENSOR:
			if (arg->kind == AMP_ARG_TENSOR && !arg->tensor)
				amp_abort(__FILE__, __LINE__,
					  "%s: argument %d is NULL",
					  amp_op_defs[c->op].name, a);
			f->optional[f->count] = arg->kind == AMP_ARG_OPT_TENSOR;
			f->slot[f->count++] = &arg->tensor;
			break;
		case AMP_ARG_TENSOR_LIST:
			if (arg->list.count > AMP_MAX_LIST)
				return amp_error(AMP_ERR_INVALID,
						 "%s: more than %d tensors",
						 amp_op_defs[c->op].name,
						 AMP_MAX_LIST);
			if (f->count + arg->list.count > AMP_PLAN_MAX_ARGS)
				return amp_error(AMP_ERR_INVALID,
						 "%s: too many tensor arguments",
						 amp_op_defs[c->op].name);
			memcpy(f->list_copy[a], arg->list.items,
			       (size_t)arg->list.count * sizeof(void *));
			arg->list.items = f->list_copy[a];
			for (int i = 0; i < arg->list.count; i++) {
				if (!arg->list.items[i])
					amp_abort(__FILE__, __LINE__,
						  "%s: list item %d is NULL",
						  amp_op_defs[c->op].name, i);
				f->optional[f->count] = false;
				f->slot[f->count++] = &arg->list.items[i];
			}
			break;
		default:
			break;
		}
	}
	return AMP_OK;
}

static void device_label(const struct amp_tensor *t, char *buf, size_t size)
{
	if (t->device == AMP_DEVICE_CUDA)
		snprintf(buf, size, "cuda:0");
	else
		snprintf(buf, size, "%s", amp_device_type_name(t->device));
}

static int common_device(struct amp_call *c, const struct flat_args *f)
{
	const struct amp_tensor *first = NULL;

	if (amp_op_defs[c->op].kind == AMP_OP_KIND_FACTORY)
		return AMP_OK;
	for (int i = 0; i < f->count; i++) {
		const struct amp_tensor *t = *f->slot[i];
		if (!t)
			continue;
		if (!first) {
			first = t;
			continue;
		}
		if (t->device != first->device) {
			char a[16], b[16];
			device_label(first, a, sizeof a);
			device_label(t, b, sizeof b);
			return amp_error(AMP_ERR_DEVICE,
					 "Expected all tensors to be on the same "
					 "device, but found at least two devices, "
					 "%s and %s!",
					 a, b);
		}
	}
	if (!first)
		return amp_error(AMP_ERR_INVALID, "%s: no tensor argument",
				 amp_op_defs[c->op].name);
	c->device = first->device;
	return AMP_OK;
}

static void fill_autocast_info(struct amp_autocast_info *info,
			       const struct amp_autocast_tls *st,
			       enum amp_device_type device, bool active)
{
	*info = (struct amp_autocast_info){
		.enabled = active,
		.device = device,
		.dtype = st->dtype[device],
		.cache_enabled = st->cache_enabled,
		.depth = st->nesting,
		.scope = st->scope,
	};
}

/* An op event's head; its `op` member is set next.  The rest of the
 * union stays unset: zeroing all of it (the cast member is twice an op's
 * size) cost ~100 instructions per event while a hook listens. */
static void op_event_head(struct amp_event *e, enum amp_event_kind kind,
			  uint64_t time_ns)
{
	e->kind = kind;
	e->time_ns = time_ns;
	e->thread = 0;
}

static int describe_flat(const struct flat_args *f,
			 struct amp_tensor_info *infos)
{
	int n = 0;

	for (int i = 0; i < f->count; i++)
		if (*f->slot[i])
			amp_tensor_describe(*f->slot[i], &infos[n++]);
	return n;
}

/* One autocast cast: through the cache when the plan allows it. */
static struct amp_tensor *cached_cast(struct amp_call *c, int arg,
				      struct amp_tensor *source,
				      const struct amp_plan_cast *pc)
{
	enum amp_cache_result result = pc->cache_if_cast;
	uint64_t begin = amp_hooks_want(AMP_EVENT_CAST) ? amp_now_ns() : 0;
	struct amp_tensor *cast = NULL;
	bool stale = false;

	if (result == AMP_CACHE_MISS) {
		cast = amp_cache_lookup(source, &stale);
		if (cast)
			result = AMP_CACHE_HIT;
	}
	if (!cast) {
		cast = amp_tensor_convert(source, pc->to);
		if (!cast)
			return NULL;
		cast->requires_grad = source->requires_grad &&
				      amp_autocast_state()->grad_enabled;
		cast->is_leaf = !cast->requires_grad;
		if (cast->requires_grad &&
		    amp_autograd_record_cast(source, cast) != AMP_OK) {
			amp_tensor_free(cast);
			return NULL;
		}
		if (result == AMP_CACHE_MISS)
			amp_cache_insert(source, cast);
		if (atomic_load_explicit(&amp_value_checks_on,
					 memory_order_relaxed))
			amp_diag_check_cast(c, source, cast);
	}
	if (begin) {
		struct amp_event event = { .kind = AMP_EVENT_CAST };
		event.cast = (struct amp_cast_event){
			.op_id = c->op_id,
			.arg = arg,
			.from = source->dtype,
			.to = cast->dtype,
			.cache = result,
			.reason = result == AMP_CACHE_HIT
					  ? (stale ? "cached cast of a tensor "
						     "modified since (stale)"
						   : "cached cast reused")
					  : pc->reason,
			.bytes = result == AMP_CACHE_HIT ? 0
							 : amp_tensor_nbytes(cast),
			.begin_ns = begin,
			.stale = stale,
		};
		if (result == AMP_CACHE_MISS) {
			struct amp_cache_stats held = amp_autocast_cache_stats();
			event.cast.cache_counted = true;
			event.cast.cache_entries = held.entries;
			event.cast.cache_bytes = held.bytes;
		}
		amp_tensor_describe(source, &event.cast.source);
		amp_tensor_describe(cast, &event.cast.result);
		amp_hook_emit(&event);
	}
	return cast;
}

/* Applies the op's autocast plan: casts arguments in place (recording the
 * new references in `owned`) and fills the dtype argument. */
static int apply_autocast(struct amp_call *c, const struct amp_policy_row *row,
			  struct flat_args *f, struct amp_tensor **owned,
			  int *nowned, enum amp_policy *policy)
{
	const struct amp_autocast_tls *st = amp_autocast_state();
	struct amp_plan_arg pargs[AMP_PLAN_MAX_ARGS];
	struct amp_arg *dtype_arg = NULL;
	struct amp_plan plan;

	for (int i = 0; i < f->count; i++) {
		const struct amp_tensor *t = *f->slot[i];
		pargs[i] = (struct amp_plan_arg){ .defined = t != NULL,
						  .optional = f->optional[i] };
		if (!t)
			continue;
		pargs[i].dtype = t->dtype;
		pargs[i].device = t->device;
		pargs[i].requires_grad = t->requires_grad;
		pargs[i].is_leaf = t->is_leaf;
		pargs[i].is_view = t->base != NULL;
	}
	for (int a = 0; a < c->nargs; a++)
		if (c->args[a].kind == AMP_ARG_OPT_DTYPE)
			dtype_arg = &c->args[a];
	amp_autocast_plan(AMP_TORCH_NEWEST, row, c->device, st->dtype[c->device],
			  st->cache_enabled, f->count, pargs,
			  dtype_arg ? dtype_arg->dtype : AMP_DTYPE_NONE, &plan);
	*policy = plan.policy;
	if (plan.status != AMP_OK)
		return amp_error(plan.status, "%s", plan.error);
	for (int i = 0; i < f->count; i++) {
		if (!plan.casts[i].cast)
			continue;
		struct amp_tensor *cast =
			cached_cast(c, i, *f->slot[i], &plan.casts[i]);
		if (!cast)
			return amp_last_status();
		owned[(*nowned)++] = cast;
		*f->slot[i] = cast;
	}
	if (dtype_arg && plan.dtype_arg != AMP_DTYPE_NONE)
		dtype_arg->dtype = plan.dtype_arg;
	return AMP_OK;
}

static bool any_requires_grad(const struct flat_args *f)
{
	for (int i = 0; i < f->count; i++)
		if (*f->slot[i] && (*f->slot[i])->requires_grad)
			return true;
	return false;
}

static bool is_input(const struct flat_args *f, const struct amp_tensor *t)
{
	for (int i = 0; i < f->count; i++)
		if (*f->slot[i] == t)
			return true;
	return false;
}

/* The graph does not record in-place ops: with grad mode on, an argument
 * that requires grad is refused before the kernel writes anything, with
 * PyTorch's text when the written tensor is a leaf or a view of one.
 * Optimizers and the scaler run with grad mode off, as PyTorch's do. */
static int check_inplace(struct amp_call *c, const struct flat_args *f)
{
	const struct amp_op_def *def = &amp_op_defs[c->op];

	if (!amp_autocast_state()->grad_enabled || !any_requires_grad(f))
		return AMP_OK;
	const struct amp_tensor *target =
		*f->slot[strcmp(def->overload, "out") == 0 ? f->count - 1 : 0];
	if (target->requires_grad && target->is_leaf)
		return amp_error(AMP_ERR_STATE,
				 "a leaf Variable that requires grad is being "
				 "used in an in-place operation.");
	if (target->requires_grad && target->base && target->base->is_leaf)
		return amp_error(AMP_ERR_STATE,
				 "a view of a leaf Variable that requires grad "
				 "is being used in an in-place operation.");
	return amp_error(AMP_ERR_UNSUPPORTED,
			 "%s: in-place ops on tensors that require grad are "
			 "not recorded by libamp's autograd; run them with "
			 "grad mode off",
			 def->name);
}

/* PyTorch's autograd bookkeeping for outputs: they require grad when grad
 * mode is on and any input does; such outputs are not leaves and get a
 * graph node.  Each remembers the op that last wrote it (amp_tensor_info's
 * producer_op_id): the op's new outputs and the self (or out) of an
 * in-place op, not an input returned unchanged (to() to its own dtype); a
 * composite wrote nothing itself, its outputs keep the inner op's id. */
static int mark_outputs(struct amp_call *c, const struct flat_args *f)
{
	const struct amp_op_def *def = &amp_op_defs[c->op];
	bool requires_grad = def->kind != AMP_OP_KIND_FACTORY &&
			     c->op != AMP_OP_DETACH &&
			     amp_autocast_state()->grad_enabled &&
			     any_requires_grad(f);
	for (int o = 0; o < c->noutputs; o++) {
		struct amp_tensor *out = c->outputs[o];
		/* to()/contiguous() may return their input itself: it keeps
		 * its own flags (a leaf stays a leaf, as in PyTorch). */
		if (is_input(f, out)) {
			if (def->kind == AMP_OP_KIND_INPLACE)
				out->producer_op_id = c->op_id;
			continue;
		}
		if (def->kind != AMP_OP_KIND_COMPOSITE)
			out->producer_op_id = c->op_id;
		bool differentiable = requires_grad &&
				      amp_dtype_is_floating(out->dtype);
		out->requires_grad = differentiable;
		out->is_leaf = !differentiable;
	}
	if (requires_grad && def->kind != AMP_OP_KIND_COMPOSITE)
		return amp_autograd_record(c);
	return AMP_OK;
}

int amp_dispatch(struct amp_call *c)
{
	struct amp_autocast_tls *st = amp_autocast_state();
	const struct amp_op_def *def = &amp_op_defs[c->op];
	struct amp_tensor *owned[AMP_PLAN_MAX_ARGS];
	struct amp_tensor_info in_info[AMP_PLAN_MAX_ARGS];
	struct amp_tensor_info out_info[AMP_MAX_OUTPUTS];
	enum amp_policy policy = AMP_POLICY_NONE;
	struct flat_args f;
	int nowned = 0;
	uint64_t begin = 0;
	bool excluded_before = false;
	bool autocast_active = false;
	int status;

	AMP_ASSERT(c->op < AMP_OP_COUNT);
	pthread_once(&op_rows_once, resolve_op_rows);
	c->noutputs = 0;
	/* the thread's phase: autograd's engine (backward, linked to the
	 * node's forward op), an optimizer step or GradScaler (optimizer) */
	if (c->phase == AMP_PHASE_FORWARD && st->phase != AMP_PHASE_FORWARD) {
		c->phase = st->phase;
		if (st->phase == AMP_PHASE_BACKWARD)
			c->forward_op_id = st->backward_of;
	}
	c->op_id = atomic_fetch_add_explicit(&next_op_id, 1,
					     memory_order_relaxed);
	uint64_t parent = st->current_op;

	status = flatten(c, &f);
	if (status == AMP_OK)
		status = common_device(c, &f);
	if (status != AMP_OK)
		return status;

	bool want_begin = amp_hooks_want(AMP_EVENT_OP_BEGIN);
	bool want_end = amp_hooks_want(AMP_EVENT_OP_END);
	/* only events carry it: no backend query on the unhooked path */
	bool emulated = (want_begin || want_end) &&
			c->device == AMP_DEVICE_CUDA && amp_cuda_is_emulated();
	autocast_active = st->enabled[c->device] && !st->excluded[c->device];
	if (want_begin || want_end) {
		struct amp_event event;
		begin = amp_now_ns();
		op_event_head(&event, AMP_EVENT_OP_BEGIN, begin);
		event.op = (struct amp_op_event){
			.op_id = c->op_id,
			.parent_op_id = parent,
			.forward_op_id = c->forward_op_id,
			.op = def->name,
			.overload = def->overload,
			.phase = c->phase,
			.device = c->device,
			.emulated = emulated,
			.ninputs = describe_flat(&f, in_info),
			.inputs = in_info,
		};
		fill_autocast_info(&event.op.autocast, st, c->device,
				   autocast_active);
		amp_hook_emit(&event);
	}
	st->current_op = c->op_id;

	const struct amp_policy_row *row = op_rows[c->device][c->op];
	if (autocast_active && row) {
		status = apply_autocast(c, row, &f, owned, &nowned, &policy);
		excluded_before = st->excluded[c->device];
		st->excluded[c->device] = true;
	}
	if (status == AMP_OK && def->kind == AMP_OP_KIND_INPLACE)
		status = check_inplace(c, &f);
	if (status == AMP_OK)
		status = amp_backend_forward(c);
	if (autocast_active && row)
		st->excluded[c->device] = excluded_before;
	st->current_op = parent;
	/* the inputs as the op found them: before it marks what it wrote */
	int ninputs = want_end ? describe_flat(&f, in_info) : 0;
	if (status == AMP_OK)
		status = mark_outputs(c, &f);
	if (status == AMP_OK &&
	    atomic_load_explicit(&amp_value_checks_on, memory_order_relaxed))
		amp_diag_check_outputs(c);

	if (want_end) {
		struct amp_event event;
		op_event_head(&event, AMP_EVENT_OP_END, 0);
		event.op = (struct amp_op_event){
			.op_id = c->op_id,
			.parent_op_id = parent,
			.forward_op_id = c->forward_op_id,
			.op = def->name,
			.overload = def->overload,
			.phase = c->phase,
			.policy = policy,
			.device = c->device,
			.emulated = emulated,
			.ninputs = ninputs,
			.inputs = in_info,
			.noutputs = c->noutputs,
			.outputs = out_info,
			.status = status,
			.error = status == AMP_OK ? NULL : amp_last_error(),
			.begin_ns = begin,
		};
		fill_autocast_info(&event.op.autocast, st, c->device,
				   autocast_active);
		for (int o = 0; o < c->noutputs; o++)
			amp_tensor_describe(c->outputs[o], &out_info[o]);
		amp_hook_emit(&event);
	}
	for (int i = 0; i < nowned; i++)
		amp_tensor_free(owned[i]);
	if (status != AMP_OK) {
		for (int o = 0; o < c->noutputs; o++)
			amp_tensor_free(c->outputs[o]);
		c->noutputs = 0;
	}
	return status;
}

struct amp_tensor *amp_dispatch1(struct amp_call *call)
{
	if (amp_dispatch(call) != AMP_OK)
		return NULL;
	for (int o = 1; o < call->noutputs; o++)
		amp_tensor_free(call->outputs[o]);
	return call->outputs[0];
}

struct amp_arg amp_arg_ints(int count, const int64_t *values)
{
	struct amp_arg arg = { .kind = AMP_ARG_INTS };

	AMP_ASSERT(count >= 0 && count <= AMP_MAX_DIMS);
	arg.ints.count = count;
	if (count)
		memcpy(arg.ints.v, values, (size_t)count * sizeof *values);
	return arg;
}
