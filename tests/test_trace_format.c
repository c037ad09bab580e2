/* The trace format (tracer/FORMAT.md) from the reader's side: the JSON
 * writer's escaping and times, the incremental trace writer, loading the
 * fixtures, repairing traces cut at any byte, clear errors (file:line) for
 * every kind of bad input, and the validator that checks what loading
 * does not (metadata, nesting, tensor-id continuity). */
#include "amp.h"
#include "bigmem.h"
#include "jsonw.h"
#include "rules.h"
#include "terminal_text.h"
#include "trace.h"
#include "trace_schema.h"
#include "trace_writer.h"
#include "validate.h"
#include "test_scratch.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef TRACE_FIXTURES
#error "TRACE_FIXTURES (the fixtures directory) must be defined"
#endif

static const char *fixture(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof path, "%s/%s", TRACE_FIXTURES, name);
	return path;
}

static void write_file(const char *path, const char *text, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(text, 1, len, f), len);
	fclose(f);
}

static size_t count_ops(const struct trace *t, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nevents; i++)
		if (t->events[i].kind == TRACE_OP &&
		    (!name || !strcmp(t->events[i].op.op, name)))
			n++;
	return n;
}

/* ------------------------------------------------------------ writer */

START_TEST(test_jsonw_escapes_round_trip)
{
	static const char text[] = "a\"b\\c\nd\te\x01\x1f\x7f/ü";
	struct jsonw w;

	jsonw_init(&w);
	jsonw_cstr(&w, "{\"s\":");
	jsonw_str(&w, text);
	jsonw_cstr(&w, ",\"n\":");
	jsonw_str(&w, NULL);
	jsonw_cstr(&w, "}");
	cJSON *back = cJSON_Parse(w.data);
	ck_assert_ptr_nonnull(back);
	ck_assert_str_eq(cJSON_GetObjectItem(back, "s")->valuestring, text);
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(back, "n")));
	cJSON_Delete(back);
	jsonw_free(&w);
}
END_TEST

START_TEST(test_jsonw_numbers)
{
	struct jsonw w;

	jsonw_init(&w);
	jsonw_us(&w, 1234567);
	jsonw_raw(&w, " ", 1);
	jsonw_us(&w, 5);
	jsonw_raw(&w, " ", 1);
	jsonw_us(&w, -1500);
	jsonw_raw(&w, " ", 1);
	jsonw_u64(&w, UINT64_MAX);
	jsonw_raw(&w, " ", 1);
	jsonw_i64(&w, INT64_MIN);
	jsonw_raw(&w, " ", 1);
	jsonw_double(&w, 0.5);
	jsonw_raw(&w, " ", 1);
	jsonw_double(&w, 65536);
	jsonw_raw(&w, " ", 1);
	jsonw_double(&w, 1.0 / 0.0);
	ck_assert_str_eq(w.data, "1234.567 0.005 -1.500 18446744073709551615 "
				 "-9223372036854775808 0.5 65536 null");
	jsonw_free(&w);
}
END_TEST

/* Every digit count, at the edges where the count changes. */
START_TEST(test_jsonw_digit_edges)
{
	char expected[32];
	struct jsonw w;

	jsonw_init(&w);
	for (uint64_t power = 1;; power *= 10) {
		uint64_t values[] = { power - 1, power, power + 1 };
		for (int i = 0; i < 3; i++) {
			jsonw_reset(&w);
			jsonw_u64(&w, values[i]);
			snprintf(expected, sizeof expected, "%llu",
				 (unsigned long long)values[i]);
			ck_assert_str_eq(w.data, expected);
		}
		if (power > UINT64_MAX / 10)
			break;
	}
	jsonw_free(&w);
}
END_TEST

/* With a cache, a string is escaped once and copied after: the same text
 * every time, escapes and strings too long for the cache included. */
START_TEST(test_jsonw_cache_writes_the_same)
{
	static struct jsonw_cache cache;
	/* as interned strings are: aligned, unchanged at their address */
	static _Alignas(16) const char plain[] = "linear";
	static _Alignas(16) const char escaped[] = "a\"b\n";
	static _Alignas(16) const char long_text[] =
		"a name longer than the forty-eight bytes a slot holds";
	const char *const texts[] = { plain, escaped, long_text, NULL };
	struct jsonw bare, cached;

	jsonw_init(&bare);
	jsonw_init(&cached);
	cached.cache = &cache;
	for (int round = 0; round < 3; round++)
		for (int i = 0; i < 4; i++) {
			jsonw_str(&bare, texts[i]);
			jsonw_str(&cached, texts[i]);
		}
	ck_assert_str_eq(cached.data, bare.data);
	ck_assert_uint_eq(cached.len, bare.len);
	jsonw_free(&bare);
	jsonw_free(&cached);
}
END_TEST

START_TEST(test_writer_close_and_cut)
{
	const char *path = scratch_path("writer.json");
	struct trace_writer w;
	struct trace t;
	struct trace_error err;
	static const char meta[] =
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
		"\"args\":{\"name\":\"p\"}}";
	static const char diag[] =
		"{\"name\":\"x\",\"cat\":\"amp.diag\",\"ph\":\"i\",\"ts\":1.5,"
		"\"pid\":1,\"tid\":0,\"args\":{\"kind\":\"x\",\"message\":\"m\"}}";

	ck_assert_int_eq(trace_writer_open(&w, path,
					   &(struct trace_header){ .rank = -1 },
					   42), 0);
	trace_writer_event(&w, meta, strlen(meta));
	trace_writer_event(&w, diag, strlen(diag));
	trace_writer_flush(&w);
	/* what a reader sees while the writer still runs: a cut trace */
	ck_assert_int_eq(trace_load(path, &t, &err), 0);
	ck_assert(t.truncated);
	ck_assert(!t.finalized);
	ck_assert_uint_eq(t.nevents, 2);
	trace_free(&t);
	ck_assert_int_eq(trace_writer_close(&w, &(struct trace_trailer){ .complete = true }), 0);
	ck_assert_int_eq(trace_load(path, &t, &err), 0);
	ck_assert(!t.truncated);
	ck_assert(t.finalized);
	ck_assert(t.amptrace);
	ck_assert_str_eq(t.format, TRACE_FORMAT_VERSION);
	ck_assert_double_eq(t.base_ns, 42);
	ck_assert_uint_eq(t.counts[TRACE_DIAG], 1);
	trace_free(&t);
	unlink(path);
}
END_TEST

