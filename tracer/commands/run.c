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
#include "progress.h"
#include "convert.h"
#include "data_dir.h"
#include "findings.h"
#include "inherit.h"
#include "raw.h"
#include "raw_dir.h"
#include "report.h"
#include "run_python.h"
#include "run_ranks.h"
#include "step_select.h"
#include "tail.h"
#include "command_line.h"
#include "commands.h"
#include "output_file.h"
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
	"                    [--steps SPEC] [--max-size SIZE] [-q] [--no-value-checks]\n"
	"                    [--raw-dir DIR] [--block-of NAME] -- PROG [ARGS...]\n"
	"\n"
	"Runs PROG (a program linked against libamp, or Python running PyTorch:\n"
	"python, torchrun, accelerate launch, any Python script) with the amptrace\n"
	"recorder attached and writes a Chrome/Perfetto JSON trace of every autocast\n"
	"decision: ops, casts, cache hits, autocast regions, GradScaler events.\n"
	"PROG's output passes through unchanged, and so does its exit status\n"
	"when it recorded ops (see Exit status).\n"
	"\n"
	"  -o, --output FILE  trace file (default trace.json); a process with a\n"
	"                     rank (RANK, OMPI_COMM_WORLD_RANK or PMI_RANK) writes\n"
	"                     FILE with .rankN before the extension, and FILE is\n"
	"                     then their merge (`amptrace merge`); a rank given\n"
	"                     later (torch's init_process_group) names its\n"
	"                     process in the file it began in\n"
	"      --no-merge     leave the ranks' traces apart\n"
	"      --svg FILE     render the computation graph with ampview afterwards\n"
	"      --report FILE  write `amptrace report`'s HTML page afterwards\n"
	"      --steps SPEC   the training steps recorded in full detail (from 0):\n"
	"                     N, A:B (both included), A:, every:K, all, none, or a\n"
	"                     comma-separated list (default " STEP_SELECT_DEFAULT "); every other\n"
	"                     step is recorded as per-step aggregates: ops and\n"
	"                     casts by op and direction, cache hits, step time\n"
	"      --max-size SIZE\n"
	"                     stop full detail, at the end of a step, once the\n"
	"                     trace passes SIZE (100M, 2G, none; default 1G);\n"
	"                     aggregates go on\n"
	"  -q, --quiet        no summary line on stderr when all went well, and no\n"
	"                     progress line (shown while PROG runs on a terminal\n"
	"                     that PROG's standard output is not: events, trace\n"
	"                     size, step; AMPTRACE_PROGRESS=1 shows it anywhere)\n"
	"      --no-value-checks\n"
	"                     skip the value checks, libamp's and the PyTorch\n"
	"                     bridge's (the fp16-overflow and cast-underflow\n"
	"                     findings, and the overflow a skipped GradScaler\n"
	"                     step traces back to): they read every\n"
	"                     low-precision result, which costs time\n"
	"      --raw-dir DIR  where the recorder's raw files go while PROG runs; a\n"
	"                     second --raw-dir is where they go on once the first\n"
	"                     is full (default: the first two of $TMPDIR, /dev/shm\n"
	"                     and /tmp on different file systems with 16 MiB free;\n"
	"                     a TMPDIR passed over is said); once all are full,\n"
	"                     recording stops there (a recording-stopped finding)\n"
	"                     and PROG runs on\n"
	"      --block-of NAME\n"
	"                     PROG waits while NAME records into the raw directory\n"
	"                     (amptrace_torch.trace()'s blocks): the messages name\n"
	"                     NAME's block, not PROG\n"
	"  -h, --help         this text\n"
	"\n"
	"The trace is written while PROG runs; if PROG crashes or is killed, the\n"
	"trace still holds every event up to its death, and says how it died.\n"
	"The value checks are on unless --no-value-checks is given or\n"
	"AMP_VALUE_CHECKS is set (AMP_VALUE_CHECKS=0: off).  When PROG ends, the\n"
	"findings amptrace computes from the events (stale-cache,\n"
	"dtype-mismatch, ...; see `amptrace summary`) are appended to the trace\n"
	"as amp.diag events, each with its one-line fix.\n"
	"Open it at https://ui.perfetto.dev (Open trace file) or chrome://tracing.\n"
	"Exit status: PROG's; 128+N if signal N killed it; 125 PROG exited 0\n"
	"but recorded no op (\"no ops recorded: is PROG linked to libamp?\", or\n"
	"for python what went wrong: no script, no torch, no op); 1 PROG exited\n"
	"0 but the trace could not be written; 2 usage error; 127 PROG or\n"
	"ampview not found; 126 PROG not executable.\n";

