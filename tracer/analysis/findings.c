/* The findings engine (findings.h): runs the rules of the table of kinds
 * (findings_kinds.c) over a trace, folds in the trace's amp.diag events,
 * and orders what was found, most severe first. */
#include "findings_internal.h"
#include "marks.h"

#include <cJSON.h>

#include <stdlib.h>
#include <string.h>

/* The table's order; kinds it does not know (amp.diag events of other
 * producers) after its own. */
static int kind_rank(const char *name)
{
	const struct finding_kind *k = finding_kind_lookup(name);

	return k ? (int)(k - finding_kinds) : FINDING_KIND_COUNT;
}

/* The rules fed event by event, by the kind of event they read, in the
 * table's order; one pass over the events feeds them all. */
struct event_rules {
	finding_event_rule *rules[TRACE_KIND_COUNT][FINDING_KIND_COUNT];
	int count[TRACE_KIND_COUNT];
};

static void run_event_rules(struct findings_context *cx)
{
	struct event_rules by_kind = { 0 };

	for (int k = 0; k < FINDING_KIND_COUNT; k++)
		for (int kind = 0; finding_kinds[k].each && kind < TRACE_KIND_COUNT;
		     kind++)
			if (finding_kinds[k].reads & FINDING_READS(kind))
				by_kind.rules[kind][by_kind.count[kind]++] =
					finding_kinds[k].each;
	for (size_t i = 0; i < cx->t->nevents; i++) {
		enum trace_kind kind = cx->t->events[i].kind;
		for (int r = 0; r < by_kind.count[kind]; r++)
			by_kind.rules[kind][r](cx, i);
	}
}

static void run_trace_rules(struct findings_context *cx)
{
	for (int k = 0; k < FINDING_KIND_COUNT; k++)
		if (finding_kinds[k].once)
			finding_kinds[k].once(cx);
}

/* ---------------------------------------------------- amp.diag events */

void finding_fold_diag(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_diag *d = &e->diag;
	const struct finding_kind *k = finding_kind_lookup(d->kind);
	char label[128], site[160];

	if (!d->kind || (k && k->note))
		return;
	/* the bridge's text of a dtype error is in its dtype-mismatch, the
	 * op's own or that of the op inside it whose exception it raised */
	if (!strcmp(d->kind, "op-error") && d->op_id) {
		size_t op = id_map_get(&cx->ix->ops, e->pid, d->op_id);
		if (finding_op_has_dtype_mismatch(cx, e->pid, d->op_id) ||
		    (op != SIZE_MAX &&
		     finding_failure_is_dtype_mismatch(cx, op)))
			return;
	}
	/* a finding amptrace appended earlier: already computed */
	if (k && k->source == FINDING_FROM_EVENTS) {
		for (size_t f = 0; f < cx->out->count; f++) {
			struct trace_finding *x = &cx->out->items[f];
			if (!x->from_trace && x->pid == e->pid &&
			    !strcmp(x->kind, d->kind) && x->op_id == d->op_id &&
			    x->tensor == d->tensor) {
				x->from_trace = true;
				/* the recorder's op-error knew more than the
				 * op event: the PyTorch bridge's carries the
				 * exception's text (libamp's repeat ours) */
				if (!strcmp(d->kind, "op-error") && d->message)
					finding_text(x->message, sizeof x->message,
						     "%s", d->message);
				return;
			}
		}
	}
	const char *name = NULL;
	size_t named = d->tensor ? id_map_get(&cx->ix->names, e->pid, d->tensor) : SIZE_MAX;
	if (named != SIZE_MAX) {
		char tensor[192];
		finding_tensor_label(cx, e->pid, d->tensor, tensor, sizeof tensor);
		name = strchr(tensor, '\'');
		finding_text(site, sizeof site, "%s %s",
			     d->op_id ? finding_op_label(cx, e->pid, d->op_id, label, sizeof label) : "",
			     name ? name : "");
	} else if (d->op_id) {
		finding_text(site, sizeof site, "%s",
			     finding_op_label(cx, e->pid, d->op_id, label, sizeof label));
	} else {
		finding_text(site, sizeof site, "%s",
			     k && k->by_message && d->message ? d->message : "");
	}
	struct trace_finding *f = finding_at(cx, d->kind, site, e->pid, i);
	if (!f)
		return;
	f->from_trace = true;
	f->op_id = d->op_id;
	f->tensor = d->tensor;
	finding_text(f->message, sizeof f->message, "%s", d->message ? d->message : "");
}

