/* flow_build() (tracer/analysis/flow.c) on small traces written here: which
 * forward -> backward and cast -> consumer arrows it gives, where their
 * ends bind (inside the slice, outside its children, the end after the
 * start), what it leaves out (nested backward ops, cache hits, slices
 * their children cover, other processes), and flow_write's events. */
#include "flow.h"
#include "trace.h"

#include "test_scratch.h"
#include "test_text.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void begin_trace(struct text *t)
{
	t->len = 0;
	add(t, "{\"traceEvents\":[\n"
	       "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":7,\"tid\":0,"
	       "\"args\":{\"name\":\"p\"}}");
}

/* An op of pid 7 (or `pid`) on thread 1, [ts, ts + dur] µs, reading
 * tensor `input` (0: none, twice when `twice`), writing tensor op_id +
 * 1000. */
static void op(struct text *t, int pid, int op_id, const char *phase,
	       double ts, double dur, int forward, int parent, int input,
	       bool twice)
{
	char inputs[160] = "", types[40] = "", dims[20] = "";

	if (input) {
		const char *one = "{\"tensor\":%d,\"dtype\":\"f16\",\"shape\":[2]}";
		snprintf(inputs, sizeof inputs, one, input);
		if (twice) {
			size_t n = strlen(inputs);
			inputs[n++] = ',';
			snprintf(inputs + n, sizeof inputs - n, one, input);
		}
		snprintf(types, sizeof types, "%s", twice ? "\"c10::Half\",\"c10::Half\""
							  : "\"c10::Half\"");
		snprintf(dims, sizeof dims, "%s", twice ? "[2],[2]" : "[2]");
	}
	add(t, ",\n{\"name\":\"mm\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":%.3f,"
	       "\"dur\":%.3f,\"pid\":%d,\"tid\":1,\"args\":{\"op_id\":%d,"
	       "\"op\":\"mm\",\"overload\":\"\",\"phase\":\"%s\","
	       "\"policy\":\"none\",\"device\":\"cpu\",",
	    ts, dur, pid, op_id, phase);
	if (forward)
		add(t, "\"forward_op_id\":%d,", forward);
	if (parent)
		add(t, "\"parent_op_id\":%d,", parent);
	add(t, "\"autocast\":{\"enabled\":false,\"device\":\"cpu\","
	       "\"dtype\":\"bf16\",\"cache_enabled\":true,\"depth\":0,"
	       "\"scope\":null},\"inputs\":[%s],\"outputs\":[{\"tensor\":%d,"
	       "\"dtype\":\"f16\",\"shape\":[2]}],\"Input type\":[%s],"
	       "\"Input Dims\":[%s]}}",
	    inputs, op_id + 1000, types, dims);
}

static void cast(struct text *t, int op_id, double ts, double dur,
		 int result, const char *cache)
{
	add(t, ",\n{\"name\":\"cast f32->f16\",\"cat\":\"amp.cast\",\"ph\":\"X\","
	       "\"ts\":%.3f,\"dur\":%.3f,\"pid\":7,\"tid\":1,\"args\":{"
	       "\"op_id\":%d,\"arg\":0,\"tensor\":1,\"result\":%d,"
	       "\"from\":\"f32\",\"to\":\"f16\",\"cache\":\"%s\",\"bytes\":8}}",
	    ts, dur, op_id, result, cache);
}

struct built {
	struct trace trace;
	struct trace_index index;
	struct trace_flows flows;
};

static void build(struct text *t, struct built *b)
{
	struct trace_error err;

	add(t, "\n]}\n");
	ck_assert_msg(trace_load_text("flows", t->data, t->len, &b->trace,
				      &err) == 0, "%s", err.message);
	ck_assert_int_eq(trace_index_build(&b->trace, &b->index), 0);
	ck_assert_int_eq(flow_build(&b->index, &b->flows), 0);
}

static void unbuild(struct built *b)
{
	flow_free(&b->flows);
	trace_index_free(&b->index);
	trace_free(&b->trace);
}

