/* The schema's tables at run time (trace_schema.h): the rows of
 * trace_schema.h as data, for the reader (trace.c) and the validator. */
#include "trace_schema.h"

#include <stdlib.h>

#define NEED_ALWAYS TRACE_NEED_ALWAYS
#define NEED_COMPLETE TRACE_NEED_COMPLETE
#define NEED_DEFAULTED TRACE_NEED_OPTIONAL
#define NEED_SET TRACE_NEED_OPTIONAL
#define NEED_NONEMPTY TRACE_NEED_OPTIONAL
#define NEED_TIMED_COPY TRACE_NEED_OPTIONAL
#define NEED_NAMED TRACE_NEED_OPTIONAL
#define NEED_LABELS TRACE_NEED_OPTIONAL
#define NEED_SORT_INDEX TRACE_NEED_OPTIONAL
#define NEED_RANKED TRACE_NEED_OPTIONAL
#define NEED_GPU_PROCESS TRACE_NEED_OPTIONAL
#define NEED_EXITED TRACE_NEED_OPTIONAL
#define NEED_SIGNALED TRACE_NEED_OPTIONAL
#define NEED_EXIT_CODE TRACE_NEED_OPTIONAL
#define NEED_TIMED TRACE_NEED_OPTIONAL
#define NEED_UNTIMED TRACE_NEED_OPTIONAL
#define NEED_TIMED_COMPLETE TRACE_NEED_OPTIONAL
#define NEED_STEP_SPAN TRACE_NEED_OPTIONAL
#define NEED_STEP_NOTE TRACE_NEED_OPTIONAL
#define NEED_DETAIL_STOPPED TRACE_NEED_OPTIONAL

/* A list's count member, n<member>; 0 for the others. */
#define COUNT_OF_LIST(S, f) offsetof(S, n##f)
#define COUNT_STRINGS COUNT_OF_LIST
#define COUNT_TENSORS COUNT_OF_LIST
#define COUNT_PROCESSES COUNT_OF_LIST
#define COUNT_MERGED COUNT_OF_LIST
#define COUNT_MERGED_ENDS COUNT_OF_LIST
#define COUNT_OP_ROWS COUNT_OF_LIST
#define COUNT_CAST_ROWS COUNT_OF_LIST
#define COUNT_DIAG_ROWS COUNT_OF_LIST
#define COUNT_SHAPE(S, f) offsetof(S, ndim)
#define COUNT_NONE(S, f) 0
#define COUNT_STRING COUNT_NONE
#define COUNT_STRING_OR_NULL COUNT_NONE
#define COUNT_ID COUNT_NONE
#define COUNT_ID_AGAIN COUNT_NONE
#define COUNT_U64 COUNT_NONE
#define COUNT_U32 COUNT_NONE
#define COUNT_I64 COUNT_NONE
#define COUNT_INT COUNT_NONE
#define COUNT_INT_OR_NULL COUNT_NONE
#define COUNT_BOOL COUNT_NONE
#define COUNT_TRUE COUNT_NONE
#define COUNT_NUMBER_OR_NULL COUNT_NONE
#define COUNT_US COUNT_NONE
#define COUNT_TRIPLE COUNT_NONE
#define COUNT_PROFILER_TYPES COUNT_OF_LIST
#define COUNT_PROFILER_DIMS COUNT_OF_LIST
#define COUNT_BANDWIDTH COUNT_NONE
#define COUNT_SCOPE COUNT_NONE
#define COUNT_SCOPE_THREAD COUNT_NONE
#define COUNT_AUTOCAST COUNT_NONE
#define COUNT_EXIT COUNT_NONE
#define COUNT_GPU COUNT_NONE
#define COUNT_RECORDING COUNT_NONE
#define COUNT_STEPS COUNT_NONE
#define COUNT_AGGREGATE_CACHE COUNT_NONE

