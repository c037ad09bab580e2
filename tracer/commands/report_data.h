/* The report's adapter: a trace file → the aggregates `amptrace report`
 * draws (header, findings, per-step series, tables), as one JSON object.
 *
 * This and its module tree (report_modules.c) are the only files of the
 * report that know the trace model (trace.h) and the analysis
 * (analyze.h): the page, its template and the
 * command line see only the JSON, whose keys are described at the top of
 * report_data.c.  The JSON holds nothing per event: its size grows with
 * the steps and the distinct ops, not with the trace.
 *
 * Ownership: report_data_load() fills a `struct report_data` whose `json`
 * the caller releases with report_data_free(). */
#ifndef AMPTRACE_REPORT_DATA_H
#define AMPTRACE_REPORT_DATA_H

#include <cJSON.h>
#include <stdbool.h>
#include <stddef.h>

struct report_data {
	cJSON *json;
	int graph_step;  /* the step ampview's default view shows */
	bool truncated;  /* the trace did not end normally: a warning */
	char note[512];  /* how it ended, when not normally */
};

/* Loads the trace at `path` and aggregates it.  Returns 0, or -1 with
 * `error` set (a trace that cannot be read names file:line). */
int report_data_load(const char *path, struct report_data *data,
		     char *error, size_t error_size);
void report_data_free(struct report_data *data);

#endif /* AMPTRACE_REPORT_DATA_H */
