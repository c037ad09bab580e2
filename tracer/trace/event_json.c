/* Trace events, and a file's header and trailer, as JSON (event_json.h):
 * generated from trace_schema.h, one function per table, each key
 * written in the table's order when its WHEN holds. */
#include "event_json.h"
#include "trace_schema.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static void write_us(struct jsonw *w, double us)
{
	jsonw_us(w, trace_us_to_ns(us));
}

/* e's first keys (name, cat, ph, ts, pid, tid, and dur for 'X'), the
 * object left open. */
static void write_head(struct jsonw *w, const struct trace_event *e)
{
	jsonw_lit(w, "{\"name\":");
	jsonw_str(w, e->name);
	jsonw_lit(w, ",\"cat\":");
	jsonw_str(w, e->cat);
	char ph[] = { ',', '"', 'p', 'h', '"', ':', '"', e->ph, '"' };
	jsonw_raw(w, ph, sizeof ph);
	jsonw_lit(w, ",\"ts\":");
	jsonw_hole_begin(w);
	write_us(w, e->ts);
	jsonw_hole_end(w);
	jsonw_lit(w, ",\"pid\":");
	jsonw_i64(w, e->pid);
	jsonw_lit(w, ",\"tid\":");
	jsonw_i64(w, e->tid);
	if (e->ph == 'X') {
		jsonw_lit(w, ",\"dur\":");
		jsonw_hole_begin(w);
		write_us(w, e->dur);
		jsonw_hole_end(w);
	}
}

/* M events have no cat and no ts (FORMAT.md §2). */
static void write_meta_head(struct jsonw *w, const struct trace_event *e)
{
	jsonw_lit(w, "{\"name\":");
	jsonw_str(w, e->name);
	jsonw_lit(w, ",\"ph\":\"M\",\"pid\":");
	jsonw_i64(w, e->pid);
	jsonw_lit(w, ",\"tid\":");
	jsonw_i64(w, e->tid);
}

/* ----------------------------------------------------------- values */

/* An id that differs from one event to the next (a template's hole). */
static void write_id(struct jsonw *w, uint64_t id)
{
	jsonw_hole_begin(w);
	jsonw_u64(w, id);
	jsonw_hole_end(w);
}

static void write_shape(struct jsonw *w, int ndim, const int64_t *shape)
{
	jsonw_raw(w, "[", 1);
	for (int d = 0; d < ndim; d++) {
		if (d)
			jsonw_raw(w, ",", 1);
		jsonw_i64(w, shape[d]);
	}
	jsonw_raw(w, "]", 1);
}

static void write_strings(struct jsonw *w, const char *const *list, int n)
{
	jsonw_raw(w, "[", 1);
	for (int i = 0; i < n; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, list[i]);
	}
	jsonw_raw(w, "]", 1);
}

static void write_triple(struct jsonw *w, const int32_t *v)
{
	for (int i = 0; i < 3; i++) {
		jsonw_raw(w, i ? "," : "[", 1);
		jsonw_i64(w, v[i]);
	}
	jsonw_raw(w, "]", 1);
}

/* torch.profiler's keys, for tools that read Kineto traces. */
static void write_profiler_types(struct jsonw *w,
				 const struct trace_tensor *inputs, int n)
{
	jsonw_raw(w, "[", 1);
	for (int i = 0; i < n; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, inputs[i].info->profiler_type);
	}
	jsonw_raw(w, "]", 1);
}

static void write_profiler_dims(struct jsonw *w,
				const struct trace_tensor *inputs, int n)
{
	jsonw_raw(w, "[", 1);
	for (int i = 0; i < n; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		write_shape(w, inputs[i].info->ndim, inputs[i].info->shape);
	}
	jsonw_raw(w, "]", 1);
}

static void write_scope(struct jsonw *w, char scope)
{
	char text[] = { '"', scope ? scope : 't', '"' };

	jsonw_raw(w, text, sizeof text);
}

/* ---------------------------------------------------------- objects */

/* A table's keys are written each with a comma before it: the first
 * comma becomes the object's '{' (object_close). */
static size_t object_open(const struct jsonw *w)
{
	return w->len;
}

static void object_close(struct jsonw *w, size_t open)
{
	if (w->failed)
		return;
	if (w->len == open) {
		jsonw_raw(w, "{}", 2);
		return;
	}
	w->data[open] = '{';
	jsonw_raw(w, "}", 1);
}

