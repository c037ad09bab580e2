/* Loads a trace file into `struct trace` (see trace.h; the fields are
 * FORMAT.md's). */
#include "trace.h"

#include "trace_schema.h"
#include "trace_writer.h"

#include <cJSON.h>

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
	const char *what;  /* "amp.op event" for messages; NULL: no event */
	bool failed;
	const struct trace_filter *filter; /* NULL: every event is kept */
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
	if (l->what)
		trace_error_set(l->err, "%s:%zu: event %zu (%s): %s", l->path,
				l->line, l->index, l->what, detail);
	else
		trace_error_set(l->err, "%s:%zu: %s", l->path, l->line, detail);
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

/* ------------------------------------------------------------ decoders */

/* The keys of trace_schema.h's tables are read by walking the rows: each
 * value is checked against its row's type (and range) and stored in the
 * row's member.  Strict for amptrace's own tables, lenient for the ones
 * other tools write too (a value of another type is then ignored; a
 * number out of range is still an error). */

static void load_object(struct loader *l, const cJSON *obj,
			const struct trace_object *table, void *m,
			const char *where);

/* The JSON a key type stores: its name for messages and the cJSON
 * types (cJSON's low type bits) a value of it may have. */
struct json_shape {
	const char *wanted;
	int types;
};

static const struct json_shape *shape_of(enum trace_key_type type)
{
	static const struct json_shape string = { "a string", cJSON_String },
		string_or_null = { "a string or null", cJSON_String | cJSON_NULL },
		boolean = { "true or false", cJSON_True | cJSON_False },
		number = { "a number", cJSON_Number },
		number_or_null = { "a number or null", cJSON_Number | cJSON_NULL },
		object = { "an object", cJSON_Object },
		object_or_null = { "an object or null", cJSON_Object | cJSON_NULL },
		array = { "an array", cJSON_Array },
		rows = { "an array of rows", cJSON_Array };

	switch (type) {
	case TRACE_TYPE_STRING:
	case TRACE_TYPE_SCOPE:
		return &string;
	case TRACE_TYPE_STRING_OR_NULL:
		return &string_or_null;
	case TRACE_TYPE_BOOL:
	case TRACE_TYPE_TRUE:
		return &boolean;
	case TRACE_TYPE_NUMBER_OR_NULL:
	case TRACE_TYPE_INT_OR_NULL:
		return &number_or_null;
	case TRACE_TYPE_AUTOCAST:
	case TRACE_TYPE_GPU:
	case TRACE_TYPE_RECORDING:
	case TRACE_TYPE_STEPS:
	case TRACE_TYPE_AGGREGATE_CACHE:
		return &object;
	case TRACE_TYPE_EXIT:
		return &object_or_null;
	case TRACE_TYPE_OP_ROWS:
	case TRACE_TYPE_CAST_ROWS:
	case TRACE_TYPE_DIAG_ROWS:
		return &rows;
	case TRACE_TYPE_SHAPE:
	case TRACE_TYPE_STRINGS:
	case TRACE_TYPE_TRIPLE:
	case TRACE_TYPE_PROFILER_TYPES:
	case TRACE_TYPE_PROFILER_DIMS:
	case TRACE_TYPE_TENSORS:
	case TRACE_TYPE_PROCESSES:
	case TRACE_TYPE_MERGED:
	case TRACE_TYPE_MERGED_ENDS:
		return &array;
	default:
		return &number;
	}
}

/* What a type's value must be, for messages. */
static const char *type_wanted(enum trace_key_type type)
{
	return shape_of(type)->wanted;
}

/* Whether v is of the JSON type `type` stores. */
static bool type_matches(enum trace_key_type type, const cJSON *v)
{
	return v && (v->type & 0xFF & shape_of(type)->types);
}

/* Whether a reader reads values of the type (the others are written
 * from other members). */
static bool type_read(enum trace_key_type type)
{
	return type != TRACE_TYPE_ID_AGAIN && type != TRACE_TYPE_BANDWIDTH &&
	       type != TRACE_TYPE_SCOPE_THREAD;
}

