/* A libamp program for the tracer's tests: it runs a known number of ops
 * and then ends the way the test asks (normally, abort, segfault, hang
 * until killed), from one or many threads or processes.  The tests run it
 * under `amptrace run` and count what the trace holds.
 *
 *   trace_prog ops N [CODE]     N relu ops (plus a linear under autocast),
 *                               a line on stdout and on stderr, exit CODE
 *   trace_prog abort N          N relu ops, then abort()
 *   trace_prog segv N           N relu ops, then a segmentation fault
 *   trace_prog segv-in-op N     N relu ops, then a segfault inside an op
 *                               (amp_from_data reading a bad pointer)
 *   trace_prog hang N PIDFILE   N relu ops, write the pid, wait to be killed
 *                               (N 0: no op at all, killed before its first)
 *   trace_prog mlp-hang STEPS PIDFILE
 *                               `mlp STEPS`, then the forward of one more
 *                               step, write the pid, wait to be killed
 *   trace_prog sigterms N FILE  N relu ops, "ready" on stdout, then busy
 *                               until a SIGTERM and for 0.5 s more;
 *                               writes to FILE how many came and their
 *                               senders' pids
 *   trace_prog threads T N      T threads x N relu ops each, then a line
 *                               on stdout
 *   trace_prog threads-hang T N PIDFILE
 *                               T threads x N relu ops each, each then
 *                               blocked (waiting on a lock the main
 *                               thread holds); the pid written once all
 *                               are, then wait to be killed
 *   trace_prog threads-exit T N
 *                               T threads x N relu ops each, each then
 *                               blocked as in threads-hang, and the
 *                               program exits cleanly (exit 0) with them
 *                               alive
 *   trace_prog ranks R N        R processes (RANK=0..R-1), each `ops N`
 *   trace_prog fork N           N relu ops in this process and in a child
 *   trace_prog fork-hang N PIDFILE
 *                               N relu ops, then a fork: each process
 *                               runs N more; the child writes its pid
 *                               into PIDFILE and waits to be killed, the
 *                               parent, once the child is gone, into
 *                               PIDFILE.parent and waits to be killed
 *   trace_prog fork-exit N K    K children, each N relu ops then _exit(0)
 *                               (no atexit), the way forked children end
 *   trace_prog closefds N FILE  one relu op, then close descriptors
 *                               3..1023 (as closefrom(3) does) and write
 *                               "hi" into FILE, N relu ops, then print
 *                               FILE's size
 *   trace_prog exec N MODE ARGS...
 *                               N relu ops, then exec() itself as
 *                               `trace_prog MODE ARGS...` (one process,
 *                               two images)
 *   trace_prog mlp STEPS [WIDTH] [bad]
 *                               a small training loop (two linear layers
 *                               WIDTH wide, default 16, bf16 autocast on
 *                               cpu, SGD); `bad` runs backward inside the
 *                               autocast region */
#include "amp.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void fail(const char *what)
{
	fprintf(stderr, "trace_prog: %s: %s\n", what, amp_last_error());
	exit(3);
}

static amp_tensor *ones(int64_t rows, int64_t cols)
{
	int64_t shape[2] = { rows, cols };
	amp_tensor *t = amp_full(2, shape, 1.0, AMP_DTYPE_F32, AMP_DEVICE_CPU);

	if (!t)
		fail("amp_full");
	return t;
}

/* n relu ops on a small tensor: the unit the tests count. */
static void relu_ops(long n)
{
	amp_tensor *x = ones(2, 2);

	for (long i = 0; i < n; i++) {
		amp_tensor *y = amp_relu(x);
		if (!y)
			fail("amp_relu");
		amp_tensor_free(y);
	}
	amp_tensor_free(x);
}