struct output {
	int rank;               /* -1: the file named by -o */
	char *path;
	struct trace_writer writer;
	bool open;
	/* tried and said: a FIFO no process reads is not waited for again
	 * for each process that comes */
	bool open_failed;
	/* a write failed (a full disk): the file holds fewer events than
	 * the summary line counts, which says so */
	bool write_failed;
	size_t processes;
	/* The events written, kept decoded by the converter as it writes
	 * them: the findings' input, so the file is not read back. */
	struct trace kept;
	bool kept_ready;        /* trace_init succeeded */
	/* kept's index for the findings and the flows, brought up to date
	 * after every poll: built while the program runs, not after */
	struct trace_index index;
	/* the progress line's count of steps: kept's events seen so far,
	 * the steps the producers marked, else GradScaler updates and
	 * outermost autocast regions among them */
	size_t progress_seen;
	uint64_t steps, scaler_updates, outer_regions;
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
	/* the steps recorded in full (step_select.h), the size past which
	 * full detail stops (0: none), and whether the program was told */
	const char *steps;
	uint64_t max_size;
	bool detail_stop_sent;
	bool output_failed; /* an output could not be opened (said) */
	/* --block-of: PROG is a trace() block's waiter, the block's process
	 * this name (the messages' subject); NULL for a plain run */
	const char *block_of;
};

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
	/* what was recorded in full detail (--steps, --max-size) */
	struct trace_recording *recording =
		trace_alloc(strings, sizeof *recording);

	while (s->command[ncommand])
		ncommand++;
	if (recording)
		*recording = (struct trace_recording){
			.steps = trace_intern(strings, s->steps),
			.max_size = s->max_size,
		};
	return (struct trace_header){
		.generator = "amptrace " AMPTRACE_VERSION,
		.command = (const char **)s->command, .ncommand = ncommand,
		.rank = rank, .host = s->hostname,
		.monotonic_base_ns = s->mono_base, .flush = "event",
		.framework = p ? trace_intern(strings, p->framework) : NULL,
		.policy_table = p ? trace_intern(strings, p->policy_table)
				  : NULL,
		.recording = recording,
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
	if (o->open_failed)
		return false;
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
			output_strerror(errno));
		o->open_failed = true;
		s->output_failed = true;
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

	if (env && *env)
		return access(env, R_OK) == 0 ? env : NULL;
	if (!data_dir_find("", "", RECORDER_NAME, buf, size))
		return NULL;
	size_t n = strlen(buf);
	snprintf(buf + n, size - n, "/%s", RECORDER_NAME);
	return buf;
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

/* Whether an output cannot be written, the reason into `why`: checked
 * before PROG runs, so that a long run does not end without the trace,
 * graph or page asked for. */
static bool output_unwritable(const char *path, char *why, size_t size)
{
	const char *slash = strrchr(path, '/');
	char dir[PATH_MAX];
	struct stat st;

	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(why, size, "it is a directory");
		return true;
	}
	snprintf(dir, sizeof dir, "%.*s",
		 slash ? (int)(slash - path + (slash == path)) : 1,
		 slash ? path : ".");
	int found = stat(dir, &st);
	if (found != 0 && errno == ENOENT)
		snprintf(why, size, "its directory %s does not exist", dir);
	else if (found != 0)
		snprintf(why, size, "its directory %s: %s", dir, strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		snprintf(why, size, "%s is not a directory", dir);
	else if (access(dir, W_OK) != 0)
		snprintf(why, size, "its directory %s is not writable", dir);
	else
		return false;
	return true;
}

/* The child: preload the recorder, the signal state amptrace inherited,
 * exec.  An exec failure travels back through `report` (close-on-exec). */
static void exec_child(const struct run_state *s, const char *recorder,
		       const struct raw_dir *raw, int report)
{
	char **command = s->command;
	bool value_checks = s->value_checks;
	char max_size[24];
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
	setenv(RAW_ENV_DIR, raw->path, 1);
	if (*raw->spill)
		setenv(RAW_ENV_SPILL, raw->spill, 1);
	else
		unsetenv(RAW_ENV_SPILL);
	setenv(RAW_ENV_PID, pid, 1);
	snprintf(max_size, sizeof max_size, "%llu",
		 (unsigned long long)s->max_size);
	setenv(STEP_SELECT_ENV, s->steps, 1);
	setenv(STEP_MAX_SIZE_ENV, max_size, 1);
	/* libamp's value checks (fp16-overflow, cast-underflow findings):
	 * on unless the environment chose; --no-value-checks wins over it. */
	setenv("AMP_VALUE_CHECKS", value_checks ? "1" : "0", !value_checks);
	run_python_prepare(command);
	inherit_restore();
	execvp(command[0], command);
	int err = errno;
	if (write(report, &err, sizeof err) < 0)
		_exit(127);
	_exit(err == ENOENT ? 127 : 126);
}

/* Where the raw files went, when the user should know: a recorder that
 * stopped for want of room (its reason: ENOSPC, or EFBIG past the file
 * size limit), a full directory that spilled into the next. */
