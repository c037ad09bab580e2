/* What `amptrace check` adds to a rule's outcome when the rule names an
 * op, a region or a module the trace does not have: "did you mean
 * 'linear'?" for `op lineer`, "no region is named 'los' in this trace;
 * did you mean 'loss'?" for `in scope los`, the same for `in module`.  Hints never change a rule's verdict (a
 * `count == 0` rule about an op that never runs is meant): they make a
 * misspelt name visible where the rule's result is printed. */
#ifndef AMPTRACE_CHECK_HINTS_H
#define AMPTRACE_CHECK_HINTS_H

#include "rules.h"
#include "trace.h"

#include <stdbool.h>
#include <stddef.h>

/* Whether `pattern` (an op rule's OP: a glob, `aten::` allowed) names
 * the op `op` with its overload. */
bool check_name_matches(const char *pattern, const char *op,
			const char *overload);

/* Appends to `actual` (a string in a buffer of `size` bytes) the hints
 * for rule r's op name and scope name on trace t. */
void check_hints_add(const struct trace *t, const struct rule *r,
		     char *actual, size_t size);

#endif /* AMPTRACE_CHECK_HINTS_H */