/* Events handed over joined (trace_writer_events, as the flows are): a
 * text of several MiB, one event in it longer than the writer's buffer,
 * reaches the file whole, after what was buffered before it. */
START_TEST(test_writer_events_joined)
{
	const char *path = scratch_path("joined.json");
	struct trace_writer w;
	struct trace t;
	struct trace_error err;
	struct jsonw text;
	static const char diag[] =
		"{\"name\":\"x\",\"cat\":\"amp.diag\",\"ph\":\"i\",\"ts\":1.5,"
		"\"pid\":1,\"tid\":0,\"args\":{\"kind\":\"x\",\"message\":\"";
	size_t count = 0;

	jsonw_init(&text);
	for (int i = 0; i < 40000; i++, count++) {
		if (i)
			jsonw_lit(&text, ",\n");
		jsonw_cstr(&text, diag);
		/* messages of 0..99 bytes, and one of 1.5 MiB */
		size_t n = i == 20000 ? 3u << 19 : (size_t)(i % 100);
		ck_assert(jsonw_reserve(&text, n));
		memset(text.data + text.len, 'm', n);
		text.len += n;
		text.data[text.len] = '\0';
		jsonw_lit(&text, "\"}}");
	}
	ck_assert_int_eq(trace_writer_open(&w, path, &(struct trace_header){ 0 }, 0),
			 0);
	trace_writer_events(&w, text.data, text.len, count);
	/* handed to the file at once, ending with the last event whole */
	FILE *f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, -(long)text.len, SEEK_END), 0);
	char head[8] = { 0 };
	ck_assert_uint_eq(fread(head, 1, 7, f), 7);
	ck_assert_str_eq(head, "{\"name\"");
	ck_assert_int_eq(fseek(f, -1, SEEK_END), 0);
	ck_assert_int_eq(fgetc(f), '}');
	fclose(f);
	trace_writer_events(&w, text.data, text.len, 0); /* nothing */
	static const char last[] =
		"{\"name\":\"y\",\"ph\":\"i\",\"ts\":2,\"pid\":1,\"tid\":0}";
	trace_writer_event(&w, last, strlen(last));
	ck_assert_uint_eq(w.events, count + 1);
	ck_assert_int_eq(trace_writer_close(&w, &(struct trace_trailer){ .complete = true }), 0);
	ck_assert_int_eq(trace_load(path, &t, &err), 0);
	ck_assert(t.finalized);
	ck_assert_uint_eq(t.nevents, count + 1);
	ck_assert_uint_eq(t.counts[TRACE_DIAG], count);
	ck_assert_uint_eq(strlen(t.events[20000].diag.message), 3u << 19);
	ck_assert_uint_eq(strlen(t.events[39999].diag.message), 99);
	trace_free(&t);
	jsonw_free(&text);
	unlink(path);
}
END_TEST

/* bigmem_grow: an array grown from nothing past BIGMEM_MIN (where it
 * leaves malloc for a mapping of its own) and on, its contents kept at
 * every step, then freed. */
START_TEST(test_bigmem_grows)
{
	static const size_t sizes[] = { 1000, BIGMEM_MIN - 8, BIGMEM_MIN + 8,
					3 * BIGMEM_MIN, 10 * BIGMEM_MIN };
	unsigned char *p = NULL;
	size_t size = 0;

	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		unsigned char *grown = bigmem_grow(p, size, sizes[k]);
		ck_assert_ptr_nonnull(grown);
		for (size_t i = 0; i < size; i += 4093)
			ck_assert_uint_eq(grown[i], (unsigned char)(i * 7 + 1));
		for (size_t i = size; i < sizes[k]; i++)
			grown[i] = (unsigned char)(i * 7 + 1);
		p = grown;
		size = sizes[k];
	}
	ck_assert_uint_eq(p[size - 1], (unsigned char)((size - 1) * 7 + 1));
	bigmem_free(p, size);
	bigmem_free(bigmem_grow(NULL, 0, 100), 100);
}
END_TEST

/* ----------------------------------------------------------- fixtures */

/* The tracer reads traces without linking libamp: its dtype table must
 * still be libamp's names, in libamp's order. */
START_TEST(test_dtype_names_match_libamp)
{
	int n = 0;
	while (trace_dtype_names[n])
		n++;
	ck_assert_int_eq(n, AMP_DTYPE_COUNT);
	ck_assert_int_eq(TRACE_DTYPE_COUNT, AMP_DTYPE_COUNT);
	for (int i = 0; i < n; i++)
		ck_assert_str_eq(trace_dtype_names[i],
				 amp_dtype_name((enum amp_dtype)i));
}
END_TEST

START_TEST(test_good_fixture_loads)
{
	struct trace t;
	struct trace_error err;

	ck_assert_msg(trace_load(fixture("good.json"), &t, &err) == 0, "%s",
		      err.message);
	ck_assert(t.amptrace);
	ck_assert(t.finalized);
	ck_assert(!t.truncated);
	ck_assert_uint_eq(count_ops(&t, "linear"), 4);
	ck_assert_uint_eq(t.counts[TRACE_CAST], 12);
	ck_assert_uint_eq(t.counts[TRACE_SCOPE_BEGIN], t.counts[TRACE_SCOPE_END]);
	const struct trace_event *linear = NULL;
	for (size_t i = 0; i < t.nevents && !linear; i++)
		if (t.events[i].kind == TRACE_OP &&
		    !strcmp(t.events[i].op.op, "linear"))
			linear = &t.events[i];
	ck_assert_ptr_nonnull(linear);
	ck_assert_str_eq(linear->op.policy, "lower_precision_fp");
	ck_assert_str_eq(linear->op.outputs[0].info->dtype, "f16");
	ck_assert_str_eq(linear->op.autocast->scope, "fwd");
	ck_assert(linear->op.emulated);
	ck_assert_int_eq(linear->op.ninputs, 3);
	trace_free(&t);
}
END_TEST

