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

static struct pending_op *find_pending(struct conv_thread *t, uint64_t op_id)
{
	for (size_t i = t->nops; i-- > 0;)
		if (t->ops[i].op_id == op_id)
			return &t->ops[i];
	return NULL;
}

void conv_free_pending(struct pending_op *op)
{
	free(op->op);
	free(op->overload);
	free(op->scope);
}

static void on_op_begin(struct conv_thread *t, const struct amp_op_event *e,
			uint64_t time_ns)
{
	struct pending_op op = {
		.op_id = e->op_id, .parent_op_id = e->parent_op_id,
		.forward_op_id = e->forward_op_id, .begin_ns = time_ns,
		.phase = e->phase, .device = e->device, .emulated = e->emulated,
		.autocast = e->autocast,
	};
	const char *name = conv_op_or_unknown(e->op);
	const char *overload = e->overload ? e->overload : "";

	if (e->autocast.scope)
		op.scope = conv_dupn(e->autocast.scope, strlen(e->autocast.scope));
	op.autocast.scope = op.scope;
	op.op = conv_dupn(name, strlen(name));
	op.overload = conv_dupn(overload, strlen(overload));
	t->ops = conv_grow(t->ops, &t->cap_ops, t->nops + 1, sizeof *t->ops);
	t->ops[t->nops++] = op;
}

/* The amp.op X event of op e, from begin_ns to end_ns, written and kept.
 * closed_by NULL: its END was recorded.  Otherwise the end of its thread
 * or process closed it (closed_by says how): an incomplete op
 * (FORMAT.md), which has no policy, inputs, outputs or status. */
void conv_op_event(struct conv *cv, struct conv_process *p,
		   struct conv_thread *t, const struct amp_op_event *e,
		   uint64_t begin_ns, uint64_t end_ns, const char *closed_by)
{
	struct jsonw *w = &cv->buf;
	bool complete = !closed_by;
	const char *name = conv_op_or_unknown(e->op);
	const char *overload = e->overload ? e->overload : "";
	const char *error = e->error ? e->error : "";
	const struct amp_tensor_info *in = e->inputs;
	int nin = complete ? e->ninputs : 0, nout = complete ? e->noutputs : 0;
	int64_t dur = (int64_t)(end_ns > begin_ns ? end_ns - begin_ns : 0);

	struct jsonw *label = &cv->label;
	struct trace_event kept;
	jsonw_reset(label);
	conv_op_name(label, name, overload);
	conv_event_head(w, &kept, TRACE_OP, label->data, label->len, "amp.op",
			'X', (int64_t)(begin_ns - cv->base_ns), p, t->tid);
	jsonw_lit(w, ",\"dur\":");
	jsonw_us(w, dur);
	kept.dur = conv_to_us(dur);
	kept.op = (struct trace_op){
		.op_id = e->op_id, .parent_op_id = e->parent_op_id,
		.forward_op_id = e->forward_op_id,
		.op = conv_keep_cstr(p, name),
		.overload = conv_keep_cstr(p, overload),
		.phase = conv_keep_name(p, NAMES_PHASE, e->phase),
		.policy = complete ? conv_keep_name(p, NAMES_POLICY, e->policy)
				   : NULL,
		.device = conv_keep_name(p, NAMES_DEVICE, e->device),
		.emulated = e->emulated, .incomplete = !complete,
		.autocast = conv_keep_autocast(p, t, &e->autocast),
		.ninputs = nin, .noutputs = nout,
		.inputs = complete ? conv_keep_tensors(p, in, nin) : NULL,
		.outputs = complete ? conv_keep_tensors(p, e->outputs, nout)
				    : NULL,
		.status = complete ? e->status : 0,
		.error = complete && e->status ? conv_keep_cstr(p, error) : NULL,
	};
	jsonw_lit(w, ",\"args\":{\"op_id\":");
	jsonw_u64(w, e->op_id);
	jsonw_lit(w, ",\"op\":");
	jsonw_str(w, name);
	jsonw_lit(w, ",\"overload\":");
	jsonw_str(w, overload);
	jsonw_lit(w, ",\"phase\":");
	jsonw_str(w, conv_name_of(p, NAMES_PHASE, e->phase));
	if (complete) {
		jsonw_lit(w, ",\"policy\":");
		jsonw_str(w, conv_name_of(p, NAMES_POLICY, e->policy));
	}
	jsonw_lit(w, ",\"device\":");
	jsonw_str(w, conv_name_of(p, NAMES_DEVICE, e->device));
	jsonw_lit(w, ",\"emulated\":");
	jsonw_bool(w, e->emulated);
	if (e->parent_op_id) {
		jsonw_lit(w, ",\"parent_op_id\":");
		jsonw_u64(w, e->parent_op_id);
	}
	if (e->forward_op_id) {
		jsonw_lit(w, ",\"forward_op_id\":");
		jsonw_u64(w, e->forward_op_id);
	}
	conv_write_autocast(w, p, t, &e->autocast);
	if (!complete) {
		jsonw_lit(w, ",\"incomplete\":true,\"closed_by\":");
		jsonw_str(w, closed_by);
		jsonw_lit(w, "}}");
		conv_emit(p, w, &kept);
		p->ops++;
		return;
	}
	jsonw_lit(w, ",\"inputs\":[");
	for (int i = 0; i < nin; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		conv_write_tensor(w, p, &in[i]);
	}
	jsonw_lit(w, "],\"outputs\":[");
	for (int i = 0; i < nout; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		conv_write_tensor(w, p, &e->outputs[i]);
	}
	jsonw_raw(w, "]", 1);
	if (e->status) {
		jsonw_printf(w, ",\"status\":%d,\"error\":", e->status);
		jsonw_str(w, error);
	}
	/* torch.profiler's keys, for tools that read Kineto traces. */
	jsonw_lit(w, ",\"Input type\":[");
	for (int i = 0; i < nin; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, conv_name_of(p, NAMES_PROFILER, in[i].dtype));
	}
	jsonw_lit(w, "],\"Input Dims\":[");
	for (int i = 0; i < nin; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		conv_write_shape(w, &in[i]);
	}
	jsonw_lit(w, "],\"External id\":");
	jsonw_u64(w, e->op_id);
	jsonw_lit(w, "}}");
	conv_emit(p, w, &kept);
	p->ops++;
}

