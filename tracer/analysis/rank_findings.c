/* The findings as readers list them, a job's ranks' alike findings
 * folded (rank_findings.h). */
#include "rank_findings.h"

#include <cJSON.h>

#include <stdlib.h>
#include <string.h>

/* A finding of a rank's process, to be sorted by what makes findings of
 * several ranks the same. */
struct ranked {
	const struct trace_finding *f;
	size_t index;
	int group;
};

static int compare_ranked(const void *pa, const void *pb)
{
	const struct ranked *a = pa, *b = pb;
	int c = strcmp(a->f->kind, b->f->kind);

	if (!c)
		c = strcmp(a->f->site, b->f->site);
	if (!c)
		c = (a->f->severity > b->f->severity) -
		    (a->f->severity < b->f->severity);
	if (!c)
		c = (a->group > b->group) - (a->group < b->group);
	if (!c)
		c = (a->index > b->index) - (a->index < b->index);
	return c;
}

static bool same_finding(const struct ranked *a, const struct ranked *b)
{
	return !strcmp(a->f->kind, b->f->kind) &&
	       !strcmp(a->f->site, b->f->site) &&
	       a->f->severity == b->f->severity;
}

/* Whether a finding can stand for other ranks': one of the program's
 * mistakes, not one of how `amptrace run` saw the process (how it died,
 * where its recording stopped: site "", every rank's its own, and a job's
 * first death is told from the ranks the launcher then killed by it). */
static bool of_the_program(const struct trace_finding *f)
{
	const struct finding_kind *k = finding_kind_lookup(f->kind);

	return !k || (k->source != FINDING_FROM_RUN &&
		      k->source != FINDING_FROM_RECORDER);
}

/* into[i]: the finding that finding i is folded into, i itself when it
 * is listed.  Sorted, the findings alike come together, by rank, each
 * rank's in the findings' order: each rank's first is folded into the
 * lowest rank's first, its second (a DataLoader worker's beside its
 * rank's) into the lowest second, and so on. */
static bool fold_into(const struct trace_finding *findings, size_t n,
		      const struct trace_ranks *ranks, size_t *into)
{
	struct ranked *sorted = malloc((n ? n : 1) * sizeof *sorted);
	size_t *heads = malloc((n ? n : 1) * sizeof *heads);
	size_t m = 0;

	if (!sorted || !heads) {
		free(sorted);
		free(heads);
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		into[i] = i;
		int group = trace_ranks_group(ranks, findings[i].pid);
		if (ranks->rank_of_group[group] >= 0 &&
		    of_the_program(&findings[i]))
			sorted[m++] = (struct ranked){ &findings[i], i, group };
	}
	qsort(sorted, m, sizeof *sorted, compare_ranked);
	/* heads[p]: the listed p-th of a rank among the findings alike */
	for (size_t k = 0, nheads = 0, p = 0; k < m; k++, p++) {
		if (!k || !same_finding(&sorted[k - 1], &sorted[k]))
			nheads = p = 0;
		else if (sorted[k].group != sorted[k - 1].group)
			p = 0;
		if (p < nheads)
			into[sorted[k].index] = heads[p];
		else
			heads[nheads++] = sorted[k].index;
	}
	free(heads);
	free(sorted);
	return true;
}

bool rank_findings_fold(const struct trace_finding *findings, size_t n,
			const struct trace_ranks *ranks,
			struct rank_findings *out)
{
	size_t *into = malloc((n ? n : 1) * sizeof *into);

	*out = (struct rank_findings){
		.items = malloc((n ? n : 1) * sizeof *out->items),
		.of = malloc((n ? n : 1) * sizeof *out->of),
	};
	bool ok = into && out->items && out->of &&
		  fold_into(findings, n, ranks, into);

	for (size_t i = 0; ok && i < n; i++) {
		if (into[i] != i)
			continue;
		out->of[i] = out->count;
		out->items[out->count++] = (struct rank_finding){
			.finding = i, .ranks = 1, .count = findings[i].count,
			.alike = true,
		};
	}
	for (size_t i = 0; ok && i < n; i++) {
		if (into[i] == i)
			continue;
		out->of[i] = out->of[into[i]];
		struct rank_finding *r = &out->items[out->of[i]];
		r->ranks++;
		r->count += findings[i].count;
		r->alike &= findings[i].count == findings[into[i]].count;
	}
	free(into);
	if (!ok)
		rank_findings_free(out);
	return ok;
}

void rank_findings_free(struct rank_findings *r)
{
	free(r->items);
	free(r->of);
	*r = (struct rank_findings){ 0 };
}

cJSON *rank_finding_json(const struct trace_finding *findings,
			 const struct rank_finding *r)
{
	cJSON *o = finding_json(&findings[r->finding]);

	if (!o)
		return NULL;
	cJSON_ReplaceItemInObject(o, "count", cJSON_CreateNumber((double)r->count));
	cJSON_AddNumberToObject(o, "ranks", r->ranks);
	if (r->alike)
		cJSON_AddNumberToObject(o, "each",
					(double)(r->count / (size_t)r->ranks));
	else
		cJSON_AddNullToObject(o, "each");
	return o;
}
