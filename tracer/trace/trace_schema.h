/* The trace format as one table: every key of every event kind, of the
 * header and of the trailer, in the order it is written (FORMAT.md
 * documents each).  One row per key:
 *
 *   X(TYPE, "key", member, WHEN, CHECK, "version")
 *
 * `member` is the model's (trace_event.h), of the struct the table is
 * for.  The writer (event_json.c) is generated from these rows, the
 * reader (trace.c) and the validator (validate.c) walk them at run time
 * (trace_schema.c), so a key added here is written, read back and checked
 * alike.  A key a producer hands over as it is is a row of
 * ../producer_keys.h instead, which comes in here too; see "How to add a
 * key" in ../README.md.
 *
 * TYPE: the JSON value and the member it lives in
 *   STRING          a string (const char *)
 *   STRING_OR_NULL  a string, or null for NULL
 *   ID              a whole number >= 0 (uint64_t) that differs from one
 *                   event to the next (the writer's templates cut it out)
 *   ID_AGAIN        the member again under another key (an op's
 *                   "External id"); the reader skips it
 *   U64 U32 I64 INT whole numbers (uint64_t, uint32_t, int64_t, int),
 *                   range-checked when read
 *   INT_OR_NULL     an int, or null for -1
 *   BOOL            true or false
 *   TRUE            true; written only when set, so WHEN is SET
 *   NUMBER_OR_NULL  a double, null for NaN (and for infinities)
 *   US              int64_t ns as microseconds with three decimals
 *   SHAPE           array of sizes: `member`[`ndim`]
 *   STRINGS         array of strings: `member`[`n<member>`]
 *   TRIPLE          array of three int32_t (kernels' grid and block)
 *   PROFILER_TYPES  torch.profiler's "Input type": the inputs' names
 *   PROFILER_DIMS   torch.profiler's "Input Dims": the inputs' shapes
 *   BANDWIDTH       a copy's GB/s, from its bytes and dur (not read)
 *   SCOPE           an instant event's "s": `member` is its char
 *   SCOPE_THREAD    "s":"t", an instant event of its thread (not read;
 *                   its member is unused)
 *   AUTOCAST        an object: that table's struct, interned, which
 *                   `member` points to (trace_intern_autocast)
 *   EXIT, GPU       an object that table's struct pointer names; EXIT may
 *                   be null (NULL)
 *   TENSORS, PROCESSES, MERGED, MERGED_ENDS
 *                   an array of objects: `member`[`n<member>`]; a
 *                   tensor's table is over its record (struct
 *                   trace_tensor_record), the array holds struct
 *                   trace_tensor (trace_tensor_record() between them)
 *   RECORDING, STEPS  an object that table's struct pointer names (NULL:
 *                   absent)
 *   AGGREGATE_CACHE an object: that table's struct
 *   OP_ROWS, CAST_ROWS, DIAG_ROWS
 *                   an array of rows, each an array of that table's
 *                   columns in order: `member`[`n<member>`]
 * WHEN: when the writer writes the key, and what the reader asks of it
 *   ALWAYS     always; a reader requires it
 *   DEFAULTED  always; a reader takes it absent as the member's zero
 *              (other writers, hand-written traces, older versions)
 *   SET        when the member is set (non-zero, non-NULL, true)
 *   NONEMPTY   when the list has an element
 *   COMPLETE   unless the op is incomplete; a reader requires it then
 *   others     a condition of their own (TRACE_WHEN_* below); optional
 * CHECK: the names a string must be one of (validate.c): NONE, DTYPE,
 *   DEVICE, PHASE, POLICY, CACHE, ORIGIN, HANDLED (FORMAT.md §3)
 * version: the format version that added the key; the validator flags a
 *   key newer than its file's format. */
#ifndef AMPTRACE_TRACE_SCHEMA_H
#define AMPTRACE_TRACE_SCHEMA_H

#include "trace_event.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

/* ------------------------------------------------------------ events */

/* The keys producers hand to the trace as they are (../producer_keys.h):
 * written when set. */
#define TRACE_PRODUCER_KEY(X, type, f, key, check, since)                   \
	X(type, key, f, SET, check, since)