/* The table an object type's value (or its list's elements) follows. */
#define OBJECT_AUTOCAST &trace_schema_autocast
#define OBJECT_EXIT &trace_schema_exit
#define OBJECT_GPU &trace_schema_gpu_timing
#define OBJECT_TENSORS &trace_schema_tensor
#define OBJECT_PROCESSES &trace_schema_process_end
#define OBJECT_MERGED &trace_schema_merged_input
#define OBJECT_MERGED_ENDS &trace_schema_merged_end
#define OBJECT_RECORDING &trace_schema_recording
#define OBJECT_STEPS &trace_schema_process_steps
#define OBJECT_AGGREGATE_CACHE &trace_schema_aggregate_cache
#define OBJECT_OP_ROWS &trace_schema_aggregate_op
#define OBJECT_CAST_ROWS &trace_schema_aggregate_cast
#define OBJECT_DIAG_ROWS &trace_schema_aggregate_diag
#define OBJECT_STRING NULL
#define OBJECT_STRING_OR_NULL NULL
#define OBJECT_ID NULL
#define OBJECT_ID_AGAIN NULL
#define OBJECT_U64 NULL
#define OBJECT_U32 NULL
#define OBJECT_I64 NULL
#define OBJECT_INT NULL
#define OBJECT_INT_OR_NULL NULL
#define OBJECT_BOOL NULL
#define OBJECT_TRUE NULL
#define OBJECT_NUMBER_OR_NULL NULL
#define OBJECT_US NULL
#define OBJECT_SHAPE NULL
#define OBJECT_STRINGS NULL
#define OBJECT_TRIPLE NULL
#define OBJECT_PROFILER_TYPES NULL
#define OBJECT_PROFILER_DIMS NULL
#define OBJECT_BANDWIDTH NULL
#define OBJECT_SCOPE NULL
#define OBJECT_SCOPE_THREAD NULL

#define KEY_ROW(S, type, key, f, when, check, since)                        \
	{ key, TRACE_TYPE_##type, offsetof(S, f), COUNT_##type(S, f),       \
	  NEED_##when, TRACE_CHECK_##check, since, OBJECT_##type },

/* trace_schema_<name>: the rows of KEYS over struct S. */
#define TABLE(name, title, S, KEYS, is_lenient)                             \
	static const struct trace_key name##_keys[] = {                     \
		KEYS(KEY_ROW_##name)                                        \
	};                                                                  \
	const struct trace_object trace_schema_##name = {                   \
		title, sizeof(S), name##_keys,                              \
		sizeof name##_keys / sizeof *name##_keys, is_lenient,       \
	};

#define KEY_ROW_op(...) KEY_ROW(struct trace_op, __VA_ARGS__)
#define KEY_ROW_autocast(...) KEY_ROW(struct trace_autocast, __VA_ARGS__)
#define KEY_ROW_tensor(...) KEY_ROW(struct trace_tensor_record, __VA_ARGS__)
#define KEY_ROW_cast(...) KEY_ROW(struct trace_cast_record, __VA_ARGS__)
#define KEY_ROW_scope_begin(...) KEY_ROW(struct trace_scope, __VA_ARGS__)
#define KEY_ROW_scope_end(...) KEY_ROW(struct trace_scope, __VA_ARGS__)
#define KEY_ROW_cache_clear(...)                                            \
	KEY_ROW(struct trace_cache_clear, __VA_ARGS__)
#define KEY_ROW_scaler(...) KEY_ROW(struct trace_scaler, __VA_ARGS__)
#define KEY_ROW_diag(...) KEY_ROW(struct trace_diag, __VA_ARGS__)
#define KEY_ROW_kernel(...) KEY_ROW(struct trace_kernel, __VA_ARGS__)
#define KEY_ROW_memcpy(...) KEY_ROW(struct trace_kernel, __VA_ARGS__)
#define KEY_ROW_flow(...) KEY_ROW(struct trace_flow_event, __VA_ARGS__)
#define KEY_ROW_meta(...) KEY_ROW(struct trace_meta, __VA_ARGS__)
#define KEY_ROW_cache_clear_top(...)                                        \
	KEY_ROW(struct trace_cache_clear, __VA_ARGS__)
#define KEY_ROW_scaler_top(...) KEY_ROW(struct trace_scaler, __VA_ARGS__)
#define KEY_ROW_diag_top(...) KEY_ROW(struct trace_diag, __VA_ARGS__)
#define KEY_ROW_flow_top(...) KEY_ROW(struct trace_flow_event, __VA_ARGS__)
#define KEY_ROW_header(...) KEY_ROW(struct trace_header, __VA_ARGS__)
#define KEY_ROW_merged_input(...)                                           \
	KEY_ROW(struct trace_merged_input, __VA_ARGS__)
#define KEY_ROW_trailer(...) KEY_ROW(struct trace_trailer, __VA_ARGS__)
#define KEY_ROW_exit(...) KEY_ROW(struct trace_exit, __VA_ARGS__)
#define KEY_ROW_process_end(...)                                            \
	KEY_ROW(struct trace_process_end, __VA_ARGS__)
