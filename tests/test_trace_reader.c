/* The trace reader against hostile numbers and empty traces.  This suite
 * links a copy of the trace library built with UBSan (float-cast-overflow
 * included, no recovery), so a number cast to an integer it does not fit,
 * or qsort(NULL, 0, ...), aborts the test instead of passing unnoticed:
 *   - every JSON number that becomes an integer is range-checked, and an
 *     out-of-range one is an error naming the file, line and event;
 *   - summary, summary --json, diff and the analysis of a trace with no
 *     ops, casts or reasons sort nothing without undefined behaviour;
 *   - trace_read_file reads a file into a buffer of the file's size;
 *   - a file read through the reader's sliding window (trace_load) reads
 *     as the same text in memory does: a UTF-8 character cut by the
 *     window's edge, an event larger than the window, an error or a
 *     truncation past the first window;
 *   - a reader's filter (trace_load_filtered) sees every event a whole
 *     load keeps; the arrays of those it drops are given back, their
 *     strings stay; the commands' load without flows drops those
 *     and counts them;
 *   - the (pid, id) map the trace tools share keeps every key. */
#include "analyze.h"
#include "id_map.h"
#include "trace.h"
#include "commands.h"
#include "test_scratch.h"

#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs(text, f), 0);
	ck_assert_int_eq(fclose(f), 0);
}

#define HEAD "{\"amptrace\":{\"format\":\"1.0\"},\"traceEvents\":[\n"
#define OP_ARGS(extra)                                                      \
	"\"args\":{\"op_id\":1,\"op\":\"relu\",\"overload\":\"\","          \
	"\"phase\":\"forward\",\"policy\":\"none\",\"device\":\"cpu\","     \
	"\"autocast\":{\"enabled\":false,\"device\":\"cpu\","               \
	"\"dtype\":\"bf16\",\"depth\":0,\"scope\":null},\"inputs\":[],"      \
	"\"outputs\":[{\"tensor\":1,\"dtype\":\"f32\",\"shape\":[2]}],"   \
	"\"Input type\":[],\"Input Dims\":[]" extra "}}"
#define OP(fields, extra)                                                   \
	"{\"name\":\"relu\",\"cat\":\"amp.op\",\"ph\":\"X\"," fields ","    \
	OP_ARGS(extra)
#define GOOD_FIELDS "\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1"

