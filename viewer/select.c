/* Which ops a graph shows (one step, a scope, a phase) and where each of
 * their inputs comes from, reconstructed from tensor ids in file order:
 * an op's event is written when it ends, after its casts and after the
 * ops that produced its inputs, so one pass sees producers first. */
#include "edit_distance.h"
#include "view_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- map */

bool view_map_put(struct view_map *m, int64_t pid, uint64_t id, uint64_t value)
{
	return id_map_put(&m->map, pid, id, (size_t)value);
}

bool view_map_get(const struct view_map *m, int64_t pid, uint64_t id,
		  uint64_t *value)
{
	const size_t *slot = id_map_at(&m->map, pid, id);

	if (slot)
		*value = *slot;
	return slot != NULL;
}

size_t view_map_size(const struct view_map *m)
{
	return m->map.count;
}

void view_map_free(struct view_map *m)
{
	id_map_free(&m->map);
}

/* -------------------------------------------------------------- setup */

const char *view_tensor_name(const struct view_selection *s, int64_t pid,
			     uint64_t tensor)
{
	uint64_t v;

	return view_map_get(&s->names, pid, tensor, &v) ? (const char *)(uintptr_t)v
							: NULL;
}

/* Names appear where the program gave them, which may be after the
 * tensor's first use (a weight is named when autocast first casts it). */
static bool collect_names(struct view_selection *s)
{
	const struct trace *t = s->trace;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_CAST && e->cast.source->name &&
		    !view_map_put(&s->names, e->pid, e->cast.tensor,
				  (uintptr_t)e->cast.source->name))
			return false;
		if (e->kind != TRACE_OP)
			continue;
		const struct trace_tensor *lists[2] = { e->op.inputs,
							e->op.outputs };
		int counts[2] = { e->op.ninputs, e->op.noutputs };
		for (int l = 0; l < 2; l++)
			for (int k = 0; k < counts[l]; k++)
				if (lists[l][k].info->name &&
				    !view_map_put(&s->names, e->pid,
						  lists[l][k].id,
						  (uintptr_t)lists[l][k].info->name))
					return false;
	}
	return true;
}

struct thread_stack {
	int64_t pid, tid;
	int *regions;
	size_t depth, cap;
};

/* Region instances from amp.scope B/E, per thread; region_of[event] is
 * the innermost region open when an op or cast ended. */
static int find_regions(struct view_selection *s, int *region_of)
{
	const struct trace *t = s->trace;
	struct thread_stack *threads = NULL;
	size_t nthreads = 0, cap_regions = 0;
	int status = -1;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		region_of[i] = -1;
		if (e->kind != TRACE_SCOPE_BEGIN && e->kind != TRACE_SCOPE_END &&
		    e->kind != TRACE_OP && e->kind != TRACE_CAST)
			continue;
		struct thread_stack *th = NULL;
		for (size_t k = 0; k < nthreads && !th; k++)
			if (threads[k].pid == e->pid && threads[k].tid == e->tid)
				th = &threads[k];
		if (!th) {
			struct thread_stack *grown =
				realloc(threads, (nthreads + 1) * sizeof *grown);
			if (!grown)
				goto out;
			threads = grown;
			th = &threads[nthreads++];
			*th = (struct thread_stack){ e->pid, e->tid, NULL, 0, 0 };
		}
		if (e->kind == TRACE_SCOPE_END) {
			if (th->depth)
				th->depth--;
			continue;
		}
		if (e->kind != TRACE_SCOPE_BEGIN) {
			region_of[i] = th->depth ? th->regions[th->depth - 1] : -1;
			continue;
		}
		if (s->nregions == cap_regions) {
			cap_regions = cap_regions ? cap_regions * 2 : 16;
			struct view_region *grown = realloc(
				s->regions, cap_regions * sizeof *grown);
			if (!grown)
				goto out;
			s->regions = grown;
		}
		if (th->depth == th->cap) {
			th->cap = th->cap ? th->cap * 2 : 8;
			int *grown = realloc(th->regions,
					     th->cap * sizeof *grown);
			if (!grown)
				goto out;
			th->regions = grown;
		}
		s->regions[s->nregions] = (struct view_region){
			.scope = e->scope.scope,
			.device = e->scope.device,
			.dtype = e->scope.dtype,
			.depth = e->scope.depth,
			.enabled = e->scope.enabled,
			.parent = th->depth ? th->regions[th->depth - 1] : -1,
		};
		th->regions[th->depth++] = (int)s->nregions++;
	}
	status = 0;
