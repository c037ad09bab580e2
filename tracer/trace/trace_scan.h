/* Walks a trace file's JSON without holding it as one tree: each element
 * of "traceEvents" is parsed (cJSON) and handed over on its own, with the
 * line it starts on, so a trace of millions of events needs memory for
 * one event at a time and errors can name a line.  trace_scan_file reads
 * the file through a window of a few MiB that slides forward, never the
 * whole file: a trace of any size (a killed 10 GB one too) is walked in
 * the memory of its largest event.
 *
 * Truncation: a trace whose writer was killed ends in the middle of the
 * events array (FORMAT.md, "Truncated traces").  When the file carries
 * amptrace's header (an "amptrace" key before "traceEvents") the scan
 * stops at the last complete event and reports `truncated`; any other file
 * that ends early is an error. */
#ifndef AMPTRACE_TRACE_SCAN_H
#define AMPTRACE_TRACE_SCAN_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct trace_error {
	char message[1024]; /* "file:line:col: what" */
};

/* Formats err->message (printf style).  Returns -1 for `return`. */
int trace_error_set(struct trace_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

struct trace_scan_handlers {
	void *ctx;
	/* A top-level key other than traceEvents (value owned by the scan:
	 * detach it to keep it).  Return 0, or -1 after trace_error_set. */
	int (*top)(void *ctx, const char *key, cJSON *value, size_t line);
	/* One element of traceEvents.  Same return convention.  NULL: the
	 * events are only counted (and not checked beyond their brackets). */
	int (*event)(void *ctx, cJSON *event, size_t index, size_t line);
	/* For a reader that reads a file twice and must read the same text
	 * both times (merge): stop_at > 0 reads the input up to that byte
	 * only, as if it ended there (a trace still being written, read
	 * again as far as the first read went); digest fills
	 * result->digest. */
	size_t stop_at;
	bool digest;
	/* NULL, or a string an event's text must hold for `event` to see
	 * it: the others are counted (result->skipped) and not parsed, for
	 * a reader after a few events a word in their text tells (merge's
	 * process_name events, FORMAT.md §6).  Their text as written: an
	 * event that spells the word with \u escapes is skipped. */
	const char *only_with;
};

struct trace_scan_result {
	bool array_form;     /* the file is a bare array of events */
	bool amptrace;       /* an "amptrace" header key came first */
	bool has_events;     /* a traceEvents array was found */
	bool truncated;      /* ended early, repaired */
	size_t truncated_line;
	size_t events;
	size_t skipped;      /* of them, not parsed: h->only_with */
	/* the offset just past the last thing read whole (an event, a
	 * top-level value, traceEvents' '['): where a truncated input reads
	 * the same again */
	size_t whole_end;
	/* h->digest: a hash of the keys and values read whole, in order */
	uint64_t digest;
};

/* Reads a whole file.  Returns NULL (err set) on failure; `*len` is the
 * size.  The buffer is NUL-terminated. */
char *trace_read_file(const char *path, size_t *len, struct trace_error *err);

/* Called now and then while events are scanned (every few thousand):
 * `done` of `total` bytes.  For a progress line on big files (progress.h);
 * NULL (the default): none. */
void trace_scan_set_progress(void (*progress)(size_t done, size_t total));

/* Scans `text` (`len` bytes; named `path` in messages).  Returns 0 or -1. */
int trace_scan(const char *path, const char *text, size_t len,
	       const struct trace_scan_handlers *h,
	       struct trace_scan_result *result, struct trace_error *err);
/* The window's first size, in bytes (it doubles while one value does not
 * fit). */
#define TRACE_SCAN_WINDOW ((size_t)4 << 20)

/* The same reading the file `path` as it goes: a regular file, or a pipe
 * or FIFO (of any length: nothing but the window is held).  A device is
 * refused, a FIFO no process writes is given up after 10 s, as
 * trace_read_file does. */
int trace_scan_file(const char *path, const struct trace_scan_handlers *h,
		    struct trace_scan_result *result, struct trace_error *err);

#endif /* AMPTRACE_TRACE_SCAN_H */
