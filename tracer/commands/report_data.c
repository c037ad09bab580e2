/* The report's adapter (see report_data.h): with its module tree
 * (report_modules.c), the only file of the report that reads the trace
 * model.  One pass over a loaded trace and its
 * analysis (steps, findings) feeds report_agg.h's records; the header and
 * the findings are written here.  The page's JSON:
 *
 *   trace, generator, format, framework, command, host, devices[],
 *   duration_us, exit, truncated, note, counts{events, ops, casts,
 *   regions, scaler, kernels, diag}, steps{count, marker, marked}, graph_step,
 *   graph{drawn, why, trace} (report.c), findings[] (most severe first,
 *   a job's ranks' alike findings as one, the lowest rank's: kind,
 *   severity, count, ranks, each, message, fix, op_id, op, phase, tensor,
 *   pid, step, group: the op-table row), and from report_agg.c: dtypes[],
 *   directions[] ("f32->f16"), processes[] (pid, rank, name, steps; per
 *   step ops{dtype: []}, time_us{dtype: []}, casts{direction: []},
 *   cast_bytes[], hits[], misses[], uncacheable[]; scale[] (step, scale,
 *   found_inf, skipped); op_table[], cast_table[], reasons[], regions[],
 *   regions_aggregated: those entered in its aggregated steps),
 *   and from report_modules.c: modules (null, or depth and rows[]: the
 *   module tree, summary --json's module rows with depth, name, class).
 *
 * Steps are the analysis's (FORMAT.md §8), counted per process.  Op time
 * per step counts top-level ops only (parent_op_id 0), so that an op
 * running inside another is not counted twice. */
#include "progress.h"
#include "report_data.h"

#include "analyze.h"
#include "report_agg.h"
#include "report_modules.h"
#include "trace.h"
#include "trace_schema.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct builder {
	const struct trace *t;
	struct analysis a;
	struct report_agg *agg;
	int *group_of;          /* per event: an op's group, or -1 */
};

static void add_string_or_null(cJSON *object, const char *key, const char *s)
{
	if (s)
		cJSON_AddStringToObject(object, key, s);
	else
		cJSON_AddNullToObject(object, key);
}

/* A step recorded as aggregates, row by row: its ops' time is summed
 * over nested ones too (the rows do not say which ran inside another). */
static void tabulate_aggregate(struct builder *b, const struct trace_event *e,
			       int step)
{
	const struct trace_aggregate *g = &e->aggregate;

	for (int k = 0; k < g->nops; k++) {
		const struct trace_aggregate_op *o = &g->ops[k];
		struct report_op r = {
			.pid = e->pid, .tid = e->tid, .step = step,
			.op = o->op, .overload = o->overload, .phase = o->phase,
			.policy = o->policy, .dtype = o->dtype,
			.dur_us = (double)o->dur_ns / 1000.0,
			.top_level = true, .count = o->count, .aggregated = true,
		};
		report_agg_op(b->agg, &r);
	}
	for (int k = 0; k < g->ncasts; k++) {
		const struct trace_aggregate_cast *c = &g->casts[k];
		if (c->origin)
			continue; /* as TRACE_OTHER_CAST: not autocast's */
		struct report_cast r = {
			.pid = e->pid, .tid = e->tid, .step = step,
			.from = c->from, .to = c->to, .cache = c->cache,
			.bytes = c->bytes, .dur_us = (double)c->dur_ns / 1000.0,
			.count = c->count,
			.aggregated = true,
		};
		report_agg_cast(b->agg, &r);
		if (strcmp(c->cache, "hit"))
			report_agg_casts_for_op(b->agg, e->pid, c->op, c->count,
						c->bytes);
	}
	if (g->regions)
		report_agg_aggregated_regions(b->agg, e->pid, step,
					      (uint64_t)g->regions);
}

/* The processes of the group the page opens on (ranks.h), every one the
 * trace names; false when out of memory. */
static bool mark_opening(struct builder *b)
{
	struct ranks_training training;
	const struct trace_ranks *r = &b->a.ranks;

	if (!trace_ranks_training(r, b->t, b->a.evaluating, &training))
		return false;
	for (size_t k = 0; k < r->nprocesses; k++)
		if (r->processes[k].group == training.first)
			report_agg_process_opens(b->agg, r->processes[k].pid);
	return true;
}

