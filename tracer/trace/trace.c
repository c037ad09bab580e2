/* Loads a trace file into `struct trace` (see trace.h; the fields are
 * FORMAT.md's). */
#include "trace.h"

#include "trace_writer.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------ field access */

struct loader {
	struct trace *trace;
	struct trace_error *err;
	const char *path;
	size_t line;
	size_t index;
	const char *what;  /* "amp.op event" for messages */
	bool failed;
};

static void fail(struct loader *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void fail(struct loader *l, const char *fmt, ...)
{
	char detail[700];
	va_list ap;

	if (l->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof detail, fmt, ap);
	va_end(ap);
	trace_error_set(l->err, "%s:%zu: event %zu (%s): %s", l->path, l->line,
			l->index, l->what, detail);
	l->failed = true;
}

static const char *type_name(const cJSON *v)
{
	if (!v)
		return "missing";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNull(v))
		return "null";
	if (cJSON_IsArray(v))
		return "an array";
	return "an object";
}

/* Required unless `optional`; absent optional values give the default. */
static const char *get_string(struct loader *l, const cJSON *obj,
			      const char *key, const char *where, bool optional,
			      bool nullable)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsString(v))
		return trace_intern(l->trace, v->valuestring);
	if ((!v && optional) || (cJSON_IsNull(v) && nullable))
		return NULL;
	fail(l, "%s%s must be a string%s, got %s", where, key,
	     nullable ? " or null" : "", type_name(v));
	return NULL;
}

static double get_number(struct loader *l, const cJSON *obj, const char *key,
			 const char *where, bool optional, double fallback)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsNumber(v))
		return v->valuedouble;
	if (!v && optional)
		return fallback;
	fail(l, "%s%s must be a number, got %s", where, key, type_name(v));
	return fallback;
}

/* JSON numbers are doubles: every one that becomes a C integer is
 * checked against the range of what it becomes (a cast from outside it is
 * undefined), 64-bit ones against 2^53, the integers a double holds
 * exactly. */
#define JSON_INTEGER_MAX 9007199254740992.0

static int64_t integer_in(struct loader *l, double v, const char *where,
			  const char *key, double min, double max)
{
	if (v >= min && v <= max && v == floor(v))
		return (int64_t)v;
	fail(l, "%s%s must be an integer from %.0f to %.0f, got %g", where,
	     key, min, max, v);
	return 0;
}

/* A number member that must be an integer in [min, max]. */
static int64_t get_integer(struct loader *l, const cJSON *obj,
			   const char *key, const char *where, bool optional,
			   double min, double max)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (!v && optional)
		return 0;
	double value = get_number(l, obj, key, where, optional, 0);
	return l->failed ? 0 : integer_in(l, value, where, key, min, max);
}

static int get_int(struct loader *l, const cJSON *obj, const char *key,
		   const char *where, bool optional)
{
	return (int)get_integer(l, obj, key, where, optional, INT_MIN, INT_MAX);
}

static uint64_t get_id(struct loader *l, const cJSON *obj, const char *key,
		       const char *where, bool optional)
{
	return (uint64_t)get_integer(l, obj, key, where, optional, 0,
				     JSON_INTEGER_MAX);
}

/* ts and dur, in µs: any value whose nanoseconds are a 64-bit count. */
static double get_time(struct loader *l, const cJSON *obj, const char *key,
		       bool optional)
{
	double v = get_number(l, obj, key, "", optional, 0);

	if (!l->failed && !(fabs(v) <= JSON_INTEGER_MAX))
		fail(l, "%s must be a number from -%.0f to %.0f, got %g", key,
		     JSON_INTEGER_MAX, JSON_INTEGER_MAX, v);
	return v;
}

static bool get_bool(struct loader *l, const cJSON *obj, const char *key,
		     const char *where, bool optional)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v);
	if (!v && optional)
		return false;
	fail(l, "%s%s must be true or false, got %s", where, key, type_name(v));
	return false;
}

static const cJSON *get_object(struct loader *l, const cJSON *obj,
			       const char *key, const char *where)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsObject(v))
		return v;
	fail(l, "%s%s must be an object, got %s", where, key, type_name(v));
	return NULL;
}

