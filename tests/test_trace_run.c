/* `amptrace run` end to end over tests/trace_prog.c: output and exit
 * status pass through; a child that aborts, segfaults or is SIGKILLed
 * leaves a finished trace with exactly the ops it completed; a killed
 * amptrace leaves a truncated trace the readers repair; 8 threads x 10,000
 * ops give exactly 80,000 op events in per-thread order; forked and ranked
 * processes; merge; and every trace a real program writes passes the
 * format validator (tensor-id continuity included). */
#include "trace.h"
#include "traced.h"
#include "validate.h"
#include "test_dirs.h"

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef AMPTRACE_PATH
#error "AMPTRACE_PATH and TRACE_PROG_PATH must be defined"
#endif

static char dir[4096];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "%s/amptrace-run-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	int status = -1;

	/* the walk fails where the guard removed a directory under it: walk
	 * again */
	for (int i = 0; i < 50 && status != 0; i++) {
		if (i) {
			struct timespec pause = { 0, 10 * 1000 * 1000 };
			nanosleep(&pause, NULL);
		}
		status = remove_tree(dir);
	}
	ck_assert_msg(status == 0, "cannot remove %s: %s", dir, strerror(errno));
}

/* A path in the test's directory (never freed: tests are short). */
static const char *in_dir(const char *name)
{
	char *path = malloc(strlen(dir) + strlen(name) + 2);

	ck_assert_ptr_nonnull(path);
	sprintf(path, "%s/%s", dir, name);
	return path;
}

/* Starts argv with stdout/stderr into files of `dir`; returns the pid. */
static pid_t start(char *const argv[], const char *out, const char *err)
{
	pid_t pid = traced_start(argv, in_dir(out), in_dir(err), NULL);

	ck_assert_int_ge(pid, 0);
	return pid;
}

/* The exit status of amptrace (or another command), which no signal
 * killed. */
static int finish(pid_t pid)
{
	int signal;
	int status = traced_finish(pid, &signal);

	ck_assert_msg(status >= 0 && !signal, "killed by signal %d", signal);
	return status;
}

static int run(char *const argv[])
{
	return finish(start(argv, "stdout", "stderr"));
}

static char *slurp(const char *path)
{
	struct trace_error err;
	size_t len;
	char *text = trace_read_file(path, &len, &err);

	ck_assert_msg(text != NULL, "%s", err.message);
	return text;
}

static void load(const char *path, struct trace *t)
{
	struct trace_error err;

	ck_assert_msg(trace_load(path, t, &err) == 0, "%s", err.message);
}

static size_t count_ops(const struct trace *t, const char *name)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nevents; i++)
		if (t->events[i].kind == TRACE_OP &&
		    !strcmp(t->events[i].op.op, name))
			n++;
	return n;
}

static void assert_valid(const struct trace *t)
{
	struct validate_report r;
	size_t problems = trace_validate(t, &r);

	ck_assert_msg(problems == 0, "%s: %zu problems, first: %s", t->path,
		      problems, r.messages[0]);
}

static const struct trace_event *find_diag(const struct trace *t,
					   const char *kind)
{
	for (size_t i = 0; i < t->nevents; i++)
		if (t->events[i].kind == TRACE_DIAG &&
		    !strcmp(t->events[i].diag.kind, kind))
			return &t->events[i];
	return NULL;
}

static const char *exit_status(const struct trace *t)
{
	const struct trace_exit *exit = t->trailer.exit;

	return exit && exit->status ? exit->status : "";
}

/* ------------------------------------------------------------- normal */

