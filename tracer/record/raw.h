/* The raw event stream between the recorder (inside the traced program)
 * and `amptrace run` (its parent).  Not a public format: only these two
 * read and write it, and both come from the same build.
 *
 * Layout of the raw directory (AMPTRACE_RAW_DIR), one p<pid> directory per
 * process image (p<pid>-<n> after an exec in the same pid):
 *   p<pid>/process.json   written once by the recorder when it attaches
 *                         (then renamed into place, so it is whole):
 *                         pid, rank (its environment's; a later
 *                         RAW_KIND_RANK record overrides it), argv,
 *                         libamp's enum names
 *   p<pid>/t<n>.raw       one file per thread that emitted events
 *   p<pid>/tgpu.raw       GPU activities (CUPTI), written by whichever
 *                         thread CUPTI delivers them on, under a lock;
 *                         its header's amp_thread is RAW_GPU_STREAM
 *   p<pid>/exit           created by the recorder at a clean exit (or
 *                         _exit)
 *   p<pid>/stopped        "<errno> <text>": a stream stopped for want of
 *                         room (ENOSPC, EFBIG past ulimit -f)
 *   p<pid>/unbegun        empty: a thread's stream could not even begin
 *                         (no record of it says it stopped)
 *
 * When the raw directory fills up, streams go on in the spill directory
 * (AMPTRACE_RAW_SPILL, set when there is one: on another file system),
 * under the same p<pid> name: a stream begun there is p<pid>/t<n>.raw, one
 * that moved there p<pid>/ct<n>.raw (its continuation, reached only from
 * its RAW_SIZE_MOVED marker).
 *
 * A thread file is a sequence of RAW_CHUNK-sized chunks that the writing
 * thread fills one at a time (through MAP_SHARED mappings of several
 * chunks, each chunk reserved before it is written).  Chunk 0 starts with a
 * raw_thread_header; records follow, 8-byte aligned.  A record's first
 * word is its size and is stored last, with release order, after the rest
 * of the record: a reader that sees a nonzero size sees the whole record,
 * and a record interrupted by the death of the process is never seen
 * (its size is still 0, as the file's fresh pages are zero-filled).
 * Because the pages belong to the file, not the process, every completed
 * record survives SIGKILL.  RAW_SIZE_NEXT_CHUNK as a size means "the
 * stream continues at the start of the next chunk", RAW_SIZE_THREAD_END
 * "the thread exited" (its file can go: threads come and go in pools),
 * RAW_SIZE_MOVED "the stream goes on in the spill directory's c<name of
 * this file>, after its header" (written once that file is whole). */
#ifndef AMPTRACE_RAW_H
#define AMPTRACE_RAW_H

#include <stdatomic.h>
#include <stdint.h>

#define RAW_ENV_DIR "AMPTRACE_RAW_DIR"
#define RAW_ENV_PID "AMPTRACE_PID" /* the converting amptrace process */
#define RAW_ENV_SPILL "AMPTRACE_RAW_SPILL"
#define RAW_THREAD_MAGIC UINT64_C(0x3157415254504d41) /* "AMPTRAW1" */
/* 3: tensors carry producer_op_id; 4: varints; 5: the producer model
 * (producer_event.h), with its keys (../producer_keys.h: module, origin);
 * 6: steps and aggregates (branch steps), or, on branch compile, the keys'
 * mask a varint with numbers among the keys (a compiled graph's): two
 * different 6s, so 7: both; 8: the GPU's counts end with the activities
 * of folded ops; 9: a thread's aggregates of the step in progress in
 * RAW_AGGREGATE_FILE (step_aggregate.c's layout); 10: their last event's
 * time (end_ns).  A new kind is no new version (RAW_KIND_RANK): a
 * converter that predates it counts each of its records in the
 * process's raw_errors and reads on, where a new version would make it
 * drop the thread's whole stream. */
#define RAW_VERSION 10
/* A thread's aggregates of the step in progress, under p<pid>, mapped by
 * the thread (its counts outlive a killed process): printf's format of
 * the thread's number. */
#define RAW_AGGREGATE_FILE "t%llu.agg"
#define RAW_CHUNK (1u << 20)
#define RAW_SIZE_NEXT_CHUNK UINT32_MAX
/* As a size: the thread has exited; the reader may drop the file. */
#define RAW_SIZE_THREAD_END (UINT32_MAX - 1)
/* As a size: the stream continues in the spill directory. */
#define RAW_SIZE_MOVED (UINT32_MAX - 2)
/* Strings longer than this are cut (tensor names, error messages). */
#define RAW_MAX_STRING 1024

struct raw_thread_header {
	_Atomic uint64_t magic; /* RAW_THREAD_MAGIC once the header is whole */
	uint32_t version;
	uint32_t header_size;   /* offset of the first record */
	uint64_t amp_thread;    /* libamp thread number (trace tid) */
	int64_t os_tid;
	char name[32];          /* pthread name, NUL-terminated */
};

/* amp_thread of the GPU stream's header: no libamp thread is number 0. */
#define RAW_GPU_STREAM 0

/* Record kinds: the producer's (enum producer_kind), and these. */
enum raw_kind {
	/* One struct amp_gpu_activity (GPU stream; time_ns = its start). */
	RAW_KIND_GPU_ACTIVITY = 0x100,
	/* Whether kernel timing started: i32 status (0 = started), the
	 * reason as a string (any thread's stream, once per process). */
	RAW_KIND_GPU_STATUS,
	/* amp_gpu_profiler_stop's counts (GPU stream, at the end). */
	RAW_KIND_GPU_STATS,
	/* Training steps and what the recording kept of them (steps.h,
	 * raw_schema.h's models): a step ended, an evaluation window
	 * ended, full detail stopped for size; a thread's aggregates of a
	 * step without full detail: its op, cast and diag rows, then its
	 * totals, which end them. */
	RAW_KIND_STEP = 0x200,
	RAW_KIND_EVALUATION,
	RAW_KIND_DETAIL_STOP,
	RAW_KIND_STEP_OP,
	RAW_KIND_STEP_CAST,
	RAW_KIND_STEP_DIAG,
	RAW_KIND_STEP_TOTALS,
	/* What the program told its runtime about the process after it
	 * started (raw_schema.h's models): the rank torch.distributed gave
	 * it, which its environment may not have had (mp.spawn). */
	RAW_KIND_RANK = 0x300,
};

struct raw_record {
	_Atomic uint32_t size;  /* whole record, multiple of 8; 0 = not yet */
	uint16_t kind;          /* enum producer_kind or enum raw_kind */
	uint16_t reserved;
	uint64_t time_ns;       /* CLOCK_MONOTONIC */
	/* payload: the kind's fields, as raw_schema.h lists them */
};

#endif /* AMPTRACE_RAW_H */
