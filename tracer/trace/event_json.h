/* The one writer of traces as JSON text (FORMAT.md): every key of an
 * event comes from its struct trace_event (trace_event.h) alone, in the
 * order and on the conditions of trace_schema.h, so the converter (every
 * event of `amptrace run`), run's findings and flows, and merge write the
 * same text from the same model, and the reader (trace.c) reads back the
 * same model: read(write(e)) == e (tests/test_pipeline.c).  The header
 * and the trailer likewise. */
#ifndef AMPTRACE_EVENT_JSON_H
#define AMPTRACE_EVENT_JSON_H

#include "jsonw.h"
#include "trace_event.h"

/* Replaces w's contents with e's JSON object (one line, no newline).
 * Times are written in µs with three decimals (ns), as e->ts and e->dur
 * hold them.  Other tools' events (TRACE_OTHER) get their first keys
 * only: the model does not hold the rest. */
void event_json_write(struct jsonw *w, const struct trace_event *e);
/* The same, after what w holds (events joined in one text). */
void event_json_append(struct jsonw *w, const struct trace_event *e);

/* Appends the file's "amptrace" header object and "amptraceEnd" trailer
 * object (trace_writer.h writes them around the events). */
void event_json_header(struct jsonw *w, const struct trace_header *h);
void event_json_trailer(struct jsonw *w, const struct trace_trailer *t);

/* What event_json_write_memo remembers between events: the text of op
 * events (templates), so that an op like one written before costs a few
 * copies.  Only for a writer whose events' strings stay unchanged at
 * their addresses as long as the memo is used (interned, as the
 * converter's are): alike fields are compared by address. */
struct event_json_memo;
struct event_json_memo *event_json_memo_new(void); /* NULL: out of memory */
void event_json_memo_free(struct event_json_memo *m);
/* event_json_write, the same text, through m (NULL: none). */
void event_json_write_memo(struct jsonw *w, const struct trace_event *e,
			   struct event_json_memo *m);

#endif /* AMPTRACE_EVENT_JSON_H */
