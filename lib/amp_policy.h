/* The autocast policy table and the plan (decision) function: libamp's
 * dispatcher and `amptrace explain` both decide with them.  The amp_policy
 * static library (lib/meson.build) holds them with the dtype names, so a
 * tool can use them without the runtime; this header is its interface and
 * needs only the public amp.h.  Not installed.
 *
 * The table knows several PyTorch versions: each row says in which of them
 * it holds (PyTorch's lists grow and change between releases), and each
 * version has its own rules beside the rows (struct amp_torch_table). */
#ifndef AMP_POLICY_H
#define AMP_POLICY_H

#include "amp.h"

#include <stdbool.h>
#include <stddef.h>

/* ------------------------------------------------------------ versions */

/* The PyTorch versions the table holds, oldest first.  A row holds from
 * `added` up to (not including) `removed`.  Each was checked against that
 * torch running (tests/test_torch_policy.py). */
enum amp_torch_version {
	AMP_TORCH_1_13, /* 1.13.x (Debian 12's python3-torch 1.13.1) */
	AMP_TORCH_2_13, /* 2.13.x (pip's torch 2.13.0) */
	AMP_TORCH_2_14, /* 2.14.x (pip's torch 2.14.1) */
	AMP_TORCH_VERSION_COUNT,
	/* the newest table, libamp's own semantics; --torch newest */
	AMP_TORCH_NEWEST = AMP_TORCH_VERSION_COUNT - 1
};

/* Who shares a weight cast the cache holds. */
enum amp_cache_scope {
	/* 1.13: a thread_local map; another thread casts again */
	AMP_CACHE_PER_THREAD,
	/* newest: one mutex-guarded map for all threads */
	AMP_CACHE_PER_PROCESS,
	AMP_CACHE_SCOPE_COUNT
};

/* One version's rules beyond its rows. */
struct amp_torch_table {
	const char *name;       /* "1.13", "2.13": what --torch takes */
	int major, minor;       /* the release series */
	enum amp_cache_scope cache_scope;
	bool cpu_f16;           /* CPU autocast takes float16 (1.13: bf16 only) */
	const char *source;     /* where the rows come from, one line */
};

const struct amp_torch_table *amp_torch_table(enum amp_torch_version version);
/* "per-thread" / "per-process". */
const char *amp_cache_scope_name(enum amp_cache_scope scope);

/* The table version for a torch version as a trace or a user gives it:
 * "newest" or a table name ("1.13"), or a release "1.13.1", "1.13.0a0",
 * "2.1.0+cu121".  A release picks its series' table, else the nearest
 * table below it of the same major version (2.15: 2.13), else the
 * nearest above it (2.1: 2.13; a major's lists drift less than a major
 * changes them).  *exact (may be NULL) tells whether the release is one a
 * table was made for (a table name, or a release of a table's series).
 * Returns AMP_OK, AMP_ERR_INVALID (not a version) or AMP_ERR_UNSUPPORTED
 * (older than every table). */
int amp_torch_version_from_string(const char *text,
				  enum amp_torch_version *version, bool *exact);

/* ------------------------------------------------------ the policy table */

/* Row flags: version-specific behaviour of one wrapper. */
enum {
	/* Registered, but the wrapper neither picks a type from nor casts
	 * its arguments (1.13's CPU cat: its ITensorListRef met the no-op
	 * templates of prioritize/cached_cast): the op runs as called. */
	AMP_ROW_ARGS_UNTOUCHED = 1u << 0,
};

/* One row per (device type, op overload, version range) of PyTorch's
 * autocast lists, including ops the runtime cannot execute
 * (lib/policy_table.c). */
struct amp_policy_row {
	enum amp_device_type device;
	const char *op;        /* "softmax" */
	const char *overload;  /* "int"; "" = default overload */
	enum amp_policy policy;
	/* explain's output rule for non-standard results (grammar at the
	 * top of policy_table.c); NULL = the cast/compute dtype. */
	const char *output;
	enum amp_torch_version added;   /* first version holding the row */
	enum amp_torch_version removed; /* first one without it; 0 = none */
	unsigned flags;                 /* AMP_ROW_* */
};