/* One number out of range per row: the trace, and what the error says. */
static const struct {
	const char *trace;
	const char *message;
} bad_numbers[] = {
	{ HEAD OP("\"ts\":1,\"dur\":1,\"pid\":1e300,\"tid\":1", "") "]}",
	  "event 0 (amp.op X 'relu'): pid must be an integer" },
	{ HEAD OP("\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":-1e300", "") "]}",
	  "tid must be an integer" },
	{ HEAD OP("\"ts\":1,\"dur\":1,\"pid\":1.5,\"tid\":1", "") "]}",
	  "pid must be an integer" },
	{ HEAD OP("\"ts\":1e300,\"dur\":1,\"pid\":1,\"tid\":1", "") "]}",
	  "ts must be a number from" },
	{ HEAD OP("\"ts\":1,\"dur\":1e300,\"pid\":1,\"tid\":1", "") "]}",
	  "dur must be a number from" },
	{ HEAD OP(GOOD_FIELDS, ",\"status\":3e9") "]}",
	  "args.status must be an integer from" },
	{ HEAD "{\"name\":\"relu\",\"cat\":\"amp.op\",\"ph\":\"X\"," GOOD_FIELDS
	       ",\"args\":{\"op_id\":1,\"op\":\"relu\",\"overload\":\"\","
	       "\"phase\":\"forward\",\"policy\":\"none\",\"device\":\"cpu\","
	       "\"autocast\":{\"enabled\":false,\"device\":\"cpu\","
	       "\"dtype\":\"bf16\",\"depth\":1e12,\"scope\":null},"
	       "\"inputs\":[],\"outputs\":[],\"Input type\":[],"
	       "\"Input Dims\":[]}}]}",
	  "args.autocast.depth must be an integer from" },
	{ HEAD "{\"name\":\"relu\",\"cat\":\"amp.op\",\"ph\":\"X\"," GOOD_FIELDS
	       ",\"args\":{\"op_id\":1,\"op\":\"relu\",\"overload\":\"\","
	       "\"phase\":\"forward\",\"policy\":\"none\",\"device\":\"cpu\","
	       "\"autocast\":{\"enabled\":false,\"device\":\"cpu\","
	       "\"dtype\":\"bf16\",\"depth\":0,\"scope\":null},"
	       "\"inputs\":[],\"outputs\":[{\"tensor\":1,\"dtype\":\"f32\","
	       "\"shape\":[2,1e300]}],\"Input type\":[],\"Input Dims\":[]}}]}",
	  "args.outputs[0].shape must be an integer from" },
	{ HEAD "{\"name\":\"cast\",\"cat\":\"amp.cast\",\"ph\":\"X\","
	       GOOD_FIELDS ",\"args\":{\"op_id\":1,\"arg\":-3e9,\"tensor\":1,"
	       "\"result\":2,\"from\":\"f32\",\"to\":\"bf16\",\"cache\":\"miss\","
	       "\"reason\":\"\",\"bytes\":4}}]}",
	  "args.arg must be an integer from" },
	{ HEAD "{\"name\":\"s\",\"cat\":\"amp.scope\",\"ph\":\"B\","
	       "\"ts\":1,\"pid\":1,\"tid\":1,\"args\":{\"depth\":1e10}}]}",
	  "args.depth must be an integer from" },
	{ HEAD "{\"name\":\"k\",\"cat\":\"kernel\",\"ph\":\"X\"," GOOD_FIELDS
	       ",\"args\":{\"External id\":1e300}}]}",
	  "args.External id must be an integer from 0" },
	{ HEAD "{\"name\":\"k\",\"cat\":\"kernel\",\"ph\":\"X\"," GOOD_FIELDS
	       ",\"args\":{\"External id\":-1}}]}",
	  "args.External id must be an integer from 0" },
	{ HEAD "{\"name\":\"k\",\"cat\":\"kernel\",\"ph\":\"X\"," GOOD_FIELDS
	       ",\"args\":{\"amp.pid\":1e300}}]}",
	  "args.amp.pid must be an integer" },
	{ HEAD "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
	       "\"args\":{\"name\":\"GPU 0\",\"host_pid\":-1e300}}]}",
	  "args.host_pid must be an integer" },
	{ HEAD "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":1,"
	       "\"tid\":0,\"args\":{\"sort_index\":1e300}}]}",
	  "args.sort_index must be an integer" },
	{ HEAD "{\"name\":\"process_labels\",\"ph\":\"M\",\"pid\":1,"
	       "\"tid\":0,\"args\":{\"labels\":\"rank 0\",\"rank\":1e300}}]}",
	  "args.rank must be an integer" },
	{ "{\"amptrace\":{\"format\":\"1.0\",\"rank\":1e300},\"traceEvents\":[]}",
	  "amptrace.rank must be an integer from 0" },
	{ "{\"baseTimeNanoseconds\":-1e300,\"traceEvents\":[]}",
	  "baseTimeNanoseconds must be a number from 0" },
};

START_TEST(out_of_range_numbers_are_errors)
{
	const char *path = scratch_path("bad.json");
	struct trace trace;
	struct trace_error err;

	write_text(path, bad_numbers[_i].trace);
	ck_assert_int_eq(trace_load(path, &trace, &err), -1);
	unlink(path);
	ck_assert_msg(strstr(err.message, path) &&
			      strstr(err.message, bad_numbers[_i].message),
		      "row %d: got \"%s\"", _i, err.message);
}
END_TEST