static const struct trace_flow *find(const struct built *b, enum flow_kind kind,
				     uint64_t from, uint64_t to)
{
	for (size_t i = 0; i < b->flows.count; i++) {
		const struct trace_flow *f = &b->flows.items[i];
		if (f->kind == kind && f->from_op_id == from && f->to_op_id == to)
			return f;
	}
	return NULL;
}

/* Forward op 1 [0, 10] µs holds a cast [1, 2] of its input; backward op
 * 2 [20, 30]; backward op 3 [30.5, 40] with a part, op 4 [31, 39]
 * (nested: no arrow of its own); backward op 5 [41, 42] whose part op 6
 * covers it entirely (no moment to bind to: left out). */
START_TEST(test_forward_to_backward)
{
	struct text t;
	struct built b;

	begin_trace(&t);
	cast(&t, 1, 1, 1, 50, "miss");
	op(&t, 7, 1, "forward", 0, 10, 0, 0, 50, false);
	op(&t, 7, 2, "backward", 20, 10, 1, 0, 0, false);
	op(&t, 7, 4, "backward", 31, 8, 1, 3, 0, false);
	op(&t, 7, 3, "backward", 30.5, 9.5, 1, 0, 0, false);
	op(&t, 7, 6, "backward", 41, 1, 1, 5, 0, false);
	op(&t, 7, 5, "backward", 41, 1, 1, 0, 0, false);
	build(&t, &b);

	const struct trace_flow *f = find(&b, FLOW_BACKWARD, 1, 2);
	ck_assert_ptr_nonnull(f);
	/* the start: the forward op's last gap (2, 10) µs, not the cast */
	ck_assert_int_eq(f->from_ns, 6000);
	ck_assert_int_eq(f->to_ns, 25000);
	ck_assert_int_eq(f->pid, 7);
	f = find(&b, FLOW_BACKWARD, 1, 3);
	ck_assert_ptr_nonnull(f);
	/* op 3's free moments: (30.5, 31) and (39, 40): the first */
	ck_assert_int_eq(f->to_ns, 30750);
	ck_assert_ptr_null(find(&b, FLOW_BACKWARD, 1, 4));
	ck_assert_ptr_null(find(&b, FLOW_BACKWARD, 1, 5));
	ck_assert_ptr_null(find(&b, FLOW_BACKWARD, 1, 6));
	ck_assert_uint_eq(b.flows.unbindable, 1);
	/* and the cast's own arrow to op 1, after the cast */
	f = find(&b, FLOW_CAST, 1, 1);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->from_ns, 1500);
	ck_assert_int_eq(f->to_ns, 6000);
	ck_assert_uint_eq(f->tensor, 50);
	ck_assert_uint_eq(b.flows.count, 3);
	unbuild(&b);
}
END_TEST

/* A cached cast (a miss in op 1) read later by op 2 through a hit, twice:
 * one arrow from the miss to op 2; the hit itself starts none; an op of
 * another process with the same ids gets nothing. */
START_TEST(test_cast_to_consumers)
{
	struct text t;
	struct built b;

	begin_trace(&t);
	cast(&t, 1, 1, 1, 60, "miss");
	op(&t, 7, 1, "forward", 0, 10, 0, 0, 60, false);
	cast(&t, 2, 21, 0, 60, "hit");
	op(&t, 7, 2, "forward", 20, 10, 0, 0, 60, true);
	op(&t, 8, 2, "forward", 40, 10, 0, 0, 60, false);
	build(&t, &b);

	ck_assert_ptr_nonnull(find(&b, FLOW_CAST, 1, 1));
	const struct trace_flow *f = find(&b, FLOW_CAST, 1, 2);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(f->from_ns, 1500);
	/* op 2's first moment outside the hit [21, 21]: (20, 21) */
	ck_assert_int_eq(f->to_ns, 20500);
	ck_assert_int_eq(f->pid, 7);
	ck_assert_uint_eq(b.flows.count, 2);
	ck_assert_uint_eq(b.flows.unbindable, 0);
	unbuild(&b);
}
END_TEST