/* An integer of a number type, within the range of its member. */
static int64_t load_integer(struct loader *l, const struct trace_key *k,
			    const cJSON *v, const char *where)
{
	double min = -JSON_INTEGER_MAX, max = JSON_INTEGER_MAX;

	switch (k->type) {
	case TRACE_TYPE_ID:
	case TRACE_TYPE_U64:
		min = 0;
		break;
	case TRACE_TYPE_U32:
		min = 0;
		max = UINT32_MAX;
		break;
	case TRACE_TYPE_INT:
		min = INT_MIN;
		max = INT_MAX;
		break;
	case TRACE_TYPE_INT_OR_NULL:
		min = 0;
		max = INT_MAX;
		break;
	default:
		break;
	}
	return integer_in(l, v->valuedouble, where, k->key, min, max);
}

/* A shape's first TRACE_MAX_DIMS sizes, interned. */
static void load_shape(struct loader *l, const cJSON *shape, const char *at,
		       int *ndim, const int64_t **out)
{
	int64_t sizes[TRACE_MAX_DIMS];
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
	*out = trace_intern_shape(l->trace, sizes, *ndim);
	if (!*out)
		fail(l, "out of memory");
}

/* An array of strings; a lenient table takes other values as "". */
static void load_strings(struct loader *l, const cJSON *list, bool lenient,
			 const char *where, const char *key,
			 const char ***out, int *count)
{
	int n = cJSON_GetArraySize(list);
	const cJSON *v;

	*out = trace_alloc(l->trace, (size_t)(n ? n : 1) * sizeof **out);
	*count = 0;
	if (!*out) {
		fail(l, "out of memory");
		return;
	}
	cJSON_ArrayForEach(v, list) {
		if (!cJSON_IsString(v) && !lenient) {
			fail(l, "%s%s must hold strings", where, key);
			return;
		}
		(*out)[(*count)++] = trace_intern(l->trace, cJSON_IsString(v)
								    ? v->valuestring
								    : "");
	}
}

/* An array of objects of `table`, into room of the trace's. */
static void *load_objects(struct loader *l, const cJSON *list,
			  const struct trace_key *k, const char *where,
			  int *count)
{
	int n = cJSON_GetArraySize(list);
	char *out = trace_alloc(l->trace, (size_t)(n ? n : 1) * k->object->size);
	char at[96];
	const cJSON *v;

	*count = 0;
	if (!out) {
		fail(l, "out of memory");
		return NULL;
	}
	memset(out, 0, (size_t)(n ? n : 1) * k->object->size);
	cJSON_ArrayForEach(v, list) {
		snprintf(at, sizeof at, "%s%s[%d]", where, k->key, *count);
		if (!cJSON_IsObject(v)) {
			fail(l, "%s must be an object, got %s", at,
			     type_name(v));
			return out;
		}
		strcat(at, ".");
		load_object(l, v, k->object, out + (size_t)*count * k->object->size,
			    at);
		(*count)++;
	}
	return out;
}

static void load_value(struct loader *l, const struct trace_key *k,
		       const cJSON *v, void *m, bool lenient, const char *where);

/* An array of rows of `table`, each an array of its columns in order. */
static void *load_rows(struct loader *l, const cJSON *list,
		       const struct trace_key *k, const char *where, int *count)
{
	const struct trace_object *table = k->object;
	int n = cJSON_GetArraySize(list);
	char *out = trace_alloc(l->trace, (size_t)(n ? n : 1) * table->size);
	char at[96];
	const cJSON *row;

	*count = 0;
	if (!out) {
		fail(l, "out of memory");
		return NULL;
	}
	memset(out, 0, (size_t)(n ? n : 1) * table->size);
	cJSON_ArrayForEach(row, list) {
		snprintf(at, sizeof at, "%s%s[%d]", where, k->key, *count);
		if (!cJSON_IsArray(row) ||
		    cJSON_GetArraySize(row) != (int)table->nkeys) {
			fail(l, "%s must be an array of %zu columns, got %s", at,
			     table->nkeys, type_name(row));
			return out;
		}
		const cJSON *v = row->child;
		for (size_t i = 0; i < table->nkeys && !l->failed;
		     i++, v = v->next) {
			const struct trace_key *c = &table->keys[i];
			char column[112];
			snprintf(column, sizeof column, "%s column ", at);
			if (type_matches(c->type, v))
				load_value(l, c, v, out + (size_t)*count * table->size,
					   false, column);
			else
				fail(l, "%s%s must be %s, got %s", column, c->key,
				     type_wanted(c->type), type_name(v));
		}
		(*count)++;
	}
	return out;
}

