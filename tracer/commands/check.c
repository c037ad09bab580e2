/* `amptrace check TRACE RULES [--junit out.xml]`: evaluates a rules file
 * (tracer/RULES.md) against a trace, for CI.  Exit 0 when every rule
 * holds, 1 when one fails, 2 on bad input. */
#include "analyze.h"
#include "check_hints.h"
#include "command_line.h"
#include "commands.h"
#include "early_ends.h"
#include "output_file.h"
#include "rules.h"
#include "run_python.h"
#include "trace.h"
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char check_usage[] =
	"usage: amptrace check TRACE.json RULES [--junit OUT.xml] [--rank N]\n"
	"\n"
	"Checks cast assertions against a trace, one rule per line, e.g.\n"
	"    op linear: output f16\n"
	"    op softmax in scope \"loss\": output f32\n"
	"    casts f32->f16 <= 12 per step\n"
	"    cache hit-rate >= 0.5\n"
	"    no finding backward-under-autocast\n"
	"    scaler skipped-steps <= 1\n"
	"    ops total == 0\n"
	"`amptrace help rules` prints the grammar (RULES.md has it with\n"
	"examples).  A trace without any op fails\n"
	"(\"no ops recorded\": the wrong program was traced) unless an\n"
	"`ops total` rule says what to expect.  An op or region a rule names\n"
	"that the trace lacks is said with the closest name it has (\"did you\n"
	"mean 'linear'?\"); op rules select forward ops unless a phase is\n"
	"given (in backward, in optimizer, in any).\n"
	"\n"
	"  --junit FILE  also write the results as JUnit XML (for CI): a\n"
	"                testsuite named after TRACE, with hostname,\n"
	"                timestamp and time\n"
	"  --rank N      check rank N's processes alone (its DataLoader\n"
	"                workers too): every count is that rank's, as if it\n"
	"                had run alone (default: the whole trace, a job's\n"
	"                counts its ranks' sum but for `per step` rules)\n"
	"  -h, --help    this text\n"
	"\n"
	"Exit status: 0 every rule holds, 1 a rule failed or no op was\n"
	"recorded, 2 bad input (unreadable trace, rule syntax error) or an\n"
	"output that cannot be written.\n";

struct outcome {
	bool pass;
	char expected[512];
	char actual[1024];
	char first[1024];   /* the first offending op / tensor / step */
	double seconds;     /* evaluating it took, for the JUnit testcase */
};

/* What is kept of each rule's outcome for the JUnit report. */
struct verdict {
	bool pass;
	double seconds;
	/* a failure's "expected\0actual\0first\0", with --junit; else NULL
	 * (then "" for each) */
	char *failure;
};

static struct verdict verdict_of(const struct outcome *o, bool keep_text)
{
	struct verdict v = { .pass = o->pass, .seconds = o->seconds };
	size_t e = strlen(o->expected) + 1, a = strlen(o->actual) + 1;
	size_t f = strlen(o->first) + 1;

	if (o->pass || !keep_text)
		return v;
	v.failure = malloc(e + a + f + 1);
	if (v.failure) {
		memcpy(v.failure, o->expected, e);
		memcpy(v.failure + e, o->actual, a);
		memcpy(v.failure + e + a, o->first, f);
	}
	return v;
}

static void set(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void set(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, size, fmt, ap);
	va_end(ap);
}

static bool op_selected(const struct rule_filter *f, const struct trace_op *op,
			const char *default_phase)
{
	const char *phase = f->phase ? f->phase : default_phase;

	if (f->scope && !analysis_op_in_scope(op, f->scope))
		return false;
	if (f->module && !analysis_in_module(op->module, f->module))
		return false;
	if (phase && strcmp(phase, "any") &&
	    (!op->phase || strcmp(op->phase, phase)))
		return false;
	if (f->device && (!op->device || strcmp(op->device, f->device)))
		return false;
	if (f->autocast >= 0 && op->autocast->enabled != (f->autocast == 1))
		return false;
	return true;
}

static bool cast_selected(const struct analysis *a, const struct rule *r,
			  const struct trace_event *e)
{
	const struct trace_cast *c = &e->cast;
	const struct rule_filter *f = &r->filter;
	const struct trace_event *op = analysis_op(a, e->pid, c->op_id);

	if (strcmp(f->origin ? f->origin : "autocast", "any") &&
	    strcmp(f->origin ? f->origin : "autocast",
		   c->origin ? c->origin : "autocast"))
		return false;
	if (r->from && strcmp(c->from, r->from))
		return false;
	if (r->to && strcmp(c->to, r->to))
		return false;
	if (!f->cache ? !strcmp(c->cache, "hit")
		      : strcmp(f->cache, "any") && strcmp(f->cache, c->cache))
		return false;
	if (f->scope && !analysis_cast_in_scope(a, e, f->scope))
		return false;
	if (f->module && !analysis_in_module(c->module, f->module))
		return false;
	if (op && !op_selected(f, &op->op, NULL))
		return false;
	if (!op && f->phase && strcmp(f->phase, "any") &&
	    (!c->phase || strcmp(c->phase, f->phase)))
		return false;
	if (f->op && !check_name_matches(f->op, op ? op->op.op : c->op,
				   op ? op->op.overload : NULL))
		return false;
	return true;
}

/* What the rows of a step recorded as aggregates do not say that rule
 * `r` asks (FORMAT.md §3.12: a row keeps no region, module, inputs or
 * autocast state, a cast's row no device), or NULL when they answer it.
 * Such a rule cannot count those steps: it leaves them out, and says so. */
static const char *aggregates_lack(const struct analysis *a,
				   const struct rule *r)
{
	const struct rule_filter *f = &r->filter;

	if (f->scope)
		return "the region";
	/* in a trace that names no module (libamp's), no step recorded as
	 * aggregates has an op or a cast in one either */
	if (f->module && a->names_modules)
		return "the module";
	if (f->autocast >= 0)
		return "whether autocast applied";
	if (r->kind == RULE_CASTS && f->device)
		return "a cast's device";
	for (int k = 0; k < r->nchecks; k++)
		if (r->checks[k].kind == CHECK_INPUTS)
			return "the inputs";
	return NULL;
}

/* "; up to 30 more casts in steps recorded as aggregates, not counted:
 * their rows do not say the module" */
static void append_left_out(char *buf, size_t size, size_t left_out,
			    const char *what, const struct analysis *a,
			    const struct rule *r)
{
	size_t used = strlen(buf);

	if (left_out)
		snprintf(buf + used, size - used, "; up to %zu more %s in steps "
			 "recorded as aggregates, not counted: their rows do "
			 "not say %s", left_out, what, aggregates_lack(a, r));
}

/* The casts of a step recorded as aggregates that rule `r` would count if
 * its rows said all it asks (aggregates_lack). */
