/* The trace-event model: one FORMAT.md event as plain structs, the same
 * whoever made it.  The converter builds each event here and hands it to
 * the one writer (event_json.h), which writes every key of an amp.* event
 * from these fields alone; the reader (trace.c) fills it from the JSON,
 * so read(write(e)) == e; every command reads it: summary, check, diff,
 * findings, the viewer.  Strings point into the owning trace's arena
 * (trace.h). */
#ifndef AMPTRACE_TRACE_EVENT_H
#define AMPTRACE_TRACE_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	TRACE_CAST,        /* amp.cast X */
	TRACE_SCOPE_BEGIN, /* amp.scope B */
	TRACE_SCOPE_END,   /* amp.scope E */
	TRACE_CACHE_CLEAR, /* amp.cache i */
	TRACE_COUNTER,     /* any C event (amp.cache, amp.scaler, ...) */
	TRACE_SCALER,      /* amp.scaler i */
	TRACE_DIAG,        /* amp.diag i */
	TRACE_META,        /* M */
	TRACE_KERNEL,      /* kernel */
	TRACE_OTHER,       /* anything else */
	TRACE_KIND_COUNT
};

struct trace_tensor {
	uint64_t id;
	/* an op input's producing op as libamp recorded it (the op that last
	 * wrote it before this op), 0: not recorded (FORMAT.md §3.2) */
	uint64_t producer_op_id;
	const char *dtype;
	const char *name;  /* NULL when unnamed */
	int ndim;
	int64_t shape[TRACE_MAX_DIMS];
	bool requires_grad, leaf, view;
	const char *device;        /* NULL: absent (cpu) */
	const char *profiler_type; /* an op input's "Input type" entry */
};

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
	const char *phase;    /* "forward" / "backward" */
	const char *policy;   /* NULL on incomplete ops */
	const char *device;
	bool emulated;
	bool incomplete;      /* in flight when the process ended */
	struct trace_autocast autocast;
	int ninputs, noutputs;
	struct trace_tensor *inputs, *outputs;
	int status;
	const char *error;
	const char *closed_by; /* incomplete ops: what ended them */
	uint64_t graph;        /* a compile or compiled call's graph, or 0 */
};

struct trace_cast {
	uint64_t op_id, tensor, result, bytes;
	int arg;
	const char *from, *to, *cache, *reason;
	const char *name;     /* the source tensor's name, or NULL */
	const char *op;       /* the op being cast for, when known */
	const char *phase;
	const char *scope;
	bool stale;
	/* the source tensor's shape and flags */
	int ndim;
	int64_t shape[TRACE_MAX_DIMS];
	bool requires_grad, leaf;
	/* origin "compiled" (1.4): a torch.compile'd graph's cast, recorded
	 * once when the graph was compiled; tensor and result are 0 */
	bool compiled;
	uint64_t graph;
	const char *made_by;  /* "autocast", "autograd", "program" */
	const char *feeds;    /* the graph's op its result feeds */
	const char *source;   /* "train.py:12", or NULL */
	const char *module, *module_class; /* or NULL */
	struct trace_autocast autocast; /* enabled, device, dtype only */
};

/* A cast of a compiled graph rather than of a run: counts of a run's
 * casts, the cache and the casts' tensors leave it out. */
static inline bool trace_cast_is_compiled(const struct trace_cast *c)
{
	return c->compiled;
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
	uint64_t op_id, tensor;          /* 0: none (the key is left out) */
	char scope;                      /* "s": 't' thread, 'p' process */
	/* a finding's (NULL fix: not a finding, none of these is written) */
	const char *fix, *severity;
	uint64_t count;
	int64_t thread, other_thread;    /* 0: none */
};

/* kernel X (FORMAT.md §3.8), and gpu_memcpy X events (kind TRACE_OTHER,
 * cat "gpu_memcpy"), read leniently, as other tools write them. */
struct trace_kernel {
	bool linked;          /* has "External id" */
	bool cast;            /* "amp.cast_result": the id is a cast's result */
	uint64_t external_id; /* the op_id (or cast result tensor id) */
	uint64_t op_id;       /* "amp.op_id": a cast's op, or 0 */
	int64_t host_pid;     /* "amp.pid": the process that launched it, or -1 */
	uint32_t correlation, device, stream;
	int32_t grid[3], block[3];       /* kernels */
	int32_t registers, shared_memory;
	uint64_t bytes;                  /* copies */
};

/* What an M event's args hold depends on its name: *_sort_index a
 * sort_index, process_labels labels (`value`), the others a name
 * (`value`) and the optional keys below. */
struct trace_meta {
	const char *value;    /* args.name, or args.labels */
	int64_t sort_index;
	int rank;             /* process_name: args.rank, else -1 */
	const char **argv;    /* process_name: the command; NULL: absent */
	int argc;
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
	size_t line;          /* where the event starts in the file */
	size_t index;         /* position in traceEvents */
	union {
		struct trace_op op;
		struct trace_cast cast;
		struct trace_scope scope;
		struct trace_cache_clear cache;
		struct trace_counter counter;
		struct trace_scaler scaler;
		struct trace_diag diag;
		struct trace_meta meta;
		struct trace_kernel kernel;
	};
};

#endif /* AMPTRACE_TRACE_EVENT_H */