static void report_raw_dir(const struct raw_dir *raw, int stop_errno,
			   const char *prog, bool quiet)
{
	if (stop_errno == EFBIG)
		fprintf(stderr, "amptrace run: the raw files reached the file "
			"size limit (ulimit -f): recording stopped early (the "
			"trace's recording-stopped finding says where); %s ran "
			"on.  Raise the limit to record it all\n", prog);
	else if (stop_errno)
		fprintf(stderr, "amptrace run: the raw director%s %s%s%s ran "
			"out of space: recording stopped early (the trace's "
			"recording-stopped finding says where); %s ran on.  "
			"Give amptrace room with --raw-dir DIR or TMPDIR\n",
			*raw->spill ? "ies" : "y", raw->path,
			*raw->spill ? " and " : "", raw->spill, prog);
	else if (!quiet && raw_dir_spilled(raw))
		fprintf(stderr, "amptrace run: the raw directory %s filled up; "
			"the raw files went on in %s\n", raw->path, raw->spill);
}

/* The producer's framework of a process that attached (torch's first:
 * the bridge's), NULL when none did: the program was not recorded. */
static const char *attached_framework(const struct converter *cv)
{
	const char *framework = NULL;

	for (size_t i = 0; i < cv->nprocs; i++) {
		const char *f = cv->procs[i]->framework;
		if (f && !strncmp(f, "torch ", 6))
			return f;
		if (f && !framework)
			framework = f;
	}
	return framework;
}

/* What became of an output, after its path on the summary line. */
static const char *output_fate(const struct output *o)
{
	if (o->open_failed)
		return " (not written)";
	if (o->write_failed)
		return " (cut short: error writing it)";
	return "";
}

/* " -> t.json" or " -> t.rank0.json, t.rank1.json": the files written,
 * the processes without a rank first, then by rank, whatever order the
 * ranks attached in. */
static void print_outputs(const struct run_state *s)
{
	size_t order[s->noutputs ? s->noutputs : 1];

	for (size_t i = 0; i < s->noutputs; i++) {
		size_t j = i;
		for (; j > 0 && s->outputs[order[j - 1]]->rank >
				s->outputs[i]->rank; j--)
			order[j] = order[j - 1];
		order[j] = i;
	}
	for (size_t i = 0; i < s->noutputs; i++)
		fprintf(stderr, "%s%s%s", i ? ", " : " -> ",
			s->outputs[order[i]]->path,
			output_fate(s->outputs[order[i]]));
}

/* The summary line on stderr, and the reason when no op was recorded
 * (unless recording stopped: report_raw_dir says why); returns the
 * number of ops recorded. */
static uint64_t report_end(const struct run_state *s, const struct converter *cv,
			   const char *prog, int status, bool quiet,
			   bool stopped)
{
	uint64_t events = 0, in_flight = 0, threads = 0, ops = 0;
	size_t processes = 0;
	char signame[32];

	for (size_t i = 0; i < cv->nprocs; i++) {
		if (!cv->procs[i]->announced)
			continue;
		processes++;
		events += cv->procs[i]->events;
		ops += cv->procs[i]->ops + cv->procs[i]->aggregated_ops;
		in_flight += cv->procs[i]->in_flight_ops;
		threads += cv->procs[i]->nthreads;
	}
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		fprintf(stderr, "amptrace run: %s was killed by %s (%s)", prog,
			convert_signal_name(sig, signame, sizeof signame),
			strsignal(sig));
	} else if ((!quiet || ops == 0) && s->block_of) {
		fprintf(stderr, "amptrace run: %s ended", prog);
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
	print_outputs(s);
	fputc('\n', stderr);
	if (ops == 0 && !stopped && s->block_of)
		fprintf(stderr, "amptrace run: no ops recorded: %s ran no "
			"torch op\n", prog);
	else if (ops == 0 && !stopped) {
		char message[2 * PATH_MAX + 128];
		fprintf(stderr, "amptrace run: %s\n",
			run_no_ops_why(s->command, attached_framework(cv), message,
				       sizeof message));
	}
	return ops;
}

/* The ranks' traces merged into the -o file, when every process had a
 * rank; a process without one (a launcher that ran ops itself) has
 * written that file, and the ranks stay apart (said). */
static bool merge_ranks(const struct run_state *s, bool quiet)
{
	char *paths[s->noutputs ? s->noutputs : 1];
	int ranks[s->noutputs ? s->noutputs : 1];
	size_t n = 0;
	bool rankless = false;

	for (size_t i = 0; i < s->noutputs; i++) {
		if (s->outputs[i]->rank < 0)
			rankless = true;
		if (s->outputs[i]->rank < 0 || !s->outputs[i]->open)
			continue;
		paths[n] = s->outputs[i]->path;
		ranks[n++] = s->outputs[i]->rank;
	}
	if (rankless) {
		if (n > 0 && !quiet)
			run_ranks_say_apart(s->out, paths, ranks, n);
		return false;
	}
	return n > 0 && run_ranks_merge(s->out, paths, ranks, n, quiet) == 0;
}

/* The progress line while PROG runs (on a terminal): events recorded,
 * the traces' size, and the step: the steps its producers marked (else
 * GradScaler updates, else outermost autocast regions). */
