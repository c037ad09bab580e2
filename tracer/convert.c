/* Raw records → trace events (see convert.h; the event layout is
 * FORMAT.md's, the record layout recorder.c's encode()). */
#include "convert.h"

#include "amp.h"
#include "raw.h"

#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum name_table {
	NAMES_DTYPE,
	NAMES_PROFILER,
	NAMES_POLICY,
	NAMES_DEVICE,
	NAMES_PHASE,
	NAMES_CACHE,
	NAMES_COUNT
};
static const char *const name_table_keys[NAMES_COUNT] = {
	"dtype", "profiler", "policy", "device", "phase", "cache"
};

struct autocast_state {
	bool enabled;
	unsigned device, dtype;
	bool cache_enabled;
	int depth;
	char *scope;
};

/* An op whose BEGIN was seen and whose END was not (yet). */
struct pending_op {
	uint64_t op_id, parent_op_id, forward_op_id, begin_ns;
	unsigned phase, device;
	bool emulated;
	struct autocast_state autocast;
	char *op, *overload;
};

struct open_scope {
	char *name;   /* NULL for an unnamed region */
	char *label;  /* the B event's name */
	int depth;
};

struct conv_thread {
	char *path;
	int fd;
	const uint8_t *chunk;
	uint64_t chunk_index;
	uint32_t offset;
	bool started;     /* header seen */
	bool stopped;     /* corrupt: not read further */
	uint64_t tid;
	struct pending_op *ops;
	size_t nops, cap_ops;
	struct open_scope *scopes;
	size_t nscopes, cap_scopes;
	uint64_t last_ns;
};

/* A GPU "process" (device) or one of its streams, once announced by its
 * metadata events; stream UINT32_MAX stands for the device itself. */
struct conv_gpu_track {
	uint32_t device, stream;
};

/* ------------------------------------------------------------ helpers */

static char *dupn(const char *s, size_t len)
{
	char *d = malloc(len + 1);

	if (!d)
		abort(); /* the converter has no partial state to fall back to */
	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

static void *grow(void *array, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return array;
	size_t n = *cap ? *cap * 2 : 8;
	while (n < need)
		n *= 2;
	void *grown = realloc(array, n * elem);
	if (!grown)
		abort();
	*cap = n;
	return grown;
}

const char *conv_signal_name(int sig, char *buf, size_t size)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, size, "SIG%s", abbrev);
	else
		snprintf(buf, size, "signal %d", sig);
	return buf;
}

static const char *name_of(const struct conv_process *p, enum name_table t,
			   unsigned value)
{
	if (value < p->name_count[t])
		return p->names[t][value];
	return "unknown";
}

/* ------------------------------------------------------------ decoding */

struct cursor {
	const uint8_t *p, *end;
	bool bad;
};

struct str {
	const char *s;
	size_t len;
};

static bool need(struct cursor *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	return true;
}

static uint64_t get_u64(struct cursor *c)
{
	uint64_t v = 0;

	if (need(c, 8)) {
		memcpy(&v, c->p, 8);
		c->p += 8;
	}
	return v;
}

static int32_t get_i32(struct cursor *c)
{
	int32_t v = 0;

	if (need(c, 4)) {
		memcpy(&v, c->p, 4);
		c->p += 4;
	}
	return v;
}

static unsigned get_u8(struct cursor *c)
{
	return need(c, 1) ? *c->p++ : 0;
}

static double get_f64(struct cursor *c)
{
	double v = 0;

	if (need(c, 8)) {
		memcpy(&v, c->p, 8);
		c->p += 8;
	}
	return v;
}

static struct str get_str(struct cursor *c)
{
	struct str s = { NULL, 0 };
	uint16_t len;

	if (!need(c, 2))
		return s;
	memcpy(&len, c->p, 2);
	c->p += 2;
	if (len == RAW_NULL_STRING)
		return s;
	if (!need(c, len))
		return s;
	s.s = (const char *)c->p;
	s.len = len;
	c->p += len;
	return s;
}

struct tensor {
	uint64_t id;
	unsigned dtype, device, ndim, flags;
	int64_t shape[AMP_MAX_DIMS];
	struct str name;
};

static void get_tensor(struct cursor *c, struct tensor *t)
{
	t->id = get_u64(c);
	t->dtype = get_u8(c);
	t->device = get_u8(c);
	t->ndim = get_u8(c);
	t->flags = get_u8(c);
	if (t->ndim > AMP_MAX_DIMS) {
		c->bad = true;
		t->ndim = 0;
	}
	if (need(c, (size_t)t->ndim * 8)) {
		memcpy(t->shape, c->p, (size_t)t->ndim * 8);
		c->p += (size_t)t->ndim * 8;
	}
	t->name = get_str(c);
}

static void get_autocast(struct cursor *c, struct autocast_state *a,
			 struct str *scope)
{
	a->enabled = get_u8(c);
	a->device = get_u8(c);
	a->dtype = get_u8(c);
	a->cache_enabled = get_u8(c);
	a->depth = get_i32(c);
	*scope = get_str(c);
	a->scope = NULL;
}

/* ------------------------------------------------------------ keeping */

/* Each event written is also kept, decoded, in the process's in-memory
 * trace (conv_process.trace) when it has one: the same values trace_load
 * would read back from the line, so that findings computed from it are
 * those of the file.  The helpers return NULL when nothing is kept. */

static bool keeping(const struct conv_process *p)
{
	return p->trace && !p->trace_lost;
}

static const char *keep_str(struct conv_process *p, const char *s, size_t len)
{
	if (!s || !keeping(p))
		return NULL;
	const char *kept = trace_intern_n(p->trace, s, len);
	if (!kept)
		p->trace_lost = true;
	return kept;
}

static const char *keep_cstr(struct conv_process *p, const char *s)
{
	return keep_str(p, s, s ? strlen(s) : 0);
}

static const char *keep_name(struct conv_process *p, enum name_table t,
			     unsigned value)
{
	if (!keeping(p))
		return NULL;
	if (value < p->name_count[t])
		return p->trace_names[t][value];
	return keep_cstr(p, "unknown");
}

/* Interns p's name tables once, when it gets its trace. */
static void keep_names(struct conv_process *p)
{
	for (int k = 0; k < NAMES_COUNT && keeping(p); k++) {
		p->trace_names[k] = calloc(p->name_count[k] + 1,
					   sizeof *p->trace_names[k]);
		if (!p->trace_names[k]) {
			p->trace_lost = true;
			break;
		}
		for (size_t i = 0; i < p->name_count[k]; i++)
			p->trace_names[k][i] = keep_cstr(p, p->names[k][i]);
	}
}

/* Microseconds, as a reader parses jsonw_us's text (the double nearest
 * ns / 1000, which the division gives too). */
static double to_us(int64_t ns)
{
	return (double)ns / 1000.0;
}

/* An M event: `value` is its args.name or args.labels. */
static struct trace_event meta_event(struct conv_process *p, const char *name,
				     int64_t pid, uint64_t tid,
				     const char *value, int64_t sort_index)
{
	return (struct trace_event){
		.kind = TRACE_META, .ph = 'M', .name = keep_cstr(p, name),
		.cat = keep_cstr(p, ""), .pid = pid, .tid = (int64_t)tid,
		.meta = { .value = keep_cstr(p, value),
			  .sort_index = sort_index, .rank = -1 },
	};
}

/* ------------------------------------------------------------ writing */

/* The event's first keys, written into w and kept in e (`kind` is what
 * the reader classifies cat and ph as). */
