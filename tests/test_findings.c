/* Findings: each kind has a program that makes the mistake and its fixed
 * twin (tests/findings_prog.c), run under `amptrace run`; the findings
 * computed from the trace (tracer/analysis/findings.c) must name the mistake,
 * and the twin must give none.  The samples are checked the same way: mlp is
 * clean; whole_loop, threads show their pitfalls; nested (the documented
 * autocast(enabled=False) fallback with explicit .float()) is correct
 * usage and must stay clean.  libamp's value checks (lib/diag.c) are also
 * tested in process, through the hook API. */
#include "amp.h"
#include "findings.h"
#include "findings_internal.h"
#include "rank_findings.h"
#include "steps.h"
#include "validate.h"
#include "test_dirs.h"
#include "traced.h"

#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if !defined(AMPTRACE_PATH) || !defined(FINDINGS_PROG_PATH) || \
	!defined(SAMPLES_DIR) || !defined(TRACE_FIXTURES)
#error "AMPTRACE_PATH, FINDINGS_PROG_PATH, SAMPLES_DIR and TRACE_FIXTURES must be defined"
#endif

static char dir[4096];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "%s/amptrace-findings-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void remove_dir(void)
{
	remove_tree(dir);
}

/* Runs `prog args` under `amptrace run OPTION` (value checks as given in
 * the environment) and computes the findings of its trace into *out;
 * *trace must be freed by the caller. */
static void traced(const char *value_checks, const char *option,
		   const char *prog, const char *args, struct trace *trace,
		   struct findings *out)
{
	char path[4200], env[32], buf[512], why[1024];
	const char *words[32];
	const char *const options[] = { option, NULL };
	const char *const environment[] = { env, NULL };
	const struct traced how = { .trace = path, .env = environment,
				    .options = option ? options : NULL,
				    .out = "/dev/null", .err = "/dev/null" };

	snprintf(path, sizeof path, "%s/trace.json", dir);
	snprintf(env, sizeof env, "AMP_VALUE_CHECKS=%s", value_checks);
	ck_assert_msg(traced_load(&how, traced_command(prog, args, buf, sizeof buf,
						       words, 32),
				  trace, why, sizeof why) == 0,
		      "%s %s: %s", prog, args, why);
	ck_assert_int_eq(findings_compute(trace, out), 0);
}

static void run_mode(const char *mode, struct trace *trace, struct findings *out)
{
	traced("1", NULL, FINDINGS_PROG_PATH, mode, trace, out);
}

static char *describe(const struct findings *f)
{
	static char text[4096];
	size_t n = 0;

	text[0] = '\0';
	for (size_t i = 0; i < f->count && n < sizeof text - 1; i++)
		n += (size_t)snprintf(text + n, sizeof text - n, "\n  %s: %s",
				      f->items[i].kind, f->items[i].message);
	return text;
}

/* ------------------------------------------ each kind: mistake vs fix */

static const struct {
	const char *kind;
	const char *mistake, *fix;
	const char *in_message; /* the mistake's message names this */
} cases[] = {
	{ "backward-under-autocast", "backward-inside", "backward-outside",
	  "'loop' autocast region" },
	{ "stale-cache", "backward-inside", "backward-outside", "layer.weight" },
	{ "cache-other-dtype", "cache-dtypes", "cache-dtypes-fixed",
	  "mm (op 6) in the bf16 autocast region 'inner' ran in f16, not bf16: "
	  "autocast's cache handed it the f16 copy of tensor 2 "
	  "'layer.weight' (argument 0) made for mm (op 5) in the f16 "
	  "autocast region 'outer'" },
	{ "cache-other-dtype", "cache-dtypes", "cache-same-dtype", "f16" },
	{ "cache-disabled", "cache-off-twice", "cache-off-once",
	  "cast of tensor 2 'layer.weight' was made again in the 'loop' "
	  "autocast region" },
	{ "cache-growth", "growth", "no-growth", "consecutive steps" },
	{ "autocast-off-in-thread", "thread-pitfall", "thread-fix",
	  "while thread 1" },
	{ "autocast-off-in-thread", "thread-shared", "thread-own",
	  "ran in it the same parameters" },
	{ "dtype-mismatch", "mismatch", "mismatch-fixed", "'encoder'" },
	{ "fp16-overflow", "overflow", "no-overflow", "max |input| 300" },
	{ "cast-underflow", "underflow", "no-underflow", "100.0%" },
	{ "scaler-skipped-step", "scaler-skip", "scaler-clean", "optimizer" },
	{ "scaler-collapse", "scaler-collapse", "scaler-clean",
	  "consecutive reductions" },
	{ "redundant-cast", "round-trip", "cast-once", "and back f16->f32" },
	{ "redundant-cast", "undo", "cast-once",
	  "autocast cast the copy back f32->bf16" },
	{ "redundant-cast", "repeat", "cast-once", "and again by autocast" },
	{ "banned-op", "bce", "bce-logits", "binary_cross_entropy_with_logits" },
};

/* The findings alike in the trace amptrace run keeps (below). */
static void check_trimmed_alike(struct trace *t, const struct findings *full,
				const char *what);
static void check_appended_alike(const struct trace *t, const char *what);

START_TEST(test_mistake_found)
{
	struct trace trace;
	struct findings f;

	run_mode(cases[_i].mistake, &trace, &f);
	const struct trace_finding *hit = findings_get(&f, cases[_i].kind);
	ck_assert_msg(hit, "%s: no %s finding; found:%s", cases[_i].mistake,
		      cases[_i].kind, describe(&f));
	ck_assert_msg(strstr(hit->message, cases[_i].in_message),
		      "%s: message lacks '%s': %s", cases[_i].kind,
		      cases[_i].in_message, hit->message);
	ck_assert_ptr_nonnull(hit->fix);
	ck_assert(hit->fix[0] && !strchr(hit->fix, '\n'));
	check_appended_alike(&trace, cases[_i].mistake);
	check_trimmed_alike(&trace, &f, cases[_i].mistake);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* The kinds a step recorded as aggregates still shows (its GradScaler
 * events, the cache's size at its end, its value checks' diags, its ops'
 * policies and failures): found with no step in full detail (--steps
 * none), and their fixes clean; `not_also`: a kind that must not report
 * the same mistake twice (a banned op's failure is banned-op's). */
static const struct {
	const char *kind, *mistake, *fix, *in_message, *not_also;
} aggregated_cases[] = {
	{ "cache-growth", "growth", "no-growth", "consecutive steps" },
	{ "scaler-collapse", "scaler-collapse", "scaler-clean",
	  "consecutive reductions" },
	{ "fp16-overflow", "overflow", "no-overflow", "max |input| 300" },
	{ "cast-underflow", "underflow", "no-underflow", "100.0%" },
	{ "banned-op", "bce", "bce-logits", "binary_cross_entropy is banned",
	  "op-error" },
	{ "op-error", "mismatch", "mismatch-fixed", "mm failed" },
};

/* `view`: the events of `t` that `keep` keeps, in an array of its own
 * (free(view->events)); the rest is t's. */
static void events_where(const struct trace *t,
			 bool (*keep)(const struct trace_event *),
			 struct trace *view)
{
	*view = *t;
	view->events = calloc(t->nevents ? t->nevents : 1, sizeof *view->events);
	ck_assert_ptr_nonnull(view->events);
	view->nevents = 0;
	memset(view->counts, 0, sizeof view->counts);
	for (size_t i = 0; i < t->nevents; i++) {
		if (!keep(&t->events[i]))
			continue;
		view->events[view->nevents] = t->events[i];
		view->events[view->nevents].index = (uint32_t)view->nevents;
		view->counts[t->events[i].kind]++;
		view->nevents++;
	}
}

/* `amptrace run` computes the findings from a trace that keeps only the
 * events the findings read (findings_event_read) and, of each step's
 * aggregates, the rows they read (findings_aggregate_trim).  Here that
 * trace is `t` so trimmed (in place) and `kept`, its events the findings
 * read. */
static void keep_as_run_does(struct trace *t, struct trace *kept)
{
	for (size_t i = 0; i < t->nevents; i++)
		if (t->events[i].kind == TRACE_AGGREGATE)
			findings_aggregate_trim(&t->events[i].aggregate);
	events_where(t, findings_event_read, kept);
}

static bool is_appended_finding(const struct trace_event *e)
{
	return e->kind == TRACE_DIAG && e->diag.severity;
}

static bool is_not_appended_finding(const struct trace_event *e)
{
	return !is_appended_finding(e);
}

/* What `amptrace run` appended to the trace `t` it wrote (an amp.diag
 * event with a severity for each finding it computed from the trace it
 * kept: tail.c) is what the findings of t's other events are: the
 * trace it kept held what they read (the converter's own keeping, which
 * check_trimmed_alike plays only). */
static void check_appended_alike(const struct trace *t, const char *what)
{
	struct trace events;
	struct findings f;
	size_t k = 0;

	events_where(t, is_not_appended_finding, &events);
	ck_assert_int_eq(findings_compute(&events, &f), 0);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_diag *d = &t->events[i].diag;
		if (!is_appended_finding(&t->events[i]))
			continue;
		while (k < f.count && f.items[k].from_trace)
			k++;
		ck_assert_msg(k < f.count, "%s: run appended %s (%s), not "
			      "found in its events:%s", what, d->kind,
			      d->message, describe(&f));
		const struct trace_finding *a = &f.items[k++];
		ck_assert_msg(!strcmp(a->kind, d->kind) &&
			      !strcmp(a->message, d->message) &&
			      a->count == d->count && a->op_id == d->op_id &&
			      a->tensor == d->tensor &&
			      !strcmp(finding_severity_name(a->severity),
				      d->severity),
			      "%s: run appended %s (x%llu) %s; its events' "
			      "finding is %s (x%llu) %s", what, d->kind,
			      (unsigned long long)d->count, d->message, a->kind,
			      (unsigned long long)a->count, a->message);
	}
	while (k < f.count && f.items[k].from_trace)
		k++;
	ck_assert_msg(k == f.count, "%s: run did not append %s: %s", what,
		      f.items[k].kind, f.items[k].message);
	findings_free(&f);
	free(events.events);
}

/* The steps of `t` (`steps`, found before keep_as_run_does) and of
 * `kept` are the same: as many, each event kept in the step it was in. */
static void check_steps_alike(const struct trace *t,
			      const struct trace_steps *steps,
			      const struct trace *kept, const char *what)
{
	struct trace_steps kept_steps;

	ck_assert_int_eq(trace_steps_find(kept, &kept_steps), 0);
	ck_assert_msg(steps->nsteps == kept_steps.nsteps &&
		      steps->naggregated == kept_steps.naggregated &&
		      steps->ncut_short == kept_steps.ncut_short,
		      "%s: %d steps (%d aggregated), %d (%d) as run keeps it",
		      what, steps->nsteps, steps->naggregated, kept_steps.nsteps,
		      kept_steps.naggregated);
	for (size_t i = 0, k = 0; i < t->nevents; i++) {
		if (!findings_event_read(&t->events[i]))
			continue;
		ck_assert_msg(steps->step_of[i] == kept_steps.step_of[k],
			      "%s: event %zu (%s) in step %d, in step %d as run "
			      "keeps it", what, i, t->events[i].name,
			      steps->step_of[i], kept_steps.step_of[k]);
		k++;
	}
	trace_steps_free(&kept_steps);
}

/* ---------------------------------------- the steps of a streamed trace */

/* `t` as amptrace diff holds it (diff.c): the events the steps model
 * reads whole kept, in file order; of the other ops, casts and
 * aggregates and GradScaler events only what trace_steps_more hands
 * over, in diff's order (ops, casts, aggregates, scaler events), not the
 * trace's. */
struct streamed {
	struct trace whole;
	const struct trace_event **records; /* ops, casts, aggregates */
	size_t nrecords;
	size_t *index;  /* per event of t: where the model numbers it */
};

static const struct trace_event *streamed_record(const void *ctx, size_t k,
						 struct trace_event *scratch)
{
	const struct streamed *st = ctx;
	const struct trace_event *e = st->records[k];

	*scratch = (struct trace_event){ .kind = e->kind, .pid = e->pid,
					 .ts = e->ts };
	if (e->kind == TRACE_OP)
		scratch->op.phase = e->op.phase;
	if (e->kind == TRACE_SCALER)
		scratch->scaler.what = e->scaler.what;
	if (e->kind == TRACE_AGGREGATE) {
		scratch->aggregate.step = e->aggregate.step;
		scratch->aggregate.regions = e->aggregate.regions;
		scratch->aggregate.cut_short = e->aggregate.cut_short;
		scratch->aggregate.nops = e->aggregate.nops;
		scratch->aggregate.ops = e->aggregate.ops;
	}
	return scratch;
}

