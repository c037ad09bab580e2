/* `amptrace diff BASE NEW`: how cast behaviour changed between two runs
 * of the same program, ignoring timing and ids.
 *
 * Ops are aligned by occurrence: the k-th `linear` (forward) of thread t
 * of process p in one trace is the k-th in the other (processes pair by
 * rank, the k-th process of a rank by start with the k-th of that rank,
 * those without a rank alike; threads by libamp thread number).  This is
 * linear in the trace size, and an op added or removed shifts only the
 * later occurrences of that same op.  For each aligned pair we compare
 * output dtype, policy and the casts made for the op (argument, from, to,
 * cache result); unaligned ops are reported as added or removed. */
#include "analyze.h"
#include "command_line.h"
#include "commands.h"
#include "diff_aggregate.h"
#include "diff_compiled.h"
#include "id_map.h"
#include "ranks.h"
#include "steps.h"
#include "trace.h"

#include <cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char diff_usage[] =
	"usage: amptrace diff [--json] [--depth N] BASE.json NEW.json\n"
	"\n"
	"Reports cast behaviour that changed between two traces of the same\n"
	"program: ops whose output dtype or autocast policy changed, casts\n"
	"added or removed, cache results that changed (hit/miss/uncacheable),\n"
	"ops added or removed.  Timing and ids are ignored.  For PyTorch\n"
	"traces (format 1.4), each change's first op names its nn.Module and\n"
	"the changes are counted by module (paths cut to --depth parts: h.3\n"
	"at 2, the default).  Steps recorded as aggregates (`run --steps`)\n"
	"are compared step by step, by step number: their ops' output dtypes\n"
	"and policies and their casts' cache results, as counts per op and\n"
	"direction (aggregates name no module).  A step either trace cut\n"
	"short (its process or its trace ended in it, as summary says) is\n"
	"not compared, in full detail or aggregated.  When a trace holds\n"
	"torch.compile'd graphs, casts are compared instead, by module path,\n"
	"source line and op (an eager and a compiled run do not run the same\n"
	"ops), and aggregated steps are not compared.  A job's processes pair\n"
	"by rank (the k-th of a rank, by start, with the k-th of that rank;\n"
	"in order where the traces share no rank); a process only in one\n"
	"is named once, its ops and casts counted as added or removed.\n"
	"\n"
	"  --json      one JSON object instead of text\n"
	"  --depth N   module paths cut to N parts in the changes by module\n"
	"              (default 2)\n"
	"  -h, --help  this text\n"
	"\n"
	"Exit status: 0 no change, 1 changes, 2 bad input or standard output\n"
	"that cannot be written.\n";

static void oom(void)
{
	fputs("amptrace diff: out of memory\n", stderr);
	exit(2);
}

/* ------------------------------------------------------------- sides */

/* What diff compares of an op, held compactly: a side holds one of these
 * per op and one cast_record per cast, never the events themselves (the
 * reader hands them over one by one and drops them), so two traces of
 * millions of ops are compared in the memory of their records. */
struct op_record {
	int64_t pid;
	const char *signature; /* "t<tid> <label> <phase>", interned */
	const char *label;     /* "softmax.int" */
	const char *phase, *output, *policy;
	const char *module;    /* its nn.Module's path, or NULL */
	uint64_t op_id;
	size_t line;
	size_t occurrence;     /* of its signature in its process, from 0 */
	double ts;
	int step;              /* as the steps model numbers them */
	bool left_out;         /* in a step cut short in either trace */
};

struct cast_record {
	int64_t pid;
	uint64_t op_id;
	size_t order;          /* file order, among the side's casts */
	int arg;
	int step;              /* as the steps model numbers them */
	const char *from, *to, *cache;
	double ts;
	bool left_out;         /* in a step cut short in either trace */
};

/* A GradScaler event, as the steps model reads it (trace_steps_more). */
struct scaler_record {
	int64_t pid;
	double ts;
	const char *what;
};

/* pid_order's rank of a process without one: after every rank */
#define NO_RANK (1 << 30)

struct pid_order {
	int64_t pid;
	int rank;
	double first_ts;
	/* its pair's number, the same in both traces (pair_processes);
	 * paired: the other trace has its counterpart */
	size_t pair;
	bool paired;
	/* it recorded what diff compares (an op, a cast, a scaler's
	 * event, an aggregate): a GPU's track, its kernels alone, does not */
	bool compared;
};

struct side {
	/* its strings, header and trailer, and the events the steps model
	 * reads whole (trace_steps_reads_whole) */
	struct trace trace;
	struct op_record *ops;  /* in file order */
	size_t nops, cap_ops;
	struct cast_record *casts; /* sorted by (pid, op_id) once read */
	size_t ncasts, cap_casts;
	struct pid_order *order; /* processes, sorted by rank then start */
	size_t npids;
	/* alignment: (process ordinal << 32 | signature number, k) -> the
	 * op that is the k-th of its signature in its process */
	struct id_map aligned;
	struct id_map signatures; /* (0, signature) -> its number */
	size_t nsignatures;
	struct diff_compiled_side compiled; /* diff_compiled.c's */
	struct diff_aggregate_side aggregates; /* diff_aggregate.c's */
	/* the steps its process or its trace ended in (steps.h), ascending */
	int *cut_short;
	int ncut_short;
	size_t ops_left_out;    /* ops in a step either trace cut short */
	struct scaler_record *scalers;
	size_t nscalers, cap_scalers;
};

/* `array` with room for one more than its `n`. */
static void *grow(void *array, size_t *cap, size_t n, size_t elem)
{
	void *grown = trace_grow(array, cap, n + 1, elem);

	if (!grown)
		oom();
	return grown;
}

static int compare_cast_records(const void *a, const void *b)
{
	const struct cast_record *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->op_id != y->op_id)
		return x->op_id < y->op_id ? -1 : 1;
	return (x->order > y->order) - (x->order < y->order);
}

static int compare_pids(const void *a, const void *b)
{
	const struct pid_order *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->first_ts > y->first_ts) - (x->first_ts < y->first_ts);
}

