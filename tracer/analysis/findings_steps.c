/* Findings over a run's history rather than one event: the GradScaler's
 * scale (scaler-skipped-step with why each step was skipped,
 * scaler-collapse), the LR schedulers stepped on skipped steps
 * (lr-scheduler-skipped-step), the overflows the scaler handles
 * (fp16-overflow), and the autocast cache's size across steps
 * (cache-growth). */
#include "findings_internal.h"
#include "steps.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- GradScaler */

/* The index of (pid, id) among the `count` items of registry r: an
 * item's, or `count` for a new one, *number then its process's count of
 * items so far; SIZE_MAX when out of memory. */
static size_t registered(struct finding_registry *r, int64_t pid,
			 uint64_t id, size_t count, int *number)
{
	size_t *at = id_map_find(&r->index, pid, id, true);
	size_t *so_far = at && !*at ? id_map_find(&r->numbers, pid, 0, true)
				    : NULL;

	if (at && *at)
		return *at - 1;
	if (!so_far)
		return SIZE_MAX;
	*number = (int)(*so_far)++;
	*at = count + 1;
	return count;
}

/* The state of (pid, id), new when unseen; NULL when out of memory
 * (cx->failed). */
static struct finding_scaler *scaler_of(struct findings_context *cx,
					int64_t pid, uint64_t id)
{
	struct finding_scalers *s = &cx->scalers;
	int number = 0;
	size_t k = registered(&s->registry, pid, id, s->count, &number);

	if (k < s->count)
		return &s->items[k];
	struct finding_scaler *grown = k == SIZE_MAX ? NULL :
		trace_grow(s->items, &s->cap, s->count + 1, sizeof *grown);
	if (!grown) {
		cx->failed = true;
		return NULL;
	}
	s->items = grown;
	s->items[s->count] = (struct finding_scaler){ .pid = pid, .id = id,
						      .number = number,
						      .previous = NAN,
						      .first = NAN,
						      .last_update = NAN };
	return &s->items[s->count++];
}

static bool is_scaler(const struct trace_event *e, const char *what)
{
	return e->kind == TRACE_SCALER && e->scaler.what &&
	       (!what || !strcmp(e->scaler.what, what));
}

/* The state of scaler event i's scaler, its inf tensor noted; or NULL.
 * The trace's scalers are found at its first scaler event, those ever
 * updated first (and marked so), the others at their first event the
 * rules read (finding_scaler_event_read): numbered so, alike in the
 * trace `amptrace run` keeps and in its file. */
static struct finding_scaler *scaler_event(struct findings_context *cx,
					   size_t i)
{
	struct finding_scalers *s = &cx->scalers;
	const struct trace_event *e = &cx->t->events[i];

	if (!e->scaler.what || !finding_scaler_event_read(&e->scaler))
		return NULL;
	for (size_t k = 0; !s->found && k < cx->t->nevents; k++) {
		const struct trace_event *u = &cx->t->events[k];
		struct finding_scaler *st;
		if (is_scaler(u, "update") &&
		    (st = scaler_of(cx, u->pid, u->scaler.scaler_id)))
			st->updates = true;
	}
	s->found = true;
	struct finding_scaler *st = scaler_of(cx, e->pid, e->scaler.scaler_id);
	if (st && e->scaler.inf_tensor)
		st->inf_tensor = e->scaler.inf_tensor;
	return st;
}

/* Dynamic loss scaling skips steps by design: GradScaler starts at 65536
 * and halves the scale at each overflow until the scaled gradients fit
 * (calibration: every skip before the first iteration without one, until
 * the scale collapses: scaler-collapse's, which has then been reported), and
 * later lowers it again when the gradients grow or after it raised the
 * scale (every growth_interval clean iterations) and overflowed.  Those
 * skips are info.  A skip is a warning when steps keep being skipped: a
 * second one after calibration at a scale that has not grown since the
 * previous (a gradient overflows whatever the scale), or one whose first
 * inf/NaN came from a forward op (the scale multiplies only the backward
 * pass: lowering it cannot help).  Per iteration, not per step: with two
 * optimizers one may step while the other's gradients overflow.  A
 * scaler never updated is calibrated by its first step taken.  A scale
 * that never settles is scaler-collapse's. */