static void stream(const struct trace *t, struct streamed *st)
{
	static const enum trace_kind order[] = { TRACE_OP, TRACE_CAST,
						 TRACE_AGGREGATE, TRACE_SCALER };

	st->whole = *t;
	st->whole.events = calloc(t->nevents + 1, sizeof *t->events);
	st->records = calloc(t->nevents + 1, sizeof *st->records);
	st->index = calloc(t->nevents + 1, sizeof *st->index);
	ck_assert(st->whole.events && st->records && st->index);
	st->whole.nevents = st->nrecords = 0;
	for (size_t i = 0; i < t->nevents; i++) {
		st->index[i] = SIZE_MAX;
		if (trace_steps_reads_whole(&t->events[i])) {
			st->index[i] = st->whole.nevents;
			st->whole.events[st->whole.nevents++] = t->events[i];
		}
	}
	for (size_t o = 0; o < sizeof order / sizeof order[0]; o++)
		for (size_t i = 0; i < t->nevents; i++)
			if (t->events[i].kind == order[o]) {
				st->index[i] = st->whole.nevents + st->nrecords;
				st->records[st->nrecords++] = &t->events[i];
			}
}

/* The steps model of `t` read whole (trace_steps_find) and streamed as
 * diff reads it (trace_steps_find_more) is one model: the same steps,
 * each kept event and record in the same step. */
static void check_streamed_alike(const struct trace *t, const char *what)
{
	struct trace_steps whole, streamed;
	struct streamed st;

	stream(t, &st);
	struct trace_steps_more more = { .count = st.nrecords,
					 .event = streamed_record, .ctx = &st };
	ck_assert_int_eq(trace_steps_find(t, &whole), 0);
	ck_assert_int_eq(trace_steps_find_more(&st.whole, &more, &streamed), 0);
	ck_assert_msg(whole.nsteps == streamed.nsteps &&
		      whole.ndetail == streamed.ndetail &&
		      whole.naggregated == streamed.naggregated &&
		      whole.marked == streamed.marked &&
		      !strcmp(whole.marker, streamed.marker) &&
		      whole.default_step == streamed.default_step &&
		      whole.nevaluations == streamed.nevaluations &&
		      whole.detail_stop_step == streamed.detail_stop_step,
		      "%s: %d steps (%d in detail, %d aggregated, by %s), %d "
		      "(%d, %d, by %s) streamed", what, whole.nsteps,
		      whole.ndetail, whole.naggregated, whole.marker,
		      streamed.nsteps, streamed.ndetail, streamed.naggregated,
		      streamed.marker);
	ck_assert_msg(whole.ncut_short == streamed.ncut_short &&
		      !memcmp(whole.cut_short, streamed.cut_short,
			      (size_t)whole.ncut_short * sizeof *whole.cut_short),
		      "%s: %d steps cut short, %d streamed", what,
		      whole.ncut_short, streamed.ncut_short);
	for (int k = 0; k < whole.nsteps; k++)
		ck_assert_msg(whole.aggregated[k] == streamed.aggregated[k],
			      "%s: step %d aggregated %d, %d streamed", what, k,
			      whole.aggregated[k], streamed.aggregated[k]);
	for (size_t i = 0; i < t->nevents; i++) {
		size_t k = st.index[i];
		if (k == SIZE_MAX || t->events[i].kind == TRACE_META)
			continue;
		ck_assert_msg(whole.step_of[i] == streamed.step_of[k] &&
			      whole.evaluating[i] == streamed.evaluating[k],
			      "%s: event %zu (%s) in step %d%s, streamed in "
			      "step %d%s", what, i, t->events[i].name,
			      whole.step_of[i],
			      whole.evaluating[i] ? " (evaluating)" : "",
			      streamed.step_of[k],
			      streamed.evaluating[k] ? " (evaluating)" : "");
	}
	trace_steps_free(&whole);
	trace_steps_free(&streamed);
	free(st.whole.events);
	free(st.records);
	free(st.index);
}

/* The findings of `t` (`full`) must be those of the trace run keeps,
 * every key the trace's tail writes of them (tail.c). */
static void check_trimmed_alike(struct trace *t, const struct findings *full,
				const char *what)
{
	struct findings found;
	struct trace kept;
	struct trace_steps steps;

	ck_assert_int_eq(trace_steps_find(t, &steps), 0);
	keep_as_run_does(t, &kept);
	check_steps_alike(t, &steps, &kept, what);
	check_streamed_alike(t, what);
	trace_steps_free(&steps);
	ck_assert_int_eq(findings_compute(&kept, &found), 0);
	ck_assert_msg(found.count == full->count, "%s: %zu findings, %zu as "
		      "run keeps it:%s", what, full->count, found.count,
		      describe(&found));
	for (size_t i = 0; i < full->count; i++) {
		const struct trace_finding *a = &full->items[i];
		const struct trace_finding *b = &found.items[i];
		ck_assert_msg(!strcmp(a->kind, b->kind) &&
			      !strcmp(a->message, b->message) &&
			      a->count == b->count &&
			      a->severity == b->severity && a->pid == b->pid &&
			      a->op_id == b->op_id && a->tensor == b->tensor &&
			      a->thread == b->thread &&
			      a->other_thread == b->other_thread &&
			      a->from_trace == b->from_trace &&
			      (a->fix == b->fix ||
			       (a->fix && b->fix && !strcmp(a->fix, b->fix))),
			      "%s: %s (x%llu, op %llu, tensor %llu) became %s "
			      "(x%llu, op %llu, tensor %llu) as run keeps it: %s",
			      what, a->kind, (unsigned long long)a->count,
			      (unsigned long long)a->op_id,
			      (unsigned long long)a->tensor, b->kind,
			      (unsigned long long)b->count,
			      (unsigned long long)b->op_id,
			      (unsigned long long)b->tensor, b->message);
	}
	findings_free(&found);
	free(kept.events);
}

