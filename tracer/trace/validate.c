/* Trace validation against FORMAT.md (see validate.h). */
#include "validate.h"

#include "trace_schema.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void problem(struct validate_report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void problem(struct validate_report *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nmessages < VALIDATE_MAX_MESSAGES) {
		va_start(ap, fmt);
		vsnprintf(r->messages[r->nmessages++], sizeof r->messages[0], fmt,
			  ap);
		va_end(ap);
	}
	r->problems++;
}

static bool one_of(const char *s, const char *const *names)
{
	for (; s && *names; names++)
		if (!strcmp(s, *names))
			return true;
	return false;
}

/* ------------------------------------------------- keys (the schema) */

static const char *const devices[] = { "cpu", "cuda", NULL };
static const char *const phases[] = { "forward", "backward", "optimizer",
				      "other", NULL };
static const char *const policies[] = { "none", "lower_precision_fp", "fp32",
					"fp32_set_opt_dtype",
					"fp32_append_dtype", "promote",
					"banned", NULL };
static const char *const caches[] = { "hit", "miss", "uncacheable",
				      "disabled", NULL };
static const char *const origins[] = { "autocast", "autograd", "custom_fwd",
				       "compiled", NULL };
static const char *const handled[] = { "skipped", "suppressed", NULL };

/* The names a CHECK column allows (FORMAT.md §3), NULL: any. */
static const char *const *allowed_names(enum trace_key_check check)
{
	switch (check) {
	case TRACE_CHECK_DTYPE:
		return trace_dtype_names;
	case TRACE_CHECK_DEVICE:
		return devices;
	case TRACE_CHECK_PHASE:
		return phases;
	case TRACE_CHECK_POLICY:
		return policies;
	case TRACE_CHECK_CACHE:
		return caches;
	case TRACE_CHECK_ORIGIN:
		return origins;
	case TRACE_CHECK_HANDLED:
		return handled;
	default:
		return NULL;
	}
}

/* Whether row k's member in m holds a value (the key is in the file). */
static bool member_set(const struct trace_key *k, const void *m)
{
	const void *f = (const char *)m + k->offset;
	const int *count = (const int *)((const char *)m + k->count_offset);

	switch (k->type) {
	case TRACE_TYPE_STRING:
	case TRACE_TYPE_STRING_OR_NULL:
	case TRACE_TYPE_EXIT:
	case TRACE_TYPE_GPU:
	case TRACE_TYPE_RECORDING:
	case TRACE_TYPE_STEPS:
		return *(const void *const *)f != NULL;
	case TRACE_TYPE_ID:
	case TRACE_TYPE_U64:
		return *(const uint64_t *)f != 0;
	case TRACE_TYPE_U32:
		return *(const uint32_t *)f != 0;
	case TRACE_TYPE_I64:
	case TRACE_TYPE_US:
		return *(const int64_t *)f != 0;
	case TRACE_TYPE_INT:
		return *(const int *)f != 0;
	case TRACE_TYPE_INT_OR_NULL:
		return *(const int *)f >= 0;
	case TRACE_TYPE_BOOL:
	case TRACE_TYPE_TRUE:
		return *(const bool *)f;
	case TRACE_TYPE_NUMBER_OR_NULL:
		return !isnan(*(const double *)f);
	case TRACE_TYPE_SCOPE:
		return *(const char *)f != 0;
	case TRACE_TYPE_SHAPE:
	case TRACE_TYPE_STRINGS:
	case TRACE_TYPE_TENSORS:
	case TRACE_TYPE_PROCESSES:
	case TRACE_TYPE_MERGED:
	case TRACE_TYPE_MERGED_ENDS:
	case TRACE_TYPE_OP_ROWS:
	case TRACE_TYPE_CAST_ROWS:
	case TRACE_TYPE_DIAG_ROWS:
		return *count > 0;
	default:
		return false; /* written from other members, or always */
	}
}

/* The keys of m (a struct of `table`, at line `line`) against their rows:
 * names among those FORMAT.md allows, and no key newer than the file's
 * format says; objects and lists of objects too. */
