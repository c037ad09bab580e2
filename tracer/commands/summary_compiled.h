/* summary's section on torch.compile'd graphs (summary_compiled.c). */
#ifndef AMPTRACE_SUMMARY_COMPILED_H
#define AMPTRACE_SUMMARY_COMPILED_H

#include "trace.h"

#include <cJSON.h>
#include <stdio.h>

/* The section, when the trace has compiled graphs; nothing otherwise. */
void summary_compiled_text(const struct trace *trace, FILE *out);
/* "compiled_graphs": one object per graph (an empty array for none). */
void summary_compiled_json(const struct trace *trace, cJSON *root);

#endif /* AMPTRACE_SUMMARY_COMPILED_H */