START_TEST(test_found_in_aggregates)
{
	struct trace trace;
	struct findings f;

	traced("1", "--steps=none", FINDINGS_PROG_PATH,
	       aggregated_cases[_i].mistake, &trace, &f);
	ck_assert_msg(trace.counts[TRACE_AGGREGATE] > 0 &&
		      trace.counts[TRACE_CAST] == 0,
		      "%s: not recorded as aggregates", aggregated_cases[_i].mistake);
	const struct trace_finding *hit = findings_get(&f,
						       aggregated_cases[_i].kind);
	ck_assert_msg(hit, "%s --steps none: no %s finding; found:%s",
		      aggregated_cases[_i].mistake, aggregated_cases[_i].kind,
		      describe(&f));
	ck_assert_msg(strstr(hit->message, aggregated_cases[_i].in_message),
		      "%s: message lacks '%s': %s", aggregated_cases[_i].kind,
		      aggregated_cases[_i].in_message, hit->message);
	ck_assert_msg(!aggregated_cases[_i].not_also ||
		      !findings_get(&f, aggregated_cases[_i].not_also),
		      "%s --steps none: %s reported as %s too:%s",
		      aggregated_cases[_i].mistake, aggregated_cases[_i].kind,
		      aggregated_cases[_i].not_also, describe(&f));
	check_appended_alike(&trace, aggregated_cases[_i].mistake);
	check_trimmed_alike(&trace, &f, aggregated_cases[_i].mistake);
	findings_free(&f);
	trace_free(&trace);
	traced("1", "--steps=none", FINDINGS_PROG_PATH,
	       aggregated_cases[_i].fix, &trace, &f);
	ck_assert_msg(f.count == 0, "%s --steps none (the fix for %s) has "
		      "findings:%s", aggregated_cases[_i].fix,
		      aggregated_cases[_i].kind, describe(&f));
	check_appended_alike(&trace, aggregated_cases[_i].fix);
	check_trimmed_alike(&trace, &f, aggregated_cases[_i].fix);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

START_TEST(test_fix_clean)
{
	struct trace trace;
	struct findings f;

	run_mode(cases[_i].fix, &trace, &f);
	ck_assert_msg(f.count == 0, "%s (the fix for %s) has findings:%s",
		      cases[_i].fix, cases[_i].kind, describe(&f));
	check_appended_alike(&trace, cases[_i].fix);
	check_trimmed_alike(&trace, &f, cases[_i].fix);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* The op and tensor at fault are named by id. */
START_TEST(test_ids)
{
	struct trace trace;
	struct findings f;

	run_mode("mismatch", &trace, &f);
	const struct trace_finding *m = findings_get(&f, "dtype-mismatch");
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_ne(m->op_id, 0);
	ck_assert_uint_ne(m->tensor, 0);
	ck_assert_int_eq(m->severity, FINDING_ERROR);
	findings_free(&f);
	trace_free(&trace);

	run_mode("thread-pitfall", &trace, &f);
	const struct trace_finding *t = findings_get(&f, "autocast-off-in-thread");
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->other_thread, 1);
	ck_assert_int_ne(t->thread, 1);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* A region per micro-batch around forward and backward: every backward
 * op is reported, also in the regions entered right after the previous
 * backward (not mistaken for a region the backward pass entered, as
 * custom_bwd's are). */
START_TEST(test_backward_per_step)
{
	struct trace trace;
	struct findings f;
	size_t under = 0;

	run_mode("backward-per-step", &trace, &f);
	for (size_t i = 0; i < trace.nevents; i++)
		under += trace.events[i].kind == TRACE_OP &&
			 finding_op_is_backward(&trace.events[i].op) &&
			 trace.events[i].op.autocast->enabled;
	const struct trace_finding *b = findings_get(&f, "backward-under-autocast");
	ck_assert_msg(b, "no backward-under-autocast:%s", describe(&f));
	ck_assert_uint_ge(under, 3);
	ck_assert_uint_eq(b->count, under);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* A step recorded as aggregates whose two failed mm ops include the one
 * whose exception ended the program: the bridge's op-error diag row
 * reports that one with its text, the op row the other; two in all. */
START_TEST(test_aggregated_failures_counted_once)
{
	struct trace trace;
	struct trace_error err;
	struct findings f;
	uint64_t failures = 0;
	bool with_text = false;

	ck_assert_int_eq(trace_load(TRACE_FIXTURES "/aggregate-op-error.json",
				    &trace, &err), 0);
	ck_assert_int_eq(findings_compute(&trace, &f), 0);
	for (size_t i = 0; i < f.count; i++) {
		if (strcmp(f.items[i].kind, "op-error"))
			continue;
		failures += f.items[i].count;
		with_text |= strstr(f.items[i].message, "RuntimeError") != NULL;
	}
	ck_assert_msg(failures == 2, "op-error counts %llu failures, the step "
		      "had 2:%s", (unsigned long long)failures, describe(&f));
	ck_assert(with_text);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* Rules that once searched the rest of the trace for each event they
 * judged, now reading an index built in one pass (findings_internal.h),
 * on fixtures whose answers lie where a careless index errs: a
 * conversion after the failed op, or to another dtype (dtype-mismatch);
 * another process's skipped step, an update, a scaler event that decides
 * nothing (fp16-overflow); a reader on another thread, two casts of one
 * result (policy-divergence).  Each finding of `kind` starts with one of
 * `found`'s first texts and holds its second; none starts with
 * `absent`. */
static const struct lookahead_case {
	const char *fixture, *kind;
	const char *found[4][2];
	const char *absent;
} lookahead_cases[] = {
	{ "lookahead-conversions.json", "dtype-mismatch",
	  { { "mm (op 4)", "a parameter, in this dtype since the trace" },
	    { "mm (op 6)", "converted module: cast f32->bf16 by to (op 5" } },
	  NULL },
	{ "lookahead-overflow-verdicts.json", "fp16-overflow",
	  { { "mm (op 2)", "" }, { "bmm (op 4)", "" } }, "addmm" },
	{ "lookahead-jit-consumers.json", "policy-divergence",
	  { { "mm's input", "" }, { "bmm's input", "" }, { "mul's input", "" },
	    { "sum's input", "" } },
	  "add's input" },
};

static bool starts_with(const char *text, const char *prefix)
{
	return !strncmp(text, prefix, strlen(prefix));
}

START_TEST(test_lookahead_index)
{
	const struct lookahead_case *c = &lookahead_cases[_i];
	struct trace trace;
	struct trace_error err;
	struct findings f;
	char path[4096];
	size_t expected = 0, count = 0;

	snprintf(path, sizeof path, "%s/%s", TRACE_FIXTURES, c->fixture);
	ck_assert_msg(trace_load(path, &trace, &err) == 0, "%s", err.message);
	ck_assert_int_eq(findings_compute(&trace, &f), 0);
	for (; expected < 4 && c->found[expected][0]; expected++) {
		bool found = false;
		for (size_t i = 0; i < f.count; i++)
			found |= !strcmp(f.items[i].kind, c->kind) &&
				 starts_with(f.items[i].message,
					     c->found[expected][0]) &&
				 strstr(f.items[i].message, c->found[expected][1]);
		ck_assert_msg(found, "%s: no %s '%s...%s':%s", c->fixture,
			      c->kind, c->found[expected][0],
			      c->found[expected][1], describe(&f));
	}
	for (size_t i = 0; i < f.count; i++) {
		if (strcmp(f.items[i].kind, c->kind))
			continue;
		count++;
		ck_assert_msg(!c->absent ||
			      !starts_with(f.items[i].message, c->absent),
			      "%s: %s", c->fixture, f.items[i].message);
	}
	ck_assert_msg(count == expected, "%s: %zu %s findings, not %zu:%s",
		      c->fixture, count, c->kind, expected, describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* The same on the fixtures recorded as aggregates. */
static const char *const aggregate_fixtures[] = {
	"aggregate-banned-op-error.json", "aggregate-op-error-long-name.json",
	"aggregate-op-error-other-op.json", "aggregate-op-error.json",
	"aggregate-overflow-skips.json", "aggregate-torch-autocast.json",
	/* autocast seen only in its ops' policies, only in its casts: each
	 * kept row alone tells autocast-never-enabled autocast ran */
	"aggregate-torch-autocast-ops.json",
	"aggregate-torch-autocast-casts.json",
	/* a step's aggregates after the last step's end, in no region: its
	 * backward row makes it a step of its own (steps.c) */
	"aggregate-torch-trailing.json",
};

START_TEST(test_trimmed_aggregates_alike)
{
	struct trace trace;
	struct trace_error err;
	struct findings f;
	char path[4096];

	snprintf(path, sizeof path, "%s/%s", TRACE_FIXTURES,
		 aggregate_fixtures[_i]);
	ck_assert_msg(trace_load(path, &trace, &err) == 0, "%s", err.message);
	ck_assert_uint_gt(trace.counts[TRACE_AGGREGATE], 0);
	ck_assert_int_eq(findings_compute(&trace, &f), 0);
	check_trimmed_alike(&trace, &f, aggregate_fixtures[_i]);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* Every trace fixture that loads: one steps model, read whole or
 * streamed (check_streamed_alike). */
START_TEST(test_fixtures_streamed_alike)
{
	DIR *d = opendir(TRACE_FIXTURES);
	struct dirent *entry;
	size_t checked = 0;

	ck_assert_ptr_nonnull(d);
	while ((entry = readdir(d))) {
		const char *dot = strrchr(entry->d_name, '.');
		struct trace trace;
		struct trace_error err;
		char path[4096];
		if (!dot || strcmp(dot, ".json"))
			continue;
		snprintf(path, sizeof path, "%s/%s", TRACE_FIXTURES,
			 entry->d_name);
		if (trace_load(path, &trace, &err) != 0)
			continue;
		check_streamed_alike(&trace, entry->d_name);
		trace_free(&trace);
		checked++;
	}
	closedir(d);
	ck_assert_uint_ge(checked, 20);
}
END_TEST

/* The op-error findings of a trace: their count, and whether one's
 * message holds `text`. */
static uint64_t op_errors(const struct findings *f, const char *text,
			  bool *with_text)
{
	uint64_t failures = 0;

	*with_text = false;
	for (size_t i = 0; i < f->count; i++) {
		if (strcmp(f->items[i].kind, "op-error"))
			continue;
		failures += f->items[i].count;
		*with_text |= strstr(f->items[i].message, text) != NULL;
	}
	return failures;
}

/* A step recorded as aggregates where a caught index failure came before
 * the mm failure whose exception ended the thread: the bridge's diag row
 * reports mm's, so it is taken from mm's row, not from index's, the
 * first failed row. */
START_TEST(test_aggregated_failure_of_another_op)
{
	struct trace trace;
	struct trace_error err;
	struct findings f;
	bool index_failed, mm_row;

	ck_assert_int_eq(trace_load(TRACE_FIXTURES
				    "/aggregate-op-error-other-op.json",
				    &trace, &err), 0);
	ck_assert_int_eq(findings_compute(&trace, &f), 0);
	uint64_t failures = op_errors(&f, "index failed", &index_failed);
	ck_assert_msg(failures == 2 && index_failed, "expected mm's failure "
		      "(the diag row) and index's:%s", describe(&f));
	op_errors(&f, "mm failed (", &mm_row);
	ck_assert_msg(!mm_row, "mm's failure counted twice:%s", describe(&f));
	/* a row keeps no error to read: its fix says where one is kept */
	for (size_t i = 0; i < f.count; i++)
		if (strstr(f.items[i].message, "index failed"))
			ck_assert_msg(strstr(f.items[i].fix, "--steps"),
				      "index's fix: %s", f.items[i].fix);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* An op named at length: the row keeps its whole name, the diag's message
 * 63 bytes of it (a bridge's cut); the failure is still counted once. */
START_TEST(test_aggregated_failure_of_a_long_name)
{
	struct trace trace;
	struct trace_error err;
	struct findings f;
	bool row_counted;

	ck_assert_int_eq(trace_load(TRACE_FIXTURES
				    "/aggregate-op-error-long-name.json",
				    &trace, &err), 0);
	ck_assert_int_eq(findings_compute(&trace, &f), 0);
	uint64_t failures = op_errors(&f, "x failed (", &row_counted);
	ck_assert_msg(failures == 1 && !row_counted,
		      "one failure, the diag row's:%s", describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* A banned op's failure, reported by the bridge's diag row, hides no
 * other failure: the caught index failure is an op-error too, two in
 * all as in full detail, and the banned op is banned-op's. */
START_TEST(test_aggregated_banned_failure_hides_none)
{
	struct trace trace;
	struct trace_error err;
	struct findings f;
	bool index_failed;

	ck_assert_int_eq(trace_load(TRACE_FIXTURES
				    "/aggregate-banned-op-error.json",
				    &trace, &err), 0);
	ck_assert_int_eq(findings_compute(&trace, &f), 0);
	uint64_t failures = op_errors(&f, "index failed", &index_failed);
	ck_assert_msg(failures == 2 && index_failed, "expected the banned "
		      "op's failure (the diag row) and index's:%s",
		      describe(&f));
	const struct trace_finding *b = findings_get(&f, "banned-op");
	ck_assert_msg(b && strstr(b->message, ", so it failed"),
		      "banned-op should say the op failed:%s", describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* Backward overflows in steps recorded as aggregates: those of a step
 * its GradScaler skipped are the scaler's (not counted), the two of the
 * step after it are; another process's skip at that time is not its,
 * nor is a skip after the step ended (step 2's, the next one skipped by
 * pid 100), while one exactly at a step's beginning (step 3's) is. */
START_TEST(test_aggregated_overflow_in_skipped_steps)
{
	struct trace trace;
	struct trace_error err;
	struct findings f;

	ck_assert_int_eq(trace_load(TRACE_FIXTURES
				    "/aggregate-overflow-skips.json", &trace,
				    &err), 0);
	ck_assert_int_eq(findings_compute(&trace, &f), 0);
	const struct trace_finding *o = findings_get(&f, "fp16-overflow");
	ck_assert_msg(o && o->count == 2, "expected the 2 overflows of the "
		      "step not skipped:%s", describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* Occurrences fold: three overflowing matmuls give one finding, count 3;
 * several findings sort most severe first. */
START_TEST(test_aggregate_and_sort)
{
	struct trace trace;
	struct findings f;

	run_mode("overflow", &trace, &f);
	const struct trace_finding *o = findings_get(&f, "fp16-overflow");
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(o->count, 3);
	ck_assert(o->from_trace);
	size_t n = 0;
	for (size_t i = 0; i < f.count; i++)
		n += !strcmp(f.items[i].kind, "fp16-overflow");
	ck_assert_uint_eq(n, 1);
	findings_free(&f);
	trace_free(&trace);

	run_mode("scaler-collapse", &trace, &f);
	ck_assert_uint_ge(f.count, 2);
	for (size_t i = 1; i < f.count; i++)
		ck_assert_int_le(f.items[i - 1].severity, f.items[i].severity);
	ck_assert_str_eq(f.items[0].kind, "scaler-collapse");
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* `amptrace run` appends each computed finding as one amp.diag event
 * (kind, message, fix, severity, ids) and the trace stays valid; reading
 * it back folds the event into the recomputed finding: counted once. */
static size_t diag_events(const struct trace *t, const char *kind,
			  const struct trace_event **first)
{
	size_t n = 0;

	*first = NULL;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_DIAG || strcmp(e->diag.kind, kind))
			continue;
		if (!n++)
			*first = e;
	}
	return n;
}

START_TEST(test_appended_to_trace)
{
	struct trace trace;
	struct findings f;
	struct validate_report report;
	const struct trace_event *e;

	run_mode("mismatch", &trace, &f);
	ck_assert_uint_eq(diag_events(&trace, "dtype-mismatch", &e), 1);
	const struct trace_finding *m = findings_get(&f, "dtype-mismatch");
	ck_assert_ptr_nonnull(m);
	ck_assert_uint_eq(m->count, 1);
	ck_assert(m->from_trace);
	ck_assert_uint_eq(e->diag.op_id, m->op_id);
	ck_assert_uint_eq(e->diag.tensor, m->tensor);
	ck_assert_str_eq(e->diag.message, m->message);
	ck_assert_int_eq(e->tid, 0);
	ck_assert_msg(trace_validate(&trace, &report) == 0, "%s",
		      report.messages[0]);
	findings_free(&f);
	trace_free(&trace);

	/* a value-dependent finding libamp recorded is not repeated */
	run_mode("overflow", &trace, &f);
	ck_assert_uint_eq(diag_events(&trace, "fp16-overflow", &e), 3);
	ck_assert_int_ne(e->tid, 0);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* Value checks cost time and can be turned off: no overflow finding. */
START_TEST(test_value_checks_off)
{
	struct trace trace;
	struct findings f;

	traced("0", NULL, FINDINGS_PROG_PATH, "overflow", &trace, &f);
	ck_assert_ptr_null(findings_get(&f, "fp16-overflow"));
	findings_free(&f);
	trace_free(&trace);

	/* --no-value-checks wins over the environment */
	traced("1", "--no-value-checks", FINDINGS_PROG_PATH, "overflow", &trace,
	       &f);
	ck_assert_ptr_null(findings_get(&f, "fp16-overflow"));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* Healthy programs that used to trigger a kind, each with the kind it
 * must not give now (and no finding at all where `clean`). */
static const struct {
	const char *kind;
	const char *mode;
	bool clean;
} healthy_modes[] = {
	/* autocast's own casts of one activation for q, k and v */
	{ "redundant-cast", "qkv", true },
	/* a sibling worker in f32 beside another's region: no hand-off */
	{ "autocast-off-in-thread", "thread-siblings", true },
};

START_TEST(test_healthy_not_found)
{
	struct trace trace;
	struct findings f;

	run_mode(healthy_modes[_i].mode, &trace, &f);
	ck_assert_msg(!findings_get(&f, healthy_modes[_i].kind), "%s gives %s:%s",
		      healthy_modes[_i].mode, healthy_modes[_i].kind, describe(&f));
	if (healthy_modes[_i].clean)
		ck_assert_msg(f.count == 0, "%s has findings:%s",
			      healthy_modes[_i].mode, describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* ------------------------------------------------------------ samples */

static void run_sample(const char *name, const char *args, struct trace *trace,
		       struct findings *out)
{
	char prog[4200];

	snprintf(prog, sizeof prog, "%s/%s", SAMPLES_DIR, name);
	traced("1", NULL, prog, args, trace, out);
}

START_TEST(test_sample_mlp_clean)
{
	struct trace trace;
	struct findings f;

	run_sample("mlp", "--steps 4", &trace, &f);
	ck_assert_msg(f.count == 0, "mlp has findings:%s", describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* nested is correct usage (an autocast(enabled=False) subregion fed with
 * .float() tensors): nothing to report. */
START_TEST(test_sample_nested_clean)
{
	struct trace trace;
	struct findings f;

	run_sample("nested", "--steps 4", &trace, &f);
	ck_assert_msg(f.count == 0, "nested has findings:%s", describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* Samples that used to trigger a kind although healthy, each with that
 * kind: custom's custom_bwd re-enters the forward's autocast state in
 * backward (autocast's design, not a backward() under autocast); multi's
 * second optimizer skips GradScaler's first step while the first steps
 * (calibration, and its backward overflow is the scaler's to handle);
 * whole_loop's backward casts are autograd's and transformer's q/k/v
 * casts autocast's (the program wrote neither). */
static const struct {
	const char *sample, *args, *kind;
} healthy_samples[] = {
	{ "custom", "--steps 2", "backward-under-autocast" },
	{ "multi", "--device cuda --steps 2", "fp16-overflow" },
	{ "whole_loop", "--device cuda --steps 2", "redundant-cast" },
	{ "transformer", "--steps 2", "redundant-cast" },
};

START_TEST(test_sample_healthy_not_found)
{
	struct trace trace;
	struct findings f;

	run_sample(healthy_samples[_i].sample, healthy_samples[_i].args, &trace,
		   &f);
	ck_assert_msg(!findings_get(&f, healthy_samples[_i].kind), "%s %s gives %s:%s",
		      healthy_samples[_i].sample, healthy_samples[_i].args,
		      healthy_samples[_i].kind, describe(&f));
	for (size_t i = 0; i < f.count; i++)
		ck_assert_msg(f.items[i].severity == FINDING_INFO ||
			      !strcmp(healthy_samples[_i].sample, "whole_loop"),
			      "%s %s:%s", healthy_samples[_i].sample,
			      healthy_samples[_i].args, describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

START_TEST(test_sample_whole_loop)
{
	struct trace trace;
	struct findings f;

	run_sample("whole_loop", "--steps 6", &trace, &f);
	const struct trace_finding *stale = findings_get(&f, "stale-cache");
	ck_assert_msg(stale, "no stale-cache:%s", describe(&f));
	ck_assert(strstr(stale->message, "fc1.weight"));
	ck_assert_ptr_nonnull(findings_get(&f, "backward-under-autocast"));
	ck_assert_ptr_null(findings_get(&f, "autocast-off-in-thread"));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

START_TEST(test_sample_threads)
{
	struct trace trace;
	struct findings f;

	run_sample("threads", "--steps 3", &trace, &f);
	const struct trace_finding *t = findings_get(&f, "autocast-off-in-thread");
	ck_assert_msg(t, "no autocast-off-in-thread:%s", describe(&f));
	ck_assert_int_eq(t->other_thread, 1);
	/* the fixed forwards (workers entering their own region) are not
	 * reported: the pitfall's two workers ran 3 linears each */
	ck_assert_uint_eq(t->count, 6);
	ck_assert_ptr_null(findings_get(&f, "backward-under-autocast"));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* ------------------------------------------- value checks in process */

struct seen {
	int diags;
	char kind[64];
	uint64_t op_id, tensor_id;
};

static void on_diag(const struct amp_event *e, void *user)
{
	struct seen *s = user;

	s->diags++;
	snprintf(s->kind, sizeof s->kind, "%s", e->diag.kind);
	s->op_id = e->diag.op_id;
	s->tensor_id = e->diag.tensor_id;
}

static int overflowing_mm(bool checks)
{
	struct seen s = { 0 };
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_DIAG), on_diag, &s);
	int64_t shape[2] = { 4, 64 }, shape_t[2] = { 64, 4 };
	amp_tensor *x = amp_full(2, shape, 300, AMP_DTYPE_F16, AMP_DEVICE_CPU);
	amp_tensor *w = amp_full(2, shape_t, 300, AMP_DTYPE_F16, AMP_DEVICE_CPU);

	amp_set_value_checks(checks);
	ck_assert(amp_value_checks_enabled() == checks);
	amp_tensor *y = amp_mm(x, w);
	ck_assert_ptr_nonnull(y);
	if (checks) {
		ck_assert_str_eq(s.kind, "fp16-overflow");
		ck_assert_uint_eq(s.tensor_id, amp_tensor_id(y));
		ck_assert_uint_ne(s.op_id, 0);
	}
	amp_set_value_checks(false);
	amp_hook_remove(hook);
	amp_tensor *done[] = { x, w, y };
	for (int i = 0; i < 3; i++)
		amp_tensor_free(done[i]);
	return s.diags;
}

START_TEST(test_diag_overflow_event)
{
	ck_assert_int_eq(overflowing_mm(true), 1);
	ck_assert_int_eq(overflowing_mm(false), 0);
}
END_TEST

/* Finite f16 inputs that hold inf already are not the op's doing; a
 * finite result is not reported either. */
START_TEST(test_diag_overflow_negative)
{
	struct seen s = { 0 };
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_DIAG), on_diag, &s);
	int64_t shape[2] = { 2, 2 };
	amp_tensor *inf = amp_full(2, shape, INFINITY, AMP_DTYPE_F16, AMP_DEVICE_CPU);
	amp_tensor *one = amp_full(2, shape, 1, AMP_DTYPE_F16, AMP_DEVICE_CPU);

	amp_set_value_checks(true);
	amp_tensor *a = amp_mm(inf, one);
	amp_tensor *b = amp_mm(one, one);
	amp_set_value_checks(false);
	ck_assert_int_eq(s.diags, 0);
	amp_hook_remove(hook);
	amp_tensor *done[] = { inf, one, a, b };
	for (int i = 0; i < 4; i++)
		amp_tensor_free(done[i]);
}
END_TEST

/* An explicit x.half() of 1e-8 values underflows; of 1e-2 does not. */
START_TEST(test_diag_underflow_explicit_cast)
{
	struct seen s = { 0 };
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_DIAG), on_diag, &s);
	int64_t shape[1] = { 100 };
	amp_tensor *tiny = amp_full(1, shape, 1e-8, AMP_DTYPE_F32, AMP_DEVICE_CPU);
	amp_tensor *fine = amp_full(1, shape, 1e-2, AMP_DTYPE_F32, AMP_DEVICE_CPU);

	amp_set_value_checks(true);
	amp_tensor *a = amp_to(fine, AMP_DTYPE_F16);
	ck_assert_int_eq(s.diags, 0);
	amp_tensor *b = amp_to(tiny, AMP_DTYPE_F16);
	amp_set_value_checks(false);
	ck_assert_int_eq(s.diags, 1);
	ck_assert_str_eq(s.kind, "cast-underflow");
	ck_assert_uint_eq(s.tensor_id, amp_tensor_id(tiny));
	amp_hook_remove(hook);
	amp_tensor *done[] = { tiny, fine, a, b };
	for (int i = 0; i < 4; i++)
		amp_tensor_free(done[i]);
}
END_TEST

/* Two skipped steps at the start, then clean steps: GradScaler
 * calibrating its scale, an info and not a warning; the positive test
 * (scaler-skip: skips after steps were taken) stays a warning. */
START_TEST(test_scaler_calibration_is_info)
{
	struct trace trace;
	struct findings f;

	run_mode("scaler-calibrate", &trace, &f);
	const struct trace_finding *s = findings_get(&f, "scaler-skipped-step");
	ck_assert_msg(s, "no scaler-skipped-step:%s", describe(&f));
	ck_assert_int_eq(s->severity, FINDING_INFO);
	ck_assert_uint_eq(s->count, 2);
	ck_assert_msg(strstr(s->message, "while calibrating"), "%s", s->message);
	for (size_t i = 0; i < f.count; i++)
		ck_assert_msg(f.items[i].severity == FINDING_INFO,
			      "not info:%s", describe(&f));
	findings_free(&f);
	trace_free(&trace);

	run_mode("scaler-skip", &trace, &f);
	s = findings_get(&f, "scaler-skipped-step");
	ck_assert_msg(s, "no scaler-skipped-step:%s", describe(&f));
	ck_assert_int_eq(s->severity, FINDING_WARNING);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* A scaler that never takes a step is calibrating only until its scale
 * collapses: the skips after scaler-collapse are warnings that steps keep
 * being skipped, not "normal at the start" (12 steps, inf every step). */
START_TEST(test_scaler_collapsed_is_no_calibration)
{
	struct trace trace;
	struct findings f;
	size_t calibrating = 0, repeated = 0;

	run_mode("scaler-collapse", &trace, &f);
	ck_assert_msg(findings_get(&f, "scaler-collapse"), "%s", describe(&f));
	for (size_t i = 0; i < f.count; i++) {
		const struct trace_finding *s = &f.items[i];
		if (strcmp(s->kind, "scaler-skipped-step"))
			continue;
		if (strstr(s->message, "while calibrating")) {
			ck_assert_int_eq(s->severity, FINDING_INFO);
			calibrating += s->count;
		} else {
			ck_assert_msg(strstr(s->message, "steps keep being "
							 "skipped"),
				      "%s", s->message);
			ck_assert_int_eq(s->severity, FINDING_WARNING);
			repeated += s->count;
		}
	}
	/* the 9 skips up to the collapse (its 8 reductions in a row follow
	 * the first update) calibrate; the 3 after it do not */
	ck_assert_uint_eq(calibrating, 9);
	ck_assert_uint_eq(repeated, 3);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* A normal f16 GradScaler start: the scaled backward mm overflows at
 * 65536, the scaler skips that step and lowers the scale.  No
 * fp16-overflow error (the overflow is the scaler's to handle), a
 * calibration info; the libamp event is still in the trace. */
START_TEST(test_scaler_start_overflow_not_error)
{
	struct trace trace;
	struct findings f;

	run_mode("scaler-start", &trace, &f);
	ck_assert_msg(!findings_get(&f, "fp16-overflow"), "%s", describe(&f));
	const struct trace_finding *s = findings_get(&f, "scaler-skipped-step");
	ck_assert_msg(s, "no scaler-skipped-step:%s", describe(&f));
	ck_assert_int_eq(s->severity, FINDING_INFO);
	const struct trace_event *e;
	ck_assert_uint_ge(diag_events(&trace, "fp16-overflow", &e), 1);
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* How many cast-underflow events an f32->f16 cast of `n` values gives:
 * `small` of them 5e-5 (below f16's smallest normal, 6.1e-5), the rest
 * `rest`. */
static int underflows(int n, int small, float rest)
{
	struct seen s = { 0 };
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_DIAG), on_diag, &s);
	float values[128];
	int64_t shape[1] = { n };

	ck_assert_int_le(n, 128);
	for (int i = 0; i < n; i++)
		values[i] = i < small ? 5e-5f : rest;
	amp_tensor *x = amp_from_data(1, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU,
				      values);
	amp_set_value_checks(true);
	amp_tensor *y = amp_to(x, AMP_DTYPE_F16);
	amp_set_value_checks(false);
	amp_hook_remove(hook);
	amp_tensor_free(x);
	amp_tensor_free(y);
	return s.diags;
}

/* Only material underflow is reported, 1 % of the values carrying 1 % of
 * the magnitude: one subnormal bias value among 64 (the f16 mlp's
 * fc1.bias: 1.6 % of the values, 1e-5 of the magnitude) is not, nor are
 * 20 % of the values next to large ones; 3 of 64 that carry 2.4 % of the
 * magnitude are, and 20 % that carry 11 %. */
START_TEST(test_diag_underflow_threshold)
{
	ck_assert_int_eq(underflows(64, 1, 0.05f), 0);
	ck_assert_int_eq(underflows(64, 3, 0.05f), 0);
	ck_assert_int_eq(underflows(100, 20, 10.0f), 0);
	ck_assert_int_eq(underflows(100, 0, 10.0f), 0);
	ck_assert_int_eq(underflows(64, 3, 1e-4f), 1);
	ck_assert_int_eq(underflows(100, 20, 1e-4f), 1);
}
END_TEST

/* The f16 mlp is healthy: its few subnormal bias values once gave a
 * cast-underflow warning; no finding of any kind now. */
START_TEST(test_sample_mlp_f16_clean)
{
	struct trace trace;
	struct findings f;

	run_sample("mlp", "--dtype f16", &trace, &f);
	ck_assert_msg(f.count == 0, "mlp --dtype f16 has findings:%s",
		      describe(&f));
	findings_free(&f);
	trace_free(&trace);
}
END_TEST

/* The lower-precision ops come from libamp's policy table at build time
 * (tracer/analysis/gen_low_precision_ops.c): sorted, unique, the matmul and
 * conv families of both devices' lists, and no op of another policy. */
START_TEST(test_low_precision_ops_from_policy)
{
	static const char *const expected[] = { "linear", "matmul", "mm",
						"bmm", "conv2d", "baddbmm",
						"prelu", "lstm_cell" };
	size_t n = finding_low_precision_op_count;

	ck_assert_uint_ge(n, sizeof expected / sizeof *expected);
	for (size_t i = 1; i < n; i++)
		ck_assert_int_lt(strcmp(finding_low_precision_ops[i - 1].name,
					finding_low_precision_ops[i].name), 0);
	for (size_t k = 0; k < sizeof expected / sizeof *expected; k++) {
		bool found = false;
		/* listed so in every version alike */
		unsigned every = (1u << finding_policy_table_count) - 1;
		for (size_t i = 0; i < n; i++)
			found |= !strcmp(finding_low_precision_ops[i].name,
					 expected[k]) &&
				 finding_low_precision_ops[i].versions == every;
		ck_assert_msg(found, "%s is not in the list", expected[k]);
	}
	for (size_t i = 0; i < n; i++) {
		ck_assert_str_ne(finding_low_precision_ops[i].name, "softmax");
		ck_assert_str_ne(finding_low_precision_ops[i].name, "add");
		ck_assert_uint_ne(finding_low_precision_ops[i].versions, 0);
	}
}
END_TEST

/* A markdown table cell: one line, every '|' escaped. */
static bool is_table_cell(const char *text)
{
	for (const char *c = text; *c; c++)
		if (*c == '\n' || (*c == '|' && (c == text || c[-1] != '\\')))
			return false;
	return text[0] != '\0';
}

START_TEST(test_kind_table)
{
	/* every kind has a row (the table is indexed by enum), a severity,
	 * a one-line fix and doc line, and a rule when amptrace finds it in
	 * the events; kinds producers write have none, but for a rule that
	 * reads their amp.diag events; a note (never a finding: nothing to
	 * fix) has no fix */
	for (int id = 0; id < FINDING_KIND_COUNT; id++) {
		const struct finding_kind *k = &finding_kinds[id];
		ck_assert_msg(k->name, "kind %d has no row", id);
		ck_assert_ptr_eq(finding_kind_lookup(k->name), k);
		if (k->note)
			ck_assert_msg(!k->fix && !k->each && !k->once,
				      "%s: a note is no finding", k->name);
		else
			ck_assert(k->fix && k->fix[0] && !strchr(k->fix, '\n'));
		ck_assert_msg(k->doc && is_table_cell(k->doc),
			      "%s: doc must be one line, '|' escaped", k->name);
		ck_assert_int_lt(k->severity, FINDING_SEVERITY_COUNT);
		ck_assert_int_lt(k->source, FINDING_SOURCE_COUNT);
		ck_assert_msg(!k->each == !k->reads,
			      "%s: an event rule and what it reads go together",
			      k->name);
		if (k->source == FINDING_FROM_EVENTS)
			ck_assert_msg(k->each || k->once, "%s has no rule",
				      k->name);
		else
			ck_assert_msg(!k->once && (!k->each ||
				      k->reads == FINDING_READS(TRACE_DIAG)),
				      "%s is written by a producer: its rule "
				      "may only read amp.diag events", k->name);
	}
	ck_assert_ptr_null(finding_kind_lookup("no-such-kind"));
	ck_assert_str_eq(finding_severity_name(FINDING_ERROR), "error");
}
END_TEST

/* ------------------------------------------------- policy-divergence */

/* A PyTorch trace of format `format`: `framework` in the header (NULL:
 * none), and `events` (JSON objects, comma-separated), loaded. */
static void load_torch_trace(const char *format, const char *framework,
			     const char *events, struct trace *t)
{
	char text[8192];
	struct trace_error err;

	snprintf(text, sizeof text,
		 "{\"amptrace\":{\"format\":\"%s\",\"generator\":\"amptrace "
		 "0.1.0\",\"command\":[\"python3\"],\"rank\":null,\"host\":"
		 "\"h\",\"monotonic_base_ns\":0,\"flush\":\"event\"%s%s%s},"
		 "\"traceEvents\":[%s],\"amptraceEnd\":{\"complete\":true}}\n",
		 format, framework ? ",\"framework\":\"" : "",
		 framework ? framework : "", framework ? "\"" : "", events);
	ck_assert_msg(trace_load_text("d.json", text, strlen(text), t, &err) == 0,
		      "%s", err.message);
}

/* A one-op PyTorch trace (format 1.1) and its findings. */
static void torch_trace(const char *framework, const char *events,
			struct trace *t, struct findings *f)
{
	load_torch_trace("1.1", framework, events, t);
	ck_assert_int_eq(findings_compute(t, f), 0);
}

/* mm with the autocast state `enabled` (true/false) at `depth`, and its
 * `policy` under that state. */
#define OP_MM(enabled, policy, depth, in, out) \
	"{\"name\":\"mm\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":2,\"pid\":1," \
	"\"tid\":1,\"dur\":1,\"args\":{\"op_id\":3,\"op\":\"mm\",\"overload\":" \
	"\"\",\"phase\":\"forward\",\"policy\":\"" \
	policy "\",\"device\":\"cpu\"," \
	"\"emulated\":false,\"autocast\":{\"enabled\":" #enabled ",\"device\":" \
	"\"cpu\",\"dtype\":\"bf16\",\"cache_enabled\":true,\"depth\":" #depth \
	",\"scope\":null},\"inputs\":[{\"tensor\":1,\"dtype\":\"" in "\"," \
	"\"shape\":[2,2]}],\"outputs\":[{\"tensor\":5,\"dtype\":\"" out "\"," \
	"\"shape\":[2,2]}],\"Input type\":[\"float\"],\"Input Dims\":[[2,2]]," \
	"\"External id\":3}}"
/* An op made with autocast off outside any region (op 1, tensor 1). */
#define OP_OFF \
	"{\"name\":\"randn\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":1," \
	"\"pid\":1,\"tid\":1,\"dur\":1,\"args\":{\"op_id\":1,\"op\":" \
	"\"randn\",\"overload\":\"\",\"phase\":\"forward\",\"policy\":" \
	"\"none\",\"device\":\"cpu\",\"emulated\":false,\"autocast\":{" \
	"\"enabled\":false,\"device\":\"cpu\",\"dtype\":\"bf16\"," \
	"\"cache_enabled\":true,\"depth\":0,\"scope\":null},\"inputs\":[]," \
	"\"outputs\":[{\"tensor\":1,\"dtype\":\"f32\",\"shape\":[2,2]}]," \
	"\"Input type\":[],\"Input Dims\":[],\"External id\":1}}"
#define JIT_CAST \
	"{\"name\":\"cast f32->bf16\",\"cat\":\"amp.cast\",\"ph\":\"X\"," \
	"\"ts\":1,\"pid\":1,\"tid\":1,\"dur\":1,\"args\":{\"op_id\":2,\"op\":" \
	"\"_autocast_to_reduced_precision\",\"phase\":\"forward\",\"arg\":0," \
	"\"tensor\":9,\"result\":1,\"from\":\"f32\",\"to\":\"bf16\",\"cache\":" \
	"\"uncacheable\",\"reason\":\"TorchScript\",\"bytes\":16,\"shape\":[2,2]}}"

START_TEST(test_divergence_no_region)
{
	static const char *const healthy[] = {
		/* the same op inside a region: as eager autocast does */
		OP_OFF "," OP_MM(true, "lower_precision_fp", 1, "f32", "bf16"),
		/* on from the thread's first op: a region opened before
		 * recording began (amptrace_torch.trace() inside autocast) */
		OP_MM(true, "lower_precision_fp", 0, "f32", "bf16"),
	};
	struct trace t;
	struct findings f;

	/* off, then on, with no region event between */
	torch_trace("torch 1.13.0a0 (policy table: 1.13)",
		    OP_OFF "," OP_MM(true, "lower_precision_fp", 0, "f32", "bf16"),
		    &t, &f);
	const struct trace_finding *d = findings_get(&f, "policy-divergence");
	ck_assert_ptr_nonnull(d);
	ck_assert_msg(strstr(d->message, "mm (op 3)") &&
		      strstr(d->message, "set_autocast_cpu_enabled"), "%s",
		      d->message);
	findings_free(&f);
	trace_free(&t);
	for (size_t i = 0; i < sizeof healthy / sizeof *healthy; i++) {
		torch_trace("torch 1.13.0a0 (policy table: 1.13)", healthy[i],
			    &t, &f);
		ck_assert_ptr_null(findings_get(&f, "policy-divergence"));
		findings_free(&f);
		trace_free(&t);
	}
}
END_TEST

/* A forward op `op` (id `id`) of process `pid`, made of nothing, with
 * autocast `enabled` and its `policy` under that state. */
#define FORWARD_OP(pid, id, op, enabled, policy) \
	"{\"name\":\"" op "\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":" #id \
	",\"pid\":" #pid ",\"tid\":1,\"dur\":1,\"args\":{\"op_id\":" #id \
	",\"op\":\"" op "\",\"overload\":\"\",\"phase\":\"forward\"," \
	"\"policy\":\"" policy "\",\"device\":\"cpu\",\"emulated\":false," \
	"\"autocast\":{\"enabled\":" #enabled ",\"device\":\"cpu\"," \
	"\"dtype\":\"bf16\",\"cache_enabled\":true,\"depth\":0,\"scope\":" \
	"null},\"inputs\":[],\"outputs\":[{\"tensor\":" #id ",\"dtype\":" \
	"\"f32\",\"shape\":[2,2]}],\"Input type\":[],\"Input Dims\":[]," \
	"\"External id\":" #id "}}"

/* autocast-never-enabled is about a process whose forward ops autocast
 * would have run in a lower precision: a process that trains with none
 * (a DDP rank without its autocast), not one that only makes tensors
 * for another (a DataLoader's worker; a Hogwild parent that builds the
 * shared model, whose share_memory() runs ops in no autocast). */
START_TEST(test_autocast_never_enabled_in_process)
{
	struct trace t;
	struct findings f;

	torch_trace("torch 2.13.0 (policy table: newest)",
		    FORWARD_OP(1, 1, "mm", true, "lower_precision_fp") ","
		    FORWARD_OP(2, 2, "mm", false, "none"), &t, &f);
	const struct trace_finding *d =
		findings_get(&f, "autocast-never-enabled");
	ck_assert_msg(d && d->pid == 2 && f.count == 1, "a rank without "
		      "autocast:%s", describe(&f));
	findings_free(&f);
	trace_free(&t);
	torch_trace("torch 2.13.0 (policy table: newest)",
		    FORWARD_OP(1, 1, "mm", true, "lower_precision_fp") ","
		    FORWARD_OP(2, 2, "randn", false, "none") ","
		    FORWARD_OP(2, 3, "_has_compatible_shallow_copy_type",
			       false, "none"), &t, &f);
	ck_assert_msg(f.count == 0, "a process making tensors:%s",
		      describe(&f));
	findings_free(&f);
	trace_free(&t);
}
END_TEST

/* A job of more processes than any fixed table would hold (a merged
 * trace of 100 ranks): the last of them, without autocast, is named. */
START_TEST(test_autocast_never_enabled_in_a_big_job)
{
	enum { PROCESSES = 100 };
	static const char op[] = FORWARD_OP(PID, 1, "mm", ENABLED,
					    "lower_precision_fp");
	size_t size = PROCESSES * (sizeof op + 8) + 512;
	char *events = malloc(size), *text = malloc(size);
	size_t n = 0;
	struct trace t;
	struct trace_error err;
	struct findings f;

	ck_assert_ptr_nonnull(events);
	ck_assert_ptr_nonnull(text);
	for (int pid = 1; pid <= PROCESSES; pid++) {
		char one[sizeof op + 8];
		snprintf(one, sizeof one, "%s", op);
		char *at = strstr(one, "\"pid\":PID");
		char *on = strstr(one, "\"enabled\":ENABLED");
		ck_assert(at && on);
		/* same lengths: "PID" and "ENABLED" padded with spaces */
		char digits[4];
		snprintf(digits, sizeof digits, "%3d", pid);
		memcpy(at + 6, digits, 3);
		memcpy(on + 10, pid < PROCESSES ? "true   " : "false  ", 7);
		n += (size_t)snprintf(events + n, size - n, "%s%s",
				      pid > 1 ? "," : "", one);
	}
	snprintf(text, size,
		 "{\"amptrace\":{\"format\":\"1.1\",\"generator\":"
		 "\"amptrace 0.1.0\",\"command\":[\"python3\"],\"rank\":"
		 "null,\"host\":\"h\",\"monotonic_base_ns\":0,\"flush\":"
		 "\"event\",\"framework\":\"torch 2.13.0 (policy table: "
		 "newest)\"},\"traceEvents\":[%s],\"amptraceEnd\":{"
		 "\"complete\":true}}\n", events);
	ck_assert_msg(trace_load_text("d.json", text, strlen(text), &t,
				      &err) == 0, "%s", err.message);
	ck_assert_int_eq(findings_compute(&t, &f), 0);
	const struct trace_finding *d =
		findings_get(&f, "autocast-never-enabled");
	ck_assert_msg(d && d->pid == PROCESSES && f.count == 1,
		      "the last of %d processes:%s", PROCESSES, describe(&f));
	findings_free(&f);
	trace_free(&t);
	free(events);
	free(text);
}
END_TEST

/* The PyTorch bridge's note of an FSDP policy (fsdp-mixed-precision,
 * FORMAT.md §3.7) on module `module` of process `pid`, its dtype keys
 * `keys`. */
#define FSDP_NOTE_ON(pid, module, keys) \
	"{\"name\":\"fsdp-mixed-precision\",\"cat\":\"amp.diag\",\"ph\":" \
	"\"i\",\"ts\":0.5,\"pid\":" #pid ",\"tid\":1,\"s\":\"t\",\"args\":{" \
	"\"kind\":\"fsdp-mixed-precision\",\"message\":\"FSDP's\"," \
	"\"module\":\"" module "\",\"module_class\":\"FSDPNet\"" keys "}}"
#define FSDP_NOTE(pid, keys) FSDP_NOTE_ON(pid, "", keys)
#define FSDP_BF16 ",\"param_dtype\":\"bf16\",\"reduce_dtype\":\"f32\""

/* FORWARD_OP's mm without autocast, run in module `module`. */
#define MM_IN(pid, id, module) \
	"{\"name\":\"mm\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":" #id \
	",\"pid\":" #pid ",\"tid\":1,\"dur\":1,\"args\":{\"op_id\":" #id \
	",\"op\":\"mm\",\"overload\":\"\",\"module\":\"" module "\"," \
	"\"module_class\":\"Linear\",\"phase\":\"forward\"," \
	"\"policy\":\"none\",\"device\":\"cpu\",\"emulated\":false," \
	"\"autocast\":{\"enabled\":false,\"device\":\"cpu\"," \
	"\"dtype\":\"bf16\",\"cache_enabled\":true,\"depth\":0,\"scope\":" \
	"null},\"inputs\":[],\"outputs\":[{\"tensor\":" #id ",\"dtype\":" \
	"\"f32\",\"shape\":[2,2]}],\"Input type\":[],\"Input Dims\":[]," \
	"\"External id\":" #id "}}"

/* A process whose FSDP policy casts its parameters to bf16 ran its
 * forward low on purpose, without autocast: not named; one whose policy
 * leaves them in theirs (param_dtype absent: a reduce_dtype alone) is.
 * The notes are no findings of their own. */
START_TEST(test_autocast_never_enabled_spares_fsdp_policies)
{
	struct trace t;
	struct findings f;

	load_torch_trace("1.4", "torch 2.13.0 (policy table: newest)",
			 FSDP_NOTE(1, FSDP_BF16) "," MM_IN(1, 1, "0.fc") ","
			 FSDP_NOTE(2, ",\"reduce_dtype\":\"bf16\"") ","
			 FORWARD_OP(2, 2, "mm", false, "none"), &t);
	ck_assert_int_eq(findings_compute(&t, &f), 0);
	const struct trace_finding *d =
		findings_get(&f, "autocast-never-enabled");
	ck_assert_msg(d && d->pid == 2 && f.count == 1, "only the process "
		      "FSDP left in f32:%s", describe(&f));
	findings_free(&f);
	trace_free(&t);
}
END_TEST

/* A policy spares only a process whose forward ran in its modules: one
 * lowering a head that never ran (its ops in "body", "header", outside
 * any module) spares nothing; the op of a module under the policy's
 * ("head.0", and the one in "head" itself) does, and one of a module
 * around it ("", a torch.compile'd layer's ops being its caller's). */
START_TEST(test_autocast_never_enabled_fsdp_modules_not_running)
{
	struct trace t;
	struct findings f;

	load_torch_trace("1.4", "torch 2.13.0 (policy table: newest)",
			 FSDP_NOTE_ON(1, "head", FSDP_BF16) ","
			 MM_IN(1, 1, "body") "," MM_IN(1, 2, "header") ","
			 FORWARD_OP(1, 3, "mm", false, "none") ","
			 FSDP_NOTE_ON(2, "head", FSDP_BF16) ","
			 MM_IN(2, 4, "body") "," MM_IN(2, 5, "head.0") ","
			 FSDP_NOTE_ON(3, "head", FSDP_BF16) ","
			 MM_IN(3, 6, "head") ","
			 FSDP_NOTE_ON(4, "layers.0", FSDP_BF16) ","
			 MM_IN(4, 7, ""), &t);
	ck_assert_int_eq(findings_compute(&t, &f), 0);
	const struct trace_finding *d =
		findings_get(&f, "autocast-never-enabled");
	ck_assert_msg(d && d->pid == 1 && f.count == 1, "only the process "
		      "whose lowered head ran nothing:%s", describe(&f));
	findings_free(&f);
	trace_free(&t);
}
END_TEST

/* An op on thread `tid` at `ts`: op `op` (id `id`) with autocast
 * `enabled`, from tensor `in` to tensor `out`. */
#define OP_ON(tid, ts, id, op, enabled, depth, in, out) \
	"{\"name\":\"" op "\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":" #ts \
	",\"pid\":1,\"tid\":" #tid ",\"dur\":1,\"args\":{\"op_id\":" #id \
	",\"op\":\"" op "\",\"overload\":\"\",\"phase\":\"forward\"," \
	"\"policy\":\"lower_precision_fp\",\"device\":\"cpu\",\"emulated\":" \
	"false,\"autocast\":{\"enabled\":" #enabled ",\"device\":\"cpu\"," \
	"\"dtype\":\"bf16\",\"cache_enabled\":true,\"depth\":" #depth \
	",\"scope\":null},\"inputs\":[{\"tensor\":" #in ",\"dtype\":\"f32\"," \
	"\"shape\":[2,2]}],\"outputs\":[{\"tensor\":" #out ",\"dtype\":" \
	"\"f32\",\"shape\":[2,2]}],\"Input type\":[\"float\"],\"Input Dims\":" \
	"[[2,2]],\"External id\":" #id "}}"

/* A thread whose first event is a GradScaler `scale` (which run's kept
 * trace leaves out, findings_event_read) was there before the region
 * another thread opened next: its findings are those of the trace run
 * keeps, where that thread starts at its first op, inside the region. */
START_TEST(test_thread_born_at_an_unread_event)
{
	struct trace t, kept;
	struct findings full, found;

	torch_trace("torch 1.13.0a0 (policy table: 1.13)",
		    "{\"name\":\"scaler scale\",\"cat\":\"amp.scaler\",\"ph\":"
		    "\"i\",\"s\":\"t\",\"ts\":1,\"pid\":1,\"tid\":2,\"args\":{"
		    "\"what\":\"scale\",\"scaler_id\":1,\"scale\":65536.0,"
		    "\"found_inf\":false,\"step_skipped\":false}},"
		    "{\"name\":\"autocast(cpu, bf16)\",\"cat\":\"amp.scope\","
		    "\"ph\":\"B\",\"ts\":2,\"pid\":1,\"tid\":1,\"args\":{"
		    "\"scope\":null,\"depth\":1,\"device\":\"cpu\",\"dtype\":"
		    "\"bf16\",\"enabled\":true,\"cache_enabled\":true}},"
		    OP_ON(1, 3, 1, "relu", true, 1, 4, 5) ","
		    OP_ON(2, 4, 2, "mm", false, 0, 5, 6) ","
		    "{\"name\":\"autocast(cpu, bf16)\",\"cat\":\"amp.scope\","
		    "\"ph\":\"E\",\"ts\":10,\"pid\":1,\"tid\":1,\"args\":{"
		    "\"depth\":1}}",
		    &t, &full);
	events_where(&t, findings_event_read, &kept);
	ck_assert_int_eq(findings_compute(&kept, &found), 0);
	ck_assert_msg(!findings_get(&full, "autocast-off-in-thread") ==
			      !findings_get(&found, "autocast-off-in-thread"),
		      "autocast-off-in-thread %s in the trace, %s in the trace "
		      "run keeps:%s", findings_get(&full, "autocast-off-in-"
		      "thread") ? "found" : "not found",
		      findings_get(&found, "autocast-off-in-thread")
			      ? "found" : "not found", describe(&found));
	findings_free(&found);
	findings_free(&full);
	free(kept.events);
	trace_free(&t);
}
END_TEST

/* A GradScaler event: `what` of scaler `id` at `ts`, its step skipped
 * or not (into text + *n). */
/* The head of a trace of scaler events, its length. */
static size_t scaler_trace_head(char *text, size_t size)
{
	return (size_t)snprintf(
		text, size,
		"{\"amptrace\":{\"format\":\"1.1\",\"generator\":\"amptrace "
		"0.1.0\",\"command\":[\"python3\"],\"rank\":null,\"host\":\"h\","
		"\"monotonic_base_ns\":0,\"flush\":\"event\"},\"traceEvents\":[");
}

/* A GradScaler event of process `pid` (its first: ts 1). */
static void scaler_event_of(char *text, size_t size, size_t *n, int ts,
			    int pid, int scaler, int optimizer,
			    const char *what, bool skipped)
{
	*n += (size_t)snprintf(text + *n, size - *n,
			       "%s{\"name\":\"scaler %s\",\"cat\":\"amp.scaler\","
			       "\"ph\":\"i\",\"s\":\"t\",\"ts\":%d,\"pid\":%d,"
			       "\"tid\":1,\"args\":{\"what\":\"%s\",\"scaler_id\":"
			       "%d,\"optimizer_id\":%d,\"scale\":65536.0,"
			       "\"found_inf\":%s,\"step_skipped\":%s}}",
			       ts > 1 ? "," : "", what, ts, pid, what, scaler,
			       optimizer, skipped ? "true" : "false",
			       skipped ? "true" : "false");
	ck_assert_uint_lt(*n, size);
}

static void scaler_event(char *text, size_t size, size_t *n, int ts, int id,
			 const char *what, bool skipped)
{
	scaler_event_of(text, size, n, ts, 1, id, id, what, skipped);
}

/* How the scalers are numbered (a skip's site) does not hang on a
 * `scale` event run's kept trace leaves out: 31 scalers updated, then
 * scaler 100's scale, scaler 101's skipped step, scaler 100's; the same
 * skips reported in the trace and as run keeps it (once, only 32
 * scalers had a state, and which got the last hung on it). */
START_TEST(test_last_scaler_state_not_claimed_by_unread_event)
{
	static char text[32768];
	struct trace t;
	struct findings full;
	struct trace_error err;
	size_t n = scaler_trace_head(text, sizeof text);

	scaler_event(text, sizeof text, &n, 1, 100, "scale", false);
	scaler_event(text, sizeof text, &n, 2, 101, "step", true);
	scaler_event(text, sizeof text, &n, 3, 100, "step", true);
	for (int id = 1; id <= 31; id++)
		scaler_event(text, sizeof text, &n, 10 + id, id, "update", false);
	n += (size_t)snprintf(text + n, sizeof text - n,
			      "],\"amptraceEnd\":{\"complete\":true}}\n");
	ck_assert_uint_lt(n, sizeof text);
	ck_assert_msg(trace_load_text("s.json", text, n, &t, &err) == 0, "%s",
		      err.message);
	ck_assert_int_eq(findings_compute(&t, &full), 0);
	ck_assert_ptr_nonnull(findings_get(&full, "scaler-skipped-step"));
	check_trimmed_alike(&t, &full, "33 scalers");
	findings_free(&full);
	trace_free(&t);
}
END_TEST

/* Skipped steps, each of its own optimizer: 34 of one GradScaler; of 33
 * GradScalers in 33 processes (a job's ranks); of 40 in one process.
 * Every GradScaler and optimizer is followed (not the trace's first 32:
 * the 33rd rank's skip was not found), and each skip is a finding of its
 * own (the site numbers them by their order in the process,
 * rank_findings.h). */
static const struct {
	int skips;
	bool one_process, one_scaler;
} skip_layouts[] = { { 34, true, true }, { 33, false, false },
		     { 40, true, false } };

START_TEST(test_every_scaler_and_optimizer_followed)
{
	static char text[32768];
	struct trace t;
	struct findings found;
	struct trace_error err;
	size_t n = scaler_trace_head(text, sizeof text), skips = 0;

	for (int k = 1; k <= skip_layouts[_i].skips; k++)
		scaler_event_of(text, sizeof text, &n, k,
				skip_layouts[_i].one_process ? 1 : k,
				skip_layouts[_i].one_scaler ? 7 : 100 + k,
				1000 + k, "step", true);
	n += (size_t)snprintf(text + n, sizeof text - n,
			      "],\"amptraceEnd\":{\"complete\":true}}\n");
	ck_assert_uint_lt(n, sizeof text);
	ck_assert_msg(trace_load_text("s.json", text, n, &t, &err) == 0, "%s",
		      err.message);
	ck_assert_int_eq(findings_compute(&t, &found), 0);
	for (size_t i = 0; i < found.count; i++)
		skips += !strcmp(found.items[i].kind, "scaler-skipped-step");
	ck_assert_uint_eq(skips, (size_t)skip_layouts[_i].skips);
	findings_free(&found);
	trace_free(&t);
}
END_TEST

START_TEST(test_divergence_jit_cast)
{
	struct trace t;
	struct findings f;

	torch_trace(NULL, JIT_CAST "," OP_MM(false, "none", 0, "bf16", "bf16"), &t,
		    &f);
	const struct trace_finding *d = findings_get(&f, "policy-divergence");
	ck_assert_ptr_nonnull(d);
	ck_assert_msg(strstr(d->message, "mm's input was cast f32->bf16") &&
		      strstr(d->message, "no region"), "%s", d->message);
	findings_free(&f);
	trace_free(&t);
	/* bf16 inputs the program cast itself: no TorchScript cast */
	torch_trace(NULL, OP_MM(false, "none", 0, "bf16", "bf16"), &t, &f);
	ck_assert_ptr_null(findings_get(&f, "policy-divergence"));
	findings_free(&f);
	trace_free(&t);
}
END_TEST

/* ------------------------------------------------- cache-other-dtype */

/* Op `id` (mm) at time `ts` in a region of `dtype` named `scope`: input
 * tensor `in` of `in_dtype`, output `out`, `extra` its error keys ("" or
 * ",\"status\":-1,\"error\":\"...\""). */
#define REGION_MM(id, ts, dtype, scope, in, in_dtype, out, extra) \
	REGION_MM_ON(1, id, ts, dtype, scope, in, in_dtype, out, extra)
/* REGION_MM on thread `tid`. */
#define REGION_MM_ON(tid, id, ts, dtype, scope, in, in_dtype, out, extra) \
	"{\"name\":\"mm\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":" #ts \
	",\"pid\":1,\"tid\":" #tid ",\"dur\":1,\"args\":{\"op_id\":" #id ",\"op\":" \
	"\"mm\",\"overload\":\"\",\"phase\":\"forward\",\"policy\":" \
	"\"lower_precision_fp\",\"device\":\"cpu\",\"emulated\":false," \
	"\"autocast\":{\"enabled\":true,\"device\":\"cpu\",\"dtype\":\"" \
	dtype "\",\"cache_enabled\":true,\"depth\":1,\"scope\":\"" scope \
	"\"},\"inputs\":[{\"tensor\":" #in ",\"dtype\":\"" in_dtype "\"," \
	"\"shape\":[2,2]}],\"outputs\":[{\"tensor\":" #out ",\"dtype\":\"" \
	in_dtype "\",\"shape\":[2,2]}],\"Input type\":[\"float\"]," \
	"\"Input Dims\":[[2,2]],\"External id\":" #id extra "}}"
/* The weight's (tensor 1's) cast to f16, tensor 7, for op `id`: `cache`
 * miss or hit. */
#define WEIGHT_CAST(id, ts, cache) CAST_ON(1, id, ts, 0, 1, 7, cache)
/* The cast to f16 of tensor `source`, argument `arg` of op `id` on thread
 * `tid`, into tensor `result`. */
#define CAST_ON(tid, id, ts, arg, source, result, cache) \
	"{\"name\":\"cast f32->f16\",\"cat\":\"amp.cast\",\"ph\":\"X\"," \
	"\"ts\":" #ts ",\"pid\":1,\"tid\":" #tid ",\"dur\":0,\"args\":{" \
	"\"op_id\":" #id ",\"op\":\"mm\",\"phase\":\"forward\",\"arg\":" \
	#arg ",\"tensor\":" #source ",\"result\":" #result ",\"from\":\"f32\",\"to\":\"f16\",\"cache\":\"" cache \
	"\",\"reason\":\"cached\",\"bytes\":0,\"shape\":[2,2],\"name\":" \
	"\"fc.weight\",\"requires_grad\":true,\"leaf\":true}}"
/* mm (op 2) in an f16 region casts the weight; mm (op 3), in a region
 * of `dtype` nested in it, gets that copy from the cache. */
#define CACHED_TWICE(dtype, extra) \
	WEIGHT_CAST(2, 2, "miss") "," \
	REGION_MM(2, 2, "f16", "outer", 7, "f16", 8, "") "," \
	WEIGHT_CAST(3, 4, "hit") "," \
	REGION_MM(3, 4, dtype, "inner", 7, "f16", 9, extra)

/* A job's ranks' alike findings listed once, the lowest rank's; a
 * DataLoader worker's beside its rank's apart, folded with the other
 * ranks' workers'; a process's without a rank, another site's or
 * another severity's apart, and how each rank ended (rank_findings.h). */
START_TEST(test_rank_findings_fold)
{
	/* pid 10 rank 0, 11 its worker, 20 rank 1, 21 its worker, 30 named
	 * without a rank; 40 named by nothing (group 0) */
	struct process_group processes[] = { { 10, 1 }, { 11, 1 }, { 20, 2 },
					     { 21, 2 }, { 30, 3 } };
	int rank_of_group[] = { -1, 0, 1, -1 };
	int64_t process_of_group[] = { 0, 10, 20, 30 };
	struct trace_ranks ranks = { processes, 5, rank_of_group,
				     process_of_group, 4 };
	struct { const char *kind, *site; int64_t pid; size_t count;
		 enum finding_severity severity; } made[] = {
		{ "stale-cache", "a", 20, 2, FINDING_WARNING },
		{ "stale-cache", "a", 10, 3, FINDING_WARNING },
		{ "stale-cache", "a", 11, 1, FINDING_WARNING },
		{ "stale-cache", "a", 30, 1, FINDING_WARNING },
		{ "stale-cache", "a", 40, 1, FINDING_WARNING },
		{ "stale-cache", "b", 20, 1, FINDING_WARNING },
		{ "scaler-skipped-step", "a", 10, 1, FINDING_INFO },
		{ "scaler-skipped-step", "a", 20, 1, FINDING_WARNING },
		{ "scaler-skipped-step", "c", 20, 4, FINDING_INFO },
		{ "scaler-skipped-step", "c", 10, 4, FINDING_INFO },
		/* how each rank ended: its own, even alike */
		{ "process-died", "", 10, 1, FINDING_ERROR },
		{ "process-died", "", 20, 1, FINDING_ERROR },
		/* rank 1's worker's: into rank 0's worker's */
		{ "stale-cache", "a", 21, 1, FINDING_WARNING },
	};
	enum { N = sizeof made / sizeof *made };
	struct trace_finding findings[N];
	struct { size_t finding; int ranks; size_t count; bool alike; }
	want[] = {
		{ 1, 2, 5, false }, { 2, 2, 2, true }, { 3, 1, 1, true },
		{ 4, 1, 1, true }, { 5, 1, 1, true }, { 6, 1, 1, true },
		{ 7, 1, 1, true }, { 9, 2, 8, true }, { 10, 1, 1, true },
		{ 11, 1, 1, true },
	};
	/* per finding: the item it is listed as */
	size_t of[N] = { 0, 0, 1, 2, 3, 4, 5, 6, 7, 7, 8, 9, 1 };
	struct rank_findings listed;

	for (size_t i = 0; i < N; i++) {
		findings[i] = (struct trace_finding){
			.kind = made[i].kind, .severity = made[i].severity,
			.count = made[i].count, .pid = made[i].pid,
		};
		snprintf(findings[i].site, sizeof findings[i].site, "%s",
			 made[i].site);
	}
	ck_assert(rank_findings_fold(findings, N, &ranks, &listed));
	ck_assert_uint_eq(listed.count, sizeof want / sizeof *want);
	for (size_t i = 0; i < listed.count; i++) {
		ck_assert_uint_eq(listed.items[i].finding, want[i].finding);
		ck_assert_int_eq(listed.items[i].ranks, want[i].ranks);
		ck_assert_uint_eq(listed.items[i].count, want[i].count);
		ck_assert(listed.items[i].alike == want[i].alike);
	}
	for (size_t i = 0; i < N; i++)
		ck_assert_uint_eq(listed.of[i], of[i]);
	rank_findings_free(&listed);
	ck_assert(rank_findings_fold(findings, 0, &ranks, &listed));
	ck_assert_uint_eq(listed.count, 0);
	rank_findings_free(&listed);
}
END_TEST

START_TEST(test_cache_other_dtype)
{
	struct trace t;
	struct findings f;

	torch_trace("torch 2.13.0 (policy table: newest)",
		    CACHED_TWICE("bf16", ""), &t, &f);
	const struct trace_finding *d = findings_get(&f, "cache-other-dtype");
	ck_assert_msg(d, "none:%s", describe(&f));
	ck_assert_msg(strstr(d->message, "mm (op 3) in the bf16 autocast region "
				       "'inner' ran in f16, not bf16") &&
		      strstr(d->message, "tensor 1 'fc.weight'") &&
		      strstr(d->message, "made for mm (op 2) in the f16 "
				       "autocast region 'outer'"), "%s",
		      d->message);
	ck_assert_int_eq(d->severity, FINDING_WARNING);
	ck_assert_uint_eq(d->op_id, 3);
	findings_free(&f);
	trace_free(&t);
	/* op 3's two hits with thread 2's between them: one occurrence of
	 * op 3 (and one of thread 2's op, its region another site) */
#define TWO_THREADS_NESTED(inner, inner2) \
	CAST_ON(1, 2, 2, 0, 1, 7, "miss") "," \
	CAST_ON(1, 2, 2, 1, 11, 17, "miss") "," \
	REGION_MM(2, 2, "f16", "outer", 7, "f16", 8, "") "," \
	CAST_ON(2, 12, 3, 0, 21, 27, "miss") "," \
	REGION_MM_ON(2, 12, 3, "f16", "outer2", 27, "f16", 28, "") "," \
	CAST_ON(1, 3, 4, 0, 1, 7, "hit") "," \
	CAST_ON(2, 13, 4, 0, 21, 27, "hit") "," \
	CAST_ON(1, 3, 4, 1, 11, 17, "hit") "," \
	REGION_MM(3, 4, "bf16", inner, 7, "f16", 9, "") "," \
	REGION_MM_ON(2, 13, 4, "bf16", inner2, 27, "f16", 29, "")
	torch_trace("torch 2.13.0 (policy table: newest)",
		    TWO_THREADS_NESTED("inner", "inner2"), &t, &f);
	ck_assert_msg(f.count == 2 && f.items[0].count == 1 &&
		      f.items[1].count == 1, "interleaved:%s", describe(&f));
	findings_free(&f);
	trace_free(&t);
	/* the same, both inner regions one, named longer than a finding's
	 * site keeps: the two ops are one site, one finding */
#define LONG_SCOPE "models/a_model_whose_path_is_long/and_longer/" \
	"still_longer_than_the_site_a_finding_keeps/transformer_block.py:" \
	"1234 (TransformerBlock.forward, the feed-forward part of it)"
	torch_trace("torch 2.13.0 (policy table: newest)",
		    TWO_THREADS_NESTED(LONG_SCOPE, LONG_SCOPE), &t, &f);
#undef LONG_SCOPE
#undef TWO_THREADS_NESTED
	ck_assert_msg(f.count == 1 && f.items[0].count == 2,
		      "one long site:%s", describe(&f));
	findings_free(&f);
	trace_free(&t);
	/* a nested region of the cast's own dtype: the cache as meant */
	torch_trace("torch 2.13.0 (policy table: newest)",
		    CACHED_TWICE("f16", ""), &t, &f);
	ck_assert_msg(f.count == 0, "same dtype:%s", describe(&f));
	findings_free(&f);
	trace_free(&t);
	/* the op failed on it: op-error's, not a second finding */
	torch_trace("torch 2.13.0 (policy table: newest)",
		    CACHED_TWICE("bf16", ",\"status\":-1,\"error\":\"raised\""),
		    &t, &f);
	ck_assert_msg(!findings_get(&f, "cache-other-dtype") &&
		      findings_get(&f, "op-error"), "failed:%s", describe(&f));
	findings_free(&f);
	trace_free(&t);
}
END_TEST

/* ------------------------------------ a step cut short in full detail */

#define AUTOCAST_OFF_ARG \
	"\"autocast\":{\"enabled\":false,\"device\":\"cpu\",\"dtype\":" \
	"\"bf16\",\"cache_enabled\":true,\"depth\":0,\"scope\":null},"

/* Process 1's step 0, ended by its optimizer at 10 µs (a backward op in
 * it), then `after`, then `died` ("" or DIED): the steps found. */
static void steps_of(const char *after, const char *died,
		     struct trace *t, struct trace_steps *steps)
{
	char events[2048];

	snprintf(events, sizeof events,
		 "{\"name\":\"mm\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":5,"
		 "\"pid\":1,\"tid\":1,\"dur\":1,\"args\":{\"op_id\":1,\"op\":"
		 "\"mm\",\"overload\":\"\",\"phase\":\"backward\",\"policy\":"
		 "\"none\",\"device\":\"cpu\",\"emulated\":false," AUTOCAST_OFF_ARG
		 "\"inputs\":[],\"outputs\":[],\"Input type\":[],"
		 "\"Input Dims\":[],\"External id\":1}},"
		 "{\"name\":\"step 0\",\"cat\":\"amp.step\",\"ph\":\"X\",\"ts\":0,"
		 "\"dur\":10,\"pid\":1,\"tid\":0,\"args\":{\"step\":0,\"marker\":"
		 "\"optimizer step\",\"detail\":true}}%s%s", after, died);
	load_torch_trace("1.4", NULL, events, t);
	ck_assert_int_eq(trace_steps_find(t, steps), 0);
	check_streamed_alike(t, "steps_of");
}

/* After step 0: a cast (training began: step 1), or a forward op (not
 * training: no step); the process's death. */
#define CAST_AFTER CAST_ON(1, 2, 12, 0, 1, 7, "miss")
#define FORWARD_AFTER \
	",{\"name\":\"relu\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":12," \
	"\"pid\":1,\"tid\":1,\"dur\":1,\"args\":{\"op_id\":3,\"op\":\"relu\"," \
	"\"overload\":\"\",\"phase\":\"forward\",\"policy\":\"none\"," \
	"\"device\":\"cpu\",\"emulated\":false," AUTOCAST_OFF_ARG \
	"\"inputs\":[],\"outputs\":[],\"Input type\":[]," \
	"\"Input Dims\":[],\"External id\":3}}"
#define DIED \
	",{\"name\":\"process-died\",\"cat\":\"amp.diag\",\"ph\":\"i\"," \
	"\"ts\":20,\"pid\":1,\"tid\":0,\"s\":\"p\",\"args\":{\"kind\":" \
	"\"process-died\",\"message\":\"the process died (killed by " \
	"SIGKILL)\"}}"

/* A process that died in a step recorded in full detail, its training
 * begun and the step not ended, cut it short; not one that exited, nor
 * one that died before its next step's training began. */
START_TEST(test_steps_cut_short_in_full_detail)
{
	struct trace t;
	struct trace_steps steps;

	steps_of("," CAST_AFTER, DIED, &t, &steps);
	ck_assert_int_eq(steps.nsteps, 2);
	ck_assert_msg(steps.ncut_short == 1 && steps.cut_short[0] == 1 &&
		      !steps.aggregated[1], "died in step 1: %d cut short",
		      steps.ncut_short);
	trace_steps_free(&steps);
	trace_free(&t);
	steps_of("," CAST_AFTER, "", &t, &steps);
	ck_assert_int_eq(steps.nsteps, 2);
	ck_assert_msg(steps.ncut_short == 0, "exited in step 1: cut short");
	trace_steps_free(&steps);
	trace_free(&t);
	steps_of(FORWARD_AFTER, DIED, &t, &steps);
	ck_assert_int_eq(steps.nsteps, 1);
	ck_assert_msg(steps.ncut_short == 0, "died between steps: cut short");
	trace_steps_free(&steps);
	trace_free(&t);
}
END_TEST
#undef CAST_AFTER
#undef FORWARD_AFTER
#undef DIED
#undef AUTOCAST_OFF_ARG

/* ----------------------------------- a dtype error raised through an op */

/* Op `id` named `name` from `ts` for `dur` µs, failed, with autocast off:
 * `inputs` its inputs' JSON, `types` and `dims` their profiler keys. */
#define FAILED_OP(id, name, ts, dur, inputs, types, dims) \
	"{\"name\":\"" name "\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":" #ts \
	",\"pid\":1,\"tid\":1,\"dur\":" #dur ",\"args\":{\"op_id\":" #id \
	",\"op\":\"" name "\",\"overload\":\"\",\"phase\":\"backward\"," \
	"\"policy\":\"none\",\"device\":\"cpu\",\"emulated\":false," \
	"\"autocast\":{\"enabled\":false,\"device\":\"cpu\",\"dtype\":" \
	"\"bf16\",\"cache_enabled\":true,\"depth\":0,\"scope\":null}," \
	"\"inputs\":[" inputs "],\"outputs\":[],\"Input type\":[" types \
	"],\"Input Dims\":[" dims "],\"External id\":" #id ",\"status\":-1," \
	"\"error\":\"raised an exception\"}}"
#define MIXED_INPUTS \
	"{\"tensor\":1,\"dtype\":\"bf16\",\"shape\":[2,2]},{\"tensor\":2," \
	"\"dtype\":\"f32\",\"shape\":[2,2]}"
#define MIXED_TYPES "\"c10::BFloat16\",\"float\""
#define MIXED_DIMS "[2,2],[2,2]"
/* An op of the thread that ran after the mm, inside the Function's
 * backward (an except clause's). */
#define OK_OP \
	"{\"name\":\"add\",\"cat\":\"amp.op\",\"ph\":\"X\",\"ts\":7,\"pid\":1," \
	"\"tid\":1,\"dur\":1,\"args\":{\"op_id\":5,\"op\":\"add\",\"overload\":" \
	"\"Tensor\",\"phase\":\"backward\",\"policy\":\"none\",\"device\":" \
	"\"cpu\",\"emulated\":false,\"autocast\":{\"enabled\":false," \
	"\"device\":\"cpu\",\"dtype\":\"bf16\",\"cache_enabled\":true," \
	"\"depth\":0,\"scope\":null},\"inputs\":[],\"outputs\":[]," \
	"\"Input type\":[],\"Input Dims\":[],\"External id\":5}}"
/* The bridge's text of the exception that ended the thread, on the
 * Function's backward (op 3). */
#define RAISED_DIAG \
	"{\"name\":\"op-error\",\"cat\":\"amp.diag\",\"ph\":\"i\",\"ts\":20," \
	"\"pid\":1,\"tid\":1,\"s\":\"t\",\"args\":{\"kind\":\"op-error\"," \
	"\"message\":\"ProjectBackward (op 3) failed: RuntimeError: expected " \
	"m1 and m2 to have the same dtype\",\"op_id\":3}}"

START_TEST(test_dtype_error_raised_through)
{
	struct trace t;
	struct findings f;

	/* mm failed on mixed dtypes inside the Function's backward, which
	 * raised its exception: one finding, with torch's text */
	torch_trace(NULL, FAILED_OP(4, "mm", 5, 1, MIXED_INPUTS, MIXED_TYPES,
				    MIXED_DIMS) ","
		    FAILED_OP(3, "ProjectBackward", 4, 10, "", "", "") ","
		    RAISED_DIAG, &t, &f);
	const struct trace_finding *d = findings_get(&f, "dtype-mismatch");
	ck_assert_msg(d && f.count == 1, "raised through:%s", describe(&f));
	ck_assert_uint_eq(d->op_id, 4);
	ck_assert_msg(strstr(d->message, "expected m1 and m2 to have the "
				       "same dtype)"), "%s", d->message);
	findings_free(&f);
	trace_free(&t);
	/* another op ran after the mm: the backward's failure may be its
	 * own, an op-error beside the mm's dtype-mismatch */
	torch_trace(NULL, FAILED_OP(4, "mm", 5, 1, MIXED_INPUTS, MIXED_TYPES,
				    MIXED_DIMS) "," OK_OP ","
		    FAILED_OP(3, "ProjectBackward", 4, 10, "", "", "") ","
		    RAISED_DIAG, &t, &f);
	ck_assert_msg(findings_get(&f, "dtype-mismatch") &&
		      findings_get(&f, "op-error") && f.count == 2,
		      "op between:%s", describe(&f));
	findings_free(&f);
	trace_free(&t);
	/* the mm failed before the backward began (its error caught), the
	 * backward's own failure follows with no op between: a separate
	 * op-error, not the mm's raised through it */
	torch_trace(NULL, FAILED_OP(4, "mm", 1, 1, MIXED_INPUTS, MIXED_TYPES,
				    MIXED_DIMS) ","
		    FAILED_OP(3, "ProjectBackward", 4, 10, "", "", "") ","
		    RAISED_DIAG, &t, &f);
	d = findings_get(&f, "dtype-mismatch");
	ck_assert_msg(d && findings_get(&f, "op-error") && f.count == 2,
		      "mm before it:%s", describe(&f));
	ck_assert_msg(!strstr(d->message, "expected m1 and m2"),
		      "the backward's text is not the mm's: %s", d->message);
	findings_free(&f);
	trace_free(&t);
}
END_TEST

/* The table a trace's ops are judged by comes from its framework. */
START_TEST(test_policy_table_of_trace)
{
	static const struct {
		const char *framework, *table;
	} frameworks[] = {
		{ "torch 1.13.0a0 (policy table: 1.13)", "1.13" },
		{ "torch 2.13.0+cpu (policy table: 2.13)", "2.13" },
		{ "torch 2.9.0 (policy table: 2.13, none for torch 2.9.0)",
		  "2.13" },
		{ "torch 2.14.1+cu130 (policy table: 2.14)", "2.14" },
		/* written before 2.13 had a table: the newest */
		{ "torch 2.9.0 (policy table: newest, none for torch 2.9.0 yet)",
		  "2.14" },
		{ "libamp 0.1.0", "2.14" },
		{ NULL, "2.14" },
	};
	for (size_t i = 0; i < sizeof frameworks / sizeof *frameworks; i++) {
		struct trace t;
		struct findings f;
		torch_trace(frameworks[i].framework, OP_MM(false, "none", 1, "f32", "f32"),
			    &t, &f);
		ck_assert_str_eq(finding_policy_table_name(
					 findings_policy_table(&t)),
				 frameworks[i].table);
		if (frameworks[i].framework)
			ck_assert_str_eq(findings_framework(&t),
					 frameworks[i].framework);
		else
			ck_assert_ptr_null(findings_framework(&t));
		findings_free(&f);
		trace_free(&t);
	}
}
END_TEST

static Suite *findings_suite(void)
{
	Suite *s = suite_create("findings");
	TCase *kinds = tcase_create("kinds");
	TCase *samples = tcase_create("samples");
	TCase *lib = tcase_create("value-checks");
	int n = (int)(sizeof cases / sizeof cases[0]);

	tcase_add_unchecked_fixture(kinds, make_dir, remove_dir);
	tcase_add_loop_test(kinds, test_mistake_found, 0, n);
	tcase_add_loop_test(kinds, test_fix_clean, 0, n);
	tcase_add_loop_test(kinds, test_found_in_aggregates, 0,
			    (int)(sizeof aggregated_cases /
				  sizeof aggregated_cases[0]));
	tcase_add_loop_test(kinds, test_healthy_not_found, 0,
			    (int)(sizeof healthy_modes / sizeof healthy_modes[0]));
	tcase_add_test(kinds, test_ids);
	tcase_add_test(kinds, test_backward_per_step);
	tcase_add_test(kinds, test_aggregate_and_sort);
	tcase_add_test(kinds, test_aggregated_failures_counted_once);
	tcase_add_test(kinds, test_aggregated_overflow_in_skipped_steps);
	tcase_add_test(kinds, test_aggregated_failure_of_another_op);
	tcase_add_test(kinds, test_aggregated_failure_of_a_long_name);
	tcase_add_test(kinds, test_aggregated_banned_failure_hides_none);
	tcase_add_loop_test(kinds, test_trimmed_aggregates_alike, 0,
			    (int)(sizeof aggregate_fixtures /
				  sizeof aggregate_fixtures[0]));
	tcase_add_loop_test(kinds, test_lookahead_index, 0,
			    (int)(sizeof lookahead_cases /
				  sizeof lookahead_cases[0]));
	tcase_add_test(kinds, test_value_checks_off);
	tcase_add_test(kinds, test_appended_to_trace);
	tcase_add_test(kinds, test_kind_table);
	tcase_add_test(kinds, test_low_precision_ops_from_policy);
	tcase_add_test(kinds, test_divergence_no_region);
	tcase_add_test(kinds, test_autocast_never_enabled_in_process);
	tcase_add_test(kinds, test_autocast_never_enabled_in_a_big_job);
	tcase_add_test(kinds, test_autocast_never_enabled_spares_fsdp_policies);
	tcase_add_test(kinds, test_autocast_never_enabled_fsdp_modules_not_running);
	tcase_add_test(kinds, test_thread_born_at_an_unread_event);
	tcase_add_test(kinds, test_last_scaler_state_not_claimed_by_unread_event);
	tcase_add_loop_test(kinds, test_every_scaler_and_optimizer_followed, 0,
			    (int)(sizeof skip_layouts / sizeof skip_layouts[0]));
	tcase_add_test(kinds, test_divergence_jit_cast);
	tcase_add_test(kinds, test_policy_table_of_trace);
	tcase_add_test(kinds, test_cache_other_dtype);
	tcase_add_test(kinds, test_rank_findings_fold);
	tcase_add_test(kinds, test_steps_cut_short_in_full_detail);
	tcase_add_test(kinds, test_fixtures_streamed_alike);
	tcase_add_test(kinds, test_dtype_error_raised_through);
	suite_add_tcase(s, kinds);

	tcase_add_unchecked_fixture(samples, make_dir, remove_dir);
	tcase_add_test(samples, test_sample_mlp_clean);
	tcase_add_test(samples, test_sample_mlp_f16_clean);
	tcase_add_test(samples, test_scaler_calibration_is_info);
	tcase_add_test(samples, test_scaler_collapsed_is_no_calibration);
	tcase_add_test(samples, test_scaler_start_overflow_not_error);
	tcase_add_test(samples, test_sample_nested_clean);
	tcase_add_test(samples, test_sample_whole_loop);
	tcase_add_test(samples, test_sample_threads);
	tcase_add_loop_test(samples, test_sample_healthy_not_found, 0,
			    (int)(sizeof healthy_samples / sizeof healthy_samples[0]));
	suite_add_tcase(s, samples);

	tcase_add_test(lib, test_diag_overflow_event);
	tcase_add_test(lib, test_diag_overflow_negative);
	tcase_add_test(lib, test_diag_underflow_explicit_cast);
	tcase_add_test(lib, test_diag_underflow_threshold);
	suite_add_tcase(s, lib);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(findings_suite());

	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
