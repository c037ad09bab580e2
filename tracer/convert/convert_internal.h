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

/* Strings every process's events use, interned once (conv_lit). */
enum conv_literal {
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

struct conv_thread {
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
	uint64_t last_ns;
};

/* A GPU "process" (device) or one of its streams, once announced by its
 * metadata events; stream UINT32_MAX stands for the device itself. */
struct conv_gpu_track {
	uint32_t device, stream;
};

/* convert_write.c: events are built with strings interned in the
 * process's trace (conv_process.strings), then written and kept.  It is
 * the bottom of the converter (convert.c -> convert_records.c ->
 * convert_write.c): the helpers all three use are here. */
char *conv_dupn(const char *s, size_t len);
void *conv_grow(void *array, size_t *cap, size_t need, size_t elem);
const char *conv_name_of(const struct conv_process *p, enum name_table t,
		unsigned value);
const char *conv_intern(struct conv_process *p, const char *s, size_t len);
const char *conv_intern_cstr(struct conv_process *p, const char *s);
void conv_intern_names(struct conv_process *p);

/* p's interned name of enum value `value` of table t ("unknown" when
 * its table has none). */
static inline const char *conv_name(const struct conv_process *p,
				    enum name_table t, unsigned value)
{
	return value < p->name_count[t] ? p->interned_names[t][value]
					: p->literals[LIT_UNKNOWN];
}

static inline const char *conv_lit(const struct conv_process *p,
				   enum conv_literal lit)
{
	return p->literals[lit];
}

void *conv_alloc(struct conv_process *p, size_t size);
double conv_to_us(int64_t ns);
struct trace_event conv_head(struct conv *cv, struct conv_process *p,
		uint64_t tid, enum trace_kind kind, const char *name,
		enum conv_literal cat, char ph, uint64_t time_ns);
struct trace_event conv_meta_event(struct conv_process *p,
		enum conv_literal name, int64_t pid, uint64_t tid,
		const char *value, int64_t sort_index);
void conv_emit(struct conv *cv, struct conv_process *p,
		const struct trace_event *e);
struct trace_tensor *conv_tensors(struct conv *cv, struct conv_process *p,
		const struct amp_tensor_info *list, int n, bool inputs);
struct trace_autocast conv_autocast(struct conv_process *p,
		struct conv_thread *t, const struct amp_autocast_info *a,
		const char *scope);
const char *conv_op_label(struct conv_process *p, const char *op,
		const char *overload);
const char *conv_cast_label(struct conv_process *p, unsigned from,
		unsigned to);

/* convert_records.c */
void conv_scope_end(struct conv *cv, struct conv_process *p,
		struct conv_thread *t, const struct open_scope *s,
		uint64_t time_ns, const char *closed_by);
void conv_diag(struct conv *cv, struct conv_process *p, uint64_t tid,
	       uint64_t time_ns, const char *kind, const char *message,
	       uint64_t op_id, uint64_t tensor_id, char scope);
void conv_op_close(struct conv *cv, struct conv_process *p,
		   struct conv_thread *t, const struct pending_op *op,
		   uint64_t end_ns, const char *closed_by);
void conv_record(struct conv *cv, struct conv_process *p,
		struct conv_thread *t, const struct raw_record *r);

#endif /* AMPTRACE_CONVERT_INTERNAL_H */