/* Each process's first timestamp, and whether it recorded what diff
 * compares, as the events come (its rank: name_ranks). */
static void note_process(struct side *s, const struct trace_event *e)
{
	size_t k;

	for (k = 0; k < s->npids && s->order[k].pid != e->pid; k++)
		;
	if (k == s->npids) {
		struct pid_order *grown =
			realloc(s->order, (s->npids + 1) * sizeof *grown);
		if (!grown)
			oom();
		s->order = grown;
		s->order[s->npids++] = (struct pid_order){ e->pid, NO_RANK, e->ts };
	}
	if (e->kind == TRACE_OP || e->kind == TRACE_CAST ||
	    e->kind == TRACE_SCALER || e->kind == TRACE_AGGREGATE)
		s->order[k].compared = true;
	if (e->kind != TRACE_META && e->ts < s->order[k].first_ts)
		s->order[k].first_ts = e->ts;
}

/* `text` interned in s's trace. */
static const char *intern(struct side *s, const char *text)
{
	const char *interned = trace_intern(&s->trace, text);

	if (!interned)
		oom();
	return interned;
}

/* One event of the side's trace into its records. */
static void add_event(struct side *s, const struct trace_event *e)
{
	note_process(s, e);
	diff_compiled_add(&s->compiled, e);
	diff_aggregate_add(&s->aggregates, e);
	if (e->kind == TRACE_CAST) {
		s->casts = grow(s->casts, &s->cap_casts, s->ncasts,
				sizeof *s->casts);
		s->casts[s->ncasts] = (struct cast_record){
			.pid = e->pid,
			.op_id = e->cast.op_id,
			.order = s->ncasts,
			.arg = e->cast.arg,
			.from = e->cast.from,
			.to = e->cast.to,
			.cache = e->cast.cache,
			.ts = e->ts,
		};
		s->ncasts++;
		return;
	}
	if (e->kind == TRACE_SCALER) {
		s->scalers = grow(s->scalers, &s->cap_scalers, s->nscalers,
				  sizeof *s->scalers);
		s->scalers[s->nscalers++] = (struct scaler_record){
			e->pid, e->ts, e->scaler.what
		};
		return;
	}
	if (e->kind != TRACE_OP)
		return;
	char label[160], signature[400];
	trace_op_label(&e->op, label, sizeof label);
	snprintf(signature, sizeof signature, "t%lld %s %s",
		 (long long)e->tid, label, e->op.phase);
	s->ops = grow(s->ops, &s->cap_ops, s->nops, sizeof *s->ops);
	s->ops[s->nops++] = (struct op_record){
		.pid = e->pid,
		.signature = intern(s, signature),
		.label = intern(s, label),
		.phase = e->op.phase,
		.output = analysis_output_dtype(&e->op),
		.policy = e->op.policy,
		.module = e->op.module,
		.op_id = e->op.op_id,
		.line = e->line,
		.ts = e->ts,
	};
}

/* Each event into the side's records; those the steps model reads
 * whole kept (few: steps, regions' entries, labels), the rest dropped,
 * so that the side holds records, not events. */
static int add_streamed(void *ctx, struct trace *trace,
			const struct trace_event *e, cJSON *json,
			struct trace_error *err)
{
	(void)trace;
	(void)json;
	(void)err;
	add_event(ctx, e);
	return trace_steps_reads_whole(e) ? TRACE_KEEP : TRACE_DROP;
}

static size_t process_ordinal(const struct side *s, int64_t pid)
{
	for (size_t i = 0; i < s->npids; i++)
		if (s->order[i].pid == pid)
			return s->order[i].pair;
	return 0;
}

static bool has_rank_of(const struct side *s, int rank)
{
	for (size_t k = 0; k < s->npids; k++)
		if (s->order[k].rank == rank)
			return true;
	return false;
}

/* Whether processes pair by rank: where the traces share a rank.  Two
 * files of one rank each (rank 0's and rank 1's, `amptrace run`'s
 * trace.rankN.json) are one program's two ranks, compared as the k-th
 * process with the k-th; by rank, neither had a pair and every op read
 * as removed and added. */
static bool pairs_by_rank(const struct side *b, const struct side *n)
{
	for (size_t k = 0; k < b->npids; k++)
		if (b->order[k].rank != NO_RANK &&
		    has_rank_of(n, b->order[k].rank))
			return true;
	return false;
}

/* Each process's pair: the k-th of a rank (by start) in one trace and
 * the k-th of the same rank in the other, one number; a process the
 * other lacks (a rank of its own, a rank's DataLoader worker more) one
 * of its own.  By ordinal alone, a rank's worker in one trace took the
 * next rank's place, and each later rank was compared with another.
 * Where the traces share no rank (a run of one process against a job's
 * ranks, rank 0's file against rank 1's), the k-th process pairs with
 * the k-th. */
static void pair_processes(struct side *b, struct side *n)
{
	size_t i = 0, j = 0, next = 0;
	bool by_rank = pairs_by_rank(b, n);

	while (i < b->npids || j < n->npids) {
		int rb = i == b->npids ? INT_MAX : by_rank ? b->order[i].rank : 0;
		int rn = j == n->npids ? INT_MAX : by_rank ? n->order[j].rank : 0;
		bool both = rb == rn;
		if (rb <= rn) {
			b->order[i].paired = both;
			b->order[i++].pair = next;
		}
		if (rn <= rb) {
			n->order[j].paired = both;
			n->order[j++].pair = next;
		}
		next++;
	}
}

static size_t side_process_ordinal(const void *side, int64_t pid)
{
	return process_ordinal(side, pid);
}

static size_t signature_number(struct side *s, const char *signature)
{
	size_t *number = id_map_find(&s->signatures, 0,
				     (uint64_t)(uintptr_t)signature, true);

	if (!number)
		oom();
	if (!*number)
		*number = ++s->nsignatures;
	return *number;
}

static int64_t alignment_slot(size_t process, size_t signature)
{
	return (int64_t)((uint64_t)process << 32 | signature);
}

/* Op k, else cast k - nops, else aggregate k - nops - ncasts, else
 * the GradScaler events after them, of side `ctx`, as the steps model
 * reads them (trace_steps_more). */
