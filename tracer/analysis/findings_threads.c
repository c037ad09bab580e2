/* Findings about autocast regions and the threads that run in them:
 * backward-under-autocast and autocast-off-in-thread, on the regions of
 * every thread, built before the rules run. */
#include "findings_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ regions */

static bool add_region(struct findings_context *cx, struct finding_regions *r,
		       const struct finding_region *g)
{
	if (r->count == r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 64;
		struct finding_region *items = realloc(r->items, cap * sizeof *items);
		if (!items) {
			cx->failed = true;
			return false;
		}
		r->items = items;
		r->cap = cap;
	}
	r->items[r->count++] = *g;
	return true;
}

/* The region enclosing region `g` (both numbered from 1; 0: none). */
static size_t outer(const struct finding_regions *r, size_t g)
{
	size_t parent = r->items[g - 1].parent;

	return parent == SIZE_MAX ? 0 : parent + 1;
}

/* The regions of every thread, the innermost open at each event, and each
 * thread's first event (of those the findings read).  A region is
 * `in_backward` when the backward pass entered it itself (custom_bwd
 * re-entering the forward's autocast state), not around a backward()
 * call: the last op its thread ran before it and the first op inside it
 * are backward ops.  (The next micro-batch's
 * region, entered right after a backward, starts with a forward op.) */
static void collect(struct findings_context *cx, struct finding_regions *r,
		    struct id_map *open, struct id_map *last_backward)
{
	const struct trace *t = cx->t;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		uint64_t tid = (uint64_t)e->tid;
		size_t top = id_map_get(open, e->pid, tid);
		top = top == SIZE_MAX ? 0 : top;
		/* an event no finding reads is no sign of life: run's
		 * kept trace leaves it out (findings_event_read) */
		if (e->tid != 0 && e->kind != TRACE_META &&
		    findings_event_read(e) &&
		    id_map_get(&r->first, e->pid, tid) == SIZE_MAX)
			id_map_put(&r->first, e->pid, tid, i);
		if (e->kind == TRACE_OP) {
			bool backward = finding_op_is_backward(&e->op);
			id_map_put(last_backward, e->pid, tid, backward);
			for (size_t g = top; g && !r->items[g - 1].entered_op;
			     g = outer(r, g)) {
				r->items[g - 1].entered_op = true;
				r->items[g - 1].in_backward &= backward;
			}
		}
		if (e->kind == TRACE_SCOPE_BEGIN) {
			const struct finding_region g = {
				.pid = e->pid, .tid = e->tid, .start = e->ts,
				.end = INFINITY, .scope = e->scope.scope,
				.device = e->scope.device, .dtype = e->scope.dtype,
				.enabled = e->scope.enabled,
				.in_backward = id_map_get(last_backward, e->pid,
							  tid) == 1,
				.parent = top ? top - 1 : SIZE_MAX,
			};
			if (!add_region(cx, r, &g))
				return;
			top = r->count;
			id_map_put(open, e->pid, tid, top);
		} else if (e->kind == TRACE_SCOPE_END && top) {
			r->items[top - 1].end = e->ts;
			top = outer(r, top);
			id_map_put(open, e->pid, tid, top);
		}
		r->at[i] = (uint32_t)top;
	}
}

/* Marks every enabled region enclosing event `i` as tied to thread
 * `tid` (bit `how`). */
static void tie(struct finding_regions *r, int64_t pid, size_t i, int64_t tid,
		size_t how)
{
	for (size_t g = r->at[i]; g; g = outer(r, g)) {
		if (!r->items[g - 1].enabled)
			continue;
		size_t *bits = id_map_find(&r->ties, pid,
					   (uint64_t)(g - 1) << 32 | (uint32_t)tid,
					   true);
		if (bits)
			*bits |= how;
	}
}

/* A tensor made on one thread and used on another ties the threads to
 * the enabled regions open at either end: the region handed work out
 * (TIE_SCATTER: the user thread took a tensor made inside it) or took a
 * result in (TIE_GATHER).  Cast results are left out: libamp's cast cache
 * is process-wide, so a worker may hit a weight cast another thread made
 * without any hand-off. */