START_TEST(test_output_and_status_pass_through)
{
	struct trace t;

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-q", "-o",
			 (char *)in_dir("t.json"), "--", TRACE_PROG_PATH, "ops",
			 "5", "7", NULL };
	ck_assert_int_eq(run(argv), 7);
	char *out = slurp(in_dir("stdout")), *err = slurp(in_dir("stderr"));
	ck_assert_str_eq(out, "trace_prog: stdout line\n");
	ck_assert_str_eq(err, "trace_prog: stderr line\n");
	free(out);
	free(err);

	load(in_dir("t.json"), &t);
	ck_assert(t.finalized);
	ck_assert_uint_eq(count_ops(&t, "relu"), 5);
	ck_assert_uint_eq(count_ops(&t, "linear"), 1);
	ck_assert_str_eq(exit_status(&t), "exited");
	ck_assert_int_eq(t.trailer.exit->code, 7);
	/* the linear ran under bf16 autocast: its named weight was cast */
	bool weight_cast = false;
	for (size_t i = 0; i < t.nevents; i++) {
		const struct trace_event *e = &t.events[i];
		if (e->kind == TRACE_CAST && e->cast.source->name &&
		    !strcmp(e->cast.source->name, "fc.weight")) {
			weight_cast = true;
			ck_assert_str_eq(e->cast.from, "f32");
			ck_assert_str_eq(e->cast.to, "bf16");
			ck_assert_str_eq(e->cast.cache, "miss");
		}
	}
	ck_assert(weight_cast);
	assert_valid(&t);
	trace_free(&t);
	remove_dir();
}
END_TEST

/* -------------------------------------------------------------- crashes */

struct crash {
	const char *mode;
	int signal;
};

static const struct crash crashes[] = {
	{ "abort", SIGABRT },
	{ "segv", SIGSEGV },
	{ "segv-in-op", SIGSEGV }, /* inside amp_from_data (aten::tensor) */
};

static size_t count_incomplete(const struct trace *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->nevents; i++)
		n += t->events[i].kind == TRACE_OP && t->events[i].op.incomplete;
	return n;
}

START_TEST(test_child_crash_keeps_every_event)
{
	const struct crash *c = &crashes[_i];
	struct trace t;

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-o", (char *)in_dir("t.json"),
			 "--", TRACE_PROG_PATH, (char *)c->mode, "1000", NULL };
	ck_assert_int_eq(run(argv), 128 + c->signal);
	char *err = slurp(in_dir("stderr"));
	ck_assert_msg(strstr(err, "was killed by SIG"), "%s", err);
	free(err);

	load(in_dir("t.json"), &t);
	ck_assert(t.finalized);
	ck_assert_uint_eq(count_ops(&t, "relu"), 1000);
	ck_assert_str_eq(exit_status(&t), "signaled");
	const struct trace_event *died = find_diag(&t, "process-died");
	ck_assert_ptr_nonnull(died);
	ck_assert_ptr_nonnull(strstr(died->diag.message, "killed by SIG"));
	if (!strcmp(c->mode, "segv-in-op")) {
		/* the op that was running is there, marked incomplete */
		ck_assert_uint_eq(count_incomplete(&t), 1);
		ck_assert_msg(strstr(died->diag.message, "in op tensor (op "),
			      "%s", died->diag.message);
	} else {
		ck_assert_uint_eq(count_incomplete(&t), 0);
	}
	assert_valid(&t);
	trace_free(&t);
	remove_dir();
}
END_TEST