static void check_keys(const struct trace *t, struct validate_report *r,
		       const struct trace_object *table, const void *m,
		       size_t line)
{
	for (size_t i = 0; i < table->nkeys; i++) {
		const struct trace_key *k = &table->keys[i];
		const void *f = (const char *)m + k->offset;
		const char *const *names = allowed_names(k->check);
		const char *name = names ? *(const char *const *)f : NULL;
		if (name && !one_of(name, names))
			problem(r, "line %zu: %s %s \"%s\" is not one of "
				"FORMAT.md's names", line, table->name, k->key,
				name);
		if (t->amptrace && member_set(k, m) &&
		    trace_version_compare(k->since, t->format) > 0)
			problem(r, "line %zu: %s %s came with format %s; the "
				"file says %s", line, table->name, k->key,
				k->since, t->format);
		if (!k->object)
			continue;
		if (k->type == TRACE_TYPE_AUTOCAST) {
			check_keys(t, r, k->object, *(const void *const *)f,
				   line);
			continue;
		}
		if (k->type == TRACE_TYPE_AGGREGATE_CACHE) {
			check_keys(t, r, k->object, f, line);
			continue;
		}
		const char *list = *(const char *const *)f;
		int n = k->type == TRACE_TYPE_EXIT || k->type == TRACE_TYPE_GPU ||
				k->type == TRACE_TYPE_RECORDING ||
				k->type == TRACE_TYPE_STEPS
				? list != NULL
				: *(const int *)((const char *)m + k->count_offset);
		for (int j = 0; j < n; j++) {
			if (k->type == TRACE_TYPE_TENSORS) {
				const struct trace_tensor *x =
					(const struct trace_tensor *)list + j;
				struct trace_tensor_record record =
					trace_tensor_record(x);
				check_keys(t, r, k->object, &record, line);
			} else {
				check_keys(t, r, k->object,
					   list + (size_t)j * k->object->size,
					   line);
			}
		}
	}
}

/* Every event's keys, and the header's and the trailer's. */
static void check_all_keys(const struct trace *t, struct validate_report *r)
{
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		const struct trace_object *args = trace_schema_args(e->kind);
		const struct trace_object *top = trace_schema_top(e->kind);
		if (args == &trace_schema_cast) {
			struct trace_cast_record record =
				trace_cast_record(&e->cast);
			check_keys(t, r, args, &record, e->line);
		} else if (args) {
			check_keys(t, r, args, &e->op, e->line);
		}
		if (top)
			check_keys(t, r, top, &e->op, e->line);
	}
	if (t->amptrace)
		check_keys(t, r, &trace_schema_header, &t->header, 1);
	if (t->finalized)
		check_keys(t, r, &trace_schema_trailer, &t->trailer, 0);
}

static int64_t ns(double us)
{
	return (int64_t)llround(us * 1000.0);
}

/* (pid, id, value) triples, sorted for lookups. */
struct key {
	int64_t pid;
	uint64_t id;
	int64_t time;   /* ns */
	size_t event;
};

static int compare_keys(const void *a, const void *b)
{
	const struct key *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

static const struct key *find_key(const struct key *keys, size_t n,
				  int64_t pid, uint64_t id)
{
	size_t lo = 0, hi = n;
	struct key probe = { pid, id, INT64_MIN, 0 };

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (compare_keys(&keys[mid], &probe) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && keys[lo].pid == pid && keys[lo].id == id)
		return &keys[lo];
	return NULL;
}

struct span {
	int64_t pid, tid;
	int64_t begin, end;
	size_t event;
};

static int compare_spans(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	/* longer first, so parents come before children */
	return (x->end < y->end) - (x->end > y->end);
}

static void check_metadata(const struct trace *t, struct validate_report *r)
{
	struct key *procs = malloc((t->nevents + 1) * sizeof *procs);
	struct key *threads = malloc((t->nevents + 1) * sizeof *threads);
	size_t np = 0, nt = 0;

	if (!procs || !threads) {
		problem(r, "out of memory");
		free(procs);
		free(threads);
		return;
	}
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_META)
			continue;
		if (!strcmp(e->name, "process_name"))
			procs[np++] = (struct key){ e->pid, 0, 0, i };
		else if (!strcmp(e->name, "thread_name"))
			threads[nt++] = (struct key){ e->pid, (uint64_t)e->tid, 0, i };
	}
	trace_sort(procs, np, sizeof *procs, compare_keys);
	trace_sort(threads, nt, sizeof *threads, compare_keys);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_META)
			continue;
		if (!find_key(procs, np, e->pid, 0)) {
			problem(r, "line %u: pid %lld has no process_name M event",
				e->line, (long long)e->pid);
			procs[np++] = (struct key){ e->pid, 0, 0, i };
			trace_sort(procs, np, sizeof *procs, compare_keys);
		}
		if (e->tid != 0 && !find_key(threads, nt, e->pid, (uint64_t)e->tid)) {
			problem(r, "line %u: thread %lld of pid %lld has no "
				"thread_name M event", e->line, (long long)e->tid,
				(long long)e->pid);
			threads[nt++] = (struct key){ e->pid, (uint64_t)e->tid, 0, i };
			trace_sort(threads, nt, sizeof *threads, compare_keys);
		}
	}
	free(procs);
	free(threads);
}