/* The rows above differ from a trace that loads only in that number. */
START_TEST(in_range_numbers_load)
{
	const char *path = scratch_path("good.json");
	struct trace trace;
	struct trace_error err;

	write_text(path, HEAD OP(GOOD_FIELDS, ",\"status\":-2") ","
		   "{\"name\":\"k\",\"cat\":\"kernel\",\"ph\":\"X\"," GOOD_FIELDS
		   ",\"args\":{\"External id\":9007199254740992,\"amp.pid\":-7}}"
		   "]}");
	ck_assert_msg(trace_load(path, &trace, &err) == 0, "%s", err.message);
	unlink(path);
	ck_assert_int_eq(trace.events[0].op.status, -2);
	ck_assert_uint_eq(trace.events[1].kernel.external_id,
			  UINT64_C(9007199254740992));
	ck_assert_int_eq(trace.events[1].kernel.host_pid, -7);
	trace_free(&trace);
}
END_TEST

/* A trace with metadata only: nothing to sort, every array empty. */
START_TEST(empty_traces_summarise)
{
	const char *path = scratch_path("empty.json");
	struct trace trace;
	struct trace_error err;
	struct analysis a;

	write_text(path, HEAD "{\"name\":\"process_name\",\"ph\":\"M\","
			      "\"pid\":1,\"tid\":0,\"args\":{\"name\":\"p\"}}]}");
	ck_assert_int_eq(trace_load(path, &trace, &err), 0);
	ck_assert_int_eq(analysis_run(&trace, &a), 0);
	analysis_free(&a);
	trace_free(&trace);
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stdout));
	char *summary[] = { "summary", (char *)path, NULL };
	ck_assert_int_eq(amptrace_summary(2, summary), 0);
	char *json[] = { "summary", "--json", (char *)path, NULL };
	ck_assert_int_eq(amptrace_summary(3, json), 0);
	char *diff[] = { "diff", (char *)path, (char *)path, NULL };
	ck_assert_int_eq(amptrace_diff(3, diff), 0);
	unlink(path);
}
END_TEST

/* A file of exactly N bytes is read into N + 1 (its NUL), not 2N. */
START_TEST(read_file_allocates_its_size)
{
	const char *path = scratch_path("size.json");
	const size_t size = 1 << 20;
	char *text = malloc(size + 1);
	struct trace_error err;
	size_t len;

	ck_assert_ptr_nonnull(text);
	memset(text, ' ', size);
	text[size] = '\0';
	write_text(path, text);
	free(text);
	text = trace_read_file(path, &len, &err);
	unlink(path);
	ck_assert_ptr_nonnull(text);
	ck_assert_uint_eq(len, size);
	ck_assert_uint_lt(malloc_usable_size(text), size + size / 8);
	free(text);
}
END_TEST

/* A trace of a few windows: a thread name whose 4-byte character
 * starts 2 bytes before the first window's end, ops, an event larger
 * than the window, more ops; `tail` ends it. */
static char *windowed_trace(const char *tail, size_t *len)
{
	static const char op[] = OP(GOOD_FIELDS, "") ",\n";
	static const char name_head[] = "{\"name\":\"thread_name\",\"ph\":\"M\","
					"\"pid\":1,\"tid\":1,\"args\":{\"name\":\"";
	static const char name_tail[] = "\"}},\n";
	size_t big = TRACE_SCAN_WINDOW + TRACE_SCAN_WINDOW / 2;
	size_t cap = 3 * TRACE_SCAN_WINDOW + big + strlen(tail) + 4096;
	char *text = malloc(cap);
	size_t n = 0;

	ck_assert_ptr_nonnull(text);
	n += (size_t)snprintf(text, cap, "%s", HEAD);
	while (n + sizeof op < TRACE_SCAN_WINDOW / 2)
		n += (size_t)snprintf(text + n, cap - n, "%s", op);
	n += (size_t)snprintf(text + n, cap - n, "%s", name_head);
	memset(text + n, 'x', TRACE_SCAN_WINDOW - 2 - n);
	n = TRACE_SCAN_WINDOW - 2;
	n += (size_t)snprintf(text + n, cap - n, "\xf0\x9f\x98\x80%s", name_tail);
	while (n + sizeof op < 2 * TRACE_SCAN_WINDOW)
		n += (size_t)snprintf(text + n, cap - n, "%s", op);
	n += (size_t)snprintf(text + n, cap - n, "%s", name_head);
	memset(text + n, 'y', big);
	n += big;
	n += (size_t)snprintf(text + n, cap - n, "%s", name_tail);
	while (n + sizeof op < 2 * TRACE_SCAN_WINDOW + big + TRACE_SCAN_WINDOW / 2)
		n += (size_t)snprintf(text + n, cap - n, "%s", op);
	n += (size_t)snprintf(text + n, cap - n, "%s", tail);
	*len = n;
	return text;
}