static bool same_text(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static bool same_kind(const struct trace_tensor_info *a,
		      const struct trace_tensor_info *b)
{
	return same_text(a->dtype, b->dtype) && same_text(a->name, b->name) &&
	       a->ndim == b->ndim &&
	       !memcmp(a->shape, b->shape, (size_t)a->ndim * sizeof *a->shape) &&
	       a->requires_grad == b->requires_grad && a->leaf == b->leaf &&
	       a->view == b->view && same_text(a->device, b->device) &&
	       same_text(a->profiler_type, b->profiler_type);
}

static bool same_state(const struct trace_autocast *a,
		       const struct trace_autocast *b)
{
	if (a->enabled != b->enabled || !same_text(a->device, b->device) ||
	    !same_text(a->dtype, b->dtype) ||
	    a->cache_enabled != b->cache_enabled || a->depth != b->depth ||
	    !same_text(a->scope, b->scope) || a->nscopes != b->nscopes)
		return false;
	for (int k = 0; k < a->nscopes; k++)
		if (!same_text(a->scopes[k], b->scopes[k]))
			return false;
	return true;
}

/* What repeats is held once (the readers' memory, issue 24): tensors of
 * one kind share it, ops of one autocast state share that, whoever read
 * them first; and what differs stays apart. */
START_TEST(test_repeated_kinds_are_shared)
{
	struct trace t;
	struct trace_error err;
	const struct trace_tensor_info *kinds[512];
	const struct trace_autocast *states[128];
	size_t nkinds = 0, nstates = 0, shared = 0;

	ck_assert_msg(trace_load(fixture("good.json"), &t, &err) == 0, "%s",
		      err.message);
	for (size_t i = 0; i < t.nevents; i++) {
		const struct trace_event *e = &t.events[i];
		if (e->kind == TRACE_CAST && nkinds < 512)
			kinds[nkinds++] = e->cast.source;
		if (e->kind != TRACE_OP)
			continue;
		if (nstates < 128)
			states[nstates++] = e->op.autocast;
		for (int k = 0; k < e->op.ninputs && nkinds < 512; k++)
			kinds[nkinds++] = e->op.inputs[k].info;
		for (int k = 0; k < e->op.noutputs && nkinds < 512; k++)
			kinds[nkinds++] = e->op.outputs[k].info;
	}
	ck_assert_uint_lt(nkinds, 512);
	for (size_t a = 0; a < nkinds; a++)
		for (size_t b = a + 1; b < nkinds; b++) {
			bool same = same_kind(kinds[a], kinds[b]);
			ck_assert_int_eq(same, kinds[a] == kinds[b]);
			shared += same;
		}
	for (size_t a = 0; a < nstates; a++)
		for (size_t b = a + 1; b < nstates; b++)
			ck_assert_int_eq(same_state(states[a], states[b]),
					 states[a] == states[b]);
	ck_assert_uint_gt(shared, 10);
	ck_assert_uint_gt(nstates, 4);
	trace_free(&t);
}
END_TEST

START_TEST(test_fixtures_validate)
{
	static const char *const names[] = { "good.json", "changed.json" };
	struct trace t;
	struct trace_error err;
	struct validate_report r;

	for (size_t i = 0; i < 2; i++) {
		ck_assert_int_eq(trace_load(fixture(names[i]), &t, &err), 0);
		size_t problems = trace_validate(&t, &r);
		ck_assert_msg(problems == 0, "%s: %s", names[i], r.messages[0]);
		trace_free(&t);
	}
}
END_TEST

START_TEST(test_validator_finds_broken_continuity)
{
	struct trace t;
	struct trace_error err;
	struct validate_report r;

	ck_assert_int_eq(trace_load(fixture("bad-continuity.json"), &t, &err), 0);
	ck_assert_uint_eq(trace_validate(&t, &r), 1);
	ck_assert_msg(strstr(r.messages[0], "input tensor 999 is used before"),
		      "%s", r.messages[0]);
	ck_assert_msg(strstr(r.messages[0], "line 20"), "%s", r.messages[0]);
	trace_free(&t);
}
END_TEST

START_TEST(test_truncated_fixture_is_repaired)
{
	struct trace t;
	struct trace_error err;
	char note[512];

	ck_assert_int_eq(trace_load(fixture("truncated.json"), &t, &err), 0);
	ck_assert(t.truncated);
	ck_assert_uint_eq(t.truncated_line, 23);
	ck_assert_uint_eq(t.nevents, 20); /* lines 3..22, line 23 is cut */
	ck_assert_ptr_nonnull(trace_end_note(&t, note, sizeof note));
	ck_assert_ptr_nonnull(strstr(note, "truncated at line 23"));
	trace_free(&t);
}
END_TEST

/* Cutting good.json at any byte: never a crash; before the events array
 * an error, after it a repaired trace whose event count only grows. */
START_TEST(test_cut_at_every_byte)
{
	struct trace_error err;
	size_t len;
	char *text = trace_read_file(fixture("good.json"), &len, &err);
	size_t events_start = (size_t)(strstr(text, "\"traceEvents\":[") - text) +
			      strlen("\"traceEvents\":[");
	size_t last = 0;

	ck_assert_ptr_nonnull(text);
	for (size_t cut = 0; cut <= len; cut += 3) {
		struct trace t;
		int status = trace_load_text("cut.json", text, cut, &t, &err);
		if (cut < events_start) {
			ck_assert_msg(status == -1, "cut at %zu loaded", cut);
			continue;
		}
		ck_assert_msg(status == 0, "cut at %zu: %s", cut, err.message);
		ck_assert_msg(t.nevents >= last, "cut at %zu lost events", cut);
		ck_assert(t.truncated || t.finalized || cut >= len - 2);
		last = t.nevents;
		trace_free(&t);
	}
	ck_assert_uint_eq(last, 52);
	free(text);
}
END_TEST

/* Bad input: the message names the file and the place. */
struct bad_case {
	const char *file;
	const char *message;
};

static const struct bad_case bad_cases[] = {
	{ "empty.json", "empty.json: empty file" },
	{ "garbage.bin", "garbage.bin:1:1: expected a trace: a JSON object ('{') "
			 "or array ('['), found byte 0x7f (not JSON text)" },
	{ "wrong-types.json", "wrong-types.json:14: event 11 (amp.op X 'linear'): "
			      "ts must be a number, got a string" },
	{ "wrong-outputs.json", "wrong-outputs.json:5: event 2 (amp.op X "
				"'randn'): args.outputs must be an array, got "
				"an object" },
	{ "events-not-array.json", "events-not-array.json:1:39: traceEvents "
				   "must be an array of events" },
	{ "truncated-foreign.json", "truncated-foreign.json:2:34: the file ends "
				    "in the middle of the JSON (truncated)" },
	{ "future-version.json", "future-version.json:1: trace format 2.0 is not "
				 "supported" },
	{ "no-such-file.json", "no-such-file.json: cannot open: No such file" },
};

START_TEST(test_bad_input)
{
	const struct bad_case *c = &bad_cases[_i];
	struct trace t;
	struct trace_error err;

	ck_assert_int_eq(trace_load(fixture(c->file), &t, &err), -1);
	ck_assert_msg(strstr(err.message, c->message), "%s: got \"%s\"", c->file,
		      err.message);
	ck_assert_uint_eq(t.nevents, 0);
	trace_free(&t);
}
END_TEST

/* The file of `len` bytes of text (a raw NUL among them) fails with
 * `message`. */
static void load_text_fails_n(const char *text, size_t len,
			      const char *message)
{
	const char *path = scratch_path("inline.json");
	struct trace t;
	struct trace_error err;

	write_file(path, text, len);
	int loaded = trace_load(path, &t, &err);
	unlink(path);
	ck_assert_int_eq(loaded, -1);
	ck_assert_msg(strstr(err.message, message), "\"%s\": got \"%s\"", text,
		      err.message);
}

static void load_text_fails(const char *text, const char *message)
{
	load_text_fails_n(text, strlen(text), message);
}

/* amptrace.format is MAJOR.MINOR, digits only (FORMAT.md): what is not
 * is refused where it stands, not read as its leading number; a minor
 * this reader does not know yet is read. */
START_TEST(test_format_version_is_major_dot_minor)
{
	static const char *const bad[] = { "1.x", "1", "01.0", "1.0 ", "1.",
					   ".4", "+1.0", "1.-1", "1.4.1",
					   "1.00", "1.123456789012345" };
	char text[256];
	struct trace t;
	struct trace_error err;

	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		snprintf(text, sizeof text, "{\"amptrace\":{\"format\":\"%s\"},"
			 "\n\"traceEvents\":[]}", bad[i]);
		load_text_fails(text, ":1: amptrace.format");
		load_text_fails(text, "is not a version MAJOR.MINOR");
	}
	snprintf(text, sizeof text, "{\"amptrace\":{\"format\":\"1.12\"},"
		 "\"traceEvents\":[]}");
	ck_assert_msg(trace_load_text("minor.json", text, strlen(text), &t,
				      &err) == 0, "%s", err.message);
	ck_assert_str_eq(t.format, "1.12");
	trace_free(&t);
}
END_TEST

