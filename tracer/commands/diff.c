/* `amptrace diff BASE NEW`: how cast behaviour changed between two runs
 * of the same program, ignoring timing and ids.
 *
 * Ops are aligned by occurrence: the k-th `linear` (forward) of thread t
 * of process p in one trace is the k-th in the other (processes by rank,
 * else in order of appearance; threads by libamp thread number).  This is
 * linear in the trace size, and an op added or removed shifts only the
 * later occurrences of that same op.  For each aligned pair we compare
 * output dtype, policy and the casts made for the op (argument, from, to,
 * cache result); unaligned ops are reported as added or removed. */
#include "analyze.h"
#include "command_line.h"
#include "commands.h"
#include "diff_compiled.h"
#include "id_map.h"
#include "trace.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char diff_usage[] =
	"usage: amptrace diff [--json] BASE.json NEW.json\n"
	"\n"
	"Reports cast behaviour that changed between two traces of the same\n"
	"program: ops whose output dtype or autocast policy changed, casts\n"
	"added or removed, cache results that changed (hit/miss/uncacheable),\n"
	"ops added or removed.  Timing and ids are ignored.  When a trace\n"
	"holds torch.compile'd graphs, casts are compared instead, by module\n"
	"path, source line and op (an eager and a compiled run do not run\n"
	"the same ops).\n"
	"\n"
	"  --json      one JSON object instead of text\n"
	"  -h, --help  this text\n"
	"\n"
	"Exit status: 0 no change, 1 changes, 2 bad input.\n";

static void oom(void)
{
	fputs("amptrace diff: out of memory\n", stderr);
	exit(2);
}

/* ------------------------------------------------------------- sides */

struct cast_ref {
	int64_t pid;
	uint64_t op_id;
	size_t event;
};

struct side {
	struct trace trace;
	struct analysis a;
	/* alignment key (interned in `trace`, so one pointer per string)
	 * -> op event, in the trace tools' map (id_map.h) */
	struct id_map ops;
	const char **keys;      /* alignment key of each op, in file order */
	size_t *op_events;
	size_t nops;
	struct cast_ref *casts; /* sorted by (pid, op_id) */
	size_t ncasts;
	int64_t *pids;          /* process order */
	size_t npids;
};

static int compare_cast_refs(const void *a, const void *b)
{
	const struct cast_ref *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->op_id != y->op_id)
		return x->op_id < y->op_id ? -1 : 1;
	return (x->event > y->event) - (x->event < y->event);
}

struct pid_order {
	int64_t pid;
	int rank;
	double first_ts;
};

static int compare_pids(const void *a, const void *b)
{
	const struct pid_order *x = a, *y = b;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->first_ts > y->first_ts) - (x->first_ts < y->first_ts);
}

static size_t process_ordinal(const struct side *s, int64_t pid)
{
	for (size_t i = 0; i < s->npids; i++)
		if (s->pids[i] == pid)
			return i;
	return 0;
}

static void order_processes(struct side *s)
{
	const struct trace *t = &s->trace;
	struct pid_order *order = NULL;
	size_t n = 0;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		size_t k;
		for (k = 0; k < n && order[k].pid != e->pid; k++)
			;
		if (k == n) {
			order = realloc(order, (n + 1) * sizeof *order);
			if (!order)
				oom();
			order[n++] = (struct pid_order){ e->pid, 1 << 30, e->ts };
		}
		if (e->kind == TRACE_META && e->meta.rank >= 0)
			order[k].rank = e->meta.rank;
		if (e->kind != TRACE_META && e->ts < order[k].first_ts)
			order[k].first_ts = e->ts;
	}
	trace_sort(order, n, sizeof *order, compare_pids);
	s->pids = malloc((n ? n : 1) * sizeof *s->pids);
	if (!s->pids)
		oom();
	for (size_t i = 0; i < n; i++)
		s->pids[i] = order[i].pid;
	s->npids = n;
	free(order);
}

