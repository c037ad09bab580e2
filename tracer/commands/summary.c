/* `amptrace summary [--json] TRACE`: ops by phase and output dtype, casts
 * by direction, the weight-cast cache, autocast regions, GradScaler
 * history, as a table or as JSON; the findings come first, most severe
 * first, each with its one-line fix. */
#include "analyze.h"
#include "command_line.h"
#include "commands.h"
#include "progress.h"
#include "summary_compiled.h"
#include "textfit.h"
#include "trace.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char summary_usage[] =
	"usage: amptrace summary [--json] [--color=WHEN] TRACE.json\n"
	"\n"
	"Reports what a trace shows about mixed precision: first the findings\n"
	"(AMP mistakes, most severe first, each with a one-line fix), then ops\n"
	"by phase (forward, backward, optimizer: the order a step runs them)\n"
	"and output dtype, casts by direction (count, bytes, time),\n"
	"weight-cast cache hits/misses/uncacheable with reasons, autocast\n"
	"regions, the GradScaler's scale history and skipped steps.\n"
	"The text fits 100 columns: long messages wrap, long op names and\n"
	"policies are cut short (--json has them in full); a fix is printed\n"
	"once per kind of finding.\n"
	"\n"
	"  --json          one JSON object instead of tables\n"
	"  --color[=WHEN]  colour the findings by severity: auto (the default:\n"
	"                  when stdout is a terminal and NO_COLOR is unset),\n"
	"                  always (--color alone) or never\n"
	"  -h, --help      this text\n"
	"\n"
	"Exit status: 0, or 2 when the trace cannot be read.\n";

/* Interned strings compare by pointer (trace.c interns them all). */
#define MAX_COLUMNS 16

struct op_row {
	const char *phase, *op, *overload;
	size_t count;
	size_t by_dtype[MAX_COLUMNS + 1]; /* last: no output */
	const char *policies[3];
	double time_us;
};

struct cast_row {
	const char *origin;  /* NULL: autocast's (TRACE_CAST) */
	const char *from, *to;
	size_t casts, hits;
	uint64_t bytes;
	double time_us;
};

struct reason_row {
	const char *reason;
	size_t count;
};

struct region_row {
	const char *scope, *device, *dtype;
	bool enabled;
	size_t entered, ops, casts;
	double time_us;
};

struct summary {
	const struct trace *trace;
	struct analysis a;
	const char *columns[MAX_COLUMNS];
	int ncolumns;
	struct op_row *ops;
	size_t nops;
	struct cast_row *casts;
	size_t ncasts;
	struct reason_row *reasons;
	size_t nreasons;
	/* casts autocast did not make (TRACE_OTHER_CAST), and why */
	struct cast_row *others;
	size_t nothers;
	struct reason_row *other_reasons;
	size_t nother_reasons;
	struct region_row *regions;
	size_t nregions;
	int max_depth;
	size_t processes, threads;
	double duration_us;
};

static void *push(void *array, size_t *n, size_t elem)
{
	char *grown = realloc(array, (*n + 1) * elem);

	if (!grown) {
		fputs("amptrace summary: out of memory\n", stderr);
		exit(2);
	}
	memset(grown + *n * elem, 0, elem);
	(*n)++;
	return grown;
}

static int column_of(struct summary *s, const char *dtype)
{
	for (int i = 0; i < s->ncolumns; i++)
		if (!strcmp(s->columns[i], dtype))
			return i;
	return -1;
}

/* Output dtypes seen, in the usual order, then any others. */
static void collect_columns(struct summary *s)
{
	const struct trace *t = s->trace;
	bool seen[TRACE_DTYPE_COUNT] = { false };

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		const char *d;
		if (e->kind != TRACE_OP || !(d = analysis_output_dtype(&e->op)))
			continue;
		bool known = false;
		for (int k = 0; k < TRACE_DTYPE_COUNT; k++)
			if (!strcmp(d, trace_dtype_names[k]))
				seen[k] = known = true;
		if (!known && column_of(s, d) < 0 && s->ncolumns < MAX_COLUMNS - TRACE_DTYPE_COUNT)
			s->columns[s->ncolumns++] = d;
	}
	const char *others[MAX_COLUMNS];
	int nothers = s->ncolumns;
	memcpy(others, s->columns, sizeof others);
	s->ncolumns = 0;
	for (int k = 0; k < TRACE_DTYPE_COUNT; k++)
		if (seen[k])
			s->columns[s->ncolumns++] = trace_dtype_names[k];
	for (int k = 0; k < nothers; k++)
		s->columns[s->ncolumns++] = others[k];
}

struct thread_stack {
	int64_t pid, tid;
	size_t *open; /* region row of each open B */
	double *since;
	size_t n, cap;
};

