/* Findings computed from a trace (see findings.h).  The rules:
 *
 * backward-under-autocast  a backward op whose autocast.enabled is true,
 *                          unless the region that set it was entered by
 *                          the backward pass itself (its thread's last op
 *                          before it and its first op inside it were
 *                          backward ops: custom_bwd re-entering the
 *                          forward's autocast state).
 * stale-cache              a cast cache hit marked `stale` (its source was
 *                          modified in place after the cached cast was made).
 * cache-growth             the autocast cache's entry count, read at the end
 *                          of each step, rose in CACHE_GROWTH_STEPS
 *                          consecutive steps with no cache clear.
 * autocast-off-in-thread   thread T ran a lower-precision-list op (matmul,
 *                          linear, conv, ...: the policy table's, see
 *                          gen_low_precision_ops.c) in the forward with
 *                          autocast off, while another thread S was inside
 *                          an enabled region R that was already open when
 *                          T made its first event, and R handed T its work
 *                          or took its result: T used a tensor an op of S
 *                          made inside R (DataParallel's scatter), or S
 *                          used inside R a tensor an op of T made (the
 *                          gather).  The trace records no thread creation;
 *                          the hand-off is what says T worked for R, so a
 *                          sibling worker or a thread of its own that
 *                          merely runs while R is open is not reported.
 * dtype-mismatch           an op failed with f16/bf16 and f32/f64 inputs
 *                          where autocast did not cast them (off, or the
 *                          op on none of its lists); says where each
 *                          input's dtype came from and the fix that
 *                          follows (findings_dtype.c).
 * banned-op                an op whose policy is `banned`.
 * scaler-skipped-step      a GradScaler `step` event with step_skipped: a
 *                          warning when steps keep being skipped (a second
 *                          skip after calibration at a scale that has not
 *                          grown since the previous one); info while the
 *                          scale calibrates and for the scaler's normal
 *                          adjustments (findings_steps.c).
 * scaler-collapse          a scale below SCALER_COLLAPSE_SCALE, or
 *                          SCALER_COLLAPSE_HALVINGS updates in a row that
 *                          each lowered the scale.
 * redundant-cast           a cast the program wrote (an explicit `to`
 *                          op of the forward between f32/f64 and f16/bf16,
 *                          not inside a composite) that was undone (every
 *                          use of its result cast it back, by autocast for
 *                          an op or by the program) or repeated (autocast
 *                          cast the same unchanged source to the same dtype
 *                          for an op given the source rather than the
 *                          copy).  Autocast's own casts alone (one
 *                          activation cast for each of q, k and v) and
 *                          autograd's (backward) are never reported
 *                          (findings_casts.c).
 * cache-disabled           a cacheable cast redone (cache_enabled off).
 * op-error                 an op failed, not explained by the kinds above.
 * policy-divergence        a cast by TorchScript's autocast ops, or a
 *                          table op under autocast with no region open
 *                          (findings_divergence.c).
 * fp16-overflow, cast-underflow, process-died, recording-stopped and any
 *                          other kind: amp.diag events of the file (libamp,
 *                          amptrace run and its recorder); an fp16-overflow
 *                          of a backward op followed by a skipped step
 *                          before the scaler's next update is the scaler's
 *                          (scaler-skipped-step), not reported.
 *
 * Steps (for cache-growth), per process: a step ends at each GradScaler
 * `update`; without one, at the end of each optimizer update (a run of
 * in-place forward ops on leaves that require grad); without those, each
 * entry into an outermost autocast region starts one. */
#include "findings_internal.h"

#include <cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The table's order; kinds it does not know (amp.diag events of other
 * producers) after its own. */
static int kind_rank(const char *name)
{
	const struct finding_kind *k = finding_kind_lookup(name);

	return k ? (int)(k - finding_kinds) : FINDING_KIND_COUNT;
}

/* ----------------------------------------------------------- op rules */

static void rule_banned(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128];

	if (!op->policy || op->policy[0] != 'b' || strcmp(op->policy, "banned"))
		return;
	trace_op_label(op, label, sizeof label);
	struct trace_finding *f =
		finding_of(cx, FINDING_BANNED_OP, label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	f->tensor = op->ninputs ? op->inputs[0].id : 0;
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) is banned under %s autocast%s%s. PyTorch: "
		     "\"torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss "
		     "are unsafe to autocast. Many models use a sigmoid layer right "
		     "before the binary cross entropy layer. In this case, combine "
		     "the two layers using "
		     "torch.nn.functional.binary_cross_entropy_with_logits or "
		     "torch.nn.BCEWithLogitsLoss. binary_cross_entropy_with_logits and "
		     "BCEWithLogits are safe to autocast.\" Otherwise compute the loss "
		     "with autocast disabled on .float() inputs",
		     label, (unsigned long long)op->op_id,
		     op->autocast.device ? op->autocast.device : op->device,
		     op->emulated ? " (emulated)" : "",
		     finding_op_failed(op) ? ", so it failed" : "");
}

static void rule_op_error(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_op *op = &e->op;
	char label[128];

	if (!finding_op_failed(op))
		return;
	trace_op_label(op, label, sizeof label);
	struct trace_finding *f =
		finding_of(cx, FINDING_OP_ERROR, label, e->pid, i);
	if (!f)
		return;
	f->op_id = op->op_id;
	finding_text(f->message, sizeof f->message, "%s (op %llu, thread %lld) "
		     "failed: %s", label, (unsigned long long)op->op_id,
		     (long long)e->tid, op->error ? op->error : "(no message)");
}

/* --------------------------------------------------------- cast rules */

