/* The converter's parts, shared between its files:
 *   convert.c          the raw directory: processes, thread files, their
 *                      records in order, how each process ended;
 *   convert_records.c  one decoded record (raw_decode.h) -> trace events;
 *   convert_write.c    an event's JSON line and the twin kept in memory.
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

/* An op whose BEGIN was seen and whose END was not (yet). */
struct pending_op {
	uint64_t op_id, parent_op_id, forward_op_id, begin_ns;
	unsigned phase, device;
	bool emulated;
	struct amp_autocast_info autocast; /* .scope is `scope` */
	char *op, *overload, *scope;
};

struct open_scope {
	char *name;   /* NULL for an unnamed region */
	char *label;  /* the B event's name */
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
	uint64_t last_ns;
};

/* A GPU "process" (device) or one of its streams, once announced by its
 * metadata events; stream UINT32_MAX stands for the device itself. */
struct conv_gpu_track {
	uint32_t device, stream;
};

/* convert.c */
char *conv_dupn(const char *s, size_t len);
void *conv_grow(void *array, size_t *cap, size_t need, size_t elem);
const char *conv_name_of(const struct conv_process *p, enum name_table t,
		unsigned value);

/* convert_write.c */
const char *conv_keep_str(struct conv_process *p, const char *s, size_t len);
const char *conv_keep_cstr(struct conv_process *p, const char *s);
const char *conv_keep_name(struct conv_process *p, enum name_table t,
		unsigned value);
void conv_keep_names(struct conv_process *p);
double conv_to_us(int64_t ns);
struct trace_event conv_meta_event(struct conv_process *p, const char *name,
		int64_t pid, uint64_t tid, const char *value,
		int64_t sort_index);
void conv_event_head(struct jsonw *w, struct trace_event *e,
		enum trace_kind kind, const char *name, size_t name_len,
		const char *cat, char ph, int64_t ts_ns,
		struct conv_process *p, uint64_t tid);
void conv_emit(struct conv_process *p, struct jsonw *w,
		const struct trace_event *e);
struct trace_tensor *conv_keep_tensors(struct conv_process *p,
		const struct amp_tensor_info *list, int n);
struct trace_autocast conv_keep_autocast(struct conv_process *p,
		const struct conv_thread *t, const struct amp_autocast_info *a);
void conv_write_shape(struct jsonw *w, const struct amp_tensor_info *t);
void conv_write_tensor(struct jsonw *w, const struct conv_process *p,
		const struct amp_tensor_info *t);
void conv_write_autocast(struct jsonw *w, const struct conv_process *p,
		const struct conv_thread *t, const struct amp_autocast_info *a);
const char *conv_op_or_unknown(const char *op);
void conv_op_name(struct jsonw *name, const char *op, const char *overload);

/* convert_records.c */
void conv_free_pending(struct pending_op *op);
void conv_scope_end(struct conv *cv, struct conv_process *p,
		struct conv_thread *t, const struct open_scope *s,
		uint64_t time_ns, const char *closed_by);
void conv_diag(struct conv *cv, struct conv_process *p, uint64_t tid,
	       uint64_t time_ns, const char *kind, const char *message,
	       uint64_t op_id, uint64_t tensor_id, char scope);
void conv_op_event(struct conv *cv, struct conv_process *p,
		   struct conv_thread *t, const struct amp_op_event *e,
		   uint64_t begin_ns, uint64_t end_ns, const char *closed_by);
void conv_record(struct conv *cv, struct conv_process *p,
		struct conv_thread *t, const struct raw_record *r);

#endif /* AMPTRACE_CONVERT_INTERNAL_H */
