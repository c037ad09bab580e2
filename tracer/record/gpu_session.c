/* GPU kernel timing for an event source (gpu_session.h). */
#include "gpu_session.h"

#include "producer.h"
#include "raw.h"

#include <stdatomic.h>
#include <stdlib.h>

static atomic_bool tried;    /* the first cuda op was seen */
static atomic_bool running;  /* the profiler started */
static _Atomic uint64_t last_flush_ns;
static _Atomic(const struct gpu_profiler *) started; /* the one running */

/* How often activities are pulled out of CUPTI while the program runs:
 * often enough that a crash loses little, rarely enough to cost nothing. */
#define FLUSH_INTERVAL_NS (200u * 1000 * 1000)

static void on_activities(const struct amp_gpu_activity *activities,
			  size_t count, void *user)
{
	(void)user;
	producer_gpu_activities(activities, count);
}

static void begin(const struct gpu_profiler *profiler, uint64_t thread,
		  uint64_t time_ns)
{
	static atomic_bool exit_handler;
	char why[RAW_MAX_STRING] = "";

	atomic_store(&last_flush_ns, time_ns);
	int result = profiler->start(on_activities, why, sizeof why);
	if (result == 0) {
		atomic_store(&started, profiler);
		atomic_store(&running, true);
		/* at exit, before CUDA's own exit handlers: the CUDA runtime
		 * registered them when it started, before the first op, so
		 * this one, registered later, runs first.  A destructor (the
		 * preloaded recorder's) runs after them all, when CUPTI can
		 * no longer be stopped safely. */
		if (!atomic_exchange(&exit_handler, true))
			atexit(gpu_session_end);
	}
	producer_gpu_status(thread, time_ns, result, why);
}

/* Pulls what CUPTI holds, at most once per interval (any thread). */
static void flush_maybe(const struct gpu_profiler *profiler, uint64_t time_ns)
{
	uint64_t last = atomic_load_explicit(&last_flush_ns,
					     memory_order_relaxed);

	if (time_ns - last < FLUSH_INTERVAL_NS ||
	    !atomic_compare_exchange_strong(&last_flush_ns, &last, time_ns))
		return;
	profiler->flush();
}

void gpu_session_cuda_op(const struct gpu_profiler *profiler, uint64_t thread,
			 uint64_t time_ns)
{
	if (!atomic_load_explicit(&tried, memory_order_relaxed) &&
	    !atomic_exchange(&tried, true))
		begin(profiler, thread, time_ns);
	else if (atomic_load_explicit(&running, memory_order_relaxed))
		flush_maybe(profiler, time_ns);
}

bool gpu_session_running(void)
{
	return atomic_load_explicit(&running, memory_order_relaxed);
}

void gpu_session_end(void)
{
	struct amp_gpu_profiler_stats stats = { 0 };

	if (!atomic_exchange(&running, false))
		return;
	atomic_load(&started)->stop(&stats);
	producer_gpu_stats(&stats);
}

void gpu_session_after_fork(void)
{
	atomic_store(&tried, false);
	atomic_store(&running, false);
}
