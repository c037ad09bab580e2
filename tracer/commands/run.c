/* `amptrace run [-o trace.json] [--svg graph.svg] [--report r.html] -- PROG`:
 * runs PROG with the recorder preloaded and streams its events into the
 * trace while it runs.  The program keeps its stdin/stdout/stderr and its
 * exit status becomes ours (128 + N when signal N killed it).
 *
 * Crash safety, end to end: the recorder's records reach the page cache
 * as they are made (raw.h), so a program that aborts, segfaults or is
 * SIGKILLed loses nothing it completed; this process converts them as
 * they come and appends whole lines to the trace, so if amptrace itself
 * is killed the trace is cut at a line boundary and readers repair it
 * (FORMAT.md, "Truncated traces"). */
#include "ampview_path.h"
#include "convert.h"
#include "raw.h"
#include "raw_dir.h"
#include "report.h"
#include "run_python.h"
#include "tail.h"
#include "trace_commands.h"
#include "trace_index.h"
#include "trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef AMPTRACE_VERSION
#define AMPTRACE_VERSION "unknown"
#endif
#ifndef AMPTRACE_RECORDER_INSTALL_DIR
#define AMPTRACE_RECORDER_INSTALL_DIR "/usr/local/lib/amptrace"
#endif
#define RECORDER_NAME "libamptrace-recorder.so"

/* `amptrace run`'s exit status when PROG exited 0 but recorded no op:
 * like env(1) and timeout(1), 125 is the tool's own failure. */
#define RUN_NO_OPS_EXIT 125

/* How often the raw files are polled while the program runs. */
#define POLL_INTERVAL_NS (10 * 1000 * 1000)
#define BUSY_POLL_INTERVAL_NS (2 * 1000 * 1000)
/* How much nicer than the program the converter runs while the program
 * does: on a busy machine (a multi-threaded program using every core)
 * the program keeps its CPU and the converter catches up after it. */
#define CONVERTER_NICE 10

static const char run_usage[] =
	"usage: amptrace run [-o TRACE.json] [--svg GRAPH.svg] [--report REPORT.html]\n"
	"                    [-q] [--no-value-checks] [--raw-dir DIR] -- PROG [ARGS...]\n"
	"\n"
	"Runs PROG (a program linked against libamp) with the amptrace recorder\n"
	"attached and writes a Chrome/Perfetto JSON trace of every autocast\n"
	"decision: ops, casts, cache hits, autocast regions, GradScaler events.\n"
	"PROG's output passes through unchanged, and so does its exit status\n"
	"when it recorded ops (see Exit status).\n"
	"\n"
	"  -o, --output FILE  trace file (default trace.json); a process with a\n"
	"                     rank (RANK, OMPI_COMM_WORLD_RANK or PMI_RANK) writes\n"
	"                     FILE with .rankN before the extension\n"
	"      --svg FILE     render the computation graph with ampview afterwards\n"
	"      --report FILE  write `amptrace report`'s HTML page afterwards\n"
	"  -q, --quiet        no summary line on stderr when all went well\n"
	"      --no-value-checks\n"
	"                     skip libamp's value checks (the fp16-overflow and\n"
	"                     cast-underflow findings): they read every\n"
	"                     low-precision result, which costs time\n"
	"      --raw-dir DIR  where the recorder's raw files go while PROG runs\n"
	"                     (default: $TMPDIR, else /dev/shm when it has 128 MiB\n"
	"                     free, else /tmp); if it fills up, recording stops\n"
	"                     there (a recording-stopped finding) and PROG runs on\n"
	"  -h, --help         this text\n"
	"\n"
	"The trace is written while PROG runs; if PROG crashes or is killed, the\n"
	"trace still holds every event up to its death, and says how it died.\n"
	"libamp's value checks are on unless --no-value-checks is given or\n"
	"AMP_VALUE_CHECKS is set (AMP_VALUE_CHECKS=0: off).  When PROG ends, the\n"
	"findings amptrace computes from the events (stale-cache,\n"
	"dtype-mismatch, ...; see `amptrace summary`) are appended to the trace\n"
	"as amp.diag events, each with its one-line fix.\n"
	"Open it at https://ui.perfetto.dev (Open trace file) or chrome://tracing.\n"
	"Exit status: PROG's; 128+N if signal N killed it; 125 PROG exited 0\n"
	"but recorded no op (\"no ops recorded: is PROG linked to libamp?\",\n"
	"or \"importing torch?\" for python); 2 usage error; 127 PROG or\n"
	"ampview not found; 126 PROG not executable.\n";

