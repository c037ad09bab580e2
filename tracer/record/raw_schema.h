/* The raw stream's record layouts (raw.h), each described once.  The
 * encoder (raw_encode.h, in the traced program) and the decoder
 * (raw_decode.c, in `amptrace run`) are both generated from these tables,
 * so they cannot disagree on a field's order or width.
 *
 * A kind's table lists its payload fields in order as
 * X(TYPE, field, extra), `field` being a member of the kind's model
 * struct (struct producer_event for the producer's kinds,
 * producer_event.h):
 *   U64 I32 U8 F64   the member as that many bytes (U8: codes, bools)
 *   V64              an unsigned LEB128 varint (1 byte below 128): ids,
 *                    counts and sizes, small in practice
 *   S32              a signed varint (zigzag, then V64's form)
 *   T64              a time in ns as the signed varint of (the record's
 *                    time - the member): a begin time takes 2-4 bytes,
 *                    not 8 (struct producer_event models only: their
 *                    time_ns)
 *   STR              varint (length + 1) + bytes + a NUL (so that the
 *                    decoder hands out the string where it lies);
 *                    varint 0 (and nothing after it) = NULL
 *   STR_IF           STR, written as NULL unless member `extra` is set
 *   V64_IF           V64, present only when member `extra` (decoded
 *                    earlier in the record) is set
 *   DIMS             u8 count (member `extra`, at most
 *                    PRODUCER_MAX_DIMS), then that many signed varints
 *                    from the array `field`
 *   FLAGS            U8 of a tensor's PRODUCER_TENSOR_* bits (libamp's
 *                    tensors hold them as three bools)
 *   PAD              one zero byte (no member)
 *   AUTOCAST         struct producer_autocast (RAW_AUTOCAST_FIELDS)
 *   TENSOR           struct producer_tensor (RAW_TENSOR_FIELDS)
 *   TENSORS          u8 count (member `extra`, at most RAW_MAX_TENSORS),
 *                    then that many TENSORs from the array `field`
 *   OP_KEYS          the keys producers hand over as they are, of the op
 *   CAST_KEYS        `field` (or the cast),
 *   DIAG_KEYS        ... or the diag: ../producer_keys.h's rows; a
 *                    V64 of which are set (bit i: row i), then each set
 *                    one, in the rows' order (a string as STR, a number
 *                    as V64).  libamp's events have none of them: one
 *                    zero byte
 * Both encoders are generated from these tables: raw_encode.h's over the
 * producer model, libamp_encode.h's over libamp's struct amp_event, whose
 * members bear the model's names.
 * Records are what the traced program pays for, page by page (a fresh
 * tmpfs page costs ~2.5 us to allocate, zero and map): hence varints. */
#ifndef AMPTRACE_RAW_SCHEMA_H
#define AMPTRACE_RAW_SCHEMA_H

#include "amp.h"
#include "producer_event.h"
#include "raw.h"

#include <stdint.h>

/* OP_KEYS, CAST_KEYS and DIAG_KEYS say which keys follow in a varint
 * mask: one byte while the keys set are among the first 7 rows. */
#define RAW_COUNT_KEY(X, type, f, key, check, since) +1
_Static_assert((0 PRODUCER_OP_KEYS(RAW_COUNT_KEY, _)) <= 32 &&
		       (0 PRODUCER_CAST_KEYS(RAW_COUNT_KEY, _)) <= 32 &&
		       (0 PRODUCER_DIAG_KEYS(RAW_COUNT_KEY, _)) <= 32,
	       "a mask (unsigned) has room for 32 keys");

/* A TENSORS count is one byte. */
#define RAW_MAX_TENSORS 255

/* RAW_KIND_GPU_STATUS's model: whether kernel timing started. */
struct raw_gpu_status {
	int32_t result; /* 0 = started */
	const char *reason;
};

/* RAW_KIND_GPU_STATS's model: the profiler's counts at its stop. */
struct raw_gpu_stats {
	struct amp_gpu_profiler_stats stats;
	uint64_t lost; /* activities the producer found no room for */
	uint64_t aggregated; /* ... it counted: their op was folded */
};