/* An object member a pointer names (EXIT, GPU): made in the trace. */
static void *load_pointed(struct loader *l, const cJSON *v,
			  const struct trace_key *k, const char *where)
{
	char at[96];
	void *out = trace_alloc(l->trace, k->object->size);

	if (!out) {
		fail(l, "out of memory");
		return NULL;
	}
	memset(out, 0, k->object->size);
	snprintf(at, sizeof at, "%s%s.", where, k->key);
	load_object(l, v, k->object, out, at);
	return out;
}

/* An array of tensors: read as records (given back after), kept as
 * their ids and interned kinds. */
static struct trace_tensor *load_tensors(struct loader *l, const cJSON *list,
					 const struct trace_key *k,
					 const char *where, int *count)
{
	int n = cJSON_GetArraySize(list);
	struct trace_tensor *out =
		trace_alloc(l->trace, (size_t)(n ? n : 1) * sizeof *out);

	*count = 0;
	if (!out) {
		fail(l, "out of memory");
		return NULL;
	}
	struct trace_arena_mark mark = trace_arena_mark(l->trace);
	const struct trace_tensor_record *records =
		load_objects(l, list, k, where, count);
	for (int i = 0; records && i < *count && !l->failed; i++) {
		out[i] = (struct trace_tensor){
			.id = records[i].id,
			.producer_op_id = records[i].producer_op_id,
			.info = trace_intern_tensor_info(l->trace,
							 &records[i].info),
		};
		if (!out[i].info)
			fail(l, "out of memory");
	}
	if (l->failed)
		*count = 0; /* what it read may be partly unmade */
	trace_arena_release(l->trace, mark);
	return out;
}

/* An op's autocast state, interned: its scopes list, read into the
 * trace's room, is given back once the state is. */
static const struct trace_autocast *load_autocast(struct loader *l,
						  const cJSON *v,
						  const struct trace_key *k,
						  const char *where)
{
	struct trace_arena_mark mark = trace_arena_mark(l->trace);
	struct trace_autocast state = { 0 };
	const struct trace_autocast *kept;
	char at[96];

	snprintf(at, sizeof at, "%s%s.", where, k->key);
	load_object(l, v, k->object, &state, at);
	kept = trace_intern_autocast(l->trace, &state);
	trace_arena_release(l->trace, mark);
	if (!kept)
		fail(l, "out of memory");
	return kept;
}

/* A cast's args: read as its record, kept with its source's kind
 * interned. */
static void load_cast(struct loader *l, const cJSON *args,
		      struct trace_cast *cast)
{
	struct trace_cast_record record = { 0 };

	load_object(l, args, &trace_schema_cast, &record, "args.");
	if (!l->failed && trace_cast_from_record(l->trace, &record, cast))
		fail(l, "out of memory");
}

/* "Input type": one name per input, set on the inputs already read. */
static void load_profiler_types(struct loader *l, const cJSON *list,
				struct trace_tensor *inputs, int ninputs)
{
	const cJSON *v;
	int i = 0;

	if (cJSON_GetArraySize(list) != ninputs) {
		fail(l, "\"Input type\" must have one entry per input (%d), "
		     "got %d", ninputs, cJSON_GetArraySize(list));
		return;
	}
	cJSON_ArrayForEach(v, list) {
		if (!cJSON_IsString(v)) {
			fail(l, "\"Input type\" must hold strings, found %s",
			     type_name(v));
			return;
		}
		if (inputs) {
			/* the kind read with the input, again with its type
			 * (the first stays interned: a few per trace) */
			struct trace_tensor_info info = *inputs[i].info;
			info.profiler_type =
				trace_intern(l->trace, v->valuestring);
			inputs[i].info =
				trace_intern_tensor_info(l->trace, &info);
			if (!inputs[i].info) {
				fail(l, "out of memory");
				return;
			}
		}
		i++;
	}
}