static void on_op_end(struct conv *cv, struct conv_process *p,
		      struct conv_thread *t, const struct amp_op_event *e,
		      uint64_t time_ns)
{
	uint64_t begin_ns = e->begin_ns;

	/* Ops nest on a thread, so the BEGIN is normally on top. */
	struct pending_op *pending = find_pending(t, e->op_id);
	if (pending) {
		size_t at = (size_t)(pending - t->ops);
		conv_free_pending(pending);
		memmove(&t->ops[at], &t->ops[at + 1],
			(t->nops - at - 1) * sizeof *t->ops);
		t->nops--;
	}
	if (!begin_ns || begin_ns > time_ns)
		begin_ns = time_ns;
	conv_op_event(cv, p, t, e, begin_ns, time_ns, NULL);
}

static void counter(struct conv *cv, struct conv_process *p,
		    struct conv_thread *t, const char *cat, const char *name,
		    uint64_t time_ns, const char *series1, double v1,
		    const char *series2, double v2)
{
	struct jsonw *w = &cv->buf;
	struct trace_event e;

	conv_event_head(w, &e, TRACE_COUNTER, name, strlen(name), cat, 'C',
			(int64_t)(time_ns - cv->base_ns), p, t->tid);
	jsonw_printf(w, ",\"args\":{\"%s\":", series1);
	jsonw_double(w, v1);
	if (series2) {
		jsonw_printf(w, ",\"%s\":", series2);
		jsonw_double(w, v2);
	}
	jsonw_lit(w, "}}");
	e.counter = (struct trace_counter){
		.nseries = series2 ? 2 : 1,
		.series = { conv_keep_cstr(p, series1),
			    conv_keep_cstr(p, series2) },
		.value = { v1, v2 },
	};
	conv_emit(p, w, &e);
}