/* One row of trace_schema.h, written when its WHEN holds: `e` the event
 * (NULL in the header and trailer), `m` the table's struct. */
#define WRITE_ROW(type, key, f, when, check, since)                         \
	if (TRACE_WHEN_##when(e, m, f)) {                                   \
		jsonw_lit(w, ",\"" key "\":");                               \
		WRITE_##type(m, f)                                          \
	}
#define WRITE_STRING(m, f) jsonw_str(w, (m)->f);
#define WRITE_STRING_OR_NULL(m, f) jsonw_str(w, (m)->f);
#define WRITE_ID(m, f) write_id(w, (m)->f);
#define WRITE_ID_AGAIN(m, f) write_id(w, (m)->f);
#define WRITE_U64(m, f) jsonw_u64(w, (m)->f);
#define WRITE_U32(m, f) jsonw_u64(w, (m)->f);
#define WRITE_I64(m, f) jsonw_i64(w, (m)->f);
#define WRITE_INT(m, f) jsonw_i64(w, (m)->f);
#define WRITE_INT_OR_NULL(m, f)                                             \
	if ((m)->f < 0)                                                     \
		jsonw_lit(w, "null");                                       \
	else                                                                \
		jsonw_i64(w, (m)->f);
#define WRITE_BOOL(m, f) jsonw_bool(w, (m)->f);
#define WRITE_TRUE(m, f) jsonw_lit(w, "true");
/* JSON has no NaN: an absent or non-finite number is null */
#define WRITE_NUMBER_OR_NULL(m, f) jsonw_double(w, (m)->f);
#define WRITE_US(m, f) jsonw_us(w, (m)->f);
#define WRITE_SHAPE(m, f) write_shape(w, (m)->ndim, (m)->f);
#define WRITE_STRINGS(m, f) write_strings(w, (m)->f, (m)->n##f);
#define WRITE_TRIPLE(m, f) write_triple(w, (m)->f);
#define WRITE_PROFILER_TYPES(m, f) write_profiler_types(w, (m)->f, (m)->n##f);
#define WRITE_PROFILER_DIMS(m, f) write_profiler_dims(w, (m)->f, (m)->n##f);
#define WRITE_BANDWIDTH(m, f)                                               \
	jsonw_double(w, (double)(m)->f / (double)trace_us_to_ns(e->dur));
#define WRITE_SCOPE(m, f) write_scope(w, (m)->f);
#define WRITE_SCOPE_THREAD(m, f) write_scope(w, 't');
#define WRITE_AUTOCAST(m, f) write_autocast(w, e, (m)->f);
#define WRITE_EXIT(m, f) write_exit_or_null(w, e, (m)->f);
#define WRITE_GPU(m, f) write_gpu_timing(w, e, (m)->f);
#define WRITE_TENSORS(m, f) write_tensor_list(w, e, (m)->f, (m)->n##f);
#define WRITE_PROCESSES(m, f) write_process_list(w, e, (m)->f, (m)->n##f);
#define WRITE_MERGED(m, f) write_merged_input_list(w, e, (m)->f, (m)->n##f);
#define WRITE_MERGED_ENDS(m, f) write_merged_end_list(w, e, (m)->f, (m)->n##f);
#define WRITE_RECORDING(m, f) write_recording(w, e, (m)->f);
#define WRITE_STEPS(m, f) write_process_steps(w, e, (m)->f);
#define WRITE_AGGREGATE_CACHE(m, f) write_aggregate_cache(w, e, &(m)->f);
#define WRITE_OP_ROWS(m, f) write_aggregate_op_rows(w, e, (m)->f, (m)->n##f);
#define WRITE_CAST_ROWS(m, f)                                               \
	write_aggregate_cast_rows(w, e, (m)->f, (m)->n##f);
#define WRITE_DIAG_ROWS(m, f)                                               \
	write_aggregate_diag_rows(w, e, (m)->f, (m)->n##f);

/* write_<name>(w, e, m): the object of table KEYS over struct S. */
#define OBJECT_WRITER(name, S, KEYS)                                        \
	static void write_##name(struct jsonw *w, const struct trace_event *e, \
				 const S *m)                                \
	{                                                                   \
		size_t open = object_open(w);                               \
		(void)e;                                                    \
		KEYS(WRITE_ROW)                                             \
		object_close(w, open);                                      \
	}
/* write_<name>_list(w, e, list, n): an array of them. */
#define LIST_WRITER(name, S)                                                \
	static void write_##name##_list(struct jsonw *w,                    \
					const struct trace_event *e,        \
					const S *list, int n)               \
	{                                                                   \
		jsonw_raw(w, "[", 1);                                       \
		for (int i = 0; i < n; i++) {                               \
			if (i)                                              \
				jsonw_raw(w, ",", 1);                       \
			write_##name(w, e, &list[i]);                       \
		}                                                           \
		jsonw_raw(w, "]", 1);                                       \
	}