struct output {
	int rank;               /* -1: the file named by -o */
	char *path;
	struct trace_writer writer;
	bool open;
	size_t processes;
	/* The events written, kept decoded by the converter as it writes
	 * them: the findings' input, so the file is not read back. */
	struct trace kept;
	bool kept_ready;        /* trace_init succeeded */
	/* kept's index for the findings and the flows, brought up to date
	 * after every poll: built while the program runs, not after */
	struct trace_index index;
};

struct run_state {
	const char *out;
	char **command;
	uint64_t mono_base, real_base;
	struct output **outputs; /* each allocated once: processes point at
				  * their writer */
	size_t noutputs;
	char hostname[256];
	bool value_checks;
};

static volatile sig_atomic_t child_pid;

static void forward_signal(int sig)
{
	if (child_pid > 0)
		kill((pid_t)child_pid, sig);
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* trace.json -> trace.rank3.json; trace -> trace.rank3 */
static char *rank_path(const char *path, int rank)
{
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(path, '.');
	size_t stem = dot && (!slash || dot > slash + 1) ? (size_t)(dot - path)
							 : strlen(path);
	size_t size = strlen(path) + 32;
	char *out = malloc(size);

	if (!out)
		abort();
	snprintf(out, size, "%.*s.rank%d%s", (int)stem, path, rank, path + stem);
	return out;
}

/* The header of the file whose first process is p (NULL: none): its
 * framework ("torch 1.13.0a0 (policy table: 1.13)") and policy table, so
 * that readers pick the policy table of the traced torch.  Its strings
 * live in `strings`. */
static struct trace_header header_of(const struct run_state *s, int rank,
				     const struct convert_process *p,
				     struct trace *strings)
{
	int ncommand = 0;

	while (s->command[ncommand])
		ncommand++;
	return (struct trace_header){
		.generator = "amptrace " AMPTRACE_VERSION,
		.command = (const char **)s->command, .ncommand = ncommand,
		.rank = rank, .host = s->hostname,
		.monotonic_base_ns = s->mono_base, .flush = "event",
		.framework = p ? trace_intern(strings, p->framework) : NULL,
		.policy_table = p ? trace_intern(strings, p->policy_table)
				  : NULL,
	};
}

static struct output *output_for_rank(struct run_state *s, int rank)
{
	for (size_t i = 0; i < s->noutputs; i++)
		if (s->outputs[i]->rank == rank)
			return s->outputs[i];
	struct output **grown =
		realloc(s->outputs, (s->noutputs + 1) * sizeof *grown);
	struct output *o = malloc(sizeof *o);
	if (!grown || !o)
		abort();
	s->outputs = grown;
	s->outputs[s->noutputs++] = o;
	*o = (struct output){ .rank = rank,
			      .path = rank >= 0 ? rank_path(s->out, rank)
						: strdup(s->out) };
	o->kept_ready = trace_init(&o->kept, o->path) == 0;
	trace_index_init(&o->kept, &o->index);
	return o;
}

static bool open_output(struct run_state *s, struct output *o,
			const struct convert_process *first)
{
	if (o->open)
		return true;
	/* The trace is made anew rather than truncated: ext4 writes a
	 * truncated file's new blocks back when it is closed (auto_da_alloc,
	 * its guard for files rewritten in place), which took 30-50 ms at the
	 * end of a 148 MB trace.  Only a file of its own: a link, a device
	 * (-o /dev/stdout) or a second name of a file is written through,
	 * and so is a file whose directory amptrace cannot write.  The new
	 * file keeps the old one's mode and, where allowed, its owner (sudo
	 * amptrace run -o ~/t.json), as truncating it did. */
	struct stat st;
	if (lstat(o->path, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_nlink == 1 && unlink(o->path) == 0) {
		int fd = open(o->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
			      st.st_mode & 0777);
		if (fd >= 0) {
			/* the owner only where allowed (root): else the
			 * file is amptrace's user's, as any new file */
			bool kept_owner = fchown(fd, st.st_uid, st.st_gid) == 0;
			(void)kept_owner;
			fchmod(fd, st.st_mode & 0777); /* past the umask */
			close(fd);
		}
	}
	/* the kept trace has the file's header: its findings judge ops by
	 * the same policy table as a reader of the file */
	o->kept.header = header_of(s, o->rank, first, &o->kept);
	o->kept.amptrace = true;
	int status = trace_writer_open(&o->writer, o->path, &o->kept.header,
				       s->real_base);
	if (status != 0) {
		fprintf(stderr, "amptrace run: cannot write %s: %s\n", o->path,
			strerror(errno));
		return false;
	}
	o->open = true;
	return true;
}

static struct trace_writer *writer_for(void *ctx, const struct convert_process *p)
{
	struct run_state *s = ctx;
	struct output *o = output_for_rank(s, p->rank);

	o->processes++;
	return open_output(s, o, p) ? &o->writer : NULL;
}

static struct trace *trace_for(void *ctx, const struct convert_process *p)
{
	struct output *o = output_for_rank(ctx, p->rank);

	return o->kept_ready ? &o->kept : NULL;
}

static const char *find_recorder(char *buf, size_t size)
{
	const char *env = getenv("AMPTRACE_RECORDER");
	char exe[PATH_MAX];

	if (env && *env)
		return access(env, R_OK) == 0 ? env : NULL;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			snprintf(buf, size, "%s/%s", exe, RECORDER_NAME);
			if (access(buf, R_OK) == 0)
				return buf;
		}
	}
	snprintf(buf, size, "%s/%s", AMPTRACE_RECORDER_INSTALL_DIR,
		 RECORDER_NAME);
	return access(buf, R_OK) == 0 ? buf : NULL;
}

