/* The C interface between the C++ RecordFunction observer (observer.cpp,
 * the only C++ of the bridge) and the bridge's event logic (events.c).
 *
 * The observer sees every ATen call on every thread (outer op, the casts
 * autocast makes inside it, the inner op, backward nodes) and describes
 * each in the producer model's terms (producer_event.h): tensors become
 * producer_tensor with stable ids, dtypes and devices libamp's codes.
 * events.c decides what the calls mean (ops, casts, cache hits) and emits
 * producer events.  Describing tensors costs, so the observer asks events.c
 * first whether a call's arguments or results are wanted at all. */
#ifndef AMPTRACE_TORCH_OBSERVER_H
#define AMPTRACE_TORCH_OBSERVER_H

#include "amp.h"
#include "amp_value_stats.h"
#include "producer_event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Tensor arguments of one call beyond this are not described. */
#define OBS_MAX_TENSORS 72

/* One operator schema, described once by the observer and cached by its
 * RecordFunction name; events.c keeps its own data in `policy`. */
struct obs_op {
	char op[96];           /* "linear": the aten name without "aten::" */
	char overload[64];     /* "" for the default overload */
	bool aten;             /* an aten:: operator (others are transparent) */
	bool backward_node;    /* an autograd node or the engine's wrapper */
	/* bit i: schema argument i is an optional<Tensor> (autocast ignores
	 * those when it picks a promote type) */
	uint64_t optional_args;
	int dtype_index;       /* the `ScalarType? dtype` argument, or -1 */
	int returns;           /* results in the schema, -1 unknown */
	int arguments;         /* arguments in the schema, -1 unknown */
	/* filled by events.c on first use */
	bool policy_ready;
	const void *policy_row[AMP_DEVICE_TYPE_COUNT];
	bool kind_ready;       /* the three below are set */
	bool custom_function;  /* a custom autograd Function's apply */
	bool custom_backward;  /* ... or its backward node */
	bool conversion;       /* aten::to or aten::_to_copy */
};

/* The described arguments (or results) of one call. */
struct obs_args {
	int ntensors;
	struct producer_tensor tensors[OBS_MAX_TENSORS];
	int64_t versions[OBS_MAX_TENSORS]; /* version counters (stale hits) */
	bool optional[OBS_MAX_TENSORS];    /* an optional<Tensor> slot */
	enum amp_dtype dtype_arg;          /* the call's dtype argument */
	/* OBS_WANT_VALUES: a tensor in host memory, read in place while the
	 * call runs: its element [0, ..., 0], its `numel` elements laid out
	 * by `strides` (in elements; `dense`: with no gaps, in some order);
	 * else NULL (on a GPU: obs_observer.cuda_queue; not readable) */
	const void *data[OBS_MAX_TENSORS];
	int64_t numel[OBS_MAX_TENSORS];
	bool dense[OBS_MAX_TENSORS];
	int64_t strides[OBS_MAX_TENSORS][PRODUCER_MAX_DIMS];
};

/* The autocast state of the calling thread, read at a call's start. */
struct obs_autocast {
	bool enabled[AMP_DEVICE_TYPE_COUNT];
	enum amp_dtype dtype[AMP_DEVICE_TYPE_COUNT];
	bool cache_enabled;
	bool grad_enabled;
};

/* events.c: what to describe of a call. */
enum obs_want {
	OBS_WANT_NOTHING = 0,
	OBS_WANT_INPUTS = 1,
	OBS_WANT_OUTPUTS = 2,
	/* the call runs inside an autograd node (backward) */
	OBS_IN_BACKWARD = 4,
	/* the tensors' elements too: obs_args.data, and CUDA tensors kept
	 * for obs_observer.cuda_queue until the call ends */
	OBS_WANT_VALUES = 8,
};

/* What a reduction on the GPU counts (the value checks' questions, asked
 * of a device tensor: obs_observer.cuda_queue). */
enum obs_reduce {
	/* a low-precision result: its inf and NaN; the call's floating
	 * arguments: their non-finite values and largest finite |x| */
	OBS_REDUCE_RESULT,
	/* the source of a cast (argument 0): the counts of the cast verdict
	 * (diag_scan.h), against the limits given */
	OBS_REDUCE_CAST_SOURCE,
};

struct obs_reduction {
	enum obs_reduce what;
	/* OBS_REDUCE_RESULT.  `counted` false: inf and nan only say whether
	 * there are any (nan set: inf unknown); arguments_non_finite counts
	 * arguments holding some */
	int64_t inf, nan;
	bool counted;
	int64_t arguments_non_finite;
	double arguments_max_abs;
	/* OBS_REDUCE_CAST_SOURCE: the source's statistics against the
	 * target's limits (amp_cast_verdict_of_stats judges them) */
	struct amp_value_stats source;
};

