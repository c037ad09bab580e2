/* Writes a trace file incrementally: the header when opened, one event per
 * line as they come, the trailer ("amptraceEnd") when closed.  Flushed
 * files are valid JSON up to their last line, which is what makes a trace
 * whose writer was killed repairable (FORMAT.md, "Truncated traces"). */
#ifndef AMPTRACE_TRACE_WRITER_H
#define AMPTRACE_TRACE_WRITER_H

#include "output_file.h"
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
	struct output_file whole; /* trace_writer_open_whole's file */
};

/* Creates `path` ("-": standard output) and writes the header, `h` with
 * the format this writer writes (TRACE_FORMAT_VERSION), and `base_ns`,
 * the wall-clock time of ts 0.  Returns 0 or -1 (errno set). */
int trace_writer_open(struct trace_writer *w, const char *path,
		      const struct trace_header *h, uint64_t base_ns);
/* The same for a trace of no use half-written (merge's): a regular file
 * is written next to `path` and replaces it when closed whole
 * (output_file.h); abandoned, it leaves what was there. */
int trace_writer_open_whole(struct trace_writer *w, const char *path,
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
 * (bad input found half-way): a file opened whole stays as it was; one
 * written through (standard output) reads as truncated, rather than as
 * a whole trace. */
void trace_writer_abandon(struct trace_writer *w);

#endif /* AMPTRACE_TRACE_WRITER_H */