/* RAW_KIND_STEP's model: a training step ended (producer.h,
 * producer_step_end); the record's time is its end. */
struct raw_step {
	uint64_t step;       /* from 0 */
	uint64_t begin_ns;   /* when it began */
	uint8_t detail;      /* its events were recorded in full */
	const char *marker;  /* what ended it: "optimizer.step", ... */
};

/* RAW_KIND_EVALUATION's model: an evaluation window ended (the record's
 * time). */
struct raw_evaluation {
	uint64_t begin_ns;
	uint64_t step;       /* the step it ran in */
	const char *how;     /* "model.eval()", "no_grad", ... */
};

/* RAW_KIND_DETAIL_STOP's model: full detail stops from step `step` on,
 * whatever the selection says, because the recording reached `limit`
 * bytes (--max-size): `measured` is what reached it. */
struct raw_detail_stop {
	uint64_t step;
	uint64_t limit;
	const char *measured; /* "the trace", "the raw stream" */
};

/* A step without full detail, per thread: one row per (op, overload,
 * phase, policy, output dtype, device) of its ops... */
struct raw_step_op {
	uint64_t step, count, failed, dur_ns;
	uint8_t phase, policy, device;
	uint8_t has_dtype, dtype;  /* the first output's (none: no output) */
	const char *op, *overload;
};

/* ... one per (op, its phase, from, to, cache result, origin) of its
 * casts ... */
struct raw_step_cast {
	uint64_t step, count, bytes, dur_ns, stale;
	uint8_t phase, from, to, cache;
	const char *op;
	const char *origin;  /* NULL: autocast's (producer_keys.h) */
};

/* ... one per (kind, phase of the op it happened in) of its amp.diag
 * events, the first one's message, op and tensor kept ... */
struct raw_step_diag {
	uint64_t step, count, op_id, tensor;
	uint8_t phase;
	const char *kind, *message;
};

/* ... then the totals, which end the thread's aggregates of the step:
 * the events folded (all kinds), its autocast regions entered, cache
 * clears, the cache's size at the step's end and at most. */
struct raw_step_totals {
	uint64_t step, begin_ns, end_ns, events, regions, clears;
	uint64_t cache_entries, cache_bytes, cache_max_entries, cache_max_bytes;
};

/* RAW_KIND_RANK's model: the process's rank, as its runtime learned it
 * (torch.distributed.init_process_group): it overrides process.json's
 * rank from the environment (FORMAT.md §5). */
struct raw_rank {
	int32_t rank;
};

#define RAW_TENSOR_FIELDS(X)                                                \
	X(V64, id, ) X(V64, producer_op_id, ) X(U8, dtype, )                \
	X(U8, device, ) X(FLAGS, flags, ) X(DIMS, shape, ndim) X(STR, name, )

#define RAW_AUTOCAST_FIELDS(X)                                              \
	X(U8, enabled, ) X(U8, device, ) X(U8, dtype, )                     \
	X(U8, cache_enabled, ) X(S32, depth, ) X(STR, scope, )

#define RAW_OP_BEGIN_FIELDS(X)                                              \
	X(V64, op.op_id, ) X(V64, op.parent_op_id, )                        \
	X(V64, op.forward_op_id, ) X(U8, op.phase, ) X(U8, op.device, )     \
	X(U8, op.emulated, ) X(AUTOCAST, op.autocast, )                     \
	X(STR, op.op, ) X(STR, op.overload, ) X(OP_KEYS, op, )

#define RAW_OP_END_FIELDS(X)                                                \
	X(V64, op.op_id, ) X(V64, op.parent_op_id, )                        \
	X(V64, op.forward_op_id, ) X(T64, op.begin_ns, )                    \
	X(S32, op.status, ) X(U8, op.phase, ) X(U8, op.policy, )            \
	X(U8, op.device, ) X(U8, op.emulated, ) X(AUTOCAST, op.autocast, )  \
	X(STR, op.op, ) X(STR, op.overload, )                               \
	X(TENSORS, op.inputs, op.ninputs)                                   \
	X(TENSORS, op.outputs, op.noutputs) X(STR_IF, op.error, op.status) \
	X(OP_KEYS, op, )