static void event_head(struct jsonw *w, struct trace_event *e,
		       enum trace_kind kind, const char *name, size_t name_len,
		       const char *cat, char ph, int64_t ts_ns,
		       struct conv_process *p, uint64_t tid)
{
	*e = (struct trace_event){
		.kind = kind, .ph = ph, .name = keep_str(p, name, name_len),
		.cat = keep_cstr(p, cat), .pid = p->pid, .tid = (int64_t)tid,
		.ts = to_us(ts_ns),
	};
	jsonw_lit(w, "{\"name\":");
	jsonw_strn(w, name, name_len);
	char phase[] = { ph, '\0' };
	jsonw_lit(w, ",\"cat\":\"");
	jsonw_cstr(w, cat);
	jsonw_lit(w, "\",\"ph\":\"");
	jsonw_cstr(w, phase);
	jsonw_lit(w, "\",\"ts\":");
	jsonw_us(w, ts_ns);
	jsonw_lit(w, ",\"pid\":");
	jsonw_i64(w, p->pid);
	jsonw_lit(w, ",\"tid\":");
	jsonw_u64(w, tid);
}

/* Writes the event in w and keeps e, its decoded twin. */
static void emit(struct conv_process *p, struct jsonw *w,
		 const struct trace_event *e)
{
	if (p->writer)
		trace_writer_event(p->writer, w->data, w->len);
	if (keeping(p) && !trace_append(p->trace, e))
		p->trace_lost = true;
	p->events++;
}

static void keep_tensor(struct conv_process *p, const struct tensor *t,
			struct trace_tensor *kept)
{
	*kept = (struct trace_tensor){
		.id = t->id, .dtype = keep_name(p, NAMES_DTYPE, t->dtype),
		.name = keep_str(p, t->name.s, t->name.len),
		.ndim = t->ndim < TRACE_MAX_DIMS ? (int)t->ndim : TRACE_MAX_DIMS,
		.requires_grad = t->flags & 2, .leaf = t->flags & 1,
		.view = t->flags & 4,
	};
	memcpy(kept->shape, t->shape, (size_t)kept->ndim * sizeof *kept->shape);
}

static struct trace_tensor *keep_tensors(struct conv_process *p,
					 const struct tensor *list, unsigned n)
{
	if (!keeping(p))
		return NULL;
	struct trace_tensor *kept =
		trace_alloc(p->trace, (n ? n : 1) * sizeof *kept);
	if (!kept) {
		p->trace_lost = true;
		return NULL;
	}
	for (unsigned i = 0; i < n; i++)
		keep_tensor(p, &list[i], &kept[i]);
	return kept;
}

/* The named regions open on t, outermost first (NULL when none). */
static const char **keep_named_scopes(struct conv_process *p,
				      const struct conv_thread *t, int *count)
{
	*count = 0;
	if (!keeping(p))
		return NULL;
	size_t named = 0;
	for (size_t i = 0; i < t->nscopes; i++)
		named += t->scopes[i].name != NULL;
	if (!named)
		return NULL;
	const char **scopes = trace_alloc(p->trace, named * sizeof *scopes);
	if (!scopes) {
		p->trace_lost = true;
		return NULL;
	}
	for (size_t i = 0; i < t->nscopes; i++)
		if (t->scopes[i].name)
			scopes[(*count)++] = keep_cstr(p, t->scopes[i].name);
	return scopes;
}

static struct trace_autocast keep_autocast(struct conv_process *p,
					   const struct conv_thread *t,
					   const struct autocast_state *a,
					   struct str scope)
{
	struct trace_autocast kept = {
		.enabled = a->enabled,
		.device = keep_name(p, NAMES_DEVICE, a->device),
		.dtype = keep_name(p, NAMES_DTYPE, a->dtype),
		.cache_enabled = a->cache_enabled, .depth = a->depth,
		.scope = keep_str(p, scope.s, scope.len),
	};
	kept.scopes = keep_named_scopes(p, t, &kept.nscopes);
	return kept;
}

static void write_shape(struct jsonw *w, const struct tensor *t)
{
	jsonw_raw(w, "[", 1);
	for (unsigned d = 0; d < t->ndim; d++) {
		if (d)
			jsonw_raw(w, ",", 1);
		jsonw_i64(w, t->shape[d]);
	}
	jsonw_raw(w, "]", 1);
}

static void write_tensor(struct jsonw *w, const struct conv_process *p,
			 const struct tensor *t)
{
	jsonw_lit(w, "{\"tensor\":");
	jsonw_u64(w, t->id);
	jsonw_lit(w, ",\"dtype\":");
	jsonw_str(w, name_of(p, NAMES_DTYPE, t->dtype));
	jsonw_lit(w, ",\"shape\":");
	write_shape(w, t);
	if (t->name.s) {
		jsonw_lit(w, ",\"name\":");
		jsonw_strn(w, t->name.s, t->name.len);
	}
	if (t->flags & 2)
		jsonw_lit(w, ",\"requires_grad\":true");
	if (t->flags & 1)
		jsonw_lit(w, ",\"leaf\":true");
	if (t->flags & 4)
		jsonw_lit(w, ",\"view\":true");
	if (t->device != 0)
		jsonw_printf(w, ",\"device\":\"%s\"",
			     name_of(p, NAMES_DEVICE, t->device));
	jsonw_raw(w, "}", 1);
}

static void write_named_scopes(struct jsonw *w, const struct conv_thread *t)
{
	size_t named = 0;

	for (size_t i = 0; i < t->nscopes; i++)
		named += t->scopes[i].name != NULL;
	if (!named)
		return;
	jsonw_lit(w, ",\"scopes\":[");
	named = 0;
	for (size_t i = 0; i < t->nscopes; i++) {
		if (!t->scopes[i].name)
			continue;
		if (named++)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, t->scopes[i].name);
	}
	jsonw_raw(w, "]", 1);
}

static void write_autocast(struct jsonw *w, const struct conv_process *p,
			   const struct conv_thread *t,
			   const struct autocast_state *a, struct str scope)
{
	jsonw_lit(w, ",\"autocast\":{\"enabled\":");
	jsonw_bool(w, a->enabled);
	jsonw_lit(w, ",\"device\":");
	jsonw_str(w, name_of(p, NAMES_DEVICE, a->device));
	jsonw_lit(w, ",\"dtype\":");
	jsonw_str(w, name_of(p, NAMES_DTYPE, a->dtype));
	jsonw_lit(w, ",\"cache_enabled\":");
	jsonw_bool(w, a->cache_enabled);
	jsonw_lit(w, ",\"depth\":");
	jsonw_i64(w, a->depth);
	jsonw_lit(w, ",\"scope\":");
	jsonw_strn(w, scope.s, scope.len);
	write_named_scopes(w, t);
	jsonw_raw(w, "}", 1);
}

static void op_name(struct jsonw *name, struct str op, struct str overload)
{
	jsonw_reset(name);
	if (op.s)
		jsonw_raw(name, op.s, op.len);
	else
		jsonw_lit(name, "unknown");
	if (overload.len) {
		jsonw_raw(name, ".", 1);
		jsonw_raw(name, overload.s, overload.len);
	}
}

/* ------------------------------------------------------------- records */

static struct pending_op *find_pending(struct conv_thread *t, uint64_t op_id)
{
	for (size_t i = t->nops; i-- > 0;)
		if (t->ops[i].op_id == op_id)
			return &t->ops[i];
	return NULL;
}

static void free_pending(struct pending_op *op)
{
	free(op->op);
	free(op->overload);
	free(op->autocast.scope);
}

static void on_op_begin(struct conv_process *p, struct conv_thread *t,
			struct cursor *c, uint64_t time_ns)
{
	struct pending_op op = { 0 };
	struct str scope, name, overload;