/* The amp.diag events no rule reads (a kind's rule that reads its own
 * decides for them), after every rule ran: one of a kind the rules
 * compute is then folded into their finding. */
static void fold_diags(struct findings_context *cx)
{
	for (size_t i = 0; cx->t->counts[TRACE_DIAG] && i < cx->t->nevents; i++) {
		const struct trace_event *e = &cx->t->events[i];
		if (e->kind != TRACE_DIAG)
			continue;
		const struct finding_kind *k = finding_kind_lookup(e->diag.kind);
		if (!k || !k->each || !(k->reads & FINDING_READS(TRACE_DIAG)))
			finding_fold_diag(cx, i);
	}
}

/* A step recorded as aggregates kept its amp.diag events as rows: a
 * backward op's overflow in a step whose GradScaler skipped (scaler
 * events are always recorded) is the scaler's to report, as for the
 * events (fp16-overflow's rule); any other row is a finding counted by
 * the row, its first message kept.  The skips are sorted by process and
 * time once, and each step finds its own by bisection: looking through
 * every event for each step was quadratic in steps (80,000 aggregated
 * steps that each skipped: 14 s).
 *
 * The scaler events of skipped steps, sorted; false when out of memory
 * (as many as were found). */
static bool skips_build(const struct trace *t, struct marks *skips)
{
	bool ok = true;

	for (size_t i = 0; ok && i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_SCALER && e->scaler.step_skipped)
			ok = marks_add(skips, e->pid, e->ts);
	}
	marks_sort(skips);
	return ok;
}

/* Whether a skip of g's process falls in g's step, from its beginning to
 * its end. */
static bool skipped_in(const struct marks *skips, const struct trace_event *g)
{
	double begin = (double)g->aggregate.begin_ns / 1000.0;

	return marks_before(skips, g->pid, g->ts, true) >
	       marks_before(skips, g->pid, begin, false);
}

/* The finding of `kind` at `site` counting `count` more occurrences in
 * the aggregates of event i: NULL when one was there already (its count
 * grown) or when out of memory, else the new one, its message to write. */
static struct trace_finding *aggregated_finding(struct findings_context *cx,
						size_t i, const char *kind,
						const char *site,
						uint64_t count)
{
	const struct trace_event *e = &cx->t->events[i];
	struct trace_finding *f = finding_find(cx, kind, site, e->pid);

	if (f) {
		f->count += count;
		return NULL;
	}
	f = finding_at(cx, kind, site, e->pid, i);
	if (f) {
		f->from_trace = true;
		f->count = count;
	}
	return f;
}

static void fold_aggregate_row(struct findings_context *cx, size_t i,
			       const struct trace_aggregate_diag *row)
{
	const struct finding_kind *k = finding_kind_lookup(row->kind);
	char site[160];

	if (k && k->note)
		return;

	finding_text(site, sizeof site, "%s in %s ops of steps recorded as "
		     "aggregates", row->kind, row->phase);
	struct trace_finding *f = aggregated_finding(cx, i, row->kind, site,
						     row->count);
	if (f)
		finding_text(f->message, sizeof f->message, "%s (first of %s in "
			     "steps recorded as per-step aggregates; --steps records "
			     "them in full)", row->message ? row->message : row->kind,
			     row->phase);
}

static bool row_banned(const struct trace_aggregate_op *row)
{
	return row->policy && !strcmp(row->policy, "banned");
}

/* A long op name may be cut: a row keeps 95 bytes of it, and a diag's
 * message 63 in traces of a bridge whose buffer was that small; a name
 * this long matches the other cut short. */
#define OP_NAME_CUT 63

/* Whether an op-error diag row is the bridge's report of a failure of
 * row's op: of the same phase, its message naming the op first, as
 * "<op> (op N) failed, ..." (the row keeps no op name of its own). */
static bool diag_reports_op(const struct trace_aggregate_diag *d,
			    const struct trace_aggregate_op *row)
{
	if (strcmp(d->kind, finding_kinds[FINDING_OP_ERROR].name) ||
	    strcmp(d->phase, row->phase) || !d->message)
		return false;
	const char *end = strstr(d->message, " (op ");
	if (!end)
		return false;
	size_t named = (size_t)(end - d->message), kept = strlen(row->op);
	size_t common = named < kept ? named : kept;

	return !strncmp(d->message, row->op, common) &&
	       (named == kept || common >= OP_NAME_CUT);
}

