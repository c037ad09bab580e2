/* Findings: the AMP mistakes amptrace diagnoses by name, computed from a
 * loaded trace (pure analysis: no I/O, no output).
 *
 * Most kinds are recognised in the events (ops, casts, regions, cache
 * counters, GradScaler events); the value-dependent ones (fp16-overflow,
 * cast-underflow) need tensor values and arrive as amp.diag events that
 * libamp emitted while the program ran.  Every amp.diag event of the file
 * is folded in, so a finding appended to the trace earlier is not counted
 * twice.  Occurrences are aggregated per (kind, site): a loop that
 * overflows 1000 times gives one finding with count 1000.
 *
 * The rules, their thresholds and the step detection are documented at
 * the top of findings.c and in FORMAT.md ("amp.diag").
 *
 * Ownership: findings_compute() fills a `struct findings` that owns its
 * arrays; kind, fix and the strings of the trace it points into stay valid
 * while the trace lives.  findings_free() releases it. */
#ifndef AMPTRACE_FINDINGS_H
#define AMPTRACE_FINDINGS_H

#include "trace.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most severe first: the order summary lists them in. */
enum finding_severity {
	FINDING_ERROR,   /* wrong results or a failed run */
	FINDING_WARNING, /* likely wrong, slower or fragile */
	FINDING_INFO,    /* wasted work */
	FINDING_SEVERITY_COUNT
};

/* "error", "warning", "info". */
const char *finding_severity_name(enum finding_severity severity);

/* The kinds amptrace knows, in the order findings are listed within a
 * severity (the rules are at the top of findings.c). */
enum finding_kind_id {
	FINDING_PROCESS_DIED,
	FINDING_DTYPE_MISMATCH,
	FINDING_BANNED_OP,
	FINDING_FP16_OVERFLOW,
	FINDING_SCALER_COLLAPSE,
	FINDING_OP_ERROR,
	FINDING_RECORDING_STOPPED,
	FINDING_STALE_CACHE,
	FINDING_BACKWARD_UNDER_AUTOCAST,
	FINDING_AUTOCAST_OFF_IN_THREAD,
	FINDING_POLICY_DIVERGENCE,
	FINDING_COMPILE_DIVERGENCE,
	FINDING_CACHE_GROWTH,
	FINDING_SCALER_SKIPPED_STEP,
	FINDING_CAST_UNDERFLOW,
	FINDING_REDUNDANT_CAST,
	FINDING_CACHE_DISABLED,
	FINDING_RECOMPILE,
	FINDING_GRAPH_BREAK,
	FINDING_KIND_COUNT
};

/* One row per kind: its name, severity and one-line fix. */
struct finding_kind {
	const char *name;
	enum finding_severity severity;
	const char *fix;
	bool value_dependent; /* only libamp can see it (amp.diag events) */
};
/* Indexed by enum finding_kind_id. */
extern const struct finding_kind finding_kinds[FINDING_KIND_COUNT];
/* The row of `name`, or NULL for a kind amptrace does not know. */
const struct finding_kind *finding_kind_lookup(const char *name);

struct trace_finding {
	const char *kind;
	enum finding_severity severity;
	const char *fix;          /* one line */
	char message[768];        /* the first occurrence, explained */
	size_t count;             /* occurrences folded into this finding */
	size_t event;             /* the first occurrence's event index */
	int64_t pid;
	uint64_t op_id;           /* 0 when no op is at fault */
	uint64_t tensor;          /* 0 when no tensor is at fault */
	int64_t thread;           /* the thread at fault (0 = none) */
	int64_t other_thread;     /* autocast-off-in-thread: the parent */
	bool from_trace;          /* an amp.diag event of the file */
	char site[160];           /* aggregation key within the kind */
	size_t occurrences;       /* its newest occurrence in
				     findings.occurrences, SIZE_MAX: none */
};

/* One occurrence folded into a finding (ampview notes every step where a
 * finding occurs): a chain per finding, newest first. */
struct finding_occurrence {
	size_t event;             /* the event the rule saw it at */
	size_t next;              /* the finding's previous one, or SIZE_MAX */
};

struct findings {
	struct trace_finding *items; /* sorted: most severe first */
	size_t count, cap;
	struct finding_occurrence *occurrences;
	size_t noccurrences, cap_occurrences;
};

/* A finding as JSON, the keys every command's output shares: kind,
 * severity, count, message, fix, op_id, tensor (0: none).  NULL when out
 * of memory. */
cJSON *finding_json(const struct trace_finding *finding);

/* Computes every finding of `trace`.  Returns 0, or -1 when out of
 * memory (`out` then holds what was found). */
int findings_compute(const struct trace *trace, struct findings *out);
/* The same with the trace's index already built (trace_index.h). */
struct trace_index;
int findings_compute_indexed(const struct trace_index *ix,
			     struct findings *out);
void findings_free(struct findings *findings);
/* What produced the trace: the header's `framework` ("torch 1.13.0a0
 * (policy table: 1.13)", "libamp 0.1.0"), else the first process's in
 * the trailer; NULL when neither names one. */
const char *findings_framework(const struct trace *trace);
/* The policy table the trace's ops are judged by: the one its framework
 * names ("(policy table: 1.13)"), else the newest (libamp's own).  An
 * index into the generated table list (0 = oldest). */
int findings_policy_table(const struct trace *trace);
/* That table's name: "1.13", "newest". */
const char *finding_policy_table_name(int table);
/* The first finding of `kind`, or NULL. */
const struct trace_finding *findings_get(const struct findings *findings,
					 const char *kind);

#endif /* AMPTRACE_FINDINGS_H */
