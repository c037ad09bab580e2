/* One decoded raw record (raw_decode.h) -> the trace events it makes:
 * ops (a BEGIN waits for its END), casts, autocast regions, cache and
 * scaler counters, findings, GPU kernels (see convert_internal.h). */
#include "convert_internal.h"
#include "event_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- records */

static struct pending_op *find_pending(struct convert_thread *t, uint64_t op_id)
{
	for (size_t i = t->nops; i-- > 0;)
		if (t->ops[i].op.op_id == op_id)
			return &t->ops[i];
	return NULL;
}

/* s interned: `known` when s equals it (an END repeats its BEGIN's
 * strings: comparing is cheaper than interning again). */
static const char *intern_like(struct convert_process *p, const char *s,
			       const char *known)
{
	if (s && known && !strcmp(s, known))
		return known;
	return convert_intern_cstr(p, s);
}

/* The keys a producer hands over as they are (../producer_keys.h): its
 * member copied into the trace model's, a string interned.  In op_fields
 * (from e to op), on_cast (from c to e.cast, and a compiled graph's
 * keys to `compiled`) and convert_diag (from keys to e.diag). */
#define COPY_OP_KEY(X, type, f, key, check, since)                          \
	op.f = COPY_##type(e->f);
#define COPY_CAST_KEY(X, type, f, key, check, since)                        \
	e.cast.f = COPY_##type(c->f);
#define COPY_DIAG_KEY(X, type, f, key, check, since)                        \
	e.diag.f = COPY_##type(keys->f);
#define COPY_COMPILED_KEY(X, type, f, key, check, since)                    \
	compiled.f = COPY_##type(c->f);
#define COPY_STRING(value) ((value) ? convert_intern_cstr(p, value) : NULL)
#define COPY_ID(value) (value)

/* The fields an op's BEGIN and END both carry; `begin` is the op's BEGIN
 * when e is its END, else NULL. */
static struct trace_op op_fields(struct convert_process *p,
				 struct convert_thread *t,
				 const struct producer_op *e,
				 const struct trace_op *begin)
{
	struct trace_op op = {
		.op_id = e->op_id, .parent_op_id = e->parent_op_id,
		.forward_op_id = e->forward_op_id,
		.op = e->op ? intern_like(p, e->op, begin ? begin->op : NULL)
			    : convert_lit(p, LIT_UNKNOWN),
		.overload = e->overload ? intern_like(p, e->overload,
						      begin ? begin->overload
							    : NULL)
					: convert_lit(p, LIT_EMPTY),
		.phase = convert_name(p, NAMES_PHASE, e->phase),
		.device = convert_name(p, NAMES_DEVICE, e->device),
		.emulated = e->emulated,
		.autocast = convert_autocast(p, t, &e->autocast,
					     begin ? begin->autocast->scope
						   : NULL),
	};
	PRODUCER_OP_KEYS(COPY_OP_KEY, _)
	return op;
}

static void on_op_begin(struct convert_process *p, struct convert_thread *t,
			const struct producer_op *e, uint64_t time_ns)
{
	t->ops = convert_grow(t->ops, &t->cap_ops, t->nops + 1, sizeof *t->ops);
	t->ops[t->nops++] = (struct pending_op){
		.begin_ns = time_ns, .op = op_fields(p, t, e, NULL),
	};
}

/* The amp.op X event of op `op`, from begin_ns to end_ns, written and
 * kept. */
static void op_event(struct converter *cv, struct convert_process *p,
		     struct convert_thread *t, const struct trace_op *op,
		     uint64_t begin_ns, uint64_t end_ns)
{
	struct trace_event e = convert_head(cv, p, t->tid, TRACE_OP,
					    convert_op_label(p, op->op,
							     op->overload),
					    LIT_CAT_OP, 'X', begin_ns);
	e.dur = convert_to_us((int64_t)(end_ns > begin_ns ? end_ns - begin_ns : 0));
	e.op = *op;
	convert_emit(cv, p, &e);
	p->ops++;
}