static struct thread_stack *stack_for(struct thread_stack **stacks,
				      size_t *n, int64_t pid, int64_t tid)
{
	for (size_t i = 0; i < *n; i++)
		if ((*stacks)[i].pid == pid && (*stacks)[i].tid == tid)
			return &(*stacks)[i];
	*stacks = push(*stacks, n, sizeof **stacks);
	struct thread_stack *st = &(*stacks)[*n - 1];
	st->pid = pid;
	st->tid = tid;
	return st;
}

/* Counts an op or cast once for each distinct region open around it. */
static void count_in_regions(struct summary *s, const struct thread_stack *st,
			     bool cast)
{
	for (size_t k = 0; k < st->n; k++) {
		bool again = false;
		for (size_t j = 0; j < k; j++)
			again |= st->open[j] == st->open[k];
		if (again)
			continue;
		if (cast)
			s->regions[st->open[k]].casts++;
		else
			s->regions[st->open[k]].ops++;
	}
}

static struct reason_row *reason_row_for(struct reason_row **rows, size_t *n,
					 const char *reason)
{
	for (size_t k = 0; k < *n; k++)
		if ((*rows)[k].reason == reason || !strcmp((*rows)[k].reason, reason))
			return &(*rows)[k];
	*rows = push(*rows, n, sizeof **rows);
	(*rows)[*n - 1] = (struct reason_row){ .reason = reason };
	return &(*rows)[*n - 1];
}

/* A cast made by autograd or custom_fwd: a table of its own. */
static void count_other_cast(struct summary *s, const struct trace_event *e)
{
	const struct trace_cast *c = &e->cast;
	struct cast_row *row = NULL;

	for (size_t k = 0; k < s->nothers && !row; k++)
		if (!strcmp(s->others[k].origin, c->origin) &&
		    s->others[k].from == c->from && s->others[k].to == c->to)
			row = &s->others[k];
	if (!row) {
		s->others = push(s->others, &s->nothers, sizeof *s->others);
		row = &s->others[s->nothers - 1];
		*row = (struct cast_row){ .origin = c->origin, .from = c->from,
					  .to = c->to };
	}
	row->casts++;
	row->bytes += c->bytes;
	row->time_us += e->dur;
	reason_row_for(&s->other_reasons, &s->nother_reasons,
		       c->reason ? c->reason : "")->count++;
}

