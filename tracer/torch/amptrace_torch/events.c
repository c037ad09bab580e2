/* What the observer's calls mean, as libamp events (events.h).
 *
 * Under autocast torch 1.13 runs a listed op as: the outer call with the
 * arguments as given (autocast on), then one `aten::to` per argument it
 * casts (in reverse argument order), then the same op again with the cast
 * arguments (autocast off inside).  So, per thread, a stack of calls:
 *   - an aten call with no op around it (or only autograd nodes) is a
 *     user-level op: one amp.op event, its policy and plan decided by
 *     libamp's policy table (amp_autocast_plan) from its inputs;
 *   - inside an op that autocast wraps, a direct `aten::to` child is a
 *     cast (a miss, uncacheable or disabled: the plan says which), matched
 *     to its argument by tensor identity, not order;
 *   - the direct child with the op's own name is the inner call: every
 *     argument the plan casts but no `aten::to` did arrives as a cached
 *     cast: a cache hit, stale when the source's version counter moved
 *     since the cast was made;
 *   - under functorch's transforms (torch.func: grad, vmap) each layer
 *     dispatches the op again before autocast's kernel runs: a direct
 *     child with the op's own name while autocast is still on is that
 *     re-dispatch, not the inner call, and its children (the casts, the
 *     inner call) are the op's own;
 *   - a listed op under autocast inside an unlisted composite is an op of
 *     its own (parent_op_id), since autocast wraps it too;
 *   - ops inside an autograd node are backward ops, linked to the forward
 *     op through the node's sequence number;
 *   - a custom autograd Function (its apply, a call named after its class,
 *     and its backward node, "<class>Backward") is an op too, whose ops
 *     are ops of their own (parent_op_id): its forward and backward are
 *     Python code; the casts custom_fwd(cast_inputs=) makes of its inputs
 *     (the Python layer says when: events_custom_casts) are its casts,
 *     origin custom_fwd;
 *   - in backward, a `to` that changes a gradient's dtype inside the
 *     backward of a cast (ToCopyBackward0), or that the engine makes after
 *     a node (validate_outputs: a gradient cast to the dtype of the forward
 *     input it flows to), is a cast of that op too, origin autograd;
 *   - anything else nested is the op's implementation and is not shown.
 * The cast cache is per thread in torch 1.13, and so is the record of the
 * casts made (for stale hits), cleared when the region nesting drops to 0. */
#include "events.h"

#include "amp_policy.h"
#include "fallback.h"
#include "gpu.h"
#include "producer.h"
#include "values.h"
#include "window_flow.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FRAMES 512
#define MAX_OPS 16
#define MAX_SCOPES 32
#define MAX_MODULES 128
#define LINK_SLOTS 8192

enum role {
	ROLE_TRANSPARENT, /* not an aten op: its children see its parent */
	ROLE_BACKWARD,    /* an autograd node (or the engine's wrapper) */
	ROLE_OP,          /* an op the trace shows */
	ROLE_CAST,        /* autocast's aten::to inside an op */
	ROLE_INNER,       /* the op run again on the cast arguments */
	ROLE_HIDDEN,      /* an op's implementation */
};

struct op_record {
	uint64_t op_id;
	int module;            /* its module's handle (0: none) */
	uint64_t begin_ns;
	struct obs_op *op;
	/* a backward `to` that is autograd's cast: why (else NULL) */
	const char *gradient_cast;
	bool function;         /* a custom autograd Function's (no plan) */
	struct producer_op event;
	struct amp_plan plan;
	bool autocast_wraps;   /* the plan applies: casts and an inner call */
	bool grad_enabled;
	bool inner_seen;
	bool matched[OBS_MAX_TENSORS];
	/* an argument came from the cache in another region's dtype */
	bool foreign_hit;
	struct obs_args inputs;  /* as called */
	struct obs_args inner;   /* as executed (after casts) */
	/* the pending cast (ROLE_CAST child) */
	int cast_arg;
	uint64_t cast_begin_ns;
	struct values_tensor cast_source; /* its elements (value checks) */
	bool gpu_pushed;       /* its id is the kernels' correlation id */
	int parent_record;     /* the op around it (a composite), or -1 */
	/* a cast of its arguments or an op inside it made the first inf or
	 * NaN (values.c): its own inf is theirs */
	bool inner_origin;
	/* the undecided no_grad regions whose results it reads
	 * (window_flow.h) */
	uint64_t window_slots;
};

struct frame {
	enum role role;
	int record;            /* ROLE_OP: its op_record; else the owner's */
	uint64_t backward_of;  /* ROLE_BACKWARD: the forward op (0 unknown) */
	int backward_module;   /* ROLE_BACKWARD: that op's module (0: none) */
	const struct obs_op *op; /* ROLE_BACKWARD: the node (its name) */
	/* ROLE_OP of a custom autograd Function: its ops are ops of their
	 * own; `backward`: its backward node */
	bool function, backward;
};

struct cache_entry {
	uint64_t result;       /* 0 = empty slot */
	uint64_t source;
	int64_t version;
	size_t bytes;
	bool no_grad;          /* made with grad mode off (and so without
				* grad: torch before 2.11) */
};

struct thread_state {
	struct frame frames[MAX_FRAMES];
	int nframes;
	int dropped;           /* frames beyond MAX_FRAMES */
	struct op_record ops[MAX_OPS];
	int nops;
	enum amp_phase phase;  /* set by the Python layer */
	int depth;             /* autocast nesting, set by the Python layer */
	const char *scopes[MAX_SCOPES];
	int nscopes;
	struct { int64_t seq; uint64_t op_id; int module; } links[LINK_SLOTS];
	/* the modules whose forward runs here, innermost last (handles,
	 * events_module_name); beyond MAX_MODULES only counted */
	int modules[MAX_MODULES];
	int nmodules;
	struct cache_entry *cache;
	size_t cache_slots, cache_used, cache_bytes;
	/* the last op that ended here, when it failed: its exception may
	 * still reach the thread's top level (events_op_exception) */
	uint64_t failed_op_id;
	char failed_op[128]; /* longer than a step's op row keeps (95) */
	bool inference_mode;   /* set by the Python layer */
	/* activation checkpointing is unwinding a recompute it stopped
	 * (events_recompute_stopped): until the recompute's context exits,
	 * an op begins or one ends without failing */
	bool recompute_stopping;
	bool paused;           /* events_pause */
	bool custom_casts;     /* inside custom_fwd's casts (Python layer) */
	/* torch.compile (compiled.c): while a graph is compiled its ops
	 * run on fake tensors and are none of the program's; the op of the
	 * compiled call running here, the parent of the ops it runs */
	bool ignoring;
	uint64_t compiled_parent;
};