static const cJSON *get_array(struct loader *l, const cJSON *obj,
			      const char *key, const char *where, bool optional)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);

	if (cJSON_IsArray(v))
		return v;
	if (!v && optional)
		return NULL;
	fail(l, "%s%s must be an array, got %s", where, key, type_name(v));
	return NULL;
}

/* ------------------------------------------------------------ decoders */

/* A shape's first TRACE_MAX_DIMS sizes. */
static void load_shape(struct loader *l, const cJSON *shape, const char *at,
		       int *ndim, int64_t *sizes)
{
	const cJSON *d;

	cJSON_ArrayForEach(d, shape) {
		if (!cJSON_IsNumber(d)) {
			fail(l, "%sshape must hold numbers, found %s", at,
			     type_name(d));
			return;
		}
		int64_t size = integer_in(l, d->valuedouble, at, "shape", 0,
					  JSON_INTEGER_MAX);
		if (l->failed)
			return;
		if (*ndim < TRACE_MAX_DIMS)
			sizes[(*ndim)++] = size;
	}
}

static void load_tensor(struct loader *l, const cJSON *v, const char *where,
			struct trace_tensor *t)
{
	char at[80];

	*t = (struct trace_tensor){ 0 };
	if (!cJSON_IsObject(v)) {
		fail(l, "%s must be an object {tensor, dtype, shape}, got %s",
		     where, type_name(v));
		return;
	}
	snprintf(at, sizeof at, "%s.", where);
	t->id = get_id(l, v, "tensor", at, false);
	t->producer_op_id = get_id(l, v, "producer_op_id", at, true);
	t->dtype = get_string(l, v, "dtype", at, false, false);
	t->name = get_string(l, v, "name", at, true, true);
	t->requires_grad = get_bool(l, v, "requires_grad", at, true);
	t->leaf = get_bool(l, v, "leaf", at, true);
	t->view = get_bool(l, v, "view", at, true);
	t->device = get_string(l, v, "device", at, true, false);
	load_shape(l, get_array(l, v, "shape", at, false), at, &t->ndim,
		   t->shape);
}

static struct trace_tensor *load_tensors(struct loader *l, const cJSON *args,
					 const char *key, int *count)
{
	const cJSON *list = get_array(l, args, key, "args.", false);
	char where[64];

	*count = 0;
	if (!list)
		return NULL;
	int n = cJSON_GetArraySize(list);
	struct trace_tensor *out =
		trace_alloc(l->trace, (size_t)(n ? n : 1) * sizeof *out);
	if (!out) {
		fail(l, "out of memory");
		return NULL;
	}
	const cJSON *v;
	cJSON_ArrayForEach(v, list) {
		snprintf(where, sizeof where, "args.%s[%d]", key, *count);
		load_tensor(l, v, where, &out[*count]);
		(*count)++;
	}
	return out;
}

static void load_autocast(struct loader *l, const cJSON *args,
			  struct trace_autocast *a)
{
	const cJSON *v = get_object(l, args, "autocast", "args.");
	const char *at = "args.autocast.";

	if (!v)
		return;
	a->enabled = get_bool(l, v, "enabled", at, false);
	a->device = get_string(l, v, "device", at, false, false);
	a->dtype = get_string(l, v, "dtype", at, false, false);
	a->cache_enabled = get_bool(l, v, "cache_enabled", at, true);
	a->depth = get_int(l, v, "depth", at, false);
	a->scope = get_string(l, v, "scope", at, true, true);
	const cJSON *scopes = get_array(l, v, "scopes", at, true);
	if (scopes) {
		int n = cJSON_GetArraySize(scopes);
		a->scopes = trace_alloc(l->trace, (size_t)(n ? n : 1) *
						    sizeof *a->scopes);
		const cJSON *s;
		cJSON_ArrayForEach(s, scopes) {
			if (!cJSON_IsString(s)) {
				fail(l, "%sscopes must hold strings", at);
				return;
			}
			if (a->scopes)
				a->scopes[a->nscopes++] =
					trace_intern(l->trace, s->valuestring);
		}
	}
}

