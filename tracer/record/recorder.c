/* The recorder (see recorder.h): libamp's event source for the producer
 * API (producer.h).  It subscribes to libamp's hook API and hands every
 * event to the producer, which streams it into the raw directory as a
 * record of the tracer's producer model (producer_emit_libamp,
 * libamp_encode.h): libamp's struct amp_event is libamp's ABI, not the
 * tracer's model.
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
#include "gpu_session.h"
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

/* Kernel timing through libamp's amp_gpu_profiler_* (gpu_session.h).
 * Emulated cuda is told apart by libamp's backend status before
 * amp_gpu_profiler_start is asked, so the program's last error is left
 * alone in the common case; the status is what the trace records. */
static int libamp_start(amp_gpu_activity_fn sink, char *why, size_t size)
{
	const char *status = amp_cuda_backend_status
				     ? amp_cuda_backend_status()
				     : "libamp has no kernel timing";

	snprintf(why, size, "%s", status);
	if (!amp_gpu_profiler_start || strncmp(status, "emulated", 8) == 0)
		return -1;
	int result = amp_gpu_profiler_start(sink, NULL);
	if (result != 0 && amp_last_error) {
		snprintf(why, size, "%s", amp_last_error());
		if (amp_clear_error)
			amp_clear_error();
	}
	return result;
}

static int libamp_flush(void)
{
	return amp_gpu_profiler_flush();
}

static int libamp_stop(struct amp_gpu_profiler_stats *stats)
{
	return amp_gpu_profiler_stop(stats);
}

static const struct gpu_profiler libamp_profiler = {
	libamp_start, libamp_flush, libamp_stop,
};

/* ----------------------------------------------------------------- steps */

/* libamp programs' steps (FORMAT.md §8): once the program has a
 * GradScaler (its first event), a step ends at each of its updates;
 * before that, each entry into an outermost autocast region after the
 * first starts a new step. */
static atomic_bool scaler_seen;
static atomic_bool region_in_step;

static void step_before(const struct amp_event *e)
{
	if (e->kind == AMP_EVENT_SCOPE_ENTER && e->scope.depth == 1 &&
	    !atomic_load_explicit(&scaler_seen, memory_order_relaxed) &&
	    atomic_exchange(&region_in_step, true))
		producer_step_end("autocast region", e->time_ns, e->thread);
}

static void step_after(const struct amp_event *e)
{
	if (e->kind != AMP_EVENT_SCALER)
		return;
	atomic_store(&scaler_seen, true);
	if (e->scaler.what && !strcmp(e->scaler.what, "update"))
		producer_step_end("scaler update", e->time_ns + 1, e->thread);
}

static void on_event(const struct amp_event *e, void *user)
{
	(void)user;
	if (__builtin_expect(e->kind >= AMP_EVENT_SCOPE_ENTER, 0))
		step_before(e);
	producer_emit_libamp(e);
	if (__builtin_expect(e->kind >= AMP_EVENT_SCOPE_ENTER, 0))
		step_after(e);
	if (__builtin_expect(e->kind == AMP_EVENT_OP_BEGIN &&
				     e->op.device == AMP_DEVICE_CUDA, 0))
		gpu_session_cuda_op(&libamp_profiler, e->thread, e->time_ns);
}

/* ---------------------------------------------------------- attaching */

static void after_fork_in_child(void)
{
	gpu_session_after_fork();
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
	gpu_session_end();
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
	gpu_session_end();
	producer_mark_exit();
}