static long wait_for_pid_file(const char *path)
{
	for (int i = 0; i < 1000; i++) {
		FILE *f = fopen(path, "r");
		long pid = 0;
		if (f) {
			int got = fscanf(f, "%ld", &pid);
			fclose(f);
			if (got == 1 && pid > 0)
				return pid;
		}
		struct timespec pause = { 0, 10 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	ck_abort_msg("%s never appeared", path);
	return 0;
}

START_TEST(test_child_sigkill_keeps_every_event)
{
	struct trace t;

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-o", (char *)in_dir("t.json"),
			 "--", TRACE_PROG_PATH, "hang", "1000",
			 (char *)in_dir("pid"), NULL };
	pid_t amptrace = start(argv, "stdout", "stderr");
	long child = wait_for_pid_file(in_dir("pid"));
	ck_assert_int_eq(kill((pid_t)child, SIGKILL), 0);
	ck_assert_int_eq(finish(amptrace), 128 + SIGKILL);

	load(in_dir("t.json"), &t);
	ck_assert(t.finalized);
	ck_assert_uint_eq(count_ops(&t, "relu"), 1000);
	ck_assert_ptr_nonnull(find_diag(&t, "process-died"));
	assert_valid(&t);
	trace_free(&t);
	remove_dir();
}
END_TEST

static size_t count_in_file(const char *path, const char *needle)
{
	if (access(path, F_OK) != 0)
		return 0;
	char *text = slurp(path);
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	free(text);
	return n;
}

/* amptrace itself SIGKILLed: the file stops at a line; readers repair it
 * and say so. */
START_TEST(test_amptrace_killed_leaves_readable_trace)
{
	struct trace t;
	char note[512];

	make_dir();
	setenv("TMPDIR", dir, 1); /* the raw files left behind go with dir */
	char *argv[] = { AMPTRACE_PATH, "run", "-o", (char *)in_dir("t.json"),
			 "--", TRACE_PROG_PATH, "hang", "200",
			 (char *)in_dir("pid"), NULL };
	pid_t amptrace = start(argv, "stdout", "stderr");
	long child = wait_for_pid_file(in_dir("pid"));
	/* the events reach the trace within a few polls */
	for (int i = 0; i < 500 &&
			count_in_file(in_dir("t.json"), "\"name\":\"relu\"") < 200;
	     i++) {
		struct timespec pause = { 0, 10 * 1000 * 1000 };
		nanosleep(&pause, NULL);
	}
	ck_assert_int_eq(kill(amptrace, SIGKILL), 0);
	int signal;
	traced_finish(amptrace, &signal);
	ck_assert_int_eq(signal, SIGKILL);
	kill((pid_t)child, SIGKILL);

	load(in_dir("t.json"), &t);
	ck_assert(t.truncated);
	ck_assert(!t.finalized);
	ck_assert_uint_eq(count_ops(&t, "relu"), 200);
	ck_assert_ptr_nonnull(trace_end_note(&t, note, sizeof note));
	ck_assert_ptr_nonnull(strstr(note, "truncated"));
	trace_free(&t);

	char *summary[] = { AMPTRACE_PATH, "summary", (char *)in_dir("t.json"),
			    NULL };
	ck_assert_int_eq(run(summary), 0);
	char *out = slurp(in_dir("stdout")), *err = slurp(in_dir("stderr"));
	ck_assert_msg(strstr(out, "note: truncated at line"), "%s", out);
	ck_assert_msg(strstr(err, "truncated"), "%s", err);
	free(out);
	free(err);
	remove_dir();
}
END_TEST

/* -------------------------------------------------------------- threads */

START_TEST(test_threads_lose_and_duplicate_nothing)
{
	struct trace t;
	int64_t tids[16];
	size_t per_tid[16] = { 0 };
	uint64_t last_id[16] = { 0 };
	int ntids = 0;

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-q", "-o",
			 (char *)in_dir("t.json"), "--", TRACE_PROG_PATH,
			 "threads", "8", "10000", NULL };
	ck_assert_int_eq(run(argv), 0);
	load(in_dir("t.json"), &t);
	for (size_t i = 0; i < t.nevents; i++) {
		const struct trace_event *e = &t.events[i];
		if (e->kind != TRACE_OP || strcmp(e->op.op, "relu"))
			continue;
		int k;
		for (k = 0; k < ntids && tids[k] != e->tid; k++)
			;
		if (k == ntids) {
			ck_assert_int_lt(ntids, 16);
			tids[ntids++] = e->tid;
		}
		per_tid[k]++;
		/* deterministic per-thread order: emission order */
		ck_assert_uint_gt(e->op.op_id, last_id[k]);
		last_id[k] = e->op.op_id;
	}
	ck_assert_uint_eq(count_ops(&t, "relu"), 80000);
	ck_assert_int_eq(ntids, 8);
	for (int k = 0; k < ntids; k++)
		ck_assert_uint_eq(per_tid[k], 10000);
	assert_valid(&t); /* op ids unique, continuity, nesting */
	trace_free(&t);
	remove_dir();
}
END_TEST