/* The file read through the window and the same text in memory give the
 * same events, or the same error. */
static void assert_window_reads_as_memory(const char *text, size_t len,
					  bool good)
{
	const char *path = scratch_path("window.json");
	struct trace from_file, from_memory;
	struct trace_error file_err = { "" }, memory_err = { "" };
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	int file_status = trace_load(path, &from_file, &file_err);
	int memory_status = trace_load_text(path, text, len, &from_memory,
					    &memory_err);
	unlink(path);
	ck_assert_int_eq(file_status, good ? 0 : -1);
	ck_assert_int_eq(memory_status, file_status);
	ck_assert_str_eq(file_err.message, memory_err.message);
	if (!good)
		return;
	ck_assert_uint_gt(from_file.nevents, 1000);
	ck_assert_uint_eq(from_file.nevents, from_memory.nevents);
	ck_assert_int_eq(from_file.truncated, from_memory.truncated);
	ck_assert_uint_eq(from_file.truncated_line, from_memory.truncated_line);
	for (size_t i = 0; i < from_file.nevents; i++) {
		const struct trace_event *a = &from_file.events[i];
		const struct trace_event *b = &from_memory.events[i];
		ck_assert_int_eq(a->kind, b->kind);
		ck_assert_uint_eq(a->line, b->line);
		ck_assert_str_eq(a->name, b->name);
		if (a->kind == TRACE_META)
			ck_assert_str_eq(a->meta.value, b->meta.value);
	}
	trace_free(&from_file);
	trace_free(&from_memory);
}

START_TEST(window_reads_as_memory)
{
	size_t len;
	char *text = windowed_trace("{\"name\":\"thread_name\",\"ph\":\"M\","
				    "\"pid\":1,\"tid\":2,\"args\":{\"name\":"
				    "\"last\"}}]}\n", &len);

	assert_window_reads_as_memory(text, len, true);
	free(text);
}
END_TEST

struct dropping {
	size_t seen;
	const char *output; /* the last op's output dtype, interned */
};

static int drop_each(void *ctx, struct trace *trace,
		     const struct trace_event *e, cJSON *json,
		     struct trace_error *err)
{
	struct dropping *d = ctx;

	(void)trace;
	(void)json;
	(void)err;
	d->seen++;
	if (e->kind == TRACE_OP && e->op.noutputs > 0)
		d->output = e->op.outputs[0].info->dtype;
	return TRACE_DROP;
}

START_TEST(filter_drops_arrays_keeps_strings)
{
	const char *path = scratch_path("filtered.json");
	size_t len;
	char *text = windowed_trace("{\"name\":\"thread_name\",\"ph\":\"M\","
				    "\"pid\":1,\"tid\":2,\"args\":{\"name\":"
				    "\"last\"}}]}\n", &len);
	FILE *f = fopen(path, "wb");
	struct trace whole, filtered;
	struct trace_error err = { "" };
	struct dropping dropping = { 0 };
	struct trace_filter filter = { &dropping, drop_each };

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	free(text);
	ck_assert_int_eq(trace_load(path, &whole, &err), 0);
	ck_assert_int_eq(trace_load_filtered(path, &filtered, &filter, &err), 0);
	unlink(path);
	ck_assert_uint_gt(whole.nevents, 1000);
	ck_assert_uint_eq(dropping.seen, whole.nevents);
	ck_assert_uint_eq(filtered.nevents, 0);
	/* every event dropped: no array is left in the arena */
	ck_assert_ptr_null(filtered.arena);
	ck_assert_ptr_nonnull(dropping.output);
	ck_assert_str_eq(dropping.output, "f32");
	trace_free(&whole);
	trace_free(&filtered);
}
END_TEST