static __thread struct thread_state *state;
static _Atomic uint64_t next_op_id = 1;
static pthread_key_t state_key;
static pthread_once_t state_key_once = PTHREAD_ONCE_INIT;

/* Threads come and go (pools, DataLoader): their state goes with them. */
static void state_free(void *p)
{
	struct thread_state *s = p;

	free(s->cache);
	free(s);
	state = NULL;
}

static void state_key_create(void)
{
	pthread_key_create(&state_key, state_free);
}

static struct thread_state *thread_state(void)
{
	if (__builtin_expect(!state, 0)) {
		state = calloc(1, sizeof *state);
		if (!state)
			abort();
		pthread_once(&state_key_once, state_key_create);
		pthread_setspecific(state_key, state);
	}
	return state;
}

/* -------------------------------------------------------- cast records */

static struct cache_entry *cache_find(struct thread_state *s, uint64_t result,
				      bool insert)
{
	if (insert && (s->cache_used + 1) * 2 > s->cache_slots) {
		size_t slots = s->cache_slots ? s->cache_slots * 2 : 64;
		struct cache_entry *old = s->cache, *grown =
			calloc(slots, sizeof *grown);
		if (!grown)
			return NULL;
		size_t old_slots = s->cache_slots;
		s->cache = grown;
		s->cache_slots = slots;
		s->cache_used = 0;
		for (size_t i = 0; i < old_slots; i++)
			if (old[i].result) {
				*cache_find(s, old[i].result, true) = old[i];
				s->cache_used++;
			}
		free(old);
	}
	if (!s->cache_slots)
		return NULL;
	size_t mask = s->cache_slots - 1;
	for (size_t i = (result * 0x9e3779b97f4a7c15ull) >> 7 & mask;;
	     i = (i + 1) & mask) {
		if (s->cache[i].result == result)
			return &s->cache[i];
		if (!s->cache[i].result)
			return insert ? &s->cache[i] : NULL;
	}
}

/* Copies the described tensors only: the whole struct is ~8 KiB, most
 * ops have a few tensors. */
static void args_copy(struct obs_args *dst, const struct obs_args *src)
{
	int n = src->ntensors;

	dst->ntensors = n;
	dst->dtype_arg = src->dtype_arg;
	memcpy(dst->tensors, src->tensors, (size_t)n * sizeof *src->tensors);
	memcpy(dst->versions, src->versions, (size_t)n * sizeof *src->versions);
	memcpy(dst->optional, src->optional, (size_t)n * sizeof *src->optional);
	memcpy(dst->data, src->data, (size_t)n * sizeof *src->data);
	memcpy(dst->numel, src->numel, (size_t)n * sizeof *src->numel);
	memcpy(dst->dense, src->dense, (size_t)n * sizeof *src->dense);
	memcpy(dst->strides, src->strides, (size_t)n * sizeof *src->strides);
}

/* ------------------------------------------------------------ emitting */

static void emit(struct producer_event *e)
{
	e->thread = amp_thread_number();
	if (!e->time_ns)
		e->time_ns = amp_now_ns();
	producer_emit(e);
}

static void link_forward(struct thread_state *s, int64_t seq, uint64_t op_id,
			 int module)
{
	if (seq < 0 || s->phase != AMP_PHASE_FORWARD)
		return;
	s->links[seq % LINK_SLOTS].seq = seq;
	s->links[seq % LINK_SLOTS].op_id = op_id;
	s->links[seq % LINK_SLOTS].module = module;
}

/* The forward op of autograd sequence number seq, and its module. */
static uint64_t forward_of(struct thread_state *s, int64_t seq, int *module)
{
	*module = 0;
	if (seq < 0 || s->links[seq % LINK_SLOTS].seq != seq)
		return 0;
	*module = s->links[seq % LINK_SLOTS].module;
	return s->links[seq % LINK_SLOTS].op_id;
}

/* The op's plan, from the policy table of the torch version in use. */
static const struct amp_policy_row *policy_row(struct obs_op *op,
					       enum amp_device_type device)
{
	if (!op->policy_ready) {
		for (int d = 0; d < AMP_DEVICE_TYPE_COUNT; d++)
			op->policy_row[d] = events_policy_lookup(
				(enum amp_device_type)d, op->op, op->overload);
		op->policy_ready = true;
	}
	return op->policy_row[device];
}

static void plan_op(struct op_record *r, const struct obs_autocast *ac)
{
	struct amp_plan_arg args[OBS_MAX_TENSORS];
	enum amp_device_type device = AMP_DEVICE_CPU;
	int n = r->inputs.ntensors;

	for (int i = 0; i < n; i++) {
		const struct producer_tensor *t = &r->inputs.tensors[i];
		if (t->id && t->device == AMP_DEVICE_CUDA) {
			device = AMP_DEVICE_CUDA;
			break;
		}
	}
	for (int i = 0; i < n; i++) {
		const struct producer_tensor *t = &r->inputs.tensors[i];
		args[i] = (struct amp_plan_arg){
			.defined = t->id != 0, .optional = r->inputs.optional[i],
			.dtype = (enum amp_dtype)t->dtype,
			.device = (enum amp_device_type)t->device,
			.requires_grad = t->flags & PRODUCER_TENSOR_REQUIRES_GRAD,
			.is_leaf = t->flags & PRODUCER_TENSOR_LEAF,
			.is_view = t->flags & PRODUCER_TENSOR_VIEW,
		};
	}
	const struct amp_policy_row *row = policy_row(r->op, device);
	/* amp_autocast_plan fills the header and casts[0, nargs); without it
	 * the header alone says "no plan" (the ~2 KiB of casts are never read
	 * past nargs). */
	r->plan.policy = AMP_POLICY_NONE;
	r->plan.target = AMP_DTYPE_NONE;
	r->plan.dtype_arg = AMP_DTYPE_NONE;
	r->plan.nargs = 0;
	r->plan.status = AMP_OK;
	r->plan.error = NULL;
	if (ac->enabled[device] && row)
		amp_autocast_plan(events_policy_version(), row, device, ac->dtype[device],
				  ac->cache_enabled, n, args,
				  r->inputs.dtype_arg, &r->plan);
	r->autocast_wraps = ac->enabled[device] && row &&
			    r->plan.status == AMP_OK;
	r->grad_enabled = ac->grad_enabled;
	r->event.policy = (uint8_t)r->plan.policy;
	r->event.device = (uint8_t)device;
	r->event.autocast = (struct producer_autocast){
		.enabled = ac->enabled[device], .device = (uint8_t)device,
		.dtype = (uint8_t)ac->dtype[device],
		.cache_enabled = ac->cache_enabled,
	};
}