/* Every op, cast, GradScaler and region event, as report_agg's records. */
static void tabulate(struct builder *b)
{
	const struct trace *t = b->t;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		int step = b->a.step_of[i];
		b->group_of[i] = -1;
		switch (e->kind) {
		case TRACE_META:
			if (e->name && !strcmp(e->name, "process_name"))
				report_agg_process(b->agg, e->pid, e->meta.rank,
						   e->meta.value);
			break;
		case TRACE_OP: {
			const struct trace_op *op = &e->op;
			struct report_op r = {
				.pid = e->pid, .tid = e->tid, .step = step,
				.op = op->op, .overload = op->overload,
				.phase = op->phase, .policy = op->policy,
				.dtype = analysis_output_dtype(op),
				.dur_us = e->dur, .top_level = !op->parent_op_id,
				.count = 1,
			};
			b->group_of[i] = report_agg_op(b->agg, &r);
			break;
		}
		case TRACE_CAST: {
			const struct trace_cast *c = &e->cast;
			struct report_cast r = {
				.pid = e->pid, .tid = e->tid, .step = step,
				.from = c->from, .to = c->to, .cache = c->cache,
				.reason = c->reason, .bytes = c->bytes,
				.dur_us = e->dur, .count = 1,
			};
			report_agg_cast(b->agg, &r);
			break;
		}
		case TRACE_AGGREGATE:
			tabulate_aggregate(b, e, step);
			break;
		case TRACE_SCALER:
			report_agg_scaler(b->agg, e->pid, step, e->scaler.scale,
					  e->scaler.found_inf,
					  e->scaler.step_skipped);
			break;
		case TRACE_SCOPE_BEGIN: {
			const struct trace_scope *sc = &e->scope;
			struct report_region r = {
				e->pid, e->tid, step, e->ts, sc->scope,
				sc->device, sc->dtype, sc->enabled, sc->depth,
			};
			report_agg_region_begin(b->agg, &r);
			break;
		}
		case TRACE_SCOPE_END:
			report_agg_region_end(b->agg, e->pid, e->tid, e->ts);
			break;
		default:
			break;
		}
	}
	/* A cast's op ends after it, so the op's event comes later in the
	 * file: casts are given to their op's group once all ops have one. */
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_CAST || !strcmp(e->cast.cache, "hit"))
			continue;
		const struct trace_event *op = analysis_op(&b->a, e->pid,
							   e->cast.op_id);
		if (op)
			report_agg_cast_for_group(b->agg, e->pid,
						  b->group_of[op - t->events],
						  e->cast.bytes);
	}
}

static void emit_findings(const struct builder *b, cJSON *root)
{
	const struct trace *t = b->t;
	cJSON *findings = cJSON_AddArrayToObject(root, "findings");
	char label[160];

	for (size_t i = 0; i < b->a.listed.count; i++) {
		const struct trace_finding *f =
			&b->a.findings[b->a.listed.items[i].finding];
		const struct trace_event *at = &t->events[f->event];
		const struct trace_event *op =
			f->op_id ? analysis_op(&b->a, at->pid, f->op_id) : NULL;
		cJSON *x = rank_finding_json(b->a.findings, &b->a.listed.items[i]);
		cJSON_AddNumberToObject(x, "pid", (double)at->pid);
		cJSON_AddNumberToObject(x, "step", b->a.step_of[f->event]);
		cJSON_AddNullToObject(x, "group");
		if (op) {
			cJSON_ReplaceItemInObject(x, "step", cJSON_CreateNumber(
				b->a.step_of[op - t->events]));
			cJSON_AddStringToObject(x, "op", trace_op_label(
				&op->op, label, sizeof label));
			cJSON_AddStringToObject(x, "phase", op->op.phase);
			int g = b->group_of[op - t->events];
			if (g >= 0) {
				report_agg_group_id(b->agg, op->pid, g, label,
						    sizeof label);
				cJSON_ReplaceItemInObject(
					x, "group", cJSON_CreateString(label));
			}
		}
		cJSON_AddItemToArray(findings, x);
	}
}

/* The framework the trace comes from: the header's (libamp programs
 * before format 1.2 wrote none). */
static void emit_framework(const struct trace *t, cJSON *root)
{
	const char *framework = t->header.framework;

	cJSON_AddStringToObject(root, "framework",
				framework && framework[0] ? framework : "libamp");
}

/* How the program ended, from the trailer. */
static void emit_exit(const struct trace *t, cJSON *root)
{
	const struct trace_exit *exit = t->trailer.exit;
	char text[128] = "unknown (the trace has no trailer)";

	if (exit && trace_exit_is(exit, "exited"))
		snprintf(text, sizeof text, "%s with %d", exit->status,
			 exit->code);
	else if (exit && exit->signal_name)
		snprintf(text, sizeof text, "killed by %s", exit->signal_name);
	else if (exit && exit->status)
		snprintf(text, sizeof text, "%s", exit->status);
	cJSON_AddStringToObject(root, "exit", text);
}