static void load_profiler_dims(struct loader *l, const cJSON *list,
			       int ninputs)
{
	const cJSON *v;

	if (cJSON_GetArraySize(list) != ninputs) {
		fail(l, "\"Input Dims\" must have one entry per input (%d), "
		     "got %d", ninputs, cJSON_GetArraySize(list));
		return;
	}
	cJSON_ArrayForEach(v, list)
		if (!cJSON_IsArray(v))
			fail(l, "\"Input Dims\" must hold arrays, found %s",
			     type_name(v));
}

/* The value v of row k into its member of m (v of the row's type). */
static void load_value(struct loader *l, const struct trace_key *k,
		       const cJSON *v, void *m, bool lenient, const char *where)
{
	void *f = trace_key_member(k, m);
	int *count = (int *)((char *)m + k->count_offset);

	switch (k->type) {
	case TRACE_TYPE_STRING:
	case TRACE_TYPE_STRING_OR_NULL:
		*(const char **)f = cJSON_IsString(v)
					    ? trace_intern(l->trace, v->valuestring)
					    : NULL;
		break;
	case TRACE_TYPE_ID:
	case TRACE_TYPE_U64:
		*(uint64_t *)f = (uint64_t)load_integer(l, k, v, where);
		break;
	case TRACE_TYPE_U32:
		*(uint32_t *)f = (uint32_t)load_integer(l, k, v, where);
		break;
	case TRACE_TYPE_I64:
		*(int64_t *)f = load_integer(l, k, v, where);
		break;
	case TRACE_TYPE_INT:
		*(int *)f = (int)load_integer(l, k, v, where);
		break;
	case TRACE_TYPE_INT_OR_NULL:
		*(int *)f = cJSON_IsNull(v) ? -1
					    : (int)load_integer(l, k, v, where);
		break;
	case TRACE_TYPE_BOOL:
	case TRACE_TYPE_TRUE:
		*(bool *)f = cJSON_IsTrue(v);
		break;
	case TRACE_TYPE_NUMBER_OR_NULL:
		*(double *)f = cJSON_IsNull(v) ? NAN : v->valuedouble;
		break;
	case TRACE_TYPE_US:
		if (!(fabs(v->valuedouble) <= JSON_INTEGER_MAX))
			fail(l, "%s%s must be a number from -%.0f to %.0f, "
			     "got %g", where, k->key, JSON_INTEGER_MAX,
			     JSON_INTEGER_MAX, v->valuedouble);
		else
			*(int64_t *)f = trace_us_to_ns(v->valuedouble);
		break;
	case TRACE_TYPE_SHAPE:
		load_shape(l, v, where, count, f);
		break;
	case TRACE_TYPE_STRINGS:
		load_strings(l, v, lenient, where, k->key, f, count);
		break;
	case TRACE_TYPE_TRIPLE: {
		const cJSON *item;
		int i = 0;
		cJSON_ArrayForEach(item, v) {
			if (i < 3 && cJSON_IsNumber(item))
				((int32_t *)f)[i] = (int32_t)integer_in(
					l, item->valuedouble, where, k->key,
					INT32_MIN, INT32_MAX);
			i++;
		}
		break;
	}
	case TRACE_TYPE_PROFILER_TYPES:
		load_profiler_types(l, v, *(struct trace_tensor **)f, *count);
		break;
	case TRACE_TYPE_PROFILER_DIMS:
		load_profiler_dims(l, v, *count);
		break;
	case TRACE_TYPE_SCOPE:
		*(char *)f = strlen(v->valuestring) == 1 ? v->valuestring[0] : 0;
		break;
	case TRACE_TYPE_AUTOCAST:
		*(const struct trace_autocast **)f = load_autocast(l, v, k, where);
		break;
	case TRACE_TYPE_AGGREGATE_CACHE: {
		char at[96];
		snprintf(at, sizeof at, "%s%s.", where, k->key);
		load_object(l, v, k->object, f, at);
		break;
	}
	case TRACE_TYPE_EXIT:
	case TRACE_TYPE_GPU:
	case TRACE_TYPE_RECORDING:
	case TRACE_TYPE_STEPS:
		*(void **)f = cJSON_IsNull(v) ? NULL
					      : load_pointed(l, v, k, where);
		break;
	case TRACE_TYPE_TENSORS:
		*(void **)f = load_tensors(l, v, k, where, count);
		break;
	case TRACE_TYPE_PROCESSES:
	case TRACE_TYPE_MERGED:
	case TRACE_TYPE_MERGED_ENDS:
		*(void **)f = load_objects(l, v, k, where, count);
		break;
	case TRACE_TYPE_OP_ROWS:
	case TRACE_TYPE_CAST_ROWS:
	case TRACE_TYPE_DIAG_ROWS:
		*(void **)f = load_rows(l, v, k, where, count);
		break;
	case TRACE_TYPE_ID_AGAIN:
	case TRACE_TYPE_BANDWIDTH:
	case TRACE_TYPE_SCOPE_THREAD:
		break; /* written from other members */
	}
}