static void load_op(struct loader *l, const cJSON *args, struct trace_op *op)
{
	const char *at = "args.";

	op->op_id = get_id(l, args, "op_id", at, false);
	op->op = get_string(l, args, "op", at, false, false);
	op->overload = get_string(l, args, "overload", at, true, false);
	if (!op->overload)
		op->overload = trace_intern(l->trace, "");
	op->phase = get_string(l, args, "phase", at, false, false);
	op->device = get_string(l, args, "device", at, false, false);
	op->emulated = get_bool(l, args, "emulated", at, true);
	op->incomplete = get_bool(l, args, "incomplete", at, true);
	op->parent_op_id = get_id(l, args, "parent_op_id", at, true);
	op->forward_op_id = get_id(l, args, "forward_op_id", at, true);
	op->graph = get_id(l, args, "graph", at, true);
	load_autocast(l, args, &op->autocast);
	op->status = get_int(l, args, "status", at, true);
	op->error = get_string(l, args, "error", at, true, true);
	op->closed_by = get_string(l, args, "closed_by", at, true, false);
	if (op->incomplete)
		return;
	op->policy = get_string(l, args, "policy", at, false, false);
	op->inputs = load_tensors(l, args, "inputs", &op->ninputs);
	op->outputs = load_tensors(l, args, "outputs", &op->noutputs);
	/* torch.profiler's keys: one entry per input, as Kineto writes them */
	const cJSON *types = get_array(l, args, "Input type", at, false);
	const cJSON *dims = get_array(l, args, "Input Dims", at, false);
	const cJSON *v;
	if (l->failed)
		return;
	if (cJSON_GetArraySize(types) != op->ninputs ||
	    cJSON_GetArraySize(dims) != op->ninputs) {
		fail(l, "\"Input type\" and \"Input Dims\" must have one entry "
		     "per input (%d), got %d and %d", op->ninputs,
		     cJSON_GetArraySize(types), cJSON_GetArraySize(dims));
		return;
	}
	int i = 0;
	cJSON_ArrayForEach(v, types) {
		if (!cJSON_IsString(v))
			fail(l, "\"Input type\" must hold strings, found %s",
			     type_name(v));
		else if (op->inputs)
			op->inputs[i].profiler_type =
				trace_intern(l->trace, v->valuestring);
		i++;
	}
	cJSON_ArrayForEach(v, dims)
		if (!cJSON_IsArray(v))
			fail(l, "\"Input Dims\" must hold arrays, found %s",
			     type_name(v));
}

/* A compiled graph's cast (FORMAT.md §3.3, 1.4). */
static void load_compiled_cast(struct loader *l, const cJSON *args,
			       struct trace_cast *c)
{
	const char *at = "args.";
	const cJSON *state = get_object(l, args, "autocast", at);

	c->compiled = true;
	c->graph = get_id(l, args, "graph", at, false);
	c->made_by = get_string(l, args, "made_by", at, true, false);
	c->feeds = get_string(l, args, "feeds", at, true, false);
	c->source = get_string(l, args, "source", at, true, false);
	c->module = get_string(l, args, "module", at, true, false);
	c->module_class = get_string(l, args, "module_class", at, true, false);
	if (!state)
		return;
	at = "args.autocast.";
	c->autocast.enabled = get_bool(l, state, "enabled", at, false);
	c->autocast.device = get_string(l, state, "device", at, false, false);
	c->autocast.dtype = get_string(l, state, "dtype", at, false, false);
}

static void load_cast(struct loader *l, const cJSON *args,
		      struct trace_cast *c)
{
	const char *at = "args.";

