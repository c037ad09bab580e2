/* The findings as readers list them.  A job's ranks run one program, so
 * each finds the same mistakes: eight ranks gave each finding eight
 * times.  A finding of the same kind, severity and site (findings.h: the
 * aggregation key, alike on every rank) in processes of other ranks is
 * listed once, the lowest rank's, saying on how many ranks it occurred;
 * not those of how `amptrace run` saw each process (process-died,
 * recording-stopped: each rank's its own).
 * The findings themselves stay one per process: rules count them all
 * (check's `finding` rules count the job's). */
#ifndef AMPTRACE_RANK_FINDINGS_H
#define AMPTRACE_RANK_FINDINGS_H

#include "findings.h"
#include "ranks.h"

#include <stdbool.h>
#include <stddef.h>

struct rank_finding {
	size_t finding;  /* its index among the findings: the lowest rank's */
	int ranks;       /* how many ranks had it (1: one rank, or none) */
	size_t count;    /* its occurrences on all of them */
	bool alike;      /* each rank had it `count / ranks` times */
};

struct rank_findings {
	struct rank_finding *items; /* in the findings' order */
	size_t count;
	size_t *of;                 /* per finding: the item it is listed
				       as (its own, or the lowest rank's) */
};

/* The list of `n` findings (most severe first) with each finding of
 * another rank folded into the lowest rank's.  false when out of memory
 * (`out` then empty). */
bool rank_findings_fold(const struct trace_finding *findings, size_t n,
			const struct trace_ranks *ranks,
			struct rank_findings *out);
void rank_findings_free(struct rank_findings *r);
/* Its finding as JSON (finding_json's keys), with `count` its
 * occurrences on all its ranks, `ranks` how many, and `each` how many
 * on each (null when they differ).  NULL when out of memory. */
cJSON *rank_finding_json(const struct trace_finding *findings,
			 const struct rank_finding *r);

#endif