/* What the observer calls (events.c, in the _bridge extension).  The
 * observer is a library of its own, built against the exact torch it runs
 * in (at build time for the torch meson found, else on first use: see
 * _observer.py); the two halves meet through these two tables, so the
 * extension itself needs no torch to build. */
struct obs_events {
	/* Start of a call.  `scope_backward`: an autograd node.
	 * `autocast_any` reads whether autocast is on for any device on the
	 * calling thread; begin calls it only when the answer matters.
	 * Returns a mask of obs_want: with OBS_WANT_INPUTS the observer calls
	 * begin_args next. */
	unsigned (*begin)(struct obs_op *op, bool scope_backward,
			  int64_t seq_nr, bool (*autocast_any)(void));
	void (*begin_args)(const struct obs_args *inputs,
			   const struct obs_autocast *autocast);
	/* End of the call that began last on this thread; `outputs` is NULL
	 * unless the begin asked for OBS_WANT_OUTPUTS.  `failed`: the call
	 * raised (its end runs while the exception unwinds). */
	void (*end)(const struct obs_args *outputs, bool failed);
	/* Value statistics (amp_value_stats.h) of `count` contiguous
	 * elements at `data` (f32, f16, bf16) of a tensor on GPU `device`,
	 * reduced on its cudaStream_t `stream` into a row read once per step
	 * (or on the host, device -1: the tests).  0 with *row set; else
	 * the observer reduces with torch's ops. */
	int (*value_stats)(const void *data, enum amp_dtype dtype,
			   int64_t count, const struct amp_value_limits *limits,
			   int device, void *stream, int64_t *row);
	/* The device's first `count` rows, once `stream`'s work is done, and
	 * its rows start over: 0; or -1, this step's numbers lost (its rows
	 * kept: the next read's counts go past them). */
	int (*value_stats_read)(int device, void *stream,
				struct amp_value_stats *rows, int64_t count);
};

/* What the observer offers. */
struct obs_observer {
	/* Installs the RecordFunction callback (once per process, off).
	 * Returns 0, or -1 with a message in `error`. */
	int (*install)(char *error, size_t size);
	/* Turns the callback on and off (recording stops; the callback
	 * stays). */
	void (*enable)(bool on);
	/* Names the tensor whose TensorImpl is `impl` (a Tensor's _cdata):
	 * its events carry the name from now on.  Returns its id. */
	uint64_t (*name_tensor)(uintptr_t impl, const char *name);
	/* The name of the tensor whose TensorImpl is `impl`, NULL when it
	 * has none (valid for the process's life). */
	const char *(*tensor_name)(uintptr_t impl);
	/* Value checks on a GPU, without a sync per op: reduces, on the
	 * device, result `index` of the call ending now
	 * (OBS_REDUCE_RESULT, with the arguments the call began with) or of
	 * the argument 0 it began with (OBS_REDUCE_CAST_SOURCE, against the
	 * cast target's `limits`).  Only from events.c's end, for a call
	 * that asked OBS_WANT_VALUES.  `tag` comes back with its counts.
	 * false: not queued (not on a GPU, or torch refused). */
	bool (*cuda_queue)(enum obs_reduce what, int index,
			   const struct amp_value_limits *limits, uint64_t tag);
	/* Reads every reduction queued (one copy to the host for all:
	 * called once per step) and hands each to `deliver`. */
	void (*cuda_collect)(void (*deliver)(uint64_t tag,
					     const struct obs_reduction *r));
	/* The id and name (NULL: none) of the tensor whose TensorImpl is
	 * `impl`, as its events give them (a compiled call's arguments,
	 * which no op hands over); one never seen is named as made outside
	 * the recorded ops. */
	uint64_t (*tensor_id)(uintptr_t impl, const char **name);
};

/* Bumped whenever either table or the structs above change: a cached
 * observer built from older sources is then rebuilt, not misread. */
#define OBS_ABI_VERSION 9 /* 9: obs_events.value_stats */
#define OBS_BIND_SYMBOL "amptrace_observer_bind"

/* The observer library's one export: keeps `events`, fills `observer`.
 * Returns 0, or -1 when `abi` is not OBS_ABI_VERSION. */
typedef int (*obs_bind_fn)(unsigned abi, const struct obs_events *events,
			   struct obs_observer *observer);

#ifdef __cplusplus
}
#endif

#endif /* AMPTRACE_TORCH_OBSERVER_H */
