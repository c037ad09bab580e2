/* `amptrace diff` when a trace holds torch.compile'd graphs: the same
 * program run eagerly and compiled runs different ops (decompositions,
 * fused kernels), so ops cannot be aligned by occurrence.  Its casts can
 * be compared: each autocast decision is a signature (module path, op,
 * phase, from, to, and the source line where the trace has it), taken
 * from a compiled graph's casts (those autocast made: the program's own
 * conversions and autograd's are ops in an eager trace) and from the
 * casts the observer saw run.  A signature one trace has and the other
 * not is a cast added or removed; the same op and place casting to
 * other dtypes is a cast changed.  How often a cast runs is not compared:
 * a compiled graph's casts are recorded once, a run's at every step. */
#include "diff_compiled.h"

#include "compiled_graphs.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct compiled_signature {
	const char *module, *op, *phase, *from, *to, *source;
	uint64_t graph;  /* the compiled graph, 0 for a cast that ran */
	size_t count;
	size_t line;     /* the first one's line in its file */
	bool matched;
};

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Compared when both sides have one; a module path relative to the
 * compiled module matches the end of the eager one ("h.0.mlp" and
 * "model.h.0.mlp"). */
static bool same_module(const char *a, const char *b)
{
	if (!a || !b)
		return true;
	size_t na = strlen(a), nb = strlen(b);
	if (na < nb) {
		const char *t = a;
		a = b;
		b = t;
		size_t n = na;
		na = nb;
		nb = n;
	}
	return !strcmp(a + na - nb, b) && (na == nb || a[na - nb - 1] == '.');
}

static bool same_place(const struct compiled_signature *a,
		       const struct compiled_signature *b)
{
	return same(a->op, b->op) && same(a->phase, b->phase) &&
	       same_module(a->module, b->module) &&
	       (!a->source || !b->source || same(a->source, b->source));
}

static bool same_cast(const struct compiled_signature *a,
		      const struct compiled_signature *b)
{
	return same_place(a, b) && same(a->from, b->from) && same(a->to, b->to);
}

static uint64_t hash_text(uint64_t h, const char *text)
{
	for (const char *c = text ? text : ""; *c; c++)
		h = (h ^ (unsigned char)*c) * 1099511628211ull;
	return (h ^ (text ? 0xff : 0xfe)) * 1099511628211ull;
}

/* The hash of what add() tells apart: every part of the signature. */
static uint64_t signature_hash(const struct compiled_signature *sig)
{
	const char *parts[] = { sig->module, sig->op, sig->phase, sig->from,
				sig->to, sig->source };
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
		h = hash_text(h, parts[i]);
	return h;
}

static bool same_signature(const struct compiled_signature *a,
			   const struct compiled_signature *b)
{
	return same(a->module, b->module) && same(a->op, b->op) &&
	       same(a->phase, b->phase) && same(a->from, b->from) &&
	       same(a->to, b->to) && same(a->source, b->source);
}

/* The slot of sig: its item's, or the empty one it would take. */
static uint32_t *slot_of(const struct diff_compiled_side *s,
			 const struct compiled_signature *sig)
{
	size_t mask = s->nslots - 1, i = signature_hash(sig) & mask;

	while (s->slots[i] && !same_signature(&s->items[s->slots[i] - 1], sig))
		i = (i + 1) & mask;
	return &s->slots[i];
}

/* Room for one more item, and the index kept under half full. */
static int grow(struct diff_compiled_side *s)
{
	if (s->count == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct compiled_signature *items =
			realloc(s->items, cap * sizeof *items);
		if (!items)
			return -1;
		s->items = items;
		s->cap = cap;
	}
	if (2 * (s->count + 1) <= s->nslots)
		return 0;
	size_t nslots = s->nslots ? 2 * s->nslots : 128;
	uint32_t *slots = calloc(nslots, sizeof *slots);
	if (!slots)
		return -1;
	free(s->slots);
	s->slots = slots;
	s->nslots = nslots;
	for (size_t i = 0; i < s->count; i++)
		*slot_of(s, &s->items[i]) = (uint32_t)i + 1;
	return 0;
}

/* Counts sig: once more if the side has it, else a new item. */
static int add(struct diff_compiled_side *s,
	       const struct compiled_signature *sig)
{
	if (grow(s) != 0)
		return -1;
	uint32_t *slot = slot_of(s, sig);
	if (*slot) {
		s->items[*slot - 1].count++;
		return 0;
	}
	s->items[s->count++] = *sig;
	*slot = (uint32_t)s->count;
	return 0;
}

void diff_compiled_add(struct diff_compiled_side *s,
		       const struct trace_event *e)
{
	const struct trace_cast *c = &e->cast;
	bool compiled = e->kind == TRACE_OTHER_CAST &&
			trace_cast_is_compiled(c);

	if (compiled || (e->kind == TRACE_OP && e->op.graph))
		s->has_graphs = true;
	/* autocast's decisions: a run's, or a graph's autocast made */
	if (s->failed || (e->kind != TRACE_CAST &&
	    !(compiled && trace_cast_graph(c)->made_by &&
	      !strcmp(trace_cast_graph(c)->made_by, "autocast"))))
		return;
	struct compiled_signature sig = {
		.module = c->module, .op = trace_cast_for_op(c),
		.phase = trace_cast_for_phase(c), .from = c->from,
		.to = c->to, .source = trace_cast_graph(c)->source_line,
		.graph = compiled ? trace_cast_graph(c)->graph : 0, .count = 1,
		.line = e->line,
	};
	if (compiled)
		s->compiled++;
	if (add(s, &sig) != 0)
		s->failed = true;
}

