/* summary's lines on FSDP's mixed precision (summary_fsdp.h). */
#include "summary_fsdp.h"

#include "findings.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* A policy's roles, in the order the line says them (trace_diag's keys:
 * NULL where FSDP casts nothing). */
enum { ROLES = 5 };
static const char *const role_names[ROLES] = { "param", "reduce", "input",
					       "output", "buffer" };

static void roles_of(const struct trace_diag *d, const char *out[ROLES])
{
	out[0] = d->param_dtype;
	out[1] = d->reduce_dtype;
	out[2] = d->input_dtype;
	out[3] = d->output_dtype;
	out[4] = d->buffer_dtype;
}

/* One distinct policy: the modules it is set on, per rank group
 * (ranks.h), and its processes. */
struct policy {
	const char *dtypes[ROLES];
	size_t modules;
	size_t *by_group;   /* [ranks->ngroups] */
	int64_t *pids;
	size_t npids;
};

struct policies {
	struct policy *items;
	size_t count;
	bool failed;        /* out of memory: said as such */
};

static bool same_dtype(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static struct policy *policy_of(struct policies *p, const char *dtypes[ROLES],
				int ngroups)
{
	for (size_t i = 0; i < p->count; i++) {
		int r = 0;
		while (r < ROLES && same_dtype(p->items[i].dtypes[r], dtypes[r]))
			r++;
		if (r == ROLES)
			return &p->items[i];
	}
	struct policy *grown = realloc(p->items,
				       (p->count + 1) * sizeof *p->items);
	size_t *by_group = calloc((size_t)ngroups, sizeof *by_group);
	if (!grown || !by_group) {
		if (grown)
			p->items = grown;
		free(by_group);
		return NULL;
	}
	p->items = grown;
	struct policy *n = &p->items[p->count++];
	*n = (struct policy){ .by_group = by_group };
	memcpy(n->dtypes, dtypes, sizeof n->dtypes);
	return n;
}

static bool add_pid(struct policy *p, int64_t pid)
{
	for (size_t i = 0; i < p->npids; i++)
		if (p->pids[i] == pid)
			return true;
	int64_t *grown = realloc(p->pids, (p->npids + 1) * sizeof *grown);
	if (!grown)
		return false;
	p->pids = grown;
	p->pids[p->npids++] = pid;
	return true;
}

static bool is_policy(const struct trace_event *e)
{
	return e->kind == TRACE_DIAG && findings_is_fsdp_policy(&e->diag);
}

/* The trace's policies, in the order they were first set. */
static struct policies collect(const struct trace *t,
			       const struct trace_ranks *ranks)
{
	struct policies p = { 0 };

	for (size_t i = 0; t->counts[TRACE_DIAG] && i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		const char *dtypes[ROLES];
		if (!is_policy(e))
			continue;
		roles_of(&e->diag, dtypes);
		struct policy *k = policy_of(&p, dtypes, ranks->ngroups);
		if (!k || !add_pid(k, e->pid)) {
			p.failed = true;
			return p;
		}
		k->modules++;
		k->by_group[trace_ranks_group(ranks, e->pid)]++;
	}
	return p;
}

static void policies_free(struct policies *p)
{
	for (size_t i = 0; i < p->count; i++) {
		free(p->items[i].by_group);
		free(p->items[i].pids);
	}
	free(p->items);
}

/* How a policy spreads over a job's ranks: `ranks` of them set it (0
 * when a process without a rank did too: not folded), the least and
 * most modules of one. */
struct spread {
	int ranks;
	size_t least, most;
};

static struct spread spread_of(const struct policy *p,
			       const struct trace_ranks *ranks)
{
	struct spread s = { 0 };

	for (int g = 0; g < ranks->ngroups; g++) {
		size_t n = p->by_group[g];
		if (!n)
			continue;
		if (ranks->rank_of_group[g] < 0)
			return (struct spread){ 0 };
		if (!s.ranks || n < s.least)
			s.least = n;
		if (n > s.most)
			s.most = n;
		s.ranks++;
	}
	return s.ranks >= 2 ? s : (struct spread){ 0 };
}

static void print_policy(const struct policy *p,
			 const struct trace_ranks *ranks, FILE *out)
{
	struct spread s = spread_of(p, ranks);

	fputs("FSDP mixed precision:", out);
	if (!p->dtypes[0])
		fputs(" param not cast", out);
	for (int r = 0, said = !p->dtypes[0]; r < ROLES; r++)
		if (p->dtypes[r])
			fprintf(out, "%s %s %s", said++ ? "," : "",
				role_names[r], p->dtypes[r]);
	if (s.ranks && s.least == s.most)
		fprintf(out, " (%zu module%s, on each of %d ranks)\n", s.most,
			s.most == 1 ? "" : "s", s.ranks);
	else if (s.ranks)
		fprintf(out, " (%zu to %zu modules on each of %d ranks)\n",
			s.least, s.most, s.ranks);
	else if (p->npids > 1)
		fprintf(out, " (%zu modules in %zu processes)\n", p->modules,
			p->npids);
	else
		fprintf(out, " (%zu module%s)\n", p->modules,
			p->modules == 1 ? "" : "s");
}

void summary_fsdp_text(const struct trace *trace,
		       const struct trace_ranks *ranks, FILE *out)
{
	struct policies p = collect(trace, ranks);

	for (size_t i = 0; i < p.count; i++)
		print_policy(&p.items[i], ranks, out);
	if (p.failed)
		fputs("FSDP mixed precision: not all said (out of memory)\n",
		      out);
	policies_free(&p);
}

void summary_fsdp_json(const struct trace *trace,
		       const struct trace_ranks *ranks, cJSON *root)
{
	struct policies p = collect(trace, ranks);
	cJSON *list = cJSON_AddArrayToObject(root, "fsdp_mixed_precision");

	for (size_t i = 0; list && i < p.count; i++) {
		const struct policy *k = &p.items[i];
		struct spread s = spread_of(k, ranks);
		cJSON *o = cJSON_CreateObject();
		char key[32];
		for (int r = 0; r < ROLES; r++) {
			snprintf(key, sizeof key, "%s_dtype", role_names[r]);
			if (k->dtypes[r])
				cJSON_AddStringToObject(o, key, k->dtypes[r]);
			else
				cJSON_AddNullToObject(o, key);
		}
		cJSON_AddNumberToObject(o, "modules", (double)k->modules);
		cJSON_AddNumberToObject(o, "processes", (double)k->npids);
		if (s.ranks) {
			cJSON_AddNumberToObject(o, "ranks", s.ranks);
			if (s.least == s.most)
				cJSON_AddNumberToObject(o, "each",
							(double)s.most);
			else
				cJSON_AddNullToObject(o, "each");
		}
		cJSON_AddItemToArray(list, o);
	}
	policies_free(&p);
}
