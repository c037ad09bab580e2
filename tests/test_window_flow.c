/* The PyTorch bridge's following of no_grad regions' results
 * (tracer/torch/amptrace_torch/window_flow.c): a region's results that an
 * op trains on decide it "trained", results nothing trains on leave it an
 * evaluation, and its 64 slots keep serving regions however long some
 * region stays undecided (a program without an optimizer judges each
 * step's regions when the next step ends, so one is always pending). */
#include "window_flow.h"

#include <check.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* An op's tensors: ids, and whether each requires grad. */
static struct obs_args tensors(int n, const uint64_t *ids, bool requires_grad)
{
	struct obs_args a = { .ntensors = n };

	for (int i = 0; i < n; i++) {
		a.tensors[i].id = ids[i];
		a.tensors[i].flags =
			requires_grad ? PRODUCER_TENSOR_REQUIRES_GRAD : 0;
	}
	return a;
}

/* One op on this thread: reads `in` (grad on, a parameter among them when
 * `trains`), writes `out`. */
static void op(uint64_t in, uint64_t out, bool trains)
{
	uint64_t ids[2] = { in, 1000000 + in };
	struct obs_args inputs = tensors(trains ? 2 : 1, ids, false);
	if (trains)
		inputs.tensors[1].flags = PRODUCER_TENSOR_REQUIRES_GRAD;
	struct obs_args outputs = tensors(1, &out, false);
	uint64_t slots = window_flow_inputs(&inputs, true);
	window_flow_outputs(slots, &outputs);
}

/* A region under no_grad that computes `out` from `in`. */
static int region(uint64_t in, uint64_t out)
{
	int slot = window_flow_open();
	if (slot >= 0)
		op(in, out, false);
	window_flow_close(slot);
	return slot;
}

START_TEST(test_frozen_and_evaluation)
{
	int frozen = region(1, 2);
	int metric = region(3, 4);

	ck_assert_int_ge(frozen, 0);
	ck_assert_int_ge(metric, 0);
	ck_assert(window_flow_followed());
	op(2, 5, true); /* the head trains on the backbone's features */
	ck_assert(window_flow_end(frozen));
	ck_assert(!window_flow_end(metric));
	ck_assert(!window_flow_followed());
}
END_TEST

/* Each step's region is judged a step late: one is always undecided.
 * Every region must still get a slot (else it is an evaluation unheard),
 * and a slot used before must not inherit its old region's marks. */
START_TEST(test_slots_last_with_one_always_pending)
{
	int first = region(1, 11); /* an evaluation: ended, its marks kept */
	uint64_t id = 20;
	int pending = region(id, id + 1);

	ck_assert_int_ge(pending, 0);
	ck_assert(!window_flow_end(first));
	for (int step = 0; step < 200; step++) {
		id += 10;
		int next = region(id, id + 1);
		ck_assert_msg(next >= 0, "step %d: no slot", step);
		/* the first region's result, trained on: it ended long ago,
		 * whichever region has its slot now did not make it */
		op(11, 2 * id, true);
		ck_assert_msg(!window_flow_end(pending),
			      "step %d: an ended region's marks decided it", step);
		pending = next;
	}
	/* a frozen backbone's region now: its features reach training */
	int frozen = region(5000, 5001);
	ck_assert_int_ge(frozen, 0);
	ck_assert(!window_flow_end(pending));
	op(5001, 5003, true);
	ck_assert(window_flow_end(frozen));
	ck_assert(!window_flow_followed());
}
END_TEST

/* A forked child judges none of its parent's regions. */
START_TEST(test_fork_forgets_the_parents_regions)
{
	int slot = region(1, 2);
	ck_assert_int_ge(slot, 0);
	pid_t child = fork();
	ck_assert_int_ge(child, 0);
	if (!child) {
		window_flow_after_fork();
		bool clean = !window_flow_followed();
		op(2, 3, true);
		clean &= !window_flow_end(slot);
		_exit(clean ? 0 : 1);
	}
	int status;
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert(!window_flow_end(slot));
}
END_TEST

static Suite *window_flow_suite(void)
{
	Suite *s = suite_create("window_flow");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_frozen_and_evaluation);
	tcase_add_test(tc, test_slots_last_with_one_always_pending);
	tcase_add_test(tc, test_fork_forgets_the_parents_regions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(window_flow_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