static enum finding_skip_kind skip_kind_of(struct finding_scaler *st)
{
	if (st->iteration != SKIP_NONE)
		return st->iteration;
	if (!st->calibrated && (st->updates || !st->stepped))
		st->iteration = st->reported ? SKIP_REPEATED : SKIP_CALIBRATING;
	else if (!st->adjusted || st->grew)
		st->iteration = SKIP_ADJUSTING;
	else
		st->iteration = SKIP_REPEATED;
	if (st->iteration != SKIP_CALIBRATING) {
		st->adjusted = true;
		st->grew = false;
	}
	return st->iteration;
}

/* The skip, with its cause, for summary's list (findings.h). */
static void remember_skip(struct findings_context *cx, size_t event,
			  double scale, const char *cause)
{
	struct findings *fs = cx->out;

	if (fs->nskips == fs->cap_skips) {
		size_t cap = fs->cap_skips ? fs->cap_skips * 2 : 16;
		struct finding_skip *grown = realloc(fs->skips, cap * sizeof *grown);
		if (!grown) {
			cx->failed = true;
			return;
		}
		fs->skips = grown;
		fs->cap_skips = cap;
	}
	struct finding_skip *k = &fs->skips[fs->nskips++];
	k->event = event;
	k->scale = scale;
	finding_text(k->cause, sizeof k->cause, "%s", cause);
}

static enum finding_skip_kind report_skip(struct findings_context *cx,
					  size_t i, struct finding_scaler *st,
					  const struct finding_optimizer *o)
{
	static const char *const why[] = {
		[SKIP_CALIBRATING] = " while calibrating its scale (no "
		"iteration without a skip yet: normal at the start)",
		[SKIP_ADJUSTING] = " as dynamic loss scaling does (the first "
		"skip since calibration or since the scale last grew: normal)",
		[SKIP_REPEATED] = " again, at a scale that has not grown since "
		"its previous skip: steps keep being skipped",
		[SKIP_FORWARD] = "",
	};
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_scaler *s = &e->scaler;
	struct finding_cause cause;
	char site[160], origin[128] = "";

	if (!cx->origins.built)
		finding_origins_build(cx, &cx->origins);
	finding_skip_cause(cx, &cx->origins, i, st->floor, &cause);
	enum finding_skip_kind kind = skip_kind_of(st);
	if (cause.forward)
		kind = SKIP_FORWARD;
	finding_cause_text(cx, e->pid, &cause, st->cause, sizeof st->cause);
	remember_skip(cx, i, s->scale, st->cause);
	if (cause.origin != SIZE_MAX)
		finding_op_label(cx, e->pid, cx->t->events[cause.origin].diag.op_id,
				 origin, sizeof origin);
	/* numbered, not by id: a job's ranks' sites alike (rank_findings.h);
	 * an optimizer without a state (out of memory) by its id */
	if (o)
		finding_text(site, sizeof site, "%d/%d %d %s", st->number,
			     o->number, (int)kind, origin);
	else
		finding_text(site, sizeof site, "%d/id %llu %d %s", st->number,
			     (unsigned long long)s->optimizer_id, (int)kind,
			     origin);
	struct trace_finding *f =
		finding_of(cx, FINDING_SCALER_SKIPPED_STEP, site, e->pid, i);
	if (!f)
		return kind;
	f->tensor = st->inf_tensor;
	if (cause.origin != SIZE_MAX)
		f->op_id = cx->t->events[cause.origin].diag.op_id;
	if (kind != SKIP_REPEATED && kind != SKIP_FORWARD)
		f->severity = FINDING_INFO;
	finding_text(f->message, sizeof f->message,
		     "GradScaler %llu skipped the step of optimizer %llu at scale "
		     "%g%s, so optimizer.step() was not called and the scale was "
		     "lowered: %s",
		     (unsigned long long)s->scaler_id,
		     (unsigned long long)s->optimizer_id, s->scale, why[kind],
		     st->cause);
	return kind;
}

/* The state of optimizer (pid, id), new when unseen; NULL when out of
 * memory (cx->failed). */
static struct finding_optimizer *optimizer_of(struct findings_context *cx,
					      int64_t pid, uint64_t id)
{
	struct finding_optimizers *o = &cx->optimizers;
	int number = 0;
	size_t k = registered(&o->registry, pid, id, o->count, &number);

	if (k < o->count)
		return &o->items[k];
	struct finding_optimizer *grown = k == SIZE_MAX ? NULL :
		trace_grow(o->items, &o->cap, o->count + 1, sizeof *grown);
	if (!grown) {
		cx->failed = true;
		return NULL;
	}
	o->items = grown;
	o->items[o->count] = (struct finding_optimizer){
		.pid = pid, .id = id, .number = number, .scaler = SIZE_MAX };
	return &o->items[o->count++];
}

