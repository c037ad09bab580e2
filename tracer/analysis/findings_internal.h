/* The findings engine's parts (findings.h), each using only those below
 * it: findings.c runs the table's rules and folds in the trace's amp.diag
 * events; findings_kinds.c is the table; the rules: findings_ops.c about
 * one op or cast, findings_dtype.c dtype-mismatch, findings_threads.c
 * about autocast regions and threads, findings_casts.c redundant-cast,
 * findings_steps.c a run's history (GradScaler, LR schedulers, cache
 * growth) with findings_causes.c why a step was skipped,
 * findings_divergence.c policy-divergence;
 * findings_context.c is what every rule uses. */
#ifndef AMPTRACE_FINDINGS_INTERNAL_H
#define AMPTRACE_FINDINGS_INTERNAL_H

#include "findings.h"
#include "id_map.h"
#include "trace_index.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CACHE_GROWTH_STEPS 3
#define SCALER_COLLAPSE_SCALE 1.0
#define SCALER_COLLAPSE_HALVINGS 8

/* finding_low_precision_op's answers by the name's address (a trace's
 * names are interned: one address per name), as the op table's binary
 * search for every op was a tenth of the findings' time. */
#define LP_MEMO_SLOTS 256
struct finding_lp_memo {
	const char *name[LP_MEMO_SLOTS];
	bool low[LP_MEMO_SLOTS];
};

/* The autocast regions of every thread (findings_threads.c). */
struct finding_region {
	int64_t pid, tid;
	double start, end;
	const char *scope, *device, *dtype;
	bool enabled;
	bool in_backward; /* entered by a backward pass (custom_bwd) */
	bool entered_op;  /* an op ran inside it */
	size_t parent;    /* SIZE_MAX: outermost */
};

/* How a thread is tied to a region of another thread. */
#define TIE_SCATTER 1u /* it used a tensor made inside the region */
#define TIE_GATHER 2u  /* the region used a tensor it made */
#define TIE_SHARED 4u  /* it used a parameter the region used */

struct finding_regions {
	struct finding_region *items; /* in the order they were entered */
	size_t count, cap;
	uint32_t *at;         /* per event: its thread's innermost open
				 region + 1 (0: none) */
	struct id_map first;  /* (pid, tid) -> the thread's first event */
	struct id_map ties;   /* (pid, region << 32 | tid) -> TIE_* bits */
};

/* What redundant-cast remembers of the events before (findings_casts.c). */
struct finding_casts {
	struct id_map written; /* (pid, result) -> the program's cast */
	struct id_map sources; /* (pid, source) -> its latest cast by the
				  program, while the source is unchanged */
	struct id_map undone;  /* (pid, result) -> its uses casting it back */
};

/* Why a step was skipped (scaler-skipped-step), decided once per
 * iteration (the steps up to an update). */
enum finding_skip_kind {
	SKIP_NONE,        /* no step skipped yet in the iteration */
	SKIP_CALIBRATING, /* no iteration without a skip yet */
	SKIP_ADJUSTING,   /* the first skip since then, or since the scale grew */
	SKIP_REPEATED,    /* again, at a scale that did not grow since */
	SKIP_FORWARD,     /* a forward op overflowed: no scale helps */
};

/* One GradScaler's history, as its rules read it (findings_steps.c):
 * each keeps its own part. */
struct finding_scaler {
	int64_t pid;
	uint64_t id;
	int number;          /* its process's first, second... (0, 1...): a
				site names it so, as a job's ranks (Python
				ids of their own) all number theirs alike */
	uint64_t inf_tensor; /* the last gradient seen holding inf/NaN */
	/* scaler-collapse */
	double first, previous; /* the scale at the first, the last update */
	int halvings;
	bool reported;   /* it collapsed: later skips are no calibration */
	/* scaler-skipped-step */
	double last_update;
	bool stepped;    /* an optimizer step was taken */
	bool updates;    /* the scaler is ever updated */
	bool calibrated; /* an iteration ended with no step skipped */
	bool adjusted;   /* a step was skipped after calibration... */
	bool grew;       /* ... and the scale grew since */
	enum finding_skip_kind iteration; /* this iteration's skips */
	size_t floor;    /* the first event after its last update */
	char cause[640]; /* why its last skipped step was skipped */
};

/* Items by (pid, id), numbered within their process: the index of the
 * GradScalers' and optimizers' arrays, which hold every process's (a
 * job of 64 ranks has 64 of each at least: a fixed 32 followed 32 ranks
 * and listed each finding "on 32 of 64 ranks"). */
struct finding_registry {
	struct id_map index;   /* (pid, id) -> the item's index + 1 */
	struct id_map numbers; /* (pid, 0) -> the process's items so far */
};

struct finding_scalers {
	struct finding_scaler *items;
	size_t count, cap;
	struct finding_registry registry;
	bool found; /* the trace's scalers are in items */
};

/* An optimizer's last step under a GradScaler, for its LR scheduler's
 * next one (lr-scheduler-skipped-step). */