/* write_<name>_rows(w, e, list, n): an array of rows, each an array of
 * the table's columns in order (all of them: no key, no WHEN). */
#define WRITE_COLUMN(type, key, f, when, check, since)                      \
	jsonw_raw(w, ",", 1);                                               \
	WRITE_##type(m, f)
#define ROWS_WRITER(name, S, COLUMNS)                                       \
	static void write_##name##_rows(struct jsonw *w,                    \
					const struct trace_event *e,        \
					const S *list, int n)               \
	{                                                                   \
		(void)e;                                                    \
		jsonw_raw(w, "[", 1);                                       \
		for (int i = 0; i < n; i++) {                               \
			const S *m = &list[i];                              \
			if (i)                                              \
				jsonw_raw(w, ",", 1);                       \
			size_t open = w->len;                               \
			COLUMNS(WRITE_COLUMN)                               \
			if (!w->failed)                                     \
				w->data[open] = '[';                        \
			jsonw_raw(w, "]", 1);                               \
		}                                                           \
		jsonw_raw(w, "]", 1);                                       \
	}
/* The keys of table KEYS written inside an object left open. */
#define KEYS_WRITER(name, S, KEYS)                                          \
	static void write_##name##_keys(struct jsonw *w,                    \
					const struct trace_event *e,        \
					const S *m)                         \
	{                                                                   \
		KEYS(WRITE_ROW)                                             \
	}

OBJECT_WRITER(autocast, struct trace_autocast, TRACE_AUTOCAST_KEYS)
OBJECT_WRITER(tensor_record, struct trace_tensor_record, TRACE_TENSOR_KEYS)

static void write_tensor(struct jsonw *w, const struct trace_event *e,
			 const struct trace_tensor *t)
{
	struct trace_tensor_record record = trace_tensor_record(t);

	write_tensor_record(w, e, &record);
}
LIST_WRITER(tensor, struct trace_tensor)
OBJECT_WRITER(op, struct trace_op, TRACE_OP_KEYS)
OBJECT_WRITER(cast_record, struct trace_cast_record, TRACE_CAST_KEYS)

static void write_cast(struct jsonw *w, const struct trace_event *e,
		       const struct trace_cast *c)
{
	struct trace_cast_record record = trace_cast_record(c);

	write_cast_record(w, e, &record);
}
OBJECT_WRITER(scope_begin, struct trace_scope, TRACE_SCOPE_BEGIN_KEYS)
OBJECT_WRITER(scope_end, struct trace_scope, TRACE_SCOPE_END_KEYS)
OBJECT_WRITER(cache_clear, struct trace_cache_clear, TRACE_CACHE_CLEAR_KEYS)
KEYS_WRITER(cache_clear_top, struct trace_cache_clear,
	    TRACE_CACHE_CLEAR_TOP_KEYS)
OBJECT_WRITER(scaler, struct trace_scaler, TRACE_SCALER_KEYS)
KEYS_WRITER(scaler_top, struct trace_scaler, TRACE_SCALER_TOP_KEYS)
OBJECT_WRITER(diag, struct trace_diag, TRACE_DIAG_KEYS)
KEYS_WRITER(diag_top, struct trace_diag, TRACE_DIAG_TOP_KEYS)
OBJECT_WRITER(kernel, struct trace_kernel, TRACE_KERNEL_KEYS)
OBJECT_WRITER(memcpy, struct trace_kernel, TRACE_MEMCPY_KEYS)
OBJECT_WRITER(flow, struct trace_flow_event, TRACE_FLOW_KEYS)
KEYS_WRITER(flow_top, struct trace_flow_event, TRACE_FLOW_TOP_KEYS)
OBJECT_WRITER(meta, struct trace_meta, TRACE_META_KEYS)
OBJECT_WRITER(merged_input, struct trace_merged_input,
	      TRACE_MERGED_INPUT_KEYS)