	c->op_id = get_id(l, args, "op_id", at, false);
	c->arg = get_int(l, args, "arg", at, false);
	c->tensor = get_id(l, args, "tensor", at, false);
	c->result = get_id(l, args, "result", at, false);
	c->from = get_string(l, args, "from", at, false, false);
	c->to = get_string(l, args, "to", at, false, false);
	c->cache = get_string(l, args, "cache", at, false, false);
	c->reason = get_string(l, args, "reason", at, true, true);
	c->bytes = get_id(l, args, "bytes", at, false);
	c->stale = get_bool(l, args, "stale", at, true);
	c->name = get_string(l, args, "name", at, true, true);
	c->op = get_string(l, args, "op", at, true, true);
	c->phase = get_string(l, args, "phase", at, true, true);
	c->scope = get_string(l, args, "scope", at, true, true);
	c->requires_grad = get_bool(l, args, "requires_grad", at, true);
	c->leaf = get_bool(l, args, "leaf", at, true);
	load_shape(l, get_array(l, args, "shape", at, true), at, &c->ndim,
		   c->shape);
	const char *origin = get_string(l, args, "origin", at, true, false);
	if (origin && !strcmp(origin, "compiled"))
		load_compiled_cast(l, args, c);
}

static void load_scaler(struct loader *l, const cJSON *args,
			struct trace_scaler *s)
{
	const char *at = "args.";
	const cJSON *scale = cJSON_GetObjectItemCaseSensitive(args, "scale");

	s->what = get_string(l, args, "what", at, false, false);
	s->scaler_id = get_id(l, args, "scaler_id", at, true);
	s->optimizer_id = get_id(l, args, "optimizer_id", at, true);
	s->inf_tensor = get_id(l, args, "inf_tensor", at, true);
	s->found_inf = get_bool(l, args, "found_inf", at, false);
	s->step_skipped = get_bool(l, args, "step_skipped", at, false);
	if (cJSON_IsNull(scale) || !scale)
		s->scale = NAN;
	else
		s->scale = get_number(l, args, "scale", at, false, NAN);
}

static void load_counter(struct loader *l, const cJSON *args,
			 struct trace_counter *c)
{
	const cJSON *v;

	cJSON_ArrayForEach(v, args) {
		double value;
		if (cJSON_IsNumber(v))
			value = v->valuedouble;
		else if (cJSON_IsString(v))
			value = strtod(v->valuestring, NULL);
		else {
			fail(l, "counter series %s must be a number, got %s",
			     v->string, type_name(v));
			return;
		}
		if (c->nseries < TRACE_MAX_SERIES) {
			c->series[c->nseries] = trace_intern(l->trace, v->string);
			c->value[c->nseries++] = value;
		}
	}
}

/* An instant event's "s" (its scope: 't', 'p' or 'g'), or 0. */
static char instant_scope(const cJSON *event)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(event, "s");

	return cJSON_IsString(v) && strlen(v->valuestring) == 1
		       ? v->valuestring[0]
		       : 0;
}

static void load_diag(struct loader *l, const cJSON *event,
		      const cJSON *args, struct trace_diag *d)
{
	const char *at = "args.";

	d->scope = instant_scope(event);

	d->kind = get_string(l, args, "kind", at, false, false);
	d->message = get_string(l, args, "message", at, false, false);
	d->op_id = get_id(l, args, "op_id", at, true);
	d->tensor = get_id(l, args, "tensor", at, true);
	d->fix = get_string(l, args, "fix", at, true, false);
	d->severity = get_string(l, args, "severity", at, true, false);
	d->count = get_id(l, args, "count", at, true);
	d->thread = get_integer(l, args, "thread", at, true, -JSON_INTEGER_MAX,
				JSON_INTEGER_MAX);
	d->other_thread = get_integer(l, args, "other_thread", at, true,
				      -JSON_INTEGER_MAX, JSON_INTEGER_MAX);
}

/* A number member, when it is one, which must then be an integer in
 * [min, max]: other tools' kernel events may leave keys out or give
 * them other types, but no number is taken out of its range. */
static bool number_if_any(struct loader *l, const cJSON *obj,
			  const char *key, double min, double max, int64_t *out)
{
	if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(obj, key)))
		return false;
	*out = get_integer(l, obj, key, "args.", false, min, max);
	return !l->failed;
}

