/* Ops, output dtypes, casts by direction, cache hits and time per
 * nn.Module (the `module` key of format 1.4), each path cut to a depth
 * ("h.3.attn.c_attn" at depth 2 is "h.3"): the one aggregation behind
 * summary's "by module" table, the report's module tree and ampview's
 * collapsed modules. */
#ifndef AMPTRACE_MODULE_TABLE_H
#define AMPTRACE_MODULE_TABLE_H

#include "id_map.h"
#include "trace.h"

#include <stdbool.h>
#include <stddef.h>

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
	int ncolumns;          /* output dtype columns, the caller's */
	struct module_row *rows; /* in the order first seen */
	size_t nrows, cap_rows;
	struct id_map row_of;  /* interned module path -> row + 1 */
	bool any_module;       /* some op or cast carries one */
};

/* An empty table of `ncolumns` output columns at `depth` (>= 0: depth 0
 * puts every module in the row ""). */
void module_table_init(struct module_table *m, int depth, int ncolumns);
/* An op, its output in column `column` (-1: none of them), or a cast;
 * other events are not counted.  Returns false when out of memory. */
bool module_table_add(struct module_table *m, const struct trace_event *e,
		      int column);
/* Its casts, cache hits apart. */
size_t module_row_casts(const struct module_row *r);
void module_table_free(struct module_table *m);

#endif /* AMPTRACE_MODULE_TABLE_H */