#define RAW_CAST_FIELDS(X)                                                  \
	X(V64, cast.op_id, ) X(S32, cast.arg, ) X(U8, cast.from, )          \
	X(U8, cast.to, ) X(U8, cast.cache, ) X(U8, cast.stale, )            \
	X(U8, cast.cache_counted, ) X(V64, cast.bytes, )                    \
	X(T64, cast.begin_ns, )                                             \
	X(V64_IF, cast.cache_entries, cast.cache_counted)                   \
	X(V64_IF, cast.cache_bytes, cast.cache_counted)                     \
	X(TENSOR, cast.source, ) X(TENSOR, cast.result, )                   \
	X(STR, cast.reason, ) X(CAST_KEYS, cast, )

#define RAW_SCOPE_FIELDS(X)                                                 \
	X(S32, scope.depth, ) X(U8, scope.device, ) X(U8, scope.dtype, )    \
	X(U8, scope.enabled, ) X(U8, scope.cache_enabled, )                 \
	X(STR, scope.scope, )

#define RAW_CACHE_CLEAR_FIELDS(X)                                           \
	X(V64, cache.entries, ) X(V64, cache.bytes, )

#define RAW_SCALER_FIELDS(X)                                                \
	X(V64, scaler.scaler_id, ) X(V64, scaler.optimizer_id, )            \
	X(V64, scaler.inf_tensor_id, ) X(F64, scaler.scale, )               \
	X(U8, scaler.found_inf, ) X(U8, scaler.step_skipped, )              \
	X(STR, scaler.what, )

#define RAW_DIAG_FIELDS(X)                                                  \
	X(V64, diag.op_id, ) X(V64, diag.tensor_id, ) X(STR, diag.kind, )   \
	X(STR, diag.message, ) X(DIAG_KEYS, diag, )

/* The record's time is start_ns. */
#define RAW_GPU_ACTIVITY_FIELDS(X)                                          \
	X(U64, end_ns, ) X(U64, op_id, ) X(U64, cast_id, ) X(U64, bytes, )  \
	X(I32, device, ) X(I32, stream, ) X(I32, correlation_id, )          \
	X(I32, grid[0], ) X(I32, grid[1], ) X(I32, grid[2], )               \
	X(I32, block[0], ) X(I32, block[1], ) X(I32, block[2], )            \
	X(I32, registers, ) X(I32, shared_memory, ) X(U8, kind, )           \
	X(U8, copy_kind, ) X(PAD, , ) X(PAD, , ) X(STR, name, )

#define RAW_GPU_STATUS_FIELDS(X) X(I32, result, ) X(STR, reason, )

#define RAW_GPU_STATS_FIELDS(X)                                             \
	X(U64, stats.kernels, ) X(U64, stats.memcpys, )                     \
	X(U64, stats.unlinked, ) X(U64, stats.untimed, )                    \
	X(U64, stats.dropped, ) X(U64, stats.buffers, ) X(U64, lost, )      \
	X(U64, aggregated, )

#define RAW_STEP_FIELDS(X)                                                  \
	X(V64, step, ) X(V64, begin_ns, ) X(U8, detail, ) X(STR, marker, )

#define RAW_EVALUATION_FIELDS(X)                                            \
	X(V64, begin_ns, ) X(V64, step, ) X(STR, how, )

#define RAW_DETAIL_STOP_FIELDS(X)                                           \
	X(V64, step, ) X(V64, limit, ) X(STR, measured, )

#define RAW_STEP_OP_FIELDS(X)                                               \
	X(V64, step, ) X(V64, count, ) X(V64, failed, ) X(V64, dur_ns, )    \
	X(U8, phase, ) X(U8, policy, ) X(U8, device, ) X(U8, has_dtype, )   \
	X(U8, dtype, ) X(STR, op, ) X(STR, overload, )