/* No backward and no cast: no arrow. */
START_TEST(test_nothing_to_link)
{
	struct text t;
	struct built b;

	begin_trace(&t);
	op(&t, 7, 1, "forward", 0, 10, 0, 0, 0, false);
	op(&t, 7, 2, "optimizer", 20, 10, 0, 0, 1001, false);
	build(&t, &b);
	ck_assert_uint_eq(b.flows.count, 0);
	ck_assert_uint_eq(b.flows.unbindable, 0);
	unbuild(&b);
}
END_TEST

/* flow_write: an s and an f event per flow, ids from first_id, written as
 * FORMAT.md §3.10 spells them, and a trace that loads back with them. */
START_TEST(test_write_reads_back)
{
	struct text t;
	struct built b;
	struct trace_writer w;
	char path[4096 + 32];
	snprintf(path, sizeof path, "%s/flow-XXXXXX", scratch_dir);
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	begin_trace(&t);
	cast(&t, 1, 1, 1, 50, "miss");
	op(&t, 7, 1, "forward", 0, 10, 0, 0, 50, false);
	op(&t, 7, 2, "backward", 20, 10, 1, 0, 0, false);
	build(&t, &b);
	ck_assert_int_eq(trace_writer_open(&w, path,
					   &(struct trace_header){
						   .generator = "test" },
					   0),
			 0);
	ck_assert_uint_eq(flow_write(&b.flows, &w, 5), 7);
	ck_assert_int_eq(trace_writer_close(&w, &(struct trace_trailer){ .complete = true }), 0);
	/* the events as FORMAT.md §3.10 spells them, key by key */
	struct jsonw text;
	jsonw_init(&text);
	ck_assert_uint_eq(flow_text(&b.flows, 5, &text), 7);
	ck_assert_str_eq(text.data,
		"{\"name\":\"cast\",\"cat\":\"amp.flow\",\"ph\":\"s\",\"ts\":1.500,"
		"\"pid\":7,\"tid\":1,\"id\":5,\"args\":{\"op_id\":1,\"tensor\":50}},\n"
		"{\"name\":\"cast\",\"cat\":\"amp.flow\",\"ph\":\"f\",\"ts\":6.000,"
		"\"pid\":7,\"tid\":1,\"bp\":\"e\",\"id\":5,"
		"\"args\":{\"op_id\":1,\"tensor\":50}},\n"
		"{\"name\":\"backward\",\"cat\":\"amp.flow\",\"ph\":\"s\",\"ts\":6.000,"
		"\"pid\":7,\"tid\":1,\"id\":6,\"args\":{\"op_id\":1}},\n"
		"{\"name\":\"backward\",\"cat\":\"amp.flow\",\"ph\":\"f\",\"ts\":25.000,"
		"\"pid\":7,\"tid\":1,\"bp\":\"e\",\"id\":6,\"args\":{\"op_id\":2}}");
	jsonw_free(&text);
	unbuild(&b);

	struct trace back;
	struct trace_error err;
	ck_assert_msg(trace_load(path, &back, &err) == 0, "%s", err.message);
	ck_assert_uint_eq(back.nevents, 4);
	ck_assert_uint_eq(back.counts[TRACE_FLOW], 4);
	const char *expected[] = { "cast s", "cast f", "backward s",
				   "backward f" };
	for (size_t i = 0; i < 4; i++) {
		char label[32];
		snprintf(label, sizeof label, "%s %c", back.events[i].name,
			 back.events[i].ph);
		ck_assert_str_eq(label, expected[i]);
		ck_assert_str_eq(back.events[i].cat, "amp.flow");
	}
	trace_free(&back);
	close(fd);
	unlink(path);
}
END_TEST

static int compare_flows(const void *a, const void *b)
{
	const struct trace_flow *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->to_op_id > y->to_op_id) - (x->to_op_id < y->to_op_id);
}

/* Op k of process pid on thread 1, [10k, 10k + 5] µs: a forward op,
 * or the backward op of forward op k - OPS, then with a part of its own
 * in its first half (written first, as it ended first). */