START_TEST(test_bad_json_shapes)
{
	load_text_fails("   \n\t ", "empty file");
	load_text_fails("{\"traceEvents\":[{\"ph\":\"X\"]}", ":1:26: mismatched bracket");
	load_text_fails("{\"traceEvents\":[1,2]}", "expected an event object");
	/* JSON forbids raw control bytes in strings, a NUL and a newline
	 * too; \u0000 is JSON but would cut a C string short */
	load_text_fails("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\tb\"}]}",
			":1:36: a control character in a string");
	load_text_fails("{\"traceEvents\":[{\"ph\":\"X\",\n\"name\":\"a\nb\"}]}",
			":2:10: a control character in a string");
	load_text_fails_n("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\0b\"}]}", 41,
			  ":1:36: a control character in a string");
	load_text_fails("{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"lin\\u0000ear\"}]}",
			":1:38: \\u0000 in a string");
	load_text_fails("{\"a\\u0000\":1,\"traceEvents\":[]}",
			":1:4: \\u0000 in a string");
	/* a message quotes the trace, for a terminal */
	load_text_fails("{\"traceEvents\":[{\"ph\":\"\\u001b]0;x\\u0007\"}]}",
			"ph must be one character, got \"?]0;x?\"");

	load_text_fails("{\"traceEvents\":[]} x", "expected the end of the file");
	load_text_fails("{\"other\":1}", "no traceEvents array");
	load_text_fails("{\"traceEvents\":[{\"ph\":\"X\",\"ts\":tru}]}",
			":1:32: malformed JSON value");
	load_text_fails("{\"traceEvents\":[{\"ph\":\"XY\"}]}",
			"ph must be one character");
	load_text_fails("{\"traceEvents\":[{\"name\":\"a\",\"cat\":\"amp.cast\","
			"\"ph\":\"i\",\"ts\":0,\"args\":{}}]}",
			"category amp.cast does not use ph \"i\"");
	load_text_fails("{\"traceEvents\":[{\"name\":\"a\",\"cat\":\"amp.diag\","
			"\"ph\":\"i\",\"ts\":0}]}",
			"args is missing");
	load_text_fails("{\"amptrace\":[],\"traceEvents\":[]}",
			"\"amptrace\" must be an object");
}
END_TEST

/* A key given twice is refused where JSON readers disagree on which
 * counts: at the top level (two traceEvents were read as one), in an
 * event (cJSON took the first, Perfetto the last) and in its args; in
 * objects of any size. */
START_TEST(test_repeated_keys)
{
	load_text_fails("{\"traceEvents\":[],\"x\":1,\n \"traceEvents\":[]}",
			":2:2: the key \"traceEvents\" is given twice in the "
			"top-level object");
	load_text_fails("{\"amptrace\":{\"format\":\"1.3\"},\"amptrace\":"
			"{\"format\":\"1.3\"},\"traceEvents\":[]}",
			":1:30: the key \"amptrace\" is given twice");
	load_text_fails("{\"traceEvents\":[{\"ph\":\"M\",\"name\":\"m\"},\n{\"name\":\"a\","
			"\"ph\":\"i\",\"name\":\"b\"}]}",
			":2: event 1: the key \"name\" is given twice in an "
			"event (");
	load_text_fails("{\"traceEvents\":[{\"ph\":\"i\",\"args\":{\"x\":1,"
			"\"y\":2,\"x\":3}}]}",
			":1: event 0: the key \"x\" is given twice in an "
			"event's args");
	/* past the keys an event has, and past the set's first size */
	char head[2048], text[2100];
	int n = snprintf(head, sizeof head, "{");
	for (int i = 0; i < 100; i++)
		n += snprintf(head + n, sizeof head - (size_t)n, "\"k%d\":%d,", i, i);
	n += snprintf(head + n, sizeof head - (size_t)n, "\"traceEvents\":[{"
		      "\"ph\":\"i\",\"name\":\"e\",\"args\":{");
	for (int i = 0; i < 100; i++)
		n += snprintf(head + n, sizeof head - (size_t)n, "\"a%d\":%d,", i, i);
	snprintf(text, sizeof text, "%s\"a99\":0}}]}", head);
	load_text_fails(text, "the key \"a99\" is given twice in an event's "
			"args");
	snprintf(text, sizeof text, "%s\"a100\":0}}],\"k0\":0}", head);
	load_text_fails(text, "the key \"k0\" is given twice in the top-level");
}
END_TEST