static void on_cast(struct conv *cv, struct conv_process *p,
		    struct conv_thread *t, const struct amp_cast_event *c,
		    uint64_t time_ns)
{
	struct jsonw *w = &cv->buf;
	uint64_t op_id = c->op_id, bytes = c->bytes, begin_ns = c->begin_ns;
	unsigned from = c->from, to = c->to, cache = c->cache;
	const struct amp_tensor_info *source = &c->source;
	const char *reason = c->reason ? c->reason : "";

	if (!begin_ns || begin_ns > time_ns)
		begin_ns = time_ns;

	const char *from_name = conv_name_of(p, NAMES_DTYPE, from);
	const char *to_name = conv_name_of(p, NAMES_DTYPE, to);
	char label[64];
	int n = snprintf(label, sizeof label, "cast %s->%s", from_name, to_name);
	struct trace_event e;
	conv_event_head(w, &e, TRACE_CAST, label,
			(size_t)n < sizeof label ? (size_t)n : sizeof label - 1,
			"amp.cast", 'X', (int64_t)(begin_ns - cv->base_ns), p, t->tid);
	jsonw_lit(w, ",\"dur\":");
	jsonw_us(w, (int64_t)(time_ns - begin_ns));
	jsonw_lit(w, ",\"args\":{\"op_id\":");
	jsonw_u64(w, op_id);
	const struct pending_op *op = find_pending(t, op_id);
	e.dur = conv_to_us((int64_t)(time_ns - begin_ns));
	e.cast = (struct trace_cast){
		.op_id = op_id, .tensor = source->id, .result = c->result.id,
		.bytes = bytes, .arg = c->arg,
		.from = conv_keep_name(p, NAMES_DTYPE, from),
		.to = conv_keep_name(p, NAMES_DTYPE, to),
		.cache = conv_keep_name(p, NAMES_CACHE, cache),
		.reason = conv_keep_cstr(p, reason),
		.name = conv_keep_cstr(p, source->name),
		.op = op ? conv_keep_cstr(p, op->op) : NULL,
		.phase = op ? conv_keep_name(p, NAMES_PHASE, op->phase) : NULL,
		.scope = op ? conv_keep_cstr(p, op->autocast.scope) : NULL,
		.stale = c->stale,
	};
	if (op) {
		jsonw_lit(w, ",\"op\":");
		jsonw_str(w, op->op);
		jsonw_lit(w, ",\"phase\":");
		jsonw_str(w, conv_name_of(p, NAMES_PHASE, op->phase));
		if (op->autocast.scope) {
			jsonw_lit(w, ",\"scope\":");
			jsonw_str(w, op->autocast.scope);
		}
	}
	jsonw_lit(w, ",\"arg\":");
	jsonw_i64(w, c->arg);
	jsonw_lit(w, ",\"tensor\":");
	jsonw_u64(w, source->id);
	jsonw_lit(w, ",\"result\":");
	jsonw_u64(w, c->result.id);
	jsonw_lit(w, ",\"from\":");
	jsonw_str(w, from_name);
	jsonw_lit(w, ",\"to\":");
	jsonw_str(w, to_name);
	jsonw_lit(w, ",\"cache\":");
	jsonw_str(w, conv_name_of(p, NAMES_CACHE, cache));
	jsonw_lit(w, ",\"reason\":");
	jsonw_str(w, reason);
	jsonw_lit(w, ",\"bytes\":");
	jsonw_u64(w, bytes);
	if (c->stale)
		jsonw_lit(w, ",\"stale\":true");
	if (source->name) {
		jsonw_lit(w, ",\"name\":");
		jsonw_str(w, source->name);
	}
	jsonw_lit(w, ",\"shape\":");
	conv_write_shape(w, source);
	if (source->requires_grad)
		jsonw_lit(w, ",\"requires_grad\":true");
	if (source->is_leaf)
		jsonw_lit(w, ",\"leaf\":true");
	jsonw_lit(w, "}}");
	conv_emit(p, w, &e);
	p->casts++;
	if (c->cache_counted)
		counter(cv, p, t, "amp.cache", "autocast cache", time_ns,
			"entries", (double)c->cache_entries, "bytes",
			(double)c->cache_bytes);
}

static void scope_label(struct jsonw *w, const struct conv_process *p,
			const char *scope, unsigned device, unsigned dtype,
			bool enabled)
{
	jsonw_reset(w);
	if (scope) {
		jsonw_cstr(w, scope);
	} else {
		jsonw_printf(w, "autocast(%s, %s)",
			     conv_name_of(p, NAMES_DEVICE, device),
			     enabled ? conv_name_of(p, NAMES_DTYPE, dtype)
				     : "off");
	}
}

