/* The report's module tree: ops, output dtypes, casts by direction,
 * cache hits and time per nn.Module (summary's "by module" counts,
 * tracer/analysis/module_table.h), one row per module, each under the
 * module holding it, as deep as keeps the tree to about
 * REPORT_MODULE_ROWS rows.  Part of the report's adapter (report_data.h):
 * it reads the trace model.
 *
 * Ownership: report_modules_json() returns a new cJSON tree the caller
 * owns, or NULL. */
#ifndef AMPTRACE_REPORT_MODULES_H
#define AMPTRACE_REPORT_MODULES_H

#include "trace.h"

#include <cJSON.h>

#define REPORT_MODULE_ROWS 60

/* {"depth": D, "rows": [...]} with summary --json's row keys and
 * "depth" (1: outermost), "name" (the path's last part, or what the row
 * stands for) and "class"; JSON null when no op names its module.  NULL
 * when out of memory. */
cJSON *report_modules_json(const struct trace *t);

#endif /* AMPTRACE_REPORT_MODULES_H */