LIST_WRITER(merged_input, struct trace_merged_input)
OBJECT_WRITER(step, struct trace_step, TRACE_STEP_KEYS)
KEYS_WRITER(step_top, struct trace_step, TRACE_STEP_TOP_KEYS)
ROWS_WRITER(aggregate_op, struct trace_aggregate_op,
	    TRACE_AGGREGATE_OP_COLUMNS)
ROWS_WRITER(aggregate_cast, struct trace_aggregate_cast,
	    TRACE_AGGREGATE_CAST_COLUMNS)
ROWS_WRITER(aggregate_diag, struct trace_aggregate_diag,
	    TRACE_AGGREGATE_DIAG_COLUMNS)
OBJECT_WRITER(aggregate_cache, struct trace_aggregate_cache,
	      TRACE_AGGREGATE_CACHE_KEYS)
OBJECT_WRITER(aggregate, struct trace_aggregate, TRACE_AGGREGATE_KEYS)
KEYS_WRITER(aggregate_top, struct trace_aggregate, TRACE_AGGREGATE_TOP_KEYS)
OBJECT_WRITER(recording, struct trace_recording, TRACE_RECORDING_KEYS)
OBJECT_WRITER(header, struct trace_header, TRACE_HEADER_KEYS)
OBJECT_WRITER(exit, struct trace_exit, TRACE_EXIT_KEYS)

/* A merged input's exit is null when the input had no trailer. */
static void write_exit_or_null(struct jsonw *w, const struct trace_event *e,
			       const struct trace_exit *exit)
{
	if (exit)
		write_exit(w, e, exit);
	else
		jsonw_lit(w, "null");
}

OBJECT_WRITER(gpu_timing, struct trace_gpu_timing, TRACE_GPU_TIMING_KEYS)
OBJECT_WRITER(process_steps, struct trace_process_steps,
	      TRACE_PROCESS_STEPS_KEYS)
OBJECT_WRITER(process, struct trace_process_end, TRACE_PROCESS_END_KEYS)
LIST_WRITER(process, struct trace_process_end)
OBJECT_WRITER(merged_end, struct trace_merged_end, TRACE_MERGED_END_KEYS)
LIST_WRITER(merged_end, struct trace_merged_end)
OBJECT_WRITER(trailer, struct trace_trailer, TRACE_TRAILER_KEYS)

/* Counters' args are their series, named as they come. */
static void write_counter(struct jsonw *w, const struct trace_counter *c)
{
	jsonw_lit(w, ",\"args\":{");
	for (int i = 0; i < c->nseries; i++) {
		if (i)
			jsonw_raw(w, ",", 1);
		jsonw_str(w, c->series[i]);
		jsonw_raw(w, ":", 1);
		jsonw_double(w, c->value[i]);
	}
	jsonw_lit(w, "}}");
}

void event_json_header(struct jsonw *w, const struct trace_header *h)
{
	write_header(w, NULL, h);
}

void event_json_trailer(struct jsonw *w, const struct trace_trailer *t)
{
	write_trailer(w, NULL, t);
}

static void write_body(struct jsonw *w, const struct trace_event *e);

/* ------------------------------------------------------------ templates */

/* The ops of a training loop repeat: the same op, on tensors of the same
 * dtypes, shapes and names, under the same autocast state; only times and
 * ids change.  An op event's text is kept as a template, its times and
 * ids cut out (the jsonw holes), and the next op alike is written by
 * copying the text between its own times and ids.  "Alike" compares
 * every other field, strings by address (they are interned: see
 * event_json_memo_new): the key and the holes come from the same rows
 * of trace_schema.h as the text, so a key added there is in both. */
#define MEMO_SETS 128
#define MEMO_WAYS 4
#define MEMO_MAX_TENSORS 8
#define MEMO_KEY_WORDS 320
#define MEMO_TEXT 2048

/* A hole's value: a time (µs, written as ns) or an id. */
struct hole {
	bool time;
	double us;
	uint64_t id;
};

/* What an op's text depends on: its words (beside its holes) and the
 * holes' values, in the order the writer writes them. */
struct op_memo {
	int nwords, nholes;
	bool full;            /* too much to keep: written without a template */
	uint64_t words[MEMO_KEY_WORDS];
	struct hole holes[JSONW_MAX_HOLES];
};