struct finding_optimizer {
	int64_t pid;
	uint64_t id;
	int number;                   /* as finding_scaler's */
	bool skipped;                 /* its last step was skipped... */
	enum finding_skip_kind kind;  /* ... as this kind of skip */
	size_t scaler;                /* its scaler's index in
					 scalers.items (they move as they
					 grow), SIZE_MAX: none */
};
struct finding_optimizers {
	struct finding_optimizer *items;
	size_t count, cap;
	struct finding_registry registry;
};

/* The fp16-overflow amp.diag events by op (findings_causes.c). */
struct finding_origins {
	struct id_map by_op; /* (pid, op_id) -> its first fp16-overflow diag */
	bool built;
};

/* Indexes a rule builds in one pass over the trace the first time it
 * asks, instead of searching the trace for each event it judges (which
 * made the findings quadratic in the trace's length): */

/* dtype-mismatch (findings_dtype.c): each tensor's first module
 * conversion to each dtype (a cast op from another dtype), chained. */
struct finding_conversions {
	struct id_map first; /* (pid, tensor) -> a conversion of it (event) */
	struct id_map next;  /* (pid, conversion) -> the tensor's first
				conversion to another dtype (event) */
	bool built;
};

/* fp16-overflow (findings_steps.c): whether the next GradScaler event
 * of the process that decides (a skipped step, an update) after each
 * fp16-overflow amp.diag event is a skipped step. */
struct finding_overflow_verdicts {
	struct id_map skipped; /* (pid, diag event) -> 1: a skipped step */
	bool built;
};

/* policy-divergence (findings_divergence.c): the op each TorchScript
 * cast was made for, the first later op of its thread (not itself such a
 * cast) that reads the cast's result. */
struct finding_jit_consumers {
	struct id_map of_cast; /* (pid, cast event) -> op event */
	bool built;
};

/* What the rules share: the trace and its index, the findings so far,
 * and the state the rules fed event by event keep between events. */
struct findings_context {
	const struct trace *t;
	const struct trace_index *ix; /* ops, producers, names, uses */
	struct findings *out;
	bool failed;
	int table;               /* the trace's policy table (index) */
	struct finding_lp_memo lp_memo;
	struct finding_regions regions; /* built before the rules run */
	struct finding_casts casts;
	struct finding_scalers scalers;
	struct finding_optimizers optimizers;
	struct finding_origins origins; /* built at the first skipped step */
	struct finding_conversions conversions;
	struct finding_overflow_verdicts overflow_verdicts;
	struct finding_jit_consumers jit_consumers;
	/* policy-divergence: (pid, tid) -> 1 while the thread's last op
	 * outside any region ran with autocast off, no region event since */
	struct id_map autocast_off;
	/* cache-other-dtype: (pid, op_id) -> 1 for each op reported (one
	 * per op, whatever the number of its arguments from the cache, and
	 * other threads' casts may come between them) */
	struct id_map other_dtype_ops;
	/* cache-disabled: (pid, tensor) -> the outermost region + 1 its
	 * last cast with the cache off was made in */
	struct id_map uncached_casts;
	/* (pid, hash of kind and site) -> the finding's index in out->items,
	 * the first of that hash: finding_at looked through every finding
	 * for each occurrence (20,000 sites: 1.6 s) */
	struct id_map sites;
};

/* Sets up the context for `ix`'s trace (the regions built), and frees it;
 * a failure sets cx->failed. */
void findings_context_init(struct findings_context *cx,
			   const struct trace_index *ix, struct findings *out);
void findings_context_free(struct findings_context *cx);

/* The processes a rule that reads every event keeps apart, in the order
 * of their first events: as many as the trace has (a merged job of 100
 * ranks), `last` the index asked for last (a process's events come in
 * runs). */
struct finding_pids {
	int64_t *items;
	size_t count, cap, last;
};
/* The index of `pid` in `p`, added at the end when new; SIZE_MAX when
 * out of memory. */
size_t finding_pid_index(struct finding_pids *p, int64_t pid);
void finding_pids_free(struct finding_pids *p);

