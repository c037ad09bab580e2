/* The findings engine's parts (findings.h), each using only those below
 * it: findings.c runs the rules (the per-event ones are its own) and
 * orders what they found; findings_threads.c the rules about autocast
 * regions and threads; findings_casts.c redundant-cast; findings_steps.c
 * the rules over a run's history (GradScaler, cache growth);
 * findings_divergence.c policy-divergence; findings_context.c what every
 * rule uses; findings_kinds.c the table of kinds. */
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

struct findings_context {
	struct finding_lp_memo *lp_memo; /* NULL: none */
	const struct trace *t;
	const struct trace_index *ix; /* ops, producers, names, uses */
	struct findings *out;
	bool failed;
	int table;               /* the trace's policy table (index) */
};

/* findings_context.c */
void finding_text(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* The finding of (kind, site, pid), counted; or a new one to fill (its
 * message empty), or NULL when it exists already or memory ran out. */
struct trace_finding *finding_at(struct findings_context *cx, const char *kind,
				 const char *site, int64_t pid, size_t event);
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
bool finding_op_failed(const struct trace_op *op);
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
bool finding_low_precision_op(const struct findings_context *cx,
			      const char *name);

/* findings_threads.c: the autocast regions of every thread. */
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

struct finding_regions {
	struct finding_region *items; /* in the order they were entered */
	size_t count, cap;
	uint32_t *at;         /* per event: its thread's innermost open
				 region + 1 (0: none) */
	struct id_map first;  /* (pid, tid) -> the thread's first event */
	struct id_map ties;   /* (pid, region << 32 | tid) -> TIE_* bits */
};

void finding_regions_build(struct findings_context *cx,
			   struct finding_regions *r);
void finding_regions_free(struct finding_regions *r);
void finding_rule_backward(struct findings_context *cx,
			   const struct finding_regions *r, size_t i);
void finding_rule_thread(struct findings_context *cx,
			 const struct finding_regions *r, size_t i);

/* findings_casts.c: redundant-cast, fed every event in order. */
struct finding_casts {
	struct id_map written; /* (pid, result) -> the program's cast */
	struct id_map sources; /* (pid, source) -> its latest cast by the
				  program, while the source is unchanged */
	struct id_map undone;  /* (pid, result) -> its uses casting it back */
};
void finding_rule_redundant(struct findings_context *cx,
			    struct finding_casts *state, size_t i);
void finding_casts_free(struct findings_context *cx,
			struct finding_casts *state);

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

/* findings_causes.c: what made GradScaler skip a step. */
struct finding_origins {
	struct id_map by_op; /* (pid, op_id) -> its first fp16-overflow diag */
};
void finding_origins_build(struct findings_context *cx,
			   struct finding_origins *o);
void finding_origins_free(struct findings_context *cx,
			  struct finding_origins *o);
struct finding_cause {
	uint64_t gradient; /* the first gradient holding inf/NaN, or 0 */
	size_t maker;      /* the op event that computed it, or SIZE_MAX */
	size_t origin;     /* the fp16-overflow diag event the walk back from
			      it reached first, else the step's first; or
			      SIZE_MAX */
	bool forward;      /* that overflow is a forward op's */
};
/* The cause of the skip at scaler event `step` (a `step` with
 * step_skipped), looking back no further than event `floor` (the
 * scaler's previous update). */
void finding_skip_cause(struct findings_context *cx,
			const struct finding_origins *o, size_t step,
			size_t floor, struct finding_cause *out);
/* "gradient tensor 75 'fc1.weight.grad' (made by mm (op 66, backward of
 * linear op 21, weight 'fc1.weight')) held inf/NaN; its first ..." */
void finding_cause_text(struct findings_context *cx, int64_t pid,
			const struct finding_cause *c, char *buf, size_t size);
/* "linear (op 23, forward, weight 'big.weight')": an op and its layer. */
const char *finding_op_with_layer(struct findings_context *cx, int64_t pid,
				  const struct trace_op *op, char *buf,
				  size_t size);

/* findings_dtype.c: dtype-mismatch, for op event i (false: none). */
bool finding_rule_dtype_mismatch(struct findings_context *cx, size_t i);
/* Whether op (pid, op_id) has a dtype-mismatch finding already. */
bool finding_op_has_dtype_mismatch(struct findings_context *cx, int64_t pid,
				   uint64_t op_id);

/* findings_steps.c */
void finding_rule_scaler(struct findings_context *cx);
void finding_rule_cache_growth(struct findings_context *cx);

/* findings_divergence.c */
void finding_rule_divergence(struct findings_context *cx);

#endif /* AMPTRACE_FINDINGS_INTERNAL_H */