#define TRACE_OP_KEYS(X)                                                    \
	X(ID, "op_id", op_id, ALWAYS, NONE, "1.0")                          \
	X(STRING, "op", op, ALWAYS, NONE, "1.0")                            \
	X(STRING, "overload", overload, DEFAULTED, NONE, "1.0")             \
	X(STRING, "phase", phase, ALWAYS, PHASE, "1.0")                     \
	X(STRING, "policy", policy, COMPLETE, POLICY, "1.0")                \
	X(STRING, "device", device, ALWAYS, DEVICE, "1.0")                  \
	X(BOOL, "emulated", emulated, DEFAULTED, NONE, "1.0")               \
	X(ID, "parent_op_id", parent_op_id, SET, NONE, "1.0")               \
	X(ID, "forward_op_id", forward_op_id, SET, NONE, "1.0")             \
	PRODUCER_OP_KEYS(TRACE_PRODUCER_KEY, X)                             \
	X(AUTOCAST, "autocast", autocast, ALWAYS, NONE, "1.0")              \
	X(TRUE, "incomplete", incomplete, SET, NONE, "1.0")                 \
	X(STRING, "closed_by", closed_by, SET, NONE, "1.0")                 \
	X(TENSORS, "inputs", inputs, COMPLETE, NONE, "1.0")                 \
	X(TENSORS, "outputs", outputs, COMPLETE, NONE, "1.0")               \
	X(INT, "status", status, SET, NONE, "1.0")                          \
	X(STRING_OR_NULL, "error", error, SET, NONE, "1.0")                 \
	X(PROFILER_TYPES, "Input type", inputs, COMPLETE, NONE, "1.0")      \
	X(PROFILER_DIMS, "Input Dims", inputs, COMPLETE, NONE, "1.0")       \
	X(ID_AGAIN, "External id", op_id, COMPLETE, NONE, "1.0")

/* An op's autocast state (struct trace_autocast). */
#define TRACE_AUTOCAST_KEYS(X)                                              \
	X(BOOL, "enabled", enabled, ALWAYS, NONE, "1.0")                    \
	X(STRING, "device", device, ALWAYS, DEVICE, "1.0")                  \
	X(STRING, "dtype", dtype, ALWAYS, DTYPE, "1.0")                     \
	X(BOOL, "cache_enabled", cache_enabled, DEFAULTED, NONE, "1.0")     \
	X(INT, "depth", depth, ALWAYS, NONE, "1.0")                         \
	X(STRING_OR_NULL, "scope", scope, DEFAULTED, NONE, "1.0")           \
	X(STRINGS, "scopes", scopes, NONEMPTY, NONE, "1.0")

/* An op's input or output (struct trace_tensor_record, FORMAT.md §3.1). */
#define TRACE_TENSOR_KEYS(X)                                                \
	X(ID, "tensor", id, ALWAYS, NONE, "1.0")                            \
	X(ID, "producer_op_id", producer_op_id, SET, NONE, "1.3")           \
	X(STRING, "dtype", dtype, ALWAYS, DTYPE, "1.0")                     \
	X(SHAPE, "shape", shape, ALWAYS, NONE, "1.0")                       \
	X(STRING_OR_NULL, "name", name, SET, NONE, "1.0")                   \
	X(TRUE, "requires_grad", requires_grad, SET, NONE, "1.0")           \
	X(TRUE, "leaf", leaf, SET, NONE, "1.0")                             \
	X(TRUE, "view", view, SET, NONE, "1.0")                             \
	X(STRING, "device", device, SET, DEVICE, "1.0")

/* A cast's (struct trace_cast_record): the cast's own members, a
 * compiled graph's keys and its source tensor's. */
#define TRACE_CAST_RUN_KEY(X, type, f, key, check, since)                   \
	X(type, key, cast.f, SET, check, since)
#define TRACE_CAST_COMPILED_KEY(X, type, f, key, check, since)              \
	X(type, key, compiled.f, SET, check, since)