struct forgetting {
	int keep;      /* what the filter answers */
	size_t seen;
	bool names_ok; /* each event's name as the file has it */
};

static int name_each(void *ctx, struct trace *trace,
		     const struct trace_event *e, cJSON *json,
		     struct trace_error *err)
{
	struct forgetting *f = ctx;
	char name[32];

	(void)trace;
	(void)json;
	(void)err;
	snprintf(name, sizeof name, "step %zu", f->seen++);
	f->names_ok &= !strcmp(e->name, name);
	return f->keep;
}

/* 2,000 events, each named anew ("step N"), between a header and a
 * trailer, read through a filter that answers `keep`. */
static void load_named_steps(struct trace *t, struct forgetting *f)
{
	size_t cap = 256 << 10, len = 0;
	char *text = malloc(cap);
	struct trace_error err = { "" };
	struct trace_filter filter = { f, name_each };

	ck_assert_ptr_nonnull(text);
	len += (size_t)snprintf(text + len, cap - len,
				"{\"amptrace\":{\"format\":\"1.4\",\"generator\""
				":\"before the steps\"},\"traceEvents\":[\n");
	for (int i = 0; i < 2000; i++)
		len += (size_t)snprintf(text + len, cap - len,
					"%s{\"name\":\"step %d\",\"ph\":\"i\","
					"\"ts\":%d,\"pid\":1,\"tid\":1}",
					i ? ",\n" : "", i, i);
	len += (size_t)snprintf(text + len, cap - len,
				"],\"amptraceEnd\":{\"complete\":true,\"exit\":"
				"{\"status\":\"exited\",\"code\":0}}}\n");
	ck_assert_uint_lt(len, cap - 1);
	f->names_ok = true;
	ck_assert_msg(trace_load_text_filtered("steps.json", text, len, t,
					       &filter, &err) == 0,
		      "%s", err.message);
	free(text);
	ck_assert_uint_eq(f->seen, 2000);
	ck_assert(f->names_ok);
}

/* TRACE_FORGET gives back the strings a dropped event alone brought
 * (merge's inputs name each step anew): the table stays the size of one
 * event's, and what came before and after reads as ever; TRACE_DROP
 * keeps them (summary's aggregates point to them). */
START_TEST(filter_forgets_strings)
{
	struct trace forgot, dropped;
	struct forgetting forget = { .keep = TRACE_FORGET };
	struct forgetting drop = { .keep = TRACE_DROP };

	load_named_steps(&forgot, &forget);
	load_named_steps(&dropped, &drop);
	ck_assert_uint_gt(dropped.nstrings, 2000);
	ck_assert_uint_lt(forgot.nstrings, 32);
	/* the table still finds the header's string where it is */
	ck_assert_ptr_eq(trace_intern(&forgot, "before the steps"),
			 forgot.header.generator);
	ck_assert_str_eq(forgot.trailer.exit->status, "exited");
	ck_assert_str_eq(trace_intern(&forgot, "step 1999"), "step 1999");
	trace_free(&forgot);
	trace_free(&dropped);
}
END_TEST

/* Two ops and the arrow between them, as amptrace run writes it. */
#define FLOW_TRACE                                                          \
	"{\"amptrace\":{\"format\":\"1.4\"},\"traceEvents\":[\n"            \
	OP(GOOD_FIELDS, "") ",\n"                                           \
	"{\"name\":\"cast\",\"cat\":\"amp.flow\",\"ph\":\"s\",\"ts\":1,"    \
	"\"pid\":1,\"tid\":1,\"id\":1,\"args\":{\"op_id\":1,\"tensor\":1}},\n" \
	"{\"name\":\"cast\",\"cat\":\"amp.flow\",\"ph\":\"f\",\"ts\":2,"    \
	"\"pid\":1,\"tid\":1,\"bp\":\"e\",\"id\":1,"                        \
	"\"args\":{\"op_id\":1,\"tensor\":1}}]}\n"