/* An op the end of its thread or process closed (closed_by says how): an
 * incomplete op (FORMAT.md), which has no policy, inputs, outputs or
 * status. */
void convert_op_close(struct converter *cv, struct convert_process *p,
		      struct convert_thread *t,
		      const struct pending_op *pending, uint64_t end_ns,
		      const char *closed_by)
{
	struct trace_op op = pending->op;

	op.incomplete = true;
	op.closed_by = convert_intern_cstr(p, closed_by);
	op_event(cv, p, t, &op, pending->begin_ns, end_ns);
}

static void on_op_end(struct converter *cv, struct convert_process *p,
		      struct convert_thread *t, const struct producer_op *e,
		      uint64_t time_ns)
{
	uint64_t begin_ns = e->begin_ns;

	/* Ops nest on a thread, so the BEGIN is normally on top. */
	struct pending_op *pending = find_pending(t, e->op_id);
	struct trace_op begin;
	if (pending) {
		begin = pending->op;
		size_t at = (size_t)(pending - t->ops);
		memmove(&t->ops[at], &t->ops[at + 1],
			(t->nops - at - 1) * sizeof *t->ops);
		t->nops--;
	}
	if (!begin_ns || begin_ns > time_ns)
		begin_ns = time_ns;
	struct trace_op op = op_fields(p, t, e, pending ? &begin : NULL);
	op.policy = convert_name(p, NAMES_POLICY, e->policy);
	op.ninputs = e->ninputs;
	op.noutputs = e->noutputs;
	op.inputs = convert_tensors(cv, p, e->inputs, e->ninputs, true);
	op.outputs = convert_tensors(cv, p, e->outputs, e->noutputs, false);
	op.status = e->status;
	if (e->status)
		op.error = e->error ? convert_intern_cstr(p, e->error)
				    : convert_lit(p, LIT_EMPTY);
	op_event(cv, p, t, &op, begin_ns, time_ns);
}

static void counter(struct converter *cv, struct convert_process *p,
		    struct convert_thread *t, enum convert_literal cat,
		    const char *name, uint64_t time_ns,
		    enum convert_literal series1, double v1,
		    enum convert_literal series2, double v2)
{
	struct trace_event e = convert_head(cv, p, t->tid, TRACE_COUNTER, name,
					    cat, 'C', time_ns);

	e.counter = (struct trace_counter){
		.nseries = series2 != LIT_EMPTY ? 2 : 1,
		.series = { convert_lit(p, series1),
			    series2 != LIT_EMPTY ? convert_lit(p, series2) : NULL },
		.value = { v1, v2 },
	};
	convert_emit(cv, p, &e);
}