#define TRACE_CAST_KEYS(X)                                                  \
	X(ID, "op_id", cast.op_id, ALWAYS, NONE, "1.0")                     \
	X(STRING_OR_NULL, "op", cast.op, SET, NONE, "1.0")                  \
	X(STRING_OR_NULL, "phase", cast.phase, SET, PHASE, "1.0")           \
	X(STRING_OR_NULL, "scope", cast.scope, SET, NONE, "1.0")            \
	PRODUCER_CAST_RUN_KEYS(TRACE_CAST_RUN_KEY, X)                       \
	PRODUCER_CAST_COMPILED_KEYS(TRACE_CAST_COMPILED_KEY, X)             \
	X(INT, "arg", cast.arg, ALWAYS, NONE, "1.0")                        \
	X(ID, "tensor", cast.tensor, ALWAYS, NONE, "1.0")                   \
	X(ID, "result", cast.result, ALWAYS, NONE, "1.0")                   \
	X(STRING, "from", cast.from, ALWAYS, DTYPE, "1.0")                  \
	X(STRING, "to", cast.to, ALWAYS, DTYPE, "1.0")                      \
	X(STRING, "cache", cast.cache, ALWAYS, CACHE, "1.0")                \
	X(STRING_OR_NULL, "reason", cast.reason, DEFAULTED, NONE, "1.0")    \
	X(U64, "bytes", cast.bytes, ALWAYS, NONE, "1.0")                    \
	X(TRUE, "stale", cast.stale, SET, NONE, "1.0")                      \
	X(STRING_OR_NULL, "name", name, SET, NONE, "1.0")                   \
	X(SHAPE, "shape", shape, DEFAULTED, NONE, "1.0")                    \
	X(TRUE, "requires_grad", requires_grad, SET, NONE, "1.0")           \
	X(TRUE, "leaf", leaf, SET, NONE, "1.0")

/* amp.scope B and E (struct trace_scope). */
#define TRACE_SCOPE_BEGIN_KEYS(X)                                           \
	X(STRING_OR_NULL, "scope", scope, DEFAULTED, NONE, "1.0")           \
	X(INT, "depth", depth, ALWAYS, NONE, "1.0")                         \
	X(STRING, "device", device, DEFAULTED, DEVICE, "1.0")               \
	X(STRING, "dtype", dtype, DEFAULTED, DTYPE, "1.0")                  \
	X(BOOL, "enabled", enabled, DEFAULTED, NONE, "1.0")                 \
	X(BOOL, "cache_enabled", cache_enabled, DEFAULTED, NONE, "1.0")

#define TRACE_SCOPE_END_KEYS(X)                                             \
	X(INT, "depth", depth, DEFAULTED, NONE, "1.0")                      \
	X(STRING, "closed_by", closed_by, SET, NONE, "1.0")

#define TRACE_CACHE_CLEAR_KEYS(X)                                           \
	X(U64, "entries", entries, ALWAYS, NONE, "1.0")                     \
	X(U64, "bytes", bytes, ALWAYS, NONE, "1.0")

#define TRACE_SCALER_KEYS(X)                                                \
	X(STRING, "what", what, ALWAYS, NONE, "1.0")                        \
	X(U64, "scaler_id", scaler_id, DEFAULTED, NONE, "1.0")              \
	X(U64, "optimizer_id", optimizer_id, SET, NONE, "1.0")              \
	X(NUMBER_OR_NULL, "scale", scale, DEFAULTED, NONE, "1.0")           \
	X(BOOL, "found_inf", found_inf, ALWAYS, NONE, "1.0")                \
	X(BOOL, "step_skipped", step_skipped, ALWAYS, NONE, "1.0")          \
	X(U64, "inf_tensor", inf_tensor, SET, NONE, "1.0")

/* A finding's keys (fix ... other_thread) are set by `amptrace run`'s
 * findings only (FORMAT.md §3.7). */
#define TRACE_DIAG_KEYS(X)                                                  \
	X(STRING, "kind", kind, ALWAYS, NONE, "1.0")                        \
	X(STRING, "message", message, ALWAYS, NONE, "1.0")                  \
	PRODUCER_DIAG_KEYS(TRACE_PRODUCER_KEY, X)                           \
	X(STRING, "fix", fix, SET, NONE, "1.0")                             \
	X(STRING, "severity", severity, SET, NONE, "1.0")                   \
	X(U64, "count", count, SET, NONE, "1.0")                            \
	X(U64, "op_id", op_id, SET, NONE, "1.0")                            \
	X(U64, "tensor", tensor, SET, NONE, "1.0")                          \
	X(I64, "thread", thread, SET, NONE, "1.0")                          \
	X(I64, "other_thread", other_thread, SET, NONE, "1.0")

/* amp.step X, a step or an evaluation window, and i, the note that full
 * detail stopped (struct trace_step, FORMAT.md §8). */
#define TRACE_STEP_KEYS(X)                                                  \
	X(I64, "step", step, ALWAYS, NONE, "1.4")                           \
	X(STRING, "evaluation", evaluation, SET, NONE, "1.4")               \
	X(STRING, "marker", marker, STEP_SPAN, NONE, "1.4")                 \
	X(BOOL, "detail", detail, STEP_SPAN, NONE, "1.4")                   \
	X(U64, "size_limit", size_limit, STEP_NOTE, NONE, "1.4")            \
	X(STRING, "measured", measured, STEP_NOTE, NONE, "1.4")