/* Whether the op m (of table `table`) is complete: its COMPLETE keys are
 * then required. */
static bool op_complete(const struct trace_object *table, const void *m)
{
	return table != &trace_schema_op ||
	       !((const struct trace_op *)m)->incomplete;
}

/* obj's member named like row k, as cJSON_GetObjectItemCaseSensitive
 * finds it.  The writer writes an object's keys in its table's order, so
 * the member after the last one found this way (*next) is nearly always
 * it: one strcmp, not a scan of the object per row.  The members before
 * *next were found for earlier rows, whose keys differ from k's, so the
 * member found is the first of its name, as the scan's is. */
static const cJSON *member_of(const cJSON *obj, const struct trace_key *k,
			      const cJSON **next)
{
	if (*next && (*next)->string && !strcmp((*next)->string, k->key)) {
		const cJSON *v = *next;
		*next = v->next;
		return v;
	}
	return cJSON_GetObjectItemCaseSensitive(obj, k->key);
}

/* Every row of `table` present in obj, then the required ones missing. */
static void load_object(struct loader *l, const cJSON *obj,
			const struct trace_object *table, void *m,
			const char *where)
{
	const cJSON *next = obj->child;
	uint64_t present = 0; /* of the first 64 rows, found above */

	for (size_t i = 0; i < table->nkeys && !l->failed; i++) {
		const struct trace_key *k = &table->keys[i];
		const cJSON *v = member_of(obj, k, &next);
		if (v && i < 64)
			present |= (uint64_t)1 << i;
		if (!v || !type_read(k->type))
			continue;
		if (type_matches(k->type, v))
			load_value(l, k, v, m, table->lenient, where);
		else if (!table->lenient)
			fail(l, "%s%s must be %s, got %s", where, k->key,
			     type_wanted(k->type), type_name(v));
	}
	for (size_t i = 0; i < table->nkeys && !l->failed; i++) {
		const struct trace_key *k = &table->keys[i];
		bool needed = k->need == TRACE_NEED_ALWAYS ||
			      (k->need == TRACE_NEED_COMPLETE &&
			       op_complete(table, m));
		bool found = i < 64 ? (present >> i) & 1
				    : cJSON_GetObjectItemCaseSensitive(
					      obj, k->key) != NULL;
		if (needed && !table->lenient && type_read(k->type) && !found)
			fail(l, "%s%s must be %s, got missing", where, k->key,
			     type_wanted(k->type));
	}
}

/* Counters' args are their series, each a number (or a number's text,
 * as some tools write them). */
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

/* What the model holds for keys a reader does not find, where that is
 * not zero. */
static void set_absent_values(struct loader *l, struct trace_event *e)
{
	switch (e->kind) {
	case TRACE_SCALER:
		e->scaler.scale = NAN;
		break;
	case TRACE_KERNEL:
	case TRACE_MEMCPY:
		e->kernel.host_pid = -1;
		break;
	case TRACE_META:
		e->meta.rank = -1;
		break;
	default:
		break;
	}
	(void)l;
}

void trace_cast_set_origin(struct trace_event *e)
{
	if (!e->cast.origin)
		return;
	if (!strcmp(e->cast.origin, "autocast"))
		e->cast.origin = NULL;
	else
		e->kind = TRACE_OTHER_CAST;
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
	if (!strcmp(cat, "amp.flow"))
		return TRACE_FLOW;
	if (!strcmp(cat, "kernel"))
		return TRACE_KERNEL;
	if (!strcmp(cat, "amp.step"))
		return TRACE_STEP;
	if (!strcmp(cat, "amp.aggregate"))
		return TRACE_AGGREGATE;
	if (!strcmp(cat, "gpu_memcpy"))
		return TRACE_MEMCPY;
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
	case TRACE_AGGREGATE:
		return ph == 'i' || ph == 'I';
	case TRACE_STEP:
		return ph == 'X' || ph == 'i' || ph == 'I';
	case TRACE_FLOW:
		return ph == 's' || ph == 't' || ph == 'f';
	default:
		return true;
	}
}