	op.op_id = get_u64(c);
	op.parent_op_id = get_u64(c);
	op.forward_op_id = get_u64(c);
	op.phase = get_u8(c);
	op.device = get_u8(c);
	op.emulated = get_u8(c);
	get_u8(c);
	get_autocast(c, &op.autocast, &scope);
	name = get_str(c);
	overload = get_str(c);
	if (c->bad)
		return;
	(void)p;
	op.begin_ns = time_ns;
	op.autocast.scope = scope.s ? dupn(scope.s, scope.len) : NULL;
	op.op = dupn(name.s ? name.s : "unknown", name.s ? name.len : 7);
	op.overload = dupn(overload.s ? overload.s : "", overload.len);
	t->ops = grow(t->ops, &t->cap_ops, t->nops + 1, sizeof *t->ops);
	t->ops[t->nops++] = op;
}

static void on_op_end(struct conv *cv, struct conv_process *p,
		      struct conv_thread *t, struct cursor *c, uint64_t time_ns)
{
	struct jsonw *w = &cv->buf;
	uint64_t op_id = get_u64(c), parent = get_u64(c), forward = get_u64(c);
	uint64_t begin_ns = get_u64(c);
	int status = get_i32(c);
	unsigned phase = get_u8(c), policy = get_u8(c), device = get_u8(c);
	bool emulated = get_u8(c);
	struct autocast_state ac;
	struct str scope, name, overload, error;
	struct tensor in[256], out[256];
	unsigned nin, nout;

	get_autocast(c, &ac, &scope);
	name = get_str(c);
	overload = get_str(c);
	nin = get_u8(c);
	for (unsigned i = 0; i < nin && !c->bad; i++)
		get_tensor(c, &in[i]);
	nout = get_u8(c);
	for (unsigned i = 0; i < nout && !c->bad; i++)
		get_tensor(c, &out[i]);
	error = get_str(c);
	if (c->bad)
		return;

	/* Ops nest on a thread, so the BEGIN is normally on top. */
	struct pending_op *pending = find_pending(t, op_id);
	if (pending) {
		size_t at = (size_t)(pending - t->ops);
		free_pending(pending);
		memmove(&t->ops[at], &t->ops[at + 1],
			(t->nops - at - 1) * sizeof *t->ops);
		t->nops--;
	}
	if (!begin_ns || begin_ns > time_ns)
		begin_ns = time_ns;

	struct jsonw label;
	struct trace_event e;
	jsonw_init(&label);
	op_name(&label, name, overload);
	jsonw_reset(w);
	event_head(w, &e, TRACE_OP, label.data, label.len, "amp.op", 'X',
		   (int64_t)(begin_ns - cv->base_ns), p, t->tid);
	jsonw_free(&label);
	jsonw_lit(w, ",\"dur\":");
	jsonw_us(w, (int64_t)(time_ns - begin_ns));
	e.dur = to_us((int64_t)(time_ns - begin_ns));
	e.op = (struct trace_op){
		.op_id = op_id, .parent_op_id = parent, .forward_op_id = forward,
		.op = keep_str(p, name.s ? name.s : "unknown",
			       name.s ? name.len : 7),
		.overload = keep_str(p, overload.s ? overload.s : "",
				     overload.len),
		.phase = keep_name(p, NAMES_PHASE, phase),
		.policy = keep_name(p, NAMES_POLICY, policy),
		.device = keep_name(p, NAMES_DEVICE, device),
		.emulated = emulated,
		.autocast = keep_autocast(p, t, &ac, scope),
		.ninputs = (int)nin, .noutputs = (int)nout,
		.inputs = keep_tensors(p, in, nin),
		.outputs = keep_tensors(p, out, nout),
		.status = status,
		.error = status ? keep_str(p, error.s ? error.s : "", error.len)
				: NULL,
	};
	jsonw_lit(w, ",\"args\":{\"op_id\":");
	jsonw_u64(w, op_id);
	jsonw_lit(w, ",\"op\":");
	jsonw_strn(w, name.s ? name.s : "unknown", name.s ? name.len : 7);
	jsonw_lit(w, ",\"overload\":");
	jsonw_strn(w, overload.s ? overload.s : "", overload.len);
	jsonw_lit(w, ",\"phase\":");
	jsonw_str(w, name_of(p, NAMES_PHASE, phase));
	jsonw_lit(w, ",\"policy\":");
	jsonw_str(w, name_of(p, NAMES_POLICY, policy));
	jsonw_lit(w, ",\"device\":");
	jsonw_str(w, name_of(p, NAMES_DEVICE, device));
	jsonw_lit(w, ",\"emulated\":");
	jsonw_bool(w, emulated);
	if (parent) {
		jsonw_lit(w, ",\"parent_op_id\":");
		jsonw_u64(w, parent);
	}
	if (forward) {
		jsonw_lit(w, ",\"forward_op_id\":");
		jsonw_u64(w, forward);
	}
	write_autocast(w, p, t, &ac, scope);
	jsonw_lit(w, ",\"inputs\":[");
	for (unsigned i = 0; i < nin; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		write_tensor(w, p, &in[i]);
	}
	jsonw_lit(w, "],\"outputs\":[");
	for (unsigned i = 0; i < nout; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		write_tensor(w, p, &out[i]);
	}
	jsonw_raw(w, "]", 1);
	if (status) {
		jsonw_printf(w, ",\"status\":%d,\"error\":", status);
		jsonw_strn(w, error.s ? error.s : "", error.len);
	}
	/* torch.profiler's keys, for tools that read Kineto traces. */
	jsonw_lit(w, ",\"Input type\":[");
	for (unsigned i = 0; i < nin; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, name_of(p, NAMES_PROFILER, in[i].dtype));
	}
	jsonw_lit(w, "],\"Input Dims\":[");
	for (unsigned i = 0; i < nin; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		write_shape(w, &in[i]);
	}
	jsonw_lit(w, "],\"External id\":");
	jsonw_u64(w, op_id);
	jsonw_lit(w, "}}");
	emit(p, w, &e);
	p->ops++;
}

static void counter(struct conv *cv, struct conv_process *p,
		    struct conv_thread *t, const char *cat, const char *name,
		    uint64_t time_ns, const char *series1, double v1,
		    const char *series2, double v2)
{
	struct jsonw *w = &cv->buf;
	struct trace_event e;

	jsonw_reset(w);
	event_head(w, &e, TRACE_COUNTER, name, strlen(name), cat, 'C',
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
		.series = { keep_cstr(p, series1), keep_cstr(p, series2) },
		.value = { v1, v2 },
	};
	emit(p, w, &e);
}

static void on_cast(struct conv *cv, struct conv_process *p,
		    struct conv_thread *t, struct cursor *c, uint64_t time_ns)
{
	struct jsonw *w = &cv->buf;
	uint64_t op_id = get_u64(c);
	int arg = get_i32(c);
	unsigned from = get_u8(c), to = get_u8(c), cache = get_u8(c);
	bool stale = get_u8(c), stats = get_u8(c);
	uint64_t bytes = get_u64(c), begin_ns = get_u64(c);
	uint64_t entries = 0, cache_bytes = 0;
	struct tensor source, result;
	struct str reason;

	if (stats) {
		entries = get_u64(c);
		cache_bytes = get_u64(c);
	}
	get_tensor(c, &source);
	get_tensor(c, &result);
	reason = get_str(c);
	if (c->bad)
		return;
	if (!begin_ns || begin_ns > time_ns)
		begin_ns = time_ns;

