/* Where the results of a no_grad region go (window_flow.c): an
 * outermost autocast region entered under no_grad or inference_mode is
 * an evaluation only when what it computed never reaches training (an op
 * run with grad on that an input requiring grad makes part of the
 * autograd graph: a head on a frozen backbone's features, a loss on a
 * teacher's logits).  FORMAT.md §8.
 *
 * Each such region takes a slot while it is undecided: the ops that end
 * on its thread while it is open mark their results with the slot, ops
 * that read marked tensors pass the marks on to theirs, and an op that
 * trains on a marked tensor decides the slot "trained".  Nothing is
 * followed while no slot is undecided: the per-op cost is then one
 * relaxed atomic load (window_flow_followed). */
#ifndef AMPTRACE_TORCH_WINDOW_FLOW_H
#define AMPTRACE_TORCH_WINDOW_FLOW_H

#include "observer.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* A region under no_grad begins on this thread: its slot (0..63), or -1
 * when 64 are undecided already (the region is then not followed). */
int window_flow_open(void);
/* The region of `slot` exited: this thread's ops are no longer its. */
void window_flow_close(int slot);
/* Whether what the region of `slot` computed reached training so far;
 * the slot is free again. */
bool window_flow_end(int slot);

/* In a forked child: the parent's regions are not its own, and the lock
 * may have been held by a thread the child does not have. */
void window_flow_after_fork(void);

/* events.c's two calls per op of the trace (outermost and nested ops
 * alike).  Only read while some slot is undecided. */
extern atomic_bool window_flow_following;

static inline bool window_flow_followed(void)
{
	return atomic_load_explicit(&window_flow_following,
				    memory_order_relaxed);
}

/* An op begins with `inputs`: the slots whose results it reads, still
 * undecided (0 when it trains on them: they are decided then). */
uint64_t window_flow_inputs(const struct obs_args *inputs,
			    bool grad_enabled);
/* The op ended with `outputs`: they carry `slots`, and the slot of the
 * region open on this thread. */
void window_flow_outputs(uint64_t slots, const struct obs_args *outputs);

#endif /* AMPTRACE_TORCH_WINDOW_FLOW_H */