static const struct trace_event *record_event(const void *ctx, size_t k,
					      struct trace_event *scratch)
{
	const struct side *s = ctx;
	size_t aggregates = s->nops + s->ncasts;
	size_t scalers = aggregates + s->aggregates.nsteps;

	if (k >= scalers) {
		const struct scaler_record *r = &s->scalers[k - scalers];
		*scratch = (struct trace_event){ .kind = TRACE_SCALER,
						 .pid = r->pid, .ts = r->ts };
		scratch->scaler.what = r->what;
		return scratch;
	}
	if (k >= aggregates)
		return diff_aggregate_event(&s->aggregates, k - aggregates,
					    scratch);
	if (k < s->nops) {
		const struct op_record *r = &s->ops[k];
		*scratch = (struct trace_event){ .kind = TRACE_OP,
						 .pid = r->pid, .ts = r->ts };
		scratch->op.phase = r->phase;
	} else {
		const struct cast_record *c = &s->casts[k - s->nops];
		*scratch = (struct trace_event){ .kind = TRACE_CAST,
						 .pid = c->pid, .ts = c->ts };
	}
	return scratch;
}

/* Each record's step, and the steps cut short, as the steps model says
 * of the side's trace: the steps summary and check say. */
static void find_steps(struct side *s)
{
	struct trace_steps_more more = {
		.count = s->nops + s->ncasts + s->aggregates.nsteps +
			 s->nscalers,
		.event = record_event,
		.ctx = s,
	};
	struct trace_steps steps;

	if (trace_steps_find_more(&s->trace, &more, &steps) != 0)
		oom();
	const int *records = steps.step_of + s->trace.nevents;
	for (size_t i = 0; i < s->nops; i++)
		s->ops[i].step = records[i];
	for (size_t i = 0; i < s->ncasts; i++)
		s->casts[i].step = records[s->nops + i];
	diff_aggregate_number(&s->aggregates, records + s->nops + s->ncasts);
	s->cut_short = steps.cut_short;
	s->ncut_short = steps.ncut_short;
	steps.cut_short = NULL;
	trace_steps_free(&steps);
}

/* The processes that pair: those that recorded what diff compares.  A
 * GPU's track (§3.8: kernels, timed) and a process named that ran no op
 * are none: a run with kernel timing against one without read as a
 * process only in one, "(0 ops)", and such a track, ordered by its first
 * kernel, could take a DataLoader worker's place in the pairing. */
static void keep_compared_processes(struct side *s)
{
	size_t kept = 0;

	for (size_t k = 0; k < s->npids; k++)
		if (s->order[k].compared)
			s->order[kept++] = s->order[k];
	s->npids = kept;
}

/* Each process's rank (ranks.h: the trace keeps its process_name
 * events), NO_RANK for one without. */
static void name_ranks(struct side *s)
{
	struct trace_ranks ranks;

	if (!trace_ranks_find(&s->trace, &ranks))
		oom();
	for (size_t k = 0; k < s->npids; k++) {
		int rank = ranks.rank_of_group[trace_ranks_group(
			&ranks, s->order[k].pid)];
		s->order[k].rank = rank >= 0 ? rank : NO_RANK;
	}
	trace_ranks_free(&ranks);
}

/* Once every event is in: processes ordered, casts sorted, steps found. */
static void finish_side(struct side *s)
{
	keep_compared_processes(s);
	name_ranks(s);
	trace_sort(s->order, s->npids, sizeof *s->order, compare_pids);
	trace_sort(s->casts, s->ncasts, sizeof *s->casts, compare_cast_records);
	find_steps(s);
}

/* The steps either trace cut short, ascending, each once: not compared
 * (a step whose record ended in it is not whole). */
struct cut_steps {
	int *steps;
	bool *in_detail;  /* per step: ops of it were left out */
	size_t count;
};

static struct cut_steps cut_in_either(const struct side *b,
				      const struct side *n)
{
	size_t most = (size_t)b->ncut_short + (size_t)n->ncut_short + 1;
	struct cut_steps cut = { malloc(most * sizeof *cut.steps),
				 calloc(most, sizeof *cut.in_detail), 0 };
	int i = 0, j = 0;

	if (!cut.steps || !cut.in_detail)
		oom();
	while (i < b->ncut_short || j < n->ncut_short) {
		int next = j == n->ncut_short ? b->cut_short[i]
			   : i == b->ncut_short ? n->cut_short[j]
			   : b->cut_short[i] < n->cut_short[j] ? b->cut_short[i]
							      : n->cut_short[j];
		cut.steps[cut.count++] = next;
		i += i < b->ncut_short && b->cut_short[i] == next;
		j += j < n->ncut_short && n->cut_short[j] == next;
	}
	return cut;
}

/* Where `step` is in cut's steps, or SIZE_MAX. */
static size_t cut_index(const struct cut_steps *cut, int step)
{
	size_t lo = 0, hi = cut->count;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (cut->steps[mid] < step)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < cut->count && cut->steps[lo] == step ? lo : SIZE_MAX;
}

/* The ops and casts of the steps cut short marked left out. */
static void leave_out(struct side *s, struct cut_steps *cut)
{
	s->ops_left_out = 0;
	for (size_t i = 0; i < s->nops; i++) {
		size_t k = cut_index(cut, s->ops[i].step);
		s->ops[i].left_out = k != SIZE_MAX;
		if (k != SIZE_MAX)
			cut->in_detail[k] = true;
		s->ops_left_out += s->ops[i].left_out;
	}
	for (size_t i = 0; i < s->ncasts; i++)
		s->casts[i].left_out = cut_index(cut, s->casts[i].step) !=
				       SIZE_MAX;
}

/* Each op's occurrence of its signature in its process numbered, the
 * ops left out not counted (diff_print may compare a side twice). */