/* amp.aggregate i (struct trace_aggregate, FORMAT.md §3.12): its lists
 * are rows, arrays of the columns below, to stay small over thousands of
 * steps. */
#define TRACE_AGGREGATE_KEYS(X)                                             \
	X(I64, "step", step, ALWAYS, NONE, "1.4")                           \
	X(US, "begin", begin_ns, ALWAYS, NONE, "1.4")                       \
	X(US, "end", end_ns, SET, NONE, "1.4")                              \
	X(U64, "events", events, ALWAYS, NONE, "1.4")                       \
	X(OP_ROWS, "ops", ops, ALWAYS, NONE, "1.4")                         \
	X(CAST_ROWS, "casts", casts, ALWAYS, NONE, "1.4")                   \
	X(DIAG_ROWS, "diags", diags, ALWAYS, NONE, "1.4")                   \
	X(U64, "regions", regions, ALWAYS, NONE, "1.4")                     \
	X(AGGREGATE_CACHE, "cache", cache, ALWAYS, NONE, "1.4")             \
	X(TRUE, "cut_short", cut_short, SET, NONE, "1.4")

/* Its rows' columns (every one written, in this order). */
#define TRACE_AGGREGATE_OP_COLUMNS(X)                                       \
	X(STRING, "op", op, ALWAYS, NONE, "1.4")                            \
	X(STRING, "overload", overload, ALWAYS, NONE, "1.4")                \
	X(STRING, "phase", phase, ALWAYS, PHASE, "1.4")                     \
	X(STRING, "policy", policy, ALWAYS, POLICY, "1.4")                  \
	X(STRING_OR_NULL, "dtype", dtype, ALWAYS, DTYPE, "1.4")             \
	X(STRING, "device", device, ALWAYS, DEVICE, "1.4")                  \
	X(U64, "count", count, ALWAYS, NONE, "1.4")                         \
	X(U64, "failed", failed, ALWAYS, NONE, "1.4")                       \
	X(US, "time", dur_ns, ALWAYS, NONE, "1.4")

#define TRACE_AGGREGATE_CAST_COLUMNS(X)                                     \
	X(STRING, "op", op, ALWAYS, NONE, "1.4")                            \
	X(STRING, "phase", phase, ALWAYS, PHASE, "1.4")                     \
	X(STRING, "from", from, ALWAYS, DTYPE, "1.4")                       \
	X(STRING, "to", to, ALWAYS, DTYPE, "1.4")                           \
	X(STRING, "cache", cache, ALWAYS, CACHE, "1.4")                     \
	X(U64, "count", count, ALWAYS, NONE, "1.4")                         \
	X(U64, "bytes", bytes, ALWAYS, NONE, "1.4")                         \
	X(U64, "stale", stale, ALWAYS, NONE, "1.4")                         \
	X(US, "time", dur_ns, ALWAYS, NONE, "1.4")                          \
	X(STRING_OR_NULL, "origin", origin, ALWAYS, ORIGIN, "1.4")

#define TRACE_AGGREGATE_DIAG_COLUMNS(X)                                     \
	X(STRING, "kind", kind, ALWAYS, NONE, "1.4")                        \
	X(STRING, "phase", phase, ALWAYS, PHASE, "1.4")                     \
	X(U64, "count", count, ALWAYS, NONE, "1.4")                         \
	X(U64, "op_id", op_id, ALWAYS, NONE, "1.4")                         \
	X(U64, "tensor", tensor, ALWAYS, NONE, "1.4")                       \
	X(STRING_OR_NULL, "message", message, ALWAYS, NONE, "1.4")

/* args.cache (struct trace_aggregate_cache). */
#define TRACE_AGGREGATE_CACHE_KEYS(X)                                       \
	X(U64, "clears", clears, ALWAYS, NONE, "1.4")                       \
	X(U64, "entries", entries, ALWAYS, NONE, "1.4")                     \
	X(U64, "bytes", bytes, ALWAYS, NONE, "1.4")                         \
	X(U64, "max_entries", max_entries, ALWAYS, NONE, "1.4")             \
	X(U64, "max_bytes", max_bytes, ALWAYS, NONE, "1.4")

/* kernel and gpu_memcpy (struct trace_kernel): Kineto's keys; read
 * leniently (trace_schema.c), as other tools write them. */