enum { OPS = 1500 };
static void add_op(struct trace *t, int64_t pid, int k)
{
	static const struct trace_autocast off = { 0 };

	if (k > OPS) {
		struct trace_event part = {
			.kind = TRACE_OP, .ph = 'X', .name = "mm", .cat = "amp.op",
			.pid = pid, .tid = 1, .ts = 10.0 * k, .dur = 2.5,
			.op = { .op_id = (uint64_t)k + 10000, .op = "mm",
				.overload = "", .phase = "backward",
				.parent_op_id = (uint64_t)k,
				.forward_op_id = (uint64_t)(k - OPS),
				.autocast = &off },
		};
		ck_assert_ptr_nonnull(trace_append(t, &part));
	}
	struct trace_event e = {
		.kind = TRACE_OP, .ph = 'X', .name = "mm", .cat = "amp.op",
		.pid = pid, .tid = 1, .ts = 10.0 * k, .dur = 5,
		.op = { .op_id = (uint64_t)k, .op = "mm", .overload = "",
			.phase = k <= OPS ? "forward" : "backward",
			.forward_op_id = k <= OPS ? 0 : (uint64_t)(k - OPS),
			.autocast = &off },
	};
	ck_assert_ptr_nonnull(trace_append(t, &e));
}

static void build_events(struct built *b)
{
	ck_assert_int_eq(trace_index_build(&b->trace, &b->index), 0);
	ck_assert_int_eq(flow_build(&b->index, &b->flows), 0);
	qsort(b->flows.items, b->flows.count, sizeof *b->flows.items,
	      compare_flows);
}

/* Two processes' ops, each op a forward op's backward: written one
 * process after the other (the order a converter writes: slices sorted
 * almost as they come) and alternating between the two (far from
 * sorted: flow_build sorts them another way); the same arrows, each end
 * in its op and outside its part. */
START_TEST(test_any_event_order)
{
	struct built grouped, mixed;

	ck_assert_int_eq(trace_init(&grouped.trace, "grouped"), 0);
	ck_assert_int_eq(trace_init(&mixed.trace, "mixed"), 0);
	for (int pid = 7; pid <= 8; pid++)
		for (int k = 1; k <= 2 * OPS; k++)
			add_op(&grouped.trace, pid, k);
	for (int k = 1; k <= 2 * OPS; k++)
		for (int pid = 7; pid <= 8; pid++)
			add_op(&mixed.trace, pid, k);
	build_events(&grouped);
	build_events(&mixed);
	ck_assert_uint_eq(grouped.flows.count, 2 * OPS);
	ck_assert_uint_eq(mixed.flows.count, 2 * OPS);
	for (size_t i = 0; i < mixed.flows.count; i++) {
		const struct trace_flow *f = &mixed.flows.items[i];
		const struct trace_flow *g = &grouped.flows.items[i];
		int64_t from = (int64_t)f->from_op_id * 10000;
		int64_t to = (int64_t)f->to_op_id * 10000;
		ck_assert_uint_eq(f->to_op_id, f->from_op_id + OPS);
		ck_assert(f->from_ns > from && f->from_ns < from + 5000);
		ck_assert(f->to_ns > to + 2500 && f->to_ns < to + 5000);
		ck_assert(f->pid == g->pid && f->from_ns == g->from_ns &&
			  f->to_ns == g->to_ns && f->from_op_id == g->from_op_id);
	}
	unbuild(&grouped);
	unbuild(&mixed);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("flow");
	TCase *tc = tcase_create("flow");

	tcase_add_test(tc, test_forward_to_backward);
	tcase_add_test(tc, test_cast_to_consumers);
	tcase_add_test(tc, test_nothing_to_link);
	tcase_add_test(tc, test_write_reads_back);
	tcase_add_test(tc, test_any_event_order);
	suite_add_tcase(s, tc);
	SRunner *runner = srunner_create(s);
	scratch_make("flow");
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	if (scratch_remove() != 0)
		failed = 1;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
