/* Each tensor records the op that last wrote it (amp_tensor_info's
 * producer_op_id), as libamp's op-end events show it: an op's outputs
 * carry its id, an in-place op's self takes it, a composite's output
 * keeps the inner op's, an input returned unchanged keeps its own, and a
 * tensor no op wrote (an autocast cast's result) has 0.  An op's inputs
 * show the value from before the op ran. */
#include "amp.h"
#include "amp_train.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPS 64
#define MAX_TENSORS 4

struct seen_op {
	char name[32];
	uint64_t op_id;
	int ninputs, noutputs;
	uint64_t input_id[MAX_TENSORS], input_producer[MAX_TENSORS];
	uint64_t output_id[MAX_TENSORS], output_producer[MAX_TENSORS];
};

struct op_log {
	int count;
	struct seen_op ops[MAX_OPS];
};

static void record(const struct amp_event *event, void *user)
{
	struct op_log *log = user;
	const struct amp_op_event *e = &event->op;

	ck_assert_int_lt(log->count, MAX_OPS);
	struct seen_op *s = &log->ops[log->count++];
	snprintf(s->name, sizeof s->name, "%s", e->op);
	s->op_id = e->op_id;
	s->ninputs = e->ninputs < MAX_TENSORS ? e->ninputs : MAX_TENSORS;
	s->noutputs = e->noutputs < MAX_TENSORS ? e->noutputs : MAX_TENSORS;
	for (int i = 0; i < s->ninputs; i++) {
		s->input_id[i] = e->inputs[i].id;
		s->input_producer[i] = e->inputs[i].producer_op_id;
	}
	for (int i = 0; i < s->noutputs; i++) {
		s->output_id[i] = e->outputs[i].id;
		s->output_producer[i] = e->outputs[i].producer_op_id;
	}
}

static struct op_log log_;
static int hook;

static void setup(void)
{
	memset(&log_, 0, sizeof log_);
	hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_OP_END), record, &log_);
	ck_assert_int_gt(hook, 0);
}

static void teardown(void)
{
	amp_hook_remove(hook);
}

/* The last op-end of op `name`. */
static const struct seen_op *last(const char *name)
{
	for (int i = log_.count - 1; i >= 0; i--)
		if (!strcmp(log_.ops[i].name, name))
			return &log_.ops[i];
	ck_abort_msg("no %s op recorded", name);
	return NULL;
}

static const int64_t shape[2] = { 2, 3 };

static amp_tensor *full(double value)
{
	amp_tensor *t = amp_full(2, shape, value, AMP_DTYPE_F32, AMP_DEVICE_CPU);

	ck_assert_msg(t, "full: %s", amp_last_error());
	return t;
}

START_TEST(an_output_records_its_op)
{
	amp_tensor *a = full(-1);
	const struct seen_op *made = last("full");
	amp_tensor *b = amp_relu(a);
	ck_assert_ptr_nonnull(b);
	const struct seen_op *relu = last("relu");

	/* the program's tensor came from the factory op */
	ck_assert_uint_eq(made->output_producer[0], made->op_id);
	ck_assert_uint_eq(relu->input_id[0], amp_tensor_id(a));
	ck_assert_uint_eq(relu->input_producer[0], made->op_id);
	ck_assert_uint_eq(relu->output_producer[0], relu->op_id);
	ck_assert_uint_ne(relu->op_id, made->op_id);
	amp_tensor_free(b);
	amp_tensor_free(a);
}
END_TEST