void conv_scope_end(struct conv *cv, struct conv_process *p,
		      struct conv_thread *t, const struct open_scope *s,
		      uint64_t time_ns, const char *closed_by)
{
	struct jsonw *w = &cv->buf;
	struct trace_event e;

	conv_event_head(w, &e, TRACE_SCOPE_END, s->label, strlen(s->label),
			"amp.scope", 'E', (int64_t)(time_ns - cv->base_ns), p, t->tid);
	jsonw_printf(w, ",\"args\":{\"depth\":%d", s->depth);
	if (closed_by) {
		jsonw_lit(w, ",\"closed_by\":");
		jsonw_str(w, closed_by);
	}
	jsonw_lit(w, "}}");
	conv_emit(p, w, &e);
}

static void on_scope(struct conv *cv, struct conv_process *p,
		     struct conv_thread *t, const struct amp_scope_event *region,
		     uint64_t time_ns, bool enter)
{
	struct jsonw *w = &cv->buf;
	int depth = region->depth;
	unsigned device = region->device, dtype = region->dtype;
	bool enabled = region->enabled, cache_enabled = region->cache_enabled;
	const char *scope = region->scope;

	if (!enter) {
		/* A region the recorder saw open; an exit of one opened
		 * before it attached has no B to close. */
		if (!t->nscopes)
			return;
		struct open_scope *s = &t->scopes[--t->nscopes];
		conv_scope_end(cv, p, t, s, time_ns, NULL);
		free(s->name);
		free(s->label);
		return;
	}
	struct jsonw *label = &cv->label;
	jsonw_reset(label);
	scope_label(label, p, scope, device, dtype, enabled);
	struct trace_event e;
	conv_event_head(w, &e, TRACE_SCOPE_BEGIN, label->data, label->len,
			"amp.scope", 'B', (int64_t)(time_ns - cv->base_ns), p, t->tid);
	e.scope = (struct trace_scope){
		.scope = conv_keep_cstr(p, scope), .depth = depth,
		.device = conv_keep_name(p, NAMES_DEVICE, device),
		.dtype = conv_keep_name(p, NAMES_DTYPE, dtype),
		.enabled = enabled, .cache_enabled = cache_enabled,
	};
	jsonw_printf(w, ",\"args\":{\"scope\":");
	jsonw_str(w, scope);
	jsonw_printf(w, ",\"depth\":%d,\"device\":\"%s\",\"dtype\":\"%s\","
			"\"enabled\":%s,\"cache_enabled\":%s}}",
		     depth, conv_name_of(p, NAMES_DEVICE, device),
		     conv_name_of(p, NAMES_DTYPE, dtype), enabled ? "true" : "false",
		     cache_enabled ? "true" : "false");
	conv_emit(p, w, &e);
	t->scopes = conv_grow(t->scopes, &t->cap_scopes, t->nscopes + 1,
			      sizeof *t->scopes);
	t->scopes[t->nscopes++] = (struct open_scope){
		.name = scope ? conv_dupn(scope, strlen(scope)) : NULL,
		.label = conv_dupn(label->data, label->len),
		.depth = depth,
	};
}

static void on_cache_clear(struct conv *cv, struct conv_process *p,
			   struct conv_thread *t, const struct amp_cache_event *c,
			   uint64_t time_ns)
{
	struct jsonw *w = &cv->buf;
	uint64_t entries = c->entries, bytes = c->bytes;

	struct trace_event e;
	conv_event_head(w, &e, TRACE_CACHE_CLEAR, "cache clear", 11, "amp.cache",
			'i', (int64_t)(time_ns - cv->base_ns), p, t->tid);
	e.cache = (struct trace_cache_clear){ entries, bytes };
	jsonw_lit(w, ",\"s\":\"t\",\"args\":{\"entries\":");
	jsonw_u64(w, entries);
	jsonw_lit(w, ",\"bytes\":");
	jsonw_u64(w, bytes);
	jsonw_lit(w, "}}");
	conv_emit(p, w, &e);
	counter(cv, p, t, "amp.cache", "autocast cache", time_ns, "entries", 0,
		"bytes", 0);
}