static void draw_progress(struct run_state *s, struct progress *p)
{
	uint64_t events = 0, updates = 0, regions = 0, steps = 0;
	double bytes = 0;
	struct stat st;

	if (!progress_due(p))
		return;
	for (size_t i = 0; i < s->noutputs; i++) {
		struct output *o = s->outputs[i];
		events += o->writer.events;
		if (o->open && stat(o->path, &st) == 0)
			bytes += (double)st.st_size;
		for (; o->kept_ready && o->progress_seen < o->kept.nevents;
		     o->progress_seen++) {
			const struct trace_event *e = &o->kept.events[o->progress_seen];
			if (e->kind == TRACE_STEP && e->ph == 'X' &&
			    e->step.marker)
				o->steps++;
			else if (e->kind == TRACE_SCALER && e->scaler.what &&
				 !strcmp(e->scaler.what, "update"))
				o->scaler_updates++;
			else if (e->kind == TRACE_SCOPE_END && e->scope.depth == 1)
				o->outer_regions++;
		}
		steps += o->steps;
		updates += o->scaler_updates;
		regions += o->outer_regions;
	}
	progress_draw(p, "amptrace run: %llu events, %.1f MB, step %llu",
		      (unsigned long long)events, bytes / 1e6,
		      (unsigned long long)(steps     ? steps
					   : updates ? updates
						     : regions));
}

/* Full detail stops once the traces passed --max-size: the program's
 * producers see the file at their next step's end. */
static void limit_detail(struct run_state *s, const struct raw_dir *raw)
{
	uint64_t bytes = 0;
	char path[sizeof raw->path + 32];

	if (s->detail_stop_sent || !s->max_size)
		return;
	for (size_t i = 0; i < s->noutputs; i++)
		bytes += s->outputs[i]->writer.bytes;
	if (bytes < s->max_size)
		return;
	snprintf(path, sizeof path, "%s/" STEP_DETAIL_STOP_FILE, raw->path);
	int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	s->detail_stop_sent = true;
}

/* Says, once per process, that its full detail stopped for size. */
static void say_detail_stops(const struct converter *cv, struct progress *pr)
{
	for (size_t i = 0; i < cv->nprocs; i++) {
		struct convert_process *p = cv->procs[i];
		char limit[32];
		if (!p->detail_stopped || p->detail_stop_said)
			continue;
		p->detail_stop_said = true;
		step_size_text(p->detail_stop_limit, limit, sizeof limit);
		if (pr)
			progress_clear(pr);
		fprintf(stderr, "amptrace run: %s passed %s (--max-size) in "
			"process %ld: full detail stops at step %llu; every "
			"step goes on as per-step aggregates\n",
			p->detail_stop_measured, limit, p->pid,
			(unsigned long long)p->detail_stop_step);
	}
}

/* One line when steps were recorded as aggregates only: which were
 * kept in full, and how to choose. */
static void say_detail(const struct run_state *s, const struct converter *cv)
{
	/* the steps of the processes that marked some (a job's ranks), in
	 * all and of the first; whether each had the first's */
	uint64_t steps = 0, detail = 0, first_steps = 0, first_detail = 0;
	size_t stepping = 0;
	bool alike = true;
	struct step_select select;
	char which[128], error[160], where[64] = "";

	for (size_t i = 0; i < cv->nprocs; i++) {
		const struct convert_process *p = cv->procs[i];
		if (!p->steps)
			continue;
		if (!stepping++) {
			first_steps = p->steps;
			first_detail = p->detail_steps;
		}
		alike &= p->steps == first_steps &&
			 p->detail_steps == first_detail;
		steps += p->steps;
		detail += p->detail_steps;
	}
	if (stepping > 1 && alike) {
		steps = first_steps;
		detail = first_detail;
		snprintf(where, sizeof where, " in each of %zu processes",
			 stepping);
	} else if (stepping > 1) {
		snprintf(where, sizeof where, " of %zu processes", stepping);
	}
	if (detail == steps ||
	    step_select_parse(s->steps, &select, error, sizeof error) != 0)
		return;
	step_select_describe(&select, which, sizeof which);
	fprintf(stderr, "amptrace run: %llu of %llu steps%s in full detail "
		"(steps %s%s; --steps to choose), per-step aggregates for "
		"the others\n", (unsigned long long)detail,
		(unsigned long long)steps, where, which,
		strcmp(s->steps, STEP_SELECT_DEFAULT) ? "" : ", the default");
}

/* Whether o's kept trace holds every event of its file the findings
 * read: not when the converter could not keep one (out of memory). */
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
				       struct trace_gpu_timing *gpus,
				       struct trace_process_steps *steps)
{
	struct trace_trailer t = {
		.complete = true, .events = o->writer.events,
		.duration_ns = duration_ns, .exit = exit, .processes = ends,
	};