static void on_cast(struct converter *cv, struct convert_process *p,
		    struct convert_thread *t, const struct producer_cast *c,
		    uint64_t time_ns)
{
	uint64_t begin_ns = c->begin_ns;
	const struct producer_tensor *source = &c->source;

	if (!begin_ns || begin_ns > time_ns)
		begin_ns = time_ns;
	const struct pending_op *pending = find_pending(t, c->op_id);
	const struct trace_op *op = pending ? &pending->op : NULL;
	struct trace_event e = convert_head(cv, p, t->tid, TRACE_CAST,
					    convert_cast_label(p, c->from,
							       c->to),
					    LIT_CAT_CAST, 'X', begin_ns);
	e.dur = convert_to_us((int64_t)(time_ns - begin_ns));
	int ndim = source->ndim < TRACE_MAX_DIMS ? source->ndim : TRACE_MAX_DIMS;
	struct trace_tensor_info source_info = {
		.dtype = convert_name(p, NAMES_DTYPE, c->from),
		.name = convert_intern_cstr(p, source->name),
		.shape = convert_shape(p, source->shape, ndim), .ndim = ndim,
		.requires_grad = source->flags & PRODUCER_TENSOR_REQUIRES_GRAD,
		.leaf = source->flags & PRODUCER_TENSOR_LEAF,
	};
	e.cast = (struct trace_cast){
		.op_id = c->op_id, .tensor = source->id, .result = c->result.id,
		.bytes = c->bytes, .arg = c->arg,
		.from = source_info.dtype,
		.to = convert_name(p, NAMES_DTYPE, c->to),
		.cache = convert_name(p, NAMES_CACHE, c->cache),
		.reason = c->reason ? convert_intern_cstr(p, c->reason)
				    : convert_lit(p, LIT_EMPTY),
		.op = op ? op->op : NULL,
		.phase = op ? op->phase : NULL,
		.scope = op ? op->autocast->scope : NULL,
		.stale = c->stale,
		.source = convert_tensor_info(cv, p, &source_info,
					      CONVERT_SCRATCH_CAST_SOURCE),
	};
	PRODUCER_CAST_RUN_KEYS(COPY_CAST_KEY, _)
	struct trace_cast_compiled compiled = { 0 };
	PRODUCER_CAST_COMPILED_KEYS(COPY_COMPILED_KEY, _)
	e.cast.compiled = convert_cast_compiled(p, &compiled);
	/* a cast autocast did not make (origin: autograd, custom_fwd) is
	 * a kind of its own, as the reader makes it */
	trace_cast_set_origin(&e);
	convert_emit(cv, p, &e);
	p->casts++;
	if (c->cache_counted)
		counter(cv, p, t, LIT_CAT_CACHE, convert_lit(p, LIT_AUTOCAST_CACHE),
			time_ns, LIT_ENTRIES, (double)c->cache_entries,
			LIT_BYTES, (double)c->cache_bytes);
}

static const char *scope_label(struct converter *cv, struct convert_process *p,
			       const char *scope, unsigned device,
			       unsigned dtype, bool enabled)
{
	struct jsonw *w = &cv->label;

	if (scope)
		return convert_intern_cstr(p, scope);
	jsonw_reset(w);
	jsonw_printf(w, "autocast(%s, %s)", convert_name_of(p, NAMES_DEVICE, device),
		     enabled ? convert_name_of(p, NAMES_DTYPE, dtype) : "off");
	return convert_intern(p, w->data, w->len);
}

void convert_scope_end(struct converter *cv, struct convert_process *p,
		       struct convert_thread *t, const struct open_scope *s,
		       uint64_t time_ns, const char *closed_by)
{
	struct trace_event e = convert_head(cv, p, t->tid, TRACE_SCOPE_END,
					    s->label, LIT_CAT_SCOPE, 'E',
					    time_ns);

	e.scope = (struct trace_scope){
		.depth = s->depth, .closed_by = convert_intern_cstr(p,
								    closed_by),
	};
	convert_emit(cv, p, &e);
}

static void on_scope(struct converter *cv, struct convert_process *p,
		     struct convert_thread *t, const struct producer_scope *region,
		     uint64_t time_ns, bool enter)
{
	if (!enter) {
		/* A region the recorder saw open; an exit of one opened
		 * before it attached has no B to close. */
		if (!t->nscopes)
			return;
		convert_scope_end(cv, p, t, &t->scopes[--t->nscopes], time_ns,
				  NULL);
		t->named_scopes_stale = true;
		return;
	}
	const char *label = scope_label(cv, p, region->scope, region->device,
					region->dtype, region->enabled);
	struct trace_event e = convert_head(cv, p, t->tid, TRACE_SCOPE_BEGIN, label,
					    LIT_CAT_SCOPE, 'B', time_ns);
	e.scope = (struct trace_scope){
		.scope = convert_intern_cstr(p, region->scope),
		.depth = region->depth,
		.device = convert_name(p, NAMES_DEVICE, region->device),
		.dtype = convert_name(p, NAMES_DTYPE, region->dtype),
		.enabled = region->enabled,
		.cache_enabled = region->cache_enabled,
	};
	convert_emit(cv, p, &e);
	t->scopes = convert_grow(t->scopes, &t->cap_scopes, t->nscopes + 1,
				 sizeof *t->scopes);
	t->scopes[t->nscopes++] = (struct open_scope){
		.name = e.scope.scope, .label = label, .depth = region->depth,
	};
	t->named_scopes_stale = true;
}