static size_t aggregate_casts_matching(const struct rule *r,
				       const struct trace_aggregate *g)
{
	const struct rule_filter *f = &r->filter;
	size_t n = 0;

	for (int k = 0; k < g->ncasts; k++) {
		const struct trace_aggregate_cast *c = &g->casts[k];
		if (strcmp(f->origin ? f->origin : "autocast", "any") &&
		    strcmp(f->origin ? f->origin : "autocast",
			   c->origin ? c->origin : "autocast"))
			continue;
		if ((r->from && strcmp(c->from, r->from)) ||
		    (r->to && strcmp(c->to, r->to)))
			continue;
		if (!f->cache ? !strcmp(c->cache, "hit")
			      : strcmp(f->cache, "any") &&
					strcmp(f->cache, c->cache))
			continue;
		if (f->phase && strcmp(f->phase, "any") &&
		    strcmp(c->phase, f->phase))
			continue;
		if (f->op && !check_name_matches(f->op, c->op, NULL))
			continue;
		n += c->count;
	}
	return n;
}

/* The casts a step recorded as aggregates counts for a casts rule: none
 * when its rows cannot answer the rule (`lacking`: aggregates_lack), nor
 * in a module, which no row names. */
static size_t aggregate_casts_selected(bool lacking, const struct rule *r,
				       const struct trace_aggregate *g)
{
	if (lacking || r->filter.module)
		return 0;
	return aggregate_casts_matching(r, g);
}

static size_t describe_tensor(char *buf, size_t size,
			      const struct trace_tensor *t)
{
	const struct trace_tensor_info *x = t->info;
	size_t n = (size_t)snprintf(buf, size, "tensor %llu%s%s%s %s [",
				    (unsigned long long)t->id,
				    x->name ? " '" : "", x->name ? x->name : "",
				    x->name ? "'" : "", x->dtype);
	for (int d = 0; d < x->ndim && n < size; d++)
		n += (size_t)snprintf(buf + n, size - n, "%s%lld", d ? "," : "",
				      (long long)x->shape[d]);
	if (n < size)
		n += (size_t)snprintf(buf + n, size - n, "]");
	return n < size ? n : size;
}

static void describe_op(char *buf, size_t size, const struct trace *t,
			const struct trace_event *e, const char *focus)
{
	const struct trace_op *op = &e->op;

	if (e->kind == TRACE_AGGREGATE) {
		set(buf, size, "%s in step %lld, recorded as per-step "
		    "aggregates, at %s:%u", focus,
		    (long long)e->aggregate.step, t->path, e->line);
		return;
	}
	char label[160];
	size_t n = (size_t)snprintf(
		buf, size, "%s (op %llu, %s", trace_op_label(op, label, sizeof label),
		(unsigned long long)op->op_id, op->phase);

	if (op->autocast->scope && n < size)
		n += (size_t)snprintf(buf + n, size - n, ", scope \"%s\"",
				      op->autocast->scope);
	if (n < size)
		n += (size_t)snprintf(buf + n, size - n, ", autocast %s",
				      op->autocast->enabled ? "on" : "off");
	if (op->autocast->enabled && n < size)
		n += (size_t)snprintf(buf + n, size - n, " %s %s",
				      op->autocast->device, op->autocast->dtype);
	if (n < size)
		n += (size_t)snprintf(buf + n, size - n, ") at %s:%u", t->path,
				      e->line);
	if (focus && n < size)
		set(buf + n, size - n, "; %s", focus);
}

static const char *values_text(const struct op_check *c, char *buf,
			       size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < c->nvalues && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s", i ? "|" : "",
				      c->values[i]);
	return buf;
}

static bool one_of(const struct op_check *c, const char *value)
{
	for (int i = 0; value && i < c->nvalues; i++)
		if (!strcmp(c->values[i], value))
			return true;
	return false;
}

/* The phases an op found only outside forward is counted in. */
static const char *const other_phases[] = { "backward", "optimizer", "other" };
#define OTHER_PHASES 3

static size_t other_phase_of(const char *phase)
{
	size_t k = 0;

	while (k < OTHER_PHASES - 1 && (!phase || strcmp(phase, other_phases[k])))
		k++;
	return k;
}

/* "no forward op matched 'lerp_'; 640 optimizer ones did (...)" */
static void other_phase_text(struct outcome *o, const char *op,
			     const size_t other[OTHER_PHASES])
{
	char counts[160] = "", filters[96] = "";

	for (size_t k = 0, n = 0; k < OTHER_PHASES; k++) {
		if (!other[k])
			continue;
		size_t used = strlen(counts), fused = strlen(filters);
		snprintf(counts + used, sizeof counts - used, "%s%zu %s",
			 n ? " and " : "", other[k], other_phases[k]);
		snprintf(filters + fused, sizeof filters - fused, "%s`in %s`",
			 n ? ", " : "", other_phases[k]);
		n++;
	}
	set(o->actual, sizeof o->actual,
	    "no forward op matched '%s'; %s ones did (op rules look at forward "
	    "ops: add %s or `in any`)", op, counts, filters);
}

/* One check of an op rule on one op; when it does not hold, what the op
 * has instead in `detail`. */
static bool op_check_holds(const struct op_check *c, const struct trace_op *op,
			   char *detail, size_t size)
{
	if (c->kind == CHECK_OUTPUT) {
		if (one_of(c, analysis_output_dtype(op)))
			return true;
		if (op->noutputs) {
			int n = snprintf(detail, size, "output ");
			describe_tensor(detail + n, size - (size_t)n,
					&op->outputs[0]);
		} else {
			snprintf(detail, size, "no output (%s)",
				 op->error ? op->error : "failed");
		}
		return false;
	}
	if (c->kind == CHECK_INPUTS) {
		for (int in = 0; in < op->ninputs; in++) {
			if (one_of(c, op->inputs[in].info->dtype))
				continue;
			int n = snprintf(detail, size, "input %d: ", in);
			describe_tensor(detail + n, size - (size_t)n,
					&op->inputs[in]);
			return false;
		}
		return true;
	}
	if (c->kind == CHECK_POLICY) {
		snprintf(detail, size, "policy %s",
			 op->policy ? op->policy : "unknown");
		return one_of(c, op->policy);
	}
	return true; /* CHECK_COUNT: judged on the count, after */
}

/* The ops an op rule selects, and how each of its checks fared. */
struct op_tally {
	size_t matched;
	size_t failed[RULE_MAX_CHECKS]; /* ops that fail check k */
	size_t first[RULE_MAX_CHECKS];  /* the first one's event */
	char focus[RULE_MAX_CHECKS][400]; /* ... and what it has instead */
	/* same name, left out by the default phase: backward, optimizer */
	size_t other_phase[OTHER_PHASES];
	/* ops of steps recorded as aggregates the rule cannot judge */
	size_t left_out;
};

static void tally_ops(const struct trace *t, const struct rule *r,
		      struct op_tally *tally)
{
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_OP || e->op.incomplete ||
		    !check_name_matches(r->op, e->op.op, e->op.overload))
			continue;
		if (!op_selected(&r->filter, &e->op, "forward")) {
			if (!r->filter.phase &&
			    op_selected(&r->filter, &e->op, "any"))
				tally->other_phase[other_phase_of(e->op.phase)]++;
			continue;
		}
		tally->matched++;
		for (int k = 0; k < r->nchecks; k++) {
			char detail[400] = "";
			if (op_check_holds(&r->checks[k], &e->op, detail,
					   sizeof detail) ||
			    tally->failed[k]++)
				continue;
			tally->first[k] = i;
			snprintf(tally->focus[k], sizeof tally->focus[k], "%s",
				 detail);
		}
	}
}