	for (size_t j = 0; j < cv->nprocs; j++)
		if (cv->procs[j]->writer == &o->writer) {
			convert_process_end(cv->procs[j], &ends[t.nprocesses],
					    &gpus[t.nprocesses],
					    &steps[t.nprocesses]);
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
	struct trace_process_steps *steps = calloc(cv->nprocs + 1,
						   sizeof *steps);

	if (!ends || !gpus || !steps)
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
							  &exit, ends, gpus, steps);
		if (trace_writer_close(&o->writer, &trailer) != 0) {
			fprintf(stderr, "amptrace run: error writing %s: %s%s\n",
				o->path, strerror(errno),
				errno == EFBIG ? " (the file size limit: ulimit -f)"
					       : "");
			o->write_failed = true;
			*failed = 1;
		}
	}
	free(ends);
	free(gpus);
	free(steps);
}

/* What `amptrace run` is asked to do besides recording. */
struct run_args {
	const char *svg, *report_html;
	const char *raw_bases[2];
	size_t nraw_bases;
	bool quiet, merge;
};

enum {
	OPTION_OUTPUT = 'o',
	OPTION_SVG = 256,
	OPTION_REPORT,
	OPTION_RAW_DIR,
	OPTION_NO_VALUE_CHECKS,
	OPTION_NO_MERGE,
	OPTION_STEPS,
	OPTION_MAX_SIZE,
	OPTION_BLOCK_OF,
};

static const struct option run_options[] = {
	{ "output", required_argument, NULL, OPTION_OUTPUT },
	{ "svg", required_argument, NULL, OPTION_SVG },
	{ "report", required_argument, NULL, OPTION_REPORT },
	{ "raw-dir", required_argument, NULL, OPTION_RAW_DIR },
	{ "quiet", no_argument, NULL, 'q' },
	{ "no-value-checks", no_argument, NULL, OPTION_NO_VALUE_CHECKS },
	{ "no-merge", no_argument, NULL, OPTION_NO_MERGE },
	{ "steps", required_argument, NULL, OPTION_STEPS },
	{ "max-size", required_argument, NULL, OPTION_MAX_SIZE },
	{ "block-of", required_argument, NULL, OPTION_BLOCK_OF },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The directory part of `path` ("." when none), into buf. */
static const char *directory_of(const char *path, char *buf, size_t size)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return ".";
	snprintf(buf, size, "%.*s", (int)(slash - path + 1), path);
	return buf;
}

/* What an output name leads to: "-" is standard output. */
static int output_target(const char *name, struct stat *st)
{
	return strcmp(name, "-") ? stat(name, st) : fstat(STDOUT_FILENO, st);
}

/* Whether two output names lead to one file, there yet or not: by inode
 * (a pipe, a FIFO, a regular file; not a character device, /dev/null,
 * which takes any number of writers), else by the same name in the same
 * directory (./t.json and t.json). */
static bool same_output(const char *a, const char *b)
{
	char dir_a[PATH_MAX], dir_b[PATH_MAX];
	const char *base_a = strrchr(a, '/'), *base_b = strrchr(b, '/');
	struct stat st_a, st_b;

	if (output_target(a, &st_a) == 0 && output_target(b, &st_b) == 0)
		return st_a.st_dev == st_b.st_dev && st_a.st_ino == st_b.st_ino &&
		       !S_ISCHR(st_a.st_mode);
	if (!strcmp(a, b))
		return true;
	if (!strcmp(a, "-") || !strcmp(b, "-"))
		return false; /* standard output is there: the other is not */
	if (strcmp(base_a ? base_a + 1 : a, base_b ? base_b + 1 : b) != 0)
		return false;
	return stat(directory_of(a, dir_a, sizeof dir_a), &st_a) == 0 &&
	       stat(directory_of(b, dir_b, sizeof dir_b), &st_b) == 0 &&
	       st_a.st_dev == st_b.st_dev && st_a.st_ino == st_b.st_ino;
}

/* Whether an output would be written over the program, a file among its
 * arguments (its script, its data) or another output; said when so. */
static bool outputs_clash(const struct run_state *s,
			  const struct run_args *args)
{
	const char *outputs[] = { s->out, args->svg, args->report_html };
	const char *options[] = { "-o", "--svg", "--report" };
	size_t ninputs = 0;

	while (s->command[ninputs])
		ninputs++;
	for (size_t i = 0; i < 3; i++) {
		if (!outputs[i])
			continue;
		if (output_refuse_input("amptrace run", outputs[i],
					(const char *const *)s->command,
					ninputs))
			return true;
		for (size_t j = 0; j < i; j++) {
			if (!outputs[j] || !same_output(outputs[i], outputs[j]))
				continue;
			fprintf(stderr, "amptrace run: %s %s and %s %s are one "
				"file: name two\n", options[j], outputs[j],
				options[i], outputs[i]);
			return true;
		}
	}
	return false;
}

/* Whether an output cannot be written (standard output, "-", can);
 * said, with the option that names it, when so. */