/* ------------------------------------------------------- processes */

START_TEST(test_fork_traces_both_processes)
{
	struct trace t;
	int64_t pids[2] = { 0, 0 };
	size_t counts[2] = { 0, 0 };

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-q", "-o",
			 (char *)in_dir("t.json"), "--", TRACE_PROG_PATH, "fork",
			 "10", NULL };
	ck_assert_int_eq(run(argv), 0);
	load(in_dir("t.json"), &t);
	for (size_t i = 0; i < t.nevents; i++) {
		const struct trace_event *e = &t.events[i];
		if (e->kind != TRACE_OP || strcmp(e->op.op, "relu"))
			continue;
		int k = pids[0] == 0 || pids[0] == e->pid ? 0 : 1;
		pids[k] = e->pid;
		counts[k]++;
	}
	ck_assert_int_ne(pids[0], pids[1]);
	ck_assert_uint_eq(counts[0], 10);
	ck_assert_uint_eq(counts[1], 10);
	ck_assert_ptr_null(find_diag(&t, "process-died"));
	assert_valid(&t);
	trace_free(&t);
	remove_dir();
}
END_TEST

START_TEST(test_ranks_then_merge)
{
	struct trace t;

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-q", "-o",
			 (char *)in_dir("t.json"), "--", TRACE_PROG_PATH, "ranks",
			 "2", "10", NULL };
	ck_assert_int_eq(run(argv), 0);
	/* -o names the ranks' merge (run_ranks.c) */
	load(in_dir("t.json"), &t);
	ck_assert_uint_eq(count_ops(&t, "relu"), 20);
	trace_free(&t);
	for (int r = 0; r < 2; r++) {
		char name[32];
		snprintf(name, sizeof name, "t.rank%d.json", r);
		load(in_dir(name), &t);
		ck_assert_uint_eq(count_ops(&t, "relu"), 10);
		ck_assert_int_eq(t.header.rank, r);
		assert_valid(&t);
		trace_free(&t);
	}
	char *merge[] = { AMPTRACE_PATH, "merge", (char *)in_dir("t.rank1.json"),
			  (char *)in_dir("t.rank0.json"), "-o",
			  (char *)in_dir("all.json"), NULL };
	ck_assert_int_eq(run(merge), 0);
	load(in_dir("all.json"), &t);
	ck_assert_uint_eq(count_ops(&t, "relu"), 20);
	/* both ranks are libamp's: the merged header says so too */
	const char *framework = t.header.framework;
	ck_assert_ptr_nonnull(framework);
	ck_assert_msg(!strncmp(framework, "libamp ", 7), "%s", framework);
	size_t per_rank[2] = { 0, 0 };
	for (size_t i = 0; i < t.nevents; i++) {
		const struct trace_event *e = &t.events[i];
		if (e->kind == TRACE_OP && !strcmp(e->op.op, "relu")) {
			/* pid = rank + 1: Perfetto treats pid 0 as special */
			ck_assert(e->pid == 1 || e->pid == 2);
			per_rank[e->pid - 1]++;
		}
		if (e->kind == TRACE_META && !strcmp(e->name, "process_name")) {
			char prefix[32];
			snprintf(prefix, sizeof prefix, "rank %lld:",
				 (long long)e->pid - 1);
			ck_assert_msg(!strncmp(e->meta.value, prefix,
					       strlen(prefix)),
				      "%s", e->meta.value);
		}
	}
	ck_assert_uint_eq(per_rank[0], 10);
	ck_assert_uint_eq(per_rank[1], 10);
	assert_valid(&t);
	trace_free(&t);
	remove_dir();
}
END_TEST

/* A rank that dies, not amptrace's own child (a launcher's worker): its
 * process-died finding names the rank, in its trace and in the merge,
 * whose pids are renumbered (pid = rank + 1) and no longer say which
 * process died. */