/* A row of a step recorded as aggregates as an op (no inputs, no
 * region, no module, autocast unknown), for the filters and checks that
 * need none of them (aggregates_lack): into `op` and its output `out`
 * (of kind `out_info`). */
static void aggregate_as_op(const struct trace_aggregate_op *row,
			    struct trace_op *op, struct trace_tensor *out,
			    struct trace_tensor_info *out_info)
{
	static const struct trace_autocast unknown = { 0 };

	*out_info = (struct trace_tensor_info){ .dtype = row->dtype };
	*out = (struct trace_tensor){ .info = out_info };
	*op = (struct trace_op){
		.op = row->op, .overload = row->overload, .phase = row->phase,
		.policy = row->policy, .device = row->device,
		.autocast = &unknown,
		.noutputs = row->dtype ? 1 : 0, .outputs = out,
		.error = row->failed ? "failed" : NULL,
	};
}

/* The rows of steps recorded as aggregates, each `count` ops of one
 * name, phase, policy, output dtype and device; rules that ask what the
 * rows do not say (aggregates_lack) leave them out, counted apart. */
static void tally_aggregate_ops(const struct analysis *a,
				const struct rule *r, struct op_tally *tally)
{
	const struct trace *t = a->trace;
	struct trace_op op;
	struct trace_tensor out;
	struct trace_tensor_info out_info;
	/* what a row says of the rule's filters */
	struct rule_filter known = r->filter;
	bool lacking = aggregates_lack(a, r) != NULL;

	known.scope = known.module = NULL;
	known.autocast = -1;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		for (int j = 0; e->kind == TRACE_AGGREGATE &&
				j < e->aggregate.nops; j++) {
			const struct trace_aggregate_op *row = &e->aggregate.ops[j];
			if (!check_name_matches(r->op, row->op, row->overload))
				continue;
			aggregate_as_op(row, &op, &out, &out_info);
			if (lacking) {
				if (op_selected(&known, &op, "forward"))
					tally->left_out += row->count;
				continue;
			}
			if (!op_selected(&r->filter, &op, "forward")) {
				if (!r->filter.phase &&
				    op_selected(&r->filter, &op, "any"))
					tally->other_phase[other_phase_of(
						op.phase)] += row->count;
				continue;
			}
			tally->matched += row->count;
			for (int k = 0; k < r->nchecks; k++) {
				const struct op_check *c = &r->checks[k];
				char detail[400] = "";
				if (c->kind == CHECK_COUNT ||
				    op_check_holds(c, &op, detail, sizeof detail))
					continue;
				if (!tally->failed[k]) {
					tally->first[k] = i;
					snprintf(tally->focus[k],
						 sizeof tally->focus[k],
						 "%zu %s%s%s ops: %s",
						 (size_t)row->count, row->op,
						 row->overload[0] ? "." : "",
						 row->overload,
						 c->kind == CHECK_OUTPUT
							 ? (row->dtype ? row->dtype
								       : "no output")
							 : detail);
				}
				tally->failed[k] += row->count;
			}
		}
	}
}

/* Appends to buf (*n bytes used), "; " between parts, cut at its end. */
static void append(char *buf, size_t size, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *n, const char *fmt, ...)
{
	va_list ap;

	if (*n)
		*n += (size_t)snprintf(buf + *n, size - *n, "; ");
	if (*n < size) {
		va_start(ap, fmt);
		*n += (size_t)vsnprintf(buf + *n, size - *n, fmt, ap);
		va_end(ap);
	}
	if (*n >= size)
		*n = size - 1;
}

/* What the rule expected, what the tally shows and its first offending
 * op, check by check. */
static void op_verdict(const struct trace *t, const struct rule *r,
		       const struct op_tally *tally, struct outcome *o)
{
	size_t n_exp = 0, n_act = 0;
	char values[128];

	o->pass = true;
	for (int k = 0; k < r->nchecks; k++) {
		const struct op_check *c = &r->checks[k];
		const char *what = c->kind == CHECK_OUTPUT ? "outputs"
				   : c->kind == CHECK_INPUTS ? "has inputs"
							     : "has policy";
		if (c->kind == CHECK_COUNT) {
			append(o->expected, sizeof o->expected, &n_exp,
			       "matching ops %s %g", rule_cmp_text(c->cmp),
			       c->number);
			if (rule_compare((double)tally->matched, c->cmp,
					 c->number))
				continue;
			o->pass = false;
			append(o->actual, sizeof o->actual, &n_act,
			       "%zu matching ops", tally->matched);
			continue;
		}
		append(o->expected, sizeof o->expected, &n_exp,
		       "every matching op %s %s", what,
		       values_text(c, values, sizeof values));
		if (!tally->matched) {
			o->pass = false;
			continue;
		}
		if (!tally->failed[k])
			continue;
		o->pass = false;
		append(o->actual, sizeof o->actual, &n_act,
		       "%zu of %zu matching ops do not", tally->failed[k],
		       tally->matched);
		if (!o->first[0])
			describe_op(o->first, sizeof o->first, t,
				    &t->events[tally->first[k]], tally->focus[k]);
	}
}

static void eval_op(const struct analysis *a, const struct rule *r,
		    struct outcome *o)
{
	const struct trace *t = a->trace;
	struct op_tally tally = { 0 };

	tally_ops(t, r, &tally);
	tally_aggregate_ops(a, r, &tally);
	op_verdict(t, r, &tally, o);
	if (!tally.matched && !o->pass && !o->actual[0] &&
	    tally.other_phase[0] + tally.other_phase[1] + tally.other_phase[2])
		other_phase_text(o, r->op, tally.other_phase);
	else if (!tally.matched && !o->pass && !o->actual[0])
		set(o->actual, sizeof o->actual,
		    "no op matched '%s'%s (the trace has %zu ops)", r->op,
		    r->filter.scope || r->filter.module || r->filter.phase ||
				    r->filter.device || r->filter.autocast >= 0
			    ? " with these filters"
			    : "",
		    t->counts[TRACE_OP]);
	if (o->pass)
		set(o->actual, sizeof o->actual, "%zu matching op%s",
		    tally.matched, tally.matched == 1 ? "" : "s");
	append_left_out(o->actual, sizeof o->actual, tally.left_out, "ops", a,
			r);
}

static void describe_cast(char *buf, size_t size, const struct analysis *a,
			  const struct trace_event *e)
{
	const struct trace_cast *c = &e->cast;
	const struct trace_event *op;
	char label[160];

	if (e->kind == TRACE_AGGREGATE) {
		snprintf(buf, size, "the casts of step %lld, recorded as "
			 "per-step aggregates, at %s:%u",
			 (long long)e->aggregate.step, a->trace->path, e->line);
		return;
	}
	op = analysis_op(a, e->pid, c->op_id);

	const char *name = c->source->name;
	snprintf(buf, size, "cast %s->%s of tensor %llu%s%s%s for %s (op %llu), "
		 "cache %s, at %s:%u",
		 c->from, c->to, (unsigned long long)c->tensor,
		 name ? " '" : "", name ? name : "", name ? "'" : "",
		 op ? trace_op_label(&op->op, label, sizeof label)
		    : c->op ? c->op : "?",
		 (unsigned long long)c->op_id, c->cache, a->trace->path, e->line);
}

