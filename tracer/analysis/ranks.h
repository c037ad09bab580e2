/* The ranks of a trace's processes, as the groups that readers judging a
 * distributed job per rank count apart (FORMAT.md §8: check's `per step`
 * rules, the GradScaler's steps and scale): each rank one group, each
 * named process without a rank one of its own (Hogwild's workers, DDP
 * workers that never call init_process_group: each runs its own steps),
 * the processes no process_name names one more (group 0).  A process's
 * rank is the last its process_name says (a process that learned its
 * rank late is named again, §2); a DataLoader worker carries its rank's;
 * a GPU's track is its host process's group. */
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
	/* group 0: the unnamed processes (rank -1, process 0); then the
	 * ranks, ascending (process 0); then each named process without a
	 * rank (rank -1), by pid */
	int *rank_of_group;
	int64_t *process_of_group;
	int ngroups;                     /* at least 1 */
};

/* false when out of memory. */
bool trace_ranks_find(const struct trace *t, struct trace_ranks *r);
/* The group of process `pid` (that of the processes without a rank when
 * no process_name names it). */
int trace_ranks_group(const struct trace_ranks *r, int64_t pid);
/* "rank 1", "process 77" (without a rank), or "the processes without a
 * rank" (group 0), into buf. */
const char *trace_ranks_name(const struct trace_ranks *r, int group,
			     char *buf, size_t size);
void trace_ranks_free(struct trace_ranks *r);
/* How many ranks the processes have (a distributed job's: 2 or more). */
int trace_ranks_count(const struct trace_ranks *r);
/* The group of rank `rank`; -1 when no process has it, `why` then saying
 * which ranks there are ("the trace's ranks are 0, 1 and 3"). */
int trace_ranks_group_of_rank(const struct trace_ranks *r, int rank,
			      char *why, size_t size);
/* Leaves in `t` only the events of group `group`'s processes (and their
 * GPUs'), the filter's dropped events of those alone, and only their
 * entries in the trailer (processes, merged inputs) and the header's
 * merged inputs: the trace one rank of the job would have written
 * alone. */
void trace_ranks_keep(struct trace *t, const struct trace_ranks *r,
		      int group);
/* trace_ranks_keep of rank `rank`'s group (a reader's --rank N), the
 * trace's ranks counted in *ranks.  0, or -1 with `why` saying why not
 * ("no rank 5: the trace's ranks are 0, 1", "out of memory"). */
int trace_keep_rank(struct trace *t, int rank, int *ranks, char *why,
		    size_t size);

/* The groups a reader that shows one at a time (ampview's graph, the
 * report's page) has to show: the ranks that train (steps.h,
 * trace_steps_trains), else, when none does, the named processes without
 * a rank that do (Hogwild's workers); a launcher without a rank beside
 * ranks is none of them.  `count` of them, `first` the one shown first
 * (-1: none trains). */
struct ranks_training {
	int count, first;
};
/* `evaluating` per event (steps.h); false when out of memory. */
bool trace_ranks_training(const struct trace_ranks *r, const struct trace *t,
			  const bool *evaluating, struct ranks_training *out);

#endif
