/* The converter's parts, shared between its files:
 *   convert.c          the raw directory: processes, thread files, their
 *                      records in order, how each process ended;
 *   convert_records.c  one decoded record (raw_decode.h) -> trace events;
 *   convert_write.c    interned strings, building an event, handing it
 *                      to the writer (event_json.h) and the kept trace;
 *                      the helpers the other two share.
 * Nothing outside the converter includes this. */
#ifndef AMPTRACE_CONVERT_INTERNAL_H
#define AMPTRACE_CONVERT_INTERNAL_H

#include "convert.h"

#include "amp.h"
#include "raw.h"
#include "raw_decode.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum name_table {
	NAMES_DTYPE,
	NAMES_PROFILER,
	NAMES_POLICY,
	NAMES_DEVICE,
	NAMES_PHASE,
	NAMES_CACHE,
	NAMES_COUNT
};
/* convert.h sizes struct convert_process's name arrays by hand */
_Static_assert(NAMES_COUNT == sizeof ((struct convert_process *)0)->name_count
	       / sizeof(size_t), "convert.h's name arrays: one per name_table");

/* Strings every process's events use, interned once (convert_lit). */
enum convert_literal {
	LIT_EMPTY,
	LIT_UNKNOWN,
	LIT_CAT_OP,
	LIT_CAT_CAST,
	LIT_CAT_SCOPE,
	LIT_CAT_CACHE,
	LIT_CAT_SCALER,
	LIT_CAT_DIAG,
	LIT_CAT_KERNEL,
	LIT_CAT_MEMCPY,
	LIT_AUTOCAST_CACHE,
	LIT_ENTRIES,
	LIT_BYTES,
	LIT_SCALE,
	LIT_SKIPPED,
	LIT_SKIPPED_STEPS,
	LIT_CACHE_CLEAR,
	LIT_PROCESS_NAME,
	LIT_PROCESS_SORT_INDEX,
	LIT_PROCESS_LABELS,
	LIT_THREAD_NAME,
	LIT_THREAD_SORT_INDEX,
	LIT_CAT_STEP,
	LIT_CAT_AGGREGATE,
	LIT_EVALUATION,
	LIT_COUNT
};

/* An op whose BEGIN was seen and whose END was not (yet): its event as
 * far as the BEGIN tells it (interned strings, no inputs or outputs). */
struct pending_op {
	uint64_t begin_ns;
	struct trace_op op;
};

struct open_scope {
	const char *name;   /* NULL for an unnamed region */
	const char *label;  /* the B event's name */
	int depth;
};

struct convert_thread {
	char *path;
	int fd;
	const uint8_t *chunk;
	uint64_t chunk_index;
	uint32_t offset;
	bool started;     /* header seen */
	bool stopped;     /* corrupt: not read further */
	uint64_t tid;
	struct pending_op *ops;
	size_t nops, cap_ops;
	struct open_scope *scopes;
	size_t nscopes, cap_scopes;
	/* the named regions open, outermost first, as every op event of
	 * the thread shares them until a region opens or closes */
	const char **named_scopes;
	int nnamed_scopes;
	bool named_scopes_stale;
	/* the last autocast state interned for its ops, and what it was
	 * made of (padding zeroed): an op's BEGIN and END, and most ops
	 * after, are under the same one */
	struct trace_autocast autocast_made;
	const struct trace_autocast *autocast;
	uint64_t last_ns;
	/* totals rows its stream held: flushes of its aggregates file that
	 * reached the stream (step_aggregate_left) */
	uint64_t aggregate_flushes;
	/* the rows of a step's aggregates, until its totals come */
	struct trace_aggregate_op *aggregate_ops;
	size_t naggregate_ops, cap_aggregate_ops;
	struct trace_aggregate_cast *aggregate_casts;
	size_t naggregate_casts, cap_aggregate_casts;
	struct trace_aggregate_diag *aggregate_diags;
	size_t naggregate_diags, cap_aggregate_diags;
	/* the rows its last step's aggregates kept (in p's trace), which
	 * its next step's share when the same (trimmed, steps alike keep
	 * the same rows) */
	struct convert_kept_rows {
		const void *rows;
		size_t bytes;
	} kept_ops, kept_casts, kept_diags;
};

/* A GPU "process" (device) or one of its streams, once announced by its
 * metadata events; stream UINT32_MAX stands for the device itself. */
struct convert_gpu_track {
	uint32_t device, stream;
};

/* A GradScaler of the process, in the order its events first came: the
 * first is counter "grad scale", the n-th "grad scale n" (FORMAT.md §3.6). */
struct convert_scaler {
	uint64_t id;
	double last_scale; /* NaN until it has one */
};

/* convert_write.c: events are built with strings interned in the
 * process's trace (convert_process.strings), then written and kept.  It is
 * the bottom of the converter (convert.c -> convert_records.c ->
 * convert_write.c): the helpers all three use are here. */
char *convert_dupn(const char *s, size_t len);
void *convert_grow(void *array, size_t *cap, size_t need, size_t elem);
const char *convert_name_of(const struct convert_process *p, enum name_table t,
		unsigned value);