#define TRACE_GPU_KEYS(X)                                                   \
	X(ID, "External id", external_id, SET, NONE, "1.0")                 \
	X(TRUE, "amp.cast_result", cast, SET, NONE, "1.0")                  \
	X(ID, "amp.op_id", op_id, SET, NONE, "1.0")                         \
	X(I64, "amp.pid", host_pid, DEFAULTED, NONE, "1.0")                 \
	X(U32, "correlation", correlation, DEFAULTED, NONE, "1.0")          \
	X(U32, "device", device, DEFAULTED, NONE, "1.0")                    \
	X(U32, "stream", stream, DEFAULTED, NONE, "1.0")

#define TRACE_KERNEL_KEYS(X)                                                \
	TRACE_GPU_KEYS(X)                                                   \
	X(TRIPLE, "grid", grid, DEFAULTED, NONE, "1.0")                     \
	X(TRIPLE, "block", block, DEFAULTED, NONE, "1.0")                   \
	X(INT, "registers per thread", registers, DEFAULTED, NONE, "1.0")   \
	X(INT, "shared memory", shared_memory, DEFAULTED, NONE, "1.0")

#define TRACE_MEMCPY_KEYS(X)                                                \
	TRACE_GPU_KEYS(X)                                                   \
	X(U64, "bytes", bytes, DEFAULTED, NONE, "1.0")                      \
	X(BANDWIDTH, "memory bandwidth (GB/s)", bytes, TIMED_COPY, NONE,    \
	  "1.0")

/* amp.flow s and f (struct trace_flow_event). */
#define TRACE_FLOW_KEYS(X)                                                  \
	X(ID, "op_id", op_id, ALWAYS, NONE, "1.2")                          \
	X(ID, "tensor", tensor, SET, NONE, "1.2")

/* M events (struct trace_meta): which keys depends on the event's name;
 * read leniently, as other tools write them. */
#define TRACE_META_KEYS(X)                                                  \
	X(STRING, "name", value, NAMED, NONE, "1.0")                        \
	X(STRING, "labels", value, LABELS, NONE, "1.0")                     \
	X(I64, "sort_index", sort_index, SORT_INDEX, NONE, "1.0")           \
	X(INT, "rank", rank, RANKED, NONE, "1.0")                           \
	X(STRINGS, "argv", argv, SET, NONE, "1.0")                          \
	X(STRING, "framework", framework, SET, NONE, "1.1")                 \
	X(I64, "device", device, GPU_PROCESS, NONE, "1.0")                  \
	X(I64, "host_pid", host_pid, SET, NONE, "1.0")                      \
	X(I64, "os_tid", os_tid, SET, NONE, "1.0")

/* Keys outside "args", after the first ones every event has (name, cat,
 * ph, ts, pid, tid, dur). */
#define TRACE_CACHE_CLEAR_TOP_KEYS(X)                                       \
	X(SCOPE_THREAD, "s", entries, DEFAULTED, NONE, "1.0")
#define TRACE_SCALER_TOP_KEYS(X)                                            \
	X(SCOPE_THREAD, "s", what, DEFAULTED, NONE, "1.0")
#define TRACE_DIAG_TOP_KEYS(X)                                              \
	X(SCOPE, "s", scope, DEFAULTED, NONE, "1.0")
#define TRACE_STEP_TOP_KEYS(X)                                              \
	X(SCOPE, "s", scope, STEP_NOTE, NONE, "1.4")
#define TRACE_AGGREGATE_TOP_KEYS(X)                                         \
	X(SCOPE_THREAD, "s", step, DEFAULTED, NONE, "1.4")
#define TRACE_FLOW_TOP_KEYS(X)                                              \
	X(STRING, "bp", bind, SET, NONE, "1.2")                             \
	X(ID, "id", id, ALWAYS, NONE, "1.2")

/* ------------------------------------------------- header and trailer */

/* "amptrace" (struct trace_header). */
#define TRACE_HEADER_KEYS(X)                                                \
	X(STRING, "format", format, ALWAYS, NONE, "1.0")                    \
	X(STRING, "generator", generator, SET, NONE, "1.0")                 \
	X(STRINGS, "command", command, SET, NONE, "1.0")                    \
	X(INT_OR_NULL, "rank", rank, DEFAULTED, NONE, "1.0")                \
	X(STRING, "host", host, SET, NONE, "1.0")                           \
	X(U64, "monotonic_base_ns", monotonic_base_ns, SET, NONE, "1.0")    \
	X(STRING, "flush", flush, SET, NONE, "1.0")                         \
	X(MERGED, "merged", merged, SET, NONE, "1.0")                       \
	X(STRING, "framework", framework, SET, NONE, "1.1")                 \
	X(STRING, "policy_table", policy_table, SET, NONE, "1.4")           \
	X(RECORDING, "recording", recording, SET, NONE, "1.4")

