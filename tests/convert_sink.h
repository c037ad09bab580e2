/* The converter run in a test: a producer's raw directory converted into
 * a trace file, its events also kept in memory (the way amptrace run
 * keeps them for its summary).  Check's ck_assert on every step. */
#ifndef AMP_TEST_CONVERT_SINK_H
#define AMP_TEST_CONVERT_SINK_H

#include "convert.h"
#include "trace.h"
#include "trace_writer.h"

#include <check.h>
#include <stdint.h>

struct sink {
	struct trace_writer writer;
	struct trace kept;   /* every event, as the converter made it */
	const char *path;    /* the trace file written */
};

static struct trace_writer *sink_writer_for(void *ctx,
					    const struct convert_process *p)
{
	struct sink *s = ctx;

	(void)p;
	ck_assert_int_eq(trace_writer_open(&s->writer, s->path,
					   &(struct trace_header){ .rank = -1 },
					   0),
			 0);
	return &s->writer;
}

static struct trace *sink_trace_for(void *ctx, const struct convert_process *p)
{
	(void)p;
	return &((struct sink *)ctx)->kept;
}

/* Converts what the producers left in `raw` into s->path and s->kept, as
 * if the run began at base_ns and ended at end_ns with no process its
 * child (a process without an exit mark "died"). */
static void sink_convert(struct sink *s, const char *raw, uint64_t base_ns,
			 uint64_t end_ns)
{
	struct converter cv;

	ck_assert_int_eq(trace_init(&s->kept, s->path), 0);
	convert_init(&cv, raw, base_ns, sink_writer_for, s);
	cv.trace_for = sink_trace_for;
	convert_finish(&cv, -1, 0, end_ns);
	ck_assert_int_eq(trace_writer_close(&s->writer,
					    &(struct trace_trailer){ 0 }),
			 0);
	convert_free(&cv);
}

#endif