static void casts_label(const struct rule *r, char *buf, size_t size)
{
	if (r->from && r->to)
		snprintf(buf, size, "%s->%s casts", r->from, r->to);
	else if (r->from)
		snprintf(buf, size, "casts from %s", r->from);
	else if (r->to)
		snprintf(buf, size, "casts to %s", r->to);
	else
		snprintf(buf, size, "casts");
	if (r->filter.origin && strcmp(r->filter.origin, "autocast")) {
		size_t used = strlen(buf);
		snprintf(buf + used, size - used, " (origin %s)",
			 r->filter.origin);
	}
}

/* "marked by optimizer step", or what stands for steps nothing marks. */
static const char *marked_by(const struct analysis *a, char *buf, size_t size)
{
	if (strcmp(a->step_marker, "none") != 0)
		snprintf(buf, size, "marked by %s", a->step_marker);
	else
		snprintf(buf, size, "not marked: %s",
			 a->steps.marked && a->nsteps > 0
				 ? "the training outside the evaluation windows"
				 : "the whole trace");
	return buf;
}

/* Whether step `step` is one a process or its trace ended in (steps.h:
 * cut short). */
static bool step_cut_short(const struct analysis *a, int step)
{
	for (int k = 0; k < a->steps.ncut_short; k++)
		if (a->steps.cut_short[k] == step)
			return true;
	return false;
}

enum partial_verdict { PARTIAL_HOLDS, PARTIAL_FAILS, PARTIAL_UNKNOWN };

/* What the `count` a step cut short had when its record ended says of
 * the whole step, whose count could only have been greater: past an
 * upper bound (`<=`, `<`, past `==`) it fails, up to a lower bound (`>=`,
 * `>`) or past `!=` it holds; any other count says nothing. */
static enum partial_verdict cut_short_verdict(double count,
					      const struct rule *r)
{
	bool holds = rule_compare(count, r->cmp, r->number);

	if (holds && (r->cmp == CMP_GE || r->cmp == CMP_GT ||
		      (r->cmp == CMP_NE && count > r->number)))
		return PARTIAL_HOLDS;
	if (!holds && (r->cmp == CMP_LE || r->cmp == CMP_LT ||
		       (r->cmp == CMP_EQ && count > r->number)))
		return PARTIAL_FAILS;
	return PARTIAL_UNKNOWN;
}

/* What a `per step` rule judges: a step of the trace (group -1), or,
 * where several ranks train, a step of one rank's processes (ranks.h),
 * each in the steps it trains in. */
struct step_unit {
	int step, group;
	size_t count;
	size_t first;  /* the event of its first counted cast */
	bool cut;      /* cut short: its process or its trace ended in it */
};

/* "step 3", "rank 1's step 3", "process 77's step 3" or "step 3 of
 * the processes without a rank", into buf. */
static const char *unit_name(const struct analysis *a,
			     const struct step_unit *u, char *buf, size_t size)
{
	char group[64];

	if (u->group < 0)
		snprintf(buf, size, "step %d", u->step);
	else if (u->group == 0)
		snprintf(buf, size, "step %d of %s", u->step,
			 trace_ranks_name(&a->ranks, 0, group, sizeof group));
	else
		snprintf(buf, size, "%s's step %d", trace_ranks_name(&a->ranks,
			 u->group, group, sizeof group), u->step);
	return buf;
}

/* "; step 25 cut short (its process or its trace ended in it): 3 so
 * far, not judged" */
static void append_unjudged(char *buf, size_t size, int unjudged,
			    const char *first, size_t count)
{
	size_t used = strlen(buf);

	if (unjudged == 1)
		snprintf(buf + used, size - used, "; %s cut short (its "
			 "process or its trace ended in it): %zu so far, not "
			 "judged", first, count);
	else if (unjudged > 1)
		snprintf(buf + used, size - used, "; %d steps cut short (a "
			 "process or its trace ended in each, the first %s), "
			 "not judged", unjudged, first);
}

/* "; 10 steps recorded as aggregates (the first step 20), not judged:
 * their rows do not say the module" */
static void append_silent_steps(char *buf, size_t size, int silent,
				const char *first, const struct analysis *a,
				const struct rule *r)
{
	size_t used = strlen(buf);

	if (silent)
		snprintf(buf + used, size - used, "; %d step%s recorded as "
			 "aggregates (%s%s), not judged: their rows do "
			 "not say %s", silent, silent == 1 ? "" : "s",
			 silent == 1 ? "" : "the first ", first,
			 aggregates_lack(a, r));
}

/* " of 2 ranks" where the units are ranks' steps, " of 2 processes"
 * where they are processes without a rank (Hogwild's workers); both: " of
 * 2 ranks and the processes without a rank" */
static const char *of_ranks(const struct analysis *a,
			    const struct step_unit *units, size_t n,
			    char *buf, size_t size)
{
	int ranks = 0, unranked = 0, last = -1;

	for (size_t k = 0; k < n; k++) {
		int g = units[k].group;
		if (g < 0 || g == last)
			continue;
		last = g;
		if (a->ranks.rank_of_group[g] >= 0)
			ranks++;
		else
			unranked++;
	}
	if (!ranks && !unranked)
		buf[0] = '\0';
	else if (!ranks)
		snprintf(buf, size, " of %d process%s", unranked,
			 unranked == 1 ? "" : "es");
	else
		snprintf(buf, size, " of %d rank%s%s", ranks,
			 ranks == 1 ? "" : "s",
			 unranked ? " and the processes without a rank" : "");
	return buf;
}

/* A `per step` casts rule's verdict over its units: every one must hold
 * it; one cut short (a killed process's last step, or the last of a
 * trace that stops early) is judged only where its partial count already
 * decides (RULES.md).  Returns the first failing unit, or NULL. */