static void rule_stale(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	char label[128], tensor[192];

	if (!c->stale)
		return;
	struct trace_finding *f =
		finding_of(cx, FINDING_STALE_CACHE, "", e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	finding_text(f->message, sizeof f->message,
		     "%s (op %llu) used the cached %s->%s cast of %s made before the "
		     "tensor was updated in place (an optimizer step inside the same "
		     "autocast region): the forward computed with the old weights; "
		     "the cache is cleared only when the outermost region exits, so "
		     "enter autocast per iteration around forward + loss only",
		     finding_op_label(cx, e->pid, c->op_id, label, sizeof label),
		     (unsigned long long)c->op_id, c->from, c->to,
		     finding_tensor_label(cx, e->pid, c->tensor, tensor, sizeof tensor));
}

static void rule_cache_disabled(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_cast *c = &e->cast;
	char tensor[192];

	if (!c->cache || strcmp(c->cache, "disabled"))
		return;
	struct trace_finding *f =
		finding_of(cx, FINDING_CACHE_DISABLED, "", e->pid, i);
	if (!f)
		return;
	f->op_id = c->op_id;
	f->tensor = c->tensor;
	finding_text(f->message, sizeof f->message,
		     "the cacheable %s->%s cast of %s was redone because the "
		     "autocast cache is disabled (cache_enabled=False)",
		     c->from, c->to,
		     finding_tensor_label(cx, e->pid, c->tensor, tensor, sizeof tensor));
}

/* ---------------------------------------------------- amp.diag events */

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
	for (size_t j = i + 1; j < cx->t->nevents; j++) {
		const struct trace_event *n = &cx->t->events[j];
		if (n->pid != e->pid || n->kind != TRACE_SCALER || !n->scaler.what)
			continue;
		if (!strcmp(n->scaler.what, "step") && n->scaler.step_skipped)
			return true;
		if (!strcmp(n->scaler.what, "update"))
			return false;
	}
	return false;
}

static void fold_diag(struct findings_context *cx, size_t i)
{
	const struct trace_event *e = &cx->t->events[i];
	const struct trace_diag *d = &e->diag;
	const struct finding_kind *k = finding_kind_lookup(d->kind);
	char label[128], site[160];

	if (!d->kind)
		return;
	if (!strcmp(d->kind, "fp16-overflow") &&
	    overflow_handled_by_scaler(cx, i))
		return;
	/* the bridge's text of a dtype error is in its dtype-mismatch */
	if (!strcmp(d->kind, "op-error") &&
	    finding_op_has_dtype_mismatch(cx, e->pid, d->op_id))
		return;
	/* a finding amptrace appended earlier: already computed */
	if (k && !k->value_dependent) {
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
	} else {
		finding_text(site, sizeof site, "%s",
			     d->op_id ? finding_op_label(cx, e->pid, d->op_id, label, sizeof label) : "");
	}
	struct trace_finding *f = finding_at(cx, d->kind, site, e->pid, i);
	if (!f)
		return;
	f->from_trace = true;
	f->op_id = d->op_id;
	f->tensor = d->tensor;
	finding_text(f->message, sizeof f->message, "%s", d->message ? d->message : "");
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
	const struct trace *trace = ix->trace;
	struct finding_lp_memo lp_memo = { 0 };
	struct findings_context cx = { .lp_memo = &lp_memo, .t = trace,
				      .ix = ix,
			      .out = out };
	struct finding_regions regions;
	struct finding_casts casts = { 0 };

	*out = (struct findings){ 0 };
	cx.table = findings_policy_table(trace);
	finding_regions_build(&cx, &regions);
	for (size_t i = 0; i < trace->nevents; i++) {
		const struct trace_event *e = &trace->events[i];
		if (e->kind == TRACE_OP) {
			finding_rule_backward(&cx, &regions, i);
			rule_banned(&cx, i);
			bool policy_banned = e->op.policy &&
					     e->op.policy[0] == 'b' &&
					     !strcmp(e->op.policy, "banned");
			if (!finding_rule_dtype_mismatch(&cx, i) && !policy_banned)
				rule_op_error(&cx, i);
			finding_rule_thread(&cx, &regions, i);
		} else if (e->kind == TRACE_CAST) {
			rule_stale(&cx, i);
			rule_cache_disabled(&cx, i);
		}
		finding_rule_redundant(&cx, &casts, i);
	}
	finding_rule_scaler(&cx);
	finding_rule_cache_growth(&cx);
	finding_rule_divergence(&cx);
	for (size_t i = 0; i < trace->nevents; i++)
		if (trace->events[i].kind == TRACE_DIAG)
			fold_diag(&cx, i);
	trace_sort(out->items, out->count, sizeof *out->items, compare_findings);

	finding_regions_free(&regions);
	finding_casts_free(&cx, &casts);
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

const char *findings_framework(const struct trace *trace)
{
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(trace->header,
							  "framework");
	const cJSON *procs = cJSON_GetObjectItemCaseSensitive(trace->end,
							      "processes");

	/* Traces of format 1.0 name it per process only. */
	if (!cJSON_IsString(f) && cJSON_IsArray(procs))
		f = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetArrayItem(procs, 0), "framework");
	return cJSON_IsString(f) ? f->valuestring : NULL;
}

int findings_policy_table(const struct trace *trace)
{
	static const char tag[] = "(policy table: ";
	const char *framework = findings_framework(trace);
	const char *at = framework ? strstr(framework, tag) : NULL;
	int newest = finding_policy_table_count - 1;

	if (!at)
		return newest;
	at += sizeof tag - 1;
	size_t len = strcspn(at, ",)");
	for (int v = 0; v < finding_policy_table_count; v++)
		if (strlen(finding_policy_tables[v]) == len &&
		    !strncmp(at, finding_policy_tables[v], len))
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