struct op_template {
	int nwords;           /* 0: the slot is empty */
	int nholes;
	uint64_t words[MEMO_KEY_WORDS];
	size_t len;
	uint16_t at[JSONW_MAX_HOLES]; /* where each hole goes in text */
	char text[MEMO_TEXT];
};

/* MEMO_WAYS templates per set: the ops of one step (a hundred or so)
 * then rarely push each other out. */
struct event_json_memo {
	struct op_template slots[MEMO_SETS][MEMO_WAYS];
	unsigned next[MEMO_SETS]; /* the way replaced next */
};

struct event_json_memo *event_json_memo_new(void)
{
	return calloc(1, sizeof(struct event_json_memo));
}

void event_json_memo_free(struct event_json_memo *m)
{
	free(m);
}

/* Inline: an op's memo is a few dozen words, made for every op. */
static inline void memo_word(struct op_memo *k, uint64_t word)
{
	if (__builtin_expect(k->nwords == MEMO_KEY_WORDS, 0)) {
		k->full = true;
		return;
	}
	k->words[k->nwords++] = word;
}

static inline void memo_hole(struct op_memo *k, struct hole hole)
{
	if (__builtin_expect(k->nholes == JSONW_MAX_HOLES, 0)) {
		k->full = true;
		return;
	}
	k->holes[k->nholes++] = hole;
}

/* One row of trace_schema.h as the memo sees it: its words, or its
 * hole.  A value that says whether its key is written (a string's
 * address, NULL when absent; a number, 0 when absent; a flag) is the
 * row's word; other rows whose WHEN varies add whether it holds. */
