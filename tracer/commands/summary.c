/* `amptrace summary [--json] TRACE`: ops by phase and output dtype, casts
 * by direction, the weight-cast cache, autocast regions, GradScaler
 * history, as a table or as JSON; the findings come first, most severe
 * first, each with its one-line fix. */
#include "analyze.h"
#include "command_line.h"
#include "commands.h"
#include "progress.h"
#include "step_select.h"
#include "summary_compiled.h"
#include "summary_fsdp.h"
#include "summary_gpu.h"
#include "summary_modules.h"
#include "terminal_text.h"
#include "textfit.h"
#include "trace.h"

#include <cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char summary_usage[] =
	"usage: amptrace summary [--json] [--color=WHEN] [--depth N] [--rank N]\n"
	"                        TRACE.json\n"
	"\n"
	"Reports what a trace shows about mixed precision: the steps (how\n"
	"they were marked, which are in full detail and which per-step\n"
	"aggregates), the findings (AMP mistakes, most severe first, each\n"
	"with a one-line fix), ops by phase (forward, backward, optimizer,\n"
	"other) and output dtype, ops by module (for a PyTorch trace, format\n"
	"1.4: each nn.Module's ops, output dtypes, casts by direction, cache\n"
	"hits and time of its top-level ops, module paths cut to --depth\n"
	"parts: h.3.attn.c_attn is h.3 at depth 2; backward ops count for\n"
	"their forward op's module, ops outside every module as (no\n"
	"module)), casts by direction (count, bytes, time), casts made\n"
	"outside autocast (autograd's, custom_fwd's), compiled graphs (their\n"
	"calls and the casts each call runs), the weight-cast cache\n"
	"(hits/misses/uncacheable with reasons), autocast regions, and the\n"
	"GradScaler's scale history and skipped steps.  The steps recorded\n"
	"as aggregates count in every table as their events would.  Nothing\n"
	"is cut short: a name too long for its column gets a line of its\n"
	"own; a fix is printed once per kind of finding.\n"
	"\n"
	"  --json          one JSON object instead of tables\n"
	"  --depth N       module paths cut to N parts (default 2)\n"
	"  --rank N        only rank N's processes (its DataLoader workers\n"
	"                  too): a distributed job's rank as if it ran alone\n"
	"                  (default: every process of the trace)\n"
	"  --color[=WHEN]  colour the findings by severity: auto (the default:\n"
	"                  when stdout is a terminal and NO_COLOR is unset),\n"
	"                  always (--color alone) or never\n"
	"  -h, --help      this text\n"
	"\n"
	"Exit status: 0, or 2 when the trace cannot be read or standard output\n"
	"cannot be written.\n";

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
	/* --rank's rank (-1: every process) and the trace's ranks */
	int rank, ranks;
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
	/* regions entered in the steps recorded as aggregates, whose rows
	 * count them but name none */
	uint64_t aggregated_regions;
	struct module_table modules;
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

/* Out of memory counting by module: summary gives up, as push does. */
static void add_to_modules(struct summary *s, const struct trace_event *e,
			   int column)
{
	if (!module_table_add(&s->modules, e, column)) {
		fputs("amptrace summary: out of memory\n", stderr);
		exit(2);
	}
}

static int column_of(struct summary *s, const char *dtype)
{
	for (int i = 0; i < s->ncolumns; i++)
		if (!strcmp(s->columns[i], dtype))
			return i;
	return -1;
}

static void see_column(struct summary *s, bool *seen, const char *d)
{
	bool known = false;

	for (int k = 0; k < TRACE_DTYPE_COUNT; k++)
		if (!strcmp(d, trace_dtype_names[k]))
			seen[k] = known = true;
	if (!known && column_of(s, d) < 0 &&
	    s->ncolumns < MAX_COLUMNS - TRACE_DTYPE_COUNT)
		s->columns[s->ncolumns++] = d;
}

/* Output dtypes seen (ops and the aggregates of steps without full
 * detail), in the usual order, then any others. */
