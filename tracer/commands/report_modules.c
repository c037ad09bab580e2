/* The report's module tree (report_modules.h): summary's module table at
 * each depth, 1 to D, written depth first, each module's row followed
 * by the rows of the modules inside it. */
#include "report_modules.h"

#include "analyze.h"
#include "module_table.h"
#include "summary_modules.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Deeper than any model's module paths (GPT-2's are 5 parts). */
#define MAX_LEVELS 12

struct tree {
	const struct trace *t;
	struct module_table levels[MAX_LEVELS]; /* [d - 1]: paths cut to d */
	int nlevels;
	cJSON *rows;
};

/* Summary's counts, paths cut to `depth`: returns false (memory). */
static bool count_level(const struct trace *t, struct module_table *m,
			int depth)
{
	module_table_init(m, depth, TRACE_DTYPE_COUNT);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		int column = e->kind == TRACE_OP ?
			analysis_dtype_index(analysis_output_dtype(&e->op)) : -1;
		if ((e->kind == TRACE_OP || e->kind == TRACE_CAST) &&
		    !module_table_add(m, e, column))
			return false;
	}
	return true;
}

/* The rows level `depth` adds to the tree: its modules of that depth. */
static size_t level_rows(const struct module_table *m, int depth)
{
	size_t n = 0;

	for (size_t r = 0; r < m->nrows; r++)
		n += m->rows[r].module &&
		     analysis_module_depth(m->rows[r].module) == depth;
	return n;
}

static bool add_row(struct tree *tr, const struct module_table *m,
		    const struct module_row *r, int depth, const char *name)
{
	cJSON *row = module_row_json(m, r, trace_dtype_names);
	const char *class = r->module ? analysis_module_class(
		tr->t, r->module, strlen(r->module)) : NULL;

	if (!row)
		return false;
	cJSON_AddNumberToObject(row, "depth", depth);
	cJSON_AddStringToObject(row, "name", name);
	if (class)
		cJSON_AddStringToObject(row, "class", class);
	else
		cJSON_AddNullToObject(row, "class");
	cJSON_AddItemToArray(tr->rows, row);
	return true;
}

/* The rows of the modules `depth` parts deep inside `parent` (NULL: the
 * outermost), each followed by its own. */
static bool add_level(struct tree *tr, int depth, const char *parent)
{
	const struct module_table *m = &tr->levels[depth - 1];
	size_t plen = parent ? strlen(parent) : 0;

	for (size_t i = 0; i < m->nrows; i++) {
		const char *path = m->rows[i].module;
		if (!path || analysis_module_depth(path) != depth ||
		    (parent && (strncmp(path, parent, plen) || path[plen] != '.')))
			continue;
		const char *dot = strrchr(path, '.');
		if (!add_row(tr, m, &m->rows[i], depth, dot ? dot + 1 : path) ||
		    (depth < tr->nlevels && !add_level(tr, depth + 1, path)))
			return false;
	}
	return true;
}

/* The outermost rows: the model's own ops (path ""), its modules with
 * theirs, the ops of no module. */
static bool add_tree(struct tree *tr)
{
	const struct module_table *top = &tr->levels[0];

	for (size_t i = 0; i < top->nrows; i++)
		if (top->rows[i].module && !top->rows[i].module[0] &&
		    !add_row(tr, top, &top->rows[i], 1, "(the model's own ops)"))
			return false;
	if (!add_level(tr, 1, NULL))
		return false;
	for (size_t i = 0; i < top->nrows; i++)
		if (!top->rows[i].module &&
		    !add_row(tr, top, &top->rows[i], 1, "(no module)"))
			return false;
	return true;
}

cJSON *report_modules_json(const struct trace *t)
{
	struct tree tr = { .t = t };
	cJSON *json = NULL;
	bool ok = count_level(t, &tr.levels[0], 1);
	size_t rows = ok ? level_rows(&tr.levels[0], 1) : 0;

	tr.nlevels = 1;
	if (ok && !tr.levels[0].any_module) {
		module_table_free(&tr.levels[0]);
		return cJSON_CreateNull();
	}
	/* deeper while the tree stays readable at a glance */
	while (ok && tr.nlevels < MAX_LEVELS) {
		struct module_table *next = &tr.levels[tr.nlevels];
		ok = count_level(t, next, tr.nlevels + 1);
		size_t more = ok ? level_rows(next, tr.nlevels + 1) : 0;
		if (!ok || !more || rows + more > REPORT_MODULE_ROWS) {
			module_table_free(next);
			break;
		}
		rows += more;
		tr.nlevels++;
	}
	if (ok)
		json = cJSON_CreateObject();
	if (json && (!cJSON_AddNumberToObject(json, "depth", tr.nlevels) ||
		     !(tr.rows = cJSON_AddArrayToObject(json, "rows")) ||
		     !add_tree(&tr))) {
		cJSON_Delete(json);
		json = NULL;
	}
	for (int d = 0; d < tr.nlevels; d++)
		module_table_free(&tr.levels[d]);
	return json;
}
