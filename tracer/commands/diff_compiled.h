/* `amptrace diff` of traces holding torch.compile'd graphs
 * (diff_compiled.c): casts compared by module path, source line and op,
 * since ops of an eager and a compiled run do not align. */
#ifndef AMPTRACE_DIFF_COMPILED_H
#define AMPTRACE_DIFF_COMPILED_H

#include "trace.h"

#include <stdbool.h>

/* Whether either trace has a compiled graph (compiled casts or calls). */
bool diff_compiled_applies(const struct trace *base, const struct trace *now);
/* Prints the cast behaviour changes from base to now (text, or JSON);
 * returns 0 when there is none, 1 when there are, 2 out of memory. */
int diff_compiled(const struct trace *base, const struct trace *now,
		  bool json);

#endif /* AMPTRACE_DIFF_COMPILED_H */
