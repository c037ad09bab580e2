/* What the recorder costs:
 *   1. ns per recorded event: a synthetic op-end event (3 inputs, 1
 *      output, names, its begin read from the clock as the dispatcher
 *      does) published through amp_hook_emit with the recorder attached,
 *      minus the same loop with no hook;
 *   2. the same per event for real ops (relu on a 2x2 tensor: an op-begin
 *      and an op-end event each);
 *   1 and 2 alternate untraced and traced loops for --rounds rounds (5)
 *   and print the median of the rounds' differences (target: at most
 *   150 ns per event);
 *   3. wall time of the mlp sample (samples/mlp at issue 14's sizes:
 *      8/32 x 2000 steps, 64/256 x 200 steps) run directly and under
 *      `amptrace run`, median of 7 runs interleaved, with libamp's value
 *      checks off (AMP_VALUE_CHECKS=0: the recorder's and converter's
 *      cost; target at most 1.30x and 1.10x) and on (`amptrace run`'s default: they read every
 *      output, which is libamp's cost, not the recorder's).  The load
 *      average is printed with them: on a busy machine the converter
 *      competes with the program for a core.
 * The recorder is linked in (tracer/record/recorder.c) for 1 and 2 and attached
 * with recorder_attach(), as its constructor does under `amptrace run`.
 * `bench_recorder --events` runs 1 and 2 only.  Instructions per event,
 * steadier than time on a busy machine: `valgrind --tool=callgrind
 * --dump-before=recorder_attach bench_recorder --events --rounds 1`, then
 * emit_loop's and relu_loop's inclusive counts in the two dumps (the
 * first holds the untraced loops, with relu's 10,000 warm-up ops). */
#include "amp.h"
#include "recorder.h"
#include "../test_dirs.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef AMPTRACE_PATH
#error "AMPTRACE_PATH and MLP_PATH must be defined"
#endif

#define RUNS 7

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double emit_loop(long n)
{
	struct amp_tensor_info in[3] = {
		{ .id = 1, .dtype = AMP_DTYPE_F16, .ndim = 2, .shape = { 64, 64 } },
		{ .id = 2, .dtype = AMP_DTYPE_F16, .ndim = 2, .shape = { 64, 64 },
		  .name = "fc1.weight", .is_leaf = true, .requires_grad = true },
		{ .id = 3, .dtype = AMP_DTYPE_F16, .ndim = 1, .shape = { 64 },
		  .name = "fc1.bias", .is_leaf = true, .requires_grad = true },
	};
	struct amp_tensor_info out = { .id = 4, .dtype = AMP_DTYPE_F16,
				       .ndim = 2, .shape = { 64, 64 } };
	double t0 = now_s();

	for (long i = 0; i < n; i++) {
		struct amp_event e = { .kind = AMP_EVENT_OP_END };
		e.op = (struct amp_op_event){
			.op_id = (uint64_t)i + 1, .op = "linear", .overload = "",
			.policy = AMP_POLICY_LOWER_PRECISION_FP,
			.autocast = { .enabled = true, .dtype = AMP_DTYPE_F16,
				      .depth = 1, .scope = "forward" },
			.ninputs = 3, .inputs = in, .noutputs = 1, .outputs = &out,
			.begin_ns = amp_now_ns(),
		};
		amp_hook_emit(&e);
	}
	return now_s() - t0;
}

static double relu_loop(long n)
{
	int64_t shape[2] = { 2, 2 };
	amp_tensor *x = amp_full(2, shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	double t0 = now_s();

	for (long i = 0; i < n; i++)
		amp_tensor_free(amp_relu(x));
	double elapsed = now_s() - t0;
	amp_tensor_free(x);
	return elapsed;
}

static double run_program(char *const argv[])
{
	double t0 = now_s();
	pid_t pid = fork();

	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(null, 1);
		dup2(null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	waitpid(pid, &status, 0);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		fprintf(stderr, "bench_recorder: %s failed\n", argv[0]);
		exit(1);
	}
	return now_s() - t0;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, compare_doubles);
	return v[n / 2];
}

