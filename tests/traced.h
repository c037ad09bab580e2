/* The one way the C tests and benchmarks run a program under `amptrace
 * run` and read its trace back (traced.c): the program's argv is passed
 * as is, never through a shell, so any path works.  It reports failures
 * by status and message rather than asserting: benchmarks use it too.
 * AMPTRACE_PATH must be defined where traced.c is compiled. */
#ifndef AMP_TEST_TRACED_H
#define AMP_TEST_TRACED_H

#include "trace.h"

#include <stddef.h>
#include <sys/types.h>

/* Starts argv[0] with argv, stdout and stderr into the files `out` and
 * `err` (NULL: the caller's), and each "NAME=VALUE" of `env` (NULL-ended,
 * or NULL) added to the environment.  Returns its pid, or -1. */
pid_t traced_start(char *const argv[], const char *out, const char *err,
		   const char *const env[]);

/* Waits for `pid`: its exit status, 128 + N when signal N killed it (as
 * a shell says; *signal is then N, else 0: may be NULL), -1 when it
 * cannot be waited for. */
int traced_finish(pid_t pid, int *signal);

/* `prog` and the words of `args` (split at spaces, no quoting) as a
 * NULL-ended argv in `words` (at most max - 1 of them), the words copied
 * into `buf`: the tests' programs and their options are written as one
 * string in their tables. */
const char *const *traced_command(const char *prog, const char *args,
				  char *buf, size_t size, const char **words,
				  size_t max);

/* How to run amptrace: `amptrace run -q -o trace OPTIONS... -- PROG...`. */
struct traced {
	const char *trace;          /* -o */
	const char *const *options; /* more options of run (NULL-ended), or NULL */
	const char *const *env;     /* for amptrace and the program, or NULL */
	const char *out, *err;      /* amptrace's output (NULL: the caller's) */
};

/* Runs `command` (NULL-ended argv) under amptrace as `how` says; returns
 * amptrace's exit status (the program's), as traced_finish. */
int traced_run(const struct traced *how, const char *const command[]);

/* traced_run, then the trace loaded into *trace (the caller frees it).
 * Returns 0, or -1 with what went wrong in `why`: the status when it
 * was not 0, else the reader's message. */
int traced_load(const struct traced *how, const char *const command[],
		struct trace *trace, char *why, size_t size);

#endif /* AMP_TEST_TRACED_H */