static void registry_free(struct findings_context *cx,
			  struct finding_registry *r)
{
	cx->failed |= r->index.failed || r->numbers.failed;
	id_map_free(&r->index);
	id_map_free(&r->numbers);
}

void finding_steps_free(struct findings_context *cx)
{
	free(cx->scalers.items);
	registry_free(cx, &cx->scalers.registry);
	free(cx->optimizers.items);
	registry_free(cx, &cx->optimizers.registry);
}

/* The bridge's "lr_scheduler_step" events are the schedulers', not a
 * scaler's (FORMAT.md §3.6). */
static bool is_scheduler_step(const struct trace_scaler *s)
{
	return s->what && !strcmp(s->what, "lr_scheduler_step");
}

/* scaler-skipped-step: a GradScaler `step` event with step_skipped: a
 * warning when steps keep being skipped or a forward op overflowed, info
 * while the scale calibrates and for the scaler's normal adjustments
 * (skip_kind_of); each with its cause (findings_causes.c).  Fed scaler
 * events. */
void finding_rule_scaler_skipped_step(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_scaler *s = &e->scaler;
	struct finding_scaler *st =
		is_scheduler_step(s) ? NULL : scaler_event(cx, i);

	if (!st)
		return;
	if (!strcmp(s->what, "step")) {
		enum finding_skip_kind kind = SKIP_NONE;
		struct finding_optimizer *o =
			optimizer_of(cx, e->pid, s->optimizer_id);
		if (s->step_skipped)
			kind = report_skip(cx, i, st, o);
		else
			st->stepped = true;
		if (o) {
			o->skipped = s->step_skipped;
			o->kind = kind;
			o->scaler = (size_t)(st - cx->scalers.items);
		}
	}
	if (strcmp(s->what, "update"))
		return;
	st->calibrated |= st->stepped && st->iteration == SKIP_NONE;
	st->grew |= !isnan(st->last_update) && s->scale > st->last_update;
	st->iteration = SKIP_NONE;
	st->floor = i + 1;
	if (!isnan(s->scale))
		st->last_update = s->scale;
}

/* lr-scheduler-skipped-step: an LR scheduler stepped (the bridge's
 * "lr_scheduler_step" scaler event) right after its optimizer's step was
 * skipped: the schedule advanced for a step that was not taken.  Info
 * while the scale calibrates (torch itself warns once at the start).
 * Fed scaler events, after scaler-skipped-step's rule. */
void finding_rule_lr_scheduler_skipped_step(struct findings_context *cx,
					    size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	struct finding_optimizer *o =
		is_scheduler_step(&e->scaler)
			? optimizer_of(cx, e->pid, e->scaler.optimizer_id)
			: NULL;
	char site[64];

	if (!o || !o->skipped)
		return;
	o->skipped = false;
	bool calibrating = o->kind == SKIP_CALIBRATING;
	finding_text(site, sizeof site, "%d %d", o->number, calibrating);
	struct trace_finding *f = finding_of(
		cx, FINDING_LR_SCHEDULER_SKIPPED_STEP, site, e->pid, i);
	if (!f)
		return;
	if (calibrating)
		f->severity = FINDING_INFO;
	const struct finding_scaler *st =
		o->scaler == SIZE_MAX ? NULL : &cx->scalers.items[o->scaler];
	f->tensor = st ? st->inf_tensor : 0;
	finding_text(f->message, sizeof f->message,
		     "an LR scheduler of optimizer %llu stepped although GradScaler "
		     "skipped that optimizer's step%s, so the learning-rate "
		     "schedule ran ahead of the steps taken (Lightning#18828): %s",
		     (unsigned long long)o->id,
		     calibrating ? " while calibrating its scale (a few steps at "
				   "the start)" : "",
		     st && st->cause[0] ? st->cause
						      : "the gradients held inf/NaN");
}

/* scaler-collapse: a scale below SCALER_COLLAPSE_SCALE, or
 * SCALER_COLLAPSE_HALVINGS updates in a row that each lowered the
 * scale; with the last skip's cause.  Fed scaler events. */