out:
	for (size_t k = 0; k < nthreads; k++)
		free(threads[k].regions);
	free(threads);
	return status;
}

static size_t event_index(const struct view_selection *s,
			  const struct trace_event *e)
{
	return e ? (size_t)(e - s->trace->events) : VIEW_NONE;
}

/* ---------------------------------------------------------- choosing */

struct chooser {
	const struct view_options *o;
	int step;
	int group;         /* the rank group shown, or -1: every process */
	bool *composite;   /* per event: an op that ran other ops */
};

/* A step's graph is its training: evaluation windows inside it are not
 * drawn (the whole trace's graph has them). */
static bool op_in_step(const struct view_selection *s, const struct chooser *c,
		       size_t event)
{
	return c->step == VIEW_STEP_ALL ||
	       (s->analysis.step_of[event] == c->step &&
		!s->analysis.evaluating[event]);
}

static bool in_rank(const struct view_selection *s, const struct chooser *c,
		    size_t event)
{
	return c->group < 0 ||
	       trace_ranks_group(&s->analysis.ranks,
				 s->trace->events[event].pid) == c->group;
}

static bool op_in_filters(const struct chooser *c, const struct trace_op *op)
{
	if (c->o->phase && strcmp(op->phase, c->o->phase))
		return false;
	if (c->o->module &&
	    !analysis_in_module_by_part(op->module, c->o->module))
		return false;
	return !c->o->scope || analysis_op_in_scope(op, c->o->scope);
}

const char *const view_phase_names[] = { "forward", "backward", "optimizer",
					 "other", NULL };

bool view_phase_known(const char *phase)
{
	for (int i = 0; view_phase_names[i]; i++)
		if (!strcmp(phase, view_phase_names[i]))
			return true;
	return false;
}

bool view_boxes_optimizer(const struct view_options *o)
{
	return o->fold && !o->phase;
}

size_t view_source_ordinal(const struct view_selection *s,
			   const struct view_source *src)
{
	switch (src->kind) {
	case VIEW_SOURCE_OP:
		return src->index;
	case VIEW_SOURCE_CAST:
		return s->ordinal_of[src->index];
	default:
		return VIEW_NONE;
	}
}

bool view_op_is_factory(const struct trace_op *op)
{
	return !op->incomplete && !op->ninputs && op->noutputs;
}

/* Factory ops (randn, zeros, tensor) are drawn as the tensors they make. */
static bool op_chosen(const struct view_selection *s, const struct chooser *c,
		      size_t event)
{
	const struct trace_op *op = &s->trace->events[event].op;

	return !c->composite[event] && !view_op_is_factory(op) &&
	       in_rank(s, c, event) && op_in_step(s, c, event) &&
	       op_in_filters(c, op);
}

/* A cast goes with its op; a cast whose op never made it into the trace
 * is judged on its own fields. */
static bool cast_chosen(const struct view_selection *s, const struct chooser *c,
			size_t event)
{
	const struct trace_event *e = &s->trace->events[event];
	size_t op = event_index(s, analysis_op(&s->analysis, e->pid,
					       e->cast.op_id));

	if (op != VIEW_NONE && s->trace->events[op].kind == TRACE_OP)
		return op_chosen(s, c, op);
	if (!in_rank(s, c, event) || !op_in_step(s, c, event))
		return false;
	if (c->o->phase && (!e->cast.phase || strcmp(e->cast.phase, c->o->phase)))
		return false;
	if (c->o->module &&
	    !analysis_in_module_by_part(e->cast.module, c->o->module))
		return false;
	return !c->o->scope ||
	       analysis_cast_in_scope(&s->analysis, e, c->o->scope);
}


