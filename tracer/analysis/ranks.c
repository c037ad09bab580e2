/* The ranks of a trace's processes, as groups (ranks.h). */
#include "ranks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What a process_name says of its process. */
struct named_process {
	int64_t pid;
	int rank;          /* -1: none */
	int64_t host_pid;  /* a GPU's track: its host process; else 0 */
};

static int compare_pids(const void *a, const void *b)
{
	const struct named_process *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

static int compare_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The trace's process_name events, one per pid (the last said), sorted by
 * pid; NULL with *n 0 when there is none, or out of memory (*oom). */
static struct named_process *named_processes(const struct trace *t,
					     size_t *n, bool *oom)
{
	struct named_process *list = NULL;
	size_t count = 0, cap = 0;

	*oom = false;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_META || !e->name ||
		    strcmp(e->name, "process_name"))
			continue;
		size_t k = 0;
		while (k < count && list[k].pid != e->pid)
			k++;
		if (k == count) {
			struct named_process *grown =
				trace_grow(list, &cap, count + 1, sizeof *grown);
			if (!grown) {
				free(list);
				*oom = true;
				*n = 0;
				return NULL;
			}
			list = grown;
			count++;
		}
		list[k] = (struct named_process){ e->pid, e->meta.rank,
						  e->meta.host_pid };
	}
	trace_sort(list, count, sizeof *list, compare_pids);
	*n = count;
	return list;
}

static int rank_of(const struct named_process *list, size_t n,
		   const struct named_process *p)
{
	if (p->host_pid) {
		struct named_process key = { .pid = p->host_pid };
		const struct named_process *host =
			n ? bsearch(&key, list, n, sizeof *list, compare_pids)
			  : NULL;
		return host && !host->host_pid && host->rank >= 0 ? host->rank
								  : -1;
	}
	return p->rank >= 0 ? p->rank : -1; /* a negative rank is none */
}

/* The groups: -1 (without a rank) first, then each rank said, once. */
static bool number_groups(const struct named_process *list, size_t n,
			  struct trace_ranks *r)
{
	int *ranks = malloc((n + 1) * sizeof *ranks);
	int count = 0;

	if (!ranks)
		return false;
	ranks[count++] = -1;
	for (size_t k = 0; k < n; k++)
		ranks[count++] = rank_of(list, n, &list[k]);
	trace_sort(ranks, (size_t)count, sizeof *ranks, compare_ints);
	int distinct = 0;
	for (int k = 0; k < count; k++)
		if (!distinct || ranks[k] != ranks[distinct - 1])
			ranks[distinct++] = ranks[k];
	r->rank_of_group = ranks;
	r->ngroups = distinct;
	return true;
}

static int group_of_rank(const struct trace_ranks *r, int rank)
{
	int *found = bsearch(&rank, r->rank_of_group, (size_t)r->ngroups,
			     sizeof *r->rank_of_group, compare_ints);

	return found ? (int)(found - r->rank_of_group) : 0;
}

bool trace_ranks_find(const struct trace *t, struct trace_ranks *r)
{
	size_t n;
	bool oom;
	struct named_process *list = named_processes(t, &n, &oom);

	*r = (struct trace_ranks){ 0 };
	if (oom || !number_groups(list, n, r) ||
	    (n && !(r->processes = malloc(n * sizeof *r->processes)))) {
		free(list);
		trace_ranks_free(r);
		return false;
	}
	for (size_t k = 0; k < n; k++)
		r->processes[k] = (struct process_group){
			list[k].pid, group_of_rank(r, rank_of(list, n, &list[k]))
		};
	r->nprocesses = n;
	free(list);
	return true;
}

static int compare_groups(const void *a, const void *b)
{
	const struct process_group *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int trace_ranks_group(const struct trace_ranks *r, int64_t pid)
{
	struct process_group key = { .pid = pid };
	const struct process_group *found =
		r->nprocesses ? bsearch(&key, r->processes, r->nprocesses,
					sizeof *r->processes, compare_groups)
			      : NULL;

	return found ? found->group : 0;
}

const char *trace_ranks_name(const struct trace_ranks *r, int group,
			     char *buf, size_t size)
{
	int rank = group >= 0 && group < r->ngroups ? r->rank_of_group[group]
						     : -1;

	if (rank < 0)
		snprintf(buf, size, "the processes without a rank");
	else
		snprintf(buf, size, "rank %d", rank);
	return buf;
}

void trace_ranks_free(struct trace_ranks *r)
{
	free(r->processes);
	free(r->rank_of_group);
	*r = (struct trace_ranks){ 0 };
}