int main(int argc, char **argv)
{
	char raw[] = "/dev/shm/amptrace-bench-XXXXXX";
	const long events = 500000, ops = 200000;
	bool events_only = argc > 1 && !strcmp(argv[1], "--events");
	int rounds = 5;

	if (events_only && argc > 3 && !strcmp(argv[2], "--rounds"))
		rounds = atoi(argv[3]);
	if (rounds < 1 || rounds > 99) {
		fprintf(stderr, "bench_recorder: --rounds takes 1 to 99\n");
		return 2;
	}
	if (!mkdtemp(raw)) {
		perror("mkdtemp");
		return 1;
	}
	/* warm up the allocator and the op paths */
	relu_loop(10000);
	double emit_ns[99], relu_ns[99], bare_emit[99], bare_relu[99];
	for (int r = 0; r < rounds; r++) {
		bare_emit[r] = emit_loop(events) / (double)events * 1e9;
		bare_relu[r] = relu_loop(ops) / (double)ops * 1e9;
		if (recorder_attach(raw) != 0)
			return 1;
		emit_ns[r] = emit_loop(events) / (double)events * 1e9 -
			     bare_emit[r];
		relu_ns[r] = (relu_loop(ops) / (double)ops * 1e9 -
			      bare_relu[r]) / 2;
		recorder_detach();
	}
	remove_tree(raw);

	printf("recorder: %.0f ns per recorded event (op-end event with 4 "
	       "tensors through amp_hook_emit, median of %d rounds; the loop "
	       "without the recorder: %.0f ns per event; target <= 150 ns)\n",
	       median(emit_ns, rounds), rounds, median(bare_emit, rounds));
	printf("recorder: relu (2x2) %.0f ns untraced: %.0f ns per recorded "
	       "event (2 events per op, median of %d rounds; target <= 150 "
	       "ns)\n",
	       median(bare_relu, rounds), median(relu_ns, rounds), rounds);

	if (events_only)
		return 0;
	/* OpenBLAS's idle worker threads spin on sched_yield and take the
	 * second core from amptrace's converter: one BLAS thread for both
	 * runs, unless the caller chose. */
	setenv("OPENBLAS_NUM_THREADS", "1", 0);
	char out[64];
	snprintf(out, sizeof out, "%s.json", raw);
	/* the sizes (issue 14): 8/32 x 2000 steps, many small ops;
	 * 64/256 x 200 steps */
	static const char *const configs[][11] = {
		{ "--batch", "8", "--hidden", "32", "--layers", "4", "--steps",
		  "2000", "--lr", "0.01", NULL },
		{ "--batch", "64", "--hidden", "256", "--layers", "4", "--steps",
		  "200", "--lr", "0.01", NULL },
	};
	for (size_t k = 0; k < sizeof configs / sizeof *configs; k++) {
		char *plain[16] = { MLP_PATH };
		char *traced[24] = { AMPTRACE_PATH, "run", "-q", "-o", out, "--",
				     MLP_PATH };
		char label[128] = "";
		for (int a = 0; configs[k][a]; a++) {
			plain[1 + a] = (char *)configs[k][a];
			traced[7 + a] = (char *)configs[k][a];
			strcat(label, " ");
			strcat(label, configs[k][a]);
		}
		double plain_s[RUNS], checks_s[RUNS], bare_s[RUNS];
		for (int i = 0; i < RUNS; i++) {
			unsetenv("AMP_VALUE_CHECKS");
			plain_s[i] = run_program(plain);
			checks_s[i] = run_program(traced);
			setenv("AMP_VALUE_CHECKS", "0", 1);
			bare_s[i] = run_program(traced);
		}
		unsetenv("AMP_VALUE_CHECKS");
		remove(out);
		qsort(plain_s, RUNS, sizeof *plain_s, compare_doubles);
		qsort(checks_s, RUNS, sizeof *checks_s, compare_doubles);
		qsort(bare_s, RUNS, sizeof *bare_s, compare_doubles);
		static const double target[] = { 1.30, 1.10 };
		double p = plain_s[RUNS / 2], ratio = bare_s[RUNS / 2] / p;
		double load[3] = { 0 };
		getloadavg(load, 3);
		printf("mlp%s (median of %d, OPENBLAS_NUM_THREADS=%s, load "
		       "%.2f): untraced %.3f s; amptrace run %.3f s (%.2fx, "
		       "target <= %.2fx%s) with AMP_VALUE_CHECKS=0, %.3f s "
		       "(%.2fx) with value checks\n",
		       label, RUNS,
		       getenv("OPENBLAS_NUM_THREADS"), load[0], p,
		       bare_s[RUNS / 2], ratio, target[k],
		       ratio <= target[k] ? "" : ", ABOVE TARGET", checks_s[RUNS / 2],
		       checks_s[RUNS / 2] / p);
	}
	return 0;
}