static int render_svg(const char *trace, const char *svg)
{
	char buf[PATH_MAX + 32];
	const char *ampview = find_ampview(buf, sizeof buf);

	if (!ampview) {
		fprintf(stderr, "amptrace run: --svg: ampview not found (looked "
			"next to amptrace and on PATH); the trace %s was "
			"written, render it later with: ampview %s -o %s\n",
			trace, trace, svg);
		return 127;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "amptrace run: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		execl(ampview, "ampview", trace, "-o", svg, (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	fprintf(stderr, "amptrace run: ampview failed to render %s\n", svg);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static bool dir_writable(const char *path)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return false;
	if (!slash)
		return access(".", W_OK) == 0;
	snprintf(dir, sizeof dir, "%.*s", (int)(slash - path + (slash == path)),
		 path);
	return access(dir, W_OK) == 0;
}

/* The child: preload the recorder, restore signals, exec.  An exec
 * failure travels back through `report` (close-on-exec). */
static void exec_child(char **command, const char *recorder,
		       const char *raw_dir, bool value_checks, int report)
{
	const char *old = getenv("LD_PRELOAD");
	size_t size = strlen(recorder) + (old ? strlen(old) : 0) + 2;
	char *preload = malloc(size);

	if (preload) {
		snprintf(preload, size, "%s%s%s", recorder, old && *old ? ":" : "",
			 old ? old : "");
		setenv("LD_PRELOAD", preload, 1);
	}
	char pid[24];
	snprintf(pid, sizeof pid, "%ld", (long)getppid());
	setenv(RAW_ENV_DIR, raw_dir, 1);
	setenv(RAW_ENV_PID, pid, 1);
	/* libamp's value checks (fp16-overflow, cast-underflow findings):
	 * on unless the environment chose; --no-value-checks wins over it. */
	setenv("AMP_VALUE_CHECKS", value_checks ? "1" : "0", !value_checks);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	run_python_prepare(command);
	execvp(command[0], command);
	int err = errno;
	if (write(report, &err, sizeof err) < 0)
		_exit(127);
	_exit(err == ENOENT ? 127 : 126);
}

/* The summary line on stderr, and the reason when no op was recorded;
 * returns the number of ops recorded. */
static uint64_t report_end(const struct run_state *s, const struct converter *cv,
			   const char *prog, int status, bool quiet)
{
	uint64_t events = 0, in_flight = 0, threads = 0, ops = 0;
	size_t processes = 0;
	char signame[32];

	for (size_t i = 0; i < cv->nprocs; i++) {
		if (!cv->procs[i]->announced)
			continue;
		processes++;
		events += cv->procs[i]->events;
		ops += cv->procs[i]->ops;
		in_flight += cv->procs[i]->in_flight_ops;
		threads += cv->procs[i]->nthreads;
	}
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		fprintf(stderr, "amptrace run: %s was killed by %s (%s)", prog,
			convert_signal_name(sig, signame, sizeof signame),
			strsignal(sig));
	} else if (!quiet || ops == 0) {
		fprintf(stderr, "amptrace run: %s exited with status %d", prog,
			WEXITSTATUS(status));
	} else {
		return ops;
	}
	fprintf(stderr, "; %llu events from %zu process%s, %llu thread%s",
		(unsigned long long)events, processes,
		processes == 1 ? "" : "es", (unsigned long long)threads,
		threads == 1 ? "" : "s");
	if (in_flight)
		fprintf(stderr, " (%llu op%s in flight at the end, marked "
			"incomplete)", (unsigned long long)in_flight,
			in_flight == 1 ? "" : "s");
	for (size_t i = 0; i < s->noutputs; i++)
		fprintf(stderr, "%s%s", i ? ", " : " -> ", s->outputs[i]->path);
	fputc('\n', stderr);
	if (ops == 0) {
		char message[PATH_MAX + 64];
		fprintf(stderr, "amptrace run: %s\n",
			run_no_ops_message(prog, message, sizeof message));
	}
	return ops;
}