static void emit_cast(struct thread_state *s, struct op_record *r, int arg,
		      const struct producer_tensor *result,
		      enum amp_cache_result cache, const char *reason,
		      bool stale, uint64_t begin_ns, const char *origin)
{
	struct producer_event e = { .kind = PRODUCER_CAST };
	const struct producer_tensor *source = &r->inputs.tensors[arg];
	size_t numel = 1;

	for (int d = 0; d < result->ndim; d++)
		numel *= (size_t)result->shape[d];
	e.cast = (struct producer_cast){
		.op_id = r->op_id, .arg = arg, .source = *source,
		.result = *result, .from = source->dtype, .to = result->dtype,
		.cache = (uint8_t)cache, .reason = reason, .stale = stale,
		.bytes = cache == AMP_CACHE_HIT
				 ? 0
				 : numel * amp_dtype_size((enum amp_dtype)
								  result->dtype),
		.begin_ns = begin_ns,
		.module = r->event.module, .module_class = r->event.module_class,
		.origin = origin,
	};
	/* Recorded before the event, which carries the cache's size after
	 * the miss (the counter FORMAT.md §3.5 promises after each). */
	if (cache == AMP_CACHE_MISS) {
		struct cache_entry *c = cache_find(s, result->id, true);
		if (c) {
			if (!c->result)
				s->cache_used++;
			*c = (struct cache_entry){ result->id, source->id,
						   r->inputs.versions[arg],
						   e.cast.bytes,
						   !r->grad_enabled &&
						   !events_cache_keeps_grad() };
			s->cache_bytes += e.cast.bytes;
		}
		e.cast.cache_counted = true;
		e.cast.cache_entries = s->cache_used;
		e.cast.cache_bytes = s->cache_bytes;
	}
	emit(&e);
}

/* The region that made it may be an enclosing one or a sibling that has
 * exited: the cache outlives every region but the outermost. */
#define FOREIGN_HIT "cached cast reused in the dtype an earlier region " \
	"within the same outermost region made it in (an enclosing one, or " \
	"one that has exited), not this region's: torch keys its cast cache " \
	"by the source tensor alone and clears it only when the outermost " \
	"region exits"

/* The inner call's arguments: every cast the plan asks for that no
 * aten::to made came out of the cache. */
static void emit_hits(struct thread_state *s, struct op_record *r)
{
	int n = r->inner.ntensors < r->inputs.ntensors ? r->inner.ntensors
							 : r->inputs.ntensors;
	for (int i = 0; i < n; i++) {
		const struct amp_plan_cast *pc = &r->plan.casts[i];
		const struct producer_tensor *got = &r->inner.tensors[i];
		/* Only a cacheable cast can come from the cache; a planned
		 * cast torch did not make (its table differs from ours) is
		 * no cast at all. */
		if (i >= r->plan.nargs || !pc->cast || r->matched[i] ||
		    pc->cache_if_cast != AMP_CACHE_MISS ||
		    got->id == r->inputs.tensors[i].id)
			continue;
		const struct cache_entry *c = cache_find(s, got->id, false);
		bool ours = c && c->source == r->inputs.tensors[i].id;
		/* torch's cache is keyed by the source tensor alone and kept
		 * until the outermost region exits: a region of another dtype
		 * nested in the one that made the cast, or entered after it
		 * exited, gets it in the dtype it was made in */
		bool foreign = got->dtype != pc->to;
		if (foreign && !ours)
			continue;
		bool stale = ours && c->version != r->inputs.versions[i];
		/* torch before 2.11 caches a cast made under no_grad and
		 * hands it out with grad on: the op's output then has no
		 * grad. */
		bool gradless = ours && c->no_grad && r->grad_enabled;
		emit_cast(s, r, i, got, AMP_CACHE_HIT,
			  stale ? "cached cast of a tensor modified since (stale)"
			  : foreign ? FOREIGN_HIT
			  : gradless ? "cached cast made under no_grad reused "
				       "with grad on: it does not require grad"
				     : "cached cast reused",
			  stale, amp_now_ns(), NULL);
		r->matched[i] = true;
		r->foreign_hit |= foreign;
	}
}

/* ----------------------------------------- custom autograd Functions */

/* The class names of the program's custom autograd Functions, as the
 * Python layer makes them known (events_custom_function): an apply is a
 * call of that name, its backward node "<name>Backward".  Read once per
 * name and thread (obs_op keeps the answer). */
static pthread_mutex_t functions_lock = PTHREAD_MUTEX_INITIALIZER;
static char **function_names;
static size_t nfunction_names;

static bool is_custom_function(const char *name, size_t length)
{
	bool found = false;

	pthread_mutex_lock(&functions_lock);
	for (size_t i = 0; i < nfunction_names && !found; i++)
		found = strlen(function_names[i]) == length &&
			!strncmp(function_names[i], name, length);
	pthread_mutex_unlock(&functions_lock);
	return found;
}