/* A job's ranks each run the step: a graph shows one rank's processes,
 * the first of several that train unless --rank says another or all. */
static int choose_rank(struct view_selection *s, const struct view_options *o,
		       int *group, struct trace_error *err)
{
	const struct trace_ranks *r = &s->analysis.ranks;
	struct ranks_training training;
	char why[256];

	if (!trace_ranks_training(r, s->trace, s->analysis.evaluating,
				  &training))
		return trace_error_set(err, "%s: out of memory", s->trace->path);
	s->groups_training = training.count;
	*group = -1;
	if (o->rank == VIEW_RANK_ALL ||
	    (o->rank == VIEW_RANK_DEFAULT && s->groups_training < 2))
		return 0;
	if (o->rank == VIEW_RANK_DEFAULT) {
		*group = training.first;
		return 0;
	}
	*group = trace_ranks_group_of_rank(r, o->rank, why, sizeof why);
	if (*group >= 0)
		return 0;
	return trace_error_set(err, "%s: no rank %d: %s", s->trace->path,
			       o->rank, why);
}

static int choose_step(const struct view_selection *s,
		       const struct view_options *o, int *step,
		       struct trace_error *err)
{
	int nsteps = s->analysis.nsteps;

	/* without a training step (a program that only evaluated), step 0
	 * is the whole trace: a step's graph would leave out its
	 * evaluation windows, all there is */
	if (o->step == VIEW_STEP_ALL ||
	    (!nsteps && (o->step == VIEW_STEP_DEFAULT || o->step == 0))) {
		*step = VIEW_STEP_ALL;
		return 0;
	}
	if (o->step == VIEW_STEP_DEFAULT) {
		*step = s->analysis.steps.default_step;
		return 0;
	}
	if (o->step < 0 || (o->step >= nsteps && o->step != 0))
		return trace_error_set(err, "%s: no step %d: the trace has %d "
				       "step%s (0..%d, marked by %s)",
				       s->trace->path, o->step, nsteps,
				       nsteps == 1 ? "" : "s",
				       nsteps ? nsteps - 1 : 0,
				       s->analysis.step_marker);
	if (s->analysis.steps.aggregated[o->step])
		return trace_error_set(err, "%s: step %d was recorded as "
				       "per-step aggregates only (amptrace run "
				       "--steps chooses the steps recorded in "
				       "full detail); the default graph shows "
				       "step %d", s->trace->path, o->step,
				       s->analysis.steps.default_step);
	*step = o->step;
	return 0;
}

/* An unknown --scope is an error that lists the names there are. */
static int check_scope(const struct view_selection *s, const char *scope,
		       struct trace_error *err)
{
	const struct trace *t = s->trace;
	char names[400] = "";
	size_t used = 0;
	struct closest_name closest = CLOSEST_NAME_INIT;

	for (size_t i = 0; i < t->nevents; i++)
		if (t->events[i].kind == TRACE_OP &&
		    analysis_op_in_scope(&t->events[i].op, scope))
			return 0;
	for (size_t r = 0; r < s->nregions; r++) {
		const char *name = s->regions[r].scope;
		bool seen = false;
		for (size_t q = 0; q < r && name && !seen; q++)
			seen = s->regions[q].scope &&
			       !strcmp(s->regions[q].scope, name);
		if (name && !seen)
			closest_name_offer(&closest, scope, name);
		if (!name || seen || used + strlen(name) + 8 >= sizeof names)
			continue;
		used += (size_t)snprintf(names + used, sizeof names - used,
					 "%s'%s'", used ? ", " : "", name);
	}
	return trace_error_set(err, "%s: no op ran in an autocast region named "
			       "'%s'%s%s%s; named regions in this trace: %s",
			       t->path, scope,
			       closest.name ? " (did you mean '" : "",
			       closest.name ? closest.name : "",
			       closest.name ? "'?)" : "",
			       used ? names : "none");
}

