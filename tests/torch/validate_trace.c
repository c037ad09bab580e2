/* validate_trace FILE...: loads each trace and checks it against
 * FORMAT.md with tracer/trace/validate.c (tensor-id continuity, nesting,
 * metadata).  Prints each problem; exit 0 when there are none, 1 when
 * some, 2 when a file does not load.  The PyTorch bridge's test runs it
 * over the traces of real torch programs. */
#include "trace.h"
#include "validate.h"

#include <stdio.h>

int main(int argc, char **argv)
{
	int status = 0;

	for (int i = 1; i < argc; i++) {
		struct trace t;
		struct trace_error err;
		struct validate_report r;
		if (trace_load(argv[i], &t, &err) != 0) {
			fprintf(stderr, "%s: does not load: %s\n", argv[i],
				err.message);
			return 2;
		}
		size_t problems = trace_validate(&t, &r);
		for (size_t k = 0; k < r.nmessages; k++)
			printf("%s: %s\n", argv[i], r.messages[k]);
		if (problems)
			status = 1;
		trace_free(&t);
	}
	return status;
}