static void align_side(struct side *s)
{
	struct id_map occurrences = { 0 }; /* slot -> ops of it so far */

	id_map_free(&s->aligned);
	s->aligned = (struct id_map){ 0 };
	for (size_t i = 0; i < s->nops; i++) {
		const struct op_record *r = &s->ops[i];
		if (r->left_out)
			continue;
		int64_t slot = alignment_slot(process_ordinal(s, r->pid),
					      signature_number(s, r->signature));
		size_t *k = id_map_find(&occurrences, slot, 0, true);
		if (!k)
			oom();
		s->ops[i].occurrence = (*k)++;
		if (!id_map_put(&s->aligned, slot, s->ops[i].occurrence, i))
			oom();
	}
	id_map_free(&occurrences);
}

/* The op of `other` that is the same occurrence as op i of s, or
 * SIZE_MAX. */
static size_t aligned_op(struct side *s, size_t i, struct side *other)
{
	const struct op_record *r = &s->ops[i];
	const char *theirs = intern(other, r->signature);
	int64_t slot = alignment_slot(process_ordinal(s, r->pid),
				      signature_number(other, theirs));

	return id_map_get(&other->aligned, slot, r->occurrence);
}

static int load_side(const char *path, struct side *s)
{
	struct trace_error err;
	struct trace_filter filter = { s, add_streamed };

	memset(s, 0, sizeof *s);
	if (trace_load_filtered(path, &s->trace, &filter, &err) != 0) {
		fprintf(stderr, "amptrace diff: %s\n", err.message);
		return -1;
	}
	finish_side(s);
	return 0;
}

struct diff_side *diff_side_new(struct trace *trace)
{
	struct side *s = calloc(1, sizeof *s);

	if (!s)
		oom();
	s->trace = *trace;
	*trace = (struct trace){ 0 };
	/* kept as load_side keeps them: the events the steps model reads
	 * whole (their arrays stay in the trace's arena) */
	size_t kept = 0;
	for (size_t i = 0; i < s->trace.nevents; i++) {
		const struct trace_event e = s->trace.events[i];
		add_event(s, &e);
		if (trace_steps_reads_whole(&e))
			s->trace.events[kept++] = e;
	}
	s->trace.nevents = kept;
	finish_side(s);
	return (struct diff_side *)s;
}

static void free_side(struct side *s)
{
	free(s->ops);
	free(s->casts);
	free(s->order);
	id_map_free(&s->aligned);
	id_map_free(&s->signatures);
	diff_compiled_free(&s->compiled);
	diff_aggregate_free(&s->aggregates);
	free(s->cut_short);
	free(s->scalers);
	trace_free(&s->trace);
}

