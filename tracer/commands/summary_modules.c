/* summary's "by module" table (summary_modules.h). */
#include "summary_modules.h"

#include "textfit.h"

#include <stdlib.h>
#include <string.h>

static const char *row_name(const struct module_row *r)
{
	if (!r->module)
		return "(no module)";
	return r->module[0] ? r->module : "(outermost)";
}

/* "f32->bf16 12, bf16->f32 3" */
static void directions_text(const struct module_row *r, char *buf,
			    size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < r->ndirections && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used,
					 "%s%s->%s %zu", i ? ", " : "",
					 r->directions[i].from,
					 r->directions[i].to,
					 r->directions[i].casts);
	if (r->other_directions && used < size)
		snprintf(buf + used, size - used, ", %zu other",
			 r->other_directions);
	if (!buf[0])
		snprintf(buf, size, "-");
}

void module_table_print(const struct module_table *m, const char *const *columns,
			FILE *out)
{
	char time[64], directions[256];
	int width = 12;

	fprintf(out, "\nOps by module (module paths cut to depth %d: "
		     "--depth N)\n", m->depth);
	if (!m->any_module) {
		fputs("  (no op of the run names its nn.Module: the PyTorch "
		      "bridge's do, from format 1.4;\n   a compiled graph's "
		      "casts are counted per graph)\n", out);
		return;
	}
	for (size_t i = 0; i < m->nrows; i++) {
		const char *name = row_name(&m->rows[i]);
		int n = (int)textfit_columns(name, strlen(name));
		if (n > width)
			width = n;
	}
	if (width > 32)
		width = 32;
	int fixed = 2 + width + 8 + 7 * m->ncolumns + 8 + 8 + 11 + 2;
	int room = TEXTFIT_WIDTH - fixed;
	if (room < 10)   /* more dtype columns than fit: the row wraps */
		room = 10;
	fprintf(out, "  %-*s %7s", width, "module", "ops");
	for (int c = 0; c < m->ncolumns; c++)
		fprintf(out, " %6s", columns[c]);
	fprintf(out, " %7s %7s %10s  ", "casts", "hits", "time");
	textfit_cell(out, "directions", room, false);
	fputc('\n', out);
	for (size_t k = 0; k < 2 * m->nrows; k++) {
		/* the modules first seen first, then the ops of none */
		const struct module_row *r = &m->rows[k % m->nrows];
		if ((r->module == NULL) != (k >= m->nrows))
			continue;
		fputs("  ", out);
		textfit_cell(out, row_name(r), width, true);
		fprintf(out, " %7zu", r->ops);
		for (int c = 0; c < m->ncolumns; c++) {
			if (r->by_dtype[c])
				fprintf(out, " %6zu", r->by_dtype[c]);
			else
				fprintf(out, " %6s", "-");
		}
		directions_text(r, directions, sizeof directions);
		fprintf(out, " %7zu %7zu %10s  ", module_row_casts(r), r->hits,
			textfit_duration(r->time_us, time, sizeof time));
		textfit_cell(out, directions, room, false);
		fputc('\n', out);
	}
}

cJSON *module_row_json(const struct module_table *m,
		       const struct module_row *r, const char *const *columns)
{
	cJSON *row = cJSON_CreateObject();
	char direction[64];

	if (r->module)
		cJSON_AddStringToObject(row, "module", r->module);
	else
		cJSON_AddNullToObject(row, "module");
	cJSON_AddNumberToObject(row, "ops", (double)r->ops);
	cJSON *outputs = cJSON_AddObjectToObject(row, "outputs");
	cJSON *casts = cJSON_AddObjectToObject(row, "casts");
	for (int c = 0; c < m->ncolumns; c++)
		if (r->by_dtype[c])
			cJSON_AddNumberToObject(outputs, columns[c],
						(double)r->by_dtype[c]);
	if (r->by_dtype[m->ncolumns])
		cJSON_AddNumberToObject(outputs, "none",
					(double)r->by_dtype[m->ncolumns]);
	for (size_t i = 0; i < r->ndirections; i++) {
		snprintf(direction, sizeof direction, "%s->%s",
			 r->directions[i].from, r->directions[i].to);
		cJSON_AddNumberToObject(casts, direction,
					(double)r->directions[i].casts);
	}
	if (r->other_directions)
		cJSON_AddNumberToObject(casts, "other",
					(double)r->other_directions);
	cJSON_AddNumberToObject(row, "cache_hits", (double)r->hits);
	cJSON_AddNumberToObject(row, "time_us", r->time_us);
	return row;
}

cJSON *module_table_json(const struct module_table *m,
			 const char *const *columns)
{
	cJSON *modules = cJSON_CreateObject();

	cJSON_AddNumberToObject(modules, "depth", m->depth);
	cJSON *rows = cJSON_AddArrayToObject(modules, "rows");
	for (size_t k = 0; m->any_module && k < 2 * m->nrows; k++) {
		const struct module_row *r = &m->rows[k % m->nrows];
		if ((r->module == NULL) == (k >= m->nrows))
			cJSON_AddItemToArray(rows, module_row_json(m, r, columns));
	}
	return modules;
}