static void tabulate(struct summary *s)
{
	const struct trace *t = s->trace;
	struct thread_stack *stacks = NULL;
	size_t nstacks = 0;
	double t0 = INFINITY, t1 = -INFINITY;
	int64_t *pids = NULL;
	size_t npids = 0;

	collect_columns(s);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_META)
			continue;
		if (e->ts < t0)
			t0 = e->ts;
		if (e->ts + e->dur > t1)
			t1 = e->ts + e->dur;
		struct thread_stack *st = stack_for(&stacks, &nstacks, e->pid,
						    e->tid);
		bool new_pid = true;
		for (size_t k = 0; k < npids; k++)
			new_pid &= pids[k] != e->pid;
		if (new_pid) {
			pids = push(pids, &npids, sizeof *pids);
			pids[npids - 1] = e->pid;
		}
		if (e->kind == TRACE_OP) {
			const struct trace_op *op = &e->op;
			struct op_row *row = NULL;
			for (size_t k = 0; k < s->nops && !row; k++)
				if (s->ops[k].op == op->op &&
				    s->ops[k].overload == op->overload &&
				    s->ops[k].phase == op->phase)
					row = &s->ops[k];
			if (!row) {
				s->ops = push(s->ops, &s->nops, sizeof *s->ops);
				row = &s->ops[s->nops - 1];
				row->phase = op->phase;
				row->op = op->op;
				row->overload = op->overload;
			}
			row->count++;
			row->time_us += e->dur;
			const char *d = analysis_output_dtype(op);
			int c = d ? column_of(s, d) : -1;
			row->by_dtype[c >= 0 ? c : MAX_COLUMNS]++;
			for (int k = 0; k < 3 && op->policy; k++) {
				if (row->policies[k] == op->policy)
					break;
				if (!row->policies[k]) {
					row->policies[k] = op->policy;
					break;
				}
			}
			count_in_regions(s, st, false);
		} else if (e->kind == TRACE_OTHER_CAST) {
			/* a compiled graph's casts: summary_compiled.c's */
			if (!trace_cast_is_compiled(&e->cast))
				count_other_cast(s, e);
		} else if (e->kind == TRACE_CAST) {
			const struct trace_cast *c = &e->cast;
			struct cast_row *row = NULL;
			for (size_t k = 0; k < s->ncasts && !row; k++)
				if (s->casts[k].from == c->from &&
				    s->casts[k].to == c->to)
					row = &s->casts[k];
			if (!row) {
				s->casts = push(s->casts, &s->ncasts,
						sizeof *s->casts);
				row = &s->casts[s->ncasts - 1];
				row->from = c->from;
				row->to = c->to;
			}
			if (!strcmp(c->cache, "hit")) {
				row->hits++;
			} else {
				row->casts++;
				row->bytes += c->bytes;
				row->time_us += e->dur;
			}
			if (!strcmp(c->cache, "uncacheable")) {
				const char *reason = c->reason ? c->reason : "";
				struct reason_row *r = NULL;
				for (size_t k = 0; k < s->nreasons && !r; k++)
					if (s->reasons[k].reason == reason ||
					    !strcmp(s->reasons[k].reason, reason))
						r = &s->reasons[k];
				if (!r) {
					s->reasons = push(s->reasons, &s->nreasons,
							  sizeof *s->reasons);
					r = &s->reasons[s->nreasons - 1];
					r->reason = reason;
				}
				r->count++;
			}
			count_in_regions(s, st, true);
		} else if (e->kind == TRACE_SCOPE_BEGIN) {
			const struct trace_scope *sc = &e->scope;
			struct region_row *row = NULL;
			for (size_t k = 0; k < s->nregions && !row; k++)
				if (s->regions[k].scope == sc->scope &&
				    s->regions[k].device == sc->device &&
				    s->regions[k].dtype == sc->dtype &&
				    s->regions[k].enabled == sc->enabled)
					row = &s->regions[k];
			if (!row) {
				s->regions = push(s->regions, &s->nregions,
						  sizeof *s->regions);
				row = &s->regions[s->nregions - 1];
				row->scope = sc->scope;
				row->device = sc->device;
				row->dtype = sc->dtype;
				row->enabled = sc->enabled;
			}
			row->entered++;
			if (sc->depth > s->max_depth)
				s->max_depth = sc->depth;
			if (st->n == st->cap) {
				st->cap = st->cap ? st->cap * 2 : 8;
				st->open = realloc(st->open,
						   st->cap * sizeof *st->open);
				st->since = realloc(st->since,
						    st->cap * sizeof *st->since);
				if (!st->open || !st->since) {
					fputs("amptrace summary: out of memory\n",
					      stderr);
					exit(2);
				}
			}
			st->open[st->n] = (size_t)(row - s->regions);
			st->since[st->n++] = e->ts;
		} else if (e->kind == TRACE_SCOPE_END && st->n) {
			st->n--;
			s->regions[st->open[st->n]].time_us +=
				e->ts - st->since[st->n];
		}
	}
	s->processes = npids;
	s->threads = 0;
	for (size_t k = 0; k < nstacks; k++) {
		s->threads += stacks[k].tid != 0; /* tid 0: process-wide */
		free(stacks[k].open);
		free(stacks[k].since);
	}
	free(stacks);
	free(pids);
	s->duration_us = t1 > t0 ? t1 - t0 : 0;
}

static int compare_casts(const void *a, const void *b)
{
	const struct cast_row *x = a, *y = b;
	size_t nx = x->casts + x->hits, ny = y->casts + y->hits;

	return (ny > nx) - (ny < nx);
}

static int compare_reasons(const void *a, const void *b)
{
	const struct reason_row *x = a, *y = b;

	return (y->count > x->count) - (y->count < x->count);
}

/* Forward, backward, optimizer: the order a step runs them in, so the
 * model's ops come first; phases this reader does not know come last. */
static int phase_rank(const char *phase)
{
	static const char *const order[] = { "forward", "backward", "optimizer" };
	int rank = 0;

	while (rank < 3 && strcmp(phase, order[rank]))
		rank++;
	return rank;
}

static int compare_ops(const void *a, const void *b)
{
	const struct op_row *x = a, *y = b;
	int px = phase_rank(x->phase), py = phase_rank(y->phase);

	if (px != py)
		return px - py;
	return (y->count > x->count) - (y->count < x->count);
}

static const char *human_bytes(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, size, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
	return buf;
}

static const char *human_time(double us, char *buf, size_t size)
{
	if (us >= 1e6)
		snprintf(buf, size, "%.3f s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, size, "%.3f ms", us / 1e3);
	else
		snprintf(buf, size, "%.3f us", us);
	return buf;
}

static double hit_rate(const struct analysis *a)
{
	uint64_t n = a->cache_hits + a->cache_misses;

	return n ? (double)a->cache_hits / (double)n : NAN;
}

/* Findings come first: they are what a user acts on.  The analysis has
 * them most severe first. */
/* ANSI colours of the severities: red, yellow, cyan. */
static const char *const severity_color[FINDING_SEVERITY_COUNT] = {
	[FINDING_ERROR] = "\033[1;31m",
	[FINDING_WARNING] = "\033[33m",
	[FINDING_INFO] = "\033[36m",
};

/* A kind's fix is the same for each of its findings: said once, under
 * the first. */
static bool fix_said(const struct analysis *a, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!strcmp(a->findings[j].kind, a->findings[i].kind))
			return true;
	return false;
}