/* An unknown --module is an error that suggests the closest path (or
 * one that ends in it: "h.3" for "transformer.h.3") and lists the
 * outermost modules. */
static int check_module(const struct view_selection *s, const char *module,
			struct trace_error *err)
{
	const struct trace *t = s->trace;
	char names[400] = "";
	size_t used = 0, len = strlen(module);
	struct closest_name closest = CLOSEST_NAME_INIT;
	const char *ending = NULL, *last = NULL;

	for (size_t i = 0; i < t->nevents; i++) {
		const char *path = analysis_new_module(
			t->events[i].kind == TRACE_OP ? t->events[i].op.module
						      : NULL, &last);
		if (!path)
			continue;
		if (analysis_in_module_by_part(path, module))
			return 0;
		closest_name_offer(&closest, module, path);
		size_t n = strlen(path);
		if (!ending && n > len && path[n - len - 1] == '.' &&
		    !strcmp(path + n - len, module))
			ending = path;
		size_t top = analysis_module_prefix(path, 1);
		if (!top || used + top + 8 >= sizeof names)
			continue;
		char quoted[80];
		snprintf(quoted, sizeof quoted, "'%.*s'", (int)top, path);
		if (!strstr(names, quoted))
			used += (size_t)snprintf(names + used, sizeof names - used,
						 "%s%s", used ? ", " : "", quoted);
	}
	const char *suggestion = closest.name ? closest.name : ending;
	return trace_error_set(err, "%s: no op ran in a module named '%s'%s%s%s; "
			       "outermost modules in this trace: %s", t->path,
			       module, suggestion ? " (did you mean '" : "",
			       suggestion ? suggestion : "",
			       suggestion ? "'?)" : "",
			       used ? names : "none (no op names its nn.Module)");
}

/* ------------------------------------------------------------ linking */

struct pending_cast {
	size_t event;
	size_t prev;              /* earlier pending cast of the same op */
	struct view_source source;
	bool used;
};

struct linker {
	struct view_selection *s;
	struct view_map producers;  /* (pid, tensor) -> encoded source */
	struct view_map last_cast;  /* (pid, op_id) -> pending index + 1 */
	struct pending_cast *pending;
	size_t npending, cap_pending;
	size_t *casts, *match;      /* scratch for link_op */
	size_t cap_scratch;
};

static uint64_t encode_source(enum view_source_kind kind, size_t index)
{
	return (uint64_t)index << 3 | (uint64_t)kind;
}

static struct view_source lookup(const struct linker *l, int64_t pid,
				 uint64_t tensor)
{
	uint64_t v;

	if (!view_map_get(&l->producers, pid, tensor, &v))
		return (struct view_source){ VIEW_SOURCE_NONE, VIEW_NONE, pid,
					     tensor };
	return (struct view_source){ (enum view_source_kind)(v & 7),
				     (size_t)(v >> 3), pid, tensor };
}

static bool add_input(struct view_selection *s, struct view_input in)
{
	if (s->ninputs == s->cap_inputs) {
		size_t cap = s->cap_inputs ? s->cap_inputs * 2 : 256;
		struct view_input *grown = realloc(s->inputs, cap * sizeof *grown);
		if (!grown)
			return false;
		s->inputs = grown;
		s->cap_inputs = cap;
	}
	s->inputs[s->ninputs++] = in;
	return true;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
	return h;
}

static uint64_t hash_tensor(uint64_t h, const struct trace_tensor *t)
{
	if (!t)
		return mix(h, 1);
	h = mix(h, (uintptr_t)t->info->dtype);
	h = mix(h, (uint64_t)t->info->ndim);
	for (int d = 0; d < t->info->ndim; d++)
		h = mix(h, (uint64_t)t->info->shape[d]);
	return h;
}

