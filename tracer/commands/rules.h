/* The rule language of `amptrace check` (grammar and meaning in
 * tracer/RULES.md): one assertion per line about what a trace shows,
 * e.g. `op linear: output f16` or `casts f32->f16 <= 12 per step`. */
#ifndef AMPTRACE_RULES_H
#define AMPTRACE_RULES_H

#include "trace_scan.h"

#include <stdbool.h>
#include <stddef.h>

enum rule_kind {
	RULE_OP,       /* op NAME [filters]: checks */
	RULE_CASTS,    /* casts WHICH [filters] CMP N [per step] */
	RULE_CACHE,    /* cache METRIC CMP N */
	RULE_FINDING,  /* no finding KIND | finding KIND CMP N | no findings */
	RULE_SCALER,   /* scaler METRIC CMP N */
	RULE_OPS,      /* ops total CMP N: also says an empty trace is expected */
	RULE_KIND_COUNT
};

enum rule_cmp { CMP_LE, CMP_LT, CMP_GE, CMP_GT, CMP_EQ, CMP_NE, CMP_COUNT };

#define RULE_MAX_VALUES 8
#define RULE_MAX_CHECKS 8

enum op_check_kind { CHECK_OUTPUT, CHECK_INPUTS, CHECK_POLICY, CHECK_COUNT };

struct op_check {
	enum op_check_kind kind;
	const char *values[RULE_MAX_VALUES]; /* dtype or policy names */
	int nvalues;
	enum rule_cmp cmp;                   /* CHECK_COUNT */
	double number;
};

struct rule_filter {
	char *scope;        /* in scope NAME (a glob), or NULL */
	char *module;       /* in module PATH (a glob), or NULL */
	/* in phase forward|backward|optimizer|any; NULL: op rules mean
	 * forward (the phase autocast decides in), casts rules any */
	const char *phase;
	const char *device; /* on cpu|cuda, or NULL */
	int autocast;       /* -1 any, 1 under autocast, 0 outside autocast */
	char *op;           /* casts: for op NAME, or NULL */
	const char *cache;  /* casts: cache RESULT; NULL = every result but hit */
	/* casts: origin autocast|autograd|custom_fwd|compiled|any; NULL = autocast */
	const char *origin;
};

struct rule {
	enum rule_kind kind;
	size_t line;
	char *text;             /* the rule as written (comment stripped) */
	char *op;               /* RULE_OP: name or glob */
	struct rule_filter filter;
	struct op_check *checks; /* RULE_OP: nchecks of them */
	int nchecks;
	const char *from, *to;  /* RULE_CASTS: NULL = any */
	bool per_step;
	const char *metric;     /* RULE_CACHE, RULE_SCALER, RULE_OPS */
	char *finding;          /* RULE_FINDING: NULL = any finding */
	enum rule_cmp cmp;
	double number;
};

struct rules {
	char *path;
	struct rule *items;
	size_t count;
};

/* Parses `text` (the contents of `path`).  Returns 0, or -1 with err set
 * to "path:line:col: expected ..., got ...". */
int rules_parse(const char *path, const char *text, size_t len,
		struct rules *rules, struct trace_error *err);
void rules_free(struct rules *rules);

const char *rule_cmp_text(enum rule_cmp cmp);
bool rule_compare(double value, enum rule_cmp cmp, double number);

#endif /* AMPTRACE_RULES_H */
