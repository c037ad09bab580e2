/* The converter's cost per event, apart from the traced program: the mlp
 * sample is recorded once (the recorder preloaded, as `amptrace run`
 * does) into a raw directory kept as a template; each round converts a
 * fresh copy of it into a trace file, keeping the events in memory as
 * `amptrace run` does, then appends what run appends after the program
 * ended (findings, flows: tail_append) and closes the file.
 *   bench_convert                 the timing (median of the rounds)
 *   bench_convert --out FILE      one conversion into FILE, no timing:
 *                                 two builds' outputs can be compared
 *   bench_convert --raw DIR       use (a copy of) DIR instead of recording
 * Under `valgrind --tool=callgrind` with --rounds 1 it gives instruction
 * counts, steadier than time on a busy machine. */
#include "convert.h"
#include "tail.h"
#include "trace.h"
#include "trace_index.h"
#include "trace_writer.h"
#include "../test_dirs.h"
#include "../traced.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct sink {
	struct trace_writer writer;
	struct trace kept;
	const char *path;
	bool keep;
};

static struct trace_writer *writer_for(void *ctx,
				       const struct convert_process *p)
{
	struct sink *s = ctx;

	(void)p;
	if (trace_writer_open(&s->writer, s->path,
			      &(struct trace_header){ .rank = -1 }, 0) != 0) {
		perror(s->path);
		exit(1);
	}
	return &s->writer;
}

static struct trace *trace_for(void *ctx, const struct convert_process *p)
{
	struct sink *s = ctx;

	(void)p;
	return s->keep ? &s->kept : NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* argv with the recorder preloaded, as amptrace run starts it, writing
 * its raw files into `raw`; the exit status. */
static int run(char *const argv[], const char *raw)
{
	char preload[PATH_MAX + 16], raw_dir[PATH_MAX + 24];
	const char *const env[] = { preload, raw_dir, NULL };

	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", RECORDER_PATH);
	snprintf(raw_dir, sizeof raw_dir, "AMPTRACE_RAW_DIR=%s", raw);
	return traced_finish(traced_start(argv, "/dev/null", NULL, env), NULL);
}

static void copy_dir(const char *from, const char *to)
{
	char command[1024];

	remove_tree(to);
	snprintf(command, sizeof command, "cp -r '%s' '%s'", from, to);
	if (system(command) != 0) {
		fprintf(stderr, "bench_convert: %s failed\n", command);
		exit(1);
	}
}

/* One conversion of `raw` into `out` (a file created anew, as run's
 * are); the seconds it took to convert the records and then to append
 * the tail and close the file. */
static size_t convert(const char *raw, const char *out, double *convert_s,
		      double *tail_s)
{
	struct sink sink = { .path = out, .keep = true };
	struct converter cv;
	struct trace_index ix;

	unlink(out);
	if (trace_init(&sink.kept, out) != 0)
		exit(1);
	trace_index_init(&sink.kept, &ix);
	double begin = now_s();
	convert_init(&cv, raw, 0, writer_for, &sink);
	cv.trace_for = trace_for;
	/* run's loop: a poll, then the index of what it kept */
	while (convert_poll(&cv))
		trace_index_update(&ix);
	convert_finish(&cv, -1, 0, 0);
	double middle = now_s();
	size_t events = cv.nprocs ? cv.procs[0]->events : 0;
	if (cv.nprocs)
		tail_append(&sink.writer, &sink.kept, &ix, 0);
	if (cv.nprocs && trace_writer_close(&sink.writer,
					       &(struct trace_trailer){ 0 }) != 0) {
		fprintf(stderr, "bench_convert: error writing %s\n", out);
		exit(1);
	}
	*tail_s = now_s() - middle;
	*convert_s = middle - begin;
	convert_free(&cv);
	trace_index_free(&ix);
	trace_free(&sink.kept);
	return events;
}

static int compare_doubles(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const char *out = NULL, *raw = NULL;
	int rounds = 5;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--out"))
			out = argv[i + 1];
		else if (!strcmp(argv[i], "--raw"))
			raw = argv[i + 1];
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
	}
	char template[] = "/dev/shm/amptrace-bench-convert-XXXXXX";
	char work[sizeof template + 8];
	if (!mkdtemp(template))
		return 1;
	snprintf(work, sizeof work, "%s.work", template);
	if (raw) {
		copy_dir(raw, work);
		remove_tree(template);
		rename(work, template);
	} else {
		char *mlp[] = { MLP_PATH, "--batch", "8", "--hidden", "32",
				"--layers", "4", "--steps", "300", NULL };
		if (run(mlp, template) != 0) {
			fprintf(stderr, "bench_convert: mlp failed\n");
			return 1;
		}
	}
	double convert_s, tail_s;
	if (out) {
		copy_dir(template, work);
		convert(work, out, &convert_s, &tail_s);
	} else {
		char trace[] = "/dev/shm/amptrace-bench-convert.json";
		double c[64], t[64];
		size_t events = 0;
		if (rounds < 1 || rounds > 64)
			rounds = 5;
		for (int i = 0; i < rounds; i++) {
			copy_dir(template, work);
			events = convert(work, trace, &c[i], &t[i]);
		}
		unlink(trace);
		qsort(c, (size_t)rounds, sizeof *c, compare_doubles);
		qsort(t, (size_t)rounds, sizeof *t, compare_doubles);
		printf("converter: %zu events (%s), median of %d: convert %.0f "
		       "ns per event, findings + flows + close %.0f ns per "
		       "event\n", events, raw ? raw : "mlp 8/32 x 300 steps",
		       rounds, c[rounds / 2] * 1e9 / (double)events,
		       t[rounds / 2] * 1e9 / (double)events);
	}
	remove_tree(work);
	remove_tree(template);
	return 0;
}