/* The fields view_fold_selection compares, hashed (interned strings
 * compare by pointer) so most unequal pairs are rejected at once. */
static uint64_t hash_op(const struct view_selection *s, const struct view_op *v)
{
	const struct trace_op *op = &s->trace->events[v->event].op;
	uint64_t h = 0;
	const void *fields[] = { op->op, op->overload, op->phase, op->policy,
				 op->device, op->autocast->dtype,
				 op->autocast->scope, v->parent, v->forward };

	for (size_t f = 0; f < sizeof fields / sizeof *fields; f++)
		h = mix(h, (uintptr_t)fields[f]);
	h = mix(h, (uint64_t)op->autocast->enabled << 1 | op->incomplete);
	h = mix(h, (uint64_t)op->autocast->depth);
	h = mix(h, (uint64_t)op->noutputs);
	for (int k = 0; k < op->noutputs; k++)
		h = hash_tensor(h, &op->outputs[k]);
	h = mix(h, v->ninputs);
	for (size_t k = 0; k < v->ninputs; k++) {
		const struct view_input *in = &s->inputs[v->first_input + k];
		h = hash_tensor(h, in->tensor);
		if (in->cast != VIEW_NONE) {
			const struct trace_cast *c = &s->trace->events[in->cast].cast;
			h = mix(h, (uintptr_t)c->from);
			h = mix(h, (uintptr_t)c->to);
			h = mix(h, (uintptr_t)c->cache);
			h = mix(h, (uint64_t)c->arg);
		}
	}
	return h;
}

/* Room for one op's casts and match table. */
static bool reserve_scratch(struct linker *l, size_t n)
{
	if (n <= l->cap_scratch)
		return true;
	size_t cap = n < 64 ? 64 : n * 2;
	size_t *casts = realloc(l->casts, cap * sizeof *casts);
	if (casts)
		l->casts = casts;
	size_t *match = realloc(l->match, cap * sizeof *match);
	if (match)
		l->match = match;
	if (!casts || !match)
		return false;
	l->cap_scratch = cap;
	return true;
}

static bool new_op(struct view_selection *s, size_t event)
{
	const struct trace_event *e = &s->trace->events[event];
	const struct trace_op *op = &e->op;

	if (s->nops == s->cap_ops) {
		size_t cap = s->cap_ops ? s->cap_ops * 2 : 256;
		struct view_op *grown = realloc(s->ops, cap * sizeof *grown);
		if (!grown)
			return false;
		s->ops = grown;
		s->cap_ops = cap;
	}
	const struct trace_event *parent =
		op->parent_op_id ? analysis_op(&s->analysis, e->pid,
					       op->parent_op_id) : NULL;
	const struct trace_event *forward =
		op->forward_op_id ? analysis_op(&s->analysis, e->pid,
						op->forward_op_id) : NULL;
	s->ops[s->nops] = (struct view_op){
		.event = event,
		.first_input = s->ninputs,
		.region = -1,
		.parent = parent && parent->kind == TRACE_OP ? parent->op.op : NULL,
		.forward = forward && forward->kind == TRACE_OP ? forward->op.op
								 : NULL,
	};
	s->ordinal_of[event] = s->nops++;
	return true;
}

/* The selected op's input slots: casts matched by (arg, result) first,
 * then by result alone; casts left over (an op that never finished lists
 * no inputs) get slots of their own. */