static void collect_ties(struct findings_context *cx, struct finding_regions *r)
{
	const struct trace *t = cx->t;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		int n = e->kind == TRACE_OP ? e->op.ninputs
			: e->kind == TRACE_CAST ? 1 : 0;
		for (int k = 0; k < n; k++) {
			size_t p = e->kind == TRACE_OP
				? trace_index_input_producer(cx->ix, i, k)
				: id_map_get(&cx->ix->producer, e->pid,
					     e->cast.tensor);
			if (p == SIZE_MAX || t->events[p].tid == e->tid ||
			    t->events[p].kind != TRACE_OP)
				continue;
			tie(r, e->pid, p, e->tid, TIE_SCATTER);
			tie(r, e->pid, i, t->events[p].tid, TIE_GATHER);
		}
	}
}

/* A parameter (a leaf that requires grad) read by an op or cast. */
static bool is_parameter(bool leaf, bool requires_grad)
{
	return leaf && requires_grad;
}

/* A thread that runs the same parameters as an enabled region of another
 * thread (the same module: a worker started inside the region that runs
 * it on inputs made before) is tied to that region as a hand-off ties
 * it (TIE_SHARED).  Inside a region the parameters are read as casts'
 * sources, outside by the ops themselves. */
static void collect_shared(struct findings_context *cx,
			   struct finding_regions *r)
{
	const struct trace *t = cx->t;
	struct id_map used = { 0 };  /* (pid, parameter) -> its first use */

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (!r->at[i])
			continue;
		if (e->kind == TRACE_CAST &&
		    is_parameter(e->cast.source->leaf,
				 e->cast.source->requires_grad) &&
		    id_map_get(&used, e->pid, e->cast.tensor) == SIZE_MAX)
			id_map_put(&used, e->pid, e->cast.tensor, i);
		for (int k = 0; e->kind == TRACE_OP && k < e->op.ninputs; k++) {
			const struct trace_tensor *x = &e->op.inputs[k];
			if (is_parameter(x->info->leaf, x->info->requires_grad) &&
			    id_map_get(&used, e->pid, x->id) == SIZE_MAX)
				id_map_put(&used, e->pid, x->id, i);
		}
	}
	for (size_t i = 0; used.count && i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		for (int k = 0; e->kind == TRACE_OP && k < e->op.ninputs; k++) {
			const struct trace_tensor *x = &e->op.inputs[k];
			size_t p = is_parameter(x->info->leaf, x->info->requires_grad)
					   ? id_map_get(&used, e->pid, x->id)
					   : SIZE_MAX;
			if (p != SIZE_MAX && t->events[p].tid != e->tid)
				tie(r, e->pid, p, e->tid, TIE_SHARED);
		}
	}
	cx->failed |= used.failed;
	id_map_free(&used);
}

void finding_regions_build(struct findings_context *cx,
			   struct finding_regions *r)
{
	struct id_map open = { 0 }, last_backward = { 0 };

	*r = (struct finding_regions){ 0 };
	r->at = calloc(cx->t->nevents ? cx->t->nevents : 1, sizeof *r->at);
	if (!r->at) {
		cx->failed = true;
		return;
	}
	collect(cx, r, &open, &last_backward);
	/* one thread: no hand-off to look for */
	if (r->first.count > 1 && r->count) {
		collect_ties(cx, r);
		collect_shared(cx, r);
	}
	cx->failed |= open.failed || last_backward.failed || r->first.failed ||
		      r->ties.failed;
	id_map_free(&open);
	id_map_free(&last_backward);
}

void finding_regions_free(struct finding_regions *r)
{
	free(r->items);
	free(r->at);
	id_map_free(&r->first);
	id_map_free(&r->ties);
	*r = (struct finding_regions){ 0 };
}

