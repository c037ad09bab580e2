/* The one writer of trace events as JSON text (FORMAT.md §3): every key
 * of an amp.* event comes from its struct trace_event (trace_event.h)
 * alone, so the converter (every event of `amptrace run`) and run's
 * findings (amp.diag events) write the same text from the same model,
 * and the reader (trace.c) reads back the same model:
 * read(write(e)) == e (tests/test_pipeline.c). */
#ifndef AMPTRACE_EVENT_JSON_H
#define AMPTRACE_EVENT_JSON_H

#include "jsonw.h"
#include "trace_event.h"

/* Replaces w's contents with e's JSON object (one line, no newline).
 * Times are written in µs with three decimals (ns), as e->ts and e->dur
 * hold them.  Other tools' events (TRACE_OTHER, but gpu_memcpy) get their
 * first keys only: the model does not hold the rest. */
void event_json_write(struct jsonw *w, const struct trace_event *e);

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