/* Every row of every version; filter with amp_policy_row_in(). */
size_t amp_policy_row_count(void);
const struct amp_policy_row *amp_policy_row_at(size_t index);
/* Inline: the dispatcher's plan asks on every listed op. */
static inline bool amp_policy_row_in(const struct amp_policy_row *row,
				     enum amp_torch_version version)
{
	return version >= row->added &&
	       (row->removed == 0 || version < row->removed);
}
/* Exact (device, op, overload) lookup in `version`'s lists; NULL when the
 * op is not listed there. */
const struct amp_policy_row *amp_policy_lookup(enum amp_torch_version version,
					       enum amp_device_type device,
					       const char *op,
					       const char *overload);

/* ----------------------------------------------------------- the plan */

/* What autocast does to one call, decided from descriptions of the
 * arguments alone: the dispatcher executes it on real tensors and
 * `amptrace explain` prints it for described ones. */
struct amp_plan_arg {
	bool defined;          /* false: an absent optional tensor */
	bool optional;         /* an optional<Tensor> argument */
	enum amp_dtype dtype;
	enum amp_device_type device;
	bool requires_grad;
	bool is_leaf;
	bool is_view;
};

/* A call's tensor arguments flattened: AMP_MAX_ARGS arguments plus one
 * list of AMP_MAX_LIST (amp_internal.h checks the sum). */
#define AMP_PLAN_MAX_ARGS 74

struct amp_plan_cast {
	bool cast;             /* false: the argument passes unchanged */
	enum amp_dtype to;
	bool cacheable;        /* all cache conditions but cache_enabled */
	enum amp_cache_result cache_if_cast; /* MISS, UNCACHEABLE, DISABLED */
	const char *reason;    /* static text: why (un)cacheable */
};

struct amp_plan {
	enum amp_policy policy;  /* NONE when autocast does not apply */
	enum amp_dtype lower_precision; /* the device's autocast dtype */
	enum amp_dtype target;   /* cast target (lp/fp32/promote), or NONE */
	/* fp32_set_opt_dtype / fp32_append_dtype: the dtype argument value
	 * to run with (AMP_DTYPE_NONE = leave the argument as given). */
	enum amp_dtype dtype_arg;
	int nargs;
	struct amp_plan_cast casts[AMP_PLAN_MAX_ARGS];
	int status;              /* AMP_OK or AMP_ERR_AUTOCAST */
	const char *error;       /* PyTorch's message when status != OK */
};

/* Decides the plan for `row` (NULL = op not listed; a row `version` does
 * not hold counts as NULL) under an enabled autocast of `device` with
 * lower-precision dtype `lp`, as PyTorch `version` does.  `args` are the
 * call's tensor arguments flattened in order (list elements inline);
 * `dtype_arg` is the call's optional dtype argument (AMP_DTYPE_NONE when
 * None or when the op has none).  Pure: no tensors, no global state. */
void amp_autocast_plan(enum amp_torch_version version,
		       const struct amp_policy_row *row,
		       enum amp_device_type device, enum amp_dtype lp,
		       bool cache_enabled, int nargs,
		       const struct amp_plan_arg *args,
		       enum amp_dtype dtype_arg, struct amp_plan *plan);

/* PyTorch's is_eligible(t, device): defined, floating, not f64, on the
 * autocast device. */
bool amp_autocast_eligible(const struct amp_plan_arg *arg,
			   enum amp_device_type device);

/* PyTorch's banned-op message (binary_cross_entropy under CUDA autocast). */
extern const char amp_banned_bce_message[];
/* 1.13's set_autocast_cpu_dtype check, raised when a CPU region with
 * float16 is entered. */
extern const char amp_cpu_bf16_only_message[];

#endif /* AMP_POLICY_H */