/* How region `g` is tied to thread `tid` (TIE_* bits, 0: not). */
static size_t tied(const struct finding_regions *r, size_t g, int64_t tid)
{
	const size_t *bits = id_map_at(&r->ties, r->items[g].pid,
				       (uint64_t)g << 32 | (uint32_t)tid);
	return bits ? *bits : 0;
}

/* ------------------------------------------------------------- rules */

/* What a process did with autocast: forward ops of a lower-precision
 * list ran, one with autocast enabled (an op, an enabled region, an
 * aggregated op with a policy), or one of those ops ran in a module
 * whose parameters FSDP lowered instead (lowered). */
struct autocast_use {
	size_t first_forward;  /* its first such op's event */
	bool forward, enabled, lowered;
};

/* Each process's use, in `pids`' order. */
struct autocast_uses {
	struct finding_pids pids;
	struct autocast_use *items;
	size_t count, cap;
};

/* The use of process `pid`, a zeroed one when new; NULL when out of
 * memory. */
static struct autocast_use *use_of(struct autocast_uses *u, int64_t pid)
{
	size_t k = finding_pid_index(&u->pids, pid);

	if (k == SIZE_MAX)
		return NULL;
	if (k < u->count)
		return &u->items[k];
	if (u->count == u->cap) {
		size_t cap = u->cap ? 2 * u->cap : 16;
		struct autocast_use *grown =
			realloc(u->items, cap * sizeof *grown);
		if (!grown)
			return NULL;
		u->items = grown;
		u->cap = cap;
	}
	u->items[u->count] = (struct autocast_use){ 0 };
	return &u->items[u->count++];
}

static bool aggregate_autocasts(const struct trace_aggregate *g)
{
	for (int k = 0; k < g->nops; k++)
		if (strcmp(g->ops[k].policy, "none"))
			return true;
	for (int k = 0; k < g->ncasts; k++)
		if (!g->casts[k].origin)
			return true;
	return false;
}

/* Whether an amp.diag is an FSDP policy that casts its module's
 * parameters to a lower precision. */
static bool fsdp_lowers_params(const struct trace_diag *d)
{
	return findings_is_fsdp_policy(d) && d->module && d->param_dtype &&
	       finding_is_low_precision(d->param_dtype);
}

/* The trace's FSDP notes that lower their module's parameters: their
 * events.  false: out of memory. */
struct fsdp_lowered {
	size_t *events, count;
};

static bool collect_fsdp_lowered(const struct trace *t,
				 struct fsdp_lowered *l)
{
	for (size_t i = 0; t->counts[TRACE_DIAG] && i < t->nevents; i++) {
		if (t->events[i].kind != TRACE_DIAG ||
		    !fsdp_lowers_params(&t->events[i].diag))
			continue;
		size_t *grown = realloc(l->events,
					(l->count + 1) * sizeof *grown);
		if (!grown)
			return false;
		l->events = grown;
		l->events[l->count++] = i;
	}
	return true;
}

/* Whether module path `module` (an op's) is `root` or under it; "" is
 * the top-level module, everything. */
static bool module_within(const char *module, const char *root)
{
	size_t n = strlen(root);

	return module && (!n || (!strncmp(module, root, n) &&
				 (module[n] == '\0' || module[n] == '.')));
}

/* Whether op event `op` ran in a module of its process whose parameters
 * FSDP lowered: in it, under it, or in a module around it (an op's
 * module can be coarser than the one that ran it: a torch.compile'd
 * layer's ops are its caller's, the module hooks not running in it). */
static bool fsdp_lowered_op(const struct trace *t,
			    const struct fsdp_lowered *l,
			    const struct trace_event *op)
{
	for (size_t k = 0; k < l->count; k++) {
		const struct trace_event *d = &t->events[l->events[k]];
		if (d->pid == op->pid && op->op.module &&
		    (module_within(op->op.module, d->diag.module) ||
		     module_within(d->diag.module, op->op.module)))
			return true;
	}
	return false;
}

