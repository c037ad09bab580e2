/* The producer contract (tracer/PRODUCERS.md), as the checking producer
 * sees it (tracer/record/producer_check.h): a well-formed thread of
 * events passes; each rule, broken once, is named once; and a producer
 * built with the checks writes the broken rule into its stream, where the
 * converter makes it a `producer-contract` amp.diag event. */
#include "convert.h"
#include "producer.h"
#include "producer_check.h"
#include "convert_sink.h"
#include "test_scratch.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct producer_tensor x = {
	.id = 1, .dtype = AMP_DTYPE_F32, .ndim = 2, .shape = { 4, 8 },
};
static const struct producer_tensor w16 = {
	.id = 3, .dtype = AMP_DTYPE_BF16, .ndim = 2, .shape = { 8, 8 },
};

static struct producer_event op_event(enum producer_kind kind, uint64_t at,
				      uint64_t op_id, uint64_t begin_ns)
{
	struct producer_event e = { .kind = kind, .time_ns = at, .thread = 1 };

	e.op = (struct producer_op){ .op_id = op_id, .op = "linear",
				     .overload = "", .begin_ns = begin_ns,
				     .ninputs = 1, .inputs = &x,
				     .noutputs = 1, .outputs = &w16 };
	return e;
}

static struct producer_event cast_event(uint64_t at, uint64_t op_id,
					enum amp_cache_result cache,
					bool counted)
{
	struct producer_event e = { .kind = PRODUCER_CAST, .time_ns = at,
				    .thread = 1 };

	e.cast = (struct producer_cast){
		.op_id = op_id, .source = x, .result = w16,
		.from = AMP_DTYPE_F32, .to = AMP_DTYPE_BF16, .cache = cache,
		.bytes = cache == AMP_CACHE_HIT ? 0 : 128, .begin_ns = at - 1,
		.cache_counted = counted, .cache_entries = counted,
		.cache_bytes = counted ? 128 : 0,
	};
	return e;
}

/* A region, an op with a miss and a hit inside, and a nested op: the
 * contract holds. */
START_TEST(a_well_formed_thread_passes)
{
	struct producer_check c = { 0 };
	struct producer_event e = { .kind = PRODUCER_SCOPE_ENTER,
				    .time_ns = 10, .thread = 1 };

	e.scope = (struct producer_scope){ .depth = 1, .enabled = true,
					   .dtype = AMP_DTYPE_BF16 };
	ck_assert_ptr_null(producer_check(&c, &e));
	e = op_event(PRODUCER_OP_BEGIN, 11, 5, 0);
	ck_assert_ptr_null(producer_check(&c, &e));
	e = cast_event(12, 5, AMP_CACHE_MISS, true);
	ck_assert_ptr_null(producer_check(&c, &e));
	e = cast_event(13, 5, AMP_CACHE_HIT, false);
	ck_assert_ptr_null(producer_check(&c, &e));
	e = op_event(PRODUCER_OP_BEGIN, 14, 6, 0);
	e.op.parent_op_id = 5;
	ck_assert_ptr_null(producer_check(&c, &e));
	e = op_event(PRODUCER_OP_END, 15, 6, 14);
	e.op.parent_op_id = 5;
	ck_assert_ptr_null(producer_check(&c, &e));
	e = op_event(PRODUCER_OP_END, 16, 5, 11);
	ck_assert_ptr_null(producer_check(&c, &e));
	e = (struct producer_event){ .kind = PRODUCER_SCOPE_EXIT,
				     .time_ns = 17, .thread = 1 };
	e.scope = (struct producer_scope){ .depth = 1 };
	ck_assert_ptr_null(producer_check(&c, &e));
}
END_TEST

/* One rule broken per row, after an op began (op 5 at time 10). */
static const struct {
	const char *what;
	const char *rule; /* a piece of its text */
} broken[] = {
	{ "a cache miss without the cache's size", "a cache miss carries" },
	{ "an END of an op that is not the innermost", "END closes the innermost" },
	{ "an END with another time than its BEGIN", "with its BEGIN's time" },
	{ "a cast for another op", "a cast is for the innermost" },
	{ "a cast to the same dtype", "a cast changes a tensor's dtype" },
	{ "a hit that wrote bytes", "a hit writes no bytes" },
	{ "an op id that does not grow", "an op's id is not 0 and grows" },
	{ "a parent that is not the innermost op", "parent_op_id is the innermost" },
	{ "a failure without its reason", "a failed op (status not 0) says why" },
	{ "a tensor without an id", "each with an id" },
	{ "a dtype code no name was given for", "a dtype, device, policy" },
	{ "time going back", "in the order of their times" },
	{ "a region of depth 0", "a region's depth counts it" },
};

static struct producer_event breaking(int row)
{
	static const struct producer_tensor no_id = { .dtype = AMP_DTYPE_F32 };
	struct producer_event e;

