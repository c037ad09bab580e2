/* summary's "by module" table: ops, output dtypes, casts by direction and
 * time per nn.Module (the `module` key of format 1.4), each path cut to a
 * depth (--depth N: "h.3.attn.c_attn" at depth 2 is "h.3"), so that a
 * model of hundreds of modules reads as its blocks. */
#ifndef AMPTRACE_SUMMARY_MODULES_H
#define AMPTRACE_SUMMARY_MODULES_H

#include "id_map.h"
#include "trace.h"

#include <cJSON.h>
#include <stdio.h>

#define MODULE_DEPTH_DEFAULT 2
#define MODULE_MAX_DIRECTIONS 8

struct module_direction {
	const char *from, *to; /* interned */
	size_t casts;          /* cache hits apart */
};

struct module_row {
	char *module;          /* the path cut to the depth; NULL: none */
	size_t ops, hits;
	size_t *by_dtype;      /* per output column; [ncolumns]: no output */
	struct module_direction directions[MODULE_MAX_DIRECTIONS];
	size_t ndirections;
	size_t other_directions; /* casts past MODULE_MAX_DIRECTIONS */
	double time_us;        /* of its top-level ops (nested ops inside) */
};

struct module_table {
	int depth;
	int ncolumns;          /* output dtype columns, as summary's */
	struct module_row *rows; /* in the order first seen */
	size_t nrows;
	struct id_map row_of;  /* interned module path -> row + 1 */
	bool any_module;       /* some op or cast carries one */
};

/* An empty table of `ncolumns` output columns at `depth` (>= 1). */
void module_table_init(struct module_table *m, int depth, int ncolumns);
/* An op, its output in column `column` (-1: none of them), or a cast;
 * other events are not counted. */
void module_table_add(struct module_table *m, const struct trace_event *e,
		      int column);
/* The table as text, dtype columns named by `columns`. */
void module_table_print(const struct module_table *m, const char *const *columns,
			FILE *out);
/* The table as summary --json's "modules". */
cJSON *module_table_json(const struct module_table *m,
			 const char *const *columns);
void module_table_free(struct module_table *m);

#endif /* AMPTRACE_SUMMARY_MODULES_H */