/* autocast-never-enabled (info): a PyTorch process ran forward ops that
 * autocast would have run in a lower precision (of its lists: linear,
 * mm...) and none with autocast enabled, in no enabled region: mixed
 * precision was asked for nowhere (nanoGPT's CPU setting, a forgotten
 * context).  A process of a job that ran only other ops made tensors for
 * one that trains (a DataLoader's worker, a Hogwild parent building the
 * shared model): autocast would have changed nothing of its.  Nor is a
 * process that ran such an op in a module whose FSDP policy casts its
 * parameters to f16 or bf16 (the bridge's fsdp-mixed-precision notes):
 * mixed precision without autocast, asked for; a policy on modules
 * that run none of them (an unused head) spares nothing.  Only PyTorch
 * traces: libamp programs without autocast are its own tests. */
void finding_rule_autocast_never_enabled(struct findings_context *cx)
{
	const struct trace *t = cx->t;
	const char *framework = findings_framework(t);
	struct autocast_uses uses = { 0 };
	struct fsdp_lowered lowered = { 0 };

	if (!framework || strncmp(framework, "torch ", 6))
		return;
	if (!collect_fsdp_lowered(t, &lowered)) {
		cx->failed = true;
		free(lowered.events);
		return;
	}
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		struct autocast_use *u;
		if (e->kind != TRACE_OP && e->kind != TRACE_SCOPE_BEGIN &&
		    e->kind != TRACE_AGGREGATE)
			continue;
		if (!(u = use_of(&uses, e->pid))) {
			cx->failed = true;
			break;
		}
		if (e->kind == TRACE_SCOPE_BEGIN)
			u->enabled |= e->scope.enabled;
		else if (e->kind == TRACE_AGGREGATE)
			u->enabled |= aggregate_autocasts(&e->aggregate);
		else if (e->op.autocast->enabled)
			u->enabled = true;
		else if ((!u->forward || (lowered.count && !u->lowered)) &&
			 e->op.phase && !strcmp(e->op.phase, "forward") &&
			 finding_low_precision_op(cx, e->op.op)) {
			if (!u->forward)
				u->first_forward = i;
			u->forward = true;
			u->lowered |= fsdp_lowered_op(t, &lowered, e);
		}
	}
	free(lowered.events);
	for (size_t k = 0; k < uses.count; k++) {
		const struct autocast_use *u = &uses.items[k];
		int64_t pid = uses.pids.items[k];
		if (!u->forward || u->enabled || u->lowered)
			continue;
		struct trace_finding *f = finding_of(cx,
			FINDING_AUTOCAST_NEVER_ENABLED, "", pid,
			u->first_forward);
		if (f)
			finding_text(f->message, sizeof f->message,
				     "autocast was never enabled in process "
				     "%lld: its forward ops ran with no "
				     "enabled autocast region, so each ran in "
				     "its inputs' dtypes (no op was cast to a "
				     "lower precision)", (long long)pid);
	}
	finding_pids_free(&uses.pids);
	free(uses.items);
}

/* backward-under-autocast: a backward op whose autocast.enabled is true,
 * unless the region that set it was entered by the backward pass itself
 * (its thread's last op before it and its first op inside it were
 * backward ops: custom_bwd re-entering the forward's autocast state). */