	const char *from_name = name_of(p, NAMES_DTYPE, from);
	const char *to_name = name_of(p, NAMES_DTYPE, to);
	char label[64];
	int n = snprintf(label, sizeof label, "cast %s->%s", from_name, to_name);
	struct trace_event e;
	jsonw_reset(w);
	event_head(w, &e, TRACE_CAST, label,
		   (size_t)n < sizeof label ? (size_t)n : sizeof label - 1,
		   "amp.cast", 'X', (int64_t)(begin_ns - cv->base_ns), p, t->tid);
	jsonw_lit(w, ",\"dur\":");
	jsonw_us(w, (int64_t)(time_ns - begin_ns));
	jsonw_lit(w, ",\"args\":{\"op_id\":");
	jsonw_u64(w, op_id);
	const struct pending_op *op = find_pending(t, op_id);
	e.dur = to_us((int64_t)(time_ns - begin_ns));
	e.cast = (struct trace_cast){
		.op_id = op_id, .tensor = source.id, .result = result.id,
		.bytes = bytes, .arg = arg,
		.from = keep_name(p, NAMES_DTYPE, from),
		.to = keep_name(p, NAMES_DTYPE, to),
		.cache = keep_name(p, NAMES_CACHE, cache),
		.reason = keep_str(p, reason.s ? reason.s : "", reason.len),
		.name = keep_str(p, source.name.s, source.name.len),
		.op = op ? keep_cstr(p, op->op) : NULL,
		.phase = op ? keep_name(p, NAMES_PHASE, op->phase) : NULL,
		.scope = op ? keep_cstr(p, op->autocast.scope) : NULL,
		.stale = stale,
	};
	if (op) {
		jsonw_lit(w, ",\"op\":");
		jsonw_str(w, op->op);
		jsonw_lit(w, ",\"phase\":");
		jsonw_str(w, name_of(p, NAMES_PHASE, op->phase));
		if (op->autocast.scope) {
			jsonw_lit(w, ",\"scope\":");
			jsonw_str(w, op->autocast.scope);
		}
	}
	jsonw_lit(w, ",\"arg\":");
	jsonw_i64(w, arg);
	jsonw_lit(w, ",\"tensor\":");
	jsonw_u64(w, source.id);
	jsonw_lit(w, ",\"result\":");
	jsonw_u64(w, result.id);
	jsonw_lit(w, ",\"from\":");
	jsonw_str(w, from_name);
	jsonw_lit(w, ",\"to\":");
	jsonw_str(w, to_name);
	jsonw_lit(w, ",\"cache\":");
	jsonw_str(w, name_of(p, NAMES_CACHE, cache));
	jsonw_lit(w, ",\"reason\":");
	jsonw_strn(w, reason.s ? reason.s : "", reason.len);
	jsonw_lit(w, ",\"bytes\":");
	jsonw_u64(w, bytes);
	if (stale)
		jsonw_lit(w, ",\"stale\":true");
	if (source.name.s) {
		jsonw_lit(w, ",\"name\":");
		jsonw_strn(w, source.name.s, source.name.len);
	}
	jsonw_lit(w, ",\"shape\":");
	write_shape(w, &source);
	if (source.flags & 2)
		jsonw_lit(w, ",\"requires_grad\":true");
	if (source.flags & 1)
		jsonw_lit(w, ",\"leaf\":true");
	jsonw_lit(w, "}}");
	emit(p, w, &e);
	p->casts++;
	if (stats)
		counter(cv, p, t, "amp.cache", "autocast cache", time_ns,
			"entries", (double)entries, "bytes", (double)cache_bytes);
}

static void scope_label(struct jsonw *w, const struct conv_process *p,
			struct str scope, unsigned device, unsigned dtype,
			bool enabled)
{
	jsonw_reset(w);
	if (scope.s) {
		jsonw_raw(w, scope.s, scope.len);
	} else {
		jsonw_printf(w, "autocast(%s, %s)", name_of(p, NAMES_DEVICE, device),
			     enabled ? name_of(p, NAMES_DTYPE, dtype) : "off");
	}
}

static void scope_end(struct conv *cv, struct conv_process *p,
		      struct conv_thread *t, const struct open_scope *s,
		      uint64_t time_ns, const char *closed_by)
{
	struct jsonw *w = &cv->buf;
	struct trace_event e;

	jsonw_reset(w);
	event_head(w, &e, TRACE_SCOPE_END, s->label, strlen(s->label),
		   "amp.scope", 'E', (int64_t)(time_ns - cv->base_ns), p, t->tid);
	jsonw_printf(w, ",\"args\":{\"depth\":%d", s->depth);
	if (closed_by) {
		jsonw_lit(w, ",\"closed_by\":");
		jsonw_str(w, closed_by);
	}
	jsonw_lit(w, "}}");
	emit(p, w, &e);
}

static void on_scope(struct conv *cv, struct conv_process *p,
		     struct conv_thread *t, struct cursor *c, uint64_t time_ns,
		     bool enter)
{
	struct jsonw *w = &cv->buf;
	int depth = get_i32(c);
	unsigned device = get_u8(c), dtype = get_u8(c);
	bool enabled = get_u8(c), cache_enabled = get_u8(c);
	struct str scope = get_str(c);

	if (c->bad)
		return;
	if (!enter) {
		/* A region the recorder saw open; an exit of one opened
		 * before it attached has no B to close. */
		if (!t->nscopes)
			return;
		struct open_scope *s = &t->scopes[--t->nscopes];
		scope_end(cv, p, t, s, time_ns, NULL);
		free(s->name);
		free(s->label);
		return;
	}
	struct jsonw label;
	jsonw_init(&label);
	scope_label(&label, p, scope, device, dtype, enabled);
	struct trace_event e;
	jsonw_reset(w);
	event_head(w, &e, TRACE_SCOPE_BEGIN, label.data, label.len,
		   "amp.scope", 'B', (int64_t)(time_ns - cv->base_ns), p, t->tid);
	e.scope = (struct trace_scope){
		.scope = keep_str(p, scope.s, scope.len), .depth = depth,
		.device = keep_name(p, NAMES_DEVICE, device),
		.dtype = keep_name(p, NAMES_DTYPE, dtype),
		.enabled = enabled, .cache_enabled = cache_enabled,
	};
	jsonw_printf(w, ",\"args\":{\"scope\":");
	jsonw_strn(w, scope.s, scope.len);
	jsonw_printf(w, ",\"depth\":%d,\"device\":\"%s\",\"dtype\":\"%s\","
			"\"enabled\":%s,\"cache_enabled\":%s}}",
		     depth, name_of(p, NAMES_DEVICE, device),
		     name_of(p, NAMES_DTYPE, dtype), enabled ? "true" : "false",
		     cache_enabled ? "true" : "false");
	emit(p, w, &e);
	t->scopes = grow(t->scopes, &t->cap_scopes, t->nscopes + 1,
			 sizeof *t->scopes);
	t->scopes[t->nscopes++] = (struct open_scope){
		.name = scope.s ? dupn(scope.s, scope.len) : NULL,
		.label = dupn(label.data, label.len),
		.depth = depth,
	};
	jsonw_free(&label);
}

static void on_cache_clear(struct conv *cv, struct conv_process *p,
			   struct conv_thread *t, struct cursor *c,
			   uint64_t time_ns)
{
	struct jsonw *w = &cv->buf;
	uint64_t entries = get_u64(c), bytes = get_u64(c);

	if (c->bad)
		return;
	struct trace_event e;
	jsonw_reset(w);
	event_head(w, &e, TRACE_CACHE_CLEAR, "cache clear", 11, "amp.cache",
		   'i', (int64_t)(time_ns - cv->base_ns), p, t->tid);
	e.cache = (struct trace_cache_clear){ entries, bytes };
	jsonw_lit(w, ",\"s\":\"t\",\"args\":{\"entries\":");
	jsonw_u64(w, entries);
	jsonw_lit(w, ",\"bytes\":");
	jsonw_u64(w, bytes);
	jsonw_lit(w, "}}");
	emit(p, w, &e);
	counter(cv, p, t, "amp.cache", "autocast cache", time_ns, "entries", 0,
		"bytes", 0);
}

static void on_scaler(struct conv *cv, struct conv_process *p,
		      struct conv_thread *t, struct cursor *c, uint64_t time_ns)
{
	struct jsonw *w = &cv->buf;
	uint64_t scaler_id = get_u64(c), optimizer_id = get_u64(c);
	uint64_t inf_tensor = get_u64(c);
	double scale = get_f64(c);
	bool found_inf = get_u8(c), skipped = get_u8(c);
	struct str what = get_str(c);

