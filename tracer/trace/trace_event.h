/* The trace-event model: one FORMAT.md event as plain structs, the same
 * whoever made it, and the file's header and trailer.  The converter
 * builds each event here and hands it to the one writer (event_json.h),
 * which writes every key of an event from these fields alone; the reader
 * (trace.c) fills it from the JSON, so read(write(e)) == e; every command
 * reads it: summary, check, diff, findings, the viewer.  Which key each
 * member is, its JSON type, when it is written and the format version
 * that added it: trace_schema.h, the one table the writer, the reader and
 * the validator follow.  Strings point into the owning trace's arena
 * (trace.h). */
#ifndef AMPTRACE_TRACE_EVENT_H
#define AMPTRACE_TRACE_EVENT_H

#include "producer_keys.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define TRACE_MAX_DIMS 8

/* µs (a double holding whole ns / 1000, as the converter and the reader
 * make it) back to the ns the writer writes: exact below 2^53 / 1000 µs.
 * Inline: flows and templates convert every time they write or bind. */
static inline int64_t trace_us_to_ns(double us)
{
	double ns = us * 1000.0;

	return (int64_t)(ns < 0 ? ns - 0.5 : ns + 0.5);
}

enum trace_kind {
	TRACE_OP,          /* amp.op X */
	TRACE_CAST,        /* amp.cast X made by autocast */
	/* amp.cast X made by someone else (args.origin: autograd in backward,
	 * custom_fwd): apart, so that what reads autocast's decisions (cache,
	 * findings, diff, views) reads only those */
	TRACE_OTHER_CAST,
	TRACE_SCOPE_BEGIN, /* amp.scope B */
	TRACE_SCOPE_END,   /* amp.scope E */
	TRACE_CACHE_CLEAR, /* amp.cache i */
	TRACE_COUNTER,     /* any C event (amp.cache, amp.scaler, ...) */
	TRACE_SCALER,      /* amp.scaler i */
	TRACE_DIAG,        /* amp.diag i */
	TRACE_META,        /* M */
	TRACE_KERNEL,      /* kernel X */
	TRACE_MEMCPY,      /* gpu_memcpy X */
	TRACE_FLOW,        /* amp.flow s and f (1.2) */
	TRACE_STEP,        /* amp.step: a training step, an evaluation window
			    * (X), full detail stopping (i) (1.4) */
	TRACE_AGGREGATE,   /* amp.aggregate i: a thread's aggregates of a
			    * step recorded without full detail (1.4) */
	TRACE_OTHER,       /* anything else */
	TRACE_KIND_COUNT
};

/* What a tensor is, apart from which one: its dtype, shape, name, flags
 * and device.  Interned (trace_intern_tensor_info): a big trace holds
 * millions of tensors of a few kinds, so each names its kind.  One list
 * of members for the kind and for the record below. */
#define TRACE_TENSOR_INFO_MEMBERS                                           \
	const char *dtype;                                                  \
	const char *name;          /* NULL when unnamed */                  \
	/* its ndim sizes, interned (trace_intern_shape) */                 \
	const int64_t *shape;                                               \
	int ndim;                                                           \
	bool requires_grad, leaf, view;                                     \
	const char *device;        /* NULL: absent (cpu) */                 \
	const char *profiler_type; /* an op input's "Input type" entry */

struct trace_tensor_info {
	TRACE_TENSOR_INFO_MEMBERS
};

/* An op's input or output. */
struct trace_tensor {
	uint64_t id;
	/* an op input's producing op as libamp recorded it (the op that last
	 * wrote it before this op), 0: not recorded (FORMAT.md §3.2) */
	uint64_t producer_op_id;
	const struct trace_tensor_info *info; /* never NULL */
};

/* A tensor as the JSON spells it, every key a member: what the schema's
 * reader fills and its writer writes (trace_schema.h), made into a
 * trace_tensor by interning its info. */
struct trace_tensor_record {
	uint64_t id, producer_op_id;
	union {
		struct trace_tensor_info info;
		struct {
			TRACE_TENSOR_INFO_MEMBERS
		};
	};
};

/* t as its record (the writer and the validator walk the schema's rows
 * over it). */
static inline struct trace_tensor_record
trace_tensor_record(const struct trace_tensor *t)
{
	return (struct trace_tensor_record){ .id = t->id,
					     .producer_op_id = t->producer_op_id,
					     .info = *t->info };
}