static void collect_columns(struct summary *s)
{
	const struct trace *t = s->trace;
	bool seen[TRACE_DTYPE_COUNT] = { false };

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		const char *d;
		if (e->kind == TRACE_AGGREGATE)
			for (int k = 0; k < e->aggregate.nops; k++)
				if (e->aggregate.ops[k].dtype)
					see_column(s, seen,
						   e->aggregate.ops[k].dtype);
		if (e->kind != TRACE_OP || !(d = analysis_output_dtype(&e->op)))
			continue;
		see_column(s, seen, d);
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

/* The row of (phase, op, overload), made when new. */
static struct op_row *op_row_of(struct summary *s, const char *phase,
				const char *op, const char *overload)
{
	for (size_t k = 0; k < s->nops; k++)
		if (s->ops[k].op == op && s->ops[k].overload == overload &&
		    s->ops[k].phase == phase)
			return &s->ops[k];
	s->ops = push(s->ops, &s->nops, sizeof *s->ops);
	struct op_row *row = &s->ops[s->nops - 1];
	row->phase = phase;
	row->op = op;
	row->overload = overload;
	return row;
}

/* `count` ops of the row with output dtype `dtype` (NULL: none), under
 * `policy` (NULL: unknown), taking `time_us` in all. */
static void count_ops(struct summary *s, struct op_row *row, const char *dtype,
		      const char *policy, size_t count, double time_us)
{
	int c = dtype ? column_of(s, dtype) : -1;

	row->count += count;
	row->time_us += time_us;
	row->by_dtype[c >= 0 ? c : MAX_COLUMNS] += count;
	for (int k = 0; k < 3 && policy; k++) {
		if (row->policies[k] == policy)
			break;
		if (!row->policies[k]) {
			row->policies[k] = policy;
			break;
		}
	}
}

static struct cast_row *cast_row_of(struct summary *s, const char *from,
				    const char *to)
{
	for (size_t k = 0; k < s->ncasts; k++)
		if (s->casts[k].from == from && s->casts[k].to == to)
			return &s->casts[k];
	s->casts = push(s->casts, &s->ncasts, sizeof *s->casts);
	struct cast_row *row = &s->casts[s->ncasts - 1];
	row->from = from;
	row->to = to;
	return row;
}

static void count_casts(struct cast_row *row, const char *cache, size_t count,
			uint64_t bytes, double time_us)
{
	if (!strcmp(cache, "hit")) {
		row->hits += count;
	} else {
		row->casts += count;
		row->bytes += bytes;
		row->time_us += time_us;
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

/* The reason of a cast of a step recorded as aggregates. */
#define NOT_RECORDED "(not recorded: steps without full detail)"

static void count_reason(struct summary *s, const char *reason, size_t count)
{
	reason_row_for(&s->reasons, &s->nreasons, reason)->count += count;
}

static void count_other_casts(struct summary *s, const char *origin,
			      const char *from, const char *to, size_t count,
			      uint64_t bytes, double time_us,
			      const char *reason);

/* A step recorded as aggregates counts as its events would; the reasons
 * of its uncacheable casts were not recorded. */
static void tabulate_aggregate(struct summary *s,
			       const struct trace_aggregate *g)
{
	for (int k = 0; k < g->nops; k++) {
		const struct trace_aggregate_op *o = &g->ops[k];
		count_ops(s, op_row_of(s, o->phase, o->op, o->overload),
			  o->dtype, o->policy, o->count, (double)o->dur_ns / 1000.0);
	}
	for (int k = 0; k < g->ncasts; k++) {
		const struct trace_aggregate_cast *c = &g->casts[k];
		if (c->origin) {
			count_other_casts(s, c->origin, c->from, c->to,
					  c->count, c->bytes,
					  (double)c->dur_ns / 1000.0,
					  NOT_RECORDED);
			continue;
		}
		count_casts(cast_row_of(s, c->from, c->to), c->cache, c->count,
			    c->bytes, (double)c->dur_ns / 1000.0);
		if (!strcmp(c->cache, "uncacheable"))
			count_reason(s, NOT_RECORDED, c->count);
	}
	s->aggregated_regions += g->regions;
}

/* Casts made by autograd or custom_fwd: a table of their own. */
static void count_other_casts(struct summary *s, const char *origin,
			      const char *from, const char *to, size_t count,
			      uint64_t bytes, double time_us, const char *reason)
{
	struct cast_row *row = NULL;

	for (size_t k = 0; k < s->nothers && !row; k++)
		if (!strcmp(s->others[k].origin, origin) &&
		    s->others[k].from == from && s->others[k].to == to)
			row = &s->others[k];
	if (!row) {
		s->others = push(s->others, &s->nothers, sizeof *s->others);
		row = &s->others[s->nothers - 1];
		*row = (struct cast_row){ .origin = origin, .from = from,
					  .to = to };
	}
	row->casts += count;
	row->bytes += bytes;
	row->time_us += time_us;
	reason_row_for(&s->other_reasons, &s->nother_reasons, reason)->count +=
		count;
}

static void tabulate(struct summary *s)
{
	const struct trace *t = s->trace;
	struct thread_stack *stacks = NULL;
	size_t nstacks = 0;
	int64_t *pids = NULL;
	size_t npids = 0;

	collect_columns(s);
	module_table_init(&s->modules, s->modules.depth, s->ncolumns);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_META)
			continue;
		struct thread_stack *st = stack_for(&stacks, &nstacks, e->pid,
						    e->tid);
		bool new_pid = true;
		for (size_t k = 0; k < npids; k++)
			new_pid &= pids[k] != e->pid;
		if (new_pid) {
			pids = push(pids, &npids, sizeof *pids);
			pids[npids - 1] = e->pid;
		}
		if (e->kind == TRACE_CAST)
			add_to_modules(s, e, -1);
		if (e->kind == TRACE_OP) {
			const struct trace_op *op = &e->op;
			const char *dtype = analysis_output_dtype(op);
			count_ops(s, op_row_of(s, op->phase, op->op, op->overload),
				  dtype, op->policy, 1, e->dur);
			add_to_modules(s, e, dtype ? column_of(s, dtype) : -1);
			count_in_regions(s, st, false);
		} else if (e->kind == TRACE_AGGREGATE) {
			tabulate_aggregate(s, &e->aggregate);
		} else if (e->kind == TRACE_OTHER_CAST) {
			/* a compiled graph's casts: summary_compiled.c's */
			if (!trace_cast_is_compiled(&e->cast))
				count_other_casts(s, e->cast.origin,
						  e->cast.from, e->cast.to, 1,
						  e->cast.bytes, e->dur,
						  e->cast.reason ?
						  e->cast.reason : "");
		} else if (e->kind == TRACE_CAST) {
			const struct trace_cast *c = &e->cast;
			count_casts(cast_row_of(s, c->from, c->to), c->cache, 1,
				    c->bytes, e->dur);
			if (!strcmp(c->cache, "uncacheable"))
				count_reason(s, c->reason ? c->reason : "", 1);
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
	s->duration_us = trace_duration_us(t);
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
 * model's ops come first; then the rest (other: data, initialisation),
 * and phases this reader does not know last. */
static int phase_rank(const char *phase)
{
	static const char *const order[] = { "forward", "backward", "optimizer",
					     "other" };
	int rank = 0;

	while (rank < 4 && strcmp(phase, order[rank]))
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

static double hit_rate(const struct analysis *a)
{
	uint64_t n = a->cache_hits + a->cache_misses;

	return n ? (double)a->cache_hits / (double)n : NAN;
}

/* Findings come first: they are what a user acts on.  The analysis has
 * them most severe first. */
/* ANSI colours of the severities: red, yellow, cyan (stdout's filter
 * makes them ESC '[', terminal_text.h). */
static const char *const severity_color[FINDING_SEVERITY_COUNT] = {
	[FINDING_ERROR] = TERMINAL_RED,
	[FINDING_WARNING] = TERMINAL_YELLOW,
	[FINDING_INFO] = TERMINAL_CYAN,
};

/* A kind's fix is mostly the same for each of its findings: said once,
 * under the first listed that has it (dtype-mismatch's depends on the
 * cause, an aggregated op-error's differs). */
static bool fix_said(const struct analysis *a, size_t listed)
{
	const struct trace_finding *f = &a->findings[a->listed.items[listed].finding];

	for (size_t j = 0; j < listed; j++) {
		const struct trace_finding *g =
			&a->findings[a->listed.items[j].finding];
		if (!strcmp(g->kind, f->kind) && g->fix &&
		    !strcmp(g->fix, f->fix))
			return true;
	}
	return false;
}

/* " (x6)"; in a job of `ranks` ranks, a finding of one rank " (x6;
 * rank 2's)", of several " (x6 on each of 2 ranks; rank 0's)", " (x13
 * on 2 of 3 ranks; rank 0's)", the message the lowest rank's. */
static void print_occurrences(const struct analysis *a,
			      const struct rank_finding *r, int ranks,
			      FILE *out)
{
	const struct trace_finding *f = &a->findings[r->finding];
	int rank = a->ranks.rank_of_group[trace_ranks_group(&a->ranks, f->pid)];
	size_t each = r->count / (size_t)r->ranks;
	char of[32] = "";

	if (ranks < 2 || rank < 0) {
		if (r->count > 1)
			fprintf(out, " (x%zu)", r->count);
		return;
	}
	if (r->ranks < ranks)
		snprintf(of, sizeof of, " of %d", ranks);
	if (r->ranks == 1 && r->count > 1)
		fprintf(out, " (x%zu; ", r->count);
	else if (r->ranks == 1)
		fputs(" (", out);
	else if (!r->alike)
		fprintf(out, " (x%zu on %d%s ranks; ", r->count, r->ranks, of);
	else if (each > 1)
		fprintf(out, " (x%zu on each of %d%s ranks; ", each, r->ranks,
			of);
	else
		fprintf(out, " (on each of %d%s ranks; ", r->ranks, of);
	fprintf(out, "rank %d's)", rank);
}

static void print_findings(const struct analysis *a, FILE *out, bool color)
{
	int ranks = trace_ranks_count(&a->ranks);

	fputs("\nFindings (most severe first)\n", out);
	if (!a->listed.count)
		fputs("  (none)\n", out);
	for (size_t i = 0; i < a->listed.count; i++) {
		const struct trace_finding *f = &a->findings[a->listed.items[i].finding];
		const char *name = finding_severity_name(f->severity);
		if (color)
			fprintf(out, "  %s%s" TERMINAL_PLAIN "%*s %s",
				severity_color[f->severity], name,
				7 - (int)strlen(name), "", f->kind);
		else
			fprintf(out, "  %-7s %s", name, f->kind);
		print_occurrences(a, &a->listed.items[i], ranks, out);
		fprintf(out, ": %s\n", f->message);
		if (f->fix && f->fix[0] && !fix_said(a, i))
			fprintf(out, "          fix: %s\n", f->fix);
	}
}

/* How many decimal digits n takes. */
static int digits(size_t n)
{
	int d = 1;

	while (n >= 10) {
		n /= 10;
		d++;
	}
	return d;
}

/* "; step 25 cut short (...)", or the steps (the first few named) a
 * process or its trace ended in (steps.h: in full detail or as
 * aggregates). */
static void print_cut_short(const struct trace_steps *st, FILE *out)
{
	enum { NAMED = 5 };
	int n = st->ncut_short;

	if (n == 1)
		fprintf(out, "; step %d cut short (its process or its trace "
			"ended in it: counted up to then)", st->cut_short[0]);
	if (n <= 1)
		return;
	fputs("; steps ", out);
	for (int k = 0; k < n && k < NAMED; k++)
		fprintf(out, "%s%d", k == 0 ? "" : k == n - 1 ? " and " : ", ",
			st->cut_short[k]);
	if (n > NAMED)
		fprintf(out, " and %d more", n - NAMED);
	fputs(" cut short (a process or its trace ended in each: counted up "
	      "to then)", out);
}

/* "steps: 6 on each of 2 ranks (marked by scaler update)", "steps: 5 to
 * 6 on each of 3 ranks (...)": a job's ranks step together. */
static void print_rank_steps(const struct analysis *a, FILE *out)
{
	fputs("steps: ", out);
	if (a->rank_steps_least != a->rank_steps_most)
		fprintf(out, "%d to ", a->rank_steps_least);
	fprintf(out, "%d on each of %d ranks (marked by %s)",
		a->rank_steps_most, a->ranks_training, a->step_marker);
}

/* "steps: 200 (marked by optimizer step); 3 evaluation windows; 20 in
 * full detail, 180 as per-step aggregates" */
static void print_steps(const struct analysis *a, FILE *out)
{
	const struct trace_steps *st = &a->steps;
	char limit[32];

	if (strcmp(a->step_marker, "none") && a->ranks_training)
		print_rank_steps(a, out);
	else if (strcmp(a->step_marker, "none"))
		fprintf(out, "steps: %d (marked by %s)", a->nsteps,
			a->step_marker);
	else if (st->marked && !a->nsteps)
		fprintf(out, "steps: 0 (no training step)");
	else if (st->marked)
		fprintf(out, "steps: %d (not marked: the training outside the "
			     "evaluation windows)", a->nsteps);
	else if (!a->nsteps)
		fprintf(out, "steps: 0 (no op ran)");
	else
		fprintf(out, "steps: %d (no optimizer, scaler update or "
			     "autocast region marks them)", a->nsteps);
	if (st->nevaluations)
		fprintf(out, "; %d evaluation window%s", st->nevaluations,
			st->nevaluations == 1 ? "" : "s");
	if (st->naggregated)
		fprintf(out, "; %d in full detail, %d as per-step aggregates",
			st->ndetail, st->naggregated);
	print_cut_short(st, out);
	fputc('\n', out);
	if (st->detail_stop_step < 0)
		return;
	step_size_text(st->detail_stop_limit, limit, sizeof limit);
	fprintf(out, "note: full detail stopped at step %lld: %s passed %s "
		"(amptrace run --max-size)\n", (long long)st->detail_stop_step,
		st->detail_stop_measured ? st->detail_stop_measured : "the trace",
		limit);
}

/* Whether two causes differ in more than their numbers (op and tensor
 * ids, scales): consecutive skips of one cause are listed once. */
static bool same_cause(const char *a, const char *b)
{
	for (;;) {
		while (*a >= '0' && *a <= '9')
			a++;
		while (*b >= '0' && *b <= '9')
			b++;
		if (*a != *b)
			return false;
		if (!*a)
			return true;
		a++;
		b++;
	}
}

/* "    steps 3-5 (3 skips, scale 1024 to 256): <cause>" */
static void print_skip_run(FILE *out, const struct analysis *a,
			   const struct finding_skip *const *run, size_t n)
{
	int first = a->step_of[run[0]->event];
	int last = a->step_of[run[n - 1]->event];

	if (n == 1) {
		fprintf(out, "    step %d (scale %g): %s\n", first,
			run[0]->scale, run[0]->cause);
		return;
	}
	fputs("    steps ", out);
	if (last - first + 1 == (int)n) {
		fprintf(out, "%d-%d", first, last);
	} else {
		for (size_t k = 0; k < n && k < 6; k++)
			fprintf(out, "%s%d", k ? ", " : "",
				a->step_of[run[k]->event]);
		if (n > 6)
			fputs(", ...", out);
	}
	fprintf(out, " (%zu skips, scale %g to %g): %s\n", n, run[0]->scale,
		run[n - 1]->scale, run[0]->cause);
}

/* Whether the scale history follows the process of skip `k`. */
static bool followed_skip(const struct analysis *a, size_t k)
{
	return a->trace->events[a->skips[k].event].pid == a->history_pid;
}

/* Where several processes have a GradScaler (a job's ranks), which
 * one's the scale and the skips follow. */
static void print_followed(FILE *out, const struct analysis *a)
{
	char name[64];
	int group = trace_ranks_group(&a->ranks, a->history_pid);
	int others = a->nscalers - a->nscalers_followed;

	if (others < 1)
		return;
	bool ranked = a->ranks.rank_of_group[group] >= 0;

	if (ranked)
		trace_ranks_name(&a->ranks, group, name, sizeof name);
	else
		snprintf(name, sizeof name, "process %lld",
			 (long long)a->history_pid);
	fprintf(out, "  %d GradScalers", a->nscalers);
	if (ranked)
		fprintf(out, " (a rank's at most %llu steps, %llu skipped)",
			(unsigned long long)a->rank_scaler_steps,
			(unsigned long long)a->rank_skipped_steps);
	fprintf(out, ": the scale and the skips below are %s's; ", name);
	if (!a->nscalers_ending_apart)
		fprintf(out, "%s at the same scale\n",
			others == 1 ? "the other ends" : "the others end");
	else
		fprintf(out, "%d other%s at another scale\n",
			a->nscalers_ending_apart,
			a->nscalers_ending_apart == 1 ? " ends" : "s end");
}

/* Why the followed GradScaler skipped each step: runs of steps skipped
 * for one cause. */
static void print_skips(FILE *out, const struct analysis *a)
{
	const struct finding_skip **mine = malloc(a->nskips * sizeof *mine);
	size_t n = 0, runs = 0;

	for (size_t k = 0; mine && k < a->nskips; k++)
		if (followed_skip(a, k))
			mine[n++] = &a->skips[k];
	if (n)
		fputs("  skipped steps, and why:\n", out);
	for (size_t i = 0; i < n;) {
		size_t j = i + 1;
		while (j < n && same_cause(mine[i]->cause, mine[j]->cause))
			j++;
		if (runs++ == 8) {
			fprintf(out, "    ... %zu more skipped steps (--json lists "
				"them all)\n", n - i);
			break;
		}
		print_skip_run(out, a, mine + i, j - i);
		i = j;
	}
	free(mine);
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
			textfit_duration(r->time_us, b2, sizeof b2));
	}
	fputs("  because:\n", out);
	trace_sort(s->other_reasons, s->nother_reasons,
		   sizeof *s->other_reasons, compare_reasons);
	for (size_t i = 0; i < s->nother_reasons; i++)
		fprintf(out, "    %7zu  %s\n", s->other_reasons[i].count,
			s->other_reasons[i].reason);
}

/* The trace's path, an argument: in colour, its bytes cleaned, as the
 * palette's bytes in it would be colours (terminal_stdout_colours). */
static void print_path(const char *path, FILE *out, bool color)
{
	char *shown = color ? strdup(path) : NULL;

	if (shown)
		terminal_text_clean(shown);
	fprintf(out, "%s: ", shown ? shown : color ? "?" : path);
	free(shown);
}

static void print_text(struct summary *s, FILE *out, bool color)
{
	const struct trace *t = s->trace;
	const struct analysis *a = &s->a;
	char b1[64], b2[64], label[160], note[512];

	print_path(t->path, out, color);
	if (t->amptrace)
		fprintf(out, "amptrace trace format %s", t->format);
	else
		fprintf(out, "Chrome trace (not written by amptrace)");
	fprintf(out, "; %zu process%s, %zu thread%s, %zu events, %s\n",
		s->processes, s->processes == 1 ? "" : "es", s->threads,
		s->threads == 1 ? "" : "s", t->nevents + t->dropped,
		textfit_duration(s->duration_us, b1, sizeof b1));
	if (trace_end_note(t, note, sizeof note))
		fprintf(out, "note: %s\n", note);
	if (s->rank >= 0)
		fprintf(out, "rank %d only (--rank), of %d rank%s\n", s->rank,
			s->ranks, s->ranks == 1 ? "" : "s");
	print_framework(t, out);
	print_steps(a, out);
	summary_fsdp_text(t, &a->ranks, out);
	summary_gpu_text(t, out);
	print_findings(a, out, color);

	/* Nothing is cut short.  Numbers take the columns they need; the op
	 * column fits the longest name (ATen has some long ones) as far as
	 * the row, policies whole, fits TEXTFIT_WIDTH: a longer name has a
	 * line of its own, its numbers on the next. */
	int width = 20, count_width = 5, dtype_width[MAX_COLUMNS], policy = 0;
	for (int c = 0; c < s->ncolumns; c++)
		dtype_width[c] = (int)strlen(s->columns[c]);
	for (size_t i = 0; i < s->nops; i++) {
		const struct op_row *r = &s->ops[i];
		int n = (int)(textfit_columns(r->op, strlen(r->op)) + 1 +
			      strlen(r->overload)), p = 0;
		if (n > width)
			width = n;
		if (digits(r->count) > count_width)
			count_width = digits(r->count);
		for (int c = 0; c < s->ncolumns; c++)
			if (digits(r->by_dtype[c]) > dtype_width[c])
				dtype_width[c] = digits(r->by_dtype[c]);
		for (int k = 0; k < 3 && r->policies[k]; k++)
			p += (k ? 2 : 0) + (int)strlen(r->policies[k]);
		if (r->by_dtype[MAX_COLUMNS])
			p += 24;   /* " (N without output)" */
		if (p > policy)
			policy = p;
	}
	int fixed = 2 + 10 + 1 + count_width + 11 + 2;
	for (int c = 0; c < s->ncolumns; c++)
		fixed += 1 + dtype_width[c];
	if (fixed + width + policy > TEXTFIT_WIDTH)
		width = TEXTFIT_WIDTH - fixed - policy;
	if (width < 20)
		width = 20;
	fputs("\nOps by phase and output dtype\n", out);
	if (!s->nops)
		fputs("  (no ops)\n", out);
	else {
		fprintf(out, "  %-9s %-*s %*s", "phase", width, "op",
			count_width, "count");
		for (int c = 0; c < s->ncolumns; c++)
			fprintf(out, " %*s", dtype_width[c], s->columns[c]);
		fprintf(out, " %10s  %s\n", "time", "policy");
	}
	trace_sort(s->ops, s->nops, sizeof *s->ops, compare_ops);
	for (size_t i = 0; i < s->nops; i++) {
		const struct op_row *r = &s->ops[i];
		snprintf(label, sizeof label, "%s%s%s", r->op,
			 r->overload[0] ? "." : "", r->overload);
		if (textfit_columns(label, strlen(label)) > (size_t)width) {
			fprintf(out, "  %-9s %s\n  %-9s %-*s", r->phase, label, "",
				width, "");
		} else {
			fprintf(out, "  %-9s ", r->phase);
			textfit_cell(out, label, width, true);
		}
		fprintf(out, " %*zu", count_width, r->count);
		for (int c = 0; c < s->ncolumns; c++) {
			if (r->by_dtype[c])
				fprintf(out, " %*zu", dtype_width[c], r->by_dtype[c]);
			else
				fprintf(out, " %*s", dtype_width[c], "-");
		}
		fprintf(out, " %10s  ", textfit_duration(r->time_us, b1, sizeof b1));
		char policies[160];
		int used = 0;
		for (int k = 0; k < 3 && r->policies[k]; k++)
			used += snprintf(policies + used, sizeof policies - used,
					 "%s%s", k ? ", " : "", r->policies[k]);
		if (r->by_dtype[MAX_COLUMNS])
			snprintf(policies + used, sizeof policies - used,
				 "%s(%zu without output)",
				 r->policies[0] ? " " : "", r->by_dtype[MAX_COLUMNS]);
		fprintf(out, "%s\n", policies);
	}

	module_table_print(&s->modules, s->columns, out);
	if (s->modules.any_module && a->steps.naggregated)
		fprintf(out, "  (the %d step%s recorded as per-step aggregates "
			"left out: their rows name no module)\n",
			a->steps.naggregated,
			a->steps.naggregated == 1 ? "" : "s");

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
			textfit_duration(r->time_us, b2, sizeof b2));
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
	if (!s->nregions && !s->aggregated_regions)
		fputs("  (none)\n", out);
	else if (!s->nregions)
		fputs("  (none in full detail)\n", out);
	else
		fprintf(out, "  %-24s %-6s %-6s %8s %8s %8s %12s\n", "region",
			"device", "dtype", "entered", "ops", "casts", "time");
	for (size_t i = 0; i < s->nregions; i++) {
		const struct region_row *r = &s->regions[i];
		fputs("  ", out);
		textfit_pad(out, r->scope ? r->scope : "(unnamed)", 24);
		fprintf(out, " %-6s %-6s %8zu %8zu %8zu %12s\n",
			r->device ? r->device : "?",
			r->enabled ? (r->dtype ? r->dtype : "?") : "off",
			r->entered, r->ops, r->casts,
			textfit_duration(r->time_us, b1, sizeof b1));
	}
	if (s->aggregated_regions)
		fprintf(out, "  (and %llu%s entered, counted by the "
			"per-step aggregates, whose rows name no region)\n",
			(unsigned long long)s->aggregated_regions,
			s->nregions ? " more" : "");
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
		print_followed(out, a);
		fputs("  scale:", out);
		for (size_t i = 0; i < a->nscale_history && i < 12; i++)
			fprintf(out, "%s%g (step %d%s)", i ? " -> " : " ",
				a->scale_history[i].scale, a->scale_history[i].step,
				a->scale_history[i].found_inf ? ", inf found" : "");
		if (a->nscale_history > 12)
			fprintf(out, " -> ... %zu more changes, final %g",
				a->nscale_history - 12, a->scale_final);
		fputc('\n', out);
		print_skips(out, a);
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

	for (size_t i = 0; i < a->listed.count; i++) {
		const struct trace_finding *f = &a->findings[a->listed.items[i].finding];
		cJSON *o = rank_finding_json(a->findings, &a->listed.items[i]);
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
	cJSON_AddBoolToObject(root, "truncated", trace_unfinished(t));
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
	if (s->rank >= 0)
		cJSON_AddNumberToObject(root, "rank", s->rank);
	else
		cJSON_AddNullToObject(root, "rank");
	cJSON_AddNumberToObject(root, "processes", (double)s->processes);
	cJSON_AddNumberToObject(root, "threads", (double)s->threads);
	cJSON_AddNumberToObject(root, "events",
				(double)(t->nevents + t->dropped));
	cJSON_AddNumberToObject(root, "duration_us", s->duration_us);
	cJSON *steps = cJSON_AddObjectToObject(root, "steps");
	cJSON_AddNumberToObject(steps, "count", a->nsteps);
	cJSON_AddStringToObject(steps, "marker", a->step_marker);
	cJSON_AddNumberToObject(steps, "evaluations", a->steps.nevaluations);
	cJSON_AddNumberToObject(steps, "detail", a->steps.ndetail);
	cJSON_AddNumberToObject(steps, "aggregated", a->steps.naggregated);
	/* a job's ranks that train, the least and most steps of one */
	if (a->ranks_training) {
		cJSON_AddNumberToObject(steps, "ranks", a->ranks_training);
		cJSON_AddItemToObject(steps, "rank_steps", cJSON_CreateIntArray(
			(int[]){ a->rank_steps_least, a->rank_steps_most }, 2));
	}
	/* the steps cut short: a process or its trace ended in them
	 * (FORMAT.md §8) */
	if (a->steps.ncut_short)
		cJSON_AddItemToObject(steps, "cut_short",
				      cJSON_CreateIntArray(a->steps.cut_short,
							   a->steps.ncut_short));
	if (a->steps.detail_stop_step >= 0)
		cJSON_AddNumberToObject(steps, "detail_stopped_at",
					(double)a->steps.detail_stop_step);
	summary_fsdp_json(t, &a->ranks, root);
	summary_gpu_json(t, root);
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
	cJSON_AddNumberToObject(root, "regions_aggregated",
				(double)s->aggregated_regions);
	cJSON_AddNumberToObject(root, "max_depth", s->max_depth);
	cJSON_AddItemToObject(root, "modules",
			      module_table_json(&s->modules, s->columns));

	if (t->counts[TRACE_SCALER]) {
		cJSON *sc = cJSON_AddObjectToObject(root, "scaler");
		cJSON_AddNumberToObject(sc, "steps", (double)a->scaler_steps);
		cJSON_AddNumberToObject(sc, "skipped_steps", (double)a->skipped_steps);
		cJSON_AddItemToObject(sc, "scale_min", number_or_null(a->scale_min));
		cJSON_AddItemToObject(sc, "scale_max", number_or_null(a->scale_max));
		cJSON_AddItemToObject(sc, "scale_final",
				      number_or_null(a->scale_final));
		/* the process whose GradScalers the history and
		 * scale_final follow (of `scalers`; the most of a rank's
		 * steps and skips) */
		cJSON_AddNumberToObject(sc, "scalers", a->nscalers);
		cJSON *followed = cJSON_AddObjectToObject(sc, "followed");
		cJSON_AddNumberToObject(followed, "pid", (double)a->history_pid);
		cJSON_AddNumberToObject(followed, "scalers",
					a->nscalers_followed);
		cJSON_AddNumberToObject(sc, "rank_steps",
					(double)a->rank_scaler_steps);
		cJSON_AddNumberToObject(sc, "rank_skipped_steps",
					(double)a->rank_skipped_steps);
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
		cJSON *skips = cJSON_AddArrayToObject(sc, "skipped");
		for (size_t i = 0; i < a->nskips; i++) {
			/* every process's: its pid, and its rank (null: none) */
			int64_t pid = t->events[a->skips[i].event].pid;
			int rank = a->ranks.rank_of_group[
				trace_ranks_group(&a->ranks, pid)];
			cJSON *o = cJSON_CreateObject();
			cJSON_AddNumberToObject(o, "pid", (double)pid);
			if (rank >= 0)
				cJSON_AddNumberToObject(o, "rank", rank);
			else
				cJSON_AddNullToObject(o, "rank");
			cJSON_AddNumberToObject(o, "step",
						a->step_of[a->skips[i].event]);
			cJSON_AddItemToObject(o, "scale",
					      number_or_null(a->skips[i].scale));
			cJSON_AddStringToObject(o, "cause", a->skips[i].cause);
			cJSON_AddItemToArray(skips, o);
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

enum { OPTION_JSON = 256, OPTION_COLOR, OPTION_DEPTH, OPTION_RANK };

static const struct option summary_options[] = {
	{ "json", no_argument, NULL, OPTION_JSON },
	{ "color", optional_argument, NULL, OPTION_COLOR },
	{ "depth", required_argument, NULL, OPTION_DEPTH },
	{ "rank", required_argument, NULL, OPTION_RANK },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct summary_args {
	const char *path;
	bool json, color;
	int depth, rank;
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
		case OPTION_DEPTH: {
			int status = command_line_number(&cl, "--depth", optarg,
							 1, 64, &args->depth);
			if (status >= 0)
				return status;
			break;
		}
		case OPTION_RANK: {
			int status = command_line_number(&cl, "--rank", optarg,
							 0, INT_MAX,
							 &args->rank);
			if (status >= 0)
				return status;
			break;
		}
		case 'h':
			fputs(summary_usage, stdout);
			return 0;
		default:
			return COMMAND_LINE_BAD_USAGE;
		}
	}
	static const char *const whens[] = { "auto", "always", "never", NULL };
	if (textfit_color(when, &args->color) != 0)
		return command_line_value_error(&cl, when, whens, "--color must "
						"be auto, always or never, "
						"not '%s'", when);
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
	struct summary_args args = { .depth = MODULE_DEPTH_DEFAULT,
				     .rank = -1 };
	struct trace trace;
	struct trace_error err;
	char note[512];
	int status = parse_args(argc, argv, &args);

	if (status >= 0)
		return status;
	progress_reading("amptrace summary", args.path);
	int loaded = trace_load_without_flows(args.path, &trace, &err);
	progress_reading_done();
	if (loaded != 0) {
		fprintf(stderr, "amptrace summary: %s\n", err.message);
		return 2;
	}
	status = summary_print(&trace, args.json, args.color, args.depth,
			       args.rank);
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

int summary_print(struct trace *trace, bool json, bool color, int depth,
		  int rank)
{
	struct summary s = { .trace = trace, .modules.depth = depth,
			     .rank = rank };

	char why[256];

	if (rank >= 0 &&
	    trace_keep_rank(trace, rank, &s.ranks, why, sizeof why) != 0) {
		fprintf(stderr, "amptrace summary: %s: %s\n", trace->path, why);
		return 2;
	}
	if (analysis_run(trace, &s.a) != 0) {
		fprintf(stderr, "amptrace summary: out of memory\n");
		analysis_free(&s.a);
		return 2;
	}
	tabulate(&s);
	if (json) {
		print_json(&s, stdout);
	} else {
		if (color)
			terminal_stdout_colours();
		print_fitted(&s, color);
	}
	free(s.ops);
	free(s.casts);
	free(s.reasons);
	free(s.regions);
	module_table_free(&s.modules);
	analysis_free(&s.a);
	return 0;
}