static void linear_under_autocast(void)
{
	struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
	amp_tensor *x = ones(4, 8), *w = ones(8, 8);

	amp_tensor_set_name(w, "fc.weight");
	amp_tensor_set_requires_grad(w, true);
	opts.dtype = AMP_DTYPE_BF16;
	opts.scope = "fwd";
	amp_autocast_enter(&opts);
	amp_tensor *y = amp_linear(x, w, NULL);
	if (!y)
		fail("amp_linear");
	amp_autocast_exit();
	amp_tensor_free(y);
	amp_tensor_free(x);
	amp_tensor_free(w);
}

/* Writes the pid into `path` (whole: through a temporary name), then
 * waits to be killed. */
static void hang(const char *path)
{
	char tmp[4096];

	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	if (!f)
		fail("pid file");
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		fail("pid file");
	for (;;)
		pause();
}

static void *thread_main(void *arg)
{
	relu_ops((long)arg);
	return NULL;
}

static int run_threads(int count, long n)
{
	pthread_t threads[64];

	if (count > 64)
		count = 64;
	for (int i = 0; i < count; i++)
		if (pthread_create(&threads[i], NULL, thread_main, (void *)n))
			fail("pthread_create");
	for (int i = 0; i < count; i++)
		pthread_join(threads[i], NULL);
	/* the fault tests check that the program ran to its end */
	printf("trace_prog: threads done\n");
	return 0;
}

/* threads-hang: the workers' wait, and how many reached it */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t arrived_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t arrived_cond = PTHREAD_COND_INITIALIZER;
static int arrived;

static void *blocked_thread_main(void *arg)
{
	relu_ops((long)arg);
	pthread_mutex_lock(&arrived_lock);
	arrived++;
	pthread_cond_signal(&arrived_cond);
	pthread_mutex_unlock(&arrived_lock);
	pthread_mutex_lock(&held); /* never given back */
	return NULL;
}

/* The workers each run n ops and block; returns once all are blocked. */
static void start_blocked_threads(int count, long n)
{
	pthread_t thread;

	pthread_mutex_lock(&held);
	for (int i = 0; i < count; i++)
		if (pthread_create(&thread, NULL, blocked_thread_main, (void *)n))
			fail("pthread_create");
	pthread_mutex_lock(&arrived_lock);
	while (arrived < count)
		pthread_cond_wait(&arrived_cond, &arrived_lock);
	pthread_mutex_unlock(&arrived_lock);
}

static void run_threads_hang(int count, long n, const char *path)
{
	start_blocked_threads(count, n);
	hang(path);
}

/* `ranks` processes with RANK set, each `self MODE N` (ops, mlp). */
static int run_ranks(const char *self, int ranks, const char *mode,
		     const char *n)
{
	for (int r = 0; r < ranks; r++) {
		pid_t pid = fork();
		if (pid == 0) {
			char rank[16];
			snprintf(rank, sizeof rank, "%d", r);
			setenv("RANK", rank, 1);
			execl(self, self, mode, n, (char *)NULL);
			_exit(127);
		}
	}
	int status, worst = 0;
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			worst = 1;
	return worst;
}

static amp_tensor *parameter(const char *name, int64_t rows, int64_t cols)
{
	int64_t shape[2] = { rows, cols };
	amp_tensor *t = amp_randn(cols ? 2 : 1, shape, AMP_DTYPE_F32,
				  AMP_DEVICE_CPU);

	if (!t)
		fail("amp_randn");
	amp_tensor_set_name(t, name);
	amp_tensor_set_requires_grad(t, true);
	return t;
}

/* Two linear layers, relu, mse loss; SGD.  Forward and loss under bf16
 * autocast, backward outside (inside with `bad`). */
/* `steps` steps, and with `then_forward` the forward of one more (its
 * tensors left to the process's end). */