static const struct step_unit *per_step_verdict(const struct analysis *a,
						const struct rule *r,
						const char *label,
						const struct step_unit *units,
						size_t n, struct outcome *o)
{
	char marker[96], ranks[80], name[96];
	int judged = 0, bad = 0, unjudged = 0;
	/* steps recorded as aggregates, whose rows cannot answer the rule */
	int silent = 0;
	const struct step_unit *first_bad = NULL, *first_unjudged = NULL,
			       *first_silent = NULL;
	bool lacking = aggregates_lack(a, r) != NULL;
	size_t most = 0;

	for (const struct step_unit *u = units; u < units + n; u++) {
		if (lacking && a->steps.aggregated[u->step]) {
			if (!silent++)
				first_silent = u;
			continue;
		}
		enum partial_verdict v =
			u->cut ? cut_short_verdict((double)u->count, r)
			       : rule_compare((double)u->count, r->cmp, r->number)
					 ? PARTIAL_HOLDS : PARTIAL_FAILS;
		if (v == PARTIAL_FAILS && !bad++)
			first_bad = u;
		if (v != PARTIAL_UNKNOWN)
			judged++;
		else if (!unjudged++)
			first_unjudged = u;
		if (!u->cut && u->count > most)
			most = u->count;
	}
	/* every step left out, recorded as aggregates that cannot answer
	 * the rule or cut short with a count that decides nothing: the
	 * rule was answered in no step, which is no pass (a trace of no op
	 * fails alike: empty_trace_failure); a trace with no training step
	 * left nothing out, and holds (FORMAT.md §8) */
	bool none_judged = (silent || unjudged) && judged == 0;
	o->pass = bad == 0 && !none_judged;
	of_ranks(a, units, n, ranks, sizeof ranks);
	set(o->expected, sizeof o->expected, "%s %s %g in every step", label,
	    rule_cmp_text(r->cmp), r->number);
	if (none_judged)
		set(o->actual, sizeof o->actual, "no step judged");
	else if (o->pass)
		set(o->actual, sizeof o->actual, "at most %zu per step over %d "
		    "step%s%s, %s", most, judged, judged == 1 ? "" : "s",
		    ranks, marked_by(a, marker, sizeof marker));
	else
		set(o->actual, sizeof o->actual, "%s%s has %zu; %d of %d "
		    "steps%s fail (steps %s)",
		    unit_name(a, first_bad, name, sizeof name),
		    first_bad->cut ? " (cut short: its process or its trace "
				     "ended in it)" : "",
		    first_bad->count, bad, judged, ranks,
		    marked_by(a, marker, sizeof marker));
	if (first_unjudged)
		append_unjudged(o->actual, sizeof o->actual, unjudged,
				unit_name(a, first_unjudged, name, sizeof name),
				first_unjudged->count);
	if (first_silent)
		append_silent_steps(o->actual, sizeof o->actual, silent,
				    unit_name(a, first_silent, name,
					      sizeof name), a, r);
	return first_bad;
}

/* Per step and rank group, a `per step` rule's count and whether the
 * group trained in the step (ranks.h). */
struct step_counts {
	int nsteps, ngroups;
	size_t *count, *first;     /* [group * nsteps + step] */
	bool *trains;
};

/* Where event i counts: its rank group's row, its step's column. */
static size_t step_count_index(const struct analysis *a,
			       const struct step_counts *c, size_t i)
{
	int step = a->step_of[i] < c->nsteps ? a->step_of[i] : c->nsteps - 1;
	int group = trace_ranks_group(&a->ranks, a->trace->events[i].pid);

	return (size_t)group * (size_t)c->nsteps + (size_t)step;
}

static void step_counts_free(struct step_counts *c)
{
	free(c->count);
	free(c->first);
	free(c->trains);
}

static bool step_counts_init(struct step_counts *c, const struct analysis *a)
{
	size_t n;

	c->nsteps = a->nsteps > 0 ? a->nsteps : 1;
	c->ngroups = a->ranks.ngroups;
	n = (size_t)c->nsteps * (size_t)c->ngroups;
	c->count = calloc(n, sizeof *c->count);
	c->first = calloc(n, sizeof *c->first);
	c->trains = calloc(n, sizeof *c->trains);
	if (c->count && c->first && c->trains)
		return true;
	step_counts_free(c);
	return false;
}

/* Whether a process of rank group `g` has a record that ends early
 * (early_ends.h): a whole trace that does ends every group's. */
static bool group_ends_early(const struct analysis *a,
			     const struct early_ends *early, int g)
{
	const struct marks *lists[] = { &early->deaths, &early->stopped };

	if (early->every)
		return true;
	for (size_t l = 0; l < 2; l++)
		for (size_t k = 0; k < lists[l]->count; k++) {
			int64_t pid = lists[l]->items[k].pid;
			if (trace_ranks_group(&a->ranks, pid) == g &&
			    early_ends_has(early, pid))
				return true;
		}
	return false;
}

/* The units a per-step rule judges: the trace's steps, each whole
 * (every process's), unless more than one rank trains: then each rank's
 * steps, those it trained in, and a step of it cut short only when it is
 * its last and its own record ended there (a rank that ran on past a
 * step another's process died in, or ran its last step whole while
 * another's record ended in it, ran that step whole).  NULL when out of
 * memory. */
static struct step_unit *step_units(const struct analysis *a,
				    const struct step_counts *c, size_t *n)
{
	int training = 0;
	struct early_ends early = { 0 };
	struct step_unit *units = calloc((size_t)c->nsteps *
					 (size_t)c->ngroups, sizeof *units);

	*n = 0;
	for (int g = 0; g < c->ngroups; g++)
		for (int s = 0; s < c->nsteps; s++)
			if (c->trains[g * c->nsteps + s]) {
				training++;
				break;
			}
	if (units && training > 1 && !early_ends_find(a->trace, &early)) {
		free(units);
		units = NULL;
	}
	for (int g = 0; units && training > 1 && g < c->ngroups; g++) {
		int last = -1;
		for (int s = 0; s < c->nsteps; s++) {
			size_t k = (size_t)g * (size_t)c->nsteps + (size_t)s;
			if (!c->trains[k])
				continue;
			last = (int)*n;
			units[(*n)++] = (struct step_unit){ s, g, c->count[k],
							    c->first[k] };
		}
		if (last >= 0)
			units[last].cut = step_cut_short(a, units[last].step) &&
					  group_ends_early(a, &early, g);
	}
	early_ends_free(&early);
	for (int s = 0; units && training <= 1 && s < c->nsteps; s++) {
		struct step_unit u = { s, -1, 0, SIZE_MAX,
				       step_cut_short(a, s) };
		for (int g = 0; g < c->ngroups; g++) {
			size_t k = (size_t)g * (size_t)c->nsteps + (size_t)s;
			if (c->count[k] && c->first[k] < u.first)
				u.first = c->first[k];
			u.count += c->count[k];
		}
		units[(*n)++] = u;
	}
	return units;
}

static void per_step_casts(const struct analysis *a, const struct rule *r,
			   const char *label, const struct step_counts *c,
			   struct outcome *o)
{
	size_t n;
	struct step_unit *units = step_units(a, c, &n);
	const struct step_unit *first_bad =
		units ? per_step_verdict(a, r, label, units, n, o) : NULL;

	if (!units) {
		o->pass = false;
		set(o->actual, sizeof o->actual, "out of memory");
	} else if (first_bad && first_bad->count) {
		describe_cast(o->first, sizeof o->first, a,
			      &a->trace->events[first_bad->first]);
	}
	free(units);
}

static void eval_casts(const struct analysis *a, const struct rule *r,
		       struct outcome *o)
{
	const struct trace *t = a->trace;
	struct step_counts c;
	size_t total = 0, first = SIZE_MAX, left_out = 0;
	bool lacking = aggregates_lack(a, r) != NULL;
	char label[64];