/* The failures of row that the step's op-error diag rows report already
 * (with the exception's text), taken from what each diag row has left
 * to report (left[k]: diag row k's): those are not counted twice. */
static uint64_t reported_failures(const struct trace_aggregate *a,
				  const struct trace_aggregate_op *row,
				  uint64_t *left)
{
	uint64_t taken = 0;

	for (int k = 0; left && k < a->ndiags && taken < row->failed; k++) {
		if (!diag_reports_op(&a->diags[k], row))
			continue;
		uint64_t take = row->failed - taken < left[k] ?
					row->failed - taken : left[k];
		left[k] -= take;
		taken += take;
	}
	return taken;
}

/* An aggregated op row stands for its ops: banned-op and op-error, the
 * rules about one op that its row can answer, count them too (a failure
 * the row cannot explain, a dtype mismatch among them, is an op-error:
 * the row keeps no inputs).  A banned op that failed is banned-op's, as
 * in full detail; `reported`: the row's failures already reported. */
static void fold_aggregate_op(struct findings_context *cx, size_t i,
			      const struct trace_aggregate_op *row,
			      uint64_t reported)
{
	bool banned = row_banned(row);
	const char *kind = finding_kinds[banned ? FINDING_BANNED_OP
						: FINDING_OP_ERROR].name;
	uint64_t count = banned ? row->count : row->failed - reported;
	char site[160];

	if (!count)
		return;
	finding_text(site, sizeof site, "%s in %s ops of steps recorded as "
		     "aggregates", row->op, row->phase);
	struct trace_finding *f = aggregated_finding(cx, i, kind, site, count);
	if (!f)
		return;
	if (banned) {
		finding_text(f->message, sizeof f->message, "%s is banned under "
			     "%s autocast%s (%s ops of steps recorded as per-step "
			     "aggregates; --steps records them in full)",
			     row->op, row->device,
			     row->failed ? ", so it failed" : "", row->phase);
		return;
	}
	finding_text(f->message, sizeof f->message, "%s failed (%s ops of "
		     "steps recorded as per-step aggregates, which keep neither "
		     "inputs nor errors: a dtype mismatch among them shows as "
		     "op-error here; --steps records them in full)", row->op,
		     row->phase);
	/* the kind's fix, to read the op's error, is not for a row */
	f->fix = "record the step in full with --steps N (N: the step) to "
		 "read the op's error and its inputs' dtypes";
}

/* What each op-error diag row of aggregate a has left to report: its
 * count; NULL when it has none (nothing to take) or out of memory. */
static uint64_t *op_error_rows(struct findings_context *cx,
			       const struct trace_aggregate *a)
{
	bool any = false;

	for (int k = 0; k < a->ndiags; k++)
		any |= !strcmp(a->diags[k].kind,
			       finding_kinds[FINDING_OP_ERROR].name);
	if (!any)
		return NULL;
	uint64_t *left = malloc((size_t)a->ndiags * sizeof *left);
	if (!left) {
		cx->failed = true;
		return NULL;
	}
	for (int k = 0; k < a->ndiags; k++)
		left[k] = a->diags[k].count;
	return left;
}

static void fold_aggregate_ops(struct findings_context *cx, size_t i)
{
	const struct trace_aggregate *a = &cx->t->events[i].aggregate;
	uint64_t *left = op_error_rows(cx, a);

	for (int k = 0; k < a->nops; k++) {
		const struct trace_aggregate_op *row = &a->ops[k];
		fold_aggregate_op(cx, i, row, row_banned(row) ? 0 :
				  reported_failures(a, row, left));
	}
	free(left);
}

static bool ran_under_policy(const struct trace_aggregate_op *row)
{
	return strcmp(row->policy, "none") != 0;
}

static bool in_backward(const struct trace_aggregate_op *row)
{
	return !strcmp(row->phase, "backward");
}

/* The rows findings_aggregate_trim keeps: fold_aggregate_ops reports the
 * failed and banned ones (their counts); autocast-never-enabled
 * (findings_threads.c) asks whether any ran under a policy and whether
 * any cast is autocast's, the steps (steps.c) whether any is backward:
 * of a row kept to say there is one, its numbers are not read. */