/* One more of process `pid`'s events dropped; false when out of memory.
 * A process's dropped events come in runs (a rank's flows), so the last
 * one counted is looked at first. */
static bool count_dropped(struct trace *t, int64_t pid)
{
	size_t k = t->ndropped_pids;

	if (k && t->dropped_pids[k - 1].pid == pid) {
		t->dropped_pids[k - 1].count++;
		return true;
	}
	for (k = 0; k < t->ndropped_pids; k++)
		if (t->dropped_pids[k].pid == pid)
			break;
	if (k == t->ndropped_pids) {
		struct trace_dropped *grown =
			trace_grow(t->dropped_pids, &t->cap_dropped_pids, k + 1,
				   sizeof *grown);
		if (!grown)
			return false;
		t->dropped_pids = grown;
		t->dropped_pids[t->ndropped_pids++] =
			(struct trace_dropped){ pid, 0 };
	}
	/* the last entry is the one counted */
	struct trace_dropped hit = t->dropped_pids[k];
	t->dropped_pids[k] = t->dropped_pids[t->ndropped_pids - 1];
	t->dropped_pids[t->ndropped_pids - 1] = hit;
	t->dropped_pids[t->ndropped_pids - 1].count++;
	return true;
}

/* A decoded event to the trace, or to the reader's filter first. */
static int hand_over(struct loader *l, const struct trace_event *e,
		     cJSON *json, struct trace_arena_mark mark,
		     struct trace_strings_mark strings)
{
	struct trace *t = l->trace;
	int keep = l->filter ? l->filter->event(l->filter->ctx, t, e, json,
						l->err)
			     : TRACE_KEEP;

	if (keep < 0)
		return -1;
	if (keep == TRACE_DROP || keep == TRACE_FORGET) {
		trace_arena_release(t, mark);
		if (keep == TRACE_FORGET)
			trace_strings_forget(t, strings);
		t->dropped++;
		if (!count_dropped(t, e->pid))
			return trace_error_set(l->err, "%s: out of memory "
					       "after %zu events", l->path,
					       t->nevents + t->dropped);
		return 0;
	}
	if (!trace_append(t, e))
		return trace_error_set(l->err, "%s: out of memory after "
				       "%zu events", l->path, t->nevents);
	return 0;
}

static int on_event(void *ctx, cJSON *json, size_t index, size_t line)
{
	struct loader *l = ctx;
	struct trace *t = l->trace;
	struct trace_event e = {
		.line = line < UINT32_MAX ? (uint32_t)line : UINT32_MAX,
		.index = index < UINT32_MAX ? (uint32_t)index : UINT32_MAX,
	};
	struct trace_arena_mark mark = trace_arena_mark(t);
	/* only a filter may forget the event's strings */
	struct trace_strings_mark strings = { 0 };
	if (l->filter)
		strings = trace_strings_mark(t);

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

	set_absent_values(l, &e);
	const struct trace_object *top = trace_schema_top(e.kind);
	const struct trace_object *table = trace_schema_args(e.kind);
	/* the kind's struct: every member of the union starts there */
	void *model = &e.op;
	if (top)
		load_object(l, json, top, model, "");
	if (e.kind == TRACE_COUNTER && args)
		load_counter(l, args, &e.counter);
	else if (table == &trace_schema_cast && cJSON_IsObject(args))
		load_cast(l, args, &e.cast);
	else if (table && cJSON_IsObject(args))
		load_object(l, args, table, model, "args.");
	if (e.kind == TRACE_OP && !e.op.overload)
		e.op.overload = trace_intern(t, "");
	if (e.kind == TRACE_CAST)
		trace_cast_set_origin(&e);
	if (l->failed)
		return -1;
	return hand_over(l, &e, json, mark, strings);
}

/* The header's and the trailer's keys, as the events' are read;
 * messages name "amptrace.<key>" at the object's line. */