/* amptrace.recording (struct trace_recording, FORMAT.md §8). */
#define TRACE_RECORDING_KEYS(X)                                             \
	X(STRING, "steps", steps, ALWAYS, NONE, "1.4")                      \
	X(U64, "max_size", max_size, DEFAULTED, NONE, "1.4")

#define TRACE_MERGED_INPUT_KEYS(X)                                          \
	X(STRING, "file", file, DEFAULTED, NONE, "1.0")                     \
	X(INT, "rank", rank, DEFAULTED, NONE, "1.0")                        \
	X(BOOL, "truncated", truncated, DEFAULTED, NONE, "1.0")

/* "amptraceEnd" (struct trace_trailer). */
#define TRACE_TRAILER_KEYS(X)                                               \
	X(BOOL, "complete", complete, DEFAULTED, NONE, "1.0")               \
	X(U64, "events", events, DEFAULTED, NONE, "1.0")                    \
	X(US, "duration_us", duration_ns, SET, NONE, "1.0")                 \
	X(EXIT, "exit", exit, SET, NONE, "1.0")                             \
	X(PROCESSES, "processes", processes, SET, NONE, "1.0")              \
	X(MERGED_ENDS, "inputs", inputs, SET, NONE, "1.0")

#define TRACE_EXIT_KEYS(X)                                                  \
	X(STRING, "status", status, DEFAULTED, NONE, "1.0")                 \
	X(INT, "code", code, EXITED, NONE, "1.0")                           \
	X(INT, "signal", signal, SIGNALED, NONE, "1.0")                     \
	X(STRING, "signal_name", signal_name, SIGNALED, NONE, "1.0")

#define TRACE_PROCESS_END_KEYS(X)                                           \
	X(I64, "pid", pid, DEFAULTED, NONE, "1.0")                          \
	X(INT_OR_NULL, "rank", rank, DEFAULTED, NONE, "1.0")                \
	X(STRINGS, "argv", argv, DEFAULTED, NONE, "1.0")                    \
	X(STRING, "framework", framework, SET, NONE, "1.1")                 \
	X(STRING, "status", status, DEFAULTED, NONE, "1.0")                 \
	X(INT, "exit_code", exit_code, EXIT_CODE, NONE, "1.0")              \
	X(INT, "signal", signal, SIGNALED, NONE, "1.0")                     \
	X(STRING, "signal_name", signal_name, SIGNALED, NONE, "1.0")        \
	X(U64, "threads", threads, DEFAULTED, NONE, "1.0")                  \
	X(U64, "events", events, DEFAULTED, NONE, "1.0")                    \
	X(U64, "ops", ops, DEFAULTED, NONE, "1.0")                          \
	X(U64, "casts", casts, DEFAULTED, NONE, "1.0")                      \
	X(U64, "in_flight_ops", in_flight_ops, DEFAULTED, NONE, "1.0")      \
	X(U64, "raw_errors", raw_errors, DEFAULTED, NONE, "1.0")            \
	X(STEPS, "steps", steps, SET, NONE, "1.4")                          \
	X(GPU, "gpu", gpu, SET, NONE, "1.0")

/* A process's "steps" (struct trace_process_steps, FORMAT.md §8). */
#define TRACE_PROCESS_STEPS_KEYS(X)                                         \
	X(U64, "ended", ended, DEFAULTED, NONE, "1.4")                      \
	X(U64, "detail", detail, DEFAULTED, NONE, "1.4")                    \
	X(U64, "aggregates", aggregates, DEFAULTED, NONE, "1.4")            \
	X(U64, "aggregated_ops", aggregated_ops, DEFAULTED, NONE, "1.4")    \
	X(U64, "detail_stopped_at", detail_stopped_at, DETAIL_STOPPED,      \
	  NONE, "1.4")