static void on_cache_clear(struct converter *cv, struct convert_process *p,
			   struct convert_thread *t, const struct producer_cache_clear *c,
			   uint64_t time_ns)
{
	struct trace_event e = convert_head(cv, p, t->tid, TRACE_CACHE_CLEAR,
					    convert_lit(p, LIT_CACHE_CLEAR),
					    LIT_CAT_CACHE, 'i', time_ns);

	e.cache = (struct trace_cache_clear){ c->entries, c->bytes };
	convert_emit(cv, p, &e);
	counter(cv, p, t, LIT_CAT_CACHE, convert_lit(p, LIT_AUTOCAST_CACHE),
		time_ns, LIT_ENTRIES, 0, LIT_BYTES, 0);
}

/* Where scaler_id is in p's scalers, added the first time it comes: its
 * ids are the producer's (libamp's 1, 2, ...; the bridge's id(self), an
 * address), its counters' names the order it came in. */
static size_t scaler_index(struct convert_process *p, uint64_t scaler_id)
{
	for (size_t i = 0; i < p->nscalers; i++)
		if (p->scalers[i].id == scaler_id)
			return i;
	size_t cap = p->nscalers;
	p->scalers = convert_grow(p->scalers, &cap, p->nscalers + 1,
				  sizeof *p->scalers);
	p->scalers[p->nscalers] = (struct convert_scaler){ scaler_id, NAN };
	return p->nscalers++;
}

static void on_scaler(struct converter *cv, struct convert_process *p,
		      struct convert_thread *t,
		      const struct producer_scaler *s, uint64_t time_ns)
{
	const char *what = s->what ? s->what : "";
	double scale = s->scale;
	char label[64];

	int n = snprintf(label, sizeof label, "scaler %.40s", what);
	struct trace_event e = convert_head(cv, p, t->tid, TRACE_SCALER,
					    convert_intern(p, label, (size_t)n),
					    LIT_CAT_SCALER, 'i', time_ns);
	/* JSON has no NaN or infinity: both are written as null, read as NaN */
	e.scaler = (struct trace_scaler){
		.what = convert_intern_cstr(p, what),
		.scaler_id = s->scaler_id, .optimizer_id = s->optimizer_id,
		.inf_tensor = s->inf_tensor_id,
		.scale = isfinite(scale) ? scale : NAN,
		.found_inf = s->found_inf, .step_skipped = s->step_skipped,
	};
	convert_emit(cv, p, &e);

	size_t index = scaler_index(p, s->scaler_id);
	struct convert_scaler *scaler = &p->scalers[index];
	if (scale == scale && scale != scaler->last_scale) {
		char name[32];
		if (index)
			n = snprintf(name, sizeof name, "grad scale %zu",
				     index + 1);
		else
			n = snprintf(name, sizeof name, "grad scale");
		counter(cv, p, t, LIT_CAT_SCALER,
			convert_intern(p, name, (size_t)n), time_ns, LIT_SCALE,
			scale, LIT_EMPTY, 0);
		scaler->last_scale = scale;
	}
	if (s->step_skipped) {
		p->skipped_steps++;
		counter(cv, p, t, LIT_CAT_SCALER,
			convert_lit(p, LIT_SKIPPED_STEPS), time_ns, LIT_SKIPPED,
			(double)p->skipped_steps, LIT_EMPTY, 0);
	}
}

