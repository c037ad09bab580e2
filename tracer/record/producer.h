/* The producer API: the one way events get into the crash-safe raw
 * stream (raw.h) that `amptrace run` converts.  Every event source calls
 * it: libamp's hook subscriber (recorder.c) is one caller, the PyTorch
 * bridge another.  An event is a `struct producer_event`
 * (producer_event.h): the model every producer fills, whatever runtime it
 * observes; what it must hold is the producer contract (../PRODUCERS.md).
 *
 * Threads: each calling thread writes its own stream, t<thread>.raw,
 * where <thread> is the event's `thread` field (a producer-assigned number,
 * 1 = first thread seen, stable for the thread's life, never reused in a
 * process).  No lock and no system call on the hot path.
 *
 * Lifetime: producer_attach() once per process image (after fork() the
 * child continues in a directory of its own), producer_detach() stops
 * recording, producer_mark_exit() records a clean exit. */
#ifndef AMPTRACE_PRODUCER_H
#define AMPTRACE_PRODUCER_H

#include "amp.h"
#include "producer_event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Names of the enum values the producer's events use, written into
 * p<pid>/process.json so the converter maps numbers by name: a producer
 * built from another version of libamp's enums still converts right.
 * A NULL function writes the numbers themselves. */
struct producer_names {
	const char *(*dtype)(int);
	const char *(*profiler_dtype)(int);
	const char *(*policy)(int);
	const char *(*device)(int);
	const char *(*phase)(int);
	const char *(*cache)(int);
};

/* libamp's own names for the enums of amp.h, from its name functions
 * where the process has them (weak references: NULL, so numbers, where
 * it has not).  What a producer whose codes are amp.h's enum values
 * passes (the recorder, the bridge). */
struct producer_names producer_amp_names(void);

/* The phase codes producers use: libamp's (enum amp_phase), then one
 * libamp has no use for, which producer_amp_names names "other": ops
 * outside forward, backward and the optimizer, as a producer that can
 * tell says (the PyTorch bridge: weight initialisation, data loading,
 * zeroing gradients). */
enum {
	PRODUCER_PHASE_OTHER = AMP_PHASE_COUNT,
	PRODUCER_PHASE_COUNT
};

struct producer_info {
	/* What produced the events: "libamp 0.1.0", "torch 1.13.1". */
	const char *framework;
	/* The policy table its policies come from ("1.13", "newest"), or
	 * NULL (libamp's own: the newest). */
	const char *policy_table;
	struct producer_names names;
};

/* Starts recording this process image into `raw_dir` (AMPTRACE_RAW_DIR).
 * Returns 0, or -1 with a message on stderr (already attached, the
 * directory cannot be written). */
int producer_attach(const char *raw_dir, const struct producer_info *info);
/* Events after this are not recorded. */
void producer_detach(void);
bool producer_attached(void);
/* Creates p<pid>/exit: the process ended cleanly (a process that died
 * leaves none). */
void producer_mark_exit(void);

/* The name the calling thread's stream carries from now on (its first
 * event opens it), in place of the OS thread name: a runtime's own name
 * for the thread (Python's threading name), without renaming it in the
 * OS.  UTF-8; at most 31 bytes are kept, so the caller cuts it at a
 * character boundary. */
void producer_set_thread_name(const char *name);

/* The process's rank, learned after it started (the PyTorch bridge:
 * torch.distributed.init_process_group returned), recorded in
 * `thread`'s stream: the trace labels the process with it from then on,
 * over its environment's (RANK, ...: FORMAT.md §5).  A negative rank is
 * none and is not recorded. */
void producer_rank(int rank, uint64_t thread, uint64_t time_ns);

/* Tests: populate new chunks as on a kernel without MADV_POPULATE_WRITE
 * (Linux before 5.14), which the producer otherwise finds out itself. */
void producer_populate_by_mmap(void);

/* Writes one event into the calling thread's stream.  Re-entrant calls
 * (an event emitted while this thread is inside producer_emit) drop. */
void producer_emit(const struct producer_event *event);
/* The same for one of libamp's events (amp.h's hook API): written as the
 * producer model's record, its members mapped by name at compile time
 * (libamp_encode.h), so that libamp's ABI is not the model. */
void producer_emit_libamp(const struct amp_event *event);

/* Training steps (producer_steps.c; FORMAT.md §8).  A producer marks
 * the end of each step; the recording keeps the steps AMPTRACE_STEPS
 * selects (step_select.h; default: the first 20) in full detail and,
 * for every other step, each thread's per-step aggregates instead of its
 * ops, casts, regions, cache clears and diags (step_aggregate.h).
 * Full detail also stops, at the next step, once the trace passes
 * AMPTRACE_MAX_SIZE bytes.  GradScaler events are always recorded.
 * Forked children follow their parent's steps until they mark one. */

/* The step in progress ended now; `marker` says what ended it
 * ("optimizer.step", "scaler.update", "amptrace_torch.step", "autocast
 * region"), a string that lives for the process's life. */
void producer_step_end(const char *marker, uint64_t time_ns,
		       uint64_t thread);
/* An evaluation window (model.eval(), a region under no_grad) ran from
 * begin_ns to end_ns in `step` (the one in progress, or the one before
 * it: a region known for a window only once its results were followed
 * past that step's end): not a training step.  `how` lives for the
 * process's life. */
void producer_evaluation(uint64_t step, uint64_t begin_ns, uint64_t end_ns,
			 const char *how, uint64_t thread);
/* An evaluation window begins or ends now: each thread's aggregates of a
 * step not in full detail end at its next event outside an op, so that
 * none spans a window's edge (readers tell a window's rows by their
 * times: FORMAT.md §3.12).  producer_evaluation() is an end. */
void producer_window_edge(void);
/* The step in progress (from 0), and whether it is recorded in full. */
uint64_t producer_step_now(void);
bool producer_step_detail(void);

/* The GPU stream (tgpu.raw), shared by whichever threads deliver GPU
 * activities: batches of kernel/memcpy records, then the profiler's
 * counts at the end. */
void producer_gpu_activities(const struct amp_gpu_activity *activities,
			     size_t count);
void producer_gpu_stats(const struct amp_gpu_profiler_stats *stats);
/* Records in `thread`'s stream whether kernel timing started (result 0)
 * and, if not, why. */
void producer_gpu_status(uint64_t thread, uint64_t time_ns, int result,
			 const char *reason);

#ifdef __cplusplus
}
#endif

#endif /* AMPTRACE_PRODUCER_H */