/* The casts made for one op: [*first, *first + count) of s->casts. */
static size_t casts_of(const struct side *s, const struct op_record *op,
		       size_t *first)
{
	size_t lo = 0, hi = s->ncasts;
	struct cast_record key = { .pid = op->pid, .op_id = op->op_id };

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (compare_cast_records(&s->casts[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	size_t n = 0;
	while (lo + n < s->ncasts && s->casts[lo + n].pid == op->pid &&
	       s->casts[lo + n].op_id == op->op_id)
		n++;
	return n;
}

/* ------------------------------------------------------------ changes */

struct change {
	char kind[24];    /* output, policy, op-added, op-removed,
			   * cast-added, cast-removed, cache */
	char op[160];
	char phase[16];
	char base[200];   /* what base had */
	char now[200];    /* what new has */
	size_t count;
	size_t base_line, new_line;
	uint64_t base_op, new_op;
	const char *module; /* the first's op's, or NULL */
	/* how many of them were in the steps recorded as aggregates, and
	 * the first such step, with its amp.aggregate events' lines */
	size_t aggregated;
	int64_t aggregated_step;
	size_t aggregated_base_line, aggregated_new_line;
};

/* Changes counted by the module of their op, cut to `depth` parts
 * (NULL: ops of no module). */
struct module_changes {
	char *module;
	size_t count;
};

struct changes {
	int depth;            /* --depth */
	struct change *items;
	size_t count;
	size_t total;
	struct module_changes *modules;
	size_t nmodules;
	bool any_module;
};

static void count_by_module(struct changes *c, const char *module,
			    size_t count)
{
	size_t len = module ? analysis_module_prefix(module, c->depth) : 0;

	c->any_module |= module != NULL;
	for (size_t i = 0; i < c->nmodules; i++) {
		const char *have = c->modules[i].module;
		if (!have ? !module
			  : module && strlen(have) == len &&
				    !strncmp(have, module, len)) {
			c->modules[i].count += count;
			return;
		}
	}
	struct module_changes *grown =
		realloc(c->modules, (c->nmodules + 1) * sizeof *grown);
	if (!grown)
		oom();
	c->modules = grown;
	char *cut = module ? strndup(module, len) : NULL;
	if (module && !cut)
		oom();
	c->modules[c->nmodules++] = (struct module_changes){ cut, count };
}

static const char *module_name(const char *module)
{
	if (!module)
		return "(no module)";
	return module[0] ? module : "(outermost)";
}

/* The group of changes of this kind, op, phase, before and after: found,
 * else added (count 0). */
static struct change *group_of(struct changes *c, const char *kind,
			       const char *op, const char *phase,
			       const char *was, const char *is)
{
	for (size_t i = 0; i < c->count; i++) {
		struct change *x = &c->items[i];
		if (!strcmp(x->kind, kind) && !strcmp(x->op, op) &&
		    !strcmp(x->phase, phase) && !strcmp(x->base, was) &&
		    !strcmp(x->now, is))
			return x;
	}
	struct change *grown = realloc(c->items, (c->count + 1) * sizeof *grown);
	if (!grown)
		oom();
	c->items = grown;
	struct change *x = &c->items[c->count++];
	memset(x, 0, sizeof *x);
	snprintf(x->kind, sizeof x->kind, "%s", kind);
	snprintf(x->op, sizeof x->op, "%s", op);
	snprintf(x->phase, sizeof x->phase, "%s", phase);
	snprintf(x->base, sizeof x->base, "%s", was);
	snprintf(x->now, sizeof x->now, "%s", is);
	return x;
}

/* A change of an op of the detailed steps (the first of its group names
 * the ops and their module). */
static void record(struct changes *c, const char *kind,
		   const struct op_record *base, const struct op_record *now,
		   const char *was, const char *is)
{
	const struct op_record *any = base ? base : now;
	struct change *x = group_of(c, kind, any->label, any->phase, was, is);

	bool first = x->count == x->aggregated; /* of the detailed steps */

	c->total++;
	x->count++;
	count_by_module(c, any->module, 1);
	if (!first)
		return;
	x->module = any->module;
	if (base) {
		x->base_line = base->line;
		x->base_op = base->op_id;
	}
	if (now) {
		x->new_line = now->line;
		x->new_op = now->op_id;
	}
}

/* Changes diff_aggregate.c found in an aggregated step.  Aggregates name
 * no module: they are not in the changes by module. */
static void record_aggregated(void *ctx, const struct diff_aggregate_change *a)
{
	struct changes *c = ctx;
	struct change *x = group_of(c, a->kind, a->op, a->phase, a->base,
				    a->now);

	c->total += a->count;
	x->count += a->count;
	if (!x->aggregated) {
		x->aggregated_step = a->step;
		x->aggregated_base_line = a->base_line;
		x->aggregated_new_line = a->new_line;
	}
	x->aggregated += a->count;
}

static void cast_text(const struct cast_record *c, bool with_cache, char *buf,
		      size_t size)
{
	snprintf(buf, size, "arg %d %s->%s%s%s", c->arg, c->from, c->to,
		 with_cache ? " cache " : "", with_cache ? c->cache : "");
}

static void compare_casts(const struct side *b, const struct op_record *bop,
			  const struct side *n, const struct op_record *nop,
			  struct changes *changes)
{
	size_t bf = 0, nf = 0;
	size_t bn = bop ? casts_of(b, bop, &bf) : 0;
	size_t nn = nop ? casts_of(n, nop, &nf) : 0;
	bool used[128] = { false };
	char was[200], is[200];

	for (size_t i = 0; i < bn; i++) {
		const struct cast_record *bc = &b->casts[bf + i];
		bool found = false;
		for (size_t j = 0; j < nn && j < 128 && !found; j++) {
			const struct cast_record *nc = &n->casts[nf + j];
			if (used[j] || nc->arg != bc->arg ||
			    strcmp(nc->from, bc->from) || strcmp(nc->to, bc->to))
				continue;
			used[j] = found = true;
			if (strcmp(nc->cache, bc->cache)) {
				cast_text(bc, true, was, sizeof was);
				cast_text(nc, true, is, sizeof is);
				record(changes, "cache", bop, nop, was, is);
			}
		}
		if (!found) {
			cast_text(bc, true, was, sizeof was);
			record(changes, "cast-removed", bop, nop, was, "-");
		}
	}
	for (size_t j = 0; j < nn && j < 128; j++) {
		if (used[j])
			continue;
		cast_text(&n->casts[nf + j], true, is, sizeof is);
		record(changes, "cast-added", bop, nop, "-", is);
	}
}

static const char *or_none(const char *s)
{
	return s ? s : "none";
}

static void compare(struct side *b, struct side *n,
		    struct changes *changes, size_t *matched)
{
	*matched = 0;
	for (size_t i = 0; i < b->nops; i++) {
		const struct op_record *bo = &b->ops[i];
		if (bo->left_out)
			continue;
		size_t j = aligned_op(b, i, n);
		if (j == SIZE_MAX) {
			record(changes, "op-removed", bo, NULL, "present",
			       "absent");
			compare_casts(b, bo, n, NULL, changes);
			continue;
		}
		const struct op_record *no = &n->ops[j];
		(*matched)++;
		if (strcmp(or_none(bo->output), or_none(no->output)))
			record(changes, "output", bo, no, or_none(bo->output),
			       or_none(no->output));
		if (strcmp(or_none(bo->policy), or_none(no->policy)))
			record(changes, "policy", bo, no, or_none(bo->policy),
			       or_none(no->policy));
		compare_casts(b, bo, n, no, changes);
	}
	for (size_t i = 0; i < n->nops; i++) {
		if (n->ops[i].left_out || aligned_op(n, i, b) != SIZE_MAX)
			continue;
		const struct op_record *no = &n->ops[i];
		record(changes, "op-added", NULL, no, "absent", "present");
		compare_casts(b, NULL, n, no, changes);
	}
}

/* Cast totals by direction, both sides (context for the changes). */
struct direction {
	char from[16], to[16];
	size_t base, now;
};

static void count_direction(const char *from, const char *to, size_t count,
			    bool is_new, struct direction **dirs, size_t *n)
{
	size_t k;

	for (k = 0; k < *n; k++)
		if (!strcmp((*dirs)[k].from, from) && !strcmp((*dirs)[k].to, to))
			break;
	if (k == *n) {
		*dirs = realloc(*dirs, (*n + 1) * sizeof **dirs);
		if (!*dirs)
			oom();
		memset(&(*dirs)[k], 0, sizeof **dirs);
		snprintf((*dirs)[k].from, sizeof (*dirs)[k].from, "%s", from);
		snprintf((*dirs)[k].to, sizeof (*dirs)[k].to, "%s", to);
		(*n)++;
	}
	if (is_new)
		(*dirs)[k].now += count;
	else
		(*dirs)[k].base += count;
}

struct directions {
	struct direction **dirs;
	size_t *n;
	bool is_new;
};

static void count_aggregated(void *ctx, const struct trace_aggregate_cast *c)
{
	struct directions *d = ctx;

	if (strcmp(c->cache, "hit"))
		count_direction(c->from, c->to, c->count, d->is_new, d->dirs,
				d->n);
}

/* The side's casts, and those of the aggregated steps compared. */
static void count_directions(const struct side *s, bool is_new,
			     struct direction **dirs, size_t *n)
{
	struct directions d = { dirs, n, is_new };

	for (size_t i = 0; i < s->ncasts; i++) {
		const struct cast_record *c = &s->casts[i];
		if (!c->left_out && strcmp(c->cache, "hit"))
			count_direction(c->from, c->to, 1, is_new, dirs, n);
	}
	diff_aggregate_each_compared_cast(&s->aggregates, count_aggregated, &d);
}

/* Where a change group was first seen: an op of the detailed steps, and
 * a step recorded as aggregates. */
static void print_first(const struct side *b, const struct side *n,
			const struct change *x)
{
	if (x->count > x->aggregated) {
		printf("               first:");
		if (x->base_line)
			printf(" base op %llu (%s:%zu)",
			       (unsigned long long)x->base_op, b->trace.path,
			       x->base_line);
		if (x->new_line)
			printf("%s new op %llu (%s:%zu)", x->base_line ? "," : "",
			       (unsigned long long)x->new_op, n->trace.path,
			       x->new_line);
		if (x->module)
			printf(" in %s", module_name(x->module));
		putchar('\n');
	}
	if (x->aggregated)
		printf("               first in the aggregated steps: step %lld "
		       "(%s:%zu, %s:%zu)\n", (long long)x->aggregated_step,
		       b->trace.path, x->aggregated_base_line, n->trace.path,
		       x->aggregated_new_line);
}

/* "aggregated steps compared: 80 (20 to 99); 30 only in base" */
static void print_aggregated_steps(const struct diff_aggregate_steps *a)
{
	if (!a->compared && !a->base_only && !a->new_only && !a->cut_short)
		return;
	printf("aggregated steps compared: %zu", a->compared);
	if (a->compared)
		printf(" (%lld to %lld)", (long long)a->first,
		       (long long)a->last);
	if (a->base_only || a->new_only)
		printf("; not compared, in one trace only: %zu in base, %zu "
		       "in new", a->base_only, a->new_only);
	if (a->cut_short)
		printf("; not compared, cut short (its process or its trace "
		       "ended in it): %zu", a->cut_short);
	putchar('\n');
}

/* "ops not compared, cut short (...): 12 in base, 4 in new (step 7)",
 * "(...each): ... (steps 0 and 7)":
 * the steps named are those in full detail (an aggregated one is said
 * on the aggregated steps' line). */
static void print_ops_left_out(const struct side *b, const struct side *n,
			       const struct cut_steps *cut)
{
	enum { NAMED = 5 };
	size_t steps = 0, named = 0;

	if (!b->ops_left_out && !n->ops_left_out)
		return;
	for (size_t k = 0; k < cut->count; k++)
		steps += cut->in_detail[k];
	/* worded as summary words one step cut short, and several */
	printf("ops not compared, cut short (%s): %zu in base, %zu in new "
	       "(step%s ", steps == 1 ? "its process or its trace ended in it"
				     : "a process or its trace ended in each",
	       b->ops_left_out, n->ops_left_out, steps == 1 ? "" : "s");
	for (size_t k = 0; k < cut->count && named < NAMED; k++)
		if (cut->in_detail[k])
			printf("%s%d", !named++ ? "" : named == steps ? " and " : ", ",
			       cut->steps[k]);
	if (steps > NAMED)
		printf(" and %zu more", steps - NAMED);
	puts(")");
}

static size_t ops_of_process(const struct side *s, int64_t pid)
{
	size_t count = 0;

	for (size_t i = 0; i < s->nops; i++)
		count += s->ops[i].pid == pid;
	return count;
}

static size_t unpaired(const struct side *s)
{
	size_t count = 0;

	for (size_t k = 0; k < s->npids; k++)
		count += !s->order[k].paired;
	return count;
}

/* "; only in new: rank 1 (pid 2, 416 ops): its ops and casts are counted
 * as added" */
static void print_only_in(const struct side *s, bool is_new)
{
	enum { NAMED = 8 };
	size_t count = unpaired(s), named = 0;

	if (!count)
		return;
	printf("; only in %s: ", is_new ? "new" : "base");
	for (size_t k = 0; k < s->npids && named < NAMED; k++) {
		const struct pid_order *p = &s->order[k];
		if (p->paired)
			continue;
		if (named++)
			printf(", ");
		if (p->rank != NO_RANK)
			printf("rank %d (pid %lld, ", p->rank,
			       (long long)p->pid);
		else
			printf("pid %lld (", (long long)p->pid);
		printf("%zu ops)", ops_of_process(s, p->pid));
	}
	if (count > NAMED)
		printf(" and %zu more", count - NAMED);
	printf(": %s ops and casts are counted as %s",
	       count == 1 ? "its" : "their", is_new ? "added" : "removed");
}

/* "processes: 1 in base, 2 in new (paired by rank, then start); only in
 * new: rank 1 (pid 2, 416 ops): its ops and casts are counted as added":
 * a job of one rank against one of two reads as the second rank's
 * ops added, not as the program changed. */
static void print_processes(const struct side *b, const struct side *n)
{
	if (!unpaired(b) && !unpaired(n))
		return;
	printf("processes: %zu in base, %zu in new (paired %s)", b->npids,
	       n->npids, pairs_by_rank(b, n)
				 ? "by rank, then start"
				 : "in order: the traces share no rank");
	print_only_in(b, false);
	print_only_in(n, true);
	putchar('\n');
}

static void add_only_in_json(cJSON *list, const struct side *s, bool is_new)
{
	for (size_t k = 0; k < s->npids; k++) {
		const struct pid_order *p = &s->order[k];
		if (p->paired)
			continue;
		cJSON *one = cJSON_CreateObject();
		cJSON_AddStringToObject(one, "trace", is_new ? "new" : "base");
		cJSON_AddNumberToObject(one, "pid", (double)p->pid);
		if (p->rank != NO_RANK)
			cJSON_AddNumberToObject(one, "rank", p->rank);
		else
			cJSON_AddNullToObject(one, "rank");
		cJSON_AddNumberToObject(one, "ops",
					(double)ops_of_process(s, p->pid));
		cJSON_AddItemToArray(list, one);
	}
}

static void add_processes_json(cJSON *root, const struct side *b,
			       const struct side *n)
{
	cJSON *o = cJSON_AddObjectToObject(root, "processes");

	cJSON_AddNumberToObject(o, "base", (double)b->npids);
	cJSON_AddNumberToObject(o, "new", (double)n->npids);
	cJSON *list = cJSON_AddArrayToObject(o, "only_in_one");
	add_only_in_json(list, b, false);
	add_only_in_json(list, n, true);
}

static void print_text(const struct side *b, const struct side *n,
		       const struct changes *c, size_t matched,
		       const struct cut_steps *cut,
		       const struct diff_aggregate_steps *aggregated,
		       const struct direction *dirs, size_t ndirs)
{
	/* the aggregated steps' rows are counted apart, below */
	const char *detail_b = b->aggregates.nsteps ? " in full detail" : "";
	const char *detail_n = n->aggregates.nsteps ? " in full detail" : "";

	printf("base: %s (%zu ops, %zu casts%s)\n", b->trace.path, b->nops,
	       b->ncasts, detail_b);
	printf("new:  %s (%zu ops, %zu casts%s)\n", n->trace.path, n->nops,
	       n->ncasts, detail_n);
	printf("aligned ops: %zu\n", matched);
	print_processes(b, n);
	print_ops_left_out(b, n, cut);
	print_aggregated_steps(aggregated);
	if (ndirs) {
		printf("casts by direction (cache hits not counted):\n");
		for (size_t i = 0; i < ndirs; i++)
			printf("  %s->%s %zu -> %zu%s\n", dirs[i].from, dirs[i].to,
			       dirs[i].base, dirs[i].now,
			       dirs[i].base != dirs[i].now ? "  (changed)" : "");
	}
	if (!c->count) {
		printf("no change in cast behaviour\n");
		return;
	}
	printf("\n%zu change%s in %zu group%s:\n", c->total,
	       c->total == 1 ? "" : "s", c->count, c->count == 1 ? "" : "s");
	for (size_t i = 0; i < c->count; i++) {
		const struct change *x = &c->items[i];
		printf("  %-12s %s (%s)", x->kind, x->op, x->phase);
		if (!strcmp(x->kind, "op-added") || !strcmp(x->kind, "op-removed"))
			printf(" x%zu", x->count);
		else if (!strcmp(x->kind, "cast-removed"))
			printf(": %s, only in base  x%zu", x->base, x->count);
		else if (!strcmp(x->kind, "cast-added"))
			printf(": %s, only in new  x%zu", x->now, x->count);
		else
			printf(": %s -> %s  x%zu", x->base, x->now, x->count);
		if (x->aggregated && x->aggregated < x->count)
			printf(" (%zu in aggregated steps)", x->aggregated);
		putchar('\n');
		print_first(b, n, x);
	}
	if (!c->any_module)
		return;
	printf("\nchanges by module (paths cut to %d parts):\n",
	       c->depth);
	for (size_t k = 0; k < 2 * c->nmodules; k++) {
		/* the modules first changed first, then the ops of none */
		const struct module_changes *m = &c->modules[k % c->nmodules];
		if ((m->module == NULL) == (k >= c->nmodules))
			printf("  %-32s %zu\n", module_name(m->module),
			       m->count);
	}
}

/* "aggregated": how many of a change group's were in aggregated steps,
 * and the first such step. */
static void add_aggregated_json(cJSON *change, const struct change *x)
{
	cJSON *o = cJSON_AddObjectToObject(change, "aggregated");

	cJSON_AddNumberToObject(o, "count", (double)x->aggregated);
	cJSON_AddNumberToObject(o, "first_step", (double)x->aggregated_step);
	cJSON_AddNumberToObject(o, "base_line", (double)x->aggregated_base_line);
	cJSON_AddNumberToObject(o, "new_line", (double)x->aggregated_new_line);
}

static void print_json(const struct side *b, const struct side *n,
		       const struct changes *c, size_t matched,
		       const struct cut_steps *cut,
		       const struct diff_aggregate_steps *aggregated,
		       const struct direction *dirs, size_t ndirs)
{
	cJSON *root = cJSON_CreateObject();

	cJSON_AddStringToObject(root, "base", b->trace.path);
	cJSON_AddStringToObject(root, "new", n->trace.path);
	cJSON_AddBoolToObject(root, "changed", c->count > 0);
	cJSON *ops = cJSON_AddObjectToObject(root, "ops");
	cJSON_AddNumberToObject(ops, "base", (double)b->nops);
	cJSON_AddNumberToObject(ops, "new", (double)n->nops);
	cJSON_AddNumberToObject(ops, "aligned", (double)matched);
	add_processes_json(root, b, n);
	cJSON *left_out = cJSON_AddObjectToObject(ops, "cut_short");
	cJSON_AddNumberToObject(left_out, "base", (double)b->ops_left_out);
	cJSON_AddNumberToObject(left_out, "new", (double)n->ops_left_out);
	/* the steps not compared, as summary --json's steps.cut_short */
	cJSON *cut_list = cJSON_AddArrayToObject(
		cJSON_AddObjectToObject(root, "steps"), "cut_short");
	for (size_t k = 0; k < cut->count; k++)
		cJSON_AddItemToArray(cut_list,
				     cJSON_CreateNumber(cut->steps[k]));
	cJSON *steps = cJSON_AddObjectToObject(root, "aggregated_steps");
	cJSON_AddNumberToObject(steps, "compared", (double)aggregated->compared);
	if (aggregated->compared) {
		cJSON_AddNumberToObject(steps, "first", (double)aggregated->first);
		cJSON_AddNumberToObject(steps, "last", (double)aggregated->last);
	}
	cJSON_AddNumberToObject(steps, "base_only", (double)aggregated->base_only);
	cJSON_AddNumberToObject(steps, "new_only", (double)aggregated->new_only);
	cJSON_AddNumberToObject(steps, "cut_short",
				(double)aggregated->cut_short);
	cJSON *totals = cJSON_AddArrayToObject(root, "casts_by_direction");
	for (size_t i = 0; i < ndirs; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "from", dirs[i].from);
		cJSON_AddStringToObject(o, "to", dirs[i].to);
		cJSON_AddNumberToObject(o, "base", (double)dirs[i].base);
		cJSON_AddNumberToObject(o, "new", (double)dirs[i].now);
		cJSON_AddItemToArray(totals, o);
	}
	cJSON *list = cJSON_AddArrayToObject(root, "changes");
	for (size_t i = 0; i < c->count; i++) {
		const struct change *x = &c->items[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "kind", x->kind);
		cJSON_AddStringToObject(o, "op", x->op);
		cJSON_AddStringToObject(o, "phase", x->phase);
		cJSON_AddStringToObject(o, "base", x->base);
		cJSON_AddStringToObject(o, "new", x->now);
		cJSON_AddNumberToObject(o, "count", (double)x->count);
		cJSON *first = cJSON_AddObjectToObject(o, "first");
		if (x->module)
			cJSON_AddStringToObject(first, "module", x->module);
		if (x->base_line) {
			cJSON_AddNumberToObject(first, "base_op_id", (double)x->base_op);
			cJSON_AddNumberToObject(first, "base_line", (double)x->base_line);
		}
		if (x->new_line) {
			cJSON_AddNumberToObject(first, "new_op_id", (double)x->new_op);
			cJSON_AddNumberToObject(first, "new_line", (double)x->new_line);
		}
		if (x->aggregated)
			add_aggregated_json(o, x);
		cJSON_AddItemToArray(list, o);
	}
	cJSON *modules = cJSON_AddArrayToObject(root, "changes_by_module");
	for (size_t i = 0; c->any_module && i < c->nmodules; i++) {
		cJSON *o = cJSON_CreateObject();
		if (c->modules[i].module)
			cJSON_AddStringToObject(o, "module", c->modules[i].module);
		else
			cJSON_AddNullToObject(o, "module");
		cJSON_AddNumberToObject(o, "count", (double)c->modules[i].count);
		cJSON_AddItemToArray(modules, o);
	}
	char *text = cJSON_Print(root);
	if (text)
		printf("%s\n", text);
	free(text);
	cJSON_Delete(root);
}

enum { OPTION_JSON = 256, OPTION_DEPTH };

static const struct option diff_options[] = {
	{ "json", no_argument, NULL, OPTION_JSON },
	{ "depth", required_argument, NULL, OPTION_DEPTH },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

struct diff_args {
	const char *paths[2];  /* BASE and NEW */
	bool json;
	int depth;
};

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, struct diff_args *args)
{
	struct command_line cl = { "amptrace diff", "h", diff_options, argc,
				   argv };
	int option, status;

	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case OPTION_JSON:
			args->json = true;
			break;
		case OPTION_DEPTH:
			status = command_line_number(&cl, "--depth", optarg, 1,
						     64, &args->depth);
			if (status >= 0)
				return status;
			break;
		case 'h':
			fputs(diff_usage, stdout);
			return 0;
		default:
			return COMMAND_LINE_BAD_USAGE;
		}
	}
	if (argc - optind < 2)
		return command_line_error(&cl, "need two traces (BASE.json "
					  "NEW.json)");
	if (argc - optind > 2)
		return command_line_error(&cl, "unexpected argument '%s'",
					  argv[optind + 2]);
	args->paths[0] = argv[optind];
	args->paths[1] = argv[optind + 1];
	return -1;
}