void diff_compiled_free(struct diff_compiled_side *s)
{
	free(s->items);
	free(s->slots);
	*s = (struct diff_compiled_side){ 0 };
}

bool diff_compiled_applies(const struct diff_compiled_side *base,
			   const struct diff_compiled_side *now)
{
	return base->has_graphs || now->has_graphs;
}

/* ------------------------------------------------------------ changes */

struct change {
	const char *kind;     /* cast-added, cast-removed, cast-changed */
	const struct compiled_signature *base, *now;
};

static void describe(const struct compiled_signature *s, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s (%s)", s->op ? s->op : "?",
			 s->phase ? s->phase : "?");
	if (s->module && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, " in %s", s->module);
	if (s->source && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, " at %s", s->source);
}

static void direction(const struct compiled_signature *s, char *buf,
		      size_t size)
{
	snprintf(buf, size, "%s->%s", s->from, s->to);
}

/* Signatures of one side the other lacks; the same place with another
 * direction on the other side is one change, not two. */
static size_t changes_of(struct diff_compiled_side *b,
			 struct diff_compiled_side *n,
			 struct change *out)
{
	size_t count = 0;

	for (size_t i = 0; i < b->count; i++)
		for (size_t k = 0; k < n->count; k++)
			if (same_cast(&b->items[i], &n->items[k]))
				b->items[i].matched = n->items[k].matched = true;
	for (size_t i = 0; i < b->count; i++) {
		struct compiled_signature *s = &b->items[i];
		if (s->matched)
			continue;
		struct compiled_signature *other = NULL;
		for (size_t k = 0; k < n->count && !other; k++)
			if (!n->items[k].matched &&
			    same_place(s, &n->items[k]))
				other = &n->items[k];
		if (other)
			other->matched = true;
		out[count++] = (struct change){
			other ? "cast-changed" : "cast-removed", s, other };
	}
	for (size_t k = 0; k < n->count; k++)
		if (!n->items[k].matched)
			out[count++] = (struct change){ "cast-added", NULL,
							&n->items[k] };
	return count;
}

static void print_text(const struct trace *base, const struct trace *now,
		       const struct diff_compiled_side *b,
		       const struct diff_compiled_side *n,
		       const struct change *changes, size_t count)
{
	char where[256], from[32], to[32];

	printf("%s -> %s: casts compared by module, source line and op "
	       "(signatures: %zu in base, %zu in new; compiled graphs' casts: "
	       "%zu in base, %zu in new)\n", base->path, now->path, b->count,
	       n->count, b->compiled, n->compiled);
	if (!count) {
		puts("no cast behaviour change");
		return;
	}
	printf("%zu cast behaviour change%s:\n", count, count == 1 ? "" : "s");
	for (size_t i = 0; i < count; i++) {
		const struct change *c = &changes[i];
		const struct compiled_signature *s = c->now ? c->now : c->base;
		describe(s, where, sizeof where);
		if (c->base && c->now) {
			direction(c->base, from, sizeof from);
			direction(c->now, to, sizeof to);
			printf("  %-13s %s: %s -> %s\n", c->kind, where, from, to);
			continue;
		}
		direction(s, from, sizeof from);
		printf("  %-13s %s: %s, only in %s%s\n", c->kind, where, from,
		       c->now ? "new" : "base",
		       s->graph ? " (a compiled graph's cast)" : "");
	}
}

static cJSON *signature_json(const struct compiled_signature *s)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "op", s->op ? s->op : "");
	cJSON_AddStringToObject(o, "phase", s->phase ? s->phase : "");
	cJSON_AddStringToObject(o, "from", s->from);
	cJSON_AddStringToObject(o, "to", s->to);
	if (s->module)
		cJSON_AddStringToObject(o, "module", s->module);
	if (s->source)
		cJSON_AddStringToObject(o, "source", s->source);
	if (s->graph)
		cJSON_AddNumberToObject(o, "graph", (double)s->graph);
	cJSON_AddNumberToObject(o, "count", (double)s->count);
	cJSON_AddNumberToObject(o, "line", (double)s->line);
	return o;
}

static void print_json(const struct trace *base, const struct trace *now,
		       const struct change *changes, size_t count)
{
	cJSON *root = cJSON_CreateObject();

	cJSON_AddStringToObject(root, "base", base->path);
	cJSON_AddStringToObject(root, "new", now->path);
	cJSON_AddStringToObject(root, "compared", "casts");
	cJSON *list = cJSON_AddArrayToObject(root, "changes");
	for (size_t i = 0; i < count; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "kind", changes[i].kind);
		if (changes[i].base)
			cJSON_AddItemToObject(o, "base",
					      signature_json(changes[i].base));
		if (changes[i].now)
			cJSON_AddItemToObject(o, "new",
					      signature_json(changes[i].now));
		cJSON_AddItemToArray(list, o);
	}
	char *text = cJSON_Print(root);
	if (text)
		printf("%s\n", text);
	free(text);
	cJSON_Delete(root);
}

int diff_compiled(const struct trace *base_trace, struct diff_compiled_side *b,
		  const struct trace *now_trace, struct diff_compiled_side *n,
		  bool json)
{
	struct change *changes = b->failed || n->failed ? NULL :
		calloc(b->count + n->count + 1, sizeof *changes);

	if (!changes) {
		fputs("amptrace diff: out of memory\n", stderr);
		return 2;
	}
	size_t count = changes_of(b, n, changes);
	if (json)
		print_json(base_trace, now_trace, changes, count);
	else
		print_text(base_trace, now_trace, b, n, changes, count);
	free(changes);
	return count ? 1 : 0;
}