static int load_top_object(struct loader *l, const cJSON *value, size_t line,
			   const struct trace_object *table, void *m,
			   const char *where)
{
	l->line = line;
	l->what = NULL;
	l->failed = false;
	load_object(l, value, table, m, where);
	return l->failed ? -1 : 0;
}

/* A number in decimal, without a leading zero: its length, else 0. */
static size_t number_length(const char *s)
{
	size_t n = strspn(s, "0123456789");

	return n > 1 && s[0] == '0' ? 0 : n;
}

/* "MAJOR.MINOR" (FORMAT.md's "1.4") and nothing else, shorter than
 * `size` (it is kept whole): what the major and minor are compared by
 * must be what the file says. */
static bool is_version(const char *s, size_t size)
{
	size_t major = number_length(s);

	if (!major || s[major] != '.')
		return false;
	size_t minor = number_length(s + major + 1);
	return minor && !s[major + 1 + minor] && major + 1 + minor < size;
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
		if (!is_version(format->valuestring, sizeof t->format))
			return trace_error_set(l->err, "%s:%zu: amptrace.format "
					       "\"%s\" is not a version "
					       "MAJOR.MINOR like \"%s\"",
					       l->path, line, format->valuestring,
					       TRACE_FORMAT_VERSION);
		if (atoi(format->valuestring) != TRACE_FORMAT_MAJOR)
			return trace_error_set(l->err, "%s:%zu: trace format %s "
					       "is not supported (this amptrace "
					       "reads %d.x)", l->path, line,
					       format->valuestring,
					       TRACE_FORMAT_MAJOR);
		t->header = (struct trace_header){ .rank = -1 };
		if (load_top_object(l, value, line, &trace_schema_header,
				    &t->header, "amptrace.") != 0)
			return -1;
		snprintf(t->format, sizeof t->format, "%s", format->valuestring);
		t->amptrace = true;
	} else if (!strcmp(key, "amptraceEnd")) {
		if (!cJSON_IsObject(value))
			return trace_error_set(l->err, "%s:%zu: \"amptraceEnd\" "
					       "must be an object, got %s",
					       l->path, line, type_name(value));
		t->trailer = (struct trace_trailer){ 0 };
		if (load_top_object(l, value, line, &trace_schema_trailer,
				    &t->trailer, "amptraceEnd.") != 0)
			return -1;
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

/* Either the file `path`, streamed (text NULL), or a text in memory. */
static int load(const char *path, const char *text, size_t len,
		const struct trace_filter *filter, struct trace *trace,
		struct trace_error *err)
{
	struct loader l = { .trace = trace, .err = err, .path = path,
			    .filter = filter };
	struct trace_scan_handlers h = {
		.ctx = &l, .top = on_top,
		.event = filter && !filter->event ? NULL : on_event,
		.stop_at = filter ? filter->stop_at : 0,
		.digest = filter && filter->digest,
		.only_with = filter ? filter->only_with : NULL,
	};
	struct trace_scan_result result;

	*trace = (struct trace){ 0 };
	trace->path = strdup(path);
	int status = text ? trace_scan(path, text, len, &h, &result, err)
			  : trace_scan_file(path, &h, &result, err);
	if (status != 0) {
		trace_free(trace);
		return -1;
	}
	trace->truncated = result.truncated;
	trace->truncated_line = result.truncated_line;
	trace->header_first = result.amptrace;
	trace->whole_end = result.whole_end;
	trace->digest = result.digest;
	trace->dropped += h.event ? result.skipped : result.events;
	return 0;
}

int trace_load(const char *path, struct trace *trace, struct trace_error *err)
{
	return load(path, NULL, 0, NULL, trace, err);
}

int trace_load_filtered(const char *path, struct trace *trace,
			const struct trace_filter *filter,
			struct trace_error *err)
{
	return load(path, NULL, 0, filter, trace, err);
}

static int drop_flows(void *ctx, struct trace *trace,
		      const struct trace_event *e, cJSON *json,
		      struct trace_error *err)
{
	(void)ctx;
	(void)trace;
	(void)json;
	(void)err;
	return e->kind == TRACE_FLOW ? TRACE_DROP : TRACE_KEEP;
}

int trace_load_without_flows(const char *path, struct trace *trace,
			     struct trace_error *err)
{
	static const struct trace_filter without_flows = { NULL, drop_flows };

	return load(path, NULL, 0, &without_flows, trace, err);
}

int trace_load_text(const char *path, const char *text, size_t len,
		    struct trace *trace, struct trace_error *err)
{
	return load(path, text, len, NULL, trace, err);
}

int trace_load_text_filtered(const char *path, const char *text, size_t len,
			     struct trace *trace,
			     const struct trace_filter *filter,
			     struct trace_error *err)
{
	return load(path, text, len, filter, trace, err);
}

/* A merged file's note: which of its inputs were truncated (merge read
 * them as far as they went: a killed writer's, or one still writing),
 * the first named.  False when none was. */
static bool merged_input_truncated(const struct trace *trace, char *buf,
				   size_t size)
{
	const struct trace_merged_input *first = NULL;
	int count = 0;

	for (int i = 0; i < trace->header.nmerged; i++)
		if (trace->header.merged[i].truncated && !count++)
			first = &trace->header.merged[i];
	if (!first)
		return false;
	char more[48] = "";
	if (count > 1)
		snprintf(more, sizeof more, " and %d more input%s", count - 1,
			 count > 2 ? "s" : "");
	bool one = count == 1;
	snprintf(buf, size, "rank %d's input (%s)%s %s truncated (%s): %s "
		 "events up to there are merged", first->rank,
		 first->file ? first->file : "?", more, one ? "was" : "were",
		 one ? "its writer was stopped, or was still writing it"
		     : "their writers were stopped, or were still writing them",
		 one ? "its" : "their");
	return true;
}

bool trace_unfinished(const struct trace *trace)
{
	return trace->truncated || (trace->amptrace && !trace->finalized);
}

const char *trace_end_note(const struct trace *trace, char *buf, size_t size)
{
	if (trace->truncated) {
		/* read while amptrace run still writes it, as often as
		 * after a kill */
		snprintf(buf, size, "truncated at line %zu: the trace was not "
			 "finished (its writer was stopped, or is still writing "
			 "it); events up to there are read",
			 trace->truncated_line);
		return buf;
	}
	if (trace->amptrace && !trace->finalized) {
		snprintf(buf, size, "truncated: the trace has no trailer "
			 "(amptraceEnd; its writer was stopped, or is still "
			 "writing it)");
		return buf;
	}
	if (merged_input_truncated(trace, buf, size))
		return buf;
	const struct trace_exit *exit = trace->trailer.exit;
	if (exit && trace_exit_is(exit, "signaled")) {
		snprintf(buf, size, "the program was killed by %s; the trace "
			 "ends at its death",
			 exit->signal_name ? exit->signal_name : "a signal");
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

const char *trace_framework(const struct trace *trace)
{
	if (trace->header.framework)
		return trace->header.framework;
	/* format 1.0 names it per process only */
	if (trace->trailer.nprocesses)
		return trace->trailer.processes[0].framework;
	return NULL;
}

const char *trace_policy_table(const struct trace *trace)
{
	static const char tag[] = "(policy table: ";
	static __thread char named[32];

	if (trace->header.policy_table)
		return trace->header.policy_table;
	/* before 1.4: "torch 1.13.0a0 (policy table: 1.13)" */
	const char *framework = trace_framework(trace);
	const char *at = framework ? strstr(framework, tag) : NULL;
	if (!at)
		return NULL;
	at += sizeof tag - 1;
	snprintf(named, sizeof named, "%.*s", (int)strcspn(at, ",)"), at);
	return named;
}

const char *const trace_dtype_names[TRACE_DTYPE_COUNT + 1] = {
	"f64", "f32", "f16", "bf16", "i64", "i32", "bool", NULL
};

double trace_duration_us(const struct trace *t)
{
	double t0 = INFINITY, t1 = -INFINITY;

	if (t->trailer.duration_ns > 0)
		return (double)t->trailer.duration_ns / 1000.0;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_META)
			continue;
		t0 = fmin(t0, e->ts);
		t1 = fmax(t1, e->ts + e->dur);
	}
	return t1 > t0 ? t1 - t0 : 0;
}

const char *trace_op_label(const struct trace_op *op, char *buf, size_t size)
{
	if (op->overload && op->overload[0])
		snprintf(buf, size, "%s.%s", op->op, op->overload);
	else
		snprintf(buf, size, "%s", op->op);
	return buf;
}