void events_custom_function(const char *name)
{
	if (is_custom_function(name, strlen(name)))
		return;
	pthread_mutex_lock(&functions_lock);
	char **grown = realloc(function_names,
			       (nfunction_names + 1) * sizeof *grown);
	char *copy = strdup(name);
	if (grown)
		function_names = grown;
	if (grown && copy)
		function_names[nfunction_names++] = copy;
	else
		free(copy);
	pthread_mutex_unlock(&functions_lock);
}

static void classify(struct obs_op *op)
{
	static const char backward[] = "Backward";
	size_t n = strlen(op->op), suffix = sizeof backward - 1;

	op->conversion = op->aten && (!strcmp(op->op, "to") ||
				      !strcmp(op->op, "_to_copy"));
	op->custom_function = !op->aten && !op->backward_node &&
			      is_custom_function(op->op, n);
	op->custom_backward = op->backward_node && n > suffix &&
			      !strcmp(op->op + n - suffix, backward) &&
			      is_custom_function(op->op, n - suffix);
	op->kind_ready = true;
}

/* --------------------------------------------------------- the modules */

/* Module names by handle (events_module_name), in chunks that never
 * move: ops on any thread read them while another thread adds one. */
#define MODULE_CHUNK 1024
#define MODULE_CHUNKS 1024
struct module_name {
	char *path, *class_name;
};
static struct module_name *module_chunks[MODULE_CHUNKS];
static _Atomic int module_count;
static pthread_mutex_t module_lock = PTHREAD_MUTEX_INITIALIZER;

int events_module_name(const char *path, const char *class_name)
{
	pthread_mutex_lock(&module_lock);
	int n = atomic_load(&module_count);
	struct module_name **chunk = &module_chunks[n / MODULE_CHUNK];
	if (n >= MODULE_CHUNK * MODULE_CHUNKS ||
	    (!*chunk && !(*chunk = calloc(MODULE_CHUNK, sizeof **chunk)))) {
		pthread_mutex_unlock(&module_lock);
		return 0;
	}
	struct module_name *name = &(*chunk)[n % MODULE_CHUNK];
	name->path = strdup(path);
	name->class_name = strdup(class_name);
	atomic_store(&module_count, n + 1);
	pthread_mutex_unlock(&module_lock);
	return name->path && name->class_name ? n + 1 : 0;
}

/* Handle `module`'s names, or NULLs for 0 (none). */
static void module_names(int module, const char **path,
			 const char **class_name)
{
	*path = *class_name = NULL;
	if (module <= 0 || module > atomic_load(&module_count))
		return;
	const struct module_name *name =
		&module_chunks[(module - 1) / MODULE_CHUNK][(module - 1) % MODULE_CHUNK];
	*path = name->path;
	*class_name = name->class_name;
}

void events_module_enter(int module)
{
	struct thread_state *s = thread_state();

	/* a module entered again: its earlier forward raised (no hook
	 * popped it) */
	for (int i = s->nmodules < MAX_MODULES ? s->nmodules : MAX_MODULES;
	     i-- > 0;)
		if (s->modules[i] == module) {
			s->nmodules = i;
			break;
		}
	if (s->nmodules < MAX_MODULES)
		s->modules[s->nmodules] = module;
	s->nmodules++;
}

void events_module_exit(int module)
{
	struct thread_state *s = thread_state();

	if (s->nmodules > MAX_MODULES) {
		s->nmodules--;
		return;
	}
	/* down to it: modules inside it whose forward raised go too */
	for (int i = s->nmodules; i-- > 0;)
		if (s->modules[i] == module) {
			s->nmodules = i;
			return;
		}
}

int events_module_depth(void)
{
	return thread_state()->nmodules;
}

/* The module an op beginning now runs in: the innermost whose forward
 * runs on the thread; in backward (no forward running), the forward
 * op's (`backward_module`). */
static int current_module(const struct thread_state *s, int backward_module)
{
	if (!s->nmodules)
		return backward_module;
	return s->modules[(s->nmodules < MAX_MODULES ? s->nmodules
						      : MAX_MODULES) - 1];
}

/* ----------------------------------------------------------- the stack */

static int owner_of(struct thread_state *s)
{
	for (int i = s->nframes - 1; i >= 0; i--) {
		enum role role = s->frames[i].role;
		/* inside a node or a custom Function, ops are ops of their
		 * own */
		if (role == ROLE_BACKWARD || s->frames[i].function)
			return -1;
		if (role != ROLE_TRANSPARENT)
			return s->frames[i].record;
	}
	return -1;
}

static bool backward_frame(const struct frame *f)
{
	return f->role == ROLE_BACKWARD || f->backward;
}

static uint64_t backward_link(struct thread_state *s, int *module)
{
	*module = 0;
	for (int i = s->nframes - 1; i >= 0; i--)
		if (backward_frame(&s->frames[i])) {
			*module = s->frames[i].backward_module;
			return s->frames[i].backward_of;
		}
	return 0;
}

static bool in_backward(struct thread_state *s)
{
	for (int i = s->nframes - 1; i >= 0; i--)
		if (backward_frame(&s->frames[i]))
			return true;
	return false;
}

static const struct frame *parent_frame(struct thread_state *s)
{
	for (int i = s->nframes - 1; i >= 0; i--)
		if (s->frames[i].role != ROLE_TRANSPARENT)
			return &s->frames[i];
	return NULL;
}

/* The record of the custom Function an op with no owner runs in, or -1. */
static int enclosing_function_record(struct thread_state *s)
{
	for (int i = s->nframes - 1; i >= 0; i--)
		if (s->frames[i].role == ROLE_OP)
			return s->frames[i].function ? s->frames[i].record : -1;
	return -1;
}

/* The custom Function an op with no owner runs in (its parent_op_id). */
static uint64_t enclosing_function(struct thread_state *s)
{
	int record = enclosing_function_record(s);

	return record >= 0 ? s->ops[record].op_id : 0;
}

/* The parent of an op no op of this thread owns: the custom Function
 * around it, else the compiled call running it (0: none). */
static uint64_t enclosing_op(struct thread_state *s)
{
	uint64_t function = enclosing_function(s);

	return function ? function : s->compiled_parent;
}