#define TRACE_GPU_TIMING_KEYS(X)                                            \
	X(BOOL, "timing", timing, DEFAULTED, NONE, "1.0")                   \
	X(STRING, "reason", reason, UNTIMED, NONE, "1.0")                   \
	X(U64, "kernels", kernels, TIMED, NONE, "1.0")                      \
	X(U64, "memcpys", memcpys, TIMED, NONE, "1.0")                      \
	X(BOOL, "complete", complete, TIMED, NONE, "1.0")                   \
	X(U64, "unlinked", unlinked, TIMED_COMPLETE, NONE, "1.0")           \
	X(U64, "untimed", untimed, TIMED_COMPLETE, NONE, "1.0")             \
	X(U64, "dropped", dropped, TIMED_COMPLETE, NONE, "1.0")             \
	X(U64, "buffers", buffers, TIMED_COMPLETE, NONE, "1.0")             \
	X(U64, "aggregated", aggregated, TIMED_COMPLETE, NONE, "1.4")

#define TRACE_MERGED_END_KEYS(X)                                            \
	X(STRING, "file", file, DEFAULTED, NONE, "1.0")                     \
	X(INT, "rank", rank, DEFAULTED, NONE, "1.0")                        \
	X(I64, "pid", pid, DEFAULTED, NONE, "1.0")                          \
	X(U64, "events", events, DEFAULTED, NONE, "1.0")                    \
	X(BOOL, "truncated", truncated, DEFAULTED, NONE, "1.0")             \
	X(EXIT, "exit", exit, DEFAULTED, NONE, "1.0")

/* --------------------------------------------------------------- WHEN */

/* Whether the writer writes a row's key: `e` the event (NULL for the
 * header and trailer), `m` the row's struct, `f` its member. */
#define TRACE_WHEN_ALWAYS(e, m, f) 1
#define TRACE_WHEN_DEFAULTED(e, m, f) 1
#define TRACE_WHEN_SET(e, m, f) ((m)->f)
#define TRACE_WHEN_NONEMPTY(e, m, f) ((m)->n##f > 0)
#define TRACE_WHEN_COMPLETE(e, m, f) (!(m)->incomplete)
#define TRACE_WHEN_TIMED_COPY(e, m, f) (trace_us_to_ns((e)->dur) > 0)
#define TRACE_WHEN_NAMED(e, m, f) (trace_meta_holds(e) == TRACE_META_NAME)
#define TRACE_WHEN_LABELS(e, m, f) (trace_meta_holds(e) == TRACE_META_LABELS)
#define TRACE_WHEN_SORT_INDEX(e, m, f)                                      \
	(trace_meta_holds(e) == TRACE_META_SORT_INDEX)
#define TRACE_WHEN_RANKED(e, m, f) ((m)->rank >= 0)
#define TRACE_WHEN_GPU_PROCESS(e, m, f) ((m)->host_pid != 0)
#define TRACE_WHEN_EXITED(e, m, f) (trace_exit_is(m, "exited"))
#define TRACE_WHEN_SIGNALED(e, m, f) (trace_exit_is(m, "signaled"))
#define TRACE_WHEN_EXIT_CODE(e, m, f)                                       \
	(trace_exit_is(m, "exited") && (m)->exit_code >= 0)
#define TRACE_WHEN_TIMED(e, m, f) ((m)->timing)
#define TRACE_WHEN_UNTIMED(e, m, f) (!(m)->timing)
#define TRACE_WHEN_TIMED_COMPLETE(e, m, f) ((m)->timing && (m)->complete)
#define TRACE_WHEN_STEP_SPAN(e, m, f) ((e)->ph == 'X' && !(m)->evaluation)
#define TRACE_WHEN_STEP_NOTE(e, m, f) ((e)->ph != 'X')
#define TRACE_WHEN_DETAIL_STOPPED(e, m, f) ((m)->detail_stopped)

/* What an M event's args hold, by its name. */
enum trace_meta_holds {
	TRACE_META_NAME,       /* process_name, thread_name, others */
	TRACE_META_LABELS,     /* process_labels */
	TRACE_META_SORT_INDEX, /* *_sort_index */
};
enum trace_meta_holds trace_meta_holds(const struct trace_event *e);

/* Whether an exit's (or a process's) status is `status`. */
#define trace_exit_is(m, status_name)                                       \
	((m)->status && !strcmp((m)->status, status_name))

/* ------------------------------------------------- the tables at run time */