/* ... and at any depth: in args' own objects, in the header and the
 * trailer (theirs too); where the value begins, and the path to it. */
START_TEST(test_repeated_keys_nested)
{
	static const char header[] =
		"{\"amptrace\":{\"format\":\"1.4\",\"host\":\"a\",\"host\":\"b\"},"
		"\n\"traceEvents\":[]}";
	static const char trailer[] =
		"{\"amptrace\":{\"format\":\"1.4\"},\"traceEvents\":[],\n"
		"\"amptraceEnd\":{\"complete\":true,\"processes\":[{\"pid\":1},"
		"{\"pid\":2,\"pid\":3}]}}";

	load_text_fails(header, ":1:13: the key \"host\" is given twice in "
			"the header (amptrace; JSON readers");
	load_text_fails(trailer, ":2:15: the key \"pid\" is given twice in "
			"the trailer (amptraceEnd.processes[1]; JSON readers");
	load_text_fails("{\"traceEvents\":[{\"ph\":\"i\",\"name\":\"a\",\"args\":"
			"{\"inputs\":[{\"dtype\":\"f16\",\"shape\":[1],"
			"\"dtype\":\"f32\"}]}}]}",
			":1: event 0: the key \"dtype\" is given twice in an "
			"event's args.inputs[0] (JSON readers");

	/* one key in sibling objects is no repeat */
	static const char siblings[] =
		"{\"amptrace\":{\"format\":\"1.4\",\"a\":{\"x\":1},\"b\":"
		"{\"x\":2}},\"traceEvents\":[{\"ph\":\"i\",\"name\":\"a\","
		"\"args\":{\"inputs\":[{\"dtype\":\"f16\"},{\"dtype\":\"f32\"}]}}],"
		"\"amptraceEnd\":{\"complete\":true,\"processes\":[{\"pid\":1},"
		"{\"pid\":2}]}}";
	struct trace t;
	struct trace_error err;
	ck_assert_msg(trace_load_text("siblings.json", siblings,
				      sizeof siblings - 1, &t, &err) == 0,
		      "%s", err.message);
	trace_free(&t);
}
END_TEST

/* stdout's filter (terminal_text.h): a trace's control characters as
 * '?' (bidi controls too: U+202E, U+2067, U+061C, U+200F), amptrace's own
 * colours as ESC '[', each split across writes too; the characters that
 * share their first bytes (an em dash U+2014, U+2070, U+0618) kept. */
START_TEST(test_terminal_filter)
{
	static const char in[] = "a\033]0;x\007\177\tb\n" TERMINAL_COLOUR
				 "1;31mred" TERMINAL_COLOUR "0m" TERMINAL_COLOUR
				 "9x\xc2\x9b" "2J\xc2\xa0 fc1\xe2\x80\xae" "1cf"
				 " \xe2\x81\xa7" "x\xd8\x9c" "y\xe2\x80\x8f"
				 "z\xe2\x80\x94\xe2\x81\xb0\xd8\x98\xe2\x80\xc2";
	char out[256];

	for (size_t cut = 0; cut <= sizeof in - 1; cut++) {
		struct terminal_filter f = { .colours = true };
		size_t n = terminal_filter(&f, in, cut, out);
		n += terminal_filter(&f, in + cut, sizeof in - 1 - cut, out + n);
		n += terminal_filter(&f, NULL, 0, out + n);
		out[n] = '\0';
		ck_assert_str_eq(out, "a?]0;x??\tb\n\033[1;31mred\033[0m?9x"
				      "?2J\xc2\xa0 fc1?1cf ?x?y?"
				      "z\xe2\x80\x94\xe2\x81\xb0\xd8\x98\xe2\x80\xc2");
	}
}
END_TEST

/* A path or an argument can hold 0xff: only the palette is a colour, and
 * none on stderr (colours false), where each 0xff is '?'. */
START_TEST(test_terminal_filter_palette)
{
	static const char in[] = "no" TERMINAL_COLOUR "8mHIDDEN" TERMINAL_PLAIN
				 ".json";
	char out[64];

	for (int colours = 0; colours <= 1; colours++) {
		struct terminal_filter f = { .colours = colours };
		size_t n = terminal_filter(&f, in, sizeof in - 1, out);
		n += terminal_filter(&f, NULL, 0, out + n);
		out[n] = '\0';
		ck_assert_str_eq(out, colours ? "no?8mHIDDEN\033[0m.json"
					      : "no?8mHIDDEN?0m.json");
	}
}
END_TEST

/* The same, in place, for a message built first: one '?' a control
 * character (C1's two bytes too), and each byte that is not UTF-8 (a
 * character cut short, 0xff); colours are not its business. */
START_TEST(test_terminal_text_clean)
{
	char text[] = "a\033]0;x\007\177\tb\n\xc2\x9b" "2J\xc2\xa0"
		      "\xe2\x80\xae" "a\xe2\x80\x94\xd8\x9c\xc2\xff";

	terminal_text_clean(text);
	ck_assert_str_eq(text, "a?]0;x??\tb\n?2J\xc2\xa0?a\xe2\x80\x94???");
}
END_TEST

/* stderr is never closed: what its filter holds at exit (a 0xc2 that
 * might have begun a C1 control) is written then, not lost. */