static bool link_op(struct linker *l, size_t event)
{
	struct view_selection *s = l->s;
	const struct trace_event *e = &s->trace->events[event];
	const struct trace_op *op = &e->op;
	size_t ncasts = 0, ninputs = (size_t)op->ninputs;
	uint64_t v;

	if (!new_op(s, event))
		return false;
	size_t ordinal = s->nops - 1;
	if (view_map_get(&l->last_cast, e->pid, op->op_id, &v) && v) {
		for (size_t p = (size_t)v - 1; p != VIEW_NONE; p = l->pending[p].prev)
			ncasts++;
		view_map_put(&l->last_cast, e->pid, op->op_id, 0);
	}
	if (!reserve_scratch(l, ncasts > ninputs ? ncasts : ninputs))
		return false;
	if (ncasts) {   /* the chain runs backwards: store in file order */
		size_t k = ncasts;
		for (size_t p = (size_t)v - 1; p != VIEW_NONE; p = l->pending[p].prev)
			l->casts[--k] = p;
	}
	for (size_t a = 0; a < ninputs; a++)
		l->match[a] = VIEW_NONE;
	for (int pass = 0; pass < 2; pass++)
		for (size_t a = 0; a < ninputs; a++)
			for (size_t k = 0; k < ncasts && l->match[a] == VIEW_NONE; k++) {
				struct pending_cast *pc = &l->pending[l->casts[k]];
				const struct trace_cast *cast =
					&s->trace->events[pc->event].cast;
				if (pc->used || cast->result != op->inputs[a].id ||
				    (pass == 0 && cast->arg != (int)a))
					continue;
				pc->used = true;
				l->match[a] = l->casts[k];
			}
	for (size_t a = 0; a < ninputs; a++) {
		const struct trace_tensor *in = &op->inputs[a];
		struct view_input slot = { in, VIEW_NONE, lookup(l, e->pid, in->id) };
		if (l->match[a] != VIEW_NONE) {
			const struct pending_cast *pc = &l->pending[l->match[a]];
			slot.cast = pc->event;
			slot.source = pc->source;
			s->ordinal_of[pc->event] = ordinal;
		}
		if (!add_input(s, slot))
			return false;
	}
	for (size_t k = 0; k < ncasts; k++) {
		struct pending_cast *pc = &l->pending[l->casts[k]];
		if (pc->used)
			continue;
		pc->used = true;
		s->ordinal_of[pc->event] = ordinal;
		if (!add_input(s, (struct view_input){ NULL, pc->event,
						       pc->source }))
			return false;
	}
	s->ops[ordinal].ninputs = s->ninputs - s->ops[ordinal].first_input;
	return true;
}

static bool register_outputs(struct linker *l, const struct trace_event *e,
			     enum view_source_kind kind, size_t index)
{
	for (int k = 0; k < e->op.noutputs; k++)
		if (!view_map_put(&l->producers, e->pid, e->op.outputs[k].id,
				  encode_source(kind, index)))
			return false;
	return true;
}

static bool link_cast(struct linker *l, size_t event, bool chosen)
{
	const struct trace_event *e = &l->s->trace->events[event];
	const struct trace_cast *cast = &e->cast;

	if (!chosen)
		return view_map_put(&l->producers, e->pid, cast->result,
				    encode_source(VIEW_SOURCE_OUTSIDE, event));
	if (l->npending == l->cap_pending) {
		size_t cap = l->cap_pending ? l->cap_pending * 2 : 64;
		struct pending_cast *grown = realloc(l->pending,
						     cap * sizeof *grown);
		if (!grown)
			return false;
		l->pending = grown;
		l->cap_pending = cap;
	}
	uint64_t last = 0;
	view_map_get(&l->last_cast, e->pid, cast->op_id, &last);
	l->pending[l->npending] = (struct pending_cast){
		.event = event,
		.prev = last ? (size_t)last - 1 : VIEW_NONE,
		.source = lookup(l, e->pid, cast->tensor),
	};
	l->npending++;
	return view_map_put(&l->last_cast, e->pid, cast->op_id, l->npending) &&
	       view_map_put(&l->producers, e->pid, cast->result,
			    encode_source(VIEW_SOURCE_CAST, event));
}