#define MEMO_ROW(type, key, f, when, check, since)                          \
	{                                                                   \
		bool present = TRACE_WHEN_##when(e, m, f);                  \
		if (MEMO_VARIES_##when && !MEMO_SHOWN_##type)               \
			memo_word(k, present);                              \
		if (MEMO_SHOWN_##type || present) {                         \
			MEMO_##type(m, f)                                   \
		}                                                           \
	}
#define MEMO_VARIES_ALWAYS 0
#define MEMO_VARIES_DEFAULTED 0
#define MEMO_VARIES_SET 1
#define MEMO_VARIES_NONEMPTY 1
#define MEMO_VARIES_COMPLETE 1
/* the types whose value shows it (their word is written either way) */
#define MEMO_SHOWN_STRING 1
#define MEMO_SHOWN_STRING_OR_NULL 1
#define MEMO_SHOWN_INT 1
#define MEMO_SHOWN_BOOL 1
#define MEMO_SHOWN_TRUE 1
#define MEMO_SHOWN_ID 0
#define MEMO_SHOWN_ID_AGAIN 0
#define MEMO_SHOWN_SHAPE 0
#define MEMO_SHOWN_STRINGS 0
#define MEMO_SHOWN_AUTOCAST 0
#define MEMO_SHOWN_TENSORS 0
#define MEMO_SHOWN_PROFILER_TYPES 0
#define MEMO_SHOWN_PROFILER_DIMS 0
#define MEMO_STRING(m, f) memo_word(k, (uintptr_t)(m)->f);
#define MEMO_STRING_OR_NULL(m, f) memo_word(k, (uintptr_t)(m)->f);
#define MEMO_ID(m, f) memo_hole(k, (struct hole){ .id = (m)->f });
#define MEMO_ID_AGAIN(m, f) memo_hole(k, (struct hole){ .id = (m)->f });
#define MEMO_INT(m, f) memo_word(k, (uint64_t)(m)->f);
#define MEMO_BOOL(m, f) memo_word(k, (m)->f);
#define MEMO_TRUE(m, f) memo_word(k, (m)->f);
#define MEMO_SHAPE(m, f)                                                    \
	memo_word(k, (uint64_t)(m)->ndim);                                  \
	for (int d = 0; d < (m)->ndim; d++)                                 \
		memo_word(k, (uint64_t)(m)->f[d]);
#define MEMO_STRINGS(m, f)                                                  \
	memo_word(k, (uintptr_t)(m)->f);                                    \
	memo_word(k, (uint64_t)(m)->n##f);
#define MEMO_AUTOCAST(m, f) memo_autocast(k, e, (m)->f);
#define MEMO_TENSORS(m, f)                                                  \
	memo_word(k, (uint64_t)(m)->n##f);                                  \
	for (int i = 0; i < (m)->n##f; i++)                                 \
		memo_tensor(k, e, &(m)->f[i]);
#define MEMO_PROFILER_TYPES(m, f)                                           \
	for (int i = 0; i < (m)->n##f; i++)                                 \
		memo_word(k, (uintptr_t)(m)->f[i].info->profiler_type);
#define MEMO_PROFILER_DIMS(m, f) /* the inputs' shapes, already in */

#define MEMO_OF(name, S, KEYS)                                              \
	static inline void memo_##name(struct op_memo *k,                   \
				       const struct trace_event *e,         \
				       const S *m)                          \
	{                                                                   \
		KEYS(MEMO_ROW)                                              \
	}
MEMO_OF(autocast, struct trace_autocast, TRACE_AUTOCAST_KEYS)
MEMO_OF(tensor_record, struct trace_tensor_record, TRACE_TENSOR_KEYS)

static inline void memo_tensor(struct op_memo *k, const struct trace_event *e,
			       const struct trace_tensor *t)
{
	struct trace_tensor_record record = trace_tensor_record(t);

	memo_tensor_record(k, e, &record);
}
MEMO_OF(op_args, struct trace_op, TRACE_OP_KEYS)

/* Which set of ways an op's templates are in: a hash of what most often
 * tells ops apart (the key compares everything). */
static size_t memo_set(const struct trace_event *e)
{
	const struct trace_op *op = &e->op;
	uint64_t h = (uintptr_t)op->op ^ (uint64_t)op->ninputs << 48 ^
		     (uint64_t)e->tid << 32;

	for (int i = 0; i < op->ninputs + op->noutputs; i++) {
		const struct trace_tensor *t = i < op->ninputs
			? &op->inputs[i] : &op->outputs[i - op->ninputs];
		const struct trace_tensor_info *info = t->info;
		h = (h ^ (uint64_t)(info->ndim > 0 ? info->shape[0] : 0) ^
		     (uint64_t)(info->ndim > 1 ? info->shape[1] : 0) << 20 ^
		     (uintptr_t)info->name) * 0x9E3779B97F4A7C15ull;
	}
	h ^= h >> 29;
	return (size_t)(h % MEMO_SETS);
}

/* e's memo; false when it is too big for a template. */
static bool op_memo_of(const struct trace_event *e, struct op_memo *k)
{
	if (e->op.ninputs + e->op.noutputs > MEMO_MAX_TENSORS)
		return false;
	k->nwords = 0;
	k->nholes = 0;
	k->full = false;
	memo_word(k, (uintptr_t)e->name);
	memo_word(k, (uintptr_t)e->cat);
	memo_word(k, (uint64_t)e->pid);
	memo_word(k, (uint64_t)e->tid);
	memo_word(k, (uint64_t)e->ph);
	memo_hole(k, (struct hole){ .time = true, .us = e->ts });
	if (e->ph == 'X')
		memo_hole(k, (struct hole){ .time = true, .us = e->dur });
	memo_op_args(k, e, &e->op);
	return !k->full;
}

/* Writes the op event e through its template; false when it has none
 * yet (one is then made from the text written the usual way). */
static bool write_op_memo(struct jsonw *w, const struct trace_event *e,
			  struct event_json_memo *m)
{
	struct op_memo key;

	if (!op_memo_of(e, &key))
		return false;
	int nholes = key.nholes;
	const struct hole *holes = key.holes;
	size_t words = (size_t)key.nwords * sizeof *key.words;
	size_t set = memo_set(e);
	struct op_template *t = NULL;
	for (int way = 0; way < MEMO_WAYS && !t; way++) {
		struct op_template *c = &m->slots[set][way];
		if (c->nwords == key.nwords && c->nholes == nholes &&
		    !memcmp(c->words, key.words, words))
			t = c;
	}
	if (t) {
		jsonw_reset(w);
		if (!jsonw_reserve(w, t->len + (size_t)nholes * 26))
			return true;
		char *out = w->data;
		size_t from = 0;
		for (int i = 0; i < nholes; i++) {
			memcpy(out, t->text + from, t->at[i] - from);
			out += t->at[i] - from;
			from = t->at[i];
			if (holes[i].time) {
				out = jsonw_us_text(out,
						    trace_us_to_ns(holes[i].us));
			} else {
				out = jsonw_digits(out, holes[i].id);
			}
		}
		memcpy(out, t->text + from, t->len - from);
		out += t->len - from;
		*out = '\0';
		w->len = (size_t)(out - w->data);
		return true;
	}
	/* A new template: the event written with its holes noted. */
	t = &m->slots[set][m->next[set]++ % MEMO_WAYS];
	t->nwords = 0;
	struct jsonw_holes noted = { 0 };
	w->holes = &noted;
	jsonw_reset(w);
	write_head(w, e);
	write_body(w, e);
	w->holes = NULL;
	if (w->failed || noted.count != nholes || w->len >= MEMO_TEXT)
		return true;
	size_t len = 0, from = 0;
	for (int i = 0; i < nholes; i++) {
		memcpy(t->text + len, w->data + from, noted.start[i] - from);
		len += noted.start[i] - from;
		t->at[i] = (uint16_t)len;
		from = noted.end[i];
	}
	memcpy(t->text + len, w->data + from, w->len - from);
	t->len = len + w->len - from;
	t->nholes = nholes;
	memcpy(t->words, key.words, words);
	t->nwords = key.nwords;
	return true;
}

void event_json_write_memo(struct jsonw *w, const struct trace_event *e,
			   struct event_json_memo *m)
{
	if (e->kind == TRACE_OP && m && write_op_memo(w, e, m))
		return;
	event_json_write(w, e);
}

/* Writes e's args (and the keys outside them) from its table. */
static void write_body(struct jsonw *w, const struct trace_event *e)
{
	switch (e->kind) {
	case TRACE_OP:
		jsonw_lit(w, ",\"args\":");
		write_op(w, e, &e->op);
		break;
	case TRACE_CAST:
	case TRACE_OTHER_CAST:
		jsonw_lit(w, ",\"args\":");
		write_cast(w, e, &e->cast);
		break;
	case TRACE_SCOPE_BEGIN:
		jsonw_lit(w, ",\"args\":");
		write_scope_begin(w, e, &e->scope);
		break;
	case TRACE_SCOPE_END:
		jsonw_lit(w, ",\"args\":");
		write_scope_end(w, e, &e->scope);
		break;
	case TRACE_CACHE_CLEAR:
		write_cache_clear_top_keys(w, e, &e->cache);
		jsonw_lit(w, ",\"args\":");
		write_cache_clear(w, e, &e->cache);
		break;
	case TRACE_COUNTER:
		write_counter(w, &e->counter);
		return;
	case TRACE_SCALER:
		write_scaler_top_keys(w, e, &e->scaler);
		jsonw_lit(w, ",\"args\":");
		write_scaler(w, e, &e->scaler);
		break;
	case TRACE_DIAG:
		write_diag_top_keys(w, e, &e->diag);
		jsonw_lit(w, ",\"args\":");
		write_diag(w, e, &e->diag);
		break;
	case TRACE_KERNEL:
		jsonw_lit(w, ",\"args\":");
		write_kernel(w, e, &e->kernel);
		break;
	case TRACE_MEMCPY:
		jsonw_lit(w, ",\"args\":");
		write_memcpy(w, e, &e->kernel);
		break;
	case TRACE_FLOW:
		write_flow_top_keys(w, e, &e->flow);
		jsonw_lit(w, ",\"args\":");
		write_flow(w, e, &e->flow);
		break;
	case TRACE_META:
		jsonw_lit(w, ",\"args\":");
		write_meta(w, e, &e->meta);
		break;
	case TRACE_STEP:
		write_step_top_keys(w, e, &e->step);
		jsonw_lit(w, ",\"args\":");
		write_step(w, e, &e->step);
		break;
	case TRACE_AGGREGATE:
		write_aggregate_top_keys(w, e, &e->aggregate);
		jsonw_lit(w, ",\"args\":");
		write_aggregate(w, e, &e->aggregate);
		break;
	default:
		break; /* other tools' events: the model holds no more */
	}
	jsonw_raw(w, "}", 1);
}

void event_json_append(struct jsonw *w, const struct trace_event *e)
{
	if (e->kind == TRACE_META)
		write_meta_head(w, e);
	else
		write_head(w, e);
	write_body(w, e);
}

void event_json_write(struct jsonw *w, const struct trace_event *e)
{
	jsonw_reset(w);
	event_json_append(w, e);
}
