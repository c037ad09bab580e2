/* Checks a loaded trace against the rules of FORMAT.md that loading alone
 * does not: metadata for every process and thread, unique op ids, casts
 * inside their op, properly nested slices and regions, kernels linked to
 * an op or cast of their process (External id), and tensor-id
 * continuity (every input appears earlier as an output, a cast result or
 * a named leaf).  The format test runs it over real traces. */
#ifndef AMPTRACE_VALIDATE_H
#define AMPTRACE_VALIDATE_H

#include "trace.h"

#define VALIDATE_MAX_MESSAGES 20

struct validate_report {
	size_t problems;
	size_t nmessages;
	char messages[VALIDATE_MAX_MESSAGES][512];
};

/* Returns the number of problems (0: the trace follows FORMAT.md). */
size_t trace_validate(const struct trace *trace, struct validate_report *r);

#endif /* AMPTRACE_VALIDATE_H */
