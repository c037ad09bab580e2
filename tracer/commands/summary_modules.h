/* summary's "by module" table: ops, output dtypes, casts by direction and
 * time per nn.Module (the `module` key of format 1.4), each path cut to a
 * depth (--depth N: "h.3.attn.c_attn" at depth 2 is "h.3"), so that a
 * model of hundreds of modules reads as its blocks. */
#ifndef AMPTRACE_SUMMARY_MODULES_H
#define AMPTRACE_SUMMARY_MODULES_H

#include "module_table.h"

#include <cJSON.h>
#include <stdio.h>

#define MODULE_DEPTH_DEFAULT 2
/* The table as text, dtype columns named by `columns`. */
void module_table_print(const struct module_table *m, const char *const *columns,
			FILE *out);
/* One row as summary --json's "modules" rows: module, ops, outputs
 * {dtype: n, none: n}, casts {"f32->bf16": n, other: n}, cache_hits,
 * time_us (the report's module tree writes its rows so too). */
cJSON *module_row_json(const struct module_table *m,
		       const struct module_row *r, const char *const *columns);
/* The table as summary --json's "modules". */
cJSON *module_table_json(const struct module_table *m,
			 const char *const *columns);

#endif /* AMPTRACE_SUMMARY_MODULES_H */