/* Where each process's first step recorded without full detail began
 * (FORMAT.md §8): a tensor used after it may have been made there. */
struct aggregated_from {
	const struct key *keys; /* id 0, time: the step's begin */
	size_t n;
};

static bool made_unrecorded(const struct aggregated_from *a, int64_t pid,
			    int64_t used_at)
{
	const struct key *k = find_key(a->keys, a->n, pid, 0);

	return k && k->time <= used_at;
}

static void check_tensor(const struct aggregated_from *aggregated,
			 struct validate_report *r,
			 const struct key *defs, size_t ndefs,
			 const struct trace_event *e, uint64_t id,
			 const char *name, const char *role, int64_t used_at)
{
	if (name)
		return; /* a named leaf needs no producer */
	const struct key *def = find_key(defs, ndefs, e->pid, id);
	if ((!def || def->time > used_at) &&
	    !made_unrecorded(aggregated, e->pid, used_at))
		problem(r, "line %u: %s tensor %llu is used before it appears as "
			"an output, a cast result or a named leaf%s", e->line,
			role, (unsigned long long)id,
			def ? " (it is produced later)" : "");
}

/* Every kernel's "External id" names an op of the process that launched
 * it ("amp.pid"), or with "amp.cast_result" a cast result of one. */
static void check_kernels(const struct trace *t, struct validate_report *r,
			  const struct key *ops, size_t nops)
{
	struct key *results;
	size_t nresults = 0;

	if (!t->counts[TRACE_KERNEL])
		return;
	results = malloc((t->counts[TRACE_CAST] + t->counts[TRACE_OTHER_CAST] +
			  1) * sizeof *results);
	if (!results) {
		problem(r, "out of memory");
		return;
	}
	for (size_t i = 0; i < t->nevents; i++)
		if (t->events[i].kind == TRACE_CAST ||
		    t->events[i].kind == TRACE_OTHER_CAST)
			results[nresults++] = (struct key){
				t->events[i].pid, t->events[i].cast.result, 0, i
			};
	trace_sort(results, nresults, sizeof *results, compare_keys);
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_KERNEL || !e->kernel.external_id)
			continue;
		int64_t pid = e->kernel.host_pid >= 0 ? e->kernel.host_pid : e->pid;
		bool found = e->kernel.cast
				     ? find_key(results, nresults, pid,
						e->kernel.external_id) != NULL
				     : find_key(ops, nops, pid,
						e->kernel.external_id) != NULL;
		if (!found)
			problem(r, "line %u: kernel's External id %llu names no "
				"%s of pid %lld in the trace", e->line,
				(unsigned long long)e->kernel.external_id,
				e->kernel.cast ? "cast result" : "op",
				(long long)pid);
	}
	free(results);
}

/* ------------------------------------------- the producer contract */

/* What ../PRODUCERS.md asks of producers that a trace shows: a cache
 * counter right after every miss (the next event of its thread, at the
 * cast's end: FORMAT.md §3.5), and ops whose parent and forward op are
 * real: a parent_op_id names an op of the process whose slice holds this
 * one, a forward_op_id one that began before it, and only backward ops
 * have one. */
static void check_cache_counters(const struct trace *t,
				 struct validate_report *r)
{
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_CAST || strcmp(e->cast.cache, "miss"))
			continue;
		const struct trace_event *next = NULL;
		for (size_t j = i + 1; j < t->nevents && !next; j++)
			if (t->events[j].pid == e->pid &&
			    t->events[j].tid == e->tid)
				next = &t->events[j];
		if (!next && t->truncated)
			continue; /* cut before its counter */
		if (!next || next->kind != TRACE_COUNTER ||
		    strcmp(next->cat, "amp.cache") ||
		    ns(next->ts) != ns(e->ts + e->dur))
			problem(r, "line %u: a cache miss (tensor %llu cast for "
				"op %llu) with no \"autocast cache\" counter "
				"right after it on its thread (FORMAT.md §3.5)",
				e->line, (unsigned long long)e->cast.tensor,
				(unsigned long long)e->cast.op_id);
	}
}