/* Both traces loaded into *b and *n, each with its note; 2 when one
 * cannot be read (said), else 0. */
static int load_sides(const char *paths[2], struct side *b, struct side *n)
{
	char note[512];

	if (load_side(paths[0], b) != 0)
		return 2;
	if (load_side(paths[1], n) != 0) {
		free_side(b);
		return 2;
	}
	for (int k = 0; k < 2; k++) {
		const struct trace *t = k ? &n->trace : &b->trace;
		if (trace_end_note(t, note, sizeof note))
			fprintf(stderr, "amptrace diff: note: %s: %s\n", t->path,
				note);
	}
	return 0;
}

int amptrace_diff(int argc, char **argv)
{
	struct diff_args args = { .depth = DIFF_MODULE_DEPTH };
	int status = parse_args(argc, argv, &args);

	if (status >= 0)
		return status;
	struct side *b = calloc(1, sizeof *b), *n = calloc(1, sizeof *n);
	if (!b || !n)
		oom();
	status = load_sides(args.paths, b, n);
	if (status == 0) {
		status = diff_print((struct diff_side *)b, (struct diff_side *)n,
				    args.json, args.depth);
		free_side(b);
		free_side(n);
	}
	free(b);
	free(n);
	return status;
}

void diff_side_free(struct diff_side *side)
{
	if (!side)
		return;
	free_side((struct side *)side);
	free(side);
}