START_TEST(flows_dropped_and_counted)
{
	const char *path = scratch_path("flows.json");
	struct trace whole, without;
	struct trace_error err = { "" };

	write_text(path, FLOW_TRACE);
	ck_assert_msg(trace_load(path, &whole, &err) == 0, "%s", err.message);
	ck_assert_msg(trace_load_without_flows(path, &without, &err) == 0, "%s",
		      err.message);
	unlink(path);
	ck_assert_uint_eq(whole.counts[TRACE_FLOW], 2);
	ck_assert_uint_eq(whole.dropped, 0);
	ck_assert_uint_eq(without.counts[TRACE_FLOW], 0);
	ck_assert_uint_eq(without.dropped, 2);
	ck_assert_uint_eq(without.nevents + without.dropped, whole.nevents);
	ck_assert_uint_eq(without.counts[TRACE_OP], 1);
	ck_assert_str_eq(without.events[0].op.op, "relu");
	trace_free(&whole);
	trace_free(&without);
}
END_TEST

static int count_seen(void *ctx, struct trace *trace,
		      const struct trace_event *e, cJSON *json,
		      struct trace_error *err)
{
	(void)trace;
	(void)json;
	(void)err;
	ck_assert_str_eq(e->name, "process_name");
	++*(int *)ctx;
	return TRACE_KEEP;
}

/* only_with: the events whose text lacks the word are counted, never
 * parsed (an `args` that is no object among them is no error), and the
 * filter sees the others (merge's pass 1 reads the process_name events
 * alone). */
START_TEST(filter_sees_only_events_with_the_word)
{
	static const char text[] =
		"{\"amptrace\":{\"format\":\"1.4\"},\"traceEvents\":[\n"
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":7,\"tid\":0,"
		"\"args\":{\"name\":\"p\",\"rank\":3}},\n"
		"{\"name\":\"x\",\"cat\":\"amp.op\",\"ph\":\"X\",\"args\":1},\n"
		"{\"name\":\"y\",\"cat\":\"other\",\"ph\":\"X\",\"ts\":1,"
		"\"dur\":1,\"pid\":7,\"tid\":1}]}\n";
	int seen = 0;
	struct trace_filter filter = { &seen, count_seen,
				       .only_with = "\"process_name\"" };
	struct trace t;
	struct trace_error err = { "" };

	ck_assert_msg(trace_load_text_filtered("few.json", text,
					       sizeof text - 1, &t, &filter,
					       &err) == 0, "%s", err.message);
	ck_assert_int_eq(seen, 1);
	ck_assert_uint_eq(t.nevents, 1);
	ck_assert_int_eq(t.events[0].meta.rank, 3);
	ck_assert_uint_eq(t.dropped, 2);
	trace_free(&t);
}
END_TEST

START_TEST(window_errors_as_memory)
{
	size_t len;
	char *text = windowed_trace("{\"name\":\"relu\",\"ph\":\"X\",}]}", &len);

	assert_window_reads_as_memory(text, len, false);
	free(text);
}
END_TEST

START_TEST(window_truncated_as_memory)
{
	size_t len;
	char *text = windowed_trace("]}", &len);
	/* cut inside an op past the first window, and inside the event
	 * larger than the window */
	const size_t cuts[] = { TRACE_SCAN_WINDOW + 1000,
				2 * TRACE_SCAN_WINDOW + 100 };

	for (size_t c = 0; c < sizeof cuts / sizeof *cuts; c++)
		assert_window_reads_as_memory(text, cuts[c], true);
	free(text);
}
END_TEST