static void number_triple(struct loader *l, const cJSON *obj,
			  const char *key, int32_t *out)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(obj, key);
	const cJSON *v;
	int i = 0;

	cJSON_ArrayForEach(v, list) {
		if (i < 3 && cJSON_IsNumber(v))
			out[i] = (int32_t)integer_in(l, v->valuedouble, "args.",
						     key, INT32_MIN, INT32_MAX);
		i++;
	}
}

/* kernel and gpu_memcpy events (FORMAT.md §3.8), as Kineto writes them. */
static void load_gpu(struct loader *l, const cJSON *args,
		     struct trace_kernel *k)
{
	int64_t v = 0;

	k->host_pid = -1;
	k->linked = number_if_any(l, args, "External id", 0, JSON_INTEGER_MAX,
				  &v);
	k->external_id = (uint64_t)v;
	k->cast = cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(args, "amp.cast_result"));
	if (number_if_any(l, args, "amp.op_id", 0, JSON_INTEGER_MAX, &v))
		k->op_id = (uint64_t)v;
	number_if_any(l, args, "amp.pid", -JSON_INTEGER_MAX, JSON_INTEGER_MAX,
		      &k->host_pid);
	if (number_if_any(l, args, "correlation", 0, UINT32_MAX, &v))
		k->correlation = (uint32_t)v;
	if (number_if_any(l, args, "device", 0, UINT32_MAX, &v))
		k->device = (uint32_t)v;
	if (number_if_any(l, args, "stream", 0, UINT32_MAX, &v))
		k->stream = (uint32_t)v;
	number_triple(l, args, "grid", k->grid);
	number_triple(l, args, "block", k->block);
	if (number_if_any(l, args, "registers per thread", INT32_MIN, INT32_MAX,
			  &v))
		k->registers = (int32_t)v;
	if (number_if_any(l, args, "shared memory", INT32_MIN, INT32_MAX, &v))
		k->shared_memory = (int32_t)v;
	if (number_if_any(l, args, "bytes", 0, JSON_INTEGER_MAX, &v))
		k->bytes = (uint64_t)v;
}

static void load_meta(struct loader *l, const cJSON *args,
		      struct trace_meta *m)
{
	const char *at = "args.";

	m->rank = -1;
	if (!cJSON_IsObject(args))
		return;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(args, "name");
	if (!cJSON_IsString(v))
		v = cJSON_GetObjectItemCaseSensitive(args, "labels");
	if (cJSON_IsString(v))
		m->value = trace_intern(l->trace, v->valuestring);
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args, "sort_index")))
		m->sort_index = get_integer(l, args, "sort_index", at, false,
					    -JSON_INTEGER_MAX, JSON_INTEGER_MAX);
	if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args, "rank")))
		m->rank = get_int(l, args, "rank", at, false);
	/* the keys amptrace writes, each where it writes it */
	number_if_any(l, args, "os_tid", -JSON_INTEGER_MAX, JSON_INTEGER_MAX,
		      &m->os_tid);
	if (number_if_any(l, args, "host_pid", -JSON_INTEGER_MAX,
			  JSON_INTEGER_MAX, &m->host_pid))
		number_if_any(l, args, "device", -JSON_INTEGER_MAX,
			      JSON_INTEGER_MAX, &m->device);
	v = cJSON_GetObjectItemCaseSensitive(args, "framework");
	if (cJSON_IsString(v))
		m->framework = trace_intern(l->trace, v->valuestring);
	const cJSON *argv = cJSON_GetObjectItemCaseSensitive(args, "argv");
	if (!cJSON_IsArray(argv))
		return;
	int n = cJSON_GetArraySize(argv);
	m->argv = trace_alloc(l->trace, (size_t)(n ? n : 1) * sizeof *m->argv);
	if (!m->argv) {
		fail(l, "out of memory");
		return;
	}
	cJSON_ArrayForEach(v, argv)
		m->argv[m->argc++] = cJSON_IsString(v)
					     ? trace_intern(l->trace, v->valuestring)
					     : trace_intern(l->trace, "");
}

