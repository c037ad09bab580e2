/* GPU kernel timing for an event source: when it starts, how often its
 * activities are pulled, when it stops.  The source supplies the profiler
 * (libamp's amp_gpu_profiler_* for the recorder, the CUDA module's table
 * for the PyTorch bridge); the session hands activities, its status and
 * its counts to the producer.
 *
 * Timing starts at the first op on device cuda, not at attach: starting
 * it loads CUDA and CUPTI, which a program that never uses the GPU should
 * not pay for. */
#ifndef AMPTRACE_GPU_SESSION_H
#define AMPTRACE_GPU_SESSION_H

#include "amp.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gpu_profiler {
	/* Starts timing into `sink`; 0, or < 0 with why not in `why`. */
	int (*start)(amp_gpu_activity_fn sink, char *why, size_t size);
	int (*flush)(void);
	int (*stop)(struct amp_gpu_profiler_stats *stats);
};

/* An op on device cuda began on `thread` at `time_ns`: the first one
 * starts timing (and records whether it did, and why not, in that
 * thread's stream); later ones pull activities now and then. */
void gpu_session_cuda_op(const struct gpu_profiler *profiler, uint64_t thread,
			 uint64_t time_ns);
/* Timing is on: ops may push correlation ids. */
bool gpu_session_running(void);
/* Stops timing, through the profiler that started it: the last
 * activities, then the counts.  It also stops at exit, before the CUDA
 * runtime's exit handlers. */
void gpu_session_end(void);
/* In a forked child: CUPTI does not follow a fork, timing starts anew. */
void gpu_session_after_fork(void);

#endif /* AMPTRACE_GPU_SESSION_H */