static bool outputs_unwritable(const struct run_state *s,
			       const struct run_args *args)
{
	const char *outputs[] = { s->out, args->svg, args->report_html };
	const char *options[] = { "-o", "--svg", "--report" };
	char why[PATH_MAX + 64];

	for (size_t i = 0; i < 3; i++) {
		if (!outputs[i] || !strcmp(outputs[i], "-") ||
		    !output_unwritable(outputs[i], why, sizeof why))
			continue;
		fprintf(stderr, "amptrace run: cannot write %s (%s): %s; "
			"nothing was run\n", outputs[i], options[i], why);
		return true;
	}
	return false;
}

/* The options up to PROG ('+': PROG's own options are its), then PROG
 * and its arguments into s->command.  Returns -1 to go on, else the
 * exit status. */
static int parse_args(int argc, char **argv, struct run_state *s,
		      struct run_args *args)
{
	struct command_line cl = { "amptrace run", "+ho:q", run_options,
				   argc, argv };
	struct step_select select;
	char error[160];
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case OPTION_OUTPUT:
			s->out = optarg;
			break;
		case OPTION_SVG:
			args->svg = optarg;
			break;
		case OPTION_REPORT:
			args->report_html = optarg;
			break;
		case OPTION_RAW_DIR:
			args->raw_bases[args->nraw_bases++ % 2] = optarg;
			break;
		case 'q':
			args->quiet = true;
			break;
		case OPTION_NO_VALUE_CHECKS:
			s->value_checks = false;
			break;
		case OPTION_NO_MERGE:
			args->merge = false;
			break;
		case OPTION_STEPS:
			s->steps = optarg;
			if (step_select_parse(optarg, &select, error,
					      sizeof error) != 0)
				return command_line_error(&cl, "--steps %s",
							  error);
			break;
		case OPTION_MAX_SIZE:
			if (step_size_parse(optarg, &s->max_size, error,
					    sizeof error) != 0)
				return command_line_error(&cl, "--max-size %s",
							  error);
			break;
		case OPTION_BLOCK_OF:
			s->block_of = optarg;
			break;
		case 'h':
			fputs(run_usage, stdout);
			return 0;
		default:
			return COMMAND_LINE_BAD_USAGE;
		}
	}
	if (optind >= argc)
		return command_line_error(&cl, "no program given");
	if (!*s->out)
		return command_line_error(&cl, "empty output file name");
	if (!strcmp(s->out, "-"))
		return command_line_error(&cl, "-o -: the program's own output "
					  "goes to standard output; name a file");
	if (args->nraw_bases > 2)
		return command_line_error(&cl, "--raw-dir given %zu times: one "
					  "directory, and one to go on in once "
					  "it is full", args->nraw_bases);
	s->command = argv + optind;
	if (outputs_clash(s, args))
		return 2;
	return outputs_unwritable(s, args) ? 2 : -1;
}

/* The recorder to preload, into buf; NULL when there is none that can
 * go in LD_PRELOAD (said). */
static const char *preloadable_recorder(char *buf, size_t size)
{
	const char *recorder = find_recorder(buf, size);

	if (!recorder) {
		fprintf(stderr, "amptrace run: %s not found (next to amptrace, "
			"in %s, or $AMPTRACE_RECORDER)\n", RECORDER_NAME,
			*buf ? buf : "its install directory");
		return NULL;
	}
	if (strpbrk(recorder, " :")) {
		fprintf(stderr, "amptrace run: the recorder path '%s' contains "
			"a space or ':' and cannot go in LD_PRELOAD\n", recorder);
		return NULL;
	}
	return recorder;
}

/* The program started, and how it goes (run_program's). */
struct program {
	pid_t pid;
	int report[2];    /* exec's errno comes back through it */
	int exec_errno;   /* its failure to start, or 0 */
	bool niced;       /* this process runs nicer while it runs */
	int nice_before;
};

/* Forks PROG with the recorder preloaded.  Returns 0, or 2 (said). */
static int start_program(struct run_state *s, const char *recorder,
			 struct raw_dir *raw, struct program *p)
{
	if (pipe2(p->report, O_CLOEXEC) != 0) {
		fprintf(stderr, "amptrace run: pipe: %s\n", strerror(errno));
		return 2;
	}
	/* Like time(1): the terminal's ^C reaches the program, which decides;
	 * we stay to finish the trace.  The same signals sent to us alone are
	 * passed on (inherit.h). */
	inherit_forward_signals();