	if (!step_counts_init(&c, a)) {
		o->pass = false;
		set(o->actual, sizeof o->actual, "out of memory");
		return;
	}
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		bool cast = e->kind == TRACE_CAST || e->kind == TRACE_OTHER_CAST;
		size_t n = e->kind == TRACE_AGGREGATE
				   ? aggregate_casts_selected(lacking, r,
							      &e->aggregate)
				   : cast && cast_selected(a, r, e);
		/* a per-step rule's count of the event's step and rank; a
		 * whole-trace rule reads only `total` */
		size_t k = r->per_step ? step_count_index(a, &c, i) : 0;
		if (r->per_step && trace_steps_trains(e, a->evaluating[i]))
			c.trains[k] = true;
		if (e->kind == TRACE_AGGREGATE && lacking)
			left_out += aggregate_casts_matching(r, &e->aggregate);
		if (!n)
			continue;
		/* a step is its training: not the evaluation windows in it */
		if (!a->evaluating[i]) {
			if (!c.count[k])
				c.first[k] = i;
			c.count[k] += n;
		}
		if (!total)
			first = i;
		total += n;
	}
	casts_label(r, label, sizeof label);
	if (!r->per_step) {
		o->pass = rule_compare((double)total, r->cmp, r->number);
		set(o->expected, sizeof o->expected, "%s %s %g", label,
		    rule_cmp_text(r->cmp), r->number);
		set(o->actual, sizeof o->actual, "%zu %s", total, label);
		append_left_out(o->actual, sizeof o->actual, left_out, "casts",
				a, r);
		if (!o->pass && first != SIZE_MAX)
			describe_cast(o->first, sizeof o->first, a,
				      &t->events[first]);
	} else if (!a->nsteps) {
		/* a program that only evaluated: nothing a per-step rule
		 * counts (FORMAT.md §8) */
		o->pass = true;
		set(o->expected, sizeof o->expected, "%s %s %g in every step",
		    label, rule_cmp_text(r->cmp), r->number);
		if (a->steps.nevaluations)
			set(o->actual, sizeof o->actual, "no training step; %d "
			    "evaluation window%s, not counted",
			    a->steps.nevaluations,
			    a->steps.nevaluations == 1 ? "" : "s");
		else
			set(o->actual, sizeof o->actual, "no step: no op ran");
	} else {
		per_step_casts(a, r, label, &c, o);
	}
	step_counts_free(&c);
}

static void eval_metric(const struct analysis *a, const struct rule *r,
			struct outcome *o)
{
	double value = NAN;
	const char *m = r->metric;

	if (r->kind == RULE_CACHE) {
		if (!strcmp(m, "hit-rate")) {
			uint64_t n = a->cache_hits + a->cache_misses;
			value = n ? (double)a->cache_hits / (double)n : NAN;
		} else if (!strcmp(m, "hits")) {
			value = (double)a->cache_hits;
		} else if (!strcmp(m, "misses")) {
			value = (double)a->cache_misses;
		} else if (!strcmp(m, "uncacheable")) {
			value = (double)a->cache_uncacheable;
		} else if (!strcmp(m, "disabled")) {
			value = (double)a->cache_disabled;
		} else if (!strcmp(m, "clears")) {
			value = (double)a->cache_clears;
		}
	} else {
		/* a job's ranks step (and skip) together: a rank's count */
		if (!strcmp(m, "skipped-steps"))
			value = (double)a->rank_skipped_steps;
		else if (!strcmp(m, "steps"))
			value = (double)a->rank_scaler_steps;
		else if (!strcmp(m, "scale-min"))
			value = a->scale_min;
		else if (!strcmp(m, "scale-max"))
			value = a->scale_max;
		else if (!strcmp(m, "scale-final"))
			value = a->scale_final;
	}
	set(o->expected, sizeof o->expected, "%s %s %s %g",
	    r->kind == RULE_CACHE ? "cache" : "scaler", m, rule_cmp_text(r->cmp),
	    r->number);
	if (isnan(value)) {
		o->pass = false;
		set(o->actual, sizeof o->actual, "%s", r->kind == RULE_CACHE
		    ? "no cache hits or misses in the trace (nothing to "
		      "measure)"
		    : "no GradScaler scale in the trace");
		return;
	}
	o->pass = rule_compare(value, r->cmp, r->number);
	set(o->actual, sizeof o->actual, "%s %g", m, value);
	if (!o->pass && r->kind == RULE_SCALER && !strcmp(m, "skipped-steps") &&
	    a->first_skipped_step >= 0)
		set(o->first, sizeof o->first, "first skipped step: step %d",
		    a->first_skipped_step);
}

/* "KIND in OP (op N, ...) at FILE:LINE; tensor T: MESSAGE", naming the op
 * and tensor at fault when the finding has them. */
static void describe_finding(char *buf, size_t size, const struct analysis *a,
			     const struct trace_finding *f)
{
	const struct trace_event *at = &a->trace->events[f->event];
	const struct trace_event *op =
		f->op_id ? analysis_op(a, at->pid, f->op_id) : NULL;
	char tensor[48] = "";
	size_t n;

	if (f->tensor)
		snprintf(tensor, sizeof tensor, "tensor %llu: ",
			 (unsigned long long)f->tensor);
	if (op) {
		n = (size_t)snprintf(buf, size, "%s in ", f->kind);
		if (n < size)
			describe_op(buf + n, size - n, a->trace, op, NULL);
	} else if (f->op_id) {
		set(buf, size, "%s in op %llu at %s:%u", f->kind,
		    (unsigned long long)f->op_id, a->trace->path, at->line);
	} else {
		set(buf, size, "%s at %s:%u", f->kind, a->trace->path, at->line);
	}
	n = strlen(buf);
	if (n < size)
		set(buf + n, size - n, "; %s%s", tensor, f->message);
}

static void eval_finding(const struct analysis *a, const struct rule *r,
			 struct outcome *o)
{
	size_t count = 0;
	const struct trace_finding *first = NULL;

	for (size_t i = 0; i < a->nfindings; i++) {
		const struct trace_finding *f = &a->findings[i];
		if (r->finding && strcmp(f->kind, r->finding))
			continue;
		count += f->count;
		if (!first)
			first = f;
	}
	o->pass = rule_compare((double)count, r->cmp, r->number);
	set(o->expected, sizeof o->expected, "%s findings %s %g",
	    r->finding ? r->finding : "all", rule_cmp_text(r->cmp), r->number);
	set(o->actual, sizeof o->actual, "%zu", count);
	if (!o->pass && first)
		describe_finding(o->first, sizeof o->first, a, first);
}

/* The ops the program ran: the events, and those the steps recorded as
 * aggregates stand for (FORMAT.md §3.12: rules count a row as the events
 * it stands for). */
static uint64_t ops_recorded(const struct trace *t)
{
	uint64_t ops = t->counts[TRACE_OP];

	for (size_t i = 0; t->counts[TRACE_AGGREGATE] && i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		for (int j = 0; e->kind == TRACE_AGGREGATE &&
				j < e->aggregate.nops; j++)
			ops += e->aggregate.ops[j].count;
	}
	return ops;
}

static void eval_ops(const struct analysis *a, const struct rule *r,
		     struct outcome *o)
{
	double ops = (double)ops_recorded(a->trace);

	set(o->expected, sizeof o->expected, "ops %s %s %g", r->metric,
	    rule_cmp_text(r->cmp), r->number);
	o->pass = rule_compare(ops, r->cmp, r->number);
	set(o->actual, sizeof o->actual, "%s %g", r->metric, ops);
}

/* A trace without a single op passes most rules vacuously (no finding,
 * casts <= N, skipped steps <= N): it is what tracing the wrong program
 * gives, so it fails unless an `ops total` rule says what to expect.
 * The program's name comes from the header, when there is one. */