void findings_aggregate_trim(struct trace_aggregate *a)
{
	bool policy = false, backward = false, autocast_cast = false;
	int nops = 0, ncasts = 0;

	for (int k = 0; k < a->nops; k++) {
		struct trace_aggregate_op row = a->ops[k];
		bool first_policy = !policy && ran_under_policy(&row);
		bool first_backward = !backward && in_backward(&row);
		bool reported = row.failed || row_banned(&row);
		policy |= first_policy;
		backward |= first_backward;
		if (!reported && !first_policy && !first_backward)
			continue;
		if (!reported) {
			row.count = 0;
			row.dur_ns = 0;
		}
		a->ops[nops++] = row;
	}
	for (int k = 0; k < a->ncasts && !autocast_cast; k++)
		if ((autocast_cast = !a->casts[k].origin))
			a->casts[ncasts++] = (struct trace_aggregate_cast){
				.op = a->casts[k].op, .phase = a->casts[k].phase,
				.from = a->casts[k].from, .to = a->casts[k].to,
				.cache = a->casts[k].cache,
			};
	a->nops = nops;
	a->ncasts = ncasts;
}

/* Every kind but a GradScaler's events is read by some rule, or by the
 * steps (steps.c; a scaler event counts towards a step only in a trace
 * whose steps are not marked, and such a trace has no GradScaler
 * update: the producers mark a step at each). */
bool findings_event_read(const struct trace_event *e)
{
	return e->kind != TRACE_SCALER || finding_scaler_event_read(&e->scaler);
}

static void fold_aggregates(struct findings_context *cx)
{
	const struct trace *t = cx->t;
	struct marks skips = { 0 };
	bool skips_built = false;

	for (size_t i = 0; t->counts[TRACE_AGGREGATE] && i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_AGGREGATE)
			continue;
		for (int k = 0; k < e->aggregate.ndiags; k++) {
			const struct trace_aggregate_diag *row =
				&e->aggregate.diags[k];
			if (!strcmp(row->kind, finding_kinds[FINDING_FP16_OVERFLOW]
							.name) &&
			    !strcmp(row->phase, "backward")) {
				if (!skips_built && !skips_build(t, &skips))
					cx->failed = true;
				skips_built = true;
				if (skipped_in(&skips, e))
					continue;
			}
			fold_aggregate_row(cx, i, row);
		}
		fold_aggregate_ops(cx, i);
	}
	marks_free(&skips);
}

/* ------------------------------------------------------------ public */

static int compare_findings(const void *pa, const void *pb)
{
	const struct trace_finding *a = pa, *b = pb;

	if (a->severity != b->severity)
		return a->severity < b->severity ? -1 : 1;
	int ra = kind_rank(a->kind), rb = kind_rank(b->kind);
	if (ra != rb)
		return ra < rb ? -1 : 1;
	if (a->event != b->event)
		return a->event < b->event ? -1 : 1;
	return 0;
}

int findings_compute(const struct trace *trace, struct findings *out)
{
	struct trace_index ix;
	int status = trace_index_build(trace, &ix);

	if (findings_compute_indexed(&ix, out) != 0)
		status = -1;
	trace_index_free(&ix);
	return status;
}

int findings_compute_indexed(const struct trace_index *ix,
			     struct findings *out)
{
	struct findings_context cx;

	findings_context_init(&cx, ix, out);
	run_event_rules(&cx);
	run_trace_rules(&cx);
	fold_diags(&cx);
	fold_aggregates(&cx);
	trace_sort(out->items, out->count, sizeof *out->items, compare_findings);
	findings_context_free(&cx);
	return cx.failed ? -1 : 0;
}

void findings_free(struct findings *findings)
{
	if (!findings)
		return;
	free(findings->items);
	free(findings->occurrences);
	free(findings->skips);
	*findings = (struct findings){ 0 };
}

bool findings_is_fsdp_policy(const struct trace_diag *d)
{
	return d->kind &&
	       !strcmp(d->kind,
		       finding_kinds[FINDING_FSDP_MIXED_PRECISION].name);
}

const char *findings_framework(const struct trace *trace)
{
	return trace_framework(trace);
}

int findings_policy_table(const struct trace *trace)
{
	const char *named = trace_policy_table(trace);
	int newest = finding_policy_table_count - 1;

	for (int v = 0; named && v < finding_policy_table_count; v++)
		if (!strcmp(named, finding_policy_tables[v]))
			return v;
	return newest;
}

const char *finding_policy_table_name(int table)
{
	return finding_policy_tables[table];
}

const struct trace_finding *findings_get(const struct findings *findings,
					 const char *kind)
{
	for (size_t i = 0; i < findings->count; i++)
		if (!strcmp(findings->items[i].kind, kind))
			return &findings->items[i];
	return NULL;
}