	/* SIGCHLD is blocked so that the poll below can wait for it: the end
	 * of the program wakes us at once (the child restores the inherited
	 * mask).  The forwarded signals are blocked across the fork: until
	 * the child has its inherited dispositions back, one sent to it
	 * waits (amptrace passes on those it gets once the child is known). */
	sigset_t chld, forwarded, running_mask;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigemptyset(&forwarded);
	sigaddset(&forwarded, SIGINT);
	sigaddset(&forwarded, SIGQUIT);
	sigaddset(&forwarded, SIGTERM);
	sigaddset(&forwarded, SIGHUP);
	sigprocmask(SIG_BLOCK, &chld, NULL);
	sigprocmask(SIG_BLOCK, &forwarded, &running_mask);
	fflush(NULL);
	s->mono_base = clock_ns(CLOCK_MONOTONIC);
	s->real_base = clock_ns(CLOCK_REALTIME);
	p->pid = fork();
	if (p->pid < 0) {
		fprintf(stderr, "amptrace run: fork: %s\n", strerror(errno));
		return 2;
	}
	if (p->pid == 0) {
		close(p->report[0]);
		exec_child(s, recorder, raw, p->report[1]);
	}
	inherit_set_program(p->pid);
	sigprocmask(SIG_SETMASK, &running_mask, NULL);
	/* Only this process: the program was forked at its own priority. */
	errno = 0;
	p->nice_before = getpriority(PRIO_PROCESS, 0);
	p->niced = errno == 0 &&
		   setpriority(PRIO_PROCESS, 0,
			       p->nice_before + CONVERTER_NICE) == 0;
	close(p->report[1]);
	ssize_t got = read(p->report[0], &p->exec_errno, sizeof p->exec_errno);
	close(p->report[0]);
	if (got != (ssize_t)sizeof p->exec_errno)
		p->exec_errno = 0;
	return 0;
}

/* Whether PROG's standard output is the terminal the progress line is
 * drawn on: its lines (a loss printed each step) would be written over
 * the progress line, whose tail then stays after each of them on the
 * screen ("step 5 lossn: 175 events, 0.1 MB, step 5"). */
static bool output_shares_terminal(void)
{
	struct stat out, err;

	return isatty(STDOUT_FILENO) && isatty(STDERR_FILENO) &&
	       fstat(STDOUT_FILENO, &out) == 0 &&
	       fstat(STDERR_FILENO, &err) == 0 && out.st_rdev == err.st_rdev;
}

/* Converts the program's records while it runs; its wait status, and
 * when it ended into *end_ns. */
static int follow_program(struct run_state *s, struct converter *cv,
			  const struct raw_dir *raw, struct program *p,
			  bool quiet, uint64_t *end_ns)
{
	struct progress progress;
	sigset_t chld;
	int status = 0;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	progress_init(&progress, quiet || output_shares_terminal());
	for (;;) {
		pid_t done = waitpid(p->pid, &status, WNOHANG);
		if (done == p->pid)
			break;
		if (done < 0 && errno != EINTR) {
			status = 0;
			break;
		}
		size_t converted = convert_poll(cv);
		for (size_t k = 0; k < s->noutputs; k++) {
			trace_writer_flush(&s->outputs[k]->writer);
			trace_index_update(&s->outputs[k]->index);
		}
		limit_detail(s, raw);
		say_detail_stops(cv, &progress);
		draw_progress(s, &progress);
		/* A busy program is followed every BUSY_POLL_INTERVAL (in
		 * batches: polling without a pause took a core from the
		 * program), an idle one every POLL_INTERVAL; its end wakes us
		 * at once. */
		struct timespec pause = {
			0, converted ? BUSY_POLL_INTERVAL_NS : POLL_INTERVAL_NS
		};
		sigtimedwait(&chld, NULL, &pause);
	}
	*end_ns = clock_ns(CLOCK_MONOTONIC);
	progress_clear(&progress);
	/* What is left (the records not converted yet, the findings, the
	 * flows) is all the user waits for now: back to amptrace's own
	 * priority where the system lets a process raise its priority again
	 * (root, RLIMIT_NICE), else on at the lower one. */
	if (p->niced)
		setpriority(PRIO_PROCESS, 0, p->nice_before);
	inherit_set_program(0);
	sigprocmask(SIG_UNBLOCK, &chld, NULL);
	return status;
}

/* With ranks, -o names their merge (run_ranks.c): the graph and the
 * page are drawn from it, else from each output.  Returns the first
 * failure's status, or `code`. */
static int render_outputs(const struct run_state *s, const struct run_args *args,
			  int code)
{
	struct output merged_output = { .rank = -1, .path = (char *)s->out };
	struct output *merged_list[] = { &merged_output };
	bool merged = args->merge && merge_ranks(s, args->quiet);
	struct output *const *render = merged ? merged_list : s->outputs;
	size_t nrender = merged ? 1 : s->noutputs;

	if (args->svg) {
		for (size_t k = 0; k < nrender; k++) {
			char *svg_path = render[k]->rank >= 0
						 ? rank_path(args->svg, render[k]->rank)
						 : strdup(args->svg);
			int r = render_svg(render[k]->path, svg_path);
			free(svg_path);
			if (r != 0 && code == 0)
				code = r;
			if (r == 127)
				break;
		}
	}
	for (size_t k = 0; args->report_html && k < nrender; k++) {
		char *html = render[k]->rank >= 0
				     ? rank_path(args->report_html, render[k]->rank)
				     : strdup(args->report_html);
		int r = html ? report_write(render[k]->path, html, true,
					    "amptrace run")
			     : 1;
		free(html);
		if (r != 0 && code == 0)
			code = r;
	}
	return code;
}

