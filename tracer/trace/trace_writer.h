/* Writes a trace file incrementally: the header when opened, one event per
 * line as they come, the trailer ("amptraceEnd") when closed.  Flushed
 * files are valid JSON up to their last line, which is what makes a trace
 * whose writer was killed repairable (FORMAT.md, "Truncated traces"). */
#ifndef AMPTRACE_TRACE_WRITER_H
#define AMPTRACE_TRACE_WRITER_H

#include "trace_event.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* The format version written in every trace (FORMAT.md). */
#define TRACE_FORMAT_VERSION "1.4"
#define TRACE_FORMAT_MAJOR 1

struct trace_writer {
	FILE *f;   /* unbuffered: events wait in buf */
	char *buf; /* large, so a busy trace costs few write()s */
	size_t used;
	char *path;
	uint64_t events;
	uint64_t bytes;  /* of events written (the header not counted) */
	bool failed;
};

/* Creates `path` ("-": standard output) and writes the header, `h` with
 * the format this writer writes (TRACE_FORMAT_VERSION), and `base_ns`,
 * the wall-clock time of ts 0.  Returns 0 or -1 (errno set). */
int trace_writer_open(struct trace_writer *w, const char *path,
		      const struct trace_header *h, uint64_t base_ns);
/* Appends one event (a JSON object's text). */
void trace_writer_event(struct trace_writer *w, const char *json, size_t len);
/* Appends `count` events at once: `text` is their JSON objects joined
 * by ",\n" (as the file holds them). */
void trace_writer_events(struct trace_writer *w, const char *text, size_t len,
			 uint64_t count);
/* Hands what was written to the kernel. */
void trace_writer_flush(struct trace_writer *w);
/* Writes the trailer and closes.  Returns 0, or -1 when anything failed
 * since open. */
int trace_writer_close(struct trace_writer *w, const struct trace_trailer *t);
/* Closes without the trailer, when what was written cannot be finished
 * (bad input found half-way): a reader then says the trace is truncated,
 * rather than take it for a whole one. */
void trace_writer_abandon(struct trace_writer *w);

#endif /* AMPTRACE_TRACE_WRITER_H */
