/* The converter in `amptrace run`: follows the raw directory the
 * recorders write (raw.h) while the program runs, and turns every record
 * into a trace event (FORMAT.md) streamed to the process's trace file.
 * Runs in the amptrace process, never in the traced program. */
#ifndef AMPTRACE_CONVERT_H
#define AMPTRACE_CONVERT_H

#include "jsonw.h"
#include "trace.h"
#include "trace_writer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conv_thread;
struct conv_gpu_track;
struct conv_label_cache;
struct event_json_memo;
struct raw_decoded;

/* One traced process (one p<pid> directory). */
struct conv_process {
	long pid;
	long ppid;
	int rank;                /* -1 when the environment gave none */
	char *exe;
	char *name;              /* basename of argv[0] */
	char *framework;         /* "torch 1.13.1 (...)", "libamp 0.1.0"; or NULL */
	char **argv;
	int argc;
	/* libamp's names for its enum values, from process.json */
	char **names[6];
	size_t name_count[6];
	char *dir;
	/* Announced (metadata written, writer chosen) with its first thread:
	 * a process that records nothing (a launcher) leaves no trace. */
	bool announced;
	struct trace_writer *writer; /* where its events go (NULL: dropped) */
	/* Where its events are also kept (conv.trace_for; NULL: nowhere).
	 * `trace_lost`: an event could not be kept (out of memory), so
	 * `trace` is not the file. */
	struct trace *trace;
	bool trace_lost;
	/* Where its events' strings are interned: `trace` while it keeps
	 * them, else `own_strings`; its names and the literals every event
	 * uses, interned once (convert_write.c). */
	struct trace *strings;
	struct trace own_strings;
	const char **interned_names[6];
	const char **literals;
	struct conv_label_cache *labels;
	struct conv_thread **threads;
	size_t nthreads;
	uint64_t last_ns;        /* latest event time seen */
	uint64_t events;         /* trace events written */
	uint64_t ops, casts;
	uint64_t raw_errors;     /* records that did not decode */
	/* counters kept across threads */
	double last_scale[8];
	uint64_t skipped_steps;
	/* GPU kernel timing (FORMAT.md §3.8) */
	int gpu_status;          /* 0: no op on cuda; 1: timed; -1: unavailable */
	char *gpu_reason;        /* why not (libamp's backend status) */
	bool gpu_stream;         /* a tgpu.raw stream was seen */
	bool gpu_stats_seen;
	uint64_t gpu_stats[7];   /* kernels memcpys unlinked untimed dropped
				    buffers lost (raw.h RAW_KIND_GPU_STATS) */
	uint64_t kernels, memcpys;
	struct conv_gpu_track *gpu_tracks; /* announced devices and streams */
	size_t ngpu_tracks;
	/* filled by conv_finish */
	const char *status;      /* "exited", "signaled", "died", "running" */
	int exit_code;           /* when status is "exited" and known */
	int signal;              /* when "signaled" */
	uint64_t in_flight_ops;
};

/* Chooses the writer for a newly seen process. */
typedef struct trace_writer *(*conv_writer_fn)(void *ctx,
					       const struct conv_process *p);
/* Chooses the in-memory trace that keeps a newly seen process's events
 * as they are written (called after its writer_for), or NULL.  It must
 * outlive the conv (conv_free). */
typedef struct trace *(*conv_trace_fn)(void *ctx,
				       const struct conv_process *p);

struct conv {
	char *raw_dir;
	/* Where streams went on when raw_dir filled up (raw.h), or NULL;
	 * set after conv_init, owned by the caller. */
	const char *spill_dir;
	uint64_t base_ns;        /* CLOCK_MONOTONIC of ts 0 */
	conv_writer_fn writer_for;
	/* Optional (NULL after conv_init): `amptrace run` computes its
	 * findings from these traces rather than reading its files back. */
	conv_trace_fn trace_for;
	void *ctx;
	struct conv_process **procs;
	size_t nprocs;
	struct jsonw buf;        /* scratch for one event */
	struct jsonw label;      /* scratch for its name: reused, as an
				  * allocation per event showed */
	/* an event's tensors when its process keeps no trace */
	struct trace_tensor *scratch_tensors;
	/* buf's cache of escaped strings: every string of an event is
	 * interned in a trace that outlives the conv */
	struct jsonw_cache *json_cache;
	struct event_json_memo *memo; /* its op templates (event_json.h) */
	struct raw_decoded *decoded; /* scratch for one record */
	uint64_t last_scan_ns;   /* when the directories were last listed */
	bool final;              /* conv_finish: list them on every poll */
};

void conv_init(struct conv *c, const char *raw_dir, uint64_t base_ns,
	       conv_writer_fn writer_for, void *ctx);
/* Picks up new processes, threads and records.  Returns the number of
 * records converted (0: nothing new). */
size_t conv_poll(struct conv *c);
/* Final pass once the program has ended: converts what is left, closes
 * what the death of a process left open (ops in flight, autocast regions),
 * says how each process ended.  `child_pid`/`wait_status` describe the
 * direct child (its status is exact); `end_ns` is when its end was seen. */
void conv_finish(struct conv *c, long child_pid, int wait_status,
		 uint64_t end_ns);
/* The process's entry of the trailer's "processes" list. */
void conv_process_json(const struct conv_process *p, struct jsonw *w);
void conv_free(struct conv *c);

/* Appends to w what follows a trace's events (convert_tail.c): the
 * findings computed from `kept`, every event w was given, as amp.diag
 * events at `ts_ns` (the end of the run), then the flow events.  `ix`:
 * kept's index (trace_index_init), brought up to date here; the flows
 * need it whole (NULL, or out of memory: the findings only). */
struct trace_index;
void conv_append_tail(struct trace_writer *w, const struct trace *kept,
		      struct trace_index *ix, int64_t ts_ns);

/* "SIGSEGV" for 11, or "signal N". */
const char *conv_signal_name(int sig, char *buf, size_t size);

#endif /* AMPTRACE_CONVERT_H */