	if (c->bad)
		return;
	char label[64];
	int n = snprintf(label, sizeof label, "scaler %.*s",
			 (int)(what.len < 40 ? what.len : 40),
			 what.s ? what.s : "");
	struct trace_event e;
	jsonw_reset(w);
	event_head(w, &e, TRACE_SCALER, label, (size_t)n, "amp.scaler", 'i',
		   (int64_t)(time_ns - cv->base_ns), p, t->tid);
	/* JSON has no NaN or infinity: both are written as null, read as NaN */
	e.scaler = (struct trace_scaler){
		.what = keep_str(p, what.s ? what.s : "", what.len),
		.scaler_id = scaler_id, .optimizer_id = optimizer_id,
		.inf_tensor = inf_tensor, .scale = isfinite(scale) ? scale : NAN,
		.found_inf = found_inf, .step_skipped = skipped,
	};
	jsonw_lit(w, ",\"s\":\"t\",\"args\":{\"what\":");
	jsonw_strn(w, what.s ? what.s : "", what.len);
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
	emit(p, w, &e);

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

static void diag(struct conv *cv, struct conv_process *p, uint64_t tid,
		 uint64_t time_ns, const char *kind, size_t kind_len,
		 const char *message, size_t message_len, uint64_t op_id,
		 uint64_t tensor_id, char scope)
{
	struct jsonw *w = &cv->buf;
	struct trace_event e;

	jsonw_reset(w);
	event_head(w, &e, TRACE_DIAG, kind, kind_len, "amp.diag", 'i',
		   (int64_t)(time_ns - cv->base_ns), p, tid);
	e.diag = (struct trace_diag){
		.kind = keep_str(p, kind, kind_len),
		.message = keep_str(p, message, message_len),
		.op_id = op_id, .tensor = tensor_id,
	};
	jsonw_printf(w, ",\"s\":\"%c\",\"args\":{\"kind\":", scope);
	jsonw_strn(w, kind, kind_len);
	jsonw_lit(w, ",\"message\":");
	jsonw_strn(w, message, message_len);
	if (op_id) {
		jsonw_lit(w, ",\"op_id\":");
		jsonw_u64(w, op_id);
	}
	if (tensor_id) {
		jsonw_lit(w, ",\"tensor\":");
		jsonw_u64(w, tensor_id);
	}
	jsonw_lit(w, "}}");
	emit(p, w, &e);
}

static void on_diag(struct conv *cv, struct conv_process *p,
		    struct conv_thread *t, struct cursor *c, uint64_t time_ns)
{
	uint64_t op_id = get_u64(c), tensor_id = get_u64(c);
	struct str kind = get_str(c), message = get_str(c);

	if (c->bad)
		return;
	if (!kind.s)
		kind = (struct str){ "diag", 4 };
	diag(cv, p, t->tid, time_ns, kind.s, kind.len,
	     message.s ? message.s : "", message.len, op_id, tensor_id, 't');
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
	p->gpu_tracks = grow(p->gpu_tracks, &cap, p->ngpu_tracks + 1,
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
		e = meta_event(p, "process_name", pid, 0, name, 0);
		emit(p, w, &e);
		jsonw_reset(w);
		jsonw_printf(w, "{\"name\":\"process_sort_index\",\"ph\":\"M\","
				"\"pid\":%lld,\"tid\":0,\"args\":{\"sort_index\":"
				"%u}}",
			     pid, 0x10000u + device);
		e = meta_event(p, "process_sort_index", pid, 0, NULL,
			       0x10000 + device);
	} else {
		snprintf(name, sizeof name, "stream %u", stream);
		jsonw_printf(w, "{\"name\":\"thread_name\",\"ph\":\"M\","
				"\"pid\":%lld,\"tid\":%u,\"args\":{\"name\":"
				"\"%s\"}}",
			     pid, stream, name);
		e = meta_event(p, "thread_name", pid, stream, name, 0);
		emit(p, w, &e);
		jsonw_reset(w);
		jsonw_printf(w, "{\"name\":\"thread_sort_index\",\"ph\":\"M\","
				"\"pid\":%lld,\"tid\":%u,\"args\":{\"sort_index\":"
				"%u}}",
			     pid, stream, stream);
		e = meta_event(p, "thread_sort_index", pid, stream, NULL, stream);
	}
	emit(p, w, &e);
}

/* One kernel or memcpy (raw.h RAW_KIND_GPU_ACTIVITY) as Kineto writes
 * it: an X event on the GPU's pid, tid = stream, linked to its op by
 * "External id". */
static void on_gpu_activity(struct conv *cv, struct conv_process *p,
			    struct cursor *c, uint64_t start_ns)
{
	uint64_t end_ns = get_u64(c), op_id = get_u64(c);
	uint64_t cast_id = get_u64(c), bytes = get_u64(c);
	uint32_t device = (uint32_t)get_i32(c), stream = (uint32_t)get_i32(c);
	uint32_t correlation = (uint32_t)get_i32(c);
	int32_t grid[3], block[3];
	for (int k = 0; k < 3; k++)
		grid[k] = get_i32(c);
	for (int k = 0; k < 3; k++)
		block[k] = get_i32(c);
	int32_t registers = get_i32(c), shared_memory = get_i32(c);
	unsigned kind = get_u8(c);
	get_u8(c); /* copy kind: the name says it */
	get_u8(c);
	get_u8(c);
	struct str name = get_str(c);
	if (c->bad)
		return;
	bool memcpy_kind = kind == AMP_GPU_ACTIVITY_MEMCPY;
	if (!name.s)
		name = memcpy_kind ? (struct str){ "Memcpy", 6 }
				   : (struct str){ "kernel", 6 };
	gpu_announce(cv, p, device, UINT32_MAX);
	gpu_announce(cv, p, device, stream);
	uint64_t dur = end_ns > start_ns ? end_ns - start_ns : 0;
	struct jsonw *w = &cv->buf;
	/* Readers know the kernel category; a memcpy is someone else's. */
	struct trace_event e = {
		.kind = memcpy_kind ? TRACE_OTHER : TRACE_KERNEL, .ph = 'X',
		.name = keep_str(p, name.s, name.len),
		.cat = keep_cstr(p, memcpy_kind ? "gpu_memcpy" : "kernel"),
		.pid = gpu_pid(p, device), .tid = stream,
		.ts = to_us((int64_t)(start_ns - cv->base_ns)),
		.dur = to_us((int64_t)dur),
	};
	if (!memcpy_kind)
		e.kernel = (struct trace_kernel){
			.linked = cast_id || op_id, .cast = cast_id != 0,
			.external_id = cast_id ? cast_id : op_id,
			.host_pid = p->pid,
		};
	jsonw_reset(w);
	jsonw_lit(w, "{\"name\":");
	jsonw_strn(w, name.s, name.len);
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
	emit(p, w, &e);
}

static void on_gpu_status(struct conv_process *p, struct cursor *c)
{
	int32_t status = get_i32(c);
	struct str reason = get_str(c);

	if (c->bad)
		return;
	p->gpu_status = status == 0 ? 1 : -1;
	free(p->gpu_reason);
	p->gpu_reason = reason.s ? dupn(reason.s, reason.len) : NULL;
}

static void on_gpu_stats(struct conv_process *p, struct cursor *c)
{
	uint64_t stats[7];

	for (int k = 0; k < 7; k++)
		stats[k] = get_u64(c);
	if (c->bad)
		return;
	memcpy(p->gpu_stats, stats, sizeof stats);
	p->gpu_stats_seen = true;
}

static void convert_record(struct conv *cv, struct conv_process *p,
			   struct conv_thread *t, const struct raw_record *r)
{
	struct cursor c = { (const uint8_t *)(r + 1),
			    (const uint8_t *)r + r->size, false };