START_TEST(test_rank_death_names_the_rank)
{
	struct trace t;

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-q", "-o",
			 (char *)in_dir("t.json"), "--", "/bin/sh", "-c",
			 "RANK=1 \"$0\" abort 5; exit 0", TRACE_PROG_PATH, NULL };
	ck_assert_int_eq(run(argv), 0);
	const char *traces[] = { "t.rank1.json", "t.json" };
	for (size_t i = 0; i < 2; i++) {
		load(in_dir(traces[i]), &t);
		const struct trace_event *died = find_diag(&t, "process-died");
		ck_assert_ptr_nonnull(died);
		ck_assert_msg(!strncmp(died->diag.message, "rank 1: ", 8) &&
				      strstr(died->diag.message,
					     "ended without a clean exit"),
			      "%s: %s", traces[i], died->diag.message);
		trace_free(&t);
	}
	remove_dir();
}
END_TEST

/* A process without a rank beside ranks (a launcher that ran ops itself):
 * the -o file is its own, not the ranks' merge, and run says so, with
 * the command that merges the ranks. */
START_TEST(test_ranks_beside_a_launcher_stay_apart)
{
	struct trace t;

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-o", (char *)in_dir("t.json"),
			 "--", "/bin/sh", "-c",
			 "\"$0\" ops 3 && RANK=0 \"$0\" ops 5", TRACE_PROG_PATH,
			 NULL };
	ck_assert_int_eq(run(argv), 0);
	load(in_dir("t.json"), &t);
	ck_assert_uint_eq(count_ops(&t, "relu"), 3);
	trace_free(&t);
	char *err = slurp(in_dir("stderr"));
	ck_assert_msg(strstr(err, "t.json holds the processes without a rank; "
				  "the ranks' traces stay apart (amptrace merge ") &&
			      strstr(err, "t.rank0.json -o ranks.json merges them)"),
		      "%s", err);
	free(err);
	remove_dir();
}
END_TEST

/* A process that outlives the command (a daemon, a worker forked inside
 * a trace() block) is still running as the recording ends: it said no
 * exit because it has not ended, so its trace says so, and no
 * process-died false alarm. */
START_TEST(test_process_alive_at_the_end_is_running)
{
	struct trace t;

	make_dir();
	char *argv[] = { AMPTRACE_PATH, "run", "-q", "-o",
			 (char *)in_dir("t.json"), "--", "/bin/sh", "-c",
			 "\"$0\" hang 3 \"$1\" & "
			 "while [ ! -f \"$1\" ]; do sleep 0.01; done",
			 TRACE_PROG_PATH, (char *)in_dir("pid"), NULL };
	ck_assert_int_eq(run(argv), 0);
	long daemon = wait_for_pid_file(in_dir("pid"));
	load(in_dir("t.json"), &t);
	kill((pid_t)daemon, SIGKILL);
	ck_assert_uint_eq(count_ops(&t, "relu"), 3);
	ck_assert_ptr_null(find_diag(&t, "process-died"));
	ck_assert_uint_eq(t.trailer.nprocesses, 1);
	ck_assert_str_eq(t.trailer.processes[0].status, "running");
	assert_valid(&t);
	trace_free(&t);
	remove_dir();
}
END_TEST

/* ------------------------------------------------------- training */

