/* summary's lines on FSDP's mixed precision (summary_fsdp.c): the PyTorch
 * bridge's fsdp-mixed-precision notes (FORMAT.md §3.7), one line per
 * distinct policy, with the modules it is set on; a job's ranks set the
 * same policies, so a policy alike on every rank is one line "on each of
 * N ranks", as their steps and findings are. */
#ifndef AMPTRACE_SUMMARY_FSDP_H
#define AMPTRACE_SUMMARY_FSDP_H

#include "ranks.h"
#include "trace.h"

#include <cJSON.h>
#include <stdio.h>

/* "FSDP mixed precision: param bf16, reduce f32, input bf16 (3 modules,
 * on each of 2 ranks)" per policy; nothing when there is none. */
void summary_fsdp_text(const struct trace *trace,
		       const struct trace_ranks *ranks, FILE *out);
/* "fsdp_mixed_precision": an array, one object per policy: its dtypes
 * (null: not cast), `modules` in all, `processes`, and for a policy of
 * a job's ranks `ranks` and `each` (modules per rank, null when they
 * differ). */
void summary_fsdp_json(const struct trace *trace,
		       const struct trace_ranks *ranks, cJSON *root);

#endif /* AMPTRACE_SUMMARY_FSDP_H */