void finding_rule_scaler_collapse(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_scaler *s = &e->scaler;
	struct finding_scaler *st =
		is_scheduler_step(s) ? NULL : scaler_event(cx, i);
	char site[160];

	if (!st || strcmp(s->what, "update") || isnan(s->scale))
		return;
	if (isnan(st->first))
		st->first = s->scale;
	st->halvings = !isnan(st->previous) && s->scale < st->previous
			       ? st->halvings + 1 : 0;
	st->previous = s->scale;
	if (st->reported || (s->scale >= SCALER_COLLAPSE_SCALE &&
			     st->halvings < SCALER_COLLAPSE_HALVINGS))
		return;
	st->reported = true;
	finding_text(site, sizeof site, "%d", st->number);
	struct trace_finding *f = finding_of(cx, FINDING_SCALER_COLLAPSE, site,
					     e->pid, i);
	if (!f)
		return;
	f->tensor = st->inf_tensor;
	finding_text(f->message, sizeof f->message,
		     "GradScaler %llu's scale fell to %g (from %g) after %d "
		     "consecutive reductions (collapse: below %g or %d in a "
		     "row): the gradients hold inf/NaN at every step, so no "
		     "optimizer step is taken and training has stopped%s%s",
		     (unsigned long long)s->scaler_id, s->scale, st->first,
		     st->halvings, SCALER_COLLAPSE_SCALE,
		     SCALER_COLLAPSE_HALVINGS,
		     st->cause[0] ? "; the last skip: " : "", st->cause);
}

/* The GradScaler events the rules above read: every `step` and `update`
 * (the skips, the scale's history, what ends an iteration), the
 * schedulers' steps, and any that names a gradient holding inf/NaN or
 * says a step was skipped.  A `scale` (the loss scaled for backward)
 * and an `unscale` that found nothing feed none of them, nor make
 * their scaler known (scaler_event): its step and update do. */
bool finding_scaler_event_read(const struct trace_scaler *s)
{
	if (!s->what || s->inf_tensor || s->found_inf || s->step_skipped)
		return true;
	return strcmp(s->what, "scale") && strcmp(s->what, "unscale");
}

/* 1 when GradScaler event `e` decides that a step's overflows were the
 * scaler's (a skipped step), 0 when it ends the search for such a step
 * (an update), SIZE_MAX when it decides nothing. */
static size_t scaler_verdict(const struct trace_event *e)
{
	if (e->kind != TRACE_SCALER || !e->scaler.what)
		return SIZE_MAX;
	if (!strcmp(e->scaler.what, "step") && e->scaler.step_skipped)
		return 1;
	return !strcmp(e->scaler.what, "update") ? 0 : SIZE_MAX;
}

/* For each fp16-overflow amp.diag event, the verdict of its process's
 * next deciding scaler event: one pass from the trace's end, each
 * process's latest verdict kept (under id 0). */
static void overflow_verdicts_build(struct findings_context *cx,
				    struct finding_overflow_verdicts *v)
{
	struct id_map next = { 0 };
	const char *overflow = finding_kinds[FINDING_FP16_OVERFLOW].name;

	v->built = true;
	for (size_t i = cx->t->nevents; i-- > 0;) {
		const struct trace_event *e = &cx->t->events[i];
		size_t verdict = scaler_verdict(e);
		if (verdict != SIZE_MAX)
			id_map_put(&next, e->pid, 0, verdict);
		else if (e->kind == TRACE_DIAG && e->diag.kind &&
			 !strcmp(e->diag.kind, overflow) &&
			 id_map_get(&next, e->pid, 0) == 1)
			id_map_put(&v->skipped, e->pid, i, 1);
	}
	cx->failed |= next.failed;
	id_map_free(&next);
}

/* An overflow in a backward op followed, before the GradScaler's next
 * update, by a skipped step of the same process: the scaled gradients
 * overflowed and the scaler did its job (skipped the step, lowered the
 * scale), as it does while it calibrates from 65536.  That is
 * scaler-skipped-step's to report, not an fp16-overflow error.  Any
 * skipped step of the iteration counts: with several optimizers the
 * first may step while the one owning the overflowed gradient skips. */
static bool overflow_handled_by_scaler(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = e->diag.op_id
					    ? finding_op_of(cx, e->pid, e->diag.op_id)
					    : NULL;

	if (!op || !finding_op_is_backward(op))
		return false;
	if (!cx->overflow_verdicts.built)
		overflow_verdicts_build(cx, &cx->overflow_verdicts);
	return id_map_get(&cx->overflow_verdicts.skipped, e->pid, i) == 1;
}