START_TEST(test_training_trace_is_valid_and_checkable)
{
	struct trace t;
	FILE *rules;

	make_dir();
	char *good[] = { AMPTRACE_PATH, "run", "-q", "-o",
			 (char *)in_dir("good.json"), "--", TRACE_PROG_PATH, "mlp",
			 "3", NULL };
	char *bad[] = { AMPTRACE_PATH, "run", "-q", "-o",
			(char *)in_dir("bad.json"), "--", TRACE_PROG_PATH, "mlp",
			"3", "16", "bad", NULL };
	ck_assert_int_eq(run(good), 0);
	ck_assert_int_eq(run(bad), 0);
	load(in_dir("good.json"), &t);
	ck_assert_uint_eq(count_ops(&t, "linear"), 6);
	assert_valid(&t);
	trace_free(&t);
	load(in_dir("bad.json"), &t);
	assert_valid(&t);
	trace_free(&t);

	rules = fopen(in_dir("rules"), "w");
	ck_assert_ptr_nonnull(rules);
	fputs("op linear: output bf16, policy lower_precision_fp, count == 6\n"
	      "op mse_loss in scope loss: output f32\n"
	      "casts f32->bf16 <= 5 per step\n"
	      "no finding backward-under-autocast\n",
	      rules);
	fclose(rules);
	char *check_good[] = { AMPTRACE_PATH, "check", (char *)in_dir("good.json"),
			       (char *)in_dir("rules"), NULL };
	char *check_bad[] = { AMPTRACE_PATH, "check", (char *)in_dir("bad.json"),
			      (char *)in_dir("rules"), NULL };
	ck_assert_int_eq(run(check_good), 0);
	ck_assert_int_eq(run(check_bad), 1);
	char *out = slurp(in_dir("stdout"));
	ck_assert_msg(strstr(out, ":4  no finding backward-under-autocast"), "%s",
		      out);
	free(out);

	char *diff_same[] = { AMPTRACE_PATH, "diff", (char *)in_dir("good.json"),
			      (char *)in_dir("good.json"), NULL };
	char *diff[] = { AMPTRACE_PATH, "diff", (char *)in_dir("good.json"),
			 (char *)in_dir("bad.json"), NULL };
	ck_assert_int_eq(run(diff_same), 0);
	ck_assert_int_eq(run(diff), 1);
	remove_dir();
}
END_TEST

/* A trace whose steps are partly aggregated (FORMAT.md §8) follows the
 * format: the steps kept in full after aggregated ones (their tensors,
 * the mlp sample's GradScaler state, may have been made in a step the
 * trace has no events of), the step slices nested on tid 0, the regions
 * balanced. */
START_TEST(test_bounded_trace_is_valid)
{
	const char *const specs[] = { "2:3", "every:2", "none", "0" };

	make_dir();
	for (size_t k = 0; k < sizeof specs / sizeof *specs; k++) {
		struct trace t;
		char *argv[] = { AMPTRACE_PATH, "run", "-q", "-o",
				 (char *)in_dir("window.json"), "--steps",
				 (char *)specs[k], "--", SAMPLES_DIR "/mlp",
				 "--steps", "6", NULL };
		ck_assert_int_eq(run(argv), 0);
		load(in_dir("window.json"), &t);
		ck_assert_msg(t.counts[TRACE_AGGREGATE] > 0, "--steps %s",
			      specs[k]);
		assert_valid(&t);
		trace_free(&t);
	}
	remove_dir();
}
END_TEST