void convert_diag(struct converter *cv, struct convert_process *p, uint64_t tid,
		  uint64_t time_ns, const char *kind, const char *message,
		  uint64_t op_id, uint64_t tensor_id, char scope,
		  const struct producer_diag *keys)
{
	const char *name = convert_intern_cstr(p, kind);
	struct trace_event e = convert_head(cv, p, tid, TRACE_DIAG, name,
					    LIT_CAT_DIAG, 'i', time_ns);

	e.diag = (struct trace_diag){
		.kind = name, .message = convert_intern_cstr(p, message),
		.op_id = op_id, .tensor = tensor_id, .scope = scope,
	};
	if (keys) {
		PRODUCER_DIAG_KEYS(COPY_DIAG_KEY, _)
	}
	convert_emit(cv, p, &e);
}

static void on_diag(struct converter *cv, struct convert_process *p,
		    struct convert_thread *t, const struct producer_diag *d,
		    uint64_t time_ns)
{
	const char *kind = d->kind ? d->kind : "diag";
	const char *message = d->message ? d->message : "";

	convert_diag(cv, p, t->tid, time_ns, kind, message, d->op_id,
		     d->tensor_id, 't', d);
}

/* ------------------------------------------------------ GPU activities */

/* The pid of GPU `device` of process p: a number of its own per process
 * and device (FORMAT.md §3.8), above every Linux pid (pid_max <= 2^22). */
static int64_t gpu_pid(const struct convert_process *p, uint32_t device)
{
	return ((int64_t)1 << 30) + (int64_t)(device & 0xff) * ((int64_t)1 << 22) +
	       (p->pid & (((int64_t)1 << 22) - 1));
}

/* Announces p's GPU `device` (stream UINT32_MAX) or one of its streams
 * with metadata events, the first time it is seen. */
static void gpu_announce(struct converter *cv, struct convert_process *p,
			 uint32_t device, uint32_t stream)
{
	for (size_t i = 0; i < p->ngpu_tracks; i++)
		if (p->gpu_tracks[i].device == device &&
		    p->gpu_tracks[i].stream == stream)
			return;
	size_t cap = p->ngpu_tracks;
	p->gpu_tracks = convert_grow(p->gpu_tracks, &cap, p->ngpu_tracks + 1,
				     sizeof *p->gpu_tracks);
	p->gpu_tracks[p->ngpu_tracks++] = (struct convert_gpu_track){ device, stream };
	int64_t pid = gpu_pid(p, device);
	char name[64];
	struct trace_event e;
	if (stream == UINT32_MAX) {
		snprintf(name, sizeof name, "GPU %u (pid %ld)", device, p->pid);
		e = convert_meta_event(p, LIT_PROCESS_NAME, pid, 0, name, 0);
		e.meta.device = device;
		e.meta.host_pid = p->pid;
		convert_emit(cv, p, &e);
		e = convert_meta_event(p, LIT_PROCESS_SORT_INDEX, pid, 0, NULL,
				       0x10000 + device);
	} else {
		snprintf(name, sizeof name, "stream %u", stream);
		e = convert_meta_event(p, LIT_THREAD_NAME, pid, stream, name,
				       0);
		convert_emit(cv, p, &e);
		e = convert_meta_event(p, LIT_THREAD_SORT_INDEX, pid, stream,
				       NULL, stream);
	}
	convert_emit(cv, p, &e);
}

/* One kernel or memcpy (raw.h RAW_KIND_GPU_ACTIVITY) as Kineto writes
 * it: an X event on the GPU's pid, tid = stream, linked to its op by
 * "External id". */
