/* "Did you mean" for the op, region and module names of `amptrace
 * check`'s rules (see check_hints.h), through the one edit-distance
 * helper of the tracer (edit_distance.h). */
#include "check_hints.h"
#include "analyze.h"
#include "edit_distance.h"
#include "id_map.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

bool check_name_matches(const char *pattern, const char *op,
			const char *overload)
{
	char label[256];

	if (!op)
		return false;
	if (!strncmp(pattern, "aten::", 6))
		pattern += 6;
	snprintf(label, sizeof label, "%s%s%s", op,
		 overload && overload[0] ? "." : "", overload ? overload : "");
	return !fnmatch(pattern, op, 0) || !fnmatch(pattern, label, 0);
}

/* Names are interned once per trace (trace.h), so a name already offered
 * is the same pointer: a short list of them spares most edit distances. */
#define HINT_SEEN 64
struct candidates {
	const char *word;
	const char *seen[HINT_SEEN][2];
	size_t nseen, next;
	int distance;         /* of the best so far (within two typos) */
	char best[256];
	bool matched;         /* some candidate matches the pattern itself */
};

/* Keeps `label` when it is the closest to the word so far. */
static void offer_label(struct candidates *c, const char *label)
{
	struct closest_name closest = { NULL, c->distance };

	closest_name_offer(&closest, c->word, label);
	if (closest.name) {
		c->distance = closest.distance;
		snprintf(c->best, sizeof c->best, "%s", label);
	}
}

/* Offers `name` (with `overload` when not NULL: "softmax.int"). */
static void offer(struct candidates *c, const char *name, const char *overload)
{
	char label[256];

	for (size_t i = 0; i < c->nseen; i++)
		if (c->seen[i][0] == name && c->seen[i][1] == overload)
			return;
	c->seen[c->next][0] = name;
	c->seen[c->next][1] = overload;
	c->next = (c->next + 1) % HINT_SEEN;
	if (c->nseen < HINT_SEEN)
		c->nseen++;
	snprintf(label, sizeof label, "%s%s%s", name, overload ? "." : "",
		 overload ? overload : "");
	offer_label(c, label);
}

static void append(char *actual, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void append(char *actual, size_t size, const char *fmt, ...)
{
	size_t n = strlen(actual);
	va_list ap;

	va_start(ap, fmt);
	if (n + 1 < size)
		vsnprintf(actual + n, size - n, fmt, ap);
	va_end(ap);
}

static struct candidates candidates_for(const char *word)
{
	struct closest_name none = CLOSEST_NAME_INIT;

	return (struct candidates){ .word = word, .distance = none.distance };
}

/* An op name that matches no op of any phase: the closest name, or
 * name.overload when the rule gives an overload (`softmax.in`). */
static void hint_op(const struct trace *t, const char *pattern, char *actual,
		    size_t size)
{
	const char *word = strncmp(pattern, "aten::", 6) ? pattern : pattern + 6;
	struct candidates c = candidates_for(word);
	bool overloads = strchr(word, '.') != NULL;

	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind != TRACE_OP || !e->op.op)
			continue;
		if (check_name_matches(pattern, e->op.op, e->op.overload))
			return;
		offer(&c, e->op.op,
		      overloads && e->op.overload && e->op.overload[0]
			      ? e->op.overload : NULL);
	}
	if (c.best[0])
		append(actual, size, "; no op is named '%s' in this trace: did "
		       "you mean '%s'?", word, c.best);
}

static void offer_scope(struct candidates *c, const char *pattern,
			const char *name)
{
	if (!name)
		return;
	if (!fnmatch(pattern, name, 0))
		c->matched = true;
	offer(c, name, NULL);
}

/* A region name that matches no region of the trace. */
static void hint_scope(const struct trace *t, const char *pattern,
		       char *actual, size_t size)
{
	struct candidates c = candidates_for(pattern);

	for (size_t i = 0; i < t->nevents && !c.matched; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_SCOPE_BEGIN)
			offer_scope(&c, pattern, e->scope.scope);
		else if (e->kind == TRACE_OP)
			for (int k = 0; k < e->op.autocast->nscopes; k++)
				offer_scope(&c, pattern, e->op.autocast->scopes[k]);
	}
	if (c.matched)
		return;
	if (c.best[0])
		append(actual, size, "; no region is named '%s' in this trace: "
		       "did you mean '%s'?", pattern, c.best);
	else
		append(actual, size, "; no region is named '%s' in this trace",
		       pattern);
}

/* A module the trace has, and each module around it ('h.0' of
 * 'h.0.attn'), unless one matches the pattern.  A model has thousands of
 * modules, each interned once (trace.h): `seen` keeps every one offered,
 * so each costs its edit distances once. */
static void offer_module(struct candidates *c, struct id_map *seen,
			 const char *pattern, const char *module)
{
	char parent[256];

	if (!module || c->matched)
		return;
	size_t *offered = id_map_find(seen, 0, (uintptr_t)module, true);
	if (offered && *offered)
		return;
	if (offered)
		*offered = 1;
	if (analysis_in_module(module, pattern)) {
		c->matched = true;
		return;
	}
	offer_label(c, module);
	for (const char *dot = strchr(module, '.'); dot;
	     dot = strchr(dot + 1, '.')) {
		snprintf(parent, sizeof parent, "%.*s", (int)(dot - module),
			 module);
		offer_label(c, parent);
	}
}

/* A module path that matches no module of the trace (`in module lm_hed`,
 * `module fcc1: count == 0`, which pass in silence otherwise). */
static void hint_module(const struct trace *t, const char *pattern,
			char *actual, size_t size)
{
	struct candidates c = candidates_for(pattern);
	struct id_map seen = { 0 };
	bool any = false;

	for (size_t i = 0; i < t->nevents && !c.matched; i++) {
		const struct trace_event *e = &t->events[i];
		const char *module = e->kind == TRACE_OP ? e->op.module
				     : e->kind == TRACE_CAST ? e->cast.module
							     : NULL;
		any |= module != NULL;
		offer_module(&c, &seen, pattern, module);
	}
	id_map_free(&seen);
	if (c.matched)
		return;
	if (!any)
		append(actual, size, "; no op of this trace names its module "
		       "(PyTorch traces do, from format 1.4)");
	else if (c.best[0])
		append(actual, size, "; no module is named '%s' in this trace: "
		       "did you mean '%s'?", pattern, c.best);
	else
		append(actual, size, "; no module is named '%s' in this trace",
		       pattern);
}

void check_hints_add(const struct trace *t, const struct rule *r,
		     char *actual, size_t size)
{
	const char *op = r->kind == RULE_OP ? r->op : r->filter.op;

	if (r->kind != RULE_OP && r->kind != RULE_CASTS)
		return;
	if (op)
		hint_op(t, op, actual, size);
	if (r->filter.scope)
		hint_scope(t, r->filter.scope, actual, size);
	if (r->filter.module)
		hint_module(t, r->filter.module, actual, size);
}