START_TEST(test_terminal_stderr_released_at_exit)
{
	int pipe_fds[2];
	char got[64] = "";

	ck_assert_int_eq(pipe(pipe_fds), 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		dup2(pipe_fds[1], STDERR_FILENO);
		close(pipe_fds[0]);
		close(pipe_fds[1]);
		terminal_filter_stderr();
		fputs("held\xc2", stderr);
		exit(0);
	}
	close(pipe_fds[1]);
	size_t n = 0;
	for (ssize_t r; (r = read(pipe_fds[0], got + n, sizeof got - 1 - n)) > 0;)
		n += (size_t)r;
	close(pipe_fds[0]);
	waitpid(child, NULL, 0);
	got[n] = '\0';
	ck_assert_str_eq(got, "held\xc2");
}
END_TEST

START_TEST(test_foreign_traces_load)
{
	struct trace t;
	struct trace_error err;

	/* torch.profiler's legacy output: a bare array, string pids */
	ck_assert_int_eq(trace_load(fixture("array-form.json"), &t, &err), 0);
	ck_assert(!t.amptrace);
	ck_assert_uint_eq(t.nevents, 2);
	ck_assert_uint_eq(t.counts[TRACE_OTHER], 2);
	trace_free(&t);
}
END_TEST

/* -------------------------------------------------------------- rules */

START_TEST(test_rules_issue_examples_parse)
{
	struct trace_error err;
	struct rules rules;
	size_t len;
	char *text = trace_read_file(fixture("issue.rules"), &len, &err);

	ck_assert_ptr_nonnull(text);
	ck_assert_msg(rules_parse("issue.rules", text, len, &rules, &err) == 0,
		      "%s", err.message);
	ck_assert_uint_eq(rules.count, 8);
	const struct rule *r = rules.items;
	ck_assert_int_eq(r[0].kind, RULE_OP);
	ck_assert_str_eq(r[0].op, "linear");
	ck_assert_int_eq(r[0].checks[0].kind, CHECK_OUTPUT);
	ck_assert_str_eq(r[0].checks[0].values[0], "f16");
	ck_assert_str_eq(r[0].text, "op linear: output f16");
	ck_assert_str_eq(r[1].filter.scope, "loss");
	ck_assert_int_eq(r[2].checks[0].kind, CHECK_POLICY);
	ck_assert_int_eq(r[3].kind, RULE_CASTS);
	ck_assert_str_eq(r[3].from, "f32");
	ck_assert_str_eq(r[3].to, "f16");
	ck_assert(r[3].per_step);
	ck_assert_int_eq(r[3].cmp, CMP_LE);
	ck_assert_double_eq(r[3].number, 12);
	ck_assert_ptr_null(r[4].from);
	ck_assert(!r[4].per_step);
	ck_assert_int_eq(r[5].kind, RULE_CACHE);
	ck_assert_str_eq(r[5].metric, "hit-rate");
	ck_assert_double_eq(r[5].number, 0.5);
	ck_assert_int_eq(r[6].kind, RULE_FINDING);
	ck_assert_str_eq(r[6].finding, "backward-under-autocast");
	ck_assert_int_eq(r[6].cmp, CMP_EQ);
	ck_assert_int_eq(r[7].kind, RULE_SCALER);
	ck_assert_str_eq(r[7].metric, "skipped-steps");
	ck_assert_uint_eq(r[7].line, 10);
	rules_free(&rules);
	free(text);
}
END_TEST

struct rule_error {
	const char *text;
	const char *message;
};

static const struct rule_error rule_errors[] = {
	{ "opp linear: output f16",
	  "r:1:1: expected a rule starting with one of: op module ops casts cache "
	  "scaler no finding, got 'opp'" },
	{ "op linear output f16", "r:1:11: expected ':'" },
	{ "op linear: output fp8",
	  "r:1:19: expected a dtype (f64 f32 f16 bf16 i64 i32 bool), got 'fp8'" },
	{ "op linear: output", "r:1:18: expected a dtype" },
	{ "op linear: output f16 f32", "r:1:23: expected the end of the rule" },
	{ "op linear: colour red", "r:1:12: expected a check" },
	{ "op softmax in scope \"loss: output f32",
	  "r:1:21: unterminated string" },
	{ "op linear in space x: output f16",
	  "r:1:14: expected 'scope', 'module', 'phase', 'forward', 'backward', "
	  "'optimizer', 'other' or 'any'" },
	{ "op lerp_ in phase optimiser: output f32",
	  "r:1:19: expected a phase (forward backward optimizer other any), got "
	  "'optimiser'" },
	{ "op mm: policy fast", "r:1:15: expected a policy" },
	{ "casts f32->f16 <= many", "r:1:19: expected a number, got 'many'" },
	{ "casts f32->f16 12", "r:1:16: expected a comparison" },
	{ "casts f32 f16 <= 1", "r:1:11: expected '->'" },
	{ "casts f32->f16 <= 12 per", "r:1:25: expected 'step', got the end" },
	{ "casts f32->f16 <= 12 per day", "r:1:26: expected 'step', got 'day'" },
	{ "cache hit-ratio >= 0.5", "r:1:7: expected a cache metric" },
	{ "cache hit-rate => 0.5", "r:1:16: expected a comparison (<= < >= > "
				   "== !=), got '=>'" },
	{ "scaler skipped <= 1", "r:1:8: expected a scaler metric" },
	{ "no finding backward-under-autocas", "r:1:12: expected a finding kind" },
	{ "no problems", "r:1:4: expected 'finding', 'findings' or 'casts'" },
	{ "op linear: output f16 $", "r:1:23: unexpected character '$'" },
	{ "\n\nop linear: output f16\ncasts total <= x",
	  "r:4:16: expected a number" },
	{ "# nothing\n", "r: no rules" },
	{ "op linear: output f16\n\0", "r: binary data" },
};

START_TEST(test_rule_errors)
{
	const struct rule_error *c = &rule_errors[_i];
	struct trace_error err;
	struct rules rules;
	size_t len = strlen(c->text);

	if (!strcmp(c->message, "r: binary data"))
		len += 1;
	ck_assert_int_eq(rules_parse("r", c->text, len, &rules, &err), -1);
	ck_assert_msg(strstr(err.message, c->message), "\"%s\": got \"%s\"",
		      c->text, err.message);
}
END_TEST