enum trace_key_type {
	TRACE_TYPE_STRING, TRACE_TYPE_STRING_OR_NULL, TRACE_TYPE_ID,
	TRACE_TYPE_ID_AGAIN, TRACE_TYPE_U64, TRACE_TYPE_U32, TRACE_TYPE_I64,
	TRACE_TYPE_INT, TRACE_TYPE_INT_OR_NULL, TRACE_TYPE_BOOL,
	TRACE_TYPE_TRUE, TRACE_TYPE_NUMBER_OR_NULL, TRACE_TYPE_US,
	TRACE_TYPE_SHAPE, TRACE_TYPE_STRINGS, TRACE_TYPE_TRIPLE,
	TRACE_TYPE_PROFILER_TYPES, TRACE_TYPE_PROFILER_DIMS,
	TRACE_TYPE_BANDWIDTH, TRACE_TYPE_SCOPE, TRACE_TYPE_SCOPE_THREAD,
	TRACE_TYPE_AUTOCAST, TRACE_TYPE_EXIT, TRACE_TYPE_GPU,
	TRACE_TYPE_TENSORS, TRACE_TYPE_PROCESSES, TRACE_TYPE_MERGED,
	TRACE_TYPE_MERGED_ENDS, TRACE_TYPE_RECORDING, TRACE_TYPE_STEPS,
	TRACE_TYPE_AGGREGATE_CACHE, TRACE_TYPE_OP_ROWS, TRACE_TYPE_CAST_ROWS,
	TRACE_TYPE_DIAG_ROWS,
};

/* What a reader asks of a key (WHEN, as far as it matters to reading). */
enum trace_key_need {
	TRACE_NEED_OPTIONAL,
	TRACE_NEED_ALWAYS,
	TRACE_NEED_COMPLETE, /* when the op is not incomplete */
};

enum trace_key_check {
	TRACE_CHECK_NONE,
	TRACE_CHECK_DTYPE,
	TRACE_CHECK_DEVICE,
	TRACE_CHECK_PHASE,
	TRACE_CHECK_POLICY,
	TRACE_CHECK_CACHE,
	TRACE_CHECK_ORIGIN,
	TRACE_CHECK_HANDLED,
};

struct trace_object;

/* One row, as the reader and the validator walk it. */
struct trace_key {
	const char *key;
	enum trace_key_type type;
	size_t offset;        /* the member in the table's struct */
	size_t count_offset;  /* lists: their int count member */
	enum trace_key_need need;
	enum trace_key_check check;
	const char *since;    /* "1.0" */
	const struct trace_object *object; /* objects and their arrays */
};

/* A table: the struct its rows' members are of. */
struct trace_object {
	const char *name;     /* "amp.op args", for messages and docs */
	size_t size;          /* of the struct */
	const struct trace_key *keys;
	size_t nkeys;
	bool lenient;         /* other tools' events: a key of another type
			       * is ignored rather than an error */
};

extern const struct trace_object trace_schema_op, trace_schema_autocast,
	trace_schema_tensor, trace_schema_cast, trace_schema_scope_begin,
	trace_schema_scope_end, trace_schema_cache_clear, trace_schema_scaler,
	trace_schema_diag, trace_schema_kernel, trace_schema_memcpy,
	trace_schema_flow, trace_schema_meta, trace_schema_cache_clear_top,
	trace_schema_scaler_top, trace_schema_diag_top, trace_schema_flow_top,
	trace_schema_header, trace_schema_merged_input, trace_schema_trailer,
	trace_schema_exit, trace_schema_process_end, trace_schema_gpu_timing,
	trace_schema_merged_end, trace_schema_step, trace_schema_step_top,
	trace_schema_aggregate, trace_schema_aggregate_top,
	trace_schema_aggregate_op, trace_schema_aggregate_cast,
	trace_schema_aggregate_diag, trace_schema_aggregate_cache,
	trace_schema_recording, trace_schema_process_steps;

/* Every table, for documentation checks (NULL-terminated). */
extern const struct trace_object *const trace_schema_objects[];

/* A kind's tables: its "args" (NULL: none the model holds) and the keys
 * it writes outside them (NULL: none). */
const struct trace_object *trace_schema_args(enum trace_kind kind);
const struct trace_object *trace_schema_top(enum trace_kind kind);

/* The member a row names in `object` (the struct the row's table is for). */
static inline void *trace_key_member(const struct trace_key *k, void *object)
{
	return (char *)object + k->offset;
}

/* "1.3" < "1.10": compares two "major.minor" versions. */
int trace_version_compare(const char *a, const char *b);

#endif /* AMPTRACE_TRACE_SCHEMA_H */