void finding_rule_backward_under_autocast(struct findings_context *cx,
					  size_t i)
{
	const struct finding_regions *r = &cx->regions;
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	const char *scope = op->autocast->scope ? op->autocast->scope : "";
	char label[128];

	if (!finding_op_is_backward(op) || !op->autocast->enabled)
		return;
	/* the region that set the op's device's autocast state: one the
	 * backward pass entered itself (custom_bwd) is autocast's design */
	for (size_t g = r->at ? r->at[i] : 0; g; g = outer(r, g)) {
		const struct finding_region *region = &r->items[g - 1];
		if (region->device && op->autocast->device &&
		    !strcmp(region->device, op->autocast->device)) {
			if (region->in_backward)
				return;
			break;
		}
	}
	struct trace_finding *f = finding_of(cx, FINDING_BACKWARD_UNDER_AUTOCAST,
					     scope, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	finding_text(f->message, sizeof f->message,
		     "backward op %s (op %llu, thread %lld) ran inside the %s%s%s "
		     "autocast region (%s %s): backward passes under autocast are "
		     "not recommended, backward ops already run in the dtypes "
		     "autocast chose for their forward ops; %s",
		     trace_op_label(op, label, sizeof label),
		     (unsigned long long)op->op_id, (long long)e->tid,
		     scope[0] ? "'" : "", scope[0] ? scope : "unnamed",
		     scope[0] ? "'" : "",
		     op->autocast->device ? op->autocast->device : "?",
		     op->autocast->dtype ? op->autocast->dtype : "?",
		     finding_kinds[FINDING_BACKWARD_UNDER_AUTOCAST].fix);
}

/* autocast-off-in-thread: thread T ran a lower-precision-list op
 * (matmul, linear, conv, ...: the policy table's, see
 * gen_low_precision_ops.c) in the forward with autocast off, while
 * another thread S was inside an enabled region R that was already open
 * when T made its first event, and R handed T its work or took its
 * result: T used a tensor an op of S made inside R (DataParallel's
 * scatter), or S used inside R a tensor an op of T made (the gather), or
 * T runs parameters S ran inside R (the same module, on inputs made
 * before R).
 * The trace records no thread creation; the hand-off is what says T
 * worked for R, so a sibling worker or a thread of its own that merely
 * runs while R is open is not reported. */
void finding_rule_autocast_off_in_thread(struct findings_context *cx,
					 size_t i)
{
	const struct finding_regions *r = &cx->regions;
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128], site[160];

	if (!r->count || finding_op_is_backward(op) || op->autocast->enabled ||
	    !finding_low_precision_op(cx, op->op))
		return;
	size_t first = id_map_get(&r->first, e->pid, (uint64_t)e->tid);
	double born = first == SIZE_MAX ? e->ts : cx->t->events[first].ts;
	for (size_t k = 0; k < r->count; k++) {
		const struct finding_region *g = &r->items[k];
		if (g->pid != e->pid || g->tid == e->tid || !g->enabled ||
		    g->start > born || e->ts < g->start || e->ts > g->end)
			continue;
		size_t how = tied(r, k, e->tid);
		if (!how)
			continue;
		finding_text(site, sizeof site, "%lld:%s", (long long)g->tid,
			     trace_op_label(op, label, sizeof label));
		struct trace_finding *f = finding_of(
			cx, FINDING_AUTOCAST_OFF_IN_THREAD, site, e->pid, i);
		if (!f)
			return;
		f->op_id = op->op_id;
		f->tensor = op->noutputs ? op->outputs[0].id : 0;
		f->other_thread = g->tid;
		finding_text(f->message, sizeof f->message,
			     "thread %lld ran %s (op %llu) with autocast disabled, "
			     "output %s, while thread %lld, which was inside the "
			     "%s%s%s autocast region (%s %s) when thread %lld started "
			     "and %s%s%s, had autocast enabled: autocast state is "
			     "thread-local, so worker threads (DataParallel "
			     "replicas) do not inherit it; enter autocast inside "
			     "the worker's forward",
			     (long long)e->tid, label, (unsigned long long)op->op_id,
			     op->noutputs && op->outputs[0].info->dtype
				     ? op->outputs[0].info->dtype : "?",
			     (long long)g->tid, g->scope ? "'" : "",
			     g->scope ? g->scope : "unnamed", g->scope ? "'" : "",
			     g->device ? g->device : "?", g->dtype ? g->dtype : "?",
			     (long long)e->tid,
			     how & TIE_SCATTER ? "handed it tensors made in the region"
			     : how & TIE_GATHER ? "used its results in the region"
						: "ran in it the same parameters (the same module)",
			     how & TIE_SCATTER && how & TIE_GATHER ? " and " : "",
			     how & TIE_SCATTER && how & TIE_GATHER
				     ? "used its results in the region" : "");
		return;
	}
}
