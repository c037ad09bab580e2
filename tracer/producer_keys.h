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
 * TYPE: STRING, a string (NULL: absent); ID, a number (uint64_t, 0:
 * absent).  CHECK: the names the value must be one of
 * (trace/trace_schema.h's column: NONE, or ORIGIN, PHASE ...).  `X` is
 * the caller's, handed through. */
#ifndef AMPTRACE_PRODUCER_KEYS_H
#define AMPTRACE_PRODUCER_KEYS_H

/* amp.op's, after forward_op_id (FORMAT.md §3.2); graph: the
 * torch.compile'd graph a compile (compile:f) or a compiled call
 * (compiled:f) is about (§3.12); handled: how Dynamo handled a failed
 * compile's error, which the program then never saw ("skipped",
 * "suppressed"; NULL: the error reached the program). */
#define PRODUCER_OP_KEYS(ROW, X)                                            \
	ROW(X, STRING, module, "module", NONE, "1.4")                       \
	ROW(X, STRING, module_class, "module_class", NONE, "1.4")           \
	ROW(X, ID, graph, "graph", NONE, "1.4")                             \
	ROW(X, STRING, handled, "handled", HANDLED, "1.4")

/* amp.cast's, after scope (FORMAT.md §3.3): its op's module, and who
 * cast when not autocast (NULL): "autograd" or "custom_fwd" (the PyTorch
 * bridge's), or "compiled": a cast of a torch.compile'd graph, recorded
 * once when the graph is compiled, with the rows after origin (§3.12):
 * its graph, the graph's part (forward, backward), the op it is cast for,
 * the graph's op its result feeds, who made it (autocast, program,
 * autograd), the program's line and the autocast state the graph was
 * traced under ("autocast(cpu, bf16)", "autocast(cpu, off)"). */
#define PRODUCER_CAST_KEYS(ROW, X)                                          \
	PRODUCER_CAST_RUN_KEYS(ROW, X)                                      \
	PRODUCER_CAST_COMPILED_KEYS(ROW, X)
/* The first: any cast's.  The others: only a compiled graph's, which the
 * trace model keeps apart (trace/trace_event.h). */
#define PRODUCER_CAST_RUN_KEYS(ROW, X)                                      \
	ROW(X, STRING, module, "module", NONE, "1.4")                       \
	ROW(X, STRING, module_class, "module_class", NONE, "1.4")           \
	ROW(X, STRING, origin, "origin", ORIGIN, "1.4")
#define PRODUCER_CAST_COMPILED_KEYS(ROW, X)                                 \
	ROW(X, ID, graph, "graph", NONE, "1.4")                             \
	ROW(X, STRING, graph_phase, "graph_phase", PHASE, "1.4")            \
	ROW(X, STRING, graph_op, "graph_op", NONE, "1.4")                   \
	ROW(X, STRING, feeds, "feeds", NONE, "1.4")                         \
	ROW(X, STRING, made_by, "made_by", NONE, "1.4")                     \
	ROW(X, STRING, source_line, "source", NONE, "1.4")                  \
	ROW(X, STRING, traced_under, "traced_under", NONE, "1.4")

/* amp.diag's, after message (FORMAT.md §3.7): the PyTorch bridge's
 * fsdp-mixed-precision note, one per module an FSDP mixed-precision
 * policy is set on: the module as its ops name it, and the dtypes FSDP
 * applies to it (each absent where FSDP casts nothing: the parameters
 * keep their own dtype, the gradients are reduced in theirs, ...). */
#define PRODUCER_DIAG_KEYS(ROW, X)                                          \
	ROW(X, STRING, module, "module", NONE, "1.4")                       \
	ROW(X, STRING, module_class, "module_class", NONE, "1.4")           \
	ROW(X, STRING, param_dtype, "param_dtype", DTYPE, "1.4")            \
	ROW(X, STRING, reduce_dtype, "reduce_dtype", DTYPE, "1.4")          \
	ROW(X, STRING, input_dtype, "input_dtype", DTYPE, "1.4")            \
	ROW(X, STRING, output_dtype, "output_dtype", DTYPE, "1.4")          \
	ROW(X, STRING, buffer_dtype, "buffer_dtype", DTYPE, "1.4")

/* A row's member, declared in a model's struct. */
#define PRODUCER_KEY_MEMBER(X, type, f, key, check, since)                  \
	PRODUCER_KEY_##type f;
#define PRODUCER_KEY_STRING const char *
#define PRODUCER_KEY_ID uint64_t

#endif /* AMPTRACE_PRODUCER_KEYS_H */