/* Why `op`, a `to` run by autograd in backward with no op around it, is
 * a cast of autograd's (NULL: it is not; a custom Function's backward is
 * the program's code): torch's engine runs a node, then casts each
 * gradient it made to the dtype of the forward input it flows to
 * (validate_outputs: grad.to(dtype), inside the engine's
 * evaluate_function, after the node); the node of a cast
 * (ToCopyBackward0) casts the gradient back to the cast's source dtype
 * (grad.to(options): to.dtype_layout).  The pure-Python fallback sees no
 * node end (a node ends where the next begins): there the overload tells
 * the two apart. */
static const char *gradient_cast(struct thread_state *s,
				 const struct obs_op *op)
{
	static const char *const of_cast = "the gradient of a cast goes back "
					   "to the cast's source dtype "
					   "(ToCopyBackward0)";
	static const char *const of_engine = "autograd casts a gradient to "
					     "the dtype of the forward input "
					     "it flows to (validate_outputs)";
	bool guessed = fallback_active();

	for (int i = s->nframes - 1; i >= 0; i--) {
		const struct frame *f = &s->frames[i];
		if (f->function)
			return NULL;
		if (f->role != ROLE_BACKWARD)
			continue;
		const char *node = f->op ? f->op->op : "";
		if (guessed && !strcmp(op->overload, "dtype"))
			return of_engine;
		if (!strncmp(node, "ToCopyBackward", 14) &&
		    (!guessed || !strcmp(op->overload, "dtype_layout")))
			return of_cast;
		if (!strncmp(node, "autograd::engine::evaluate_function", 35))
			return of_engine;
		return NULL;
	}
	return NULL;
}

static unsigned push(struct thread_state *s, enum role role, int record,
		     unsigned want)
{
	s->frames[s->nframes++] = (struct frame){ .role = role,
						  .record = record };
	return want;
}

/* An op of the trace begins: its record and frame. */
static unsigned open_op(struct thread_state *s, struct obs_op *op,
			int64_t seq_nr, int owner)
{
	struct op_record *r = &s->ops[s->nops];
	uint64_t op_id = atomic_fetch_add(&next_op_id, 1);
	int backward_module;
	uint64_t forward_op_id = backward_link(s, &backward_module);
	r->op_id = op_id;
	r->module = current_module(s, backward_module);
	r->op = op;
	r->begin_ns = amp_now_ns();
	r->inner_seen = false;
	r->gpu_pushed = false;
	r->autocast_wraps = false;
	r->function = false;
	r->inner.ntensors = 0;
	r->parent_record = owner >= 0 ? owner : enclosing_function_record(s);
	r->inner_origin = false;
	r->event = (struct producer_op){
		.op_id = op_id,
		.parent_op_id = owner >= 0 ? s->ops[owner].op_id
					   : enclosing_op(s),
		.op = op->op, .overload = op->overload,
		.phase = (uint8_t)(in_backward(s) ? AMP_PHASE_BACKWARD
						  : s->phase),
		.forward_op_id = forward_op_id,
	};
	module_names(r->module, &r->event.module, &r->event.module_class);
	r->gradient_cast = op->conversion && owner < 0 &&
				   r->event.phase == AMP_PHASE_BACKWARD
			   ? gradient_cast(s, op) : NULL;
	link_forward(s, seq_nr, op_id, r->module);
	unsigned want = OBS_WANT_INPUTS | OBS_WANT_OUTPUTS;
	if (r->event.phase == AMP_PHASE_BACKWARD)
		want |= OBS_IN_BACKWARD;
	/* the optimizer's ops run in f32 on f32 master weights */
	if (values_enabled() && r->event.phase != AMP_PHASE_OPTIMIZER)
		want |= OBS_WANT_VALUES;
	return push(s, ROLE_OP, s->nops++, want);
}

/* A custom autograd Function's apply, or its backward node (`backward`,
 * linked to the apply's op, whose module is `module`): an op whose ops
 * are ops of their own. */
static unsigned open_function(struct thread_state *s, struct obs_op *op,
			      int64_t seq_nr, bool backward, uint64_t link,
			      int module)
{
	unsigned want = open_op(s, op, backward ? -1 : seq_nr, -1);
	struct frame *f = &s->frames[s->nframes - 1];
	struct op_record *r = &s->ops[f->record];

	f->function = true;
	r->function = true;
	if (backward) {
		f->backward = true;
		f->backward_of = link;
		f->backward_module = module;
		r->event.phase = AMP_PHASE_BACKWARD;
		r->event.forward_op_id = link;
		r->module = current_module(s, module);
		module_names(r->module, &r->event.module,
			     &r->event.module_class);
		want |= OBS_IN_BACKWARD;
	}
	return want;
}

/* `autocast_any`: whether autocast is on for any device on this thread, or
 * -1 when the caller has not read it: `ask` reads it then, only for a
 * listed op nested in another (most nested calls are neither, and reading
 * torch's thread-local state costs on every call). */