static void print_findings(const struct analysis *a, FILE *out, bool color)
{
	fputs("\nFindings (most severe first)\n", out);
	if (!a->nfindings)
		fputs("  (none)\n", out);
	for (size_t i = 0; i < a->nfindings; i++) {
		const struct trace_finding *f = &a->findings[i];
		const char *name = finding_severity_name(f->severity);
		if (color)
			fprintf(out, "  %s%s\033[0m%*s %s",
				severity_color[f->severity], name,
				7 - (int)strlen(name), "", f->kind);
		else
			fprintf(out, "  %-7s %s", name, f->kind);
		if (f->count > 1)
			fprintf(out, " (x%zu)", f->count);
		fprintf(out, ": %s\n", f->message);
		if (f->fix && f->fix[0] && !fix_said(a, i))
			fprintf(out, "          fix: %s\n", f->fix);
	}
}

/* LABEL in WIDTH columns (padded when PAD), cut short with "..." when
 * longer. */
static void print_cell(FILE *out, const char *label, int width, bool pad)
{
	int n = (int)strlen(label);

	if (n <= width)
		fprintf(out, "%-*s", pad ? width : 0, label);
	else
		fprintf(out, "%.*s...", width - 3, label);
}

/* What produced the trace and the policy table its findings' reasons
 * come from (a libamp trace, or one without a framework: the newest). */
static void print_framework(const struct trace *t, FILE *out)
{
	const char *framework = findings_framework(t);

	if (!framework)
		return;
	fprintf(out, "framework: %s", framework);
	if (!strstr(framework, "policy table"))
		fprintf(out, " (policy table: %s)",
			finding_policy_table_name(findings_policy_table(t)));
	fputc('\n', out);
}

/* The casts autocast did not make, when there are any: autograd's in
 * backward, custom_fwd's (FORMAT.md §3.3 origin). */
static void print_other_casts(struct summary *s, FILE *out)
{
	char label[64], b1[32], b2[32];

	if (!s->nothers)
		return;
	fputs("\nCasts made outside autocast (counted apart from autocast's)\n",
	      out);
	fprintf(out, "  %-11s %-14s %7s %12s %12s\n", "origin", "direction",
		"casts", "bytes", "time");
	trace_sort(s->others, s->nothers, sizeof *s->others, compare_casts);
	for (size_t i = 0; i < s->nothers; i++) {
		const struct cast_row *r = &s->others[i];
		snprintf(label, sizeof label, "%s->%s", r->from, r->to);
		fprintf(out, "  %-11s %-14s %7zu %12s %12s\n", r->origin, label,
			r->casts, human_bytes(r->bytes, b1, sizeof b1),
			human_time(r->time_us, b2, sizeof b2));
	}
	fputs("  because:\n", out);
	trace_sort(s->other_reasons, s->nother_reasons,
		   sizeof *s->other_reasons, compare_reasons);
	for (size_t i = 0; i < s->nother_reasons; i++)
		fprintf(out, "    %7zu  %s\n", s->other_reasons[i].count,
			s->other_reasons[i].reason);
}