#define KEY_ROW_gpu_timing(...) KEY_ROW(struct trace_gpu_timing, __VA_ARGS__)
#define KEY_ROW_merged_end(...) KEY_ROW(struct trace_merged_end, __VA_ARGS__)
#define KEY_ROW_step(...) KEY_ROW(struct trace_step, __VA_ARGS__)
#define KEY_ROW_step_top(...) KEY_ROW(struct trace_step, __VA_ARGS__)
#define KEY_ROW_aggregate(...) KEY_ROW(struct trace_aggregate, __VA_ARGS__)
#define KEY_ROW_aggregate_top(...)                                          \
	KEY_ROW(struct trace_aggregate, __VA_ARGS__)
#define KEY_ROW_aggregate_op(...)                                           \
	KEY_ROW(struct trace_aggregate_op, __VA_ARGS__)
#define KEY_ROW_aggregate_cast(...)                                         \
	KEY_ROW(struct trace_aggregate_cast, __VA_ARGS__)
#define KEY_ROW_aggregate_diag(...)                                         \
	KEY_ROW(struct trace_aggregate_diag, __VA_ARGS__)
#define KEY_ROW_aggregate_cache(...)                                        \
	KEY_ROW(struct trace_aggregate_cache, __VA_ARGS__)
#define KEY_ROW_recording(...) KEY_ROW(struct trace_recording, __VA_ARGS__)
#define KEY_ROW_process_steps(...)                                          \
	KEY_ROW(struct trace_process_steps, __VA_ARGS__)

TABLE(op, "amp.op args", struct trace_op, TRACE_OP_KEYS, false)
TABLE(autocast, "args.autocast", struct trace_autocast, TRACE_AUTOCAST_KEYS,
      false)
TABLE(tensor, "tensor", struct trace_tensor_record, TRACE_TENSOR_KEYS,
      false)
TABLE(cast, "amp.cast args", struct trace_cast_record, TRACE_CAST_KEYS,
      false)
TABLE(scope_begin, "amp.scope B args", struct trace_scope,
      TRACE_SCOPE_BEGIN_KEYS, false)
TABLE(scope_end, "amp.scope E args", struct trace_scope, TRACE_SCOPE_END_KEYS,
      false)
TABLE(cache_clear, "amp.cache args", struct trace_cache_clear,
      TRACE_CACHE_CLEAR_KEYS, false)
TABLE(scaler, "amp.scaler args", struct trace_scaler, TRACE_SCALER_KEYS,
      false)
TABLE(diag, "amp.diag args", struct trace_diag, TRACE_DIAG_KEYS, false)
TABLE(kernel, "kernel args", struct trace_kernel, TRACE_KERNEL_KEYS, true)
TABLE(memcpy, "gpu_memcpy args", struct trace_kernel, TRACE_MEMCPY_KEYS, true)
TABLE(flow, "amp.flow args", struct trace_flow_event, TRACE_FLOW_KEYS, false)
TABLE(meta, "M args", struct trace_meta, TRACE_META_KEYS, true)
TABLE(cache_clear_top, "amp.cache", struct trace_cache_clear,
      TRACE_CACHE_CLEAR_TOP_KEYS, false)
TABLE(scaler_top, "amp.scaler", struct trace_scaler, TRACE_SCALER_TOP_KEYS,
      false)
TABLE(diag_top, "amp.diag", struct trace_diag, TRACE_DIAG_TOP_KEYS, false)
TABLE(flow_top, "amp.flow", struct trace_flow_event, TRACE_FLOW_TOP_KEYS,
      false)
TABLE(header, "amptrace", struct trace_header, TRACE_HEADER_KEYS, false)
TABLE(merged_input, "amptrace.merged[]", struct trace_merged_input,
      TRACE_MERGED_INPUT_KEYS, false)
TABLE(trailer, "amptraceEnd", struct trace_trailer, TRACE_TRAILER_KEYS, false)
TABLE(exit, "exit", struct trace_exit, TRACE_EXIT_KEYS, false)
TABLE(process_end, "amptraceEnd.processes[]", struct trace_process_end,
      TRACE_PROCESS_END_KEYS, false)
TABLE(gpu_timing, "gpu", struct trace_gpu_timing, TRACE_GPU_TIMING_KEYS,
      false)
TABLE(merged_end, "amptraceEnd.inputs[]", struct trace_merged_end,
      TRACE_MERGED_END_KEYS, false)

TABLE(step, "amp.step args", struct trace_step, TRACE_STEP_KEYS, false)
TABLE(step_top, "amp.step", struct trace_step, TRACE_STEP_TOP_KEYS, false)
TABLE(aggregate, "amp.aggregate args", struct trace_aggregate,
      TRACE_AGGREGATE_KEYS, false)
TABLE(aggregate_top, "amp.aggregate", struct trace_aggregate,
      TRACE_AGGREGATE_TOP_KEYS, false)
TABLE(aggregate_op, "amp.aggregate args.ops[]", struct trace_aggregate_op,
      TRACE_AGGREGATE_OP_COLUMNS, false)