static unsigned begin(struct obs_op *op, bool scope_backward, int64_t seq_nr,
		      int autocast_any, bool (*ask)(void))
{
	struct thread_state *s = thread_state();

	s->recompute_stopping = false;  /* its exception was caught */
	if (s->nframes >= MAX_FRAMES) {
		s->dropped++;
		return OBS_WANT_NOTHING;
	}
	if (s->ignoring)
		return push(s, ROLE_HIDDEN, -1, OBS_WANT_NOTHING);
	if (s->paused)
		return push(s, ROLE_TRANSPARENT, -1, OBS_WANT_NOTHING);
	if (!op->kind_ready)
		classify(op);
	if (op->backward_node) {
		int module;
		uint64_t link = seq_nr >= 0 ? forward_of(s, seq_nr, &module)
					    : backward_link(s, &module);
		/* The engine's wrapper around a node learns the link from the
		 * node, for the ops it runs after it (sum_to, view). */
		if (scope_backward && s->nframes &&
		    s->frames[s->nframes - 1].role == ROLE_BACKWARD) {
			s->frames[s->nframes - 1].backward_of = link;
			s->frames[s->nframes - 1].backward_module = module;
		}
		if (op->custom_backward && s->nops < MAX_OPS)
			return open_function(s, op, seq_nr, true, link, module);
		push(s, ROLE_BACKWARD, -1, 0);
		s->frames[s->nframes - 1].backward_of = link;
		s->frames[s->nframes - 1].backward_module = module;
		s->frames[s->nframes - 1].op = op;
		return OBS_WANT_NOTHING;
	}
	if (!op->aten) {
		if (op->custom_function && s->nops < MAX_OPS)
			return open_function(s, op, seq_nr, false, 0, 0);
		return push(s, ROLE_TRANSPARENT, -1, OBS_WANT_NOTHING);
	}

	int owner = owner_of(s);
	const struct frame *parent = parent_frame(s);
	if (owner >= 0) {
		struct op_record *r = &s->ops[owner];
		link_forward(s, seq_nr, r->op_id, r->module);
		bool direct = parent && parent->role == ROLE_OP &&
			      parent->record == owner;
		if (direct && r->autocast_wraps) {
			if (!strcmp(op->op, "to"))
				return push(s, ROLE_CAST, owner,
					    OBS_WANT_INPUTS | OBS_WANT_OUTPUTS |
						    (values_enabled()
							     ? OBS_WANT_VALUES
							     : 0));
			if (!r->inner_seen && !strcmp(op->op, r->op->op) &&
			    !strcmp(op->overload, r->op->overload))
				return push(s, ROLE_INNER, owner,
					    OBS_WANT_INPUTS);
		}
		/* Autocast is off inside a wrapped op; elsewhere a listed op
		 * under autocast is wrapped in its turn. */
		bool listed = (policy_row(op, AMP_DEVICE_CPU) ||
			       policy_row(op, AMP_DEVICE_CUDA)) &&
			      (autocast_any < 0 ? ask() : autocast_any);
		if (!listed || s->nops >= MAX_OPS)
			return push(s, ROLE_HIDDEN, owner, OBS_WANT_NOTHING);
	} else if (s->nops >= MAX_OPS) {
		return push(s, ROLE_HIDDEN, -1, OBS_WANT_NOTHING);
	} else if (s->custom_casts && !strcmp(op->op, "to") && parent &&
		   parent->function && !parent->backward) {
		/* custom_fwd's cast of the Function's input */
		return push(s, ROLE_CAST, parent->record,
			    OBS_WANT_INPUTS | OBS_WANT_OUTPUTS |
				    (values_enabled() ? OBS_WANT_VALUES : 0));
	}
	return open_op(s, op, seq_nr, owner);
}

/* A top-level op outside backward and the optimizer is the forward
 * pass's when autograd records it (grad on, an input that requires
 * grad) or it runs in an autocast region; anything else (initialising
 * weights, loading data, zeroing gradients, reading a loss) is "other". */
static uint8_t phase_of(const struct thread_state *s,
			const struct op_record *r,
			const struct obs_autocast *autocast)
{
	if (r->event.phase != AMP_PHASE_FORWARD || r->event.parent_op_id ||
	    s->depth > 0)
		return r->event.phase;
	for (int i = 0; autocast->grad_enabled && i < r->inputs.ntensors; i++)
		if (r->inputs.tensors[i].flags &
		    PRODUCER_TENSOR_REQUIRES_GRAD)
			return AMP_PHASE_FORWARD;
	return PRODUCER_PHASE_OTHER;
}

unsigned events_begin(struct obs_op *op, bool scope_backward, int64_t seq_nr,
		      bool autocast_any)
{
	return begin(op, scope_backward, seq_nr, autocast_any, NULL);
}

unsigned events_begin_asking(struct obs_op *op, bool scope_backward,
			     int64_t seq_nr, bool (*autocast_any)(void))
{
	return begin(op, scope_backward, seq_nr, -1, autocast_any);
}

/* Whether a call taken for `r`'s inner call (its own name, a direct
 * child) is the op dispatched again instead: functorch's transforms
 * (grad, vmap) re-dispatch every op from their DynamicLayer before
 * autocast's kernel runs, so its casts and inner call come one call
 * deeper.  The inner call runs with autocast's key excluded; the
 * re-dispatch still has autocast on, and its children are then `r`'s. */
static bool redispatched(const struct op_record *r,
			 const struct obs_autocast *autocast)
{
	return autocast->enabled[r->event.device];
}

void events_begin_args(const struct obs_args *inputs,
		       const struct obs_autocast *autocast)
{
	struct thread_state *s = state;
	struct frame *f = &s->frames[s->nframes - 1];
	struct op_record *r = &s->ops[f->record];

	switch (f->role) {
	case ROLE_OP: {
		args_copy(&r->inputs, inputs);
		r->window_slots = window_flow_followed()
			? window_flow_inputs(inputs, autocast->grad_enabled)
			: 0;
		memset(r->matched, 0, sizeof r->matched);
		r->foreign_hit = false;
		plan_op(r, autocast);
		r->event.phase = phase_of(s, r, autocast);
		r->event.autocast.depth = s->depth;
		r->event.autocast.scope = s->nscopes ? s->scopes[s->nscopes - 1]
						     : NULL;
		r->event.ninputs = inputs->ntensors;
		r->event.inputs = r->inputs.tensors;
		struct producer_event e = { .kind = PRODUCER_OP_BEGIN,
					    .time_ns = r->begin_ns,
					    .op = r->event };
		emit(&e);
		if (r->event.device == AMP_DEVICE_CUDA)
			gpu_cuda_op(e.thread, e.time_ns);
		r->gpu_pushed = gpu_push(r->event.op_id);
		break;
	}
	case ROLE_CAST: {
		/* aten::to(self, ...): match self to an argument the plan casts
		 * and that is still waiting for its cast. */
		r->cast_arg = -1;
		r->cast_begin_ns = amp_now_ns();
		if (inputs->ntensors < 1)
			break;
		/* a custom Function has no plan: custom_fwd casts each
		 * floating-point input */
		int planned = r->function ? r->inputs.ntensors : r->plan.nargs;
		for (int i = 0; i < r->inputs.ntensors && i < planned; i++)
			if ((r->function || r->plan.casts[i].cast) &&
			    !r->matched[i] &&
			    r->inputs.tensors[i].id == inputs->tensors[0].id) {
				r->cast_arg = i;
				break;
			}
		values_tensor_of(inputs, 0, &r->cast_source);
		break;
	}
	case ROLE_INNER:
		if (redispatched(r, autocast)) {
			f->role = ROLE_TRANSPARENT;
			break;
		}
		args_copy(&r->inner, inputs);
		r->inner_seen = true;
		emit_hits(s, r);
		break;
	default:
		break;
	}
}