int diff_print(struct diff_side *base, struct diff_side *new, bool json,
	       int depth)
{
	struct side *b = (struct side *)base, *n = (struct side *)new;

	if (diff_compiled_applies(&b->compiled, &n->compiled))
		return diff_compiled(&b->trace, &b->compiled, &n->trace,
				     &n->compiled, json);
	struct changes changes = { .depth = depth };
	size_t matched;
	/* a step either trace ended in is not compared, in full detail
	 * or aggregated: what it lacks is the cut, not a change */
	struct cut_steps cut = cut_in_either(b, n);
	pair_processes(b, n);
	leave_out(b, &cut);
	leave_out(n, &cut);
	align_side(b);
	align_side(n);
	compare(b, n, &changes, &matched);
	struct diff_aggregate_steps aggregated;
	if (diff_aggregates(&b->aggregates, b, &n->aggregates, n,
			    side_process_ordinal, cut.steps, cut.count,
			    record_aggregated, &changes, &aggregated) != 0)
		oom();
	struct direction *dirs = NULL;
	size_t ndirs = 0;
	count_directions(b, false, &dirs, &ndirs);
	count_directions(n, true, &dirs, &ndirs);
	if (json)
		print_json(b, n, &changes, matched, &cut, &aggregated, dirs,
			   ndirs);
	else
		print_text(b, n, &changes, matched, &cut, &aggregated, dirs,
			   ndirs);
	int status = changes.count ? 1 : 0;
	free(cut.steps);
	free(cut.in_detail);
	free(dirs);
	free(changes.items);
	for (size_t i = 0; i < changes.nmodules; i++)
		free(changes.modules[i].module);
	free(changes.modules);
	return status;
}