static void check_op_links(const struct trace *t, struct validate_report *r,
			   const struct key *ops, size_t nops)
{
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_OP)
			continue;
		const struct trace_op *op = &e->op;
		const struct key *parent =
			op->parent_op_id ? find_key(ops, nops, e->pid,
						    op->parent_op_id) : NULL;
		const struct trace_event *p = parent ? &t->events[parent->event]
						     : NULL;
		if (op->parent_op_id &&
		    (!p || p->tid != e->tid || ns(e->ts) < ns(p->ts) ||
		     ns(e->ts + e->dur) > ns(p->ts + p->dur)))
			problem(r, "line %u: op %llu's parent_op_id %llu is no "
				"op of its thread holding it", e->line,
				(unsigned long long)op->op_id,
				(unsigned long long)op->parent_op_id);
		const struct key *forward =
			op->forward_op_id ? find_key(ops, nops, e->pid,
						     op->forward_op_id) : NULL;
		if (op->forward_op_id &&
		    (!forward || ns(t->events[forward->event].ts) > ns(e->ts)))
			problem(r, "line %u: op %llu's forward_op_id %llu is no "
				"op that began before it", e->line,
				(unsigned long long)op->op_id,
				(unsigned long long)op->forward_op_id);
		if (op->forward_op_id && strcmp(op->phase, "backward"))
			problem(r, "line %u: op %llu has a forward_op_id but "
				"phase %s", e->line,
				(unsigned long long)op->op_id, op->phase);
	}
}

/* Each op defines its outputs and each cast its result: an op may have
 * hundreds of outputs, so the events alone do not bound the count. */
static size_t count_defs(const struct trace *t)
{
	size_t n = 1;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_OP)
			n += (size_t)e->op.noutputs;
		else if (e->kind == TRACE_CAST || e->kind == TRACE_OTHER_CAST)
			n++;
	}
	return n;
}