/* TorchScript applies a scripted function's autocast as explicit ops
 * (no region, no cache): each tensor they change is a cast. */
static void emit_script_casts(struct thread_state *s, struct op_record *r,
			      const struct obs_args *outputs)
{
	int n = outputs->ntensors < r->inputs.ntensors ? outputs->ntensors
						       : r->inputs.ntensors;
	for (int i = 0; i < n; i++)
		if (outputs->tensors[i].id &&
		    outputs->tensors[i].id != r->inputs.tensors[i].id)
			emit_cast(s, r, i, &outputs->tensors[i],
				  AMP_CACHE_UNCACHEABLE,
				  "cast by TorchScript's autocast (never cached)",
				  false, r->begin_ns, NULL);
}

/* The defined tensors of `args`, in order, into `out` (absent optional
 * tensors are no tensor of the trace). */
static int defined_tensors(const struct obs_args *args,
			   struct producer_tensor *out)
{
	int n = 0;

	for (int i = 0; i < args->ntensors; i++)
		if (args->tensors[i].id)
			out[n++] = args->tensors[i];
	return n;
}

/* ------------------------------------------------------- value checks */

static struct values_op values_op_of(const struct op_record *r)
{
	return (struct values_op){
		.op_id = r->op_id, .op = r->op->op, .overload = r->op->overload,
		.module = r->event.module, .phase = r->event.phase, .forward_op_id = r->event.forward_op_id,
		.arguments = &r->inputs,
	};
}

static bool is_cast_op(const struct obs_op *op)
{
	return !strcmp(op->op, "to") || !strcmp(op->op, "_to_copy");
}

/* The ops autocast touched (run with autocast on for their device) and
 * backward's: their low-precision results; the program's own casts
 * (x.half(), model.half()) in the forward: the cast's source.  An origin
 * found inside an op is its composite's too. */
static void check_values(struct thread_state *s, struct op_record *r,
			 const struct obs_args *outputs)
{
	struct values_op op = values_op_of(r);
	bool origin;

	if (r->event.phase == AMP_PHASE_FORWARD && is_cast_op(r->op) &&
	    r->inputs.ntensors && outputs->ntensors) {
		struct values_tensor source;
		values_tensor_of(&r->inputs, 0, &source);
		origin = values_check_cast(&op, &source, &outputs->tensors[0]);
	}
	else if (r->event.phase == AMP_PHASE_BACKWARD ||
		 r->event.autocast.enabled)
		origin = values_check_results(&op, outputs, r->inner_origin);
	else
		return;
	if (origin && r->parent_record >= 0)
		s->ops[r->parent_record].inner_origin = true;
}

static void end_op(struct thread_state *s, struct op_record *r,
		   const struct obs_args *outputs, bool failed)
{
	struct producer_tensor in[OBS_MAX_TENSORS], out[OBS_MAX_TENSORS];

	/* The ops a stopped recompute unwinds stopped on purpose. */
	if (s->recompute_stopping && failed)
		failed = false;
	else
		s->recompute_stopping = false;
	if (outputs && !strncmp(r->op->op, "_autocast_to_", 13))
		emit_script_casts(s, r, outputs);
	if (outputs && r->gradient_cast && outputs->ntensors >= 1 &&
	    r->inputs.ntensors >= 1 && outputs->tensors[0].id &&
	    outputs->tensors[0].id != r->inputs.tensors[0].id &&
	    outputs->tensors[0].dtype != r->inputs.tensors[0].dtype)
		emit_cast(s, r, 0, &outputs->tensors[0], AMP_CACHE_UNCACHEABLE,
			  r->gradient_cast, false, r->begin_ns, "autograd");
	if (r->gpu_pushed)
		gpu_pop();
	struct producer_event e = { .kind = PRODUCER_OP_END, .op = r->event };
	const struct obs_args *executed = r->inner_seen ? &r->inner : &r->inputs;

	e.op.ninputs = defined_tensors(executed, in);
	e.op.inputs = in;
	e.op.noutputs = outputs ? defined_tensors(outputs, out) : 0;
	e.op.outputs = out;
	e.op.begin_ns = r->begin_ns;
	if (r->plan.status != AMP_OK) {
		e.op.status = r->plan.status;
		e.op.error = r->plan.error;
	} else if (failed) {
		/* The exception's text is not visible from here. */
		e.op.status = AMP_ERR_INVALID;
		e.op.error = r->foreign_hit
			? "raised an exception (torch's message is not visible "
			  "to the observer); an argument is a cast the cache "
			  "kept from an earlier region of another dtype "
			  "within the same outermost region (torch keys it by "
			  "the source tensor alone): enter this op's region "
			  "with cache_enabled=False"
			: "raised an exception (torch's message is not "
			  "visible to the observer)";
	}
	emit(&e);
	if (outputs && !failed && window_flow_followed())
		window_flow_outputs(r->window_slots, outputs);
	if (outputs && !failed && values_enabled())
		check_values(s, r, outputs);
	s->failed_op_id = failed ? r->op_id : 0;
	if (failed)
		snprintf(s->failed_op, sizeof s->failed_op, "%s", e.op.op);
	s->nops--;
}