TABLE(aggregate_cast, "amp.aggregate args.casts[]",
      struct trace_aggregate_cast, TRACE_AGGREGATE_CAST_COLUMNS, false)
TABLE(aggregate_diag, "amp.aggregate args.diags[]",
      struct trace_aggregate_diag, TRACE_AGGREGATE_DIAG_COLUMNS, false)
TABLE(aggregate_cache, "amp.aggregate args.cache",
      struct trace_aggregate_cache, TRACE_AGGREGATE_CACHE_KEYS, false)
TABLE(recording, "amptrace.recording", struct trace_recording,
      TRACE_RECORDING_KEYS, false)
TABLE(process_steps, "amptraceEnd.processes[].steps",
      struct trace_process_steps, TRACE_PROCESS_STEPS_KEYS, false)

const struct trace_object *const trace_schema_objects[] = {
	&trace_schema_op, &trace_schema_autocast, &trace_schema_tensor,
	&trace_schema_cast, &trace_schema_scope_begin, &trace_schema_scope_end,
	&trace_schema_cache_clear, &trace_schema_scaler, &trace_schema_diag,
	&trace_schema_kernel, &trace_schema_memcpy, &trace_schema_flow,
	&trace_schema_meta, &trace_schema_cache_clear_top,
	&trace_schema_scaler_top, &trace_schema_diag_top,
	&trace_schema_flow_top, &trace_schema_header,
	&trace_schema_merged_input, &trace_schema_trailer, &trace_schema_exit,
	&trace_schema_process_end, &trace_schema_gpu_timing,
	&trace_schema_merged_end, &trace_schema_step, &trace_schema_step_top,
	&trace_schema_aggregate, &trace_schema_aggregate_top,
	&trace_schema_aggregate_op, &trace_schema_aggregate_cast,
	&trace_schema_aggregate_diag, &trace_schema_aggregate_cache,
	&trace_schema_recording, &trace_schema_process_steps, NULL,
};

const struct trace_object *trace_schema_args(enum trace_kind kind)
{
	switch (kind) {
	case TRACE_OP:
		return &trace_schema_op;
	case TRACE_CAST:
	case TRACE_OTHER_CAST:
		return &trace_schema_cast;
	case TRACE_SCOPE_BEGIN:
		return &trace_schema_scope_begin;
	case TRACE_SCOPE_END:
		return &trace_schema_scope_end;
	case TRACE_CACHE_CLEAR:
		return &trace_schema_cache_clear;
	case TRACE_SCALER:
		return &trace_schema_scaler;
	case TRACE_DIAG:
		return &trace_schema_diag;
	case TRACE_KERNEL:
		return &trace_schema_kernel;
	case TRACE_MEMCPY:
		return &trace_schema_memcpy;
	case TRACE_FLOW:
		return &trace_schema_flow;
	case TRACE_META:
		return &trace_schema_meta;
	case TRACE_STEP:
		return &trace_schema_step;
	case TRACE_AGGREGATE:
		return &trace_schema_aggregate;
	default:
		return NULL; /* counters' series; other tools' events */
	}
}

const struct trace_object *trace_schema_top(enum trace_kind kind)
{
	switch (kind) {
	case TRACE_CACHE_CLEAR:
		return &trace_schema_cache_clear_top;
	case TRACE_SCALER:
		return &trace_schema_scaler_top;
	case TRACE_DIAG:
		return &trace_schema_diag_top;
	case TRACE_FLOW:
		return &trace_schema_flow_top;
	case TRACE_STEP:
		return &trace_schema_step_top;
	case TRACE_AGGREGATE:
		return &trace_schema_aggregate_top;
	default:
		return NULL;
	}
}

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), k = strlen(tail);

	return n >= k && !memcmp(s + n - k, tail, k);
}

enum trace_meta_holds trace_meta_holds(const struct trace_event *e)
{
	if (ends_with(e->name, "sort_index"))
		return TRACE_META_SORT_INDEX;
	if (!strcmp(e->name, "process_labels"))
		return TRACE_META_LABELS;
	return TRACE_META_NAME;
}

int trace_version_compare(const char *a, const char *b)
{
	long major_a = strtol(a, (char **)&a, 10);
	long minor_a = *a == '.' ? strtol(a + 1, NULL, 10) : 0;
	long major_b = strtol(b, (char **)&b, 10);
	long minor_b = *b == '.' ? strtol(b + 1, NULL, 10) : 0;

	if (major_a != major_b)
		return major_a < major_b ? -1 : 1;
	return (minor_a > minor_b) - (minor_a < minor_b);
}