static void on_gpu_activity(struct converter *cv, struct convert_process *p,
			    const struct amp_gpu_activity *a)
{
	/* the copy kind is not written: the name says it */
	bool copy = a->kind == AMP_GPU_ACTIVITY_MEMCPY;
	const char *name = a->name ? a->name : copy ? "Memcpy" : "kernel";

	gpu_announce(cv, p, a->device, UINT32_MAX);
	gpu_announce(cv, p, a->device, a->stream);
	uint64_t dur = a->end_ns > a->start_ns ? a->end_ns - a->start_ns : 0;
	struct trace_event e = convert_head(cv, p, a->stream,
					    copy ? TRACE_MEMCPY : TRACE_KERNEL,
					    convert_intern_cstr(p, name),
					    copy ? LIT_CAT_MEMCPY
						 : LIT_CAT_KERNEL,
					    'X', a->start_ns);
	e.pid = gpu_pid(p, a->device);
	e.dur = convert_to_us((int64_t)dur);
	e.kernel = (struct trace_kernel){
		.cast = a->cast_id != 0,
		.external_id = a->cast_id ? a->cast_id : a->op_id,
		.op_id = a->cast_id ? a->op_id : 0,
		.host_pid = p->pid, .correlation = a->correlation_id,
		.device = a->device, .stream = a->stream,
		.grid = { a->grid[0], a->grid[1], a->grid[2] },
		.block = { a->block[0], a->block[1], a->block[2] },
		.registers = a->registers, .shared_memory = a->shared_memory,
		.bytes = copy ? a->bytes : 0,
	};
	if (copy)
		p->memcpys++;
	else
		p->kernels++;
	convert_emit(cv, p, &e);
}

static void on_gpu_status(struct convert_process *p,
			  const struct raw_gpu_status *status)
{
	p->gpu_status = status->result == 0 ? 1 : -1;
	free(p->gpu_reason);
	p->gpu_reason = status->reason ? convert_dupn(status->reason,
						      strlen(status->reason))
				       : NULL;
}

static void on_gpu_stats(struct convert_process *p,
			 const struct raw_gpu_stats *s)
{
	p->gpu_unlinked = s->stats.unlinked;
	p->gpu_untimed = s->stats.untimed;
	/* CUPTI's drops and the producer's: lost either way */
	p->gpu_dropped = s->stats.dropped + s->lost;
	p->gpu_buffers = s->stats.buffers;
	p->gpu_aggregated = s->aggregated;
	p->gpu_stats_seen = true;
}

void convert_record(struct converter *cv, struct convert_process *p,
			   struct convert_thread *t, const struct raw_record *r)
{
	struct raw_decoded *d = cv->decoded;

	if (r->time_ns > t->last_ns)
		t->last_ns = r->time_ns;
	if (r->time_ns > p->last_ns)
		p->last_ns = r->time_ns;
	if (!raw_decode(r, d)) {
		p->raw_errors++;
		return;
	}
	switch (d->kind) {
	case PRODUCER_OP_BEGIN:
		on_op_begin(p, t, &d->event.op, r->time_ns);
		break;
	case PRODUCER_OP_END:
		on_op_end(cv, p, t, &d->event.op, r->time_ns);
		break;
	case PRODUCER_CAST:
		on_cast(cv, p, t, &d->event.cast, r->time_ns);
		break;
	case PRODUCER_SCOPE_ENTER:
	case PRODUCER_SCOPE_EXIT:
		on_scope(cv, p, t, &d->event.scope, r->time_ns,
			 d->kind == PRODUCER_SCOPE_ENTER);
		break;
	case PRODUCER_CACHE_CLEAR:
		on_cache_clear(cv, p, t, &d->event.cache, r->time_ns);
		break;
	case PRODUCER_SCALER:
		on_scaler(cv, p, t, &d->event.scaler, r->time_ns);
		break;
	case PRODUCER_DIAG:
		on_diag(cv, p, t, &d->event.diag, r->time_ns);
		break;
	case RAW_KIND_GPU_ACTIVITY:
		on_gpu_activity(cv, p, &d->gpu_activity);
		break;
	case RAW_KIND_GPU_STATUS:
		on_gpu_status(p, &d->gpu_status);
		break;
	case RAW_KIND_GPU_STATS:
		on_gpu_stats(p, &d->gpu_stats);
		break;
	case RAW_KIND_RANK:
		convert_rank_learned(cv, p, d->rank.rank, r->time_ns);
		break;
	default:
		convert_step_record(cv, p, t, d);
		break;
	}
}