static bool empty_trace_failure(const struct trace *t, const struct rules *rules,
				char *message, size_t size)
{
	if (ops_recorded(t) > 0)
		return false;
	for (size_t i = 0; i < rules->count; i++)
		if (rules->items[i].kind == RULE_OPS)
			return false;
	run_no_ops_message(t->header.ncommand ? t->header.command[0] : NULL,
			   t->header.framework, message, size);
	return true;
}

/* XML is UTF-8 text: a path given as an argument may not be, and each
 * byte that is not is written '?'. */
static void xml_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		if ((unsigned char)*s >= 0x80) {
			int n = utf8_sequence_length((const unsigned char *)s,
						     strnlen(s, 4));
			if (n <= 0) {
				fputc('?', f);
			} else {
				fwrite(s, 1, (size_t)n, f);
				s += n - 1;
			}
			continue;
		}
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&apos;", f); break;
		default:
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t')
				fputc('?', f);
			else
				fputc(*s, f);
		}
	}
}

static double seconds_since(const struct timespec *start)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - start->tv_sec) +
	       (double)(now.tv_nsec - start->tv_nsec) / 1e9;
}

/* The testsuite is named after the trace, so that the checks of one rules
 * file against the cpu and the cuda trace are two suites in CI; hostname,
 * timestamp and time say where, when and how long, as JUnit's schema
 * has them. */
static FILE *junit_open(struct output_file *out, const char *path,
			const char *trace, size_t tests, size_t failures,
			size_t errors, const struct timespec *start)
{
	char stamp[32], host[256];
	time_t now = time(NULL);
	struct tm tm;

	if (output_file_open(out, path) != 0) {
		fprintf(stderr, "amptrace check: cannot write %s: %s\n", path,
			output_strerror(errno));
		return NULL;
	}
	FILE *f = out->f;
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
	if (gethostname(host, sizeof host) != 0)
		strcpy(host, "localhost");
	host[sizeof host - 1] = '\0';
	double seconds = seconds_since(start);
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		   "<testsuites name=\"amptrace check\" tests=\"%zu\" "
		   "failures=\"%zu\" errors=\"%zu\" time=\"%.6f\">\n"
		   "  <testsuite name=\"",
		tests, failures, errors, seconds);
	xml_escaped(f, trace);
	fputs("\" hostname=\"", f);
	xml_escaped(f, host);
	fprintf(f, "\" tests=\"%zu\" failures=\"%zu\" errors=\"%zu\" "
		   "skipped=\"0\" timestamp=\"%s\" time=\"%.6f\">\n",
		tests, failures, errors, stamp, seconds);
	return f;
}

static int junit_close(struct output_file *out, const char *path)
{
	fputs("  </testsuite>\n</testsuites>\n", out->f);
	if (output_file_close(out) != 0) {
		fprintf(stderr, "amptrace check: error writing %s: %s\n", path,
			output_strerror(errno));
		return -1;
	}
	return 0;
}

/* A testcase's classname is the trace, as its suite's name: CI
 * reporters that list testcases of several suites together keep the cpu
 * and the cuda check of one rule apart. */
static void junit_testcase(FILE *f, const char *trace)
{
	fputs("    <testcase classname=\"", f);
	xml_escaped(f, trace);
	fputs("\" name=\"", f);
}

/* Bad input still gives CI a report to show. */
static void junit_error(const char *path, const char *trace,
			const char *rules, const char *message,
			const struct timespec *start)
{
	struct output_file out;
	FILE *f = junit_open(&out, path, trace, 1, 0, 1, start);

	if (!f)
		return;
	junit_testcase(f, trace);
	fputs("load ", f);
	xml_escaped(f, trace);
	fputs(" and ", f);
	xml_escaped(f, rules);
	fputs("\" time=\"0\">\n      <error message=\"", f);
	xml_escaped(f, message);
	fputs("\" type=\"bad input\"/>\n    </testcase>\n", f);
	junit_close(&out, path);
}

static void evaluate(const struct analysis *a, const struct rule *r,
		     struct outcome *o)
{
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	switch (r->kind) {
	case RULE_OP:
		eval_op(a, r, o);
		break;
	case RULE_CASTS:
		eval_casts(a, r, o);
		break;
	case RULE_CACHE:
	case RULE_SCALER:
		eval_metric(a, r, o);
		break;
	case RULE_FINDING:
		eval_finding(a, r, o);
		break;
	case RULE_OPS:
		eval_ops(a, r, o);
		break;
	default:
		break;
	}
	check_hints_add(a->trace, r, o->actual, sizeof o->actual);
	o->seconds = seconds_since(&start);
}

static void print_outcome(const struct rules *rules, const struct rule *r,
			  const struct outcome *o)
{
	if (o->pass) {
		printf("PASS %s:%zu  %s  (%s)\n", rules->path, r->line, r->text,
		       o->actual);
		return;
	}
	printf("FAIL %s:%zu  %s\n", rules->path, r->line, r->text);
	printf("     expected: %s\n", o->expected);
	printf("     actual:   %s\n", o->actual);
	if (o->first[0])
		printf("     first:    %s\n", o->first);
}

static void junit_rule_testcase(FILE *f, const char *trace,
				const struct rules *rules, const struct rule *r,
				const struct verdict *v)
{
	junit_testcase(f, trace);
	xml_escaped(f, rules->path);
	fprintf(f, ":%zu: ", r->line);
	xml_escaped(f, r->text);
	fputs("\" file=\"", f);
	xml_escaped(f, rules->path);
	fprintf(f, "\" line=\"%zu\" time=\"%.6f\"", r->line, v->seconds);
	if (v->pass) {
		fputs("/>\n", f);
		return;
	}
	const char *expected = v->failure ? v->failure : "\0\0";
	const char *actual = expected + strlen(expected) + 1;
	const char *first = actual + strlen(actual) + 1;
	fputs(">\n      <failure type=\"rule\" message=\"", f);
	fprintf(f, "expected ");
	xml_escaped(f, expected);
	fputs(", got ", f);
	xml_escaped(f, actual);
	fputs("\">", f);
	fputs("rule: ", f);
	xml_escaped(f, r->text);
	fputs("\nexpected: ", f);
	xml_escaped(f, expected);
	fputs("\nactual: ", f);
	xml_escaped(f, actual);
	if (first[0]) {
		fputs("\nfirst: ", f);
		xml_escaped(f, first);
	}
	fputs("</failure>\n    </testcase>\n", f);
}

static void junit_empty_testcase(FILE *f, const char *trace,
				 const char *message)
{
	junit_testcase(f, trace);
	xml_escaped(f, trace);
	fputs(": ops recorded\" time=\"0\">\n"
	      "      <failure type=\"empty-trace\" message=\"", f);
	xml_escaped(f, message);
	fputs("\"/>\n    </testcase>\n", f);
}

/* The results as JUnit XML: a testcase per rule (`failures` of them
 * failed) and one for an empty trace (`empty`, its failure, or NULL).
 * Returns 0, or 2 when the file cannot be written. */
