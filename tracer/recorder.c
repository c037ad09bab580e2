/* The recorder (see recorder.h): libamp's event source for the producer
 * API (producer.h).  It subscribes to libamp's hook API and hands every
 * event to the producer, which streams it into the raw directory.
 *
 * Why this shape:
 *   - It talks to libamp through the public hook API only, and references
 *     libamp's symbols weakly: preloaded into a process that does not use
 *     libamp (a shell, a launcher, a Python interpreter) it finds
 *     amp_hook_add == NULL and stays idle, without dragging libamp in.
 *   - GPU kernel timing (CUPTI, through libamp's amp_gpu_profiler_*)
 *     starts at the first op on device cuda, not at attach: starting it
 *     loads the CUDA module and creates a context, which a program that
 *     never uses the GPU should not pay for.
 */
#include "recorder.h"

#include "amp.h"
#include "producer.h"
#include "raw.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Weak: resolved to NULL when the process has no libamp. */
#pragma weak amp_hook_add
#pragma weak amp_hook_remove
#pragma weak amp_cuda_backend_status
#pragma weak amp_gpu_profiler_start
#pragma weak amp_gpu_profiler_flush
#pragma weak amp_gpu_profiler_stop
#pragma weak amp_last_error
#pragma weak amp_clear_error

/* The build passes the project's version; tests that compile this file
 * directly need not. */
#ifndef AMPTRACE_VERSION
#define AMPTRACE_VERSION "(test build)"
#endif

static int hook_handle;

/* ------------------------------------------------------ GPU activities */

static atomic_bool gpu_tried;    /* the first cuda op was seen */
static atomic_bool gpu_running;  /* amp_gpu_profiler_start succeeded */
static _Atomic uint64_t gpu_last_flush_ns;

/* How often activities are pulled out of CUPTI while the program runs:
 * often enough that a crash loses little, rarely enough to cost nothing. */
#define GPU_FLUSH_INTERVAL_NS (200u * 1000 * 1000)

static void on_gpu_activities(const struct amp_gpu_activity *activities,
			      size_t count, void *user)
{
	(void)user;
	producer_gpu_activities(activities, count);
}

/* At the first op on device cuda: starts kernel timing when device cuda
 * is a GPU, and records in the thread's stream whether it did and why
 * not.  Emulated cuda is told apart by libamp's backend status before
 * amp_gpu_profiler_start is asked, so the program's last error is left
 * alone in the common case. */
static void gpu_begin(uint64_t amp_thread, uint64_t time_ns)
{
	const char *status = amp_cuda_backend_status
				     ? amp_cuda_backend_status()
				     : "libamp has no kernel timing";
	char reason[RAW_MAX_STRING];
	int result = -1;

	snprintf(reason, sizeof reason, "%s", status);
	if (amp_gpu_profiler_start && strncmp(status, "emulated", 8) != 0) {
		atomic_store(&gpu_last_flush_ns, time_ns);
		result = amp_gpu_profiler_start(on_gpu_activities, NULL);
		if (result == 0) {
			atomic_store(&gpu_running, true);
		} else if (amp_last_error) {
			snprintf(reason, sizeof reason, "%s", amp_last_error());
			if (amp_clear_error)
				amp_clear_error();
		}
	}
	producer_gpu_status(amp_thread, time_ns, result, reason);
}

/* Pulls what CUPTI holds, at most once per interval (any thread). */
static void gpu_flush_maybe(uint64_t time_ns)
{
	uint64_t last = atomic_load_explicit(&gpu_last_flush_ns,
					     memory_order_relaxed);

	if (time_ns - last < GPU_FLUSH_INTERVAL_NS ||
	    !atomic_compare_exchange_strong(&gpu_last_flush_ns, &last, time_ns))
		return;
	amp_gpu_profiler_flush();
}

/* Stops kernel timing: the last activities, then the counts. */
static void gpu_end(void)
{
	struct amp_gpu_profiler_stats stats = { 0 };

	if (!atomic_exchange(&gpu_running, false) || !amp_gpu_profiler_stop)
		return;
	amp_gpu_profiler_stop(&stats);
	producer_gpu_stats(&stats);
}

static void on_event(const struct amp_event *e, void *user)
{
	(void)user;
	producer_emit(e);
	if (__builtin_expect(e->kind == AMP_EVENT_OP_BEGIN &&
				     e->op.device == AMP_DEVICE_CUDA, 0)) {
		if (!atomic_load_explicit(&gpu_tried, memory_order_relaxed) &&
		    !atomic_exchange(&gpu_tried, true))
			gpu_begin(e->thread, e->time_ns);
		else if (atomic_load_explicit(&gpu_running,
					      memory_order_relaxed))
			gpu_flush_maybe(e->time_ns);
	}
}

/* ---------------------------------------------------------- attaching */

/* CUPTI does not follow a fork: the child starts kernel timing anew. */
static void after_fork_in_child(void)
{
	atomic_store(&gpu_running, false);
	atomic_store(&gpu_tried, false);
}

static void install_fork_handler(void)
{
	pthread_atfork(NULL, NULL, after_fork_in_child);
}

int recorder_attach(const char *raw_dir)
{
	static pthread_once_t fork_handler = PTHREAD_ONCE_INIT;
	struct producer_info libamp_info = {
		.framework = "libamp " AMPTRACE_VERSION,
		.names = producer_amp_names(),
	};

	if (!amp_hook_add || producer_attached())
		return -1;
	if (producer_attach(raw_dir, &libamp_info) != 0)
		return -1;
	pthread_once(&fork_handler, install_fork_handler);
	hook_handle = amp_hook_add(AMP_EVENT_MASK_ALL, on_event, NULL);
	if (hook_handle < 0) {
		producer_detach();
		fprintf(stderr, "amptrace recorder: amp_hook_add failed\n");
		return -1;
	}
	return 0;
}

void recorder_detach(void)
{
	if (!producer_attached())
		return;
	gpu_end();
	producer_detach();
	if (amp_hook_remove)
		amp_hook_remove(hook_handle);
	hook_handle = 0;
}

__attribute__((constructor)) static void recorder_init(void)
{
	const char *dir = getenv(RAW_ENV_DIR);

	if (dir && *dir)
		recorder_attach(dir);
}

/* A clean exit leaves p<pid>/exit; a process that died leaves none. */
__attribute__((destructor)) static void recorder_fini(void)
{
	if (!producer_attached())
		return;
	gpu_end();
	producer_mark_exit();
}