static void on_scaler(struct conv *cv, struct conv_process *p,
		      struct conv_thread *t, const struct amp_scaler_event *s,
		      uint64_t time_ns)
{
	struct jsonw *w = &cv->buf;
	uint64_t scaler_id = s->scaler_id, optimizer_id = s->optimizer_id;
	uint64_t inf_tensor = s->inf_tensor_id;
	double scale = s->scale;
	bool found_inf = s->found_inf, skipped = s->step_skipped;
	const char *what = s->what ? s->what : "";

	char label[64];
	int n = snprintf(label, sizeof label, "scaler %.40s", what);
	struct trace_event e;
	conv_event_head(w, &e, TRACE_SCALER, label, (size_t)n, "amp.scaler", 'i',
			(int64_t)(time_ns - cv->base_ns), p, t->tid);
	/* JSON has no NaN or infinity: both are written as null, read as NaN */
	e.scaler = (struct trace_scaler){
		.what = conv_keep_cstr(p, what),
		.scaler_id = scaler_id, .optimizer_id = optimizer_id,
		.inf_tensor = inf_tensor, .scale = isfinite(scale) ? scale : NAN,
		.found_inf = found_inf, .step_skipped = skipped,
	};
	jsonw_lit(w, ",\"s\":\"t\",\"args\":{\"what\":");
	jsonw_str(w, what);
	jsonw_lit(w, ",\"scaler_id\":");
	jsonw_u64(w, scaler_id);
	if (optimizer_id) {
		jsonw_lit(w, ",\"optimizer_id\":");
		jsonw_u64(w, optimizer_id);
	}
	jsonw_lit(w, ",\"scale\":");
	jsonw_double(w, scale);
	jsonw_printf(w, ",\"found_inf\":%s,\"step_skipped\":%s",
		     found_inf ? "true" : "false", skipped ? "true" : "false");
	if (inf_tensor) {
		jsonw_lit(w, ",\"inf_tensor\":");
		jsonw_u64(w, inf_tensor);
	}
	jsonw_lit(w, "}}");
	conv_emit(p, w, &e);

	size_t slot = (size_t)(scaler_id % 8);
	if (scale == scale && scale != p->last_scale[slot]) {
		char name[32];
		if (scaler_id > 1)
			snprintf(name, sizeof name, "grad scale %llu",
				 (unsigned long long)scaler_id);
		else
			snprintf(name, sizeof name, "grad scale");
		counter(cv, p, t, "amp.scaler", name, time_ns, "scale", scale,
			NULL, 0);
		p->last_scale[slot] = scale;
	}
	if (skipped) {
		p->skipped_steps++;
		counter(cv, p, t, "amp.scaler", "skipped steps", time_ns,
			"skipped", (double)p->skipped_steps, NULL, 0);
	}
}

void conv_diag(struct conv *cv, struct conv_process *p, uint64_t tid,
	       uint64_t time_ns, const char *kind, const char *message,
	       uint64_t op_id, uint64_t tensor_id, char scope)
{
	struct trace_event e = {
		.kind = TRACE_DIAG, .ph = 'i', .name = conv_keep_cstr(p, kind),
		.cat = conv_keep_cstr(p, "amp.diag"), .pid = p->pid,
		.tid = (int64_t)tid,
		.ts = conv_to_us((int64_t)(time_ns - cv->base_ns)),
		.diag = { .kind = conv_keep_cstr(p, kind),
			  .message = conv_keep_cstr(p, message),
			  .op_id = op_id, .tensor = tensor_id },
	};

	event_json_diag(&cv->buf, &(struct diag_json){
		.kind = kind, .message = message,
		.ts_ns = (int64_t)(time_ns - cv->base_ns), .pid = p->pid,
		.tid = (int64_t)tid, .scope = scope, .op_id = op_id,
		.tensor = tensor_id,
	});
	conv_emit(p, &cv->buf, &e);
}

static void on_diag(struct conv *cv, struct conv_process *p,
		    struct conv_thread *t, const struct amp_diag_event *d,
		    uint64_t time_ns)
{
	const char *kind = d->kind ? d->kind : "diag";
	const char *message = d->message ? d->message : "";

	conv_diag(cv, p, t->tid, time_ns, kind, message, d->op_id,
		  d->tensor_id, 't');
}

/* ------------------------------------------------------ GPU activities */

/* The pid of GPU `device` of process p: a number of its own per process
 * and device (FORMAT.md §3.8), above every Linux pid (pid_max <= 2^22). */
static int64_t gpu_pid(const struct conv_process *p, uint32_t device)
{
	return ((int64_t)1 << 30) + (int64_t)(device & 0xff) * ((int64_t)1 << 22) +
	       (p->pid & (((int64_t)1 << 22) - 1));
}