static int link_all(struct view_selection *s, const struct chooser *c,
		    const int *region_of)
{
	const struct trace *t = s->trace;
	struct linker l = { .s = s };
	int status = -1;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_CAST) {
			if (!link_cast(&l, i, cast_chosen(s, c, i)))
				goto out;
			continue;
		}
		if (e->kind != TRACE_OP || c->composite[i])
			continue;
		if (view_op_is_factory(&e->op)) {
			if (!register_outputs(&l, e, VIEW_SOURCE_OUTSIDE, i))
				goto out;
			continue;
		}
		if (!in_rank(s, c, i)) {
			s->ops_other_ranks++;
		} else if (!op_in_step(s, c, i)) {
			s->ops_other_steps++;
			if (op_in_filters(c, &e->op) &&
			    !s->ops_matching_elsewhere++)
				s->step_matching = s->analysis.step_of[i];
		} else if (!op_in_filters(c, &e->op)) {
			s->ops_filtered++;
		} else {
			if (!link_op(&l, i))
				goto out;
			s->ops[s->nops - 1].region = region_of[i];
			if (!register_outputs(&l, e, VIEW_SOURCE_OP, s->nops - 1))
				goto out;
			continue;
		}
		if (!register_outputs(&l, e, VIEW_SOURCE_OUTSIDE, i))
			goto out;
	}
	for (size_t k = 0; k < s->nops; k++) {
		s->ops[k].hash = hash_op(s, &s->ops[k]);
		s->ops[k].boxed = view_boxes_optimizer(c->o) &&
				  !strcmp(view_op_of(s, k)->phase, "optimizer");
	}
	status = 0;
out:
	view_map_free(&l.producers);
	view_map_free(&l.last_cast);
	free(l.pending);
	free(l.casts);
	free(l.match);
	return status;
}

/* ------------------------------------------------------------- public */

int view_select(const struct trace *trace, const struct view_options *o,
		struct view_selection *s, struct trace_error *err)
{
	struct chooser c = { .o = o };
	int *region_of = NULL;
	int status = -1;
	size_t n = trace->nevents;

	*s = (struct view_selection){ .trace = trace, .step_matching = -1 };
	if (analysis_run(trace, &s->analysis) != 0)
		return trace_error_set(err, "%s: out of memory", trace->path);
	s->analysed = true;
	s->ordinal_of = malloc((n ? n : 1) * sizeof *s->ordinal_of);
	region_of = malloc((n ? n : 1) * sizeof *region_of);
	c.composite = calloc(n ? n : 1, sizeof *c.composite);
	if (!s->ordinal_of || !region_of || !c.composite ||
	    find_regions(s, region_of) != 0 || !collect_names(s)) {
		trace_error_set(err, "%s: out of memory", trace->path);
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const struct trace_event *e = &trace->events[i];
		s->ordinal_of[i] = VIEW_NONE;
		if (e->kind != TRACE_OP || !e->op.parent_op_id)
			continue;
		size_t parent = event_index(s, analysis_op(&s->analysis, e->pid,
							   e->op.parent_op_id));
		if (parent != VIEW_NONE && parent != i)
			c.composite[parent] = true;
	}
	if (o->phase && !view_phase_known(o->phase)) {
		trace_error_set(err, "unknown phase '%s' (forward, backward, "
				"optimizer or other)", o->phase);
		goto out;
	}
	if (o->scope && check_scope(s, o->scope, err) != 0)
		goto out;
	if (o->module && check_module(s, o->module, err) != 0)
		goto out;
	if (choose_step(s, o, &c.step, err) != 0 ||
	    choose_rank(s, o, &c.group, err) != 0)
		goto out;
	s->step = c.step;
	s->group = c.group;
	if (link_all(s, &c, region_of) != 0) {
		trace_error_set(err, "%s: out of memory", trace->path);
		goto out;
	}
	status = 0;
out:
	free(region_of);
	free(c.composite);
	if (status)
		view_selection_free(s);
	return status;
}

void view_selection_free(struct view_selection *s)
{
	if (s->analysed)
		analysis_free(&s->analysis);
	free(s->ops);
	free(s->inputs);
	free(s->regions);
	free(s->ordinal_of);
	view_map_free(&s->names);
	*s = (struct view_selection){ 0 };
}