/* `text` interned in s's trace, as a map key. */
static uint64_t key_of(struct side *s, const char *text)
{
	const char *interned = trace_intern(&s->trace, text);

	if (!interned)
		oom();
	return (uint64_t)(uintptr_t)interned;
}

/* The op event of alignment key `text` in s, or SIZE_MAX. */
static size_t op_of_key(struct side *s, const char *text)
{
	return id_map_get(&s->ops, 0, key_of(s, text));
}

/* The side of s->trace, loaded: its analysis and op keys. */
static void build_side(struct side *s)
{
	if (analysis_run(&s->trace, &s->a) != 0)
		oom();
	order_processes(s);
	const struct trace *t = &s->trace;
	struct id_map occurrences = { 0 }; /* signature -> last occurrence */
	s->keys = malloc((t->counts[TRACE_OP] + 1) * sizeof *s->keys);
	s->op_events = malloc((t->counts[TRACE_OP] + 1) * sizeof *s->op_events);
	s->casts = malloc((t->counts[TRACE_CAST] + 1) * sizeof *s->casts);
	if (!s->keys || !s->op_events || !s->casts)
		oom();
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_CAST) {
			s->casts[s->ncasts++] = (struct cast_ref){
				e->pid, e->cast.op_id, i
			};
			continue;
		}
		if (e->kind != TRACE_OP)
			continue;
		char label[160], sig[400], key[440];
		snprintf(sig, sizeof sig, "p%zu t%lld %s %s",
			 process_ordinal(s, e->pid), (long long)e->tid,
			 trace_op_label(&e->op, label, sizeof label),
			 e->op.phase);
		size_t k = id_map_get(&occurrences, 0, key_of(s, sig));
		k = k == SIZE_MAX ? 0 : k + 1;
		snprintf(key, sizeof key, "%s #%zu", sig, k);
		uint64_t op_key = key_of(s, key);
		if (!id_map_put(&occurrences, 0, key_of(s, sig), k) ||
		    !id_map_put(&s->ops, 0, op_key, i))
			oom();
		s->keys[s->nops] = (const char *)(uintptr_t)op_key;
		s->op_events[s->nops++] = i;
	}
	id_map_free(&occurrences);
	trace_sort(s->casts, s->ncasts, sizeof *s->casts, compare_cast_refs);
}

static int load_side(const char *path, struct side *s)
{
	struct trace_error err;

	memset(s, 0, sizeof *s);
	if (trace_load(path, &s->trace, &err) != 0) {
		fprintf(stderr, "amptrace diff: %s\n", err.message);
		return -1;
	}
	build_side(s);
	return 0;
}

struct diff_side *diff_side_new(struct trace *trace)
{
	struct side *s = calloc(1, sizeof *s);

	if (!s)
		oom();
	s->trace = *trace;
	*trace = (struct trace){ 0 };
	build_side(s);
	return (struct diff_side *)s;
}

static void free_side(struct side *s)
{
	free(s->keys);
	free(s->op_events);
	free(s->casts);
	free(s->pids);
	id_map_free(&s->ops);
	analysis_free(&s->a);
	trace_free(&s->trace);
}

