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

struct convert_thread;
struct convert_gpu_track;
struct convert_scaler;
struct convert_label_cache;
struct event_json_memo;
struct raw_decoded;

/* One traced process (one p<pid> directory). */
struct convert_process {
	long pid;
	long ppid;
	/* its environment's, or the one the program gave it later
	 * (convert_rank_learned); -1: none */
	int rank;
	/* when it was given that rank later, or inherited it from its
	 * parent (its attach_ns); 0: never */
	uint64_t rank_ns;
	char *exe;
	char *name;              /* basename of argv[0] */
	char *framework;         /* "torch 1.13.1 (...)", "libamp 0.1.0"; or NULL */
	char *policy_table;      /* the producer's policy table ("1.13"), or NULL */
	char **argv;
	int argc;
	/* libamp's names for its enum values, from process.json */
	char **names[6];
	size_t name_count[6];
	char *dir;
	uint64_t attach_ns;      /* when its producer attached */
	/* the process's start time (proc_file.h), the same in each image
	 * of one process; 0: unknown */
	unsigned long long start_time;
	/* Announced (metadata written, writer chosen) with its first thread:
	 * a process that records nothing (a launcher) leaves no trace,
	 * unless it is the program, killed before it recorded anything
	 * while no other process did (convert_finish). */
	bool announced;
	struct trace_writer *writer; /* where its events go (NULL: dropped) */
	/* Where its events are also kept (converter.trace_for; NULL: nowhere).
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
	struct convert_label_cache *labels;
	struct convert_thread **threads;
	size_t nthreads;
	uint64_t last_ns;        /* latest event time seen */
	uint64_t events;         /* trace events written */
	uint64_t ops, casts;
	uint64_t raw_errors;     /* records that did not decode */
	/* counters kept across threads */
	struct convert_scaler *scalers;
	size_t nscalers;
	uint64_t skipped_steps;
	/* training steps (FORMAT.md §8): steps ended, those of them in full
	 * detail, when the step in progress began (0: at the start) and
	 * the one before it, the number of the step in progress (as the
	 * producer numbers them), and whether full detail stopped for size
	 * (from detail_stop_step on, past detail_stop_limit bytes of
	 * `detail_stop_measured`) */
	uint64_t steps, detail_steps, aggregates, aggregated_ops;
	uint64_t step_begin_ns, previous_step_begin_ns, step_in_progress;
	bool detail_stopped;
	uint64_t detail_stop_step, detail_stop_limit;
	char *detail_stop_measured;
	bool detail_stop_said;   /* amptrace run said so on stderr */
	/* GPU kernel timing (FORMAT.md §3.8) */
	int gpu_status;          /* 0: no op on cuda; 1: timed; -1: unavailable */
	char *gpu_reason;        /* why not (libamp's backend status) */
	bool gpu_stream;         /* a tgpu.raw stream was seen */
	bool gpu_stats_seen;     /* the counts at the end (RAW_KIND_GPU_STATS) */
	uint64_t gpu_unlinked, gpu_untimed, gpu_dropped, gpu_buffers,
		gpu_aggregated;
	uint64_t kernels, memcpys;
	/* announced devices and streams */
	struct convert_gpu_track *gpu_tracks;
	size_t ngpu_tracks;
	/* filled by convert_finish */
	/* "exited", "signaled", "died", "exec" (replaced by a later image
	 * of the same process), "running" */
	const char *status;
	int exit_code;           /* when status is "exited" and known */
	int signal;              /* when "signaled" */
	char signal_name[32];    /* its name: "SIGSEGV" */
	uint64_t in_flight_ops;
};

/* Chooses the writer for a newly seen process. */
typedef struct trace_writer *(*convert_writer_fn)(
	void *ctx, const struct convert_process *p);
/* Chooses the in-memory trace that keeps a newly seen process's events
 * as they are written (called after its writer_for), or NULL.  It must
 * outlive the converter (convert_free). */
typedef struct trace *(*convert_trace_fn)(void *ctx,
					  const struct convert_process *p);

struct converter {
	char *raw_dir;
	/* Where streams went on when raw_dir filled up (raw.h), or NULL;
	 * set after convert_init, owned by the caller. */
	const char *spill_dir;
	uint64_t base_ns;        /* CLOCK_MONOTONIC of ts 0 */
	convert_writer_fn writer_for;
	/* Optional (NULL after convert_init): `amptrace run` computes its
	 * findings from these traces rather than reading its files back. */
	convert_trace_fn trace_for;
	/* Optional (NULL: every row): what trace_for's trace keeps of the
	 * rows of a step's aggregates (the findings' rows, findings.h); the
	 * file gets every row. */
	void (*trim_kept_aggregate)(struct trace_aggregate *aggregate);
	/* Optional (NULL: every event): whether trace_for's trace keeps an
	 * event (whether the findings read it, findings.h); the file gets
	 * every event. */
	bool (*keeps_event)(const struct trace_event *event);
	void *ctx;
	struct convert_process **procs;
	size_t nprocs;
	struct jsonw buf;        /* scratch for one event */
	struct jsonw label;      /* scratch for its name: reused, as an
				  * allocation per event showed */
	/* an event's tensors when its process keeps no trace */
	struct trace_tensor *scratch_tensors;
	struct trace_tensor_info *scratch_infos; /* their kinds */
	/* buf's cache of escaped strings: every string of an event is
	 * interned in a trace that outlives the converter */
	struct jsonw_cache *json_cache;
	struct event_json_memo *memo; /* its op templates (event_json.h) */
	struct raw_decoded *decoded; /* scratch for one record */
	uint64_t last_scan_ns;   /* when the directories were last listed */
	bool final;              /* convert_finish: list them on every poll */
};

void convert_init(struct converter *c, const char *raw_dir, uint64_t base_ns,
		  convert_writer_fn writer_for, void *ctx);
/* Picks up new processes, threads and records.  Returns the number of
 * records converted (0: nothing new). */
size_t convert_poll(struct converter *c);
/* Final pass once the program has ended: converts what is left, closes
 * what the death of a process left open (ops in flight, autocast regions),
 * says how each process ended.  `child_pid`/`wait_status` describe the
 * direct child (its status is exact); `end_ns` is when its end was seen. */
void convert_finish(struct converter *c, long child_pid, int wait_status,
		    uint64_t end_ns);
/* The process's entry of the trailer's "processes" list; `gpu` is the
 * room for its GPU timing (end->gpu points there when it used a GPU),
 * `steps` for its steps (end->steps, when it marked any).  Valid as long
 * as p. */
void convert_process_end(const struct convert_process *p,
			 struct trace_process_end *end,
			 struct trace_gpu_timing *gpu,
			 struct trace_process_steps *steps);
void convert_free(struct converter *c);

/* "SIGSEGV" for 11, or "signal N". */
const char *convert_signal_name(int sig, char *buf, size_t size);

#endif /* AMPTRACE_CONVERT_H */