static void print_text(struct summary *s, FILE *out, bool color)
{
	const struct trace *t = s->trace;
	const struct analysis *a = &s->a;
	char b1[64], b2[64], label[160], note[512];

	fprintf(out, "%s: ", t->path);
	if (t->amptrace)
		fprintf(out, "amptrace trace format %s", t->format);
	else
		fprintf(out, "Chrome trace (not written by amptrace)");
	fprintf(out, "; %zu process%s, %zu thread%s, %zu events, %s\n",
		s->processes, s->processes == 1 ? "" : "es", s->threads,
		s->threads == 1 ? "" : "s", t->nevents,
		human_time(s->duration_us, b1, sizeof b1));
	if (trace_end_note(t, note, sizeof note))
		fprintf(out, "note: %s\n", note);
	print_framework(t, out);
	if (strcmp(a->step_marker, "none"))
		fprintf(out, "steps: %d (marked by %s)\n", a->nsteps,
			a->step_marker);
	else
		fprintf(out, "steps: %d (no scaler update or autocast region "
			     "marks them)\n",
			a->nsteps);
	print_findings(a, out, color);

	/* The op column fits the longest name (ATen has some long ones) as
	 * far as the row, policies included, fits TEXTFIT_WIDTH; names and
	 * policies longer than that are cut short. */
	int width = 28, policy = 0;
	for (size_t i = 0; i < s->nops; i++) {
		const struct op_row *r = &s->ops[i];
		int n = (int)(strlen(r->op) + 1 + strlen(r->overload)), p = 0;
		if (n > width)
			width = n;
		for (int k = 0; k < 3 && r->policies[k]; k++)
			p += (k ? 2 : 0) + (int)strlen(r->policies[k]);
		if (r->by_dtype[MAX_COLUMNS])
			p += 24;   /* " (N without output)" */
		if (p > policy)
			policy = p;
	}
	int fixed = 2 + 10 + 1 + 7 + 7 * s->ncolumns + 11 + 2;
	if (fixed + width + policy > TEXTFIT_WIDTH)
		width = TEXTFIT_WIDTH - fixed - policy;
	if (width < 20)
		width = 20;
	int room = TEXTFIT_WIDTH - fixed - width;
	if (room < 8)   /* more dtype columns than fit: the row wraps */
		room = 8;
	fputs("\nOps by phase and output dtype\n", out);
	if (!s->nops)
		fputs("  (no ops)\n", out);
	else {
		fprintf(out, "  %-9s %-*s %7s", "phase", width, "op", "count");
		for (int c = 0; c < s->ncolumns; c++)
			fprintf(out, " %6s", s->columns[c]);
		fprintf(out, " %10s  %s\n", "time", "policy");
	}
	trace_sort(s->ops, s->nops, sizeof *s->ops, compare_ops);
	for (size_t i = 0; i < s->nops; i++) {
		const struct op_row *r = &s->ops[i];
		snprintf(label, sizeof label, "%s%s%s", r->op,
			 r->overload[0] ? "." : "", r->overload);
		fprintf(out, "  %-9s ", r->phase);
		print_cell(out, label, width, true);
		fprintf(out, " %7zu", r->count);
		for (int c = 0; c < s->ncolumns; c++) {
			if (r->by_dtype[c])
				fprintf(out, " %6zu", r->by_dtype[c]);
			else
				fprintf(out, " %6s", "-");
		}
		fprintf(out, " %10s  ", human_time(r->time_us, b1, sizeof b1));
		char policies[160];
		int used = 0;
		for (int k = 0; k < 3 && r->policies[k]; k++)
			used += snprintf(policies + used, sizeof policies - used,
					 "%s%s", k ? ", " : "", r->policies[k]);
		if (r->by_dtype[MAX_COLUMNS])
			snprintf(policies + used, sizeof policies - used,
				 "%s(%zu without output)",
				 r->policies[0] ? " " : "", r->by_dtype[MAX_COLUMNS]);
		print_cell(out, policies, room, false);
		fputc('\n', out);
	}

	fputs("\nCasts by direction (cache hits cost no work and are counted "
	      "apart)\n", out);
	trace_sort(s->casts, s->ncasts, sizeof *s->casts, compare_casts);
	if (!s->ncasts)
		fputs("  (no autocast casts)\n", out);
	else
		fprintf(out, "  %-14s %7s %7s %12s %12s\n", "direction", "casts",
			"hits", "bytes", "time");
	for (size_t i = 0; i < s->ncasts; i++) {
		const struct cast_row *r = &s->casts[i];
		snprintf(label, sizeof label, "%s->%s", r->from, r->to);
		fprintf(out, "  %-14s %7zu %7zu %12s %12s\n", label, r->casts,
			r->hits, human_bytes(r->bytes, b1, sizeof b1),
			human_time(r->time_us, b2, sizeof b2));
	}

	print_other_casts(s, out);
	summary_compiled_text(t, out);

	fputs("\nWeight-cast cache\n", out);
	fprintf(out, "  hits %llu, misses %llu, uncacheable %llu, disabled %llu",
		(unsigned long long)a->cache_hits,
		(unsigned long long)a->cache_misses,
		(unsigned long long)a->cache_uncacheable,
		(unsigned long long)a->cache_disabled);
	double rate = hit_rate(a);
	if (isnan(rate))
		fputs("; hit rate n/a (no cacheable casts)\n", out);
	else
		fprintf(out, "; hit rate %.2f (hits / (hits + misses))\n", rate);
	fprintf(out, "  cleared %llu time%s; at most %llu entries, %s\n",
		(unsigned long long)a->cache_clears,
		a->cache_clears == 1 ? "" : "s",
		(unsigned long long)a->cache_max_entries,
		human_bytes(a->cache_max_bytes, b1, sizeof b1));
	trace_sort(s->reasons, s->nreasons, sizeof *s->reasons, compare_reasons);
	if (s->nreasons)
		fputs("  uncacheable because:\n", out);
	for (size_t i = 0; i < s->nreasons; i++)
		fprintf(out, "    %7zu  %s\n", s->reasons[i].count,
			s->reasons[i].reason);

	fputs("\nAutocast regions\n", out);
	if (!s->nregions)
		fputs("  (none)\n", out);
	else
		fprintf(out, "  %-24s %-6s %-6s %8s %8s %8s %12s\n", "region",
			"device", "dtype", "entered", "ops", "casts", "time");
	for (size_t i = 0; i < s->nregions; i++) {
		const struct region_row *r = &s->regions[i];
		fprintf(out, "  %-24s %-6s %-6s %8zu %8zu %8zu %12s\n",
			r->scope ? r->scope : "(unnamed)",
			r->device ? r->device : "?",
			r->enabled ? (r->dtype ? r->dtype : "?") : "off",
			r->entered, r->ops, r->casts,
			human_time(r->time_us, b1, sizeof b1));
	}
	if (s->nregions)
		fprintf(out, "  deepest nesting: %d\n", s->max_depth);

	fputs("\nGradScaler\n", out);
	if (!t->counts[TRACE_SCALER]) {
		fputs("  (no scaler events)\n", out);
	} else {
		fprintf(out, "  optimizer steps %llu, skipped %llu",
			(unsigned long long)a->scaler_steps,
			(unsigned long long)a->skipped_steps);
		if (a->first_skipped_step >= 0)
			fprintf(out, " (first in step %d)", a->first_skipped_step);
		fputc('\n', out);
		fputs("  scale:", out);
		for (size_t i = 0; i < a->nscale_history && i < 12; i++)
			fprintf(out, "%s%g (step %d%s)", i ? " -> " : " ",
				a->scale_history[i].scale, a->scale_history[i].step,
				a->scale_history[i].found_inf ? ", inf found" : "");
		if (a->nscale_history > 12)
			fprintf(out, " -> ... %zu more changes, final %g",
				a->nscale_history - 12, a->scale_final);
		fputc('\n', out);
	}
}