struct trace_autocast {
	bool enabled;
	const char *device;
	const char *dtype;
	bool cache_enabled;
	int depth;
	const char *scope;    /* innermost named region, or NULL */
	const char **scopes;  /* named regions, outermost first */
	int nscopes;
};

struct trace_op {
	uint64_t op_id, parent_op_id, forward_op_id;
	const char *op;       /* "softmax" */
	const char *overload; /* "int" or "" */
	PRODUCER_OP_KEYS(PRODUCER_KEY_MEMBER, _) /* ../producer_keys.h */
	const char *phase;    /* "forward" / "backward" */
	const char *policy;   /* NULL on incomplete ops */
	const char *device;
	bool emulated;
	bool incomplete;      /* in flight when the process ended */
	int status;
	/* interned (trace_intern_autocast): ops share a few states; never
	 * NULL */
	const struct trace_autocast *autocast;
	int ninputs, noutputs;
	struct trace_tensor *inputs, *outputs;
	const char *error;
	const char *closed_by; /* incomplete ops: what ended them */
};

/* A compiled graph's cast's own keys (origin "compiled"). */
struct trace_cast_compiled {
	PRODUCER_CAST_COMPILED_KEYS(PRODUCER_KEY_MEMBER, _)
};

struct trace_cast {
	uint64_t op_id, tensor, result, bytes;
	int arg;
	bool stale;
	const char *from, *to, *cache, *reason;
	const char *op;       /* the op being cast for, when known */
	const char *phase;
	const char *scope;
	PRODUCER_CAST_RUN_KEYS(PRODUCER_KEY_MEMBER, _) /* ../producer_keys.h */
	/* origin "compiled": the graph's keys; else NULL (a trace holds
	 * millions of casts of the run, which have none) */
	const struct trace_cast_compiled *compiled;
	/* the source tensor's name, shape and flags (its dtype is `from`),
	 * interned as an op's tensors' kinds are; never NULL */
	const struct trace_tensor_info *source;
};

/* A cast as the JSON spells it, every key a member: what the schema's
 * reader fills and its writer writes (trace_schema.h), made into a
 * trace_cast by trace_cast_from_record(). */
struct trace_cast_record {
	struct trace_cast cast;
	struct trace_cast_compiled compiled;
	union {
		struct trace_tensor_info source;
		struct {
			TRACE_TENSOR_INFO_MEMBERS
		};
	};
};

/* c as its record (the writer and the validator walk the schema's rows
 * over it). */
static inline struct trace_cast_record
trace_cast_record(const struct trace_cast *c)
{
	struct trace_cast_record r = { .cast = *c, .source = *c->source };

	if (c->compiled)
		r.compiled = *c->compiled;
	return r;
}

/* A cast of a torch.compile'd graph (origin "compiled", FORMAT.md
 * §3.13), recorded once when the graph was compiled, not by a run: its
 * tensor and result are 0, its op is the compile it was recorded in. */
static inline bool trace_cast_is_compiled(const struct trace_cast *c)
{
	return c->origin && !strcmp(c->origin, "compiled");
}

static const struct trace_cast_compiled trace_cast_no_graph;

/* c's compiled graph's keys; all absent for a cast of the run. */
static inline const struct trace_cast_compiled *
trace_cast_graph(const struct trace_cast *c)
{
	return c->compiled ? c->compiled : &trace_cast_no_graph;
}

/* Whether any of a compiled graph's keys is set (ids and pointers, no
 * padding between them). */
static inline bool trace_cast_compiled_set(const struct trace_cast_compiled *k)
{
	return memcmp(k, &trace_cast_no_graph, sizeof *k) != 0;
}

/* The op a cast is for, and its phase: a compiled graph's cast's own
 * (graph_op, graph_phase), else its op's. */
static inline const char *trace_cast_for_op(const struct trace_cast *c)
{
	return trace_cast_is_compiled(c) && trace_cast_graph(c)->graph_op
		       ? trace_cast_graph(c)->graph_op
		       : c->op;
}

static inline const char *trace_cast_for_phase(const struct trace_cast *c)
{
	return trace_cast_is_compiled(c) && trace_cast_graph(c)->graph_phase
		       ? trace_cast_graph(c)->graph_phase
		       : c->phase;
}

/* B and E events (E: depth and closed_by only). */
struct trace_scope {
	const char *scope;    /* NULL for unnamed regions */
	int depth;
	const char *device, *dtype;
	bool enabled, cache_enabled;
	const char *closed_by; /* E of a region the end of its thread closed */
};

struct trace_cache_clear {
	uint64_t entries, bytes;
};

