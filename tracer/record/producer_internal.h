/* What producer.c and producer_steps.c share (not part of the producer
 * API): one record into the calling thread's stream, and the steps'
 * hooks into the producer's life. */
#ifndef AMPTRACE_PRODUCER_INTERNAL_H
#define AMPTRACE_PRODUCER_INTERNAL_H

#include "amp.h"
#include "producer_event.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The producer's thread-local storage model (producer.c says why). */
#ifdef PRODUCER_TLS_DYNAMIC
#define PRODUCER_TLS __thread
#else
#define PRODUCER_TLS __thread __attribute__((tls_model("initial-exec")))
#endif

/* Writes a record of `kind` at most `bound` payload bytes, encoded by
 * `encode` from `model`, into `thread`'s stream.  false when it could not
 * be written (not attached, no room, inside another record). */
typedef uint8_t *producer_encode_fn(uint8_t *p, const void *model);
bool producer_write(uint16_t kind, uint64_t time_ns, uint64_t thread,
		    size_t bound, producer_encode_fn *encode,
		    const void *model);
/* Opens `thread`'s stream (its header names the process and the thread
 * to `amptrace run`) without writing a record: a thread whose events are
 * all folded into aggregates is in the trace from its first event on.
 * false when it cannot be opened. */
bool producer_open_stream(uint64_t thread);
/* This process image's directory, p<pid> ("" before attach). */
const char *producer_process_dir(void);
/* The raw directory recorded into ("" before attach). */
const char *producer_raw_root(void);
/* Raw bytes this process wrote so far (less up to 64 KiB per thread). */
uint64_t producer_raw_bytes(void);

/* producer_steps.c, called by producer.c: */
/* What becomes of an event of `kind` (a producer_kind) on the calling
 * thread: written, folded into the thread's aggregates of a step
 * recorded without full detail (then handed to one of the fold
 * functions), or dropped (the exit of a region whose entry was folded). */
enum step_route { STEP_WRITE, STEP_FOLD, STEP_DROP };
enum step_route producer_steps_route(unsigned kind, uint64_t thread);
void producer_steps_fold(const struct producer_event *e);
/* The same for one of libamp's events: the members the aggregates read,
 * taken into the producer model (only for a folded event). */
void producer_steps_fold_libamp(const struct amp_event *e);
/* At attach (reads AMPTRACE_STEPS and AMPTRACE_MAX_SIZE), in a forked
 * child, at a thread's end (its aggregates go out), and at the process's
 * clean end. */
void producer_steps_attach(uint64_t now_ns);
void producer_steps_after_fork(void);
void producer_steps_thread_exit(void);
void producer_steps_exit(void);
/* A new chunk was mapped: where a process that marks no step learns
 * that the recording passed its size limit. */
void producer_steps_chunk(void);
/* Whether op `op_id` was folded into a step's aggregates, as far as a
 * window of FOLDED_OP_WINDOW op ids remembers (any thread): a GPU's
 * activities name their op long after it ran, and those of a folded op
 * are counted, not written (FORMAT.md §3.12).  A folded op asked after
 * FOLDED_OP_WINDOW more ops began reads as kept: its activities are
 * written, naming an op the trace lacks. */
#define FOLDED_OP_WINDOW (1u << 16)
bool producer_steps_folded_op(uint64_t op_id);

/* A test's stop inside a flush of a thread's aggregates
 * (tests/test_pipeline.c kills the thread there): called with the rows
 * written into the stream so far, 0 right after the seal; the last call
 * has the totals row written and the reset to come.  Weak and hidden:
 * NULL in every program but a test linked with the producer. */
void amptrace_test_flush_point(unsigned rows_written)
	__attribute__((weak, visibility("hidden")));

#endif /* AMPTRACE_PRODUCER_INTERNAL_H */