static int64_t get_pid(struct loader *l, const cJSON *event, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(event, key);

	if (cJSON_IsNumber(v))
		return integer_in(l, v->valuedouble, "", key, -JSON_INTEGER_MAX,
				  JSON_INTEGER_MAX);
	if (cJSON_IsString(v)) {
		/* String pids are a non-spec convenience (Perfetto accepts
		 * them): map each distinct string to a negative number. */
		const char *s = trace_intern(l->trace, v->valuestring);
		return -(int64_t)(trace_string_hash(s ? s : "", s ? strlen(s) : 0) &
				   0x7fffffff) - 1;
	}
	if (!v)
		return 0;
	fail(l, "%s must be a number or a string, got %s", key, type_name(v));
	return 0;
}

static enum trace_kind classify(const char *cat, char ph)
{
	if (ph == 'M')
		return TRACE_META;
	if (ph == 'C')
		return TRACE_COUNTER;
	if (!strcmp(cat, "amp.op"))
		return TRACE_OP;
	if (!strcmp(cat, "amp.cast"))
		return TRACE_CAST;
	if (!strcmp(cat, "amp.scope"))
		return ph == 'E' ? TRACE_SCOPE_END : TRACE_SCOPE_BEGIN;
	if (!strcmp(cat, "amp.cache"))
		return TRACE_CACHE_CLEAR;
	if (!strcmp(cat, "amp.scaler"))
		return TRACE_SCALER;
	if (!strcmp(cat, "amp.diag"))
		return TRACE_DIAG;
	if (!strcmp(cat, "kernel"))
		return TRACE_KERNEL;
	return TRACE_OTHER;
}

/* The phases each category must use (FORMAT.md). */
static bool phase_allowed(enum trace_kind kind, char ph)
{
	switch (kind) {
	case TRACE_OP:
	case TRACE_CAST:
	case TRACE_KERNEL:
		return ph == 'X';
	case TRACE_SCOPE_BEGIN:
		return ph == 'B';
	case TRACE_CACHE_CLEAR:
	case TRACE_SCALER:
	case TRACE_DIAG:
		return ph == 'i' || ph == 'I';
	default:
		return true;
	}
}

