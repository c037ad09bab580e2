/* The trace index's producer of an op input (trace_index_input_producer):
 * the op libamp recorded (producer_op_id) when the trace has it, else the
 * producer rebuilt from tensor ids, as in older traces and PyTorch's. */
#include "trace_index.h"

#include "test_text.h"

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


/* Op `op_id` of pid 7 at ts = op_id µs, reading tensor `input` (0: none;
 * its producer_op_id `producer`, 0: not recorded) and writing `output`. */
static void op(struct text *t, const char *name, int op_id, int input,
	       int producer, int output)
{
	char in[128] = "";

	if (input && producer)
		snprintf(in, sizeof in, "{\"tensor\":%d,\"producer_op_id\":%d,"
			 "\"dtype\":\"f32\",\"shape\":[2]}", input, producer);
	else if (input)
		snprintf(in, sizeof in, "{\"tensor\":%d,\"dtype\":\"f32\","
			 "\"shape\":[2]}", input);
	add(t, ",\n{\"name\":\"%s\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":%d,"
	       "\"dur\":0.5,\"pid\":7,\"tid\":1,\"args\":{\"op_id\":%d,"
	       "\"op\":\"%s\",\"overload\":\"\",\"phase\":\"forward\","
	       "\"policy\":\"none\",\"device\":\"cpu\",\"autocast\":{"
	       "\"enabled\":false,\"device\":\"cpu\",\"dtype\":\"bf16\","
	       "\"cache_enabled\":true,\"depth\":0,\"scope\":null},"
	       "\"inputs\":[%s],\"outputs\":[{\"tensor\":%d,\"dtype\":\"f32\","
	       "\"shape\":[2]}],\"Input type\":[%s],\"Input Dims\":[%s]}}",
	    name, op_id, op_id, name, in, output, input ? "\"float\"" : "",
	    input ? "[2]" : "");
}

/* The op event of op_id in the loaded trace, as an index. */
static size_t event_of(const struct trace_index *ix, uint64_t op_id)
{
	const struct trace_event *e = trace_index_op(ix, 7, op_id);

	ck_assert_ptr_nonnull(e);
	return (size_t)(e - ix->trace->events);
}

static uint64_t producer_of(const struct trace_index *ix, uint64_t op_id)
{
	size_t p = trace_index_input_producer(ix, event_of(ix, op_id), 0);

	if (p == SIZE_MAX)
		return 0;
	ck_assert_int_eq(ix->trace->events[p].kind, TRACE_OP);
	return ix->trace->events[p].op.op_id;
}

/* Weight 5 is made by op 1 and updated in place by ops 3 and 5; op 4 read
 * it between the updates.  By tensor id alone its producer is the last
 * update of the whole trace (op 5, after the read); recorded, it is op 3.
 * Op 6 read it with no producer recorded: the rebuild answers.  Op 7's
 * recorded producer is not in the trace (a cut trace): the rebuild too. */
START_TEST(test_recorded_producer_wins)
{
	struct text t = { .len = 0 };
	struct trace trace;
	struct trace_index ix;
	struct trace_error err;

	add(&t, "{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\","
		"\"pid\":7,\"tid\":0,\"args\":{\"name\":\"p\"}}");
	op(&t, "full", 1, 0, 0, 5);
	op(&t, "relu", 2, 5, 1, 20);
	op(&t, "add_", 3, 5, 1, 5);
	op(&t, "relu", 4, 5, 3, 21);
	op(&t, "add_", 5, 5, 3, 5);
	op(&t, "relu", 6, 5, 0, 22);
	op(&t, "relu", 7, 5, 99, 23);
	add(&t, "\n]}\n");
	ck_assert_msg(trace_load_text("index", t.data, t.len, &trace, &err) == 0,
		      "%s", err.message);
	ck_assert_int_eq(trace_index_build(&trace, &ix), 0);
	ck_assert_uint_eq(trace.events[event_of(&ix, 4)].op.inputs[0]
				  .producer_op_id, 3);
	ck_assert_uint_eq(producer_of(&ix, 2), 1);
	ck_assert_uint_eq(producer_of(&ix, 3), 1);
	ck_assert_uint_eq(producer_of(&ix, 4), 3);
	ck_assert_uint_eq(producer_of(&ix, 5), 3);
	ck_assert_uint_eq(producer_of(&ix, 6), 5);
	ck_assert_uint_eq(producer_of(&ix, 7), 5);
	/* an op without inputs' output: nobody else claims tensor 20 */
	ck_assert_uint_eq(id_map_get(&ix.producer, 7, 20), event_of(&ix, 2));
	trace_index_free(&ix);
	trace_free(&trace);
}
END_TEST

/* Does event e make tensor `id` (an op's output, a cast's result)? */
static bool makes(const struct trace_event *e, uint64_t id)
{
	if (e->kind == TRACE_CAST)
		return e->cast.result == id;
	for (int k = 0; k < e->op.noutputs; k++)
		if (e->op.outputs[k].id == id)
			return true;
	return false;
}

