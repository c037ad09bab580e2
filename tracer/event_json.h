/* Trace events as JSON text, written once for every writer: the keys
 * every event starts with, and amp.diag events (FORMAT.md §3.7), which
 * both the converter (libamp's value checks, process-died) and `amptrace
 * run` (its findings) write. */
#ifndef AMPTRACE_EVENT_JSON_H
#define AMPTRACE_EVENT_JSON_H

#include "jsonw.h"

#include <stddef.h>
#include <stdint.h>

/* Replaces w's contents with an event's first keys: name (`name_len`
 * bytes), cat, ph, ts (ns since the trace start, written in µs), pid, tid;
 * the caller adds the rest and the closing brace. */
void event_json_head(struct jsonw *w, const char *name, size_t name_len,
		     const char *cat, char ph, int64_t ts_ns, int64_t pid,
		     int64_t tid);

struct diag_json {
	const char *kind, *message;
	int64_t ts_ns;         /* relative to the trace start */
	int64_t pid, tid;
	char scope;            /* 't': the thread's, 'p': the process's */
	uint64_t op_id, tensor; /* 0: none (the key is left out) */
	/* A finding's (NULL fix: not a finding, none of these is written) */
	const char *fix, *severity;
	size_t count;
	int64_t thread, other_thread; /* 0: none */
};

/* Replaces w's contents with the amp.diag event's JSON object. */
void event_json_diag(struct jsonw *w, const struct diag_json *d);

#endif /* AMPTRACE_EVENT_JSON_H */