	switch (row) {
	case 0: return cast_event(12, 5, AMP_CACHE_MISS, false);
	case 1: return op_event(PRODUCER_OP_END, 12, 4, 10);
	case 2: return op_event(PRODUCER_OP_END, 12, 5, 9);
	case 3: return cast_event(12, 4, AMP_CACHE_UNCACHEABLE, false);
	case 4:
		e = cast_event(12, 5, AMP_CACHE_UNCACHEABLE, false);
		e.cast.to = AMP_DTYPE_F32;
		return e;
	case 5:
		e = cast_event(12, 5, AMP_CACHE_HIT, false);
		e.cast.bytes = 64;
		return e;
	case 6: return op_event(PRODUCER_OP_BEGIN, 12, 5, 0);
	case 7:
		e = op_event(PRODUCER_OP_BEGIN, 12, 6, 0);
		e.op.parent_op_id = 2;
		return e;
	case 8:
		e = op_event(PRODUCER_OP_END, 12, 5, 10);
		e.op.status = -1;
		return e;
	case 9:
		e = op_event(PRODUCER_OP_END, 12, 5, 10);
		e.op.inputs = &no_id;
		return e;
	case 10:
		e = cast_event(12, 5, AMP_CACHE_UNCACHEABLE, false);
		e.cast.to = AMP_DTYPE_COUNT + 3;
		return e;
	case 11: return cast_event(9, 5, AMP_CACHE_UNCACHEABLE, false);
	default:
		e = (struct producer_event){ .kind = PRODUCER_SCOPE_ENTER,
					     .time_ns = 12, .thread = 1 };
		return e;
	}
}

START_TEST(each_rule_is_named_once)
{
	struct producer_check c = { 0 };
	struct producer_event begin = op_event(PRODUCER_OP_BEGIN, 10, 5, 0);
	struct producer_event e = breaking(_i);

	ck_assert_ptr_null(producer_check(&c, &begin));
	struct producer_check before = c;
	const char *rule = producer_check(&c, &e);
	ck_assert_msg(rule && strstr(rule, broken[_i].rule), "%s: got %s",
		      broken[_i].what, rule ? rule : "(none)");
	/* once per thread: the same mistake again says nothing more */
	before.reported = c.reported;
	ck_assert_ptr_null(producer_check(&before, &e));
}
END_TEST

/* ------------------------------------------------------- end to end */


/* The miss counted, then not: one producer-contract diag, on the cast's
 * thread, right after it. */
START_TEST(the_checking_producer_writes_the_rule_into_the_trace)
{
	char raw[PATH_MAX], path[PATH_MAX + 8];
	struct sink sink = { .path = path };
	const struct producer_info info = { .framework = "test",
					    .names = producer_amp_names() };
	uint64_t now = amp_now_ns();

	ck_assert_ptr_nonnull(scratch_mkdtemp(raw, sizeof raw, "raw"));
	snprintf(path, sizeof path, "%s.json", raw);
	ck_assert_int_eq(producer_attach(raw, &info), 0);
	struct producer_event e = op_event(PRODUCER_OP_BEGIN, now + 1, 1, 0);
	producer_emit(&e);
	e = cast_event(now + 2, 1, AMP_CACHE_MISS, true);
	producer_emit(&e);
	e = cast_event(now + 3, 1, AMP_CACHE_MISS, false);
	producer_emit(&e);
	e = op_event(PRODUCER_OP_END, now + 4, 1, now + 1);
	producer_emit(&e);
	producer_mark_exit();
	producer_detach();
	sink_convert(&sink, raw, now, now + 5);
	size_t diags = 0, casts = 0;
	for (size_t i = 0; i < sink.kept.nevents; i++) {
		const struct trace_event *t = &sink.kept.events[i];
		casts += t->kind == TRACE_CAST;
		if (t->kind != TRACE_DIAG)
			continue;
		diags++;
		ck_assert_str_eq(t->diag.kind, "producer-contract");
		ck_assert(strstr(t->diag.message, "a cache miss carries"));
		ck_assert_uint_eq(casts, 2);
		ck_assert_int_eq(t->tid, 1);
	}
	ck_assert_uint_eq(diags, 1);
	trace_free(&sink.kept);
	unlink(path);
	ck_assert_int_eq(remove_tree(raw), 0);
}
END_TEST

static Suite *contract_suite(void)
{
	Suite *s = suite_create("producer_contract");
	TCase *tc = tcase_create("contract");

	tcase_add_test(tc, a_well_formed_thread_passes);
	tcase_add_loop_test(tc, each_rule_is_named_once, 0,
			    (int)(sizeof broken / sizeof *broken));
	tcase_add_test(tc, the_checking_producer_writes_the_rule_into_the_trace);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(contract_suite());

	scratch_make("contract");
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return scratch_remove() != 0 || failed ? 1 : 0;
}