/* Announces p's GPU `device` (stream UINT32_MAX) or one of its streams
 * with metadata events, the first time it is seen. */
static void gpu_announce(struct conv *cv, struct conv_process *p,
			 uint32_t device, uint32_t stream)
{
	struct jsonw *w = &cv->buf;

	for (size_t i = 0; i < p->ngpu_tracks; i++)
		if (p->gpu_tracks[i].device == device &&
		    p->gpu_tracks[i].stream == stream)
			return;
	size_t cap = p->ngpu_tracks;
	p->gpu_tracks = conv_grow(p->gpu_tracks, &cap, p->ngpu_tracks + 1,
				  sizeof *p->gpu_tracks);
	p->gpu_tracks[p->ngpu_tracks++] = (struct conv_gpu_track){ device, stream };
	long long pid = (long long)gpu_pid(p, device);
	char name[64];
	struct trace_event e;
	jsonw_reset(w);
	if (stream == UINT32_MAX) {
		snprintf(name, sizeof name, "GPU %u (pid %ld)", device, p->pid);
		jsonw_printf(w, "{\"name\":\"process_name\",\"ph\":\"M\","
				"\"pid\":%lld,\"tid\":0,\"args\":{\"name\":"
				"\"%s\",\"device\":%u,\"host_pid\":%ld}}",
			     pid, name, device, p->pid);
		e = conv_meta_event(p, "process_name", pid, 0, name, 0);
		conv_emit(p, w, &e);
		jsonw_reset(w);
		jsonw_printf(w, "{\"name\":\"process_sort_index\",\"ph\":\"M\","
				"\"pid\":%lld,\"tid\":0,\"args\":{\"sort_index\":"
				"%u}}",
			     pid, 0x10000u + device);
		e = conv_meta_event(p, "process_sort_index", pid, 0, NULL,
				    0x10000 + device);
	} else {
		snprintf(name, sizeof name, "stream %u", stream);
		jsonw_printf(w, "{\"name\":\"thread_name\",\"ph\":\"M\","
				"\"pid\":%lld,\"tid\":%u,\"args\":{\"name\":"
				"\"%s\"}}",
			     pid, stream, name);
		e = conv_meta_event(p, "thread_name", pid, stream, name, 0);
		conv_emit(p, w, &e);
		jsonw_reset(w);
		jsonw_printf(w, "{\"name\":\"thread_sort_index\",\"ph\":\"M\","
				"\"pid\":%lld,\"tid\":%u,\"args\":{\"sort_index\":"
				"%u}}",
			     pid, stream, stream);
		e = conv_meta_event(p, "thread_sort_index", pid, stream, NULL, stream);
	}
	conv_emit(p, w, &e);
}

/* One kernel or memcpy (raw.h RAW_KIND_GPU_ACTIVITY) as Kineto writes
 * it: an X event on the GPU's pid, tid = stream, linked to its op by
 * "External id". */