START_TEST(test_rules_extras_parse)
{
	static const char text[] =
		"op aten::mm on cuda outside autocast: inputs f32|f64, count >= 1\n"
		"casts to bf16 in phase backward for op linear cache any == 0\n"
		"no casts f16->f32 in scope \"loss*\"\n"
		"finding \"custom-kind\" <= 2\n"
		"no findings\n";
	struct trace_error err;
	struct rules rules;

	ck_assert_msg(rules_parse("x", text, strlen(text), &rules, &err) == 0,
		      "%s", err.message);
	ck_assert_uint_eq(rules.count, 5);
	const struct rule *r = rules.items;
	ck_assert_str_eq(r[0].op, "aten::mm");
	ck_assert_str_eq(r[0].filter.device, "cuda");
	ck_assert_int_eq(r[0].filter.autocast, 0);
	ck_assert_int_eq(r[0].checks[0].nvalues, 2);
	ck_assert_int_eq(r[0].checks[1].kind, CHECK_COUNT);
	ck_assert_str_eq(r[1].to, "bf16");
	ck_assert_str_eq(r[1].filter.phase, "backward");
	ck_assert_str_eq(r[1].filter.op, "linear");
	ck_assert_str_eq(r[1].filter.cache, "any");
	ck_assert_int_eq(r[2].cmp, CMP_EQ);
	ck_assert_double_eq(r[2].number, 0);
	ck_assert_str_eq(r[2].filter.scope, "loss*");
	ck_assert_str_eq(r[3].finding, "custom-kind");
	ck_assert_ptr_null(r[4].finding);
	rules_free(&rules);
}
END_TEST

/* ------------------------------------------------------------- schema */

/* good.json with `from` replaced by `to` (the first time), loaded. */
static void load_edited(const char *from, const char *to, struct trace *t)
{
	size_t len;
	struct trace_error err;
	char *text = trace_read_file(fixture("good.json"), &len, &err);

	ck_assert_ptr_nonnull(text);
	char *at = strstr(text, from);
	ck_assert_msg(at, "good.json has no %s", from);
	size_t size = len - strlen(from) + strlen(to) + 1;
	char *edited = malloc(size);
	snprintf(edited, size, "%.*s%s%s", (int)(at - text), text, to,
		 at + strlen(from));
	ck_assert_msg(trace_load_text("edited.json", edited, strlen(edited), t,
				      &err) == 0, "%s", err.message);
	free(edited);
	free(text);
}

/* A name the schema's CHECK column does not allow is a problem, as is a
 * key newer than the file's format (the version column). */
START_TEST(test_validator_checks_keys_by_the_schema)
{
	static const struct {
		const char *from, *to, *message;
	} edits[] = {
		{ "\"cache\":\"miss\"", "\"cache\":\"maybe\"",
		  "amp.cast args cache \"maybe\" is not one of" },
		{ "\"policy\":\"lower_precision_fp\"", "\"policy\":\"fast\"",
		  "amp.op args policy \"fast\"" },
		{ "\"phase\":\"forward\"", "\"phase\":\"sideways\"",
		  "phase \"sideways\"" },
		{ "\"dtype\":\"f16\"", "\"dtype\":\"half\"",
		  "dtype \"half\" is not one of" },
		{ "\"flush\":\"event\"",
		  "\"flush\":\"event\",\"policy_table\":\"1.13\"",
		  "amptrace policy_table came with format 1.4; the file says 1.0" },
		{ "\"cache\":\"miss\"",
		  "\"cache\":\"miss\",\"origin\":\"user\"",
		  "amp.cast args origin \"user\" is not one of" },
		{ "\"cache\":\"miss\"",
		  "\"cache\":\"miss\",\"origin\":\"autograd\"",
		  "amp.cast args origin came with format 1.4; the file says 1.0" },
	};
	struct trace t;
	struct validate_report r;

	load_edited("\"cache\":\"miss\"", "\"cache\":\"miss\"", &t);
	ck_assert_uint_eq(trace_validate(&t, &r), 0);
	trace_free(&t);
	for (size_t i = 0; i < sizeof edits / sizeof *edits; i++) {
		load_edited(edits[i].from, edits[i].to, &t);
		ck_assert_uint_ge(trace_validate(&t, &r), 1);
		ck_assert_msg(strstr(r.messages[0], edits[i].message),
			      "edit %zu: %s", i, r.messages[0]);
		trace_free(&t);
	}
}
END_TEST

/* An op with far more outputs than the trace has events (a split into
 * 400 chunks) validates: the validator counts every output it keeps. */
START_TEST(test_validator_takes_an_op_with_many_outputs)
{
	static const char one[] =
		"\"outputs\":[{\"tensor\":1,\"dtype\":\"f32\",\"shape\":[4,8],"
		"\"name\":\"input\"}";
	char *many = malloc(sizeof one + 400 * 64);
	size_t len = strlen(strcpy(many, one));
	struct trace t;
	struct validate_report r;

	for (int k = 0; k < 400; k++)
		len += (size_t)sprintf(many + len, ",{\"tensor\":%d,\"dtype\":"
				       "\"f32\",\"shape\":[1]}", 5000 + k);
	load_edited(one, many, &t);
	free(many);
	int most = 0;
	for (size_t i = 0; i < t.nevents; i++)
		if (t.events[i].kind == TRACE_OP && t.events[i].op.noutputs > most)
			most = t.events[i].op.noutputs;
	ck_assert_int_eq(most, 401);
	ck_assert_msg(trace_validate(&t, &r) == 0, "%s", r.messages[0]);
	trace_free(&t);
}
END_TEST

/* FORMAT.md documents every key of every table: in backquotes, quotes,
 * or after a dot (`args.op_id`). */
START_TEST(test_format_documents_every_key)
{
	char path[4096];
	size_t len;
	struct trace_error err;

	snprintf(path, sizeof path, "%s/../../../tracer/FORMAT.md", TRACE_FIXTURES);
	char *doc = trace_read_file(path, &len, &err);
	ck_assert_msg(doc, "%s", err.message);
	for (size_t i = 0; trace_schema_objects[i]; i++) {
		const struct trace_object *o = trace_schema_objects[i];
		for (size_t k = 0; k < o->nkeys; k++) {
			const char *key = o->keys[k].key;
			bool found = false;
			for (const char *at = strstr(doc, key); at && !found;
			     at = strstr(at + 1, key)) {
				char before = at > doc ? at[-1] : ' ';
				char after = at[strlen(key)];
				found = strchr("`\".", before) &&
					strchr("`\"", after);
			}
			ck_assert_msg(found, "FORMAT.md does not document %s %s",
				      o->name, key);
		}
	}
	free(doc);
}
END_TEST