START_TEST(id_map_keeps_every_key)
{
	struct id_map m = { 0 };

	ck_assert_uint_eq(id_map_get(&m, 1, 1), SIZE_MAX);
	ck_assert_ptr_null(id_map_find(&m, 1, 1, false));
	/* the same ids in three processes, through several growths */
	for (int64_t pid = -1; pid <= 1; pid++)
		for (uint64_t id = 0; id < 5000; id++)
			ck_assert(id_map_put(&m, pid, id, (size_t)id * 3 +
						      (size_t)(pid + 1)));
	ck_assert_uint_eq(m.count, 15000);
	for (int64_t pid = -1; pid <= 1; pid++)
		for (uint64_t id = 0; id < 5000; id++)
			ck_assert_uint_eq(id_map_get(&m, pid, id),
					  id * 3 + (size_t)(pid + 1));
	ck_assert_uint_eq(id_map_get(&m, 2, 7), SIZE_MAX);
	/* put replaces; find inserts zero once */
	ck_assert(id_map_put(&m, 0, 7, SIZE_MAX));
	ck_assert_ptr_nonnull(id_map_at(&m, 0, 7));
	ck_assert_uint_eq(*id_map_at(&m, 0, 7), SIZE_MAX);
	size_t *fresh = id_map_find(&m, 9, 9, true);
	ck_assert_ptr_nonnull(fresh);
	ck_assert_uint_eq(*fresh, 0);
	(*fresh)++;
	ck_assert_uint_eq(*id_map_find(&m, 9, 9, true), 1);
	ck_assert_uint_eq(m.count, 15001);
	ck_assert(!m.failed);
	id_map_free(&m);
	ck_assert_uint_eq(m.count, 0);
	ck_assert_uint_eq(id_map_get(&m, 0, 7), SIZE_MAX);
}
END_TEST

/* Hash-like ids (diff's keys) go to the sparse part; the array of a
 * process may later grow over ids that went there first: each key is
 * still one entry, found whichever part holds it. */
START_TEST(id_map_mixes_dense_and_sparse_ids)
{
	struct id_map m = { 0 };
	const uint64_t far[] = { UINT64_MAX, UINT64_C(1) << 40, 200000, 70000 };

	for (size_t i = 0; i < 4; i++)
		ck_assert(id_map_put(&m, 3, far[i], i));
	for (uint64_t id = 1; id <= 300000; id++)
		(*id_map_find(&m, 3, id, true))++;
	ck_assert_uint_eq(m.count, 300002);
	ck_assert_uint_eq(id_map_get(&m, 3, UINT64_MAX), 0);
	ck_assert_uint_eq(id_map_get(&m, 3, UINT64_C(1) << 40), 1);
	ck_assert_uint_eq(id_map_get(&m, 3, 200000), 3);
	ck_assert_uint_eq(id_map_get(&m, 3, 70000), 4);
	ck_assert_uint_eq(id_map_get(&m, 3, 69999), 1);
	ck_assert_uint_eq(id_map_get(&m, 3, 0), SIZE_MAX);
	ck_assert_uint_eq(id_map_get(&m, 4, 70000), SIZE_MAX);
	ck_assert(!m.failed);
	id_map_free(&m);
}
END_TEST

static Suite *trace_reader_suite(void)
{
	Suite *s = suite_create("trace_reader");
	TCase *tc = tcase_create("numbers");

	tcase_add_loop_test(tc, out_of_range_numbers_are_errors, 0,
			    (int)(sizeof bad_numbers / sizeof *bad_numbers));
	tcase_add_test(tc, in_range_numbers_load);
	suite_add_tcase(s, tc);
	tc = tcase_create("sizes");
	tcase_add_test(tc, empty_traces_summarise);
	tcase_add_test(tc, read_file_allocates_its_size);
	tcase_add_test(tc, window_reads_as_memory);
	tcase_add_test(tc, window_errors_as_memory);
	tcase_add_test(tc, window_truncated_as_memory);
	tcase_add_test(tc, filter_drops_arrays_keeps_strings);
	tcase_add_test(tc, filter_forgets_strings);
	tcase_add_test(tc, flows_dropped_and_counted);
	tcase_add_test(tc, filter_sees_only_events_with_the_word);
	suite_add_tcase(s, tc);
	tc = tcase_create("id_map");
	tcase_add_test(tc, id_map_keeps_every_key);
	tcase_add_test(tc, id_map_mixes_dense_and_sparse_ids);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(trace_reader_suite());

	scratch_make("reader");
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	if (scratch_remove() != 0)
		failed = 1;
	return failed ? 1 : 0;
}