static int write_junit(const char *path, const struct trace *trace,
		       const struct rules *rules, const struct verdict *verdicts,
		       size_t failures, const char *empty,
		       const struct timespec *start)
{
	struct output_file out;
	FILE *f = junit_open(&out, path, trace->path, rules->count + !!empty,
			     failures + !!empty, 0, start);

	if (!f)
		return 2;
	for (size_t i = 0; i < rules->count; i++)
		junit_rule_testcase(f, trace->path, rules, &rules->items[i],
				    &verdicts[i]);
	if (empty)
		junit_empty_testcase(f, trace->path, empty);
	return junit_close(&out, path) == 0 ? 0 : 2;
}

/* Everything after loading: each rule evaluated and printed (only what
 * the JUnit report needs kept of each: a rules file may hold many), the
 * verdict, the JUnit file written. */
/* The rules judged on `trace`, of rank `rank` alone (-1: the whole
 * trace). */
static int check_loaded(const struct trace *trace, struct analysis *a,
			const struct rules *rules, const char *junit,
			int rank, const struct timespec *start)
{
	struct verdict *verdicts = calloc(rules->count, sizeof *verdicts);
	size_t failures = 0;
	char note[512], empty[512];

	if (trace_end_note(trace, note, sizeof note))
		printf("note: %s: %s\n", trace->path, note);
	if (!verdicts) {
		fprintf(stderr, "amptrace check: out of memory\n");
		return 2;
	}
	for (size_t i = 0; i < rules->count; i++) {
		struct outcome o = { 0 };
		evaluate(a, &rules->items[i], &o);
		verdicts[i] = verdict_of(&o, junit != NULL);
		print_outcome(rules, &rules->items[i], &o);
		failures += !o.pass;
	}
	bool is_empty = empty_trace_failure(trace, rules, empty, sizeof empty);
	if (is_empty)
		printf("FAIL %s  %s\n", trace->path, empty);
	char only[64] = "";
	if (rank >= 0)
		snprintf(only, sizeof only, ", rank %d only", rank);
	printf("%s: %zu of %zu rule%s failed%s (%s%s)\n",
	       failures || is_empty ? "FAILED" : "OK", failures, rules->count,
	       rules->count == 1 ? "" : "s", is_empty ? "; no ops recorded" : "",
	       trace->path, only);
	int status = failures || is_empty ? 1 : 0;
	if (junit && write_junit(junit, trace, rules, verdicts, failures,
				 is_empty ? empty : NULL, start) != 0)
		status = 2;
	for (size_t i = 0; i < rules->count; i++)
		free(verdicts[i].failure);
	free(verdicts);
	return status;
}

enum { OPTION_JUNIT = 256, OPTION_RANK };

static const struct option check_options[] = {
	{ "junit", required_argument, NULL, OPTION_JUNIT },
	{ "rank", required_argument, NULL, OPTION_RANK },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct check_args {
	const char *paths[2]; /* the trace, the rules */
	const char *junit;
	int rank;             /* --rank's, -1: none */
};

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct check_args *args)
{
	struct command_line cl = { "amptrace check", "h", check_options,
				   argc, argv };
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case OPTION_JUNIT:
			if (!optarg[0])
				return command_line_error(&cl, "empty output "
							  "file name");
			args->junit = optarg;
			break;
		case OPTION_RANK: {
			int status = command_line_number(&cl, "--rank", optarg,
							 0, INT_MAX,
							 &args->rank);
			if (status >= 0)
				return status;
			break;
		}
		case 'h':
			fputs(check_usage, stdout);
			return 0;
		default:
			return COMMAND_LINE_BAD_USAGE;
		}
	}
	if (argc - optind < 2)
		return command_line_error(&cl, "need a trace and a rules file");
	if (argc - optind > 2)
		return command_line_error(&cl, "unexpected argument '%s'",
					  argv[optind + 2]);
	args->paths[0] = argv[optind];
	args->paths[1] = argv[optind + 1];
	/* --junit t.json would replace the trace (or the rules) it checks */
	if (args->junit &&
	    output_refuse_input("amptrace check", args->junit, args->paths, 2))
		return 2;
	return -1;
}

/* trace_read_file's advice is for a trace ("give the trace as a file":
 * a device, a pipe too long); for the rules it names the rules. */
static void name_rules_file(struct trace_error *err)
{
	static const char trace_advice[] = "give the trace as a file";
	char *advice = strstr(err->message, trace_advice);

	if (advice)
		snprintf(advice, sizeof err->message - (size_t)(advice -
			 err->message), "give the rules as a file");
}

/* The rules, then the trace; 0, or 2 when either cannot be read (said,
 * and in the JUnit file: CI shows bad input too). */
static int load_inputs(const struct check_args *args, struct rules *rules,
		       struct trace *trace, const struct timespec *start)
{
	struct trace_error err;
	char why[256];
	int ranks;
	size_t len;
	char *text = trace_read_file(args->paths[1], &len, &err);
	if (!text)
		name_rules_file(&err);
	int status = text && rules_parse(args->paths[1], text, len, rules,
					 &err) == 0 ? 0 : 2;

	free(text);
	if (status == 0 && trace_load_without_flows(args->paths[0], trace, &err) != 0) {
		rules_free(rules);
		status = 2;
	} else if (status == 0 && args->rank >= 0 &&
		   trace_keep_rank(trace, args->rank, &ranks, why,
				   sizeof why) != 0) {
		trace_error_set(&err, "%s: %s", args->paths[0], why);
		trace_free(trace);
		rules_free(rules);
		status = 2;
	}
	if (status == 0)
		return 0;
	fprintf(stderr, "amptrace check: %s\n", err.message);
	if (args->junit)
		junit_error(args->junit, args->paths[0], args->paths[1],
			    err.message, start);
	return 2;
}

/* `--junit -`: the XML is standard output, so the text report moves to
 * stderr rather than interleave with it.  "-" then writes to a copy of
 * the first standard output; false when it cannot be kept. */
static bool junit_take_stdout(void)
{
	fflush(stdout);
	int xml = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (xml < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
		return false;
	output_file_stdout_is(xml);
	return true;
}

int amptrace_check(int argc, char **argv)
{
	struct check_args args = { .rank = -1 };
	struct timespec start;
	struct rules rules;
	struct trace trace;
	struct analysis a;

	clock_gettime(CLOCK_MONOTONIC, &start);
	int status = parse_args(argc, argv, &args);
	if (status >= 0)
		return status;
	if (args.junit && strcmp(args.junit, "-") == 0 &&
	    !junit_take_stdout()) {
		fprintf(stderr, "amptrace check: cannot write standard "
			"output: %s\n", strerror(errno));
		return 2;
	}
	if (load_inputs(&args, &rules, &trace, &start) != 0)
		return 2;
	if (analysis_run(&trace, &a) != 0) {
		fprintf(stderr, "amptrace check: out of memory\n");
		status = 2;
	} else {
		status = check_loaded(&trace, &a, &rules, args.junit, args.rank,
				      &start);
	}
	analysis_free(&a);
	trace_free(&trace);
	rules_free(&rules);
	return status;
}

int check_rules(const struct trace *trace, struct analysis *a,
		const struct rules *rules, const char *junit)
{
	struct timespec start;

	clock_gettime(CLOCK_MONOTONIC, &start);
	return check_loaded(trace, a, rules, junit, -1, &start);
}