/* What the writer writes reads back as what it wrote: the header and
 * the trailer too. */
START_TEST(test_header_and_trailer_read_back)
{
	const char *path = scratch_path("typed.json");
	const char *command[] = { "train", "--steps", "2" };
	struct trace_writer w;
	struct trace t;
	struct trace_error err;
	struct trace_exit exit = { .status = "signaled", .signal = 11,
				   .signal_name = "SIGSEGV" };
	struct trace_gpu_timing gpu = { .timing = true, .kernels = 3,
					.memcpys = 1, .complete = true,
					.dropped = 2, .buffers = 4 };
	const char *argv[] = { "train" };
	struct trace_process_end process = {
		.pid = 77, .rank = 1, .argv = argv, .nargv = 1,
		.framework = "torch 2.13.0", .status = "signaled",
		.signal = 11, .signal_name = "SIGSEGV", .threads = 2,
		.events = 9, .ops = 4, .casts = 2, .gpu = &gpu,
	};

	ck_assert_int_eq(trace_writer_open(&w, path,
		&(struct trace_header){ .generator = "test", .command = command,
					.ncommand = 3, .rank = 1, .host = "h",
					.monotonic_base_ns = 5,
					.flush = "event",
					.framework = "torch 2.13.0 (policy "
						     "table: 2.13)",
					.policy_table = "2.13" }, 7), 0);
	ck_assert_int_eq(trace_writer_close(&w,
		&(struct trace_trailer){ .complete = true, .duration_ns = 1500,
					 .exit = &exit, .processes = &process,
					 .nprocesses = 1 }), 0);
	ck_assert_msg(trace_load(path, &t, &err) == 0, "%s", err.message);
	unlink(path);
	ck_assert_str_eq(t.header.format, TRACE_FORMAT_VERSION);
	ck_assert_str_eq(t.header.generator, "test");
	ck_assert_int_eq(t.header.ncommand, 3);
	ck_assert_str_eq(t.header.command[2], "2");
	ck_assert_int_eq(t.header.rank, 1);
	ck_assert_uint_eq(t.header.monotonic_base_ns, 5);
	ck_assert_str_eq(trace_policy_table(&t), "2.13");
	ck_assert_int_eq(t.trailer.duration_ns, 1500);
	ck_assert_str_eq(t.trailer.exit->signal_name, "SIGSEGV");
	ck_assert_int_eq(t.trailer.nprocesses, 1);
	const struct trace_process_end *p = &t.trailer.processes[0];
	ck_assert_int_eq(p->pid, 77);
	ck_assert_int_eq(p->signal, 11);
	ck_assert_str_eq(p->argv[0], "train");
	ck_assert_uint_eq(p->casts, 2);
	ck_assert_ptr_nonnull(p->gpu);
	ck_assert_uint_eq(p->gpu->kernels, 3);
	ck_assert_uint_eq(p->gpu->dropped, 2);
	trace_free(&t);
}
END_TEST

/* A trace before 1.4 names its policy table in its framework's text
 * only: readers still find it there. */
START_TEST(test_policy_table_of_older_traces)
{
	struct trace t;

	load_edited("\"flush\":\"event\"",
		    "\"flush\":\"event\",\"framework\":\"torch 1.13.0a0 "
		    "(policy table: 1.13)\"", &t);
	ck_assert_str_eq(trace_policy_table(&t), "1.13");
	trace_free(&t);
	load_edited("\"flush\":\"event\"", "\"flush\":\"event\"", &t);
	ck_assert_ptr_null(trace_policy_table(&t));
	trace_free(&t);
}
END_TEST

static Suite *trace_format_suite(void)
{
	Suite *s = suite_create("trace_format");
	TCase *writer = tcase_create("writer");
	TCase *reader = tcase_create("reader");
	TCase *rules = tcase_create("rules");

	tcase_add_test(writer, test_jsonw_escapes_round_trip);
	tcase_add_test(writer, test_jsonw_numbers);
	tcase_add_test(writer, test_jsonw_digit_edges);
	tcase_add_test(writer, test_jsonw_cache_writes_the_same);
	tcase_add_test(writer, test_writer_close_and_cut);
	tcase_add_test(writer, test_writer_events_joined);
	tcase_add_test(writer, test_bigmem_grows);
	tcase_add_test(reader, test_dtype_names_match_libamp);
	tcase_add_test(reader, test_good_fixture_loads);
	tcase_add_test(reader, test_repeated_kinds_are_shared);
	tcase_add_test(reader, test_fixtures_validate);
	tcase_add_test(reader, test_validator_finds_broken_continuity);
	tcase_add_test(reader, test_truncated_fixture_is_repaired);
	tcase_add_test(reader, test_cut_at_every_byte);
	tcase_add_loop_test(reader, test_bad_input, 0,
			    sizeof bad_cases / sizeof bad_cases[0]);
	tcase_add_test(reader, test_bad_json_shapes);
	tcase_add_test(reader, test_repeated_keys);
	tcase_add_test(reader, test_repeated_keys_nested);
	tcase_add_test(reader, test_terminal_filter);
	tcase_add_test(reader, test_terminal_filter_palette);
	tcase_add_test(reader, test_terminal_text_clean);
	tcase_add_test(reader, test_terminal_stderr_released_at_exit);
	tcase_add_test(reader, test_format_version_is_major_dot_minor);
	tcase_add_test(reader, test_foreign_traces_load);
	tcase_add_test(reader, test_validator_checks_keys_by_the_schema);
	tcase_add_test(reader, test_validator_takes_an_op_with_many_outputs);
	tcase_add_test(reader, test_format_documents_every_key);
	tcase_add_test(reader, test_header_and_trailer_read_back);
	tcase_add_test(reader, test_policy_table_of_older_traces);
	tcase_add_test(rules, test_rules_issue_examples_parse);
	tcase_add_loop_test(rules, test_rule_errors, 0,
			    sizeof rule_errors / sizeof rule_errors[0]);
	tcase_add_test(rules, test_rules_extras_parse);
	suite_add_tcase(s, writer);
	suite_add_tcase(s, reader);
	suite_add_tcase(s, rules);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(trace_format_suite());

	scratch_make("format");
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	if (scratch_remove() != 0)
		failed = 1;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