static void on_gpu_activity(struct conv *cv, struct conv_process *p,
			    const struct amp_gpu_activity *a)
{
	uint64_t start_ns = a->start_ns, end_ns = a->end_ns;
	uint64_t op_id = a->op_id, cast_id = a->cast_id, bytes = a->bytes;
	uint32_t device = a->device, stream = a->stream;
	uint32_t correlation = a->correlation_id;
	const int32_t *grid = a->grid, *block = a->block;
	int32_t registers = a->registers, shared_memory = a->shared_memory;
	unsigned kind = a->kind;
	/* the copy kind is not written: the name says it */
	const char *name = a->name;

	bool memcpy_kind = kind == AMP_GPU_ACTIVITY_MEMCPY;
	if (!name)
		name = memcpy_kind ? "Memcpy" : "kernel";
	gpu_announce(cv, p, device, UINT32_MAX);
	gpu_announce(cv, p, device, stream);
	uint64_t dur = end_ns > start_ns ? end_ns - start_ns : 0;
	struct jsonw *w = &cv->buf;
	/* Readers know the kernel category; a memcpy is someone else's. */
	struct trace_event e = {
		.kind = memcpy_kind ? TRACE_OTHER : TRACE_KERNEL, .ph = 'X',
		.name = conv_keep_cstr(p, name),
		.cat = conv_keep_cstr(p, memcpy_kind ? "gpu_memcpy" : "kernel"),
		.pid = gpu_pid(p, device), .tid = stream,
		.ts = conv_to_us((int64_t)(start_ns - cv->base_ns)),
		.dur = conv_to_us((int64_t)dur),
	};
	if (!memcpy_kind)
		e.kernel = (struct trace_kernel){
			.linked = cast_id || op_id, .cast = cast_id != 0,
			.external_id = cast_id ? cast_id : op_id,
			.host_pid = p->pid,
		};
	jsonw_reset(w);
	jsonw_lit(w, "{\"name\":");
	jsonw_str(w, name);
	jsonw_printf(w, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":",
		     memcpy_kind ? "gpu_memcpy" : "kernel");
	jsonw_us(w, (int64_t)(start_ns - cv->base_ns));
	jsonw_printf(w, ",\"pid\":%lld,\"tid\":%u,\"dur\":",
		     (long long)gpu_pid(p, device), stream);
	jsonw_us(w, (int64_t)dur);
	jsonw_lit(w, ",\"args\":{");
	if (cast_id) {
		jsonw_lit(w, "\"External id\":");
		jsonw_u64(w, cast_id);
		jsonw_lit(w, ",\"amp.cast_result\":true,");
		if (op_id) {
			jsonw_lit(w, "\"amp.op_id\":");
			jsonw_u64(w, op_id);
			jsonw_raw(w, ",", 1);
		}
	} else if (op_id) {
		jsonw_lit(w, "\"External id\":");
		jsonw_u64(w, op_id);
		jsonw_raw(w, ",", 1);
	}
	jsonw_printf(w, "\"amp.pid\":%ld,\"correlation\":%u,\"device\":%u,"
			"\"stream\":%u",
		     p->pid, correlation, device, stream);
	if (memcpy_kind) {
		jsonw_lit(w, ",\"bytes\":");
		jsonw_u64(w, bytes);
		if (dur) {
			jsonw_lit(w, ",\"memory bandwidth (GB/s)\":");
			jsonw_double(w, (double)bytes / (double)dur);
		}
		p->memcpys++;
	} else {
		jsonw_printf(w, ",\"grid\":[%d,%d,%d],\"block\":[%d,%d,%d],"
				"\"registers per thread\":%d,"
				"\"shared memory\":%d",
			     grid[0], grid[1], grid[2], block[0], block[1],
			     block[2], registers, shared_memory);
		p->kernels++;
	}
	jsonw_lit(w, "}}");
	conv_emit(p, w, &e);
}

static void on_gpu_status(struct conv_process *p,
			  const struct raw_gpu_status *status)
{
	p->gpu_status = status->result == 0 ? 1 : -1;
	free(p->gpu_reason);
	p->gpu_reason = status->reason ? conv_dupn(status->reason,
						   strlen(status->reason))
				       : NULL;
}

static void on_gpu_stats(struct conv_process *p, const struct raw_gpu_stats *s)
{
	uint64_t stats[7] = { s->stats.kernels, s->stats.memcpys,
			      s->stats.unlinked, s->stats.untimed,
			      s->stats.dropped, s->stats.buffers, s->lost };

	memcpy(p->gpu_stats, stats, sizeof stats);
	p->gpu_stats_seen = true;
}

void conv_record(struct conv *cv, struct conv_process *p,
			   struct conv_thread *t, const struct raw_record *r)
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
	case AMP_EVENT_OP_BEGIN:
		on_op_begin(t, &d->event.op, r->time_ns);
		break;
	case AMP_EVENT_OP_END:
		on_op_end(cv, p, t, &d->event.op, r->time_ns);
		break;
	case AMP_EVENT_CAST:
		on_cast(cv, p, t, &d->event.cast, r->time_ns);
		break;
	case AMP_EVENT_SCOPE_ENTER:
	case AMP_EVENT_SCOPE_EXIT:
		on_scope(cv, p, t, &d->event.scope, r->time_ns,
			 d->kind == AMP_EVENT_SCOPE_ENTER);
		break;
	case AMP_EVENT_CACHE_CLEAR:
		on_cache_clear(cv, p, t, &d->event.cache, r->time_ns);
		break;
	case AMP_EVENT_SCALER:
		on_scaler(cv, p, t, &d->event.scaler, r->time_ns);
		break;
	case AMP_EVENT_DIAG:
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
	}
}