static int run_mlp(int steps, int64_t width, bool bad, bool then_forward)
{
	amp_manual_seed(1);
	amp_tensor *params[4] = {
		parameter("fc1.weight", 2 * width, width),
		parameter("fc1.bias", 2 * width, 0),
		parameter("fc2.weight", 8, 2 * width),
		parameter("fc2.bias", 8, 0),
	};
	amp_optimizer *opt = amp_sgd_new(params, 4, 0.01, 0, 0, 0, false);
	int64_t xs[2] = { width, width }, ys[2] = { width, 8 };
	amp_tensor *x = amp_randn(2, xs, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *target = amp_randn(2, ys, AMP_DTYPE_F32, AMP_DEVICE_CPU);

	if (!opt || !x || !target)
		fail("setup");
	amp_tensor_set_name(x, "input");
	amp_tensor_set_name(target, "target");
	for (int step = 0; step < steps; step++) {
		struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
		opts.dtype = AMP_DTYPE_BF16;
		opts.scope = "forward";
		amp_optimizer_zero_grad(opt);
		amp_autocast_enter(&opts);
		amp_tensor *h = amp_linear(x, params[0], params[1]);
		amp_tensor *a = h ? amp_relu(h) : NULL;
		amp_tensor *out = a ? amp_linear(a, params[2], params[3]) : NULL;
		opts.scope = "loss";
		amp_autocast_enter(&opts);
		amp_tensor *loss = out ? amp_mse_loss(out, target,
						      AMP_REDUCTION_MEAN)
				       : NULL;
		amp_autocast_exit();
		if (!loss)
			fail("forward");
		if (!bad)
			amp_autocast_exit();
		if (amp_backward(loss, NULL, false, false) != AMP_OK)
			fail("backward");
		if (bad)
			amp_autocast_exit();
		if (amp_optimizer_step(opt) != AMP_OK)
			fail("step");
		amp_tensor_free(loss);
		amp_tensor_free(out);
		amp_tensor_free(a);
		amp_tensor_free(h);
	}
	if (then_forward) {
		struct amp_autocast_opts opts = AMP_AUTOCAST_OPTS(AMP_DEVICE_CPU);
		opts.dtype = AMP_DTYPE_BF16;
		amp_autocast_enter(&opts);
		amp_tensor *h = amp_linear(x, params[0], params[1]);
		if (!h || !amp_relu(h))
			fail("forward");
		return 0;
	}
	amp_optimizer_free(opt);
	for (int i = 0; i < 4; i++)
		amp_tensor_free(params[i]);
	amp_tensor_free(x);
	amp_tensor_free(target);
	return 0;
}

/* A daemon's or a sandbox's start: every descriptor it did not open
 * closed, then a file of its own gets one of the freed numbers.  The
 * recorder must never write into it. */
static int run_closefds(long n, const char *path)
{
	struct stat st;

	relu_ops(1);
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, "hi", 2) != 2)
		fail("own file");
	relu_ops(n);
	if (fstat(fd, &st) != 0 || close(fd) != 0)
		fail("own file");
	printf("trace_prog: %s holds %lld bytes\n", path, (long long)st.st_size);
	return 0;
}

static int run_fork_exit(long n, int children)
{
	for (int i = 0; i < children; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			relu_ops(n);
			_exit(0);
		}
	}
	relu_ops(n);
	int status, worst = 0;
	while (wait(&status) > 0)
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			worst = 1;
	return worst;
}

static volatile sig_atomic_t sigterms;
static volatile sig_atomic_t sigterm_senders[8];

static void count_sigterm(int sig, siginfo_t *info, void *context)
{
	(void)sig;
	(void)context;
	if (sigterms < 8)
		sigterm_senders[sigterms] = info->si_pid;
	sigterms++;
}

/* Busy, not asleep, so that each SIGTERM is taken as it comes: one that
 * came while another was pending would merge with it. */
