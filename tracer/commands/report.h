/* `amptrace report`: one self-contained HTML page per trace (findings,
 * charts over steps, tables, the cast graph), for bug reports and CI
 * artifacts.  The page's data comes from report_data.h; its template,
 * style, script and the charting library are embedded in amptrace at
 * build time (tracer/commands/report/), so the page fetches nothing. */
#ifndef AMPTRACE_REPORT_H
#define AMPTRACE_REPORT_H

#include <stdbool.h>

/* Writes the report of the trace at `trace` to `html`, drawing the graph
 * with ampview unless `graph` is false.  Messages go to stderr prefixed
 * with `who` ("amptrace report", "amptrace run").  Returns 0, 1 when the
 * page cannot be written, 2 when the trace cannot be read. */
int report_write(const char *trace, const char *html, bool graph,
		 const char *who);

#endif /* AMPTRACE_REPORT_H */
