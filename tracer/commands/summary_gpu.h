/* summary's line on GPU kernel timing (summary_gpu.c): the trailer's
 * `gpu` entries (FORMAT.md §3.8), which the tables leave out. */
#ifndef AMPTRACE_SUMMARY_GPU_H
#define AMPTRACE_SUMMARY_GPU_H

#include "trace.h"

#include <cJSON.h>
#include <stdio.h>

/* "GPU kernel timing: ..." when a process ran ops on device cuda;
 * nothing otherwise. */
void summary_gpu_text(const struct trace *trace, FILE *out);
/* "gpu": the same counts, or null. */
void summary_gpu_json(const struct trace *trace, cJSON *root);

#endif /* AMPTRACE_SUMMARY_GPU_H */