/* "libamp" for what only libamp sees (value checks) and amp.diag kinds
 * amptrace does not know; "amptrace" for what it computes from events
 * (even when `amptrace run` wrote it into the file). */
static const char *finding_source(const struct trace_finding *f)
{
	const struct finding_kind *k = finding_kind_lookup(f->kind);

	return (k && k->source == FINDING_FROM_VALUE_CHECKS) ||
			       (!k && f->from_trace)
		       ? "libamp"
		       : "amptrace";
}

/* Each finding with its severity, one-line fix and the op and tensor at
 * fault (0: none); `source` says who found it. */
static void findings_json(const struct analysis *a, cJSON *root)
{
	const struct trace *t = a->trace;
	cJSON *findings = cJSON_AddArrayToObject(root, "findings");

	for (size_t i = 0; i < a->nfindings; i++) {
		const struct trace_finding *f = &a->findings[i];
		cJSON *o = finding_json(f);
		cJSON_AddNumberToObject(o, "line", (double)t->events[f->event].line);
		cJSON_AddStringToObject(o, "source", finding_source(f));
		cJSON_AddItemToArray(findings, o);
	}
}

static cJSON *number_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

static void print_json(struct summary *s, FILE *out)
{
	const struct trace *t = s->trace;
	const struct analysis *a = &s->a;
	char note[512], label[160];
	cJSON *root = cJSON_CreateObject();

	cJSON_AddStringToObject(root, "trace", t->path);
	if (t->amptrace)
		cJSON_AddStringToObject(root, "format", t->format);
	else
		cJSON_AddNullToObject(root, "format");
	cJSON_AddBoolToObject(root, "truncated",
			      t->truncated || (t->amptrace && !t->finalized));
	const char *end = trace_end_note(t, note, sizeof note);
	if (end)
		cJSON_AddStringToObject(root, "note", end);
	else
		cJSON_AddNullToObject(root, "note");
	const char *framework = findings_framework(t);
	if (framework)
		cJSON_AddStringToObject(root, "framework", framework);
	else
		cJSON_AddNullToObject(root, "framework");
	cJSON_AddStringToObject(root, "policy_table",
		finding_policy_table_name(findings_policy_table(t)));
	cJSON_AddNumberToObject(root, "processes", (double)s->processes);
	cJSON_AddNumberToObject(root, "threads", (double)s->threads);
	cJSON_AddNumberToObject(root, "events", (double)t->nevents);
	cJSON_AddNumberToObject(root, "duration_us", s->duration_us);
	cJSON *steps = cJSON_AddObjectToObject(root, "steps");
	cJSON_AddNumberToObject(steps, "count", a->nsteps);
	cJSON_AddStringToObject(steps, "marker", a->step_marker);
	findings_json(a, root);

	cJSON *ops = cJSON_AddArrayToObject(root, "ops");
	trace_sort(s->ops, s->nops, sizeof *s->ops, compare_ops);
	for (size_t i = 0; i < s->nops; i++) {
		const struct op_row *r = &s->ops[i];
		cJSON *o = cJSON_CreateObject();
		snprintf(label, sizeof label, "%s%s%s", r->op,
			 r->overload[0] ? "." : "", r->overload);
		cJSON_AddStringToObject(o, "phase", r->phase);
		cJSON_AddStringToObject(o, "op", label);
		cJSON_AddNumberToObject(o, "count", (double)r->count);
		cJSON *by = cJSON_AddObjectToObject(o, "outputs");
		for (int c = 0; c < s->ncolumns; c++)
			if (r->by_dtype[c])
				cJSON_AddNumberToObject(by, s->columns[c],
							(double)r->by_dtype[c]);
		if (r->by_dtype[MAX_COLUMNS])
			cJSON_AddNumberToObject(by, "none",
						(double)r->by_dtype[MAX_COLUMNS]);
		cJSON *pol = cJSON_AddArrayToObject(o, "policies");
		for (int k = 0; k < 3 && r->policies[k]; k++)
			cJSON_AddItemToArray(pol, cJSON_CreateString(r->policies[k]));
		cJSON_AddNumberToObject(o, "time_us", r->time_us);
		cJSON_AddItemToArray(ops, o);
	}

	cJSON *casts = cJSON_AddArrayToObject(root, "casts");
	trace_sort(s->casts, s->ncasts, sizeof *s->casts, compare_casts);
	for (size_t i = 0; i < s->ncasts; i++) {
		const struct cast_row *r = &s->casts[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "from", r->from);
		cJSON_AddStringToObject(o, "to", r->to);
		cJSON_AddNumberToObject(o, "casts", (double)r->casts);
		cJSON_AddNumberToObject(o, "hits", (double)r->hits);
		cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
		cJSON_AddNumberToObject(o, "time_us", r->time_us);
		cJSON_AddItemToArray(casts, o);
	}

	cJSON *others = cJSON_AddArrayToObject(root, "other_casts");
	trace_sort(s->others, s->nothers, sizeof *s->others, compare_casts);
	for (size_t i = 0; i < s->nothers; i++) {
		const struct cast_row *r = &s->others[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "origin", r->origin);
		cJSON_AddStringToObject(o, "from", r->from);
		cJSON_AddStringToObject(o, "to", r->to);
		cJSON_AddNumberToObject(o, "casts", (double)r->casts);
		cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
		cJSON_AddNumberToObject(o, "time_us", r->time_us);
		cJSON_AddItemToArray(others, o);
	}

	cJSON *cache = cJSON_AddObjectToObject(root, "cache");
	cJSON_AddNumberToObject(cache, "hits", (double)a->cache_hits);
	cJSON_AddNumberToObject(cache, "misses", (double)a->cache_misses);
	cJSON_AddNumberToObject(cache, "uncacheable", (double)a->cache_uncacheable);
	cJSON_AddNumberToObject(cache, "disabled", (double)a->cache_disabled);
	cJSON_AddItemToObject(cache, "hit_rate", number_or_null(hit_rate(a)));
	cJSON_AddNumberToObject(cache, "clears", (double)a->cache_clears);
	cJSON_AddNumberToObject(cache, "max_entries", (double)a->cache_max_entries);
	cJSON_AddNumberToObject(cache, "max_bytes", (double)a->cache_max_bytes);
	cJSON *reasons = cJSON_AddArrayToObject(cache, "uncacheable_reasons");
	trace_sort(s->reasons, s->nreasons, sizeof *s->reasons, compare_reasons);
	for (size_t i = 0; i < s->nreasons; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "reason", s->reasons[i].reason);
		cJSON_AddNumberToObject(o, "count", (double)s->reasons[i].count);
		cJSON_AddItemToArray(reasons, o);
	}

	cJSON *regions = cJSON_AddArrayToObject(root, "regions");
	for (size_t i = 0; i < s->nregions; i++) {
		const struct region_row *r = &s->regions[i];
		cJSON *o = cJSON_CreateObject();
		if (r->scope)
			cJSON_AddStringToObject(o, "scope", r->scope);
		else
			cJSON_AddNullToObject(o, "scope");
		cJSON_AddStringToObject(o, "device", r->device ? r->device : "");
		cJSON_AddStringToObject(o, "dtype", r->dtype ? r->dtype : "");
		cJSON_AddBoolToObject(o, "enabled", r->enabled);
		cJSON_AddNumberToObject(o, "entered", (double)r->entered);
		cJSON_AddNumberToObject(o, "ops", (double)r->ops);
		cJSON_AddNumberToObject(o, "casts", (double)r->casts);
		cJSON_AddNumberToObject(o, "time_us", r->time_us);
		cJSON_AddItemToArray(regions, o);
	}
	cJSON_AddNumberToObject(root, "max_depth", s->max_depth);

	if (t->counts[TRACE_SCALER]) {
		cJSON *sc = cJSON_AddObjectToObject(root, "scaler");
		cJSON_AddNumberToObject(sc, "steps", (double)a->scaler_steps);
		cJSON_AddNumberToObject(sc, "skipped_steps", (double)a->skipped_steps);
		cJSON_AddItemToObject(sc, "scale_min", number_or_null(a->scale_min));
		cJSON_AddItemToObject(sc, "scale_max", number_or_null(a->scale_max));
		cJSON_AddItemToObject(sc, "scale_final",
				      number_or_null(a->scale_final));
		cJSON *history = cJSON_AddArrayToObject(sc, "history");
		for (size_t i = 0; i < a->nscale_history; i++) {
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "ts", a->scale_history[i].ts);
			cJSON_AddNumberToObject(o, "scale", a->scale_history[i].scale);
			cJSON_AddNumberToObject(o, "step", a->scale_history[i].step);
			cJSON_AddBoolToObject(o, "found_inf",
					      a->scale_history[i].found_inf);
			cJSON_AddItemToArray(history, o);
		}
	} else {
		cJSON_AddNullToObject(root, "scaler");
	}

	summary_compiled_json(t, root);
	char *text = cJSON_Print(root);
	if (text)
		fprintf(out, "%s\n", text);
	free(text);
	cJSON_Delete(root);
}