static int run_sigterms(long n, const char *path)
{
	struct sigaction count = { .sa_sigaction = count_sigterm,
				   .sa_flags = SA_SIGINFO };
	struct timespec now, end;

	sigaction(SIGTERM, &count, NULL);
	relu_ops(n);
	printf("ready\n");
	fflush(stdout);
	while (!sigterms)
		;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_nsec += 500000000;
	do
		clock_gettime(CLOCK_MONOTONIC, &now);
	while (now.tv_sec + now.tv_nsec / 1e9 < end.tv_sec + end.tv_nsec / 1e9);
	FILE *f = fopen(path, "w");
	if (!f)
		fail("count file");
	fprintf(f, "%d", (int)sigterms);
	for (int i = 0; i < sigterms && i < 8; i++)
		fprintf(f, " %d", (int)sigterm_senders[i]);
	fprintf(f, "\n");
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 0;

	if (!strcmp(mode, "ops")) {
		printf("trace_prog: stdout line\n");
		fflush(stdout);
		fprintf(stderr, "trace_prog: stderr line\n");
		linear_under_autocast();
		relu_ops(n);
		return argc > 3 ? atoi(argv[3]) : 0;
	}
	if (!strcmp(mode, "abort")) {
		relu_ops(n);
		abort();
	}
	if (!strcmp(mode, "segv")) {
		relu_ops(n);
		volatile int *nowhere = NULL;
		*nowhere = 1;
		return 0;
	}
	if (!strcmp(mode, "segv-in-op")) {
		int64_t shape[2] = { 64, 64 };
		relu_ops(n);
		amp_from_data(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU,
			      (const void *)(uintptr_t)16);
		return 0;
	}
	if (!strcmp(mode, "hang") && argc > 3) {
		if (n > 0)
			relu_ops(n);
		hang(argv[3]);
	}
	if (!strcmp(mode, "mlp-hang") && argc > 3) {
		run_mlp((int)n, 16, false, true);
		hang(argv[3]);
	}
	if (!strcmp(mode, "sigterms") && argc > 3)
		return run_sigterms(n, argv[3]);
	if (!strcmp(mode, "threads-hang") && argc > 4)
		run_threads_hang((int)n, atol(argv[3]), argv[4]);
	if (!strcmp(mode, "threads-exit") && argc > 3) {
		start_blocked_threads((int)n, atol(argv[3]));
		return 0;
	}
	if (!strcmp(mode, "threads") && argc > 3)
		return run_threads((int)n, atol(argv[3]));
	if (!strcmp(mode, "ranks") && argc > 3)
		return run_ranks(argv[0], (int)n, "ops", argv[3]);
	if (!strcmp(mode, "ranks-mlp") && argc > 3)
		return run_ranks(argv[0], (int)n, "mlp", argv[3]);
	if (!strcmp(mode, "fork")) {
		pid_t pid = fork();
		relu_ops(n);
		if (pid == 0)
			exit(0);
		int status;
		waitpid(pid, &status, 0);
		return 0;
	}
	if (!strcmp(mode, "fork-hang") && argc > 3) {
		relu_ops(n);
		pid_t pid = fork();
		if (pid < 0)
			fail("fork");
		relu_ops(n);
		if (pid == 0)
			hang(argv[3]);
		char parent[4096];
		snprintf(parent, sizeof parent, "%s.parent", argv[3]);
		int status;
		waitpid(pid, &status, 0);
		hang(parent);
	}
	if (!strcmp(mode, "fork-exit") && argc > 3)
		return run_fork_exit(n, atoi(argv[3]));
	if (!strcmp(mode, "exec") && argc > 3) {
		relu_ops(n);
		argv[2] = argv[0];
		execv(argv[0], argv + 2);
		fail("exec");
	}
	if (!strcmp(mode, "closefds") && argc > 3)
		return run_closefds(n, argv[3]);
	if (!strcmp(mode, "mlp")) {
		int64_t width = argc > 3 ? atol(argv[3]) : 16;
		return run_mlp((int)n, width > 0 ? width : 16,
			       argc > 4 && !strcmp(argv[4], "bad"), false);
	}
	fprintf(stderr, "usage: trace_prog ops|abort|segv|hang|sigterms|threads|ranks|ranks-mlp|"
		"fork|fork-hang|fork-exit|exec|closefds|mlp|mlp-hang|threads-hang|threads-exit ...\n");
	return 2;
}
