/* The findings engine's parts (findings.h): findings.c has the table,
 * the indexes and the per-event rules; findings_steps.c the rules over a
 * run's history (GradScaler, cache growth). */
#ifndef AMPTRACE_FINDINGS_INTERNAL_H
#define AMPTRACE_FINDINGS_INTERNAL_H

#include "findings.h"
#include "id_map.h"
#include "trace_index.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CACHE_GROWTH_STEPS 3
#define SCALER_COLLAPSE_SCALE 1.0
#define SCALER_COLLAPSE_HALVINGS 8

struct context {
	const struct trace *t;
	const struct trace_index *ix; /* ops, producers, names, uses */
	struct findings *out;
	bool failed;
	struct id_map first_ts;  /* (pid, tid) -> first event */
	int table;               /* the trace's policy table (index) */
};

/* findings.c */
void finding_text(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
struct trace_finding *finding_of(struct context *cx, enum finding_kind_id kind,
				 const char *site, int64_t pid, size_t event);
bool finding_op_is_backward(const struct trace_op *op);
const char *finding_tensor_label(struct context *cx, int64_t pid, uint64_t id,
				 char *buf, size_t size);

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

/* findings_steps.c */
void finding_rule_scaler(struct context *cx);
void finding_rule_cache_growth(struct context *cx);

/* findings_divergence.c */
void finding_rule_divergence(struct context *cx);

#endif /* AMPTRACE_FINDINGS_INTERNAL_H */