/* Whether o's kept trace holds every event of its file: not when the
 * converter could not keep one (out of memory). */
static bool kept_whole(const struct output *o, const struct converter *cv)
{
	if (!o->kept_ready)
		return false;
	for (size_t i = 0; i < cv->nprocs; i++)
		if (cv->procs[i]->writer == &o->writer &&
		    cv->procs[i]->trace_lost)
			return false;
	return true;
}

/* Appends the findings computed from the events written so far, so that
 * the trace alone (Perfetto, ampview, other tools) shows them, and the
 * flow events.  Their input is the trace the converter kept while writing
 * (reading the file back took as long as a short run itself).  When
 * memory ran out while keeping it, the trace gets neither (reading the
 * file back would need more memory still) and run says so: the events
 * matter more than their findings. */
static void append_tail(struct output *o, const struct converter *cv,
			int64_t ts_ns)
{
	if (!kept_whole(o, cv)) {
		fprintf(stderr, "amptrace run: out of memory keeping the events "
			"of %s: its findings are not appended (amptrace summary "
			"computes them)\n", o->path);
		return;
	}
	tail_append(&o->writer, &o->kept, &o->index, ts_ns);
}

/* The trailer of output o: how the command ended, and each of its
 * processes (their ends in `ends`, room for every process). */
static struct trace_trailer trailer_of(const struct output *o,
				       const struct converter *cv,
				       int64_t duration_ns,
				       struct trace_exit *exit,
				       struct trace_process_end *ends,
				       struct trace_gpu_timing *gpus)
{
	struct trace_trailer t = {
		.complete = true, .events = o->writer.events,
		.duration_ns = duration_ns, .exit = exit, .processes = ends,
	};

	for (size_t j = 0; j < cv->nprocs; j++)
		if (cv->procs[j]->writer == &o->writer) {
			convert_process_end(cv->procs[j], &ends[t.nprocesses],
					    &gpus[t.nprocesses]);
			t.nprocesses++;
		}
	return t;
}

static void finish_outputs(struct run_state *s, struct converter *cv, int status,
			   uint64_t end_ns, int *failed)
{
	char signame[32];
	struct trace_exit exit = { .status = "exited",
				   .code = WEXITSTATUS(status) };
	struct trace_process_end *ends = calloc(cv->nprocs + 1, sizeof *ends);
	struct trace_gpu_timing *gpus = calloc(cv->nprocs + 1, sizeof *gpus);

	if (!ends || !gpus)
		abort();
	if (WIFSIGNALED(status))
		exit = (struct trace_exit){
			.status = "signaled", .signal = WTERMSIG(status),
			.signal_name = convert_signal_name(WTERMSIG(status),
							   signame,
							   sizeof signame),
		};
	for (size_t i = 0; i < s->noutputs; i++) {
		struct output *o = s->outputs[i];

		if (!o->open)
			continue;
		int64_t duration_ns = (int64_t)(end_ns - s->mono_base);
		append_tail(o, cv, duration_ns);
		struct trace_trailer trailer = trailer_of(o, cv, duration_ns,
							  &exit, ends, gpus);
		if (trace_writer_close(&o->writer, &trailer) != 0) {
			fprintf(stderr, "amptrace run: error writing %s: %s\n",
				o->path, strerror(errno));
			*failed = 1;
		}
	}
	free(ends);
	free(gpus);
}

