/* The ranks of a trace's processes, as groups (ranks.h). */
#include "ranks.h"

#include "steps.h"

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

/* A group: a rank (process 0), a process without a rank (rank -1), or
 * the unnamed processes (both). */
struct group_key {
	int rank;
	int64_t process;
};

static int key_class(const struct group_key *k)
{
	return k->rank >= 0 ? 1 : k->process ? 2 : 0;
}

static int compare_keys(const void *a, const void *b)
{
	const struct group_key *x = a, *y = b;

	if (key_class(x) != key_class(y))
		return key_class(x) - key_class(y);
	if (x->rank != y->rank)
		return (x->rank > y->rank) - (x->rank < y->rank);
	return (x->process > y->process) - (x->process < y->process);
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

static struct group_key key_of(const struct named_process *list, size_t n,
			       const struct named_process *p)
{
	if (p->host_pid) {
		struct named_process key = { .pid = p->host_pid };
		const struct named_process *host =
			n ? bsearch(&key, list, n, sizeof *list, compare_pids)
			  : NULL;
		return host && !host->host_pid ? key_of(list, n, host)
					       : (struct group_key){ -1, 0 };
	}
	/* a negative rank is none */
	return p->rank >= 0 ? (struct group_key){ p->rank, 0 }
			    : (struct group_key){ -1, p->pid };
}

/* The groups (ranks.h's order), each once. */
static bool number_groups(const struct named_process *list, size_t n,
			  struct trace_ranks *r)
{
	struct group_key *keys = malloc((n + 1) * sizeof *keys);
	size_t count = 0, distinct = 0;

	if (!keys)
		return false;
	keys[count++] = (struct group_key){ -1, 0 };
	for (size_t k = 0; k < n; k++)
		keys[count++] = key_of(list, n, &list[k]);
	trace_sort(keys, count, sizeof *keys, compare_keys);
	for (size_t k = 0; k < count; k++)
		if (!distinct || compare_keys(&keys[k], &keys[distinct - 1]))
			keys[distinct++] = keys[k];
	r->rank_of_group = malloc(distinct * sizeof *r->rank_of_group);
	r->process_of_group = malloc(distinct * sizeof *r->process_of_group);
	for (size_t g = 0; r->rank_of_group && r->process_of_group &&
			   g < distinct; g++) {
		r->rank_of_group[g] = keys[g].rank;
		r->process_of_group[g] = keys[g].process;
	}
	free(keys);
	r->ngroups = (int)distinct;
	return r->rank_of_group && r->process_of_group;
}

static int group_of_key(const struct trace_ranks *r, struct group_key key)
{
	int lo = 0, hi = r->ngroups;

	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		struct group_key at = { r->rank_of_group[mid],
					r->process_of_group[mid] };
		int order = compare_keys(&at, &key);
		if (!order)
			return mid;
		if (order < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
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
			list[k].pid, group_of_key(r, key_of(list, n, &list[k]))
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
	bool known = group >= 0 && group < r->ngroups;
	int rank = known ? r->rank_of_group[group] : -1;
	int64_t process = known ? r->process_of_group[group] : 0;

	if (rank >= 0)
		snprintf(buf, size, "rank %d", rank);
	else if (process)
		snprintf(buf, size, "process %lld", (long long)process);
	else
		snprintf(buf, size, "the processes without a rank");
	return buf;
}

int trace_ranks_count(const struct trace_ranks *r)
{
	int n = 0;

	for (int g = 0; g < r->ngroups; g++)
		n += r->rank_of_group[g] >= 0;
	return n;
}

int trace_ranks_group_of_rank(const struct trace_ranks *r, int rank,
			      char *why, size_t size)
{
	size_t used = 0;
	int named = 0;

	for (int g = 0; g < r->ngroups; g++)
		if (r->rank_of_group[g] == rank)
			return g;
	used = (size_t)snprintf(why, size, "the trace's ranks are ");
	for (int g = 0; g < r->ngroups; g++)
		if (r->rank_of_group[g] >= 0 && used < size)
			used += (size_t)snprintf(why + used, size - used,
						 "%s%d", named++ ? ", " : "",
						 r->rank_of_group[g]);
	if (!named)
		snprintf(why, size, "the trace's processes have no rank");
	return -1;
}

/* The filter's dropped events (a reader's flows) of the group's
 * processes alone. */
static void keep_dropped(struct trace *t, const struct trace_ranks *r,
			 int group)
{
	size_t kept = 0, dropped = 0;

	for (size_t k = 0; k < t->ndropped_pids; k++) {
		if (trace_ranks_group(r, t->dropped_pids[k].pid) != group)
			continue;
		t->dropped_pids[kept++] = t->dropped_pids[k];
		dropped += t->dropped_pids[k].count;
	}
	t->ndropped_pids = kept;
	t->dropped = dropped;
}

/* A merged file's inputs of the group alone: the trailer's by their pid,
 * the header's (a truncated merged file has only those) by their rank.
 * An input of several ranks (§6) names its lowest, and stays with it. */
static void keep_inputs(struct trace *t, const struct trace_ranks *r,
			int group)
{
	int rank = group < r->ngroups ? r->rank_of_group[group] : -1;
	int kept = 0;

	for (int k = 0; k < t->trailer.ninputs; k++)
		if (trace_ranks_group(r, t->trailer.inputs[k].pid) == group)
			t->trailer.inputs[kept++] = t->trailer.inputs[k];
	if (t->trailer.inputs)
		t->trailer.ninputs = kept;
	kept = 0;
	for (int k = 0; k < t->header.nmerged; k++)
		if (rank >= 0 && t->header.merged[k].rank == rank)
			t->header.merged[kept++] = t->header.merged[k];
	if (t->header.merged)
		t->header.nmerged = kept;
}

void trace_ranks_keep(struct trace *t, const struct trace_ranks *r,
		      int group)
{
	size_t kept = 0;
	int processes = 0;

	memset(t->counts, 0, sizeof t->counts);
	for (size_t i = 0; i < t->nevents; i++) {
		if (trace_ranks_group(r, t->events[i].pid) != group)
			continue;
		t->events[kept] = t->events[i];
		t->events[kept].index = (uint32_t)kept;
		t->counts[t->events[kept].kind]++;
		kept++;
	}
	t->nevents = kept;
	keep_dropped(t, r, group);
	for (int k = 0; k < t->trailer.nprocesses; k++)
		if (trace_ranks_group(r, t->trailer.processes[k].pid) == group)
			t->trailer.processes[processes++] =
				t->trailer.processes[k];
	if (t->trailer.processes)
		t->trailer.nprocesses = processes;
	keep_inputs(t, r, group);
}

int trace_keep_rank(struct trace *t, int rank, int *ranks, char *why,
		    size_t size)
{
	struct trace_ranks r;
	char which[200];

	if (!trace_ranks_find(t, &r)) {
		snprintf(why, size, "out of memory");
		return -1;
	}
	int group = trace_ranks_group_of_rank(&r, rank, which, sizeof which);
	if (group < 0)
		snprintf(why, size, "no rank %d: %s", rank, which);
	else
		trace_ranks_keep(t, &r, group);
	*ranks = trace_ranks_count(&r);
	trace_ranks_free(&r);
	return group < 0 ? -1 : 0;
}

void trace_ranks_free(struct trace_ranks *r)
{
	free(r->processes);
	free(r->rank_of_group);
	free(r->process_of_group);
	*r = (struct trace_ranks){ 0 };
}

/* The groups that train, ranks or (`ranked` false) named processes
 * without one, counted in out, the first in out->first. */
static void count_training(const struct trace_ranks *r, const bool *trains,
			   bool ranked, struct ranks_training *out)
{
	for (int g = r->ngroups - 1; g >= 0; g--)
		if (trains[g] && (r->rank_of_group[g] >= 0) == ranked &&
		    (ranked || r->process_of_group[g])) {
			out->count++;
			out->first = g;
		}
}

bool trace_ranks_training(const struct trace_ranks *r, const struct trace *t,
			  const bool *evaluating, struct ranks_training *out)
{
	bool *trains = calloc((size_t)r->ngroups, sizeof *trains);

	*out = (struct ranks_training){ 0, -1 };
	if (!trains)
		return false;
	for (size_t i = 0; i < t->nevents; i++)
		if (trace_steps_trains(&t->events[i], evaluating[i]))
			trains[trace_ranks_group(r, t->events[i].pid)] = true;
	count_training(r, trains, true, out);
	if (!out->count)
		count_training(r, trains, false, out);
	free(trains);
	return true;
}
