/* `amptrace run` on a program with ranks (run_ranks.c). */
#ifndef AMPTRACE_RUN_RANKS_H
#define AMPTRACE_RUN_RANKS_H

#include <stdbool.h>
#include <stddef.h>

/* Merges the per-rank traces paths[0..n) (of ranks[0..n), any order)
 * into `out` with `amptrace merge`, and says so in one line on stderr
 * naming the ranks (unless quiet).  Returns merge's exit status. */
int run_ranks_merge(const char *out, char *const *paths, const int *ranks,
		    size_t n, bool quiet);

/* Says on stderr that `out` holds the processes without a rank and that
 * the ranks' traces paths[0..n) stay apart, with the command that
 * merges them. */
void run_ranks_say_apart(const char *out, char *const *paths,
			 const int *ranks, size_t n);

#endif /* AMPTRACE_RUN_RANKS_H */