const char *convert_intern(struct convert_process *p, const char *s,
			   size_t len);
const char *convert_intern_cstr(struct convert_process *p, const char *s);
const char *convert_copy_cstr(struct convert_process *p, const char *s);
void convert_intern_names(struct convert_process *p);

/* p's interned name of enum value `value` of table t ("unknown" when
 * its table has none). */
static inline const char *convert_name(const struct convert_process *p,
				       enum name_table t, unsigned value)
{
	return value < p->name_count[t] ? p->interned_names[t][value]
					: p->literals[LIT_UNKNOWN];
}

static inline const char *convert_lit(const struct convert_process *p,
				      enum convert_literal lit)
{
	return p->literals[lit];
}

void *convert_alloc(struct convert_process *p, size_t size);
double convert_to_us(int64_t ns);
struct trace_event convert_head(struct converter *cv, struct convert_process *p,
		uint64_t tid, enum trace_kind kind, const char *name,
		enum convert_literal cat, char ph, uint64_t time_ns);
struct trace_event convert_meta_event(struct convert_process *p,
		enum convert_literal name, int64_t pid, uint64_t tid,
		const char *value, int64_t sort_index);
void convert_emit(struct converter *cv, struct convert_process *p,
		const struct trace_event *e);
/* convert_emit's two halves, for an event whose kept copy holds less
 * than the file's (a step's aggregates): e written, counted; e kept
 * (its arrays must live as long as p's strings), when p keeps a trace
 * (convert_keeps). */
void convert_write(struct converter *cv, struct convert_process *p,
		   const struct trace_event *e);
void convert_keep(struct convert_process *p, const struct trace_event *e);
bool convert_keeps(const struct convert_process *p);
const int64_t *convert_shape(struct convert_process *p, const int64_t *sizes,
			     int ndim);
/* The scratch kinds' slots: an op's inputs, its outputs, a cast's
 * source. */
#define CONVERT_SCRATCH_CAST_SOURCE (2 * RAW_MAX_TENSORS)
#define CONVERT_SCRATCH_INFOS (2 * RAW_MAX_TENSORS + 1)
const struct trace_tensor_info *convert_tensor_info(struct converter *cv,
		struct convert_process *p, const struct trace_tensor_info *info,
		int slot);
const struct trace_cast_compiled *convert_cast_compiled(
		struct convert_process *p, const struct trace_cast_compiled *keys);
struct trace_tensor *convert_tensors(struct converter *cv,
				     struct convert_process *p,
		const struct producer_tensor *list, int n, bool inputs);
const struct trace_autocast *convert_autocast(struct convert_process *p,
		struct convert_thread *t, const struct producer_autocast *a,
		const char *scope);
const char *convert_op_label(struct convert_process *p, const char *op,
		const char *overload);
const char *convert_cast_label(struct convert_process *p, unsigned from,
		unsigned to);

/* convert.c: the rank the program gave p at `time_ns`, after it started
 * (RAW_KIND_RANK: torch.distributed's), over its environment's: p's name,
 * order and trailer entry say it from here on (its process metadata is
 * written again; readers take a pid's last), and so do those of the
 * children p starts from then on.  Its events stay in the file chosen
 * when p was announced: those already written there cannot move to a
 * rank's file (FORMAT.md §5). */
void convert_rank_learned(struct converter *cv, struct convert_process *p,
			  int rank, uint64_t time_ns);

/* convert_records.c */
void convert_scope_end(struct converter *cv, struct convert_process *p,
		struct convert_thread *t, const struct open_scope *s,
		uint64_t time_ns, const char *closed_by);
/* `keys`: a producer's diag whose keys (../producer_keys.h) the event
 * carries, or NULL (the converter's own: none). */
void convert_diag(struct converter *cv, struct convert_process *p, uint64_t tid,
		  uint64_t time_ns, const char *kind, const char *message,
		  uint64_t op_id, uint64_t tensor_id, char scope,
		  const struct producer_diag *keys);
void convert_op_close(struct converter *cv, struct convert_process *p,
		      struct convert_thread *t, const struct pending_op *op,
		      uint64_t end_ns, const char *closed_by);
void convert_record(struct converter *cv, struct convert_process *p,
		struct convert_thread *t, const struct raw_record *r);

/* convert_steps.c: steps, evaluation windows, full detail stopping and
 * per-step aggregates (raw.h RAW_KIND_STEP...) -> amp.step and
 * amp.aggregate events; false when d is none of those kinds. */
bool convert_step_record(struct converter *cv, struct convert_process *p,
			 struct convert_thread *t, const struct raw_decoded *d);
/* The aggregates each thread of p left in its file (RAW_AGGREGATE_FILE):
 * the step in progress when p ended, written at `when`; cut short only
 * when p `died` (a clean exit with threads still counting ends their
 * step as the exit ends the exiting thread's, whole). */
void convert_steps_left(struct converter *cv, struct convert_process *p,
			uint64_t when, bool died);

#endif /* AMPTRACE_CONVERT_INTERNAL_H */
