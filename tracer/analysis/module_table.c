/* The per-module aggregation (module_table.h). */
#include "module_table.h"

#include "analyze.h"

#include <stdlib.h>
#include <string.h>

void module_table_init(struct module_table *m, int depth, int ncolumns)
{
	memset(m, 0, sizeof *m);
	m->depth = depth;
	m->ncolumns = ncolumns;
}

static struct module_row *new_row(struct module_table *m, char *module)
{
	struct module_row *grown =
		trace_grow(m->rows, &m->cap_rows, m->nrows + 1, sizeof *m->rows);

	if (!grown)
		return NULL;
	m->rows = grown;
	size_t *by_dtype = calloc((size_t)m->ncolumns + 1, sizeof *by_dtype);
	if (!by_dtype)
		return NULL;
	struct module_row *row = &m->rows[m->nrows++];
	memset(row, 0, sizeof *row);
	row->module = module;
	row->by_dtype = by_dtype;
	return row;
}

/* The row of `module` (interned, or NULL), made when new; paths that cut
 * to the same prefix share one row.  NULL when out of memory. */
static struct module_row *row_of(struct module_table *m, const char *module)
{
	/* NULL is key (1, 0): interned pointers are keys (0, pointer) */
	size_t *slot = id_map_find(&m->row_of, module ? 0 : 1,
				   (uint64_t)(uintptr_t)module, true);

	if (!slot)
		return NULL;
	if (*slot)
		return &m->rows[*slot - 1];
	char *cut = NULL;
	if (module) {
		cut = strndup(module, analysis_module_prefix(module, m->depth));
		if (!cut)
			return NULL;
	}
	for (size_t i = 0; i < m->nrows; i++) {
		const char *have = m->rows[i].module;
		if ((!have && !cut) || (have && cut && !strcmp(have, cut))) {
			free(cut);
			*slot = i + 1;
			return &m->rows[i];
		}
	}
	if (!new_row(m, cut)) {
		free(cut);
		return NULL;
	}
	*slot = m->nrows;
	return &m->rows[m->nrows - 1];
}

static void add_cast(struct module_row *row, const struct trace_cast *c)
{
	if (!strcmp(c->cache, "hit")) {
		row->hits++;
		return;
	}
	for (size_t i = 0; i < row->ndirections; i++) {
		struct module_direction *d = &row->directions[i];
		if (d->from == c->from && d->to == c->to) {
			d->casts++;
			return;
		}
	}
	if (row->ndirections == MODULE_MAX_DIRECTIONS) {
		row->other_directions++;
		return;
	}
	row->directions[row->ndirections++] =
		(struct module_direction){ c->from, c->to, 1 };
}

bool module_table_add(struct module_table *m, const struct trace_event *e,
		      int column)
{
	struct module_row *row;

	if (e->kind == TRACE_OP) {
		if (!(row = row_of(m, e->op.module)))
			return false;
		m->any_module |= e->op.module != NULL;
		row->ops++;
		row->by_dtype[column >= 0 ? column : m->ncolumns]++;
		if (!e->op.parent_op_id)
			row->time_us += e->dur;
	} else if (e->kind == TRACE_CAST) {
		if (!(row = row_of(m, e->cast.module)))
			return false;
		m->any_module |= e->cast.module != NULL;
		add_cast(row, &e->cast);
	}
	return true;
}

size_t module_row_casts(const struct module_row *r)
{
	size_t n = r->other_directions;

	for (size_t i = 0; i < r->ndirections; i++)
		n += r->directions[i].casts;
	return n;
}

void module_table_free(struct module_table *m)
{
	for (size_t i = 0; i < m->nrows; i++) {
		free(m->rows[i].module);
		free(m->rows[i].by_dtype);
	}
	free(m->rows);
	id_map_free(&m->row_of);
}