/* The casts made for one op: [*first, *first + count) of s->casts. */
static size_t casts_of(const struct side *s, const struct trace_event *op,
		       size_t *first)
{
	size_t lo = 0, hi = s->ncasts;
	struct cast_ref key = { op->pid, op->op.op_id, 0 };

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (compare_cast_refs(&s->casts[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	size_t n = 0;
	while (lo + n < s->ncasts && s->casts[lo + n].pid == op->pid &&
	       s->casts[lo + n].op_id == op->op.op_id)
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
};

struct changes {
	struct change *items;
	size_t count;
	size_t total;
};

static void record(struct changes *c, const char *kind,
		   const struct trace_event *base, const struct trace_event *now,
		   const char *was, const char *is)
{
	const struct trace_event *any = base ? base : now;
	char label[160];

	trace_op_label(&any->op, label, sizeof label);
	c->total++;
	for (size_t i = 0; i < c->count; i++) {
		struct change *x = &c->items[i];
		if (!strcmp(x->kind, kind) && !strcmp(x->op, label) &&
		    !strcmp(x->phase, any->op.phase) && !strcmp(x->base, was) &&
		    !strcmp(x->now, is)) {
			x->count++;
			return;
		}
	}
	struct change *grown = realloc(c->items, (c->count + 1) * sizeof *grown);
	if (!grown)
		oom();
	c->items = grown;
	struct change *x = &c->items[c->count++];
	memset(x, 0, sizeof *x);
	snprintf(x->kind, sizeof x->kind, "%s", kind);
	snprintf(x->op, sizeof x->op, "%s", label);
	snprintf(x->phase, sizeof x->phase, "%s", any->op.phase);
	snprintf(x->base, sizeof x->base, "%s", was);
	snprintf(x->now, sizeof x->now, "%s", is);
	x->count = 1;
	if (base) {
		x->base_line = base->line;
		x->base_op = base->op.op_id;
	}
	if (now) {
		x->new_line = now->line;
		x->new_op = now->op.op_id;
	}
}

static void cast_text(const struct trace_cast *c, bool with_cache, char *buf,
		      size_t size)
{
	snprintf(buf, size, "arg %d %s->%s%s%s", c->arg, c->from, c->to,
		 with_cache ? " cache " : "", with_cache ? c->cache : "");
}

static void compare_casts(const struct side *b, const struct trace_event *bop,
			  const struct side *n, const struct trace_event *nop,
			  struct changes *changes)
{
	size_t bf = 0, nf = 0;
	size_t bn = bop ? casts_of(b, bop, &bf) : 0;
	size_t nn = nop ? casts_of(n, nop, &nf) : 0;
	bool used[128] = { false };
	char was[200], is[200];

	for (size_t i = 0; i < bn; i++) {
		const struct trace_cast *bc =
			&b->trace.events[b->casts[bf + i].event].cast;
		bool found = false;
		for (size_t j = 0; j < nn && j < 128 && !found; j++) {
			const struct trace_cast *nc =
				&n->trace.events[n->casts[nf + j].event].cast;
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
		const struct trace_cast *nc =
			&n->trace.events[n->casts[nf + j].event].cast;
		cast_text(nc, true, is, sizeof is);
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
		const struct trace_event *be = &b->trace.events[b->op_events[i]];
		size_t j = op_of_key(n, b->keys[i]);
		if (j == SIZE_MAX) {
			record(changes, "op-removed", be, NULL, "present",
			       "absent");
			compare_casts(b, be, n, NULL, changes);
			continue;
		}
		const struct trace_event *ne = &n->trace.events[j];
		(*matched)++;
		const char *bo = analysis_output_dtype(&be->op);
		const char *no = analysis_output_dtype(&ne->op);
		if (strcmp(or_none(bo), or_none(no)))
			record(changes, "output", be, ne, or_none(bo), or_none(no));
		if (strcmp(or_none(be->op.policy), or_none(ne->op.policy)))
			record(changes, "policy", be, ne, or_none(be->op.policy),
			       or_none(ne->op.policy));
		compare_casts(b, be, n, ne, changes);
	}
	for (size_t i = 0; i < n->nops; i++) {
		if (op_of_key(b, n->keys[i]) != SIZE_MAX)
			continue;
		const struct trace_event *ne = &n->trace.events[n->op_events[i]];
		record(changes, "op-added", NULL, ne, "absent", "present");
		compare_casts(b, NULL, n, ne, changes);
	}
}

/* Cast totals by direction, both sides (context for the changes). */
struct direction {
	char from[16], to[16];
	size_t base, now;
};

static void count_directions(const struct side *s, bool is_new,
			     struct direction **dirs, size_t *n)
{
	for (size_t i = 0; i < s->trace.nevents; i++) {
		const struct trace_event *e = &s->trace.events[i];
		if (e->kind != TRACE_CAST || !strcmp(e->cast.cache, "hit"))
			continue;
		size_t k;
		for (k = 0; k < *n; k++)
			if (!strcmp((*dirs)[k].from, e->cast.from) &&
			    !strcmp((*dirs)[k].to, e->cast.to))
				break;
		if (k == *n) {
			*dirs = realloc(*dirs, (*n + 1) * sizeof **dirs);
			if (!*dirs)
				oom();
			memset(&(*dirs)[k], 0, sizeof **dirs);
			snprintf((*dirs)[k].from, sizeof (*dirs)[k].from, "%s",
				 e->cast.from);
			snprintf((*dirs)[k].to, sizeof (*dirs)[k].to, "%s",
				 e->cast.to);
			(*n)++;
		}
		if (is_new)
			(*dirs)[k].now++;
		else
			(*dirs)[k].base++;
	}
}

static void print_text(const struct side *b, const struct side *n,
		       const struct changes *c, size_t matched,
		       const struct direction *dirs, size_t ndirs)
{
	printf("base: %s (%zu ops, %zu casts)\nnew:  %s (%zu ops, %zu casts)\n",
	       b->trace.path, b->nops, b->ncasts, n->trace.path, n->nops,
	       n->ncasts);
	printf("aligned ops: %zu\n", matched);
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
		printf("\n               first:");
		if (x->base_line)
			printf(" base op %llu (%s:%zu)",
			       (unsigned long long)x->base_op, b->trace.path,
			       x->base_line);
		if (x->new_line)
			printf("%s new op %llu (%s:%zu)", x->base_line ? "," : "",
			       (unsigned long long)x->new_op, n->trace.path,
			       x->new_line);
		putchar('\n');
	}
}

static void print_json(const struct side *b, const struct side *n,
		       const struct changes *c, size_t matched,
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
		if (x->base_line) {
			cJSON_AddNumberToObject(first, "base_op_id", (double)x->base_op);
			cJSON_AddNumberToObject(first, "base_line", (double)x->base_line);
		}
		if (x->new_line) {
			cJSON_AddNumberToObject(first, "new_op_id", (double)x->new_op);
			cJSON_AddNumberToObject(first, "new_line", (double)x->new_line);
		}
		cJSON_AddItemToArray(list, o);
	}
	char *text = cJSON_Print(root);
	if (text)
		printf("%s\n", text);
	free(text);
	cJSON_Delete(root);
}

enum { OPTION_JSON = 256 };

static const struct option diff_options[] = {
	{ "json", no_argument, NULL, OPTION_JSON },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* BASE and NEW into paths; returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, const char *paths[2], bool *json)
{
	struct command_line cl = { "amptrace diff", "h", diff_options, argc,
				   argv };
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case OPTION_JSON:
			*json = true;
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
	paths[0] = argv[optind];
	paths[1] = argv[optind + 1];
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
	const char *paths[2];
	bool json = false;
	int status = parse_args(argc, argv, paths, &json);

	if (status >= 0)
		return status;
	struct side *b = calloc(1, sizeof *b), *n = calloc(1, sizeof *n);
	if (!b || !n)
		oom();
	status = load_sides(paths, b, n);
	if (status == 0) {
		status = diff_print((struct diff_side *)b, (struct diff_side *)n,
				    json);
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

int diff_print(struct diff_side *base, struct diff_side *new, bool json)
{
	struct side *b = (struct side *)base, *n = (struct side *)new;

	if (diff_compiled_applies(&b->trace, &n->trace))
		return diff_compiled(&b->trace, &n->trace, json);
	struct changes changes = { 0 };
	size_t matched;
	compare(b, n, &changes, &matched);
	struct direction *dirs = NULL;
	size_t ndirs = 0;
	count_directions(b, false, &dirs, &ndirs);
	count_directions(n, true, &dirs, &ndirs);
	if (json)
		print_json(b, n, &changes, matched, dirs, ndirs);
	else
		print_text(b, n, &changes, matched, dirs, ndirs);
	int status = changes.count ? 1 : 0;
	free(dirs);
	free(changes.items);
	return status;
}