	if (r->time_ns > t->last_ns)
		t->last_ns = r->time_ns;
	if (r->time_ns > p->last_ns)
		p->last_ns = r->time_ns;
	switch (r->kind) {
	case AMP_EVENT_OP_BEGIN:
		on_op_begin(p, t, &c, r->time_ns);
		break;
	case AMP_EVENT_OP_END:
		on_op_end(cv, p, t, &c, r->time_ns);
		break;
	case AMP_EVENT_CAST:
		on_cast(cv, p, t, &c, r->time_ns);
		break;
	case AMP_EVENT_SCOPE_ENTER:
	case AMP_EVENT_SCOPE_EXIT:
		on_scope(cv, p, t, &c, r->time_ns,
			 r->kind == AMP_EVENT_SCOPE_ENTER);
		break;
	case AMP_EVENT_CACHE_CLEAR:
		on_cache_clear(cv, p, t, &c, r->time_ns);
		break;
	case AMP_EVENT_SCALER:
		on_scaler(cv, p, t, &c, r->time_ns);
		break;
	case AMP_EVENT_DIAG:
		on_diag(cv, p, t, &c, r->time_ns);
		break;
	case RAW_KIND_GPU_ACTIVITY:
		on_gpu_activity(cv, p, &c, r->time_ns);
		break;
	case RAW_KIND_GPU_STATUS:
		on_gpu_status(p, &c);
		break;
	case RAW_KIND_GPU_STATS:
		on_gpu_stats(p, &c);
		break;
	default:
		c.bad = true;
	}
	if (c.bad)
		p->raw_errors++;
}

/* ------------------------------------------------------- thread files */

static void process_metadata(struct conv *cv, struct conv_process *p)
{
	struct jsonw *w = &cv->buf;
	char name[256];

	if (p->rank >= 0)
		snprintf(name, sizeof name, "rank %d: %s (pid %ld)", p->rank,
			 p->name, p->pid);
	else
		snprintf(name, sizeof name, "%s (pid %ld)", p->name, p->pid);
	jsonw_reset(w);
	jsonw_printf(w, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%ld,"
			"\"tid\":0,\"args\":{\"name\":",
		     p->pid);
	jsonw_str(w, name);
	if (p->rank >= 0)
		jsonw_printf(w, ",\"rank\":%d", p->rank);
	jsonw_lit(w, ",\"argv\":[");
	for (int i = 0; i < p->argc; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, p->argv[i]);
	}
	jsonw_lit(w, "]}}");
	struct trace_event e =
		meta_event(p, "process_name", p->pid, 0, name, 0);
	e.meta.rank = p->rank;
	emit(p, w, &e);
	long sort_index = p->rank >= 0 ? (long)p->rank : (long)cv->nprocs;
	jsonw_reset(w);
	jsonw_printf(w, "{\"name\":\"process_sort_index\",\"ph\":\"M\","
			"\"pid\":%ld,\"tid\":0,\"args\":{\"sort_index\":%ld}}",
		     p->pid, sort_index);
	e = meta_event(p, "process_sort_index", p->pid, 0, NULL, sort_index);
	emit(p, w, &e);
}


static void thread_metadata(struct conv *cv, struct conv_process *p,
			    struct conv_thread *t,
			    const struct raw_thread_header *h)
{
	struct jsonw *w = &cv->buf;
	char name[64];

	jsonw_reset(w);
	snprintf(name, sizeof name, "%.32s (thread %llu)",
		 h->name[0] ? h->name : "thread",
		 (unsigned long long)h->amp_thread);
	jsonw_printf(w, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%ld,"
			"\"tid\":%llu,\"args\":{\"name\":",
		     p->pid, (unsigned long long)t->tid);
	jsonw_str(w, name);
	jsonw_printf(w, ",\"os_tid\":%lld}}", (long long)h->os_tid);
	struct trace_event e =
		meta_event(p, "thread_name", p->pid, t->tid, name, 0);
	emit(p, w, &e);
	jsonw_reset(w);
	jsonw_printf(w, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%ld,"
			"\"tid\":%llu,\"args\":{\"sort_index\":%llu}}",
		     p->pid, (unsigned long long)t->tid,
		     (unsigned long long)t->tid);
	e = meta_event(p, "thread_sort_index", p->pid, t->tid, NULL,
		       (int64_t)t->tid);
	emit(p, w, &e);
}

static const uint8_t *map_chunk(struct conv_thread *t, uint64_t index)
{
	struct stat st;

	if (fstat(t->fd, &st) != 0 ||
	    (uint64_t)st.st_size < (index + 1) * RAW_CHUNK)
		return NULL;
	void *chunk = mmap(NULL, RAW_CHUNK, PROT_READ, MAP_SHARED, t->fd,
			   (off_t)(index * RAW_CHUNK));
	return chunk == MAP_FAILED ? NULL : chunk;
}

static size_t read_thread(struct conv *cv, struct conv_process *p,
			  struct conv_thread *t)
{
	size_t count = 0;

	if (t->stopped)
		return 0;
	if (!t->chunk) {
		t->chunk = map_chunk(t, 0);
		if (!t->chunk)
			return 0;
	}
	if (!t->started) {
		const struct raw_thread_header *h = (const void *)t->chunk;
		if (atomic_load_explicit(&((struct raw_thread_header *)h)->magic,
					 memory_order_acquire) != RAW_THREAD_MAGIC)
			return 0;
		if (h->version != RAW_VERSION || h->header_size < sizeof *h ||
		    h->header_size >= RAW_CHUNK || h->header_size % 8) {
			t->stopped = true;
			p->raw_errors++;
			return 0;
		}
		t->tid = h->amp_thread;
		t->offset = h->header_size;
		t->started = true;
		if (!p->announced) {
			p->announced = true;
			p->writer = cv->writer_for(cv->ctx, p);
			if (cv->trace_for)
				p->trace = cv->trace_for(cv->ctx, p);
			keep_names(p);
			process_metadata(cv, p);
		}
		if (t->tid == RAW_GPU_STREAM)
			p->gpu_stream = true;
		else
			thread_metadata(cv, p, t, h);
	}
	for (;;) {
		struct raw_record *r = (struct raw_record *)(t->chunk + t->offset);
		uint32_t size = RAW_CHUNK - t->offset >= 4
					? atomic_load_explicit(&r->size,
							       memory_order_acquire)
					: RAW_SIZE_NEXT_CHUNK;
		if (size == 0)
			break;
		if (size == RAW_SIZE_THREAD_END) {
			/* The thread is gone: its file with it. */
			munmap((void *)t->chunk, RAW_CHUNK);
			t->chunk = NULL;
			close(t->fd);
			t->fd = -1;
			unlink(t->path);
			t->stopped = true;
			break;
		}
		if (size == RAW_SIZE_NEXT_CHUNK) {
			const uint8_t *next = map_chunk(t, t->chunk_index + 1);
			if (!next)
				break;
			munmap((void *)t->chunk, RAW_CHUNK);
			/* The writer has moved on: give the disk space back. */
			fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				  (off_t)(t->chunk_index * RAW_CHUNK), RAW_CHUNK);
			t->chunk = next;
			t->chunk_index++;
			t->offset = 0;
			continue;
		}
		if (size < sizeof *r || size % 8 || size > RAW_CHUNK - t->offset) {
			t->stopped = true;
			p->raw_errors++;
			break;
		}
		convert_record(cv, p, t, r);
		t->offset += size;
		count++;
	}
	return count;
}

/* ----------------------------------------------------- process files */

static char **string_array(const cJSON *array, size_t *count)
{
	size_t n = (size_t)cJSON_GetArraySize(array);
	char **out = calloc(n + 1, sizeof *out);
	size_t i = 0;
	const cJSON *item;

	if (!out)
		abort();
	cJSON_ArrayForEach(item, array)
		out[i++] = strdup(cJSON_IsString(item) ? item->valuestring : "?");
	*count = i;
	return out;
}