/* fp16-overflow: the value checks (libamp's, the PyTorch bridge's) saw an
 * op turn finite inputs (or a cast finite values) into
 * inf/NaN (its amp.diag events), unless the GradScaler handled it. */
void finding_rule_fp16_overflow(struct findings_context *cx, size_t i)
{
	const char *kind = cx->t->events[i].diag.kind;

	if (kind && !strcmp(kind, finding_kinds[FINDING_FP16_OVERFLOW].name) &&
	    !overflow_handled_by_scaler(cx, i))
		finding_fold_diag(cx, i);
}

/* ------------------------------------------------------ cache growth */

static bool is_optimizer_write(const struct trace_event *e)
{
	if (e->kind != TRACE_OP || finding_op_is_backward(&e->op) || !e->op.noutputs)
		return false;
	size_t n = strcspn(e->op.op, ".");
	return n > 1 && e->op.op[n - 1] == '_' && e->op.op[0] != '_' &&
	       e->op.outputs[0].info->leaf && e->op.outputs[0].info->requires_grad;
}

struct step_end {
	double entries, bytes;
	bool cleared;
	size_t event;
	double ts;     /* of the value kept */
	bool seen;     /* a value of this step */
};

static void report_growth(struct findings_context *cx, int64_t pid,
			  const struct step_end *ends, size_t nends,
			  const char *steps)
{
	size_t run = 0, best = 0, best_end = 0;

	for (size_t k = 1; k < nends; k++) {
		run = ends[k].entries > ends[k - 1].entries && !ends[k].cleared
			      ? run + 1 : 0;
		if (run > best) {
			best = run;
			best_end = k;
		}
	}
	if (best < CACHE_GROWTH_STEPS)
		return;
	const struct step_end *from = &ends[best_end - best];
	const struct step_end *to = &ends[best_end];
	struct trace_finding *f = finding_of(cx, FINDING_CACHE_GROWTH, "", pid,
					     to->event);
	if (f)
		finding_text(f->message, sizeof f->message,
			     "the autocast cache grew in %zu consecutive steps "
			     "without being cleared: %.0f entries (%.0f bytes) "
			     "after step %zu, %.0f entries (%.0f bytes) after "
			     "step %zu (steps: %s); cached casts are freed only "
			     "when the outermost autocast region exits, so a "
			     "region around the whole loop keeps every one",
			     best, from->entries, from->bytes, best_end - best + 1,
			     to->entries, to->bytes, best_end + 1, steps);
}

/* The cache's size at the end of each of the trace's training steps
 * (steps.h): its last counter value in the step, or a thread's
 * aggregates of it (the largest cache among its threads); a step without
 * either keeps the previous one's. */
static void cache_growth_by_steps(struct findings_context *cx, int64_t pid,
				  const struct trace_steps *steps)
{
	const struct trace *t = cx->t;
	size_t nends = (size_t)steps->nsteps;
	struct step_end *ends = calloc(nends ? nends : 1, sizeof *ends);

	if (!ends) {
		cx->failed = true;
		return;
	}
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		int step = steps->step_of[i];
		if (e->pid != pid || step < 0 || (size_t)step >= nends ||
		    steps->evaluating[i])
			continue;
		struct step_end *end = &ends[step];
		if (e->kind == TRACE_CACHE_CLEAR) {
			end->cleared = true;
		} else if (e->kind == TRACE_AGGREGATE) {
			const struct trace_aggregate *g = &e->aggregate;
			end->cleared |= g->cache.clears > 0;
			if (!end->seen || (double)g->cache.entries > end->entries) {
				end->entries = (double)g->cache.entries;
				end->bytes = (double)g->cache.bytes;
			}
			end->ts = INFINITY;
			end->event = i;
			end->seen = true;
		} else if (e->kind == TRACE_COUNTER && e->cat &&
			   !strcmp(e->cat, "amp.cache") &&
			   (!end->seen || e->ts >= end->ts)) {
			for (int k = 0; k < e->counter.nseries; k++) {
				if (!strcmp(e->counter.series[k], "entries"))
					end->entries = e->counter.value[k];
				else if (!strcmp(e->counter.series[k], "bytes"))
					end->bytes = e->counter.value[k];
			}
			end->ts = e->ts;
			end->event = i;
			end->seen = true;
		}
	}
	for (size_t k = 1; k < nends; k++)
		if (!ends[k].seen) {
			bool cleared = ends[k].cleared;
			ends[k] = ends[k - 1];
			ends[k].cleared = cleared;
			if (cleared)
				ends[k].entries = ends[k].bytes = 0;
		}
	report_growth(cx, pid, ends, nends, steps->marker);
	free(ends);
}