/* findings_context.c */
void finding_text(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The finding of (kind, site, pid), counted; or a new one to fill (its
 * message empty), or NULL when it exists already or memory ran out. */
struct trace_finding *finding_at(struct findings_context *cx, const char *kind,
				 const char *site, int64_t pid, size_t event);
/* The finding of (kind, site, pid), or NULL. */
struct trace_finding *finding_find(struct findings_context *cx,
				   const char *kind, const char *site,
				   int64_t pid);
/* finding_at for one of the kinds of the table. */
struct trace_finding *finding_of(struct findings_context *cx,
				 enum finding_kind_id kind,
				 const char *site, int64_t pid, size_t event);
/* Inline, the first letter first: the rules ask it of every op several
 * times, and half of them are forward ops. */
static inline bool finding_op_is_backward(const struct trace_op *op)
{
	return op->phase && op->phase[0] == 'b' &&
	       !strcmp(op->phase, "backward");
}
/* Inline too: three rules ask it of every op. */
static inline bool finding_op_failed(const struct trace_op *op)
{
	return !op->incomplete && (op->status != 0 || op->error);
}
const char *finding_tensor_label(struct findings_context *cx, int64_t pid,
				 uint64_t id, char *buf, size_t size);
/* The amp.op of (pid, op_id), or NULL; its label, or "op N". */
const struct trace_op *finding_op_of(struct findings_context *cx, int64_t pid,
				     uint64_t op_id);
const char *finding_op_label(struct findings_context *cx, int64_t pid,
			     uint64_t op_id, char *buf, size_t size);
bool finding_is_low_precision(const char *dtype);  /* f16, bf16 */
bool finding_is_full_precision(const char *dtype); /* f32, f64 */
/* An op of a PyTorch lower-precision list in the trace's policy table.
 * `name`: one of the trace's strings (remembered by its address). */
bool finding_low_precision_op(struct findings_context *cx, const char *name);

/* findings_threads.c */
void finding_regions_build(struct findings_context *cx,
			   struct finding_regions *r);
void finding_regions_free(struct finding_regions *r);

/* findings_causes.c: what made GradScaler skip a step. */
void finding_origins_build(struct findings_context *cx,
			   struct finding_origins *o);
void finding_origins_free(struct findings_context *cx,
			  struct finding_origins *o);
struct finding_cause {
	uint64_t gradient; /* the first gradient holding inf/NaN, or 0 */
	size_t maker;      /* the op event that computed it, or SIZE_MAX */
	size_t origin;     /* the fp16-overflow diag event the walk back from
			      it reached first (a backward one before a
			      forward one), else the step's first; or
			      SIZE_MAX */
	bool forward;      /* that overflow is a forward op's */
};
/* The cause of the skip at scaler event `step` (a `step` with
 * step_skipped), looking back no further than event `floor` (the
 * scaler's previous update). */
void finding_skip_cause(struct findings_context *cx,
			const struct finding_origins *o, size_t step,
			size_t floor, struct finding_cause *out);
/* "gradient tensor 75 'fc1.weight.grad', made by mm (op 66: backward of
 * linear op 21, weight 'fc1.weight'), held inf/NaN; ..." */
void finding_cause_text(struct findings_context *cx, int64_t pid,
			const struct finding_cause *c, char *buf, size_t size);
/* "linear (op 23: forward, weight 'big.weight')": an op and its layer. */
const char *finding_op_with_layer(struct findings_context *cx, int64_t pid,
				  const struct trace_op *op, char *buf,
				  size_t size);

/* findings_dtype.c: whether a failed op is dtype-mismatch's (mixed
 * low- and full-precision inputs where autocast did not cast them), and
 * whether op (pid, op_id) has that finding already. */
bool finding_dtype_mismatch_explains(const struct trace_op *op);
bool finding_op_has_dtype_mismatch(struct findings_context *cx, int64_t pid,
				   uint64_t op_id);
/* Whether failed op event `event` failed with the exception of an op
 * inside it that is dtype-mismatch's (a custom Function's backward
 * raising its mm's error): that finding is then its. */
bool finding_failure_is_dtype_mismatch(struct findings_context *cx,
				       size_t event);

/* low_precision_ops.c (generated from libamp's policy table): the ops of
 * PyTorch's lower-precision lists, sorted by name, each with the table
 * versions (bit v: amp_torch_version v) that list it; and the versions'
 * names ("1.13", "newest"), oldest first, the last the newest. */
struct finding_lp_op {
	const char *name;
	unsigned versions;
};
extern const struct finding_lp_op finding_low_precision_ops[];
extern const size_t finding_low_precision_op_count;
extern const char *const finding_policy_tables[];
extern const int finding_policy_table_count;

/* The rules of the table's rows (findings_kinds.c), one per kind, by
 * file; each rule's comment says when it fires. */
/* findings_ops.c */
finding_event_rule finding_rule_banned_op, finding_rule_op_error,
	finding_rule_compile_error_suppressed,
	finding_rule_stale_cache, finding_rule_cache_other_dtype,
	finding_rule_cache_disabled;
/* findings_dtype.c */
finding_event_rule finding_rule_dtype_mismatch;
/* findings_threads.c */
finding_event_rule finding_rule_backward_under_autocast,
	finding_rule_autocast_off_in_thread;
finding_trace_rule finding_rule_autocast_never_enabled;
/* findings_casts.c */
finding_event_rule finding_rule_redundant_cast;
void finding_casts_free(struct findings_context *cx);
/* findings_divergence.c */
finding_event_rule finding_rule_policy_divergence;
/* findings_steps.c */
finding_event_rule finding_rule_fp16_overflow, finding_rule_scaler_collapse,
	finding_rule_scaler_skipped_step,
	finding_rule_lr_scheduler_skipped_step;
void finding_steps_free(struct findings_context *cx);
/* Whether the GradScaler rules read scaler event `s` (findings_event_read). */
bool finding_scaler_event_read(const struct trace_scaler *s);
finding_trace_rule finding_rule_cache_growth;

/* findings.c: an amp.diag event of the trace as a finding of its kind,
 * or folded into the one the rules found (the fp16-overflow rule's, which
 * decides first whether its amp.diag events are findings at all). */
void finding_fold_diag(struct findings_context *cx, size_t event);

#endif /* AMPTRACE_FINDINGS_INTERNAL_H */