/* A 1.2 trace recorded before libamp kept producers: every input's
 * producer is rebuilt from its id, an event that made that tensor. */
START_TEST(test_old_trace_falls_back_to_tensor_ids)
{
	struct trace trace;
	struct trace_index ix;
	struct trace_error err;
	size_t inputs = 0, found = 0, casts = 0;

	ck_assert_msg(trace_load(VIEWER_FIXTURES "/whole_loop.json", &trace,
				 &err) == 0, "%s", err.message);
	ck_assert_int_eq(trace_index_build(&trace, &ix), 0);
	for (size_t i = 0; i < trace.nevents; i++) {
		const struct trace_event *e = &trace.events[i];
		if (e->kind != TRACE_OP)
			continue;
		for (int k = 0; k < e->op.ninputs; k++) {
			const struct trace_tensor *in = &e->op.inputs[k];
			ck_assert_uint_eq(in->producer_op_id, 0);
			inputs++;
			size_t p = trace_index_input_producer(&ix, i, k);
			ck_assert_uint_eq(p, id_map_get(&ix.producer, e->pid,
							in->id));
			if (p == SIZE_MAX)
				continue;
			ck_assert(makes(&trace.events[p], in->id));
			found++;
			casts += trace.events[p].kind == TRACE_CAST;
		}
	}
	/* the loop's activations, gradients and casts all have one */
	ck_assert_uint_gt(inputs, 100);
	ck_assert_uint_gt(found, inputs / 2);
	ck_assert_uint_gt(casts, 0);
	trace_index_free(&ix);
	trace_free(&trace);
}
END_TEST

/* Built as the trace grows (as `amptrace run` indexes the events it
 * keeps): the same answers as built at once, for every op, input and
 * tensor, whatever the steps the trace grew by. */
START_TEST(test_index_built_as_the_trace_grows)
{
	struct trace whole, growing;
	struct trace_index once, grown;
	struct trace_error err;

	ck_assert_msg(trace_load(VIEWER_FIXTURES "/whole_loop.json", &whole,
				 &err) == 0, "%s", err.message);
	ck_assert_int_eq(trace_index_build(&whole, &once), 0);
	ck_assert_int_eq(trace_init(&growing, "growing"), 0);
	trace_index_init(&growing, &grown);
	for (size_t i = 0; i < whole.nevents; i++) {
		ck_assert_ptr_nonnull(trace_append(&growing, &whole.events[i]));
		if (i % 7 == 0 || i % 11 == 3)
			ck_assert_int_eq(trace_index_update(&grown), 0);
	}
	ck_assert_int_eq(trace_index_update(&grown), 0);
	ck_assert_int_eq(trace_index_update(&grown), 0); /* nothing new */
	ck_assert_uint_eq(grown.indexed, whole.nevents);
	size_t inputs = 0;
	for (size_t i = 0; i < whole.nevents; i++) {
		const struct trace_event *e = &whole.events[i];
		uint64_t ids[2 * 16];
		int n = 0;
		if (e->kind == TRACE_CAST) {
			ids[n++] = e->cast.tensor;
			ids[n++] = e->cast.result;
		}
		if (e->kind == TRACE_OP) {
			ck_assert_uint_eq(id_map_get(&grown.ops, e->pid,
						     e->op.op_id),
					  id_map_get(&once.ops, e->pid,
						     e->op.op_id));
			for (int k = 0; k < e->op.ninputs; k++, inputs++) {
				ck_assert_uint_eq(
					trace_index_input_producer(&grown, i, k),
					trace_index_input_producer(&once, i, k));
				if (n < 32)
					ids[n++] = e->op.inputs[k].id;
			}
			for (int k = 0; k < e->op.noutputs && n < 32; k++)
				ids[n++] = e->op.outputs[k].id;
		}
		for (int k = 0; k < n; k++) {
			ck_assert_uint_eq(id_map_get(&grown.producer, e->pid, ids[k]),
					  id_map_get(&once.producer, e->pid, ids[k]));
			ck_assert_uint_eq(id_map_get(&grown.names, e->pid, ids[k]),
					  id_map_get(&once.names, e->pid, ids[k]));
			ck_assert_uint_eq(id_map_get(&grown.uses, e->pid, ids[k]),
					  id_map_get(&once.uses, e->pid, ids[k]));
		}
	}
	ck_assert_uint_gt(inputs, 100);
	ck_assert_uint_eq(grown.ops.count, once.ops.count);
	ck_assert_uint_eq(grown.uses.count, once.uses.count);
	trace_index_free(&grown);
	trace_index_free(&once);
	trace_free(&growing); /* its events point into whole's arena */
	trace_free(&whole);
}
END_TEST

static Suite *index_suite(void)
{
	Suite *s = suite_create("trace_index");
	TCase *tc = tcase_create("producers");

	tcase_add_test(tc, test_recorded_producer_wins);
	tcase_add_test(tc, test_old_trace_falls_back_to_tensor_ids);
	tcase_add_test(tc, test_index_built_as_the_trace_grows);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(index_suite());

	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
