/* The ranks of a trace's processes, as the groups that readers judging a
 * distributed job per rank count apart (FORMAT.md §8: check's `per step`
 * rules, the GradScaler's steps and scale): each rank one group, the
 * processes without a rank one more.  A process's rank is the last its
 * process_name says (a process that learned its rank late is named
 * again, §2); a DataLoader worker carries its rank's; a GPU's track is
 * its host process's. */
#ifndef AMPTRACE_RANKS_H
#define AMPTRACE_RANKS_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct process_group {
	int64_t pid;
	int group;
};

struct trace_ranks {
	struct process_group *processes; /* sorted by pid */
	size_t nprocesses;
	int *rank_of_group;              /* ascending; -1: without a rank */
	int ngroups;                     /* at least 1 */
};

/* false when out of memory. */
bool trace_ranks_find(const struct trace *t, struct trace_ranks *r);
/* The group of process `pid` (that of the processes without a rank when
 * no process_name names it). */
int trace_ranks_group(const struct trace_ranks *r, int64_t pid);
/* "rank 1", or "the processes without a rank", into buf. */
const char *trace_ranks_name(const struct trace_ranks *r, int group,
			     char *buf, size_t size);
void trace_ranks_free(struct trace_ranks *r);

#endif