START_TEST(test_run_errors)
{
	make_dir();
	char *missing[] = { AMPTRACE_PATH, "run", "-o", (char *)in_dir("t.json"),
			    "--", "/nonexistent/program", NULL };
	ck_assert_int_eq(run(missing), 127);
	char *err = slurp(in_dir("stderr"));
	ck_assert_msg(strstr(err, "cannot run /nonexistent/program"), "%s", err);
	free(err);

	char *no_program[] = { AMPTRACE_PATH, "run", "--", NULL };
	ck_assert_int_eq(run(no_program), 2);
	char *bad_dir[] = { AMPTRACE_PATH, "run", "-o", "/nonexistent/dir/t.json",
			    "--", TRACE_PROG_PATH, "ops", "1", NULL };
	ck_assert_int_eq(run(bad_dir), 2);

	/* not a libamp program: an empty trace that loads, and a word why;
	 * a failing program keeps its own status */
	struct trace t;
	char *not_amp[] = { AMPTRACE_PATH, "run", "-o", (char *)in_dir("t.json"),
			    "--", "/bin/sh", "-c", "exit 3", NULL };
	ck_assert_int_eq(run(not_amp), 3);
	err = slurp(in_dir("stderr"));
	ck_assert_msg(strstr(err, "no ops recorded: is /bin/sh linked to "
			      "libamp (dynamically)?"), "%s", err);
	free(err);
	load(in_dir("t.json"), &t);
	ck_assert(t.finalized);
	ck_assert_uint_eq(t.nevents, 0);
	trace_free(&t);

	/* ... and one that exits 0 does not pass for a traced run: 125,
	 * with the reason even under -q */
	char *no_ops[] = { AMPTRACE_PATH, "run", "-q", "-o",
			   (char *)in_dir("t.json"), "--", "/bin/true", NULL };
	ck_assert_int_eq(run(no_ops), 125);
	err = slurp(in_dir("stderr"));
	ck_assert_msg(strstr(err, "no ops recorded: is /bin/true linked to "
			      "libamp"), "%s", err);
	free(err);
	/* a program that records ops and exits 0 still exits 0 */
	char *ops[] = { AMPTRACE_PATH, "run", "-q", "-o", (char *)in_dir("t.json"),
			"--", TRACE_PROG_PATH, "ops", "1", NULL };
	ck_assert_int_eq(run(ops), 0);
	err = slurp(in_dir("stderr"));
	ck_assert_msg(!strstr(err, "no ops recorded"), "%s", err);
	free(err);
	remove_dir();
}
END_TEST

/* --svg: renders through ampview when there is one, else says so and
 * fails after writing the trace. */
START_TEST(test_svg_needs_ampview)
{
	struct trace t;
	char viewer[4200];

	make_dir();
	snprintf(viewer, sizeof viewer, "%s", AMPTRACE_PATH);
	char *slash = strrchr(viewer, '/');
	snprintf(slash, sizeof viewer - (size_t)(slash - viewer),
		 "/../viewer/ampview");
	bool have_viewer = access(viewer, X_OK) == 0;
	setenv("PATH", "/nonexistent", 1);
	char *argv[] = { AMPTRACE_PATH, "run", "-q", "-o",
			 (char *)in_dir("t.json"), "--svg", (char *)in_dir("g.svg"),
			 "--", TRACE_PROG_PATH, "ops", "2", NULL };
	int status = run(argv);
	load(in_dir("t.json"), &t);
	ck_assert_uint_eq(count_ops(&t, "relu"), 2);
	trace_free(&t);
	if (have_viewer) {
		ck_assert_int_eq(status, 0);
		ck_assert_int_eq(access(in_dir("g.svg"), F_OK), 0);
	} else {
		ck_assert_int_eq(status, 127);
		char *err = slurp(in_dir("stderr"));
		ck_assert_msg(strstr(err, "ampview not found"), "%s", err);
		free(err);
	}
	remove_dir();
}
END_TEST

static Suite *trace_run_suite(void)
{
	Suite *s = suite_create("trace_run");
	TCase *tc = tcase_create("run");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_output_and_status_pass_through);
	tcase_add_loop_test(tc, test_child_crash_keeps_every_event, 0,
			    sizeof crashes / sizeof crashes[0]);
	tcase_add_test(tc, test_child_sigkill_keeps_every_event);
	tcase_add_test(tc, test_amptrace_killed_leaves_readable_trace);
	tcase_add_test(tc, test_threads_lose_and_duplicate_nothing);
	tcase_add_test(tc, test_fork_traces_both_processes);
	tcase_add_test(tc, test_ranks_then_merge);
	tcase_add_test(tc, test_rank_death_names_the_rank);
	tcase_add_test(tc, test_ranks_beside_a_launcher_stay_apart);
	tcase_add_test(tc, test_process_alive_at_the_end_is_running);
	tcase_add_test(tc, test_training_trace_is_valid_and_checkable);
	tcase_add_test(tc, test_bounded_trace_is_valid);
	tcase_add_test(tc, test_run_errors);
	tcase_add_test(tc, test_svg_needs_ampview);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(trace_run_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
