/* The bridge's value checks (values.c): what libamp's value checks are
 * for libamp programs, for PyTorch's.  They read the low-precision
 * results of the ops autocast touched and of backward, and autocast's
 * casts from f32 to f16/bf16, with libamp's own scans and verdicts
 * (lib/diag_scan.h, compiled into the extension), and report as libamp
 * does, in amp.diag events: fp16-overflow (an op, or a cast, made inf or
 * NaN out of finite values) and cast-underflow.  Host tensors are read
 * in place when the op ends; device tensors through the observer's
 * reductions, read once per step (values_flush). */
#ifndef AMPTRACE_TORCH_VALUES_H
#define AMPTRACE_TORCH_VALUES_H

#include "observer.h"

#include <stdbool.h>
#include <stdint.h>

/* On by default where `amptrace run` records (AMP_VALUE_CHECKS, which
 * --no-value-checks sets to 0); the module sets it at attach. */
void values_set_enabled(bool on);
bool values_enabled(void);
/* A CUDA graph began (true) or ended capturing: while one captures, the
 * device's checks are not queued (their reductions would be captured with
 * the graph and read before it ever ran); host tensors are still read. */
void values_capturing(bool began);
/* The observer's device reductions (NULL entries: none, as under the
 * pure-Python fallback, which has no elements to read either). */
void values_bind(const struct obs_observer *observer);

/* An op as the messages name it, with its arguments as called. */
struct values_op {
	uint64_t op_id;
	const char *op, *overload;
	const char *module;           /* its module's path, or NULL/"" */
	enum amp_phase phase;
	uint64_t forward_op_id;       /* backward ops: the op they differentiate */
	const struct obs_args *arguments;
};

/* An op ended: its first low-precision result holding inf or NaN, when
 * every floating argument was finite, is the origin of a non-finite value
 * (an fp16-overflow).  `inner_origin`: a cast of its arguments or an op
 * inside it is the origin already (reported, so not again).  Returns
 * whether the op holds an origin (itself or inner), as far as known now
 * (host tensors), for the op around it. */
bool values_check_results(const struct values_op *op,
			  const struct obs_args *results, bool inner_origin);
/* One described tensor with its elements, kept apart from its call's
 * obs_args (which the observer reuses). */
struct values_tensor {
	struct producer_tensor info;
	const void *data;        /* obs_args.data: NULL when not on the host */
	int64_t numel;
	bool dense;
	int64_t strides[PRODUCER_MAX_DIMS];
};
void values_tensor_of(const struct obs_args *args, int index,
		      struct values_tensor *out);

/* A cast from f32 to f16/bf16 made for `op` (an autocast cast of one of
 * its arguments, or the program's own .to()): its `source` and `result`.
 * Called when the call that made the cast ends.  Returns whether it
 * overflowed (known now: host tensors), so the op's inf is the cast's. */
bool values_check_cast(const struct values_op *op,
		       const struct values_tensor *source,
		       const struct producer_tensor *result);
/* Reads the device's counts queued since the last call and reports them:
 * once per step (the Python layer's optimizer phase begins), and when
 * recording ends. */
void values_flush(void);

#endif /* AMPTRACE_TORCH_VALUES_H */
