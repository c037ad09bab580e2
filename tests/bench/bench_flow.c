/* What the flow events (tracer/analysis/flow.c) add to the end of `amptrace
 * run`: their time (flows and writing them), measured against the findings that
 * `amptrace run` computes at the same moment from the same kept trace (the
 * anchor, measured in the same run, interleaved, medians of
 * 9), and their share of the trace's events and bytes.  Target: flows
 * cost at most 1.5x the findings (`amptrace run` keeps one index for
 * both; flows write two lines per arrow, the findings a few lines; it
 * computes the two at once, on two threads: this times them apart).
 * The trace is the mlp sample's bigger run (--batch 64 --hidden 256
 * --layers 4 --steps 100) recorded here. */
#include "findings.h"
#include "flow.h"
#include "trace.h"
#include "../traced.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPEATS 9

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
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

static double time_findings(const struct trace *t)
{
	struct findings f;
	double start = now();

	if (findings_compute(t, &f) != 0) {
		fprintf(stderr, "bench_flow: findings failed\n");
		exit(1);
	}
	double seconds = now() - start;
	findings_free(&f);
	return seconds;
}

/* What `amptrace run` adds for the flows: they share the findings'
 * index (and the trace's writer, open already), so flow_build and
 * writing them out (to /dev/null). */
static double time_flows(const struct trace_index *ix, struct trace_writer *w,
			 size_t *count)
{
	struct trace_flows flows;
	double start = now();

	if (flow_build(ix, &flows) != 0) {
		fprintf(stderr, "bench_flow: out of memory\n");
		exit(1);
	}
	flow_write(&flows, w, 1);
	double seconds = now() - start;
	*count = flows.count;
	flow_free(&flows);
	return seconds;
}

int main(void)
{
	char dir[] = "/tmp/bench_flow_XXXXXX";
	char path[64], why[1024];
	const char *const mlp[] = { MLP_PATH, "--batch", "64", "--hidden", "256",
				    "--layers", "4", "--steps", "100", NULL };
	const struct traced how = { .trace = path, .out = "/dev/null",
				    .err = "/dev/null" };
	struct trace t;

	if (!mkdtemp(dir))
		return 1;
	snprintf(path, sizeof path, "%s/mlp.json", dir);
	if (traced_load(&how, mlp, &t, why, sizeof why) != 0) {
		fprintf(stderr, "bench_flow: %s\n", why);
		return 1;
	}
	/* the flow lines' bytes, against the file's */
	size_t flow_events = 0, ops = t.counts[TRACE_OP], count = 0;
	size_t bytes = 0, flow_bytes = 0, cap = 0;
	char *line = NULL;
	ssize_t n;
	FILE *f = fopen(path, "r");
	while (f && (n = getline(&line, &cap, f)) > 0) {
		bytes += (size_t)n;
		if (strstr(line, "\"cat\":\"amp.flow\"")) {
			flow_bytes += (size_t)n;
			flow_events++;
		}
	}
	free(line);
	if (f)
		fclose(f);

	struct trace_index ix;
	struct trace_writer w;
	if (trace_index_build(&t, &ix) != 0 ||
	    trace_writer_open(&w, "/dev/null",
			      &(struct trace_header){ .rank = -1 }, 0) != 0) {
		fprintf(stderr, "bench_flow: out of memory\n");
		return 1;
	}
	double findings[REPEATS], flows[REPEATS], ratio[REPEATS];
	for (int r = 0; r < REPEATS; r++) {
		findings[r] = time_findings(&t);
		flows[r] = time_flows(&ix, &w, &count);
		ratio[r] = flows[r] / findings[r];
	}
	trace_index_free(&ix);
	trace_writer_close(&w, &(struct trace_trailer){ 0 });
	printf("trace: %zu events, %zu ops, %zu flows; flow events %.1f%% of "
	       "the events, %.1f%% of the %.1f MiB\n",
	       t.nevents, ops, count,
	       100.0 * (double)flow_events / (double)t.nevents,
	       100.0 * (double)flow_bytes / (double)bytes,
	       (double)bytes / (1 << 20));
	printf("findings (anchor): %.1f ms  flows: %.1f ms  flows / findings: "
	       "%.2fx (median of %d, interleaved; target <= 1.5x)\n",
	       1e3 * median(findings, REPEATS), 1e3 * median(flows, REPEATS),
	       median(ratio, REPEATS), REPEATS);
	trace_free(&t);
	unlink(path);
	rmdir(dir);
	return 0;
}