enum { OPTION_JSON = 256, OPTION_COLOR };

static const struct option summary_options[] = {
	{ "json", no_argument, NULL, OPTION_JSON },
	{ "color", optional_argument, NULL, OPTION_COLOR },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct summary_args {
	const char *path;
	bool json, color;
};

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct summary_args *args)
{
	struct command_line cl = { "amptrace summary", "h", summary_options,
				   argc, argv };
	const char *when = "auto";
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case OPTION_JSON:
			args->json = true;
			break;
		case OPTION_COLOR:
			when = optarg ? optarg : "always";
			break;
		case 'h':
			fputs(summary_usage, stdout);
			return 0;
		default:
			return COMMAND_LINE_BAD_USAGE;
		}
	}
	if (textfit_color(when, &args->color) != 0)
		return command_line_error(&cl, "--color must be auto, always or "
					  "never, not '%s'", when);
	if (optind == argc)
		return command_line_error(&cl, "no trace given");
	if (argc - optind > 1)
		return command_line_error(&cl, "one trace at a time (got '%s' "
					  "and '%s')", argv[optind],
					  argv[optind + 1]);
	args->path = argv[optind];
	return -1;
}

int amptrace_summary(int argc, char **argv)
{
	struct summary_args args = { 0 };
	struct trace trace;
	struct trace_error err;
	char note[512];
	int status = parse_args(argc, argv, &args);

	if (status >= 0)
		return status;
	progress_reading("amptrace summary", args.path);
	int loaded = trace_load(args.path, &trace, &err);
	progress_reading_done();
	if (loaded != 0) {
		fprintf(stderr, "amptrace summary: %s\n", err.message);
		return 2;
	}
	status = summary_print(&trace, args.json, args.color);
	if (status == 0 && trace_end_note(&trace, note, sizeof note) &&
	    (trace.truncated || !trace.finalized))
		fprintf(stderr, "amptrace summary: warning: %s: %s\n",
			args.path, note);
	trace_free(&trace);
	return status;
}

/* The tables, written whole, then fitted to the width line by line. */
static void print_fitted(struct summary *s, bool color)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);

	if (mem) {
		print_text(s, mem, color);
		fclose(mem);
		textfit_write(stdout, text, len, TEXTFIT_WIDTH);
	} else {
		print_text(s, stdout, color);
	}
	free(text);
}

int summary_print(struct trace *trace, bool json, bool color)
{
	struct summary s = { .trace = trace };

	if (analysis_run(trace, &s.a) != 0) {
		fprintf(stderr, "amptrace summary: out of memory\n");
		analysis_free(&s.a);
		return 2;
	}
	tabulate(&s);
	if (json)
		print_json(&s, stdout);
	else
		print_fitted(&s, color);
	free(s.ops);
	free(s.casts);
	free(s.reasons);
	free(s.regions);
	analysis_free(&s.a);
	return 0;
}