static int on_event(void *ctx, cJSON *json, size_t index, size_t line)
{
	struct loader *l = ctx;
	struct trace *t = l->trace;
	struct trace_event e = { .line = line, .index = index };

	l->line = line;
	l->index = index;
	l->what = "event";
	l->failed = false;
	if (!cJSON_IsObject(json)) {
		fail(l, "an event must be a JSON object, got %s",
		     type_name(json));
		return -1;
	}
	const char *ph = get_string(l, json, "ph", "", false, false);
	if (l->failed)
		return -1;
	if (strlen(ph) != 1) {
		fail(l, "ph must be one character, got \"%s\"", ph);
		return -1;
	}
	e.ph = ph[0];
	e.cat = get_string(l, json, "cat", "", true, false);
	if (!e.cat)
		e.cat = trace_intern(t, "");
	e.name = get_string(l, json, "name", "", e.ph == 'E', false);
	if (!e.name)
		e.name = trace_intern(t, "");
	e.kind = classify(e.cat, e.ph);
	bool ours = !strncmp(e.cat, "amp.", 4);
	char what[64];
	snprintf(what, sizeof what, "%s %s '%.20s'", e.cat[0] ? e.cat : "ph",
		 ph, e.name);
	l->what = what;
	e.pid = get_pid(l, json, "pid");
	e.tid = get_pid(l, json, "tid");
	if (e.ph != 'M')
		e.ts = get_time(l, json, "ts", !ours);
	if (e.ph == 'X')
		e.dur = get_time(l, json, "dur", !ours);
	if (ours && !phase_allowed(e.kind, e.ph))
		fail(l, "category %s does not use ph \"%c\"", e.cat, e.ph);
	if (ours && e.dur < 0)
		fail(l, "dur must not be negative");
	const cJSON *args = cJSON_GetObjectItemCaseSensitive(json, "args");
	bool need_args = ours && e.kind != TRACE_SCOPE_END;
	if (args && !cJSON_IsObject(args))
		fail(l, "args must be an object, got %s", type_name(args));
	else if (need_args && !args)
		fail(l, "args is missing");
	/* The host pids merge maps, in any event (it relies on this). */
	static const char *const host_keys[] = { "amp.pid", "host_pid" };
	for (size_t k = 0; k < 2 && cJSON_IsObject(args); k++)
		if (cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(args,
								   host_keys[k])))
			get_integer(l, args, host_keys[k], "args.", false,
				    -JSON_INTEGER_MAX, JSON_INTEGER_MAX);
	if (l->failed)
		return -1;

	switch (e.kind) {
	case TRACE_OP:
		load_op(l, args, &e.op);
		break;
	case TRACE_CAST:
		load_cast(l, args, &e.cast);
		break;
	case TRACE_SCOPE_BEGIN:
		e.scope.scope = get_string(l, args, "scope", "args.", true, true);
		e.scope.depth = get_int(l, args, "depth", "args.", false);
		e.scope.device = get_string(l, args, "device", "args.", true, false);
		e.scope.dtype = get_string(l, args, "dtype", "args.", true, false);
		e.scope.enabled = get_bool(l, args, "enabled", "args.", true);
		e.scope.cache_enabled =
			get_bool(l, args, "cache_enabled", "args.", true);
		break;
	case TRACE_CACHE_CLEAR:
		e.cache.entries = get_id(l, args, "entries", "args.", false);
		e.cache.bytes = get_id(l, args, "bytes", "args.", false);
		break;
	case TRACE_COUNTER:
		if (args)
			load_counter(l, args, &e.counter);
		break;
	case TRACE_SCALER:
		load_scaler(l, args, &e.scaler);
		break;
	case TRACE_DIAG:
		load_diag(l, json, args, &e.diag);
		break;
	case TRACE_KERNEL:
		load_gpu(l, args, &e.kernel);
		break;
	case TRACE_META:
		load_meta(l, args, &e.meta);
		break;
	case TRACE_SCOPE_END:
		if (!cJSON_IsObject(args))
			break;
		e.scope.depth = get_int(l, args, "depth", "args.", true);
		e.scope.closed_by =
			get_string(l, args, "closed_by", "args.", true, false);
		break;
	case TRACE_OTHER:
		if (!strcmp(e.cat, "gpu_memcpy"))
			load_gpu(l, args, &e.kernel);
		break;
	default:
		break;
	}
	if (l->failed)
		return -1;
	if (!trace_append(t, &e))
		return trace_error_set(l->err, "%s: out of memory after "
				       "%zu events", l->path, t->nevents);
	return 0;
}

static int on_top(void *ctx, const char *key, cJSON *value, size_t line)
{
	struct loader *l = ctx;
	struct trace *t = l->trace;

	if (!strcmp(key, "amptrace")) {
		if (!cJSON_IsObject(value))
			return trace_error_set(l->err, "%s:%zu: \"amptrace\" must "
					       "be an object, got %s", l->path,
					       line, type_name(value));
		const cJSON *format = cJSON_GetObjectItemCaseSensitive(value, "format");
		if (!cJSON_IsString(format))
			return trace_error_set(l->err, "%s:%zu: amptrace.format "
					       "must be a string like \"%s\"",
					       l->path, line,
					       TRACE_FORMAT_VERSION);
		if (atoi(format->valuestring) != TRACE_FORMAT_MAJOR)
			return trace_error_set(l->err, "%s:%zu: trace format %s "
					       "is not supported (this amptrace "
					       "reads %d.x)", l->path, line,
					       format->valuestring,
					       TRACE_FORMAT_MAJOR);
		const cJSON *rank = cJSON_GetObjectItemCaseSensitive(value, "rank");
		if (cJSON_IsNumber(rank) &&
		    !(rank->valuedouble >= 0 && rank->valuedouble <= INT_MAX &&
		      rank->valuedouble == floor(rank->valuedouble)))
			return trace_error_set(l->err, "%s:%zu: amptrace.rank "
					       "must be an integer from 0 to %d, "
					       "got %g", l->path, line, INT_MAX,
					       rank->valuedouble);
		snprintf(t->format, sizeof t->format, "%s", format->valuestring);
		t->amptrace = true;
		cJSON_Delete(t->header);
		t->header = cJSON_Duplicate(value, true);
	} else if (!strcmp(key, "amptraceEnd")) {
		if (!cJSON_IsObject(value))
			return trace_error_set(l->err, "%s:%zu: \"amptraceEnd\" "
					       "must be an object, got %s",
					       l->path, line, type_name(value));
		cJSON_Delete(t->end);
		t->end = cJSON_Duplicate(value, true);
		t->finalized = true;
	} else if (!strcmp(key, "baseTimeNanoseconds")) {
		/* 2^62 ns: room to shift any ts by it in ns (merge) */
		if (cJSON_IsNumber(value) &&
		    !(value->valuedouble >= 0 && value->valuedouble <= 0x1p62))
			return trace_error_set(l->err, "%s:%zu: "
					       "baseTimeNanoseconds must be a "
					       "number from 0 to 2^62, got %g",
					       l->path, line, value->valuedouble);
		if (cJSON_IsNumber(value))
			t->base_ns = value->valuedouble;
	}
	return 0;
}

