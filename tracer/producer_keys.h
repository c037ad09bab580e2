/* The keys a producer hands to the trace as they are, one row each: a
 * member of the producer model (record/producer_event.h), a field of its
 * raw record (record/raw_schema.h; libamp's events, which lack it, write
 * it absent), a member of the trace model (trace/trace_event.h) and a key
 * of the JSON (trace/trace_schema.h: written when set), all from the row;
 * the converter copies it (convert/convert_records.c).  Adding one is a
 * row here and the producer code that fills it (../README.md, "How to add
 * a key").  Below every stage: the producer side (record/) and the trace
 * side (trace/) both read it.
 *
 *   ROW(X, TYPE, member, "key", CHECK, "format version")
 *
 * TYPE: STRING, a string (NULL: absent).  CHECK: the names the value must
 * be one of (trace/trace_schema.h's column: NONE, or ORIGIN ...).  `X` is
 * the caller's, handed through. */
#ifndef AMPTRACE_PRODUCER_KEYS_H
#define AMPTRACE_PRODUCER_KEYS_H

/* amp.op's, after forward_op_id (FORMAT.md §3.2). */
#define PRODUCER_OP_KEYS(ROW, X)                                            \
	ROW(X, STRING, module, "module", NONE, "1.4")                       \
	ROW(X, STRING, module_class, "module_class", NONE, "1.4")

/* amp.cast's, after scope (FORMAT.md §3.3): its op's module, and who
 * cast when not autocast (NULL): "autograd" or "custom_fwd" (the PyTorch
 * bridge's). */
#define PRODUCER_CAST_KEYS(ROW, X)                                          \
	ROW(X, STRING, module, "module", NONE, "1.4")                       \
	ROW(X, STRING, module_class, "module_class", NONE, "1.4")           \
	ROW(X, STRING, origin, "origin", ORIGIN, "1.4")

/* A row's member, declared in a model's struct. */
#define PRODUCER_KEY_MEMBER(X, type, f, key, check, since)                  \
	PRODUCER_KEY_##type f;
#define PRODUCER_KEY_STRING const char *

#endif /* AMPTRACE_PRODUCER_KEYS_H */