#define TRACE_MAX_SERIES 4
struct trace_counter {
	int nseries;
	const char *series[TRACE_MAX_SERIES];
	double value[TRACE_MAX_SERIES];
};

struct trace_scaler {
	const char *what;
	uint64_t scaler_id, optimizer_id, inf_tensor;
	double scale;         /* NaN when absent */
	bool found_inf, step_skipped;
};

struct trace_diag {
	const char *kind, *message;
	PRODUCER_DIAG_KEYS(PRODUCER_KEY_MEMBER, _) /* ../producer_keys.h */
	uint64_t op_id, tensor;          /* 0: none (the key is left out) */
	char scope;                      /* "s": 't' thread, 'p' process */
	/* a finding's (NULL fix: not a finding, none of these is written) */
	const char *fix, *severity;
	uint64_t count;
	int64_t thread, other_thread;    /* 0: none */
};

/* amp.step events (FORMAT.md §8).  A step: `marker` set; an evaluation
 * window: `evaluation` set; ph 'i': full detail stopped from `step` on
 * because the recording passed `size_limit` bytes. */
struct trace_step {
	int64_t step;            /* from 0; a window: the step it ran in */
	const char *marker;      /* what ended the step ("optimizer step") */
	const char *evaluation;  /* how the window was known ("model.eval()") */
	bool detail;             /* a step: its events are in the trace */
	uint64_t size_limit;     /* ph 'i' */
	const char *measured;    /* ph 'i': what passed it ("the trace") */
	char scope;              /* ph 'i': its "s", 'p' (the process's) */
};

/* amp.aggregate's rows (FORMAT.md §3.12): what a thread did in a step
 * recorded without full detail, each row an array of its columns. */
struct trace_aggregate_op {
	const char *op, *overload, *phase, *policy;
	const char *dtype;       /* the first output's, NULL: no output */
	const char *device;
	uint64_t count, failed;
	int64_t dur_ns;          /* summed */
};

struct trace_aggregate_cast {
	const char *op, *phase, *from, *to, *cache;
	uint64_t count, bytes, stale;
	int64_t dur_ns;          /* summed */
	const char *origin;      /* NULL: autocast's (§3.3) */
};

struct trace_aggregate_diag {
	const char *kind, *phase;
	uint64_t count, op_id, tensor;      /* the first one's op and tensor */
	const char *message;                /* the first one's */
};

/* The weight-cast cache in the step: its clears, its size at the step's
 * end and at most. */
struct trace_aggregate_cache {
	uint64_t clears, entries, bytes, max_entries, max_bytes;
};

struct trace_aggregate {
	int64_t step;
	int64_t begin_ns;        /* its first folded event's time */
	int64_t end_ns;          /* its last's; 0: not said (older) */
	uint64_t events, regions;
	int nops, ncasts, ndiags;
	struct trace_aggregate_op *ops;
	struct trace_aggregate_cast *casts;
	struct trace_aggregate_diag *diags;
	struct trace_aggregate_cache cache;
	bool cut_short;          /* the thread's step in progress when its
				  * process ended (§3.12) */
};

/* kernel and gpu_memcpy X events (FORMAT.md §3.8), read leniently, as
 * other tools write them. */
struct trace_kernel {
	bool cast;            /* "amp.cast_result": the id is a cast's result */
	/* "External id": the op_id (or cast result tensor id) that launched
	 * it; 0: none (ids are from 1) */
	uint64_t external_id;
	uint64_t op_id;       /* "amp.op_id": a cast's op, or 0 */
	int64_t host_pid;     /* "amp.pid": the process that launched it, or -1 */
	uint32_t correlation, device, stream;
	int32_t grid[3], block[3];       /* kernels */
	int32_t registers, shared_memory;
	uint64_t bytes;                  /* copies */
};

/* One end of an arrow (amp.flow s or f, FORMAT.md §3.10). */
struct trace_flow_event {
	uint64_t id;          /* the arrow's, shared by its two ends */
	const char *bind;     /* "e" on an f end (binds to its slice), or NULL */
	uint64_t op_id;
	uint64_t tensor;      /* a cast arrow's result, or 0 */
};

/* What an M event's args hold depends on its name: *_sort_index a
 * sort_index, process_labels labels (`value`), the others a name
 * (`value`) and the optional keys below. */
struct trace_meta {
	const char *value;    /* args.name, or args.labels */
	int64_t sort_index;
	int rank;             /* process_name: args.rank, else -1 */
	const char **argv;    /* process_name: the command; NULL: absent */
	int nargv;
	const char *framework; /* process_name, or NULL */
	int64_t os_tid;       /* thread_name, or 0 */
	int64_t host_pid;     /* a GPU's process_name, or 0 (and no device) */
	int64_t device;
};

