/* Findings: the AMP mistakes amptrace diagnoses by name, computed from a
 * loaded trace (pure analysis: no I/O, no output).
 *
 * Each kind is one row of `finding_kinds` (findings_kinds.c): its name,
 * severity, who writes it, the rule that finds it in the events, a
 * one-line fix and the line that documents it (tracer/RULES.md's table
 * of kinds is generated from these rows: finding_docs.c).  The engine
 * (findings.c) runs the rows' rules over the trace.  The kinds libamp
 * or `amptrace run` see while the program runs (fp16-overflow,
 * process-died, ...) arrive as amp.diag events; every amp.diag event of
 * the file is folded in, so a finding appended to the trace earlier is
 * not counted twice.  Occurrences are aggregated per (kind, site): a loop
 * that overflows 1000 times gives one finding with count 1000.
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
 * severity.  Adding one: an id here, its row in findings_kinds.c, its
 * rule in a findings_*.c file (findings_internal.h declares it), a
 * program making the mistake and its fixed twin (a mode of
 * tests/findings_prog.c in test_findings.c's cases, or a PyTorch
 * scenario in tests/torch), RULES.md's table regenerated (`ninja -C
 * build finding-docs`) and the kind named in README.md's list. */
enum finding_kind_id {
	FINDING_PROCESS_DIED,
	FINDING_DTYPE_MISMATCH,
	FINDING_BANNED_OP,
	FINDING_FP16_OVERFLOW,
	FINDING_SCALER_COLLAPSE,
	FINDING_OP_ERROR,
	FINDING_RECORDING_STOPPED,
	FINDING_PRODUCER_CONTRACT,
	FINDING_STALE_CACHE,
	FINDING_CACHE_OTHER_DTYPE,
	FINDING_BACKWARD_UNDER_AUTOCAST,
	FINDING_AUTOCAST_OFF_IN_THREAD,
	FINDING_POLICY_DIVERGENCE,
	FINDING_COMPILE_DIVERGENCE,
	FINDING_COMPILE_ERROR_SUPPRESSED,
	FINDING_NO_COMPILED_GRAPH,
	FINDING_CACHE_GROWTH,
	FINDING_SCALER_SKIPPED_STEP,
	FINDING_LR_SCHEDULER_SKIPPED_STEP,
	FINDING_CAST_UNDERFLOW,
	FINDING_REDUNDANT_CAST,
	FINDING_CACHE_DISABLED,
	FINDING_RECOMPILE,
	FINDING_GRAPH_BREAK,
	FINDING_AUTOCAST_NEVER_ENABLED,
	FINDING_WORKERS_UNRECORDED,
	FINDING_FSDP_MIXED_PRECISION,
	FINDING_KIND_COUNT
};

/* Who writes a kind's findings (RULES.md's "from" column). */
enum finding_source {
	FINDING_FROM_EVENTS,       /* amptrace, from the events: a rule */
	FINDING_FROM_VALUE_CHECKS, /* libamp's value checks, as amp.diag events */
	FINDING_FROM_RUN,          /* amptrace run, as amp.diag events */
	FINDING_FROM_RECORDER,     /* amptrace run's recorder, likewise */
	FINDING_FROM_PRODUCER_CHECKS, /* the producer API's contract checks
				       * (-Dproducer_checks), likewise */
	FINDING_FROM_BRIDGE,       /* the PyTorch bridge's torch.compile side
				    * (_compile.py), likewise */
	FINDING_FROM_TRACE_BLOCKS, /* the bridge's trace() blocks, likewise */
	FINDING_FROM_BRIDGE_FSDP,  /* the bridge's FSDP side (_fsdp.py), likewise */
	FINDING_SOURCE_COUNT
};

/* "events", "libamp (value checks)", "amptrace run", ... */
const char *finding_source_name(enum finding_source source);

/* A kind's rule (findings_internal.h has what rules share).  `each` is
 * called with every event whose kind is in `reads`, in the trace's
 * order, every rule on one event before the next event; `once` once,
 * after that pass, for a rule over a run's history. */
struct findings_context;
typedef void finding_event_rule(struct findings_context *cx, size_t event);
typedef void finding_trace_rule(struct findings_context *cx);
#define FINDING_READS(trace_kind) (1u << (trace_kind))

/* One row per kind. */
struct finding_kind {
	const char *name;
	enum finding_severity severity;
	enum finding_source source;
	unsigned reads;            /* FINDING_READS bits: what `each` is fed */
	finding_event_rule *each;  /* NULL: none */
	finding_trace_rule *once;  /* NULL: none */
	const char *fix;           /* one line: what to change */
	const char *doc;           /* one line: when it fires (RULES.md) */
	/* an amp.diag of no op and no tensor is a finding of its own per
	 * message (the message names what is at fault), not folded into
	 * the process's first of the kind */
	bool by_message;
	/* a fact a producer notes, not a fault: never a finding (its
	 * amp.diag events are read where they matter: summary's line of
	 * FSDP's mixed precision, autocast-never-enabled) */
	bool note;
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

/* A step GradScaler skipped, and why (summary's "skipped steps"). */
struct finding_skip {
	size_t event;             /* the scaler's `step` event */
	double scale;             /* the scale it skipped at */
	char cause[640];          /* finding_cause_text's */
};

struct findings {
	struct trace_finding *items; /* sorted: most severe first */
	size_t count, cap;
	struct finding_occurrence *occurrences;
	size_t noccurrences, cap_occurrences;
	struct finding_skip *skips;  /* in the trace's order */
	size_t nskips, cap_skips;
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
/* Only the rows of aggregate `a` that the findings read, moved to the
 * front of its arrays in their order: the op rows that failed or are
 * banned, the first op row autocast ran (with a policy) and the first
 * backward one (the rules over aggregates ask whether there is any),
 * the first cast row of autocast's, every diag row; the rows kept only
 * to say there is one keep no count, bytes or time (unread: the rows of
 * steps alike are then alike, kept once).  `amptrace run` keeps a step's
 * aggregates so in the trace it computes the findings from, its file
 * keeps every row: a step costs it a few rows, not a few dozen. */
void findings_aggregate_trim(struct trace_aggregate *a);
/* Whether any finding reads event `e`: false for a GradScaler's
 * `scale` events and the `unscale` events that found no inf/NaN (two of
 * the six events of a typical GradScaler loop's step recorded as
 * aggregates).  `amptrace run` keeps only the events the findings read
 * in the trace it computes them from; its file keeps every event. */
bool findings_event_read(const struct trace_event *e);
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
/* Whether amp.diag `d` is the PyTorch bridge's note of an FSDP
 * mixed-precision policy (fsdp-mixed-precision, FORMAT.md §3.7). */
bool findings_is_fsdp_policy(const struct trace_diag *d);
/* The first finding of `kind`, or NULL. */
const struct trace_finding *findings_get(const struct findings *findings,
					 const char *kind);

#endif /* AMPTRACE_FINDINGS_H */