void events_end(const struct obs_args *outputs, bool failed)
{
	struct thread_state *s = state;

	if (!s)
		return;
	if (s->dropped) {
		s->dropped--;
		return;
	}
	if (!s->nframes)
		return;
	struct frame f = s->frames[--s->nframes];
	if (f.role == ROLE_OP) {
		end_op(s, &s->ops[f.record], outputs, failed);
	} else if (f.role == ROLE_CAST) {
		struct op_record *r = &s->ops[f.record];
		int arg = r->cast_arg;
		if (arg >= 0 && outputs && outputs->ntensors >= 1 &&
		    outputs->tensors[0].id != r->inputs.tensors[arg].id) {
			r->matched[arg] = true;
			if (r->function) {
				emit_cast(s, r, arg, &outputs->tensors[0],
					  AMP_CACHE_UNCACHEABLE,
					  "custom_fwd(cast_inputs=) casts the "
					  "Function's floating-point inputs "
					  "(autocast's cache is not used)", false,
					  r->cast_begin_ns, "custom_fwd");
				return;
			}
			const struct amp_plan_cast *pc = &r->plan.casts[arg];
			enum amp_cache_result cache = pc->cache_if_cast;
			const char *reason = pc->reason;
			/* torch 2.11 caches nothing under inference_mode
			 * (pytorch#165068) */
			if (cache == AMP_CACHE_MISS && s->inference_mode &&
			    events_cache_keeps_grad()) {
				cache = AMP_CACHE_UNCACHEABLE;
				reason = "not cached under inference_mode "
					 "(torch 2.11+)";
			}
			emit_cast(s, r, arg, &outputs->tensors[0], cache,
				  reason, false, r->cast_begin_ns, NULL);
			struct values_op op = values_op_of(r);
			if (values_enabled() &&
			    values_check_cast(&op, &r->cast_source,
					      &outputs->tensors[0]))
				r->inner_origin = true;
		}
	}
}

/* ------------------------------------------------- the Python layer's */

void events_set_inference_mode(bool enabled)
{
	thread_state()->inference_mode = enabled;
}

bool events_custom_casts(bool inside)
{
	struct thread_state *s = thread_state();
	bool previous = s->custom_casts;

	s->custom_casts = inside;
	return previous;
}

/* An optimizer step begins (an optimizer's, or GradScaler's unscale_,
 * step or update): the step's forward and backward are done, so the
 * device's value checks are read now, before the step's GradScaler
 * events. */
void events_set_phase(enum amp_phase phase)
{
	struct thread_state *s = thread_state();

	if (phase == AMP_PHASE_OPTIMIZER && s->phase != AMP_PHASE_OPTIMIZER)
		values_flush();
	s->phase = phase;
}

enum amp_phase events_phase(void)
{
	return thread_state()->phase;
}

void events_scope(bool enter, const struct producer_scope *scope)
{
	struct thread_state *s = thread_state();
	struct producer_event e = { .kind = enter ? PRODUCER_SCOPE_ENTER
						  : PRODUCER_SCOPE_EXIT };

	e.scope = *scope;
	if (enter) {
		s->depth = scope->depth;
		if (s->nscopes < MAX_SCOPES)
			s->scopes[s->nscopes] = scope->scope;
		s->nscopes++;
		emit(&e);
	} else {
		if (s->nscopes > 0)
			s->nscopes--;
		if (!e.scope.scope && s->nscopes < MAX_SCOPES)
			e.scope.scope = s->scopes[s->nscopes];
		emit(&e);
		s->depth = scope->depth - 1;
	}
}

void events_cache_clear(void)
{
	struct thread_state *s = thread_state();
	struct producer_event e = { .kind = PRODUCER_CACHE_CLEAR };

	e.cache = (struct producer_cache_clear){ s->cache_used, s->cache_bytes };
	if (s->cache_slots)
		memset(s->cache, 0, s->cache_slots * sizeof *s->cache);
	s->cache_used = 0;
	s->cache_bytes = 0;
	emit(&e);
}

void events_emit(struct producer_event *e)
{
	emit(e);
}

bool events_set_ignoring(bool ignoring)
{
	struct thread_state *s = thread_state();
	bool previous = s->ignoring;

	s->ignoring = ignoring;
	return previous;
}

uint64_t events_set_compiled_parent(uint64_t op_id)
{
	struct thread_state *s = thread_state();
	uint64_t previous = s->compiled_parent;

	s->compiled_parent = op_id;
	return previous;
}

uint64_t events_new_op_id(void)
{
	return atomic_fetch_add(&next_op_id, 1);
}

void events_link_forward(int64_t seq, uint64_t op_id)
{
	struct thread_state *s = thread_state();

	if (seq < 0)
		return;
	s->links[seq % LINK_SLOTS].seq = seq;
	s->links[seq % LINK_SLOTS].op_id = op_id;
	s->links[seq % LINK_SLOTS].module = 0;
}

void events_regions(int *depth, const char **scope)
{
	struct thread_state *s = thread_state();

	*depth = s->depth;
	*scope = s->nscopes && s->nscopes <= MAX_SCOPES
			 ? s->scopes[s->nscopes - 1] : NULL;
}

bool events_pause(bool paused)
{
	struct thread_state *s = thread_state();
	bool previous = s->paused;

	s->paused = paused;
	return previous;
}

void events_after_fork(void)
{
	gpu_after_fork();
	window_flow_after_fork();
	/* The forking thread's stack belongs to the parent's calls. */
	if (state) {
		state->nframes = 0;
		state->nops = 0;
		state->dropped = 0;
	}
}

void events_recompute_stopped(void)
{
	struct thread_state *s = state;

	if (s)
		s->recompute_stopping = true;
}

void events_recompute_unwound(void)
{
	struct thread_state *s = state;

	if (s)
		s->recompute_stopping = false;
}

bool events_op_exception(const char *exception)
{
	struct thread_state *s = state;
	char message[768];

	if (!s || !s->failed_op_id)
		return false;
	snprintf(message, sizeof message, "%s (op %llu) failed, and the "
		 "exception that ended this thread came right after it, with no "
		 "torch op in between: %s", s->failed_op,
		 (unsigned long long)s->failed_op_id, exception);
	struct producer_event e = { .kind = PRODUCER_DIAG };
	e.diag = (struct producer_diag){ .kind = "op-error",
					  .message = message,
					  .op_id = s->failed_op_id };
	emit(&e);
	s->failed_op_id = 0;
	return true;
}