int amptrace_run(int argc, char **argv)
{
	struct run_state s = { .out = "trace.json", .value_checks = true };
	const char *svg = NULL, *report_html = NULL, *raw_base = NULL;
	bool quiet = false;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--")) {
			i++;
			break;
		}
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			fputs(run_usage, stdout);
			return 0;
		}
		if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
		} else if (!strcmp(a, "--no-value-checks")) {
			s.value_checks = false;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output") ||
			   !strcmp(a, "--svg") || !strcmp(a, "--report") ||
			   !strcmp(a, "--raw-dir")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "amptrace run: %s needs a file "
					"name\n%s", a, run_usage);
				return 2;
			}
			if (!strcmp(a, "--svg"))
				svg = argv[++i];
			else if (!strcmp(a, "--report"))
				report_html = argv[++i];
			else if (!strcmp(a, "--raw-dir"))
				raw_base = argv[++i];
			else
				s.out = argv[++i];
		} else if (!strncmp(a, "--output=", 9)) {
			s.out = a + 9;
		} else if (!strncmp(a, "--svg=", 6)) {
			svg = a + 6;
		} else if (!strncmp(a, "--report=", 9)) {
			report_html = a + 9;
		} else if (!strncmp(a, "--raw-dir=", 10)) {
			raw_base = a + 10;
		} else if (a[0] == '-') {
			fprintf(stderr, "amptrace run: unknown option '%s'\n%s", a,
				run_usage);
			return 2;
		} else {
			break; /* PROG without `--` */
		}
	}
	if (i >= argc) {
		fprintf(stderr, "amptrace run: no program given\n%s", run_usage);
		return 2;
	}
	if (!*s.out) {
		fprintf(stderr, "amptrace run: empty output file name\n");
		return 2;
	}
	s.command = argv + i;
	if (!dir_writable(s.out)) {
		fprintf(stderr, "amptrace run: cannot write %s: it is a "
			"directory, or its directory is not writable or does "
			"not exist\n", s.out);
		return 2;
	}

	char recorder_buf[PATH_MAX + 64];
	const char *recorder = find_recorder(recorder_buf, sizeof recorder_buf);
	if (!recorder) {
		fprintf(stderr, "amptrace run: %s not found (next to amptrace, "
			"in %s, or $AMPTRACE_RECORDER)\n", RECORDER_NAME,
			AMPTRACE_RECORDER_INSTALL_DIR);
		return 2;
	}
	if (strpbrk(recorder, " :")) {
		fprintf(stderr, "amptrace run: the recorder path '%s' contains "
			"a space or ':' and cannot go in LD_PRELOAD\n", recorder);
		return 2;
	}

	struct raw_dir raw;
	if (raw_dir_create(&raw, raw_base) != 0)
		return 2;
	raw_dir_guard(&raw);
	const char *raw_dir = raw.path;
	gethostname(s.hostname, sizeof s.hostname - 1);

	int report[2];
	if (pipe2(report, O_CLOEXEC) != 0) {
		fprintf(stderr, "amptrace run: pipe: %s\n", strerror(errno));
		raw_dir_remove(&raw);
		return 2;
	}
	/* Like time(1): the terminal's ^C reaches the program, which decides;
	 * we stay to finish the trace.  TERM/HUP sent to us are passed on. */
	struct sigaction ignore = { .sa_handler = SIG_IGN };
	struct sigaction forward = { .sa_handler = forward_signal };
	sigaction(SIGINT, &ignore, NULL);
	sigaction(SIGQUIT, &ignore, NULL);
	sigaction(SIGTERM, &forward, NULL);
	sigaction(SIGHUP, &forward, NULL);

	/* SIGCHLD is blocked so that the poll below can wait for it: the end
	 * of the program wakes us at once (the child unblocks it). */
	sigset_t chld;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	fflush(NULL);
	s.mono_base = clock_ns(CLOCK_MONOTONIC);
	s.real_base = clock_ns(CLOCK_REALTIME);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "amptrace run: fork: %s\n", strerror(errno));
		raw_dir_remove(&raw);
		return 2;
	}
	if (pid == 0) {
		close(report[0]);
		exec_child(s.command, recorder, raw_dir, s.value_checks,
			   report[1]);
	}
	child_pid = pid;
	/* Only this process: the program was forked at its own priority. */
	errno = 0;
	int nice_now = getpriority(PRIO_PROCESS, 0);
	bool niced = errno == 0 &&
		     setpriority(PRIO_PROCESS, 0, nice_now + CONVERTER_NICE) == 0;
	close(report[1]);
	int exec_errno = 0;
	ssize_t got = read(report[0], &exec_errno, sizeof exec_errno);
	close(report[0]);

	struct converter cv;
	convert_init(&cv, raw_dir, s.mono_base, writer_for, &s);
	cv.trace_for = trace_for;
	int status = 0;
	for (;;) {
		pid_t done = waitpid(pid, &status, WNOHANG);
		if (done == pid)
			break;
		if (done < 0 && errno != EINTR) {
			status = 0;
			break;
		}
		size_t converted = convert_poll(&cv);
		for (size_t k = 0; k < s.noutputs; k++) {
			trace_writer_flush(&s.outputs[k]->writer);
			trace_index_update(&s.outputs[k]->index);
		}
		/* A busy program is followed every BUSY_POLL_INTERVAL (in
		 * batches: polling without a pause took a core from the
		 * program), an idle one every POLL_INTERVAL; its end wakes us
		 * at once. */
		struct timespec pause = {
			0, converted ? BUSY_POLL_INTERVAL_NS : POLL_INTERVAL_NS
		};
		sigtimedwait(&chld, NULL, &pause);
	}
	uint64_t end_ns = clock_ns(CLOCK_MONOTONIC);
	/* What is left (the records not converted yet, the findings, the
	 * flows) is all the user waits for now: back to amptrace's own
	 * priority where the system lets a process raise its priority again
	 * (root, RLIMIT_NICE), else on at the lower one. */
	if (niced)
		setpriority(PRIO_PROCESS, 0, nice_now);
	child_pid = 0;
	sigprocmask(SIG_UNBLOCK, &chld, NULL);

	int failed = 0;
	if (got == (ssize_t)sizeof exec_errno) {
		fprintf(stderr, "amptrace run: cannot run %s: %s\n", s.command[0],
			strerror(exec_errno));
		convert_free(&cv);
		raw_dir_remove(&raw);
		free(s.outputs);
		return exec_errno == ENOENT ? 127 : 126;
	}
	convert_finish(&cv, (long)pid, status, end_ns);
	if (s.noutputs == 0) {
		/* Nothing recorded: still leave a trace that loads. */
		struct output *o = output_for_rank(&s, -1);
		open_output(&s, o, NULL);
	}
	finish_outputs(&s, &cv, status, end_ns, &failed);
	uint64_t ops = report_end(&s, &cv, s.command[0], status, quiet);
	if (raw_dir_ran_out(&raw))
		fprintf(stderr, "amptrace run: the raw directory %s ran out of "
			"space: recording stopped early (the trace's "
			"recording-stopped finding says where); %s ran on.  "
			"Give amptrace room with --raw-dir DIR or TMPDIR\n",
			raw.path, s.command[0]);
	convert_free(&cv);
	raw_dir_remove(&raw);

	int code = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
				       : WEXITSTATUS(status);
	/* A run that recorded no op traced the wrong program (or one not
	 * linked to libamp, or not importing torch): a CI step should not go
	 * green on it.  A failing program's own status says more. */
	if (ops == 0 && code == 0)
		code = RUN_NO_OPS_EXIT;
	if (svg && !failed) {
		for (size_t k = 0; k < s.noutputs; k++) {
			char *svg_path = s.outputs[k]->rank >= 0
						 ? rank_path(svg, s.outputs[k]->rank)
						 : strdup(svg);
			int r = render_svg(s.outputs[k]->path, svg_path);
			free(svg_path);
			if (r != 0 && code == 0)
				code = r;
			if (r == 127)
				break;
		}
	}
	for (size_t k = 0; report_html && !failed && k < s.noutputs; k++) {
		char *html = s.outputs[k]->rank >= 0
				     ? rank_path(report_html, s.outputs[k]->rank)
				     : strdup(report_html);
		int r = html ? report_write(s.outputs[k]->path, html, true,
					    "amptrace run")
			     : 1;
		free(html);
		if (r != 0 && code == 0)
			code = r;
	}
	for (size_t k = 0; k < s.noutputs; k++) {
		trace_index_free(&s.outputs[k]->index);
		trace_free(&s.outputs[k]->kept);
		free(s.outputs[k]->path);
		free(s.outputs[k]);
	}
	free(s.outputs);
	if (failed && code == 0)
		code = 1;
	return code;
}
