/* The producer model: one event as a producer hands it to the producer
 * API (producer.h), in the tracer's own terms.  It is not libamp's
 * `struct amp_event` (amp.h, a public ABI): the recorder maps libamp's
 * events into it (recorder.c), the PyTorch bridge fills it directly, so
 * a key the trace gains (a member here, a row in raw_schema.h and in
 * trace/trace_schema.h) needs no change to libamp.
 *
 * Enumerated fields (dtype, device, policy, phase, cache) are small codes
 * whose names the producer gives once, in its producer_names
 * (producer.h): the converter maps codes to names by those tables.
 * Strings and arrays need only live during producer_emit.  What each
 * kind must hold, and in what order a producer emits them, is the
 * producer contract (../PRODUCERS.md), which producer_check.c checks. */
#ifndef AMPTRACE_PRODUCER_EVENT_H
#define AMPTRACE_PRODUCER_EVENT_H

#include "producer_keys.h"

#include <stdbool.h>
#include <stdint.h>

/* A tensor describes at most this many dimensions. */
#define PRODUCER_MAX_DIMS 8

/* The kinds, numbered as their raw records (raw.h). */
enum producer_kind {
	PRODUCER_OP_BEGIN,
	PRODUCER_OP_END,
	PRODUCER_CAST,
	PRODUCER_SCOPE_ENTER,
	PRODUCER_SCOPE_EXIT,
	PRODUCER_CACHE_CLEAR,
	PRODUCER_SCALER,
	PRODUCER_DIAG,
	PRODUCER_KIND_COUNT
};

/* producer_tensor.flags */
#define PRODUCER_TENSOR_LEAF 1u
#define PRODUCER_TENSOR_REQUIRES_GRAD 2u
#define PRODUCER_TENSOR_VIEW 4u

struct producer_tensor {
	uint64_t id;             /* unique in the process, never 0 */
	uint64_t producer_op_id; /* the op that last wrote it, or 0 */
	const char *name;        /* "fc1.weight", or NULL */
	uint8_t dtype, device;   /* codes */
	uint8_t flags;           /* PRODUCER_TENSOR_* */
	uint8_t ndim;            /* at most PRODUCER_MAX_DIMS */
	int64_t shape[PRODUCER_MAX_DIMS];
};

/* The autocast state of the thread for the op's device. */
struct producer_autocast {
	bool enabled;
	uint8_t device, dtype;
	bool cache_enabled;
	int32_t depth;           /* regions open */
	const char *scope;       /* innermost named region, or NULL */
};

/* OP_BEGIN and OP_END (END: policy, tensors as executed, status). */
struct producer_op {
	uint64_t op_id, parent_op_id, forward_op_id;
	const char *op;          /* "linear" */
	const char *overload;    /* "" for the default overload */
	PRODUCER_OP_KEYS(PRODUCER_KEY_MEMBER, _) /* ../producer_keys.h */
	uint8_t phase, policy, device;
	bool emulated;           /* device cuda running on the CPU */
	struct producer_autocast autocast;
	int32_t ninputs, noutputs;
	const struct producer_tensor *inputs, *outputs;
	int32_t status;          /* 0, or the failure */
	const char *error;       /* when status != 0 */
	uint64_t begin_ns;       /* END: its BEGIN's time */
};

struct producer_cast {
	uint64_t op_id;
	int32_t arg;             /* the op's tensor argument it is for */
	uint8_t from, to, cache;
	bool stale;              /* a hit on a tensor modified since */
	/* the cache's size after this miss stored its entry (cache_counted:
	 * set, which the contract asks of every miss) */
	bool cache_counted;
	uint64_t cache_entries, cache_bytes;
	uint64_t bytes;          /* written (0 on a hit) */
	uint64_t begin_ns;
	const char *reason;
	PRODUCER_CAST_KEYS(PRODUCER_KEY_MEMBER, _) /* ../producer_keys.h */
	struct producer_tensor source, result;
};

/* SCOPE_ENTER (depth after) and SCOPE_EXIT (depth before). */
struct producer_scope {
	int32_t depth;
	uint8_t device, dtype;
	bool enabled, cache_enabled;
	const char *scope;       /* the region's name, or NULL */
};

struct producer_cache_clear {
	uint64_t entries, bytes; /* dropped */
};

struct producer_scaler {
	uint64_t scaler_id, optimizer_id, inf_tensor_id;
	double scale;            /* NaN: none */
	bool found_inf, step_skipped;
	/* "scale", "unscale", "step", "update" ("lr_scheduler_step": the
	 * bridge's, for an LR scheduler of a GradScaler's optimizer) */
	const char *what;
};

struct producer_diag {
	uint64_t op_id, tensor_id;
	const char *kind, *message;
	PRODUCER_DIAG_KEYS(PRODUCER_KEY_MEMBER, _) /* ../producer_keys.h */
};

struct producer_event {
	enum producer_kind kind;
	uint64_t time_ns;        /* CLOCK_MONOTONIC */
	uint64_t thread;         /* the producer's thread number, from 1 */
	union {
		struct producer_op op;
		struct producer_cast cast;
		struct producer_scope scope;
		struct producer_cache_clear cache;
		struct producer_scaler scaler;
		struct producer_diag diag;
	};
};

#endif /* AMPTRACE_PRODUCER_EVENT_H */