START_TEST(an_in_place_op_becomes_the_producer)
{
	amp_tensor *w = full(1), *g = full(2);
	const struct seen_op *made = &log_.ops[0];
	ck_assert_uint_eq(made->output_id[0], amp_tensor_id(w));

	ck_assert_int_eq(amp_add_(w, g, -0.5), AMP_OK);
	const struct seen_op *add = last("add_");
	/* the op's input: the writer before it; its output: the op */
	ck_assert_uint_eq(add->input_id[0], amp_tensor_id(w));
	ck_assert_uint_eq(add->input_producer[0], made->op_id);
	ck_assert_uint_eq(add->output_id[0], amp_tensor_id(w));
	ck_assert_uint_eq(add->output_producer[0], add->op_id);

	amp_tensor *y = amp_relu(w);
	ck_assert_ptr_nonnull(y);
	ck_assert_uint_eq(last("relu")->input_producer[0], add->op_id);
	/* a second update takes over */
	ck_assert_int_eq(amp_mul_scalar_(w, 3), AMP_OK);
	uint64_t mul = last("mul_")->op_id;
	amp_tensor_free(y);
	y = amp_relu(w);
	ck_assert_uint_eq(last("relu")->input_producer[0], mul);
	amp_tensor_free(y);
	amp_tensor_free(g);
	amp_tensor_free(w);
}
END_TEST

/* to() its own dtype returns the input itself: it wrote nothing. */
START_TEST(an_input_returned_unchanged_keeps_its_producer)
{
	amp_tensor *a = full(1);
	uint64_t made = last("full")->op_id;
	amp_tensor *same = amp_to(a, AMP_DTYPE_F32);

	ck_assert_ptr_eq(same, a);
	ck_assert_uint_eq(last("to")->output_producer[0], made);
	amp_tensor *b = amp_relu(same);
	ck_assert_uint_eq(last("relu")->input_producer[0], made);
	amp_tensor_free(b);
	amp_tensor_free(same);
	amp_tensor_free(a);
}
END_TEST

/* matmul of 2-D tensors is mm inside: mm made the result. */
START_TEST(a_composite_output_keeps_the_inner_op)
{
	const int64_t sb[2] = { 3, 4 };
	amp_tensor *a = full(1);
	amp_tensor *b = amp_full(2, sb, 1, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *c = amp_matmul(a, b);

	ck_assert_ptr_nonnull(c);
	const struct seen_op *mm = last("mm"), *matmul = last("matmul");
	ck_assert_uint_eq(mm->output_id[0], amp_tensor_id(c));
	ck_assert_uint_eq(matmul->output_id[0], amp_tensor_id(c));
	ck_assert_uint_eq(matmul->output_producer[0], mm->op_id);
	amp_tensor_free(c);
	amp_tensor_free(b);
	amp_tensor_free(a);
}
END_TEST

/* Under autocast, linear's kernel reads the cast of its f32 weight: the
 * cast made that tensor, no op did. */
START_TEST(a_cast_result_has_no_producer)
{
	const int64_t sw[2] = { 4, 3 };
	amp_tensor *x = full(1);
	amp_tensor *w = amp_full(2, sw, 1, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);

	ck_assert_int_eq(amp_autocast_enter(&opts), AMP_OK);
	amp_tensor *y = amp_linear(x, w, NULL);
	amp_autocast_exit();
	ck_assert_ptr_nonnull(y);
	const struct seen_op *linear = last("linear");
	ck_assert_int_ge(linear->ninputs, 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_ne(linear->input_id[i], amp_tensor_id(x));
		ck_assert_uint_ne(linear->input_id[i], amp_tensor_id(w));
		ck_assert_uint_eq(linear->input_producer[i], 0);
	}
	amp_tensor_free(y);
	amp_tensor_free(w);
	amp_tensor_free(x);
}
END_TEST

static Suite *producer_suite(void)
{
	Suite *s = suite_create("producer_op");
	TCase *tc = tcase_create("producer_op");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, an_output_records_its_op);
	tcase_add_test(tc, an_in_place_op_becomes_the_producer);
	tcase_add_test(tc, an_input_returned_unchanged_keeps_its_producer);
	tcase_add_test(tc, a_composite_output_keeps_the_inner_op);
	tcase_add_test(tc, a_cast_result_has_no_producer);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(producer_suite());

	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
