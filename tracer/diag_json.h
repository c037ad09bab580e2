/* The one writer of amp.diag events (FORMAT.md §3.7): the converter's
 * (libamp's value checks, process-died) and `amptrace run`'s findings. */
#ifndef AMPTRACE_DIAG_JSON_H
#define AMPTRACE_DIAG_JSON_H

#include "jsonw.h"

#include <stddef.h>
#include <stdint.h>

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

/* Replaces w's contents with the event's JSON object. */
void diag_json_write(struct jsonw *w, const struct diag_json *d);

#endif /* AMPTRACE_DIAG_JSON_H */