#define RAW_STEP_CAST_FIELDS(X)                                             \
	X(V64, step, ) X(V64, count, ) X(V64, bytes, ) X(V64, dur_ns, )     \
	X(V64, stale, ) X(U8, phase, ) X(U8, from, ) X(U8, to, )            \
	X(U8, cache, ) X(STR, op, ) X(STR, origin, )

#define RAW_STEP_DIAG_FIELDS(X)                                             \
	X(V64, step, ) X(V64, count, ) X(V64, op_id, ) X(V64, tensor, )     \
	X(U8, phase, ) X(STR, kind, ) X(STR, message, )

#define RAW_STEP_TOTALS_FIELDS(X)                                           \
	X(V64, step, ) X(V64, begin_ns, ) X(V64, end_ns, )                  \
	X(V64, events, ) X(V64, regions, ) X(V64, clears, )                 \
	X(V64, cache_entries, ) X(V64, cache_bytes, )                       \
	X(V64, cache_max_entries, ) X(V64, cache_max_bytes, )

#define RAW_RANK_FIELDS(X) X(S32, rank, )

/* Every kind: X(name, kind number, model struct, field table).  The
 * producer's kinds come first (RAW_EVENT_KINDS): producer_emit takes any
 * of them. */
#define RAW_EVENT_KINDS(X)                                                  \
	X(op_begin, PRODUCER_OP_BEGIN, struct producer_event,               \
	  RAW_OP_BEGIN_FIELDS)                                              \
	X(op_end, PRODUCER_OP_END, struct producer_event, RAW_OP_END_FIELDS) \
	X(cast, PRODUCER_CAST, struct producer_event, RAW_CAST_FIELDS)      \
	X(scope_enter, PRODUCER_SCOPE_ENTER, struct producer_event,         \
	  RAW_SCOPE_FIELDS)                                                 \
	X(scope_exit, PRODUCER_SCOPE_EXIT, struct producer_event,           \
	  RAW_SCOPE_FIELDS)                                                 \
	X(cache_clear, PRODUCER_CACHE_CLEAR, struct producer_event,         \
	  RAW_CACHE_CLEAR_FIELDS)                                           \
	X(scaler, PRODUCER_SCALER, struct producer_event, RAW_SCALER_FIELDS) \
	X(diag, PRODUCER_DIAG, struct producer_event, RAW_DIAG_FIELDS)

#define RAW_GPU_KINDS(X)                                                    \
	X(gpu_activity, RAW_KIND_GPU_ACTIVITY, struct amp_gpu_activity,     \
	  RAW_GPU_ACTIVITY_FIELDS)                                          \
	X(gpu_status, RAW_KIND_GPU_STATUS, struct raw_gpu_status,           \
	  RAW_GPU_STATUS_FIELDS)                                            \
	X(gpu_stats, RAW_KIND_GPU_STATS, struct raw_gpu_stats,              \
	  RAW_GPU_STATS_FIELDS)

#define RAW_STEP_KINDS(X)                                                   \
	X(step, RAW_KIND_STEP, struct raw_step, RAW_STEP_FIELDS)            \
	X(evaluation, RAW_KIND_EVALUATION, struct raw_evaluation,           \
	  RAW_EVALUATION_FIELDS)                                            \
	X(detail_stop, RAW_KIND_DETAIL_STOP, struct raw_detail_stop,        \
	  RAW_DETAIL_STOP_FIELDS)                                           \
	X(step_op, RAW_KIND_STEP_OP, struct raw_step_op, RAW_STEP_OP_FIELDS) \
	X(step_cast, RAW_KIND_STEP_CAST, struct raw_step_cast,              \
	  RAW_STEP_CAST_FIELDS)                                             \
	X(step_diag, RAW_KIND_STEP_DIAG, struct raw_step_diag,              \
	  RAW_STEP_DIAG_FIELDS)                                             \
	X(step_totals, RAW_KIND_STEP_TOTALS, struct raw_step_totals,        \
	  RAW_STEP_TOTALS_FIELDS)

#define RAW_PROCESS_KINDS(X)                                                \
	X(rank, RAW_KIND_RANK, struct raw_rank, RAW_RANK_FIELDS)

#endif /* AMPTRACE_RAW_SCHEMA_H */