struct trace_event {
	enum trace_kind kind;
	char ph;
	const char *name;
	const char *cat;      /* "" when absent */
	int64_t pid, tid;
	double ts, dur;       /* microseconds */
	/* 32 bits each, as a trace that loads holds far fewer events (a
	 * few hundred bytes each in memory) and lines (the reader keeps
	 * UINT32_MAX for a line past it) */
	uint32_t line;        /* where the event starts in the file */
	uint32_t index;       /* position in traceEvents */
	union {
		struct trace_op op;
		struct trace_cast cast;
		struct trace_scope scope;
		struct trace_cache_clear cache;
		struct trace_counter counter;
		struct trace_scaler scaler;
		struct trace_diag diag;
		struct trace_meta meta;
		struct trace_kernel kernel;  /* kernel and memcpy */
		struct trace_flow_event flow;
		struct trace_step step;
		struct trace_aggregate aggregate;
	};
};

/* ------------------------------------------------- header and trailer */

/* A merged file's inputs, in its header. */
struct trace_merged_input {
	const char *file;
	int rank;
	bool truncated;
};

/* The "amptrace" object: what wrote the file, and about what. */
struct trace_header {
	const char *format;   /* "1.4" */
	const char *generator;
	const char **command; /* NULL: absent (merged files) */
	int ncommand;
	int rank;             /* -1: null */
	const char *host;
	uint64_t monotonic_base_ns;
	const char *flush;
	struct trace_merged_input *merged; /* merged files, else NULL */
	int nmerged;
	/* what produced the first process's events, "torch 1.13.0a0
	 * (policy table: 1.13)" (1.1), and the policy table its policies
	 * come from, "1.13" (1.4); NULL: not said */
	const char *framework;
	const char *policy_table;
	/* what `amptrace run` recorded in full detail (1.4); NULL: absent */
	struct trace_recording *recording;
};

/* The header's "recording" (FORMAT.md §8). */
struct trace_recording {
	const char *steps;    /* its --steps SPEC, "0:19" */
	uint64_t max_size;    /* its --max-size in bytes, 0: none */
};

/* How a command or a process ended. */
struct trace_exit {
	const char *status;   /* "exited", "signaled" (processes: "died") */
	int code;             /* exited */
	int signal;           /* signaled */
	const char *signal_name;
};

/* A process's GPU kernel timing (FORMAT.md §3.8). */
struct trace_gpu_timing {
	bool timing;
	const char *reason;   /* not timing: why */
	uint64_t kernels, memcpys;
	bool complete;        /* the profiler's end counts arrived */
	uint64_t unlinked, untimed, dropped, buffers;
	uint64_t aggregated;  /* of steps without full detail: not written */
};

/* One process of `amptrace run`'s trailer. */
struct trace_process_end {
	int64_t pid;
	int rank;             /* -1: null */
	const char **argv;
	int nargv;
	const char *framework;
	const char *status;   /* "exited", "signaled", "died", "running" */
	int exit_code;        /* exited: -1 when unknown */
	int signal;           /* signaled */
	const char *signal_name;
	uint64_t threads, events, ops, casts, in_flight_ops, raw_errors;
	struct trace_process_steps *steps; /* NULL: it marked none (1.4) */
	struct trace_gpu_timing *gpu; /* NULL: the process used no GPU */
};

/* A process's training steps, in the trailer (FORMAT.md §8). */
struct trace_process_steps {
	uint64_t ended, detail, aggregates, aggregated_ops;
	bool detail_stopped;       /* full detail stopped for size ... */
	uint64_t detail_stopped_at; /* ... from this step on */
};

/* One input of a merged file's trailer. */
struct trace_merged_end {
	const char *file;
	int rank;
	int64_t pid;
	uint64_t events;
	bool truncated;
	struct trace_exit *exit; /* NULL: the input had no trailer */
};

/* The "amptraceEnd" object. */
struct trace_trailer {
	bool complete;
	uint64_t events;
	int64_t duration_ns;  /* 0: absent (an older amptrace's merged files) */
	struct trace_exit *exit; /* the traced command's; NULL: absent */
	struct trace_process_end *processes; /* NULL: absent */
	int nprocesses;
	struct trace_merged_end *inputs;     /* merged files, else NULL */
	int ninputs;
};

#endif /* AMPTRACE_TRACE_EVENT_H */