size_t trace_validate(const struct trace *t, struct validate_report *r)
{
	size_t n = t->nevents + 1;
	struct key *ops = malloc(n * sizeof *ops);
	struct key *defs = malloc(count_defs(t) * sizeof *defs);
	struct span *spans = malloc(n * sizeof *spans);
	struct key *firsts = malloc(n * sizeof *firsts);
	size_t nops = 0, ndefs = 0, nspans = 0, nfirsts = 0;

	*r = (struct validate_report){ 0 };
	if (!ops || !defs || !spans || !firsts) {
		problem(r, "out of memory");
		goto done;
	}
	if (!t->amptrace)
		problem(r, "no \"amptrace\" header object with a format version");
	if (t->amptrace && !t->finalized)
		problem(r, "no \"amptraceEnd\" trailer: the trace was not "
			"finished (truncated%s)", t->truncated ? ", repaired" : "");
	check_metadata(t, r);
	check_all_keys(t, r);

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_META && e->ts < 0)
			problem(r, "line %u: negative ts %g", e->line, e->ts);
		if (e->kind == TRACE_OP) {
			const struct trace_op *op = &e->op;
			ops[nops++] = (struct key){ e->pid, op->op_id, 0, i };
			int64_t end = ns(e->ts + e->dur);
			for (int k = 0; k < op->noutputs; k++)
				defs[ndefs++] = (struct key){
					e->pid, op->outputs[k].id, end, i
				};
			spans[nspans++] = (struct span){ e->pid, e->tid, ns(e->ts),
							 end, i };
		} else if (e->kind == TRACE_KERNEL ||
			   (e->kind == TRACE_STEP && e->ph == 'X')) {
			/* steps and their windows nest on tid 0 too */
			spans[nspans++] = (struct span){ e->pid, e->tid, ns(e->ts),
							 ns(e->ts + e->dur), i };
			if (e->kind == TRACE_STEP && e->step.marker &&
			    !e->step.detail)
				firsts[nfirsts++] = (struct key){ e->pid, 0,
								  ns(e->ts), i };
		} else if (e->kind == TRACE_CAST ||
			   e->kind == TRACE_OTHER_CAST) {
			const struct trace_cast *c = &e->cast;
			int64_t end = ns(e->ts + e->dur);
			if (!trace_cast_is_compiled(c))
				defs[ndefs++] = (struct key){ e->pid, c->result,
							      end, i };
			spans[nspans++] = (struct span){ e->pid, e->tid, ns(e->ts),
							 end, i };
		}
	}
	trace_sort(ops, nops, sizeof *ops, compare_keys);
	for (size_t i = 1; i < nops; i++)
		if (ops[i].pid == ops[i - 1].pid && ops[i].id == ops[i - 1].id)
			problem(r, "line %u: op_id %llu appears twice (also line "
				"%u)", t->events[ops[i].event].line,
				(unsigned long long)ops[i].id,
				t->events[ops[i - 1].event].line);
	trace_sort(defs, ndefs, sizeof *defs, compare_keys);
	check_kernels(t, r, ops, nops);
	/* each process's earliest: compare_keys sorts by (pid, id, time) */
	trace_sort(firsts, nfirsts, sizeof *firsts, compare_keys);
	size_t kept = 0;
	for (size_t i = 0; i < nfirsts; i++)
		if (!kept || firsts[kept - 1].pid != firsts[i].pid)
			firsts[kept++] = firsts[i];
	const struct aggregated_from aggregated = { firsts, kept };
	check_op_links(t, r, ops, nops);
	check_cache_counters(t, r);

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_OP && !e->op.incomplete) {
			int64_t end = ns(e->ts + e->dur);
			for (int k = 0; k < e->op.ninputs; k++)
				check_tensor(&aggregated, r, defs, ndefs, e,
					     e->op.inputs[k].id,
					     e->op.inputs[k].info->name,
					     "input", end);
		} else if (e->kind == TRACE_CAST ||
			   e->kind == TRACE_OTHER_CAST) {
			const struct trace_cast *c = &e->cast;
			const struct key *op = find_key(ops, nops, e->pid, c->op_id);
			if (!op) {
				problem(r, "line %u: cast for op %llu, which is "
					"not in the trace", e->line,
					(unsigned long long)c->op_id);
			} else {
				const struct trace_event *o = &t->events[op->event];
				if (ns(e->ts) < ns(o->ts) ||
				    ns(e->ts + e->dur) > ns(o->ts + o->dur))
					problem(r, "line %u: cast is not inside "
						"its op (line %u)", e->line,
						o->line);
			}
			/* a compiled graph's cast has no tensors of the run */
			if (!trace_cast_is_compiled(c))
				check_tensor(&aggregated, r, defs, ndefs, e,
					     c->tensor, c->source->name,
					     "cast source",
					     ns(e->ts + e->dur));
			else if (!trace_cast_graph(c)->graph)
				problem(r, "line %u: a compiled cast names no "
					"graph", e->line);
		}
	}

	/* X slices of a thread nest (Perfetto drops overlapping ones). */
	trace_sort(spans, nspans, sizeof *spans, compare_spans);
	size_t *stack = malloc((nspans + 1) * sizeof *stack);
	size_t depth = 0;
	for (size_t i = 0; stack && i < nspans; i++) {
		const struct span *s = &spans[i];
		if (i && (s->pid != spans[i - 1].pid || s->tid != spans[i - 1].tid))
			depth = 0;
		while (depth && spans[stack[depth - 1]].end <= s->begin)
			depth--;
		if (depth && spans[stack[depth - 1]].end < s->end)
			problem(r, "line %u: slice overlaps line %u on the same "
				"thread without nesting",
				t->events[s->event].line,
				t->events[spans[stack[depth - 1]].event].line);
		stack[depth++] = i;
	}
	free(stack);

	/* B/E: matched per thread, in file order. */
	struct thread_depth {
		int64_t pid, tid;
		int depth;
	} *threads = NULL;
	size_t nthreads = 0;
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_SCOPE_BEGIN && e->kind != TRACE_SCOPE_END)
			continue;
		size_t k;
		for (k = 0; k < nthreads; k++)
			if (threads[k].pid == e->pid && threads[k].tid == e->tid)
				break;
		if (k == nthreads) {
			struct thread_depth *grown =
				realloc(threads, (nthreads + 1) * sizeof *grown);
			if (!grown)
				break;
			threads = grown;
			threads[nthreads++] = (struct thread_depth){ e->pid, e->tid,
								     0 };
		}
		if (e->kind == TRACE_SCOPE_BEGIN)
			threads[k].depth++;
		else if (threads[k].depth-- == 0) {
			problem(r, "line %u: an amp.scope E with no open B on its "
				"thread", e->line);
			threads[k].depth = 0;
		}
	}
	for (size_t k = 0; k < nthreads && !t->truncated; k++)
		if (threads[k].depth)
			problem(r, "thread %lld of pid %lld ends with %d autocast "
				"region(s) open", (long long)threads[k].tid,
				(long long)threads[k].pid, threads[k].depth);
	free(threads);
done:
	free(ops);
	free(defs);
	free(spans);
	free(firsts);
	return r->problems;
}