static void emit_header(const struct builder *b, cJSON *root)
{
	const struct trace *t = b->t;
	const struct trace_header *h = &t->header;
	char text[4096] = "";
	size_t len = 0;

	cJSON_AddStringToObject(root, "trace", t->path);
	add_string_or_null(root, "generator", h->generator);
	add_string_or_null(root, "format", t->amptrace ? t->format : NULL);
	emit_framework(t, root);
	for (int i = 0; i < h->ncommand && len < sizeof text; i++)
		len += (size_t)snprintf(text + len, sizeof text - len, "%s%s",
					len ? " " : "", h->command[i]);
	add_string_or_null(root, "command", len ? text : NULL);
	add_string_or_null(root, "host", h->host);
	const cJSON *arg;

	/* devices the ops ran on, "cuda (emulated)" when no GPU ran them */
	cJSON *devices = cJSON_AddArrayToObject(root, "devices");
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_OP || !e->op.device)
			continue;
		snprintf(text, sizeof text, "%s%s", e->op.device,
			 e->op.emulated ? " (emulated)" : "");
		bool seen = false;
		cJSON_ArrayForEach(arg, devices)
			seen |= !strcmp(arg->valuestring, text);
		if (!seen)
			cJSON_AddItemToArray(devices, cJSON_CreateString(text));
	}
	cJSON_AddNumberToObject(root, "duration_us", trace_duration_us(t));
	emit_exit(t, root);
	cJSON *counts = cJSON_AddObjectToObject(root, "counts");
	cJSON_AddNumberToObject(counts, "events",
				(double)(t->nevents + t->dropped));
	cJSON_AddNumberToObject(counts, "ops", (double)t->counts[TRACE_OP]);
	cJSON_AddNumberToObject(counts, "casts", (double)t->counts[TRACE_CAST]);
	cJSON_AddNumberToObject(counts, "regions",
				(double)t->counts[TRACE_SCOPE_BEGIN]);
	cJSON_AddNumberToObject(counts, "scaler", (double)t->counts[TRACE_SCALER]);
	cJSON_AddNumberToObject(counts, "kernels", (double)t->counts[TRACE_KERNEL]);
	cJSON_AddNumberToObject(counts, "diag", (double)t->counts[TRACE_DIAG]);
	cJSON *steps = cJSON_AddObjectToObject(root, "steps");
	cJSON_AddNumberToObject(steps, "count", b->a.nsteps);
	cJSON_AddStringToObject(steps, "marker", b->a.step_marker);
	cJSON_AddBoolToObject(steps, "marked", b->a.steps.marked);
	cJSON_AddNumberToObject(steps, "evaluations", b->a.steps.nevaluations);
	cJSON_AddNumberToObject(steps, "detail", b->a.steps.ndetail);
	cJSON_AddNumberToObject(steps, "aggregated", b->a.steps.naggregated);
	/* the steps cut short: a process or its trace ended in them
	 * (FORMAT.md §8) */
	if (b->a.steps.ncut_short)
		cJSON_AddItemToObject(steps, "cut_short",
				      cJSON_CreateIntArray(b->a.steps.cut_short,
							   b->a.steps.ncut_short));
}

static cJSON *emit(const struct builder *b, const struct report_data *data)
{
	cJSON *root = cJSON_CreateObject();

	emit_header(b, root);
	cJSON_AddBoolToObject(root, "truncated", data->truncated);
	add_string_or_null(root, "note", data->note[0] ? data->note : NULL);
	cJSON_AddNumberToObject(root, "graph_step", data->graph_step);
	emit_findings(b, root);
	cJSON *modules = report_modules_json(b->t);
	if (!modules) {
		cJSON_Delete(root);
		return NULL;
	}
	cJSON_AddItemToObject(root, "modules", modules);
	report_agg_json(b->agg, root);
	return root;
}

int report_data_load(const char *path, struct report_data *data,
		     char *error, size_t error_size)
{
	struct trace trace;
	struct trace_error err;

	*data = (struct report_data){ 0 };
	progress_reading("amptrace report", path);
	int loaded = trace_load_without_flows(path, &trace, &err);
	progress_reading_done();
	if (loaded != 0) {
		snprintf(error, error_size, "%s", err.message);
		return -1;
	}
	struct builder b = { .t = &trace };
	b.group_of = malloc((trace.nevents ? trace.nevents : 1) *
			    sizeof *b.group_of);
	bool failed = !b.group_of || analysis_run(&trace, &b.a) != 0 ||
		      !(b.agg = report_agg_new(b.a.nsteps, trace_dtype_names));
	/* ampview's default view (view.h, VIEW_STEP_DEFAULT): the second
	 * step in full detail, the first being warm-up. */
	data->graph_step = failed ? 0 : b.a.steps.default_step;
	data->truncated = trace_unfinished(&trace);
	if (trace_end_note(&trace, data->note, sizeof data->note))
		data->truncated = true;
	if (!failed) {
		tabulate(&b);
		failed = !mark_opening(&b) || report_agg_failed(b.agg);
	}
	if (!failed)
		data->json = emit(&b, data);
	report_agg_free(b.agg);
	free(b.group_of);
	analysis_free(&b.a);
	trace_free(&trace);
	if (!data->json) {
		snprintf(error, error_size, "%s: out of memory", path);
		return -1;
	}
	return 0;
}

void report_data_free(struct report_data *data)
{
	cJSON_Delete(data->json);
	data->json = NULL;
}