static char *read_small_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *text = NULL;
	size_t len = 0, cap = 0;

	if (!f)
		return NULL;
	for (;;) {
		text = grow(text, &cap, len + 4097, 1);
		size_t n = fread(text + len, 1, 4096, f);
		len += n;
		if (n < 4096)
			break;
	}
	fclose(f);
	text[len] = '\0';
	return text;
}

/* Reads p<pid>/process.json; NULL while it is not there yet. */
static struct conv_process *load_process(struct conv *cv, const char *dir)
{
	char path[PATH_MAX + 320];

	snprintf(path, sizeof path, "%s/process.json", dir);
	char *text = read_small_file(path);
	if (!text)
		return NULL;
	cJSON *root = cJSON_Parse(text);
	free(text);
	if (!root)
		return NULL;
	struct conv_process *p = calloc(1, sizeof *p);
	if (!p)
		abort();
	const cJSON *v;
	p->pid = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(root, "pid"));
	p->ppid = (long)cJSON_GetNumberValue(cJSON_GetObjectItem(root, "ppid"));
	v = cJSON_GetObjectItem(root, "rank");
	p->rank = cJSON_IsNumber(v) ? v->valueint : -1;
	v = cJSON_GetObjectItem(root, "exe");
	p->exe = strdup(cJSON_IsString(v) ? v->valuestring : "");
	size_t argc = 0;
	p->argv = string_array(cJSON_GetObjectItem(root, "argv"), &argc);
	p->argc = (int)argc;
	const char *argv0 = argc ? p->argv[0] : p->exe;
	const char *slash = strrchr(argv0, '/');
	p->name = strdup(slash ? slash + 1 : argv0);
	const cJSON *names = cJSON_GetObjectItem(root, "names");
	for (int i = 0; i < NAMES_COUNT; i++)
		p->names[i] = string_array(
			cJSON_GetObjectItem(names, name_table_keys[i]),
			&p->name_count[i]);
	cJSON_Delete(root);
	p->dir = strdup(dir);
	p->status = "running";
	return p;
}

static struct conv_thread *find_thread(struct conv_process *p,
				       const char *path)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (!strcmp(p->threads[i]->path, path))
			return p->threads[i];
	return NULL;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* New thread files of a process, in name order (t1.raw before t2.raw),
 * so thread metadata comes out in the same order every run. */
static void scan_threads(struct conv_process *p)
{
	DIR *d = opendir(p->dir);
	struct dirent *e;
	char **found = NULL;
	size_t nfound = 0, cap = 0;

	if (!d)
		return;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] != 't' || len < 5 ||
		    strcmp(e->d_name + len - 4, ".raw"))
			continue;
		char path[PATH_MAX + 320];
		snprintf(path, sizeof path, "%s/%s", p->dir, e->d_name);
		if (find_thread(p, path))
			continue;
		found = grow(found, &cap, nfound + 1, sizeof *found);
		found[nfound++] = strdup(path);
	}
	closedir(d);
	if (nfound) /* qsort(NULL, 0) is undefined */
		qsort(found, nfound, sizeof *found, compare_names);
	for (size_t i = 0; i < nfound; i++) {
		int fd = open(found[i], O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			free(found[i]);
			continue;
		}
		struct conv_thread *t = calloc(1, sizeof *t);
		if (!t)
			abort();
		t->path = found[i];
		t->fd = fd;
		size_t cap_threads = p->nthreads;
		p->threads = grow(p->threads, &cap_threads, p->nthreads + 1,
				  sizeof *p->threads);
		p->threads[p->nthreads++] = t;
	}
	free(found);
}

static bool known_dir(const struct conv *cv, const char *dir)
{
	for (size_t i = 0; i < cv->nprocs; i++)
		if (!strcmp(cv->procs[i]->dir, dir))
			return true;
	return false;
}

static void scan_processes(struct conv *cv)
{
	DIR *d = opendir(cv->raw_dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_name[0] != 'p')
			continue;
		char dir[PATH_MAX + 300];
		snprintf(dir, sizeof dir, "%s/%s", cv->raw_dir, e->d_name);
		if (known_dir(cv, dir))
			continue;
		struct conv_process *p = load_process(cv, dir);
		if (!p)
			continue;
		size_t cap = cv->nprocs;
		cv->procs = grow(cv->procs, &cap, cv->nprocs + 1,
				 sizeof *cv->procs);
		cv->procs[cv->nprocs++] = p;
	}
	closedir(d);
}