/* ------------------------------------------------------------- loading */

int trace_load(const char *path, struct trace *trace, struct trace_error *err)
{
	size_t len;

	*trace = (struct trace){ 0 };
	char *text = trace_read_file(path, &len, err);
	if (!text)
		return -1;
	int status = trace_load_text(path, text, len, trace, err);
	free(text);
	return status;
}

int trace_load_text(const char *path, const char *text, size_t len,
		    struct trace *trace, struct trace_error *err)
{
	struct loader l = { .trace = trace, .err = err, .path = path };
	struct trace_scan_handlers h = { .ctx = &l, .top = on_top,
					 .event = on_event };
	struct trace_scan_result result;

	*trace = (struct trace){ 0 };
	trace->path = strdup(path);
	int status = trace_scan(path, text, len, &h, &result, err);
	if (status != 0) {
		trace_free(trace);
		return -1;
	}
	trace->truncated = result.truncated;
	trace->truncated_line = result.truncated_line;
	return 0;
}

const char *trace_end_note(const struct trace *trace, char *buf, size_t size)
{
	if (trace->truncated) {
		snprintf(buf, size, "truncated at line %zu: the trace was not "
			 "finished (its writer was stopped); events up to there "
			 "are read", trace->truncated_line);
		return buf;
	}
	if (trace->amptrace && !trace->finalized) {
		snprintf(buf, size, "truncated: the trace has no trailer "
			 "(amptraceEnd; its writer was stopped)");
		return buf;
	}
	const cJSON *exit = cJSON_GetObjectItemCaseSensitive(trace->end, "exit");
	const cJSON *status = cJSON_GetObjectItemCaseSensitive(exit, "status");
	if (cJSON_IsString(status) && !strcmp(status->valuestring, "signaled")) {
		const cJSON *name =
			cJSON_GetObjectItemCaseSensitive(exit, "signal_name");
		snprintf(buf, size, "the program was killed by %s; the trace "
			 "ends at its death",
			 cJSON_IsString(name) ? name->valuestring : "a signal");
		return buf;
	}
	for (size_t i = 0; i < trace->nevents; i++) {
		const struct trace_event *e = &trace->events[i];
		if (e->kind == TRACE_DIAG && e->diag.kind &&
		    !strcmp(e->diag.kind, "process-died")) {
			snprintf(buf, size, "%s", e->diag.message);
			return buf;
		}
	}
	return NULL;
}

const char *const trace_dtype_names[TRACE_DTYPE_COUNT + 1] = {
	"f64", "f32", "f16", "bf16", "i64", "i32", "bool", NULL
};

const char *trace_op_label(const struct trace_op *op, char *buf, size_t size)
{
	if (op->overload && op->overload[0])
		snprintf(buf, size, "%s.%s", op->op, op->overload);
	else
		snprintf(buf, size, "%s", op->op);
	return buf;
}