static void cache_growth_of(struct findings_context *cx, int64_t pid)
{
	const struct trace *t = cx->t;
	bool updates = false, writes = false;

	/* GradScaler updates mark the steps where there are any (optimizer
	 * writes then do not matter: the first update ends the search) */
	for (size_t i = 0; i < t->nevents && !updates; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->pid != pid)
			continue;
		updates = e->kind == TRACE_SCALER && e->scaler.what &&
			  !strcmp(e->scaler.what, "update");
		writes = writes || is_optimizer_write(e);
	}
	struct step_end *ends = NULL;
	size_t nends = 0, cap = 0;
	struct step_end now = { 0 };
	bool in_write = false, counted = false;
	for (size_t i = 0; i <= t->nevents; i++) {
		const struct trace_event *e = i < t->nevents ? &t->events[i] : NULL;
		if (e && e->pid != pid)
			continue;
		bool boundary_before = false, boundary_after = false;
		if (!e) {
			boundary_before = counted;
		} else if (updates) {
			boundary_after = e->kind == TRACE_SCALER && e->scaler.what &&
					 !strcmp(e->scaler.what, "update");
		} else if (writes) {
			if (e->kind == TRACE_OP) {
				bool w = is_optimizer_write(e);
				boundary_before = in_write && !w;
				in_write = w;
			}
		} else {
			boundary_before = e->kind == TRACE_SCOPE_BEGIN &&
					  e->scope.depth == 1 && counted;
		}
		for (int pass = 0; pass < 2; pass++) {
			if (pass == 1 && e) {
				if (e->kind == TRACE_COUNTER && e->cat &&
				    !strcmp(e->cat, "amp.cache")) {
					for (int s = 0; s < e->counter.nseries; s++) {
						if (!strcmp(e->counter.series[s], "entries"))
							now.entries = e->counter.value[s];
						else if (!strcmp(e->counter.series[s], "bytes"))
							now.bytes = e->counter.value[s];
					}
					now.event = i;
				}
				if (e->kind == TRACE_CACHE_CLEAR)
					now.cleared = true;
				counted = true;
			}
			bool boundary = pass == 0 ? boundary_before : boundary_after;
			if (!boundary)
				continue;
			if (nends == cap) {
				cap = cap ? cap * 2 : 64;
				struct step_end *grown = realloc(ends, cap * sizeof *grown);
				if (!grown) {
					cx->failed = true;
					free(ends);
					return;
				}
				ends = grown;
			}
			ends[nends++] = now;
			now.cleared = false;
		}
	}
	report_growth(cx, pid, ends, nends,
		      updates ? "GradScaler updates"
		      : writes ? "optimizer updates"
		      : "outermost autocast regions");
	free(ends);
}

/* cache-growth: the autocast cache's entry count, read at the end of
 * each step, rose in CACHE_GROWTH_STEPS consecutive steps with no cache
 * clear.  Steps, per process: the trace's training steps (steps.h) where
 * an optimizer, a GradScaler or the program marked them; else a step
 * ends at each GradScaler `update`; without one, at the end of each
 * optimizer update (a run of in-place forward ops on leaves that require
 * grad); without those, each entry into an outermost autocast region
 * starts one.  (Regions alone cannot mark the steps of this mistake: a
 * region around the whole loop is one.) */
void finding_rule_cache_growth(struct findings_context *cx)
{
	struct finding_pids pids = { 0 };
	struct trace_steps steps;

	if (trace_steps_find(cx->t, &steps) != 0) {
		cx->failed = true;
		return;
	}

	for (size_t i = 0; i < cx->t->nevents; i++)
		if (finding_pid_index(&pids, cx->t->events[i].pid) == SIZE_MAX)
			cx->failed = true;
	for (size_t k = 0; k < pids.count; k++)
		if (trace_steps_are_training(&steps))
			cache_growth_by_steps(cx, pids.items[k], &steps);
		else
			cache_growth_of(cx, pids.items[k]);
	finding_pids_free(&pids);
	trace_steps_free(&steps);
}