void conv_init(struct conv *c, const char *raw_dir, uint64_t base_ns,
	       conv_writer_fn writer_for, void *ctx)
{
	*c = (struct conv){ .raw_dir = strdup(raw_dir), .base_ns = base_ns,
			    .writer_for = writer_for, .ctx = ctx };
	jsonw_init(&c->buf);
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

size_t conv_poll(struct conv *c)
{
	size_t count = 0;
	/* New processes and threads are rare: look for them every few ms,
	 * not on every poll of a busy program. */
	uint64_t now = monotonic_ns();
	bool scan = c->final || now - c->last_scan_ns >= 5 * 1000 * 1000;

	if (scan) {
		c->last_scan_ns = now;
		scan_processes(c);
	}
	for (size_t i = 0; i < c->nprocs; i++) {
		struct conv_process *p = c->procs[i];
		if (scan)
			scan_threads(p);
		for (size_t j = 0; j < p->nthreads; j++)
			count += read_thread(c, p, p->threads[j]);
	}
	return count;
}

/* ------------------------------------------------------------- the end */

static void close_thread(struct conv *cv, struct conv_process *p,
			 struct conv_thread *t, uint64_t end_ns,
			 const char *closed_by)
{
	struct jsonw *w = &cv->buf;

	/* Innermost first, so the X events nest like the stack did. */
	while (t->nops) {
		struct pending_op *op = &t->ops[--t->nops];
		char label[256];
		snprintf(label, sizeof label, "%s%s%s", op->op,
			 op->overload[0] ? "." : "", op->overload);
		int64_t dur = (int64_t)(end_ns > op->begin_ns
						? end_ns - op->begin_ns : 0);
		struct trace_event e;
		jsonw_reset(w);
		event_head(w, &e, TRACE_OP, label, strlen(label), "amp.op", 'X',
			   (int64_t)(op->begin_ns - cv->base_ns), p, t->tid);
		jsonw_lit(w, ",\"dur\":");
		jsonw_us(w, dur);
		jsonw_lit(w, ",\"args\":{\"op_id\":");
		jsonw_u64(w, op->op_id);
		jsonw_lit(w, ",\"op\":");
		jsonw_str(w, op->op);
		jsonw_lit(w, ",\"overload\":");
		jsonw_str(w, op->overload);
		jsonw_printf(w, ",\"phase\":\"%s\",\"device\":\"%s\","
				"\"emulated\":%s",
			     name_of(p, NAMES_PHASE, op->phase),
			     name_of(p, NAMES_DEVICE, op->device),
			     op->emulated ? "true" : "false");
		if (op->parent_op_id) {
			jsonw_lit(w, ",\"parent_op_id\":");
			jsonw_u64(w, op->parent_op_id);
		}
		struct str scope = { op->autocast.scope,
				     op->autocast.scope ? strlen(op->autocast.scope)
							: 0 };
		write_autocast(w, p, t, &op->autocast, scope);
		jsonw_lit(w, ",\"incomplete\":true,\"closed_by\":");
		jsonw_str(w, closed_by);
		jsonw_lit(w, "}}");
		e.dur = to_us(dur);
		e.op = (struct trace_op){
			.op_id = op->op_id, .parent_op_id = op->parent_op_id,
			.op = keep_cstr(p, op->op),
			.overload = keep_cstr(p, op->overload),
			.phase = keep_name(p, NAMES_PHASE, op->phase),
			.device = keep_name(p, NAMES_DEVICE, op->device),
			.emulated = op->emulated, .incomplete = true,
			.autocast = keep_autocast(p, t, &op->autocast, scope),
		};
		emit(p, w, &e);
		p->ops++;
		p->in_flight_ops++;
		free_pending(op);
	}
	while (t->nscopes) {
		struct open_scope *s = &t->scopes[--t->nscopes];
		scope_end(cv, p, t, s, end_ns, closed_by);
		free(s->name);
		free(s->label);
	}
}

static bool file_exists(const char *dir, const char *name)
{
	char path[PATH_MAX + 320];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

void conv_finish(struct conv *c, long child_pid, int wait_status,
		 uint64_t end_ns)
{
	c->final = true;
	while (conv_poll(c))
		;
	for (size_t i = 0; i < c->nprocs; i++) {
		struct conv_process *p = c->procs[i];
		char message[256], signame[32];
		bool died = false;

		if (p->pid == child_pid && WIFSIGNALED(wait_status)) {
			p->status = "signaled";
			p->signal = WTERMSIG(wait_status);
			died = true;
			snprintf(message, sizeof message,
				 "%s (pid %ld) was killed by %s (%s)", p->name,
				 p->pid,
				 conv_signal_name(p->signal, signame,
						  sizeof signame),
				 strsignal(p->signal));
		} else if (p->pid == child_pid && WIFEXITED(wait_status)) {
			p->status = "exited";
			p->exit_code = WEXITSTATUS(wait_status);
		} else if (file_exists(p->dir, "exit")) {
			p->status = "exited";
			p->exit_code = -1;
		} else {
			p->status = "died";
			died = true;
			snprintf(message, sizeof message,
				 "%s (pid %ld) ended without a clean exit "
				 "(crashed or killed)", p->name, p->pid);
		}
		if (!p->announced)
			continue; /* it recorded nothing */
		uint64_t when = p->last_ns;
		if (p->pid == child_pid && end_ns > when)
			when = end_ns;
		const char *closed_by = died ? "process died" : "process exit";
		/* Where it died: the innermost op in flight, if any. */
		for (size_t j = 0; died && j < p->nthreads; j++) {
			const struct conv_thread *t = p->threads[j];
			if (!t->nops)
				continue;
			const struct pending_op *op = &t->ops[t->nops - 1];
			size_t len = strlen(message);
			snprintf(message + len, sizeof message - len,
				 " in op %.64s%s%.32s (op %llu, thread %llu)",
				 op->op, op->overload[0] ? "." : "", op->overload,
				 (unsigned long long)op->op_id,
				 (unsigned long long)t->tid);
			break;
		}
		for (size_t j = 0; j < p->nthreads; j++)
			close_thread(c, p, p->threads[j], when, closed_by);
		if (died)
			diag(c, p, 0, when, "process-died", 12, message,
			     strlen(message), 0, 0, 'p');
		/* The last event: how the process ended, as a label. */
		struct jsonw *w = &c->buf;
		jsonw_reset(w);
		if (!strcmp(p->status, "signaled"))
			snprintf(message, sizeof message, "killed by %s",
				 conv_signal_name(p->signal, signame,
						  sizeof signame));
		else if (!strcmp(p->status, "exited") && p->exit_code >= 0)
			snprintf(message, sizeof message, "exit %d",
				 p->exit_code);
		else
			snprintf(message, sizeof message, "%s", p->status);
		jsonw_printf(w, "{\"name\":\"process_labels\",\"ph\":\"M\","
				"\"pid\":%ld,\"tid\":0,\"args\":{\"labels\":",
			     p->pid);
		jsonw_str(w, message);
		jsonw_lit(w, "}}");
		struct trace_event e =
			meta_event(p, "process_labels", p->pid, 0, message, 0);
		emit(p, w, &e);
	}
}

void conv_process_json(const struct conv_process *p, struct jsonw *w)
{
	char signame[32];

	jsonw_printf(w, "{\"pid\":%ld,\"rank\":", p->pid);
	if (p->rank >= 0)
		jsonw_printf(w, "%d", p->rank);
	else
		jsonw_lit(w, "null");
	jsonw_lit(w, ",\"argv\":[");
	for (int i = 0; i < p->argc; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, p->argv[i]);
	}
	jsonw_printf(w, "],\"status\":\"%s\"", p->status);
	if (!strcmp(p->status, "exited") && p->exit_code >= 0)
		jsonw_printf(w, ",\"exit_code\":%d", p->exit_code);
	if (!strcmp(p->status, "signaled"))
		jsonw_printf(w, ",\"signal\":%d,\"signal_name\":\"%s\"",
			     p->signal,
			     conv_signal_name(p->signal, signame, sizeof signame));
	jsonw_printf(w, ",\"threads\":%zu,\"events\":%llu,\"ops\":%llu,"
			"\"casts\":%llu,\"in_flight_ops\":%llu,"
			"\"raw_errors\":%llu",
		     p->nthreads - (p->gpu_stream ? 1 : 0),
		     (unsigned long long)p->events,
		     (unsigned long long)p->ops, (unsigned long long)p->casts,
		     (unsigned long long)p->in_flight_ops,
		     (unsigned long long)p->raw_errors);
	if (p->gpu_status < 0) {
		jsonw_lit(w, ",\"gpu\":{\"timing\":false,\"reason\":");
		jsonw_str(w, p->gpu_reason ? p->gpu_reason : "");
		jsonw_raw(w, "}", 1);
	} else if (p->gpu_status > 0) {
		jsonw_printf(w, ",\"gpu\":{\"timing\":true,\"kernels\":%llu,"
				"\"memcpys\":%llu,\"complete\":%s",
			     (unsigned long long)p->kernels,
			     (unsigned long long)p->memcpys,
			     p->gpu_stats_seen ? "true" : "false");
		if (p->gpu_stats_seen)
			jsonw_printf(w, ",\"unlinked\":%llu,\"untimed\":%llu,"
					"\"dropped\":%llu,\"buffers\":%llu",
				     (unsigned long long)p->gpu_stats[2],
				     (unsigned long long)p->gpu_stats[3],
				     (unsigned long long)(p->gpu_stats[4] +
							  p->gpu_stats[6]),
				     (unsigned long long)p->gpu_stats[5]);
		jsonw_raw(w, "}", 1);
	}
	jsonw_raw(w, "}", 1);
}

void conv_free(struct conv *c)
{
	for (size_t i = 0; i < c->nprocs; i++) {
		struct conv_process *p = c->procs[i];
		for (size_t j = 0; j < p->nthreads; j++) {
			struct conv_thread *t = p->threads[j];
			if (t->chunk)
				munmap((void *)t->chunk, RAW_CHUNK);
			if (t->fd >= 0)
				close(t->fd);
			for (size_t k = 0; k < t->nops; k++)
				free_pending(&t->ops[k]);
			for (size_t k = 0; k < t->nscopes; k++) {
				free(t->scopes[k].name);
				free(t->scopes[k].label);
			}
			free(t->ops);
			free(t->scopes);
			free(t->path);
			free(t);
		}
		free(p->threads);
		for (int k = 0; k < NAMES_COUNT; k++)
			free(p->trace_names[k]);
		free(p->gpu_reason);
		free(p->gpu_tracks);
		for (int k = 0; k < NAMES_COUNT; k++) {
			for (size_t n = 0; n < p->name_count[k]; n++)
				free(p->names[k][n]);
			free(p->names[k]);
		}
		for (int k = 0; k < p->argc; k++)
			free(p->argv[k]);
		free(p->argv);
		free(p->exe);
		free(p->name);
		free(p->dir);
		free(p);
	}
	free(c->procs);
	free(c->raw_dir);
	jsonw_free(&c->buf);
}