static void free_outputs(struct run_state *s)
{
	for (size_t k = 0; k < s->noutputs; k++) {
		trace_index_free(&s->outputs[k]->index);
		trace_free(&s->outputs[k]->kept);
		free(s->outputs[k]->path);
		free(s->outputs[k]);
	}
	free(s->outputs);
}

/* Runs PROG under the recorder, converting as it goes, then completes
 * the traces (findings, flows) and says what was recorded.  False when
 * PROG could not be run at all; *code is the exit status (PROG's, but
 * for recording nothing), *failed set when a trace could not be
 * written. */
static bool record(struct run_state *s, const struct run_args *args,
		   const char *recorder, int *code, int *failed)
{
	struct raw_dir raw;
	struct program p = { 0 };
	struct converter cv;
	uint64_t end_ns;

	*code = 2;
	if (raw_dir_create(&raw, args->raw_bases, args->nraw_bases) != 0)
		return false;
	raw_dir_guard(&raw);
	gethostname(s->hostname, sizeof s->hostname - 1);
	if (start_program(s, recorder, &raw, &p) != 0) {
		raw_dir_remove(&raw);
		return false;
	}
	convert_init(&cv, raw.path, s->mono_base, writer_for, s);
	cv.spill_dir = *raw.spill ? raw.spill : NULL;
	cv.trace_for = trace_for;
	/* the kept trace is the findings' and the flows' (which read ops
	 * and casts alone): it keeps the events the findings read, and of a
	 * step's aggregates the rows they read */
	cv.trim_kept_aggregate = findings_aggregate_trim;
	cv.keeps_event = findings_event_read;
	int status = follow_program(s, &cv, &raw, &p, args->quiet, &end_ns);
	if (p.exec_errno) {
		fprintf(stderr, "amptrace run: cannot run %s: %s\n",
			s->command[0], strerror(p.exec_errno));
		convert_free(&cv);
		raw_dir_remove(&raw);
		*code = p.exec_errno == ENOENT ? 127 : 126;
		return false;
	}
	convert_finish(&cv, (long)p.pid, status, end_ns);
	if (s->noutputs == 0) {
		/* Nothing recorded: still leave a trace that loads. */
		struct output *o = output_for_rank(s, -1);
		open_output(s, o, NULL);
	}
	finish_outputs(s, &cv, status, end_ns, failed);
	int stop_errno = raw_dir_stop_errno(&raw);
	say_detail_stops(&cv, NULL);
	char block[256];
	const char *prog = s->block_of ? block : s->command[0];
	if (s->block_of)
		snprintf(block, sizeof block, "the trace() block of %s",
			 s->block_of);
	uint64_t ops = report_end(s, &cv, prog, status,
				  args->quiet && !stop_errno, stop_errno != 0);
	if (!args->quiet)
		say_detail(s, &cv);
	report_raw_dir(&raw, stop_errno, prog, args->quiet);
	convert_free(&cv);
	raw_dir_remove(&raw);

	*code = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
				    : WEXITSTATUS(status);
	/* A run that recorded no op traced the wrong program (or one not
	 * linked to libamp, or not importing torch): a CI step should not go
	 * green on it.  A failing program's own status says more. */
	if (ops == 0 && *code == 0)
		*code = RUN_NO_OPS_EXIT;
	return true;
}

/* The steps and size of full detail the environment asks for, when
 * valid (a program run by amptrace inside another keeps its bounds). */
static void recording_defaults(struct run_state *s)
{
	struct step_select select;
	char error[160];
	const char *steps = getenv(STEP_SELECT_ENV);
	const char *size = getenv(STEP_MAX_SIZE_ENV);

	s->steps = steps && step_select_parse(steps, &select, error,
					      sizeof error) == 0
			   ? steps : STEP_SELECT_DEFAULT;
	if (!size || step_size_parse(size, &s->max_size, error,
				     sizeof error) != 0)
		s->max_size = STEP_MAX_SIZE_DEFAULT;
}

int amptrace_run(int argc, char **argv)
{
	struct run_state s = { .out = "trace.json", .value_checks = true };
	struct run_args args = { .merge = true };
	char recorder_buf[PATH_MAX + 64] = "";
	int code, failed = 0;

	inherit_hold_closed_std_fds();
	recording_defaults(&s);
	code = parse_args(argc, argv, &s, &args);
	if (code >= 0)
		return code;
	const char *recorder = preloadable_recorder(recorder_buf,
						    sizeof recorder_buf);
	if (!recorder)
		return 2;
	/* nothing to render from a trace that was not written */
	if (record(&s, &args, recorder, &code, &failed) && !failed &&
	    !s.output_failed)
		code = render_outputs(&s, &args, code);
	free_outputs(&s);
	if ((failed || s.output_failed) && code == 0)
		code = 1;
	return code;
}
