/* Findings on the graph (graph.h): red borders on every node that shows
 * a problem the trace's analysis (tracer/analysis/findings.h) names, and a note
 * per finding and drawn step where it occurs, on the first node of the
 * op it names there. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Marks a node that shows a problem the analysis names `kind`; the
 * analysis reports one occurrence per site, the view marks them all. */
void graph_flag(struct graph_builder *b, size_t node, const char *kind)
{
	struct graph *g = b->g;

	if (node >= g->nnodes)
		return;
	g->nodes[node].flagged = true;
	for (size_t i = 0; i < g->nflags; i++)
		if (!strcmp(g->flags[i].kind, kind)) {
			g->flags[i].count++;
			return;
		}
	struct graph_flag *grown = realloc(g->flags, (g->nflags + 1) *
						     sizeof *grown);
	if (!grown) {
		g->failed = true;
		return;
	}
	g->flags = grown;
	g->flags[g->nflags++] = (struct graph_flag){ kind, node, 1 };
}

void graph_op_flags(struct graph_builder *b, size_t node, const struct trace_op *op)
{
	if (!strcmp(op->phase, "backward") && op->autocast->enabled)
		graph_flag(b, node, "backward-under-autocast");
	if (op->status || op->error)
		graph_flag(b, node, "op-error");
}

void graph_cast_flags(struct graph_builder *b, size_t node,
		       const struct trace_cast *c)
{
	if (c->stale)
		graph_flag(b, node, "stale-cache");
	if (!strcmp(c->cache, "disabled"))
		graph_flag(b, node, "cache-disabled");
}

/* The node drawn for an occurrence: the op it names (a cast's: its op,
 * which the report's finding links mark), else its cast, or VIEW_NONE.
 * *ordinal: that op's place in the selection. */
static size_t node_of_occurrence(struct graph_builder *b,
				 const struct trace_finding *f, size_t event,
				 size_t shown_ops, size_t *ordinal)
{
	const struct view_selection *s = b->s;
	const struct trace *t = s->trace;
	uint64_t op_id = 0;

	if (event >= t->nevents)
		return VIEW_NONE;
	enum trace_kind kind = t->events[event].kind;
	if (kind == TRACE_DIAG)
		op_id = t->events[event].diag.op_id;
	else if (event == f->event)
		op_id = f->op_id;
	else if (kind == TRACE_CAST)
		op_id = t->events[event].cast.op_id;
	const struct trace_event *op =
		op_id ? analysis_op(&s->analysis, t->events[event].pid, op_id)
		      : NULL;
	if (op)
		event = (size_t)(op - t->events);
	if (t->events[event].kind != TRACE_OP &&
	    t->events[event].kind != TRACE_CAST)
		return VIEW_NONE;
	*ordinal = s->ordinal_of[event];
	if (*ordinal == VIEW_NONE || *ordinal >= shown_ops)
		return VIEW_NONE;
	uint64_t cast;
	if (t->events[event].kind == TRACE_CAST &&
	    view_map_get(&b->cast_nodes, 0, event, &cast))
		return (size_t)cast;
	return b->node_of_op[*ordinal];
}

/* At most this many notes: the others are listed in the title and the
 * note about them (draw_elsewhere). */
#define GRAPH_MAX_NOTES 12

/* Where a finding's drawn occurrences are: per step, the earliest drawn
 * node and how many occurred there. */
struct placement {
	size_t node, ordinal, count;
	int step, last_step;
	bool first;   /* the finding's first occurrence (its message's) */
};

static size_t place_occurrences(struct graph_builder *b,
				const struct trace_finding *f, size_t shown_ops,
				struct placement *places)
{
	const struct analysis *a = &b->s->analysis;
	size_t nplaces = 0;

	for (size_t o = f->occurrences; o < a->nfinding_occurrences;
	     o = a->finding_occurrences[o].next) {
		size_t event = a->finding_occurrences[o].event, ordinal;
		size_t node = node_of_occurrence(b, f, event, shown_ops, &ordinal);
		if (node == VIEW_NONE)
			continue;
		int step = a->step_of[b->s->ops[ordinal].event];
		size_t p = 0;
		while (p < nplaces && places[p].step != step)
			p++;
		if (p == nplaces) {
			if (nplaces == GRAPH_MAX_NOTES)
				continue;
			places[nplaces++] = (struct placement){ node, ordinal, 0,
								step, step, false };
		}
		places[p].count++;
		places[p].first |= event == f->event;
		if (ordinal <= places[p].ordinal) {  /* the chain: newest first */
			places[p].node = node;
			places[p].ordinal = ordinal;
		}
	}
	for (size_t i = 1; i < nplaces; i++)   /* in program order */
		for (size_t j = i; j > 0 && places[j].ordinal < places[j - 1].ordinal; j--) {
			struct placement t = places[j];
			places[j] = places[j - 1];
			places[j - 1] = t;
		}
	/* the steps a fold hides share its node: one note for them all */
	size_t kept = 0;
	for (size_t i = 0; i < nplaces; i++) {
		struct placement *last = kept ? &places[kept - 1] : NULL;
		if (last && last->node == places[i].node) {
			last->count += places[i].count;
			last->last_step = places[i].last_step;
			last->first |= places[i].first;
		} else {
			places[kept++] = places[i];
		}
	}
	return kept;
}

/* Adds the note unless the node has one of the kind already or the
 * notes are all used; returns whether it did. */
static bool add_note(struct graph_builder *b, const struct trace_finding *f,
		     const struct placement *place)
{
	struct graph *g = b->g;

	if (g->nfindings == GRAPH_MAX_NOTES)
		return false;
	for (size_t k = 0; k < g->nfindings; k++)
		if (g->findings[k].node == place->node &&
		    !strcmp(g->findings[k].finding->kind, f->kind))
			return false;
	if (!g->nodes[place->node].flagged)
		graph_flag(b, place->node, f->kind);
	g->findings[g->nfindings++] = (struct graph_finding){
		f, place->node, place->step, place->last_step, place->count,
		place->first };
	return true;
}

/* Whether finding f is of the processes shown (one rank's, or all). */
static bool finding_shown(const struct view_selection *s,
			  const struct trace_finding *f)
{
	return s->group < 0 ||
	       trace_ranks_group(&s->analysis.ranks, f->pid) == s->group;
}

/* Per listed finding (rank_findings.h): whether one of the rank shown is
 * among those it stands for.  Another rank's alike finding is then that
 * one's, noted once.  NULL when out of memory. */
static bool *listed_shown(const struct view_selection *s)
{
	const struct analysis *a = &s->analysis;
	bool *shown = calloc(a->listed.count ? a->listed.count : 1,
			     sizeof *shown);

	for (size_t i = 0; shown && i < a->nfindings; i++)
		shown[a->listed.of[i]] |= finding_shown(s, &a->findings[i]);
	return shown;
}

/* A note per finding and drawn step where it occurs (--all-steps: each
 * step's first occurrence) on the first node showing it; a finding with
 * no drawn occurrence goes on the first node flagged with its kind, else
 * into the title.  Every finding gets its first note before any gets a
 * second, so one that recurs every step does not crowd out the others.
 * Another rank's finding whose twin the rank shown has is left to it;
 * without one it goes into the title once, the lowest rank's, which says
 * which rank has it and on how many ranks. */
void graph_place_findings(struct graph_builder *b, size_t shown_ops)
{
	struct graph *g = b->g;
	const struct view_selection *s = b->s;
	const struct analysis *a = &s->analysis;
	struct placement places[GRAPH_MAX_NOTES];
	bool *noted = calloc(a->nfindings ? a->nfindings : 1, sizeof *noted);
	bool *twin_shown = listed_shown(s);

	g->findings = calloc(GRAPH_MAX_NOTES, sizeof *g->findings);
	g->elsewhere = calloc(a->nfindings ? a->nfindings : 1,
			      sizeof *g->elsewhere);
	if (!noted || !twin_shown || !g->findings || !g->elsewhere) {
		g->failed = true;
		free(noted);
		free(twin_shown);
		return;
	}
	/* another rank's: left to its twin on the rank shown, else named
	 * once, the lowest rank's */
	for (size_t i = 0; i < a->nfindings; i++)
		noted[i] = !finding_shown(s, &a->findings[i]) &&
			   (twin_shown[a->listed.of[i]] ||
			    a->listed.items[a->listed.of[i]].finding != i);
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < a->nfindings; i++) {
			const struct trace_finding *f = &a->findings[i];
			size_t nplaces = place_occurrences(b, f, shown_ops, places);
			for (size_t k = 0; k < g->nflags && !nplaces &&
					   finding_shown(s, f); k++)
				if (!strcmp(g->flags[k].kind, f->kind))
					places[nplaces++] = (struct placement){
						g->flags[k].first_node, 0, 0,
						-1, -1, true };
			for (size_t p = 0; p < nplaces && !(round == 0 && noted[i]); p++)
				noted[i] |= add_note(b, f, &places[p]);
		}
	for (size_t i = 0; i < a->nfindings; i++)
		if (!noted[i])
			g->elsewhere[g->nelsewhere++] = &a->findings[i];
	free(noted);
	free(twin_shown);
}

void graph_elsewhere_text(const struct graph *g, const struct trace_finding *f,
			  struct jsonw *w)
{
	const struct view_selection *s = g->s;

	jsonw_printf(w, "%s %s ×%zu", finding_severity_name(f->severity),
		     f->kind, f->count);
	if (!finding_shown(s, f)) {
		char name[64];
		const struct trace_ranks *r = &s->analysis.ranks;
		int group = trace_ranks_group(r, f->pid);
		int ranks = s->analysis.listed.items[
			s->analysis.listed.of[f - s->analysis.findings]].ranks;
		trace_ranks_name(r, group, name, sizeof name);
		/* "rank 1's", "process 77's", "of the processes without a rank" */
		jsonw_printf(w, group ? " (%s's" : " (of %s", name);
		if (ranks > 1)
			jsonw_printf(w, ", on %d ranks", ranks);
		jsonw_cstr(w, ": --rank ");
		if (r->rank_of_group[group] >= 0)
			jsonw_printf(w, "%d draws it)", r->rank_of_group[group]);
		else
			jsonw_cstr(w, "all draws it)");
		return;
	}
	if (f->event >= s->trace->nevents)
		return;
	int step = s->analysis.step_of[f->event];
	if (s->step != VIEW_STEP_ALL && step != s->step)
		jsonw_printf(w, " (first in step %d: --step %d draws it)", step,
			     step);
	else
		jsonw_printf(w, " (first in step %d)", step);
}

/* At most this many findings listed in the note about the others. */
#define GRAPH_MAX_ELSEWHERE 6

/* Ends a left-justified line with its slack (graph_slack). */
static void end_line(struct jsonw *w)
{
	const char *line = memrchr(w->data, '\v', w->len);
	size_t start = line ? (size_t)(line - w->data) + 1 : 0;

	for (size_t n = graph_slack(w->len - start); n > 0; n--)
		jsonw_cstr(w, "\xc2\xa0");   /* U+00A0, no-break space */
	jsonw_cstr(w, "\v");
}

/* The findings with no note (another step's, ops left out) in one red
 * note of their own, where the eye lands first (top left, by the
 * legend): the title alone went unread. */
static void draw_elsewhere(struct graph_builder *b)
{
	struct graph *g = b->g;

	if (!g->nelsewhere)
		return;
	jsonw_reset(&b->label);
	jsonw_cstr(&b->label, "⚠ findings about ops not drawn:");
	for (size_t i = 0; i < g->nelsewhere && i < GRAPH_MAX_ELSEWHERE; i++) {
		end_line(&b->label);
		graph_elsewhere_text(g, g->elsewhere[i], &b->label);
	}
	if (g->nelsewhere > GRAPH_MAX_ELSEWHERE) {
		end_line(&b->label);
		jsonw_printf(&b->label, "+%zu more (amptrace summary lists them)",
			     g->nelsewhere - GRAPH_MAX_ELSEWHERE);
	}
	end_line(&b->label);
	size_t node = graph_new_node(g, -1, "elsewhere");
	size_t start = g->text.len;
	graph_attr(g, start, "label", b->label.data);
	graph_attr(g, start, "shape", "note");
	graph_attr(g, start, "style", "filled");
	graph_attr(g, start, "fillcolor", "#ffe4e1");
	graph_attr(g, start, "color", "#cc0000");
	graph_attr(g, start, "fontcolor", "#990000");
	graph_end_node(g, node);
	graph_declare_first(g, node);
}

/* One note per placed finding: severity, kind, how often it occurred in
 * the note's step, the analysis's message (about its first occurrence,
 * which may be in another step) and fix. */
void graph_draw_findings(struct graph_builder *b)
{
	struct graph *g = b->g;

	for (size_t i = 0; i < g->nfindings; i++) {
		const struct trace_finding *f = g->findings[i].finding;
		size_t target = g->findings[i].node;
		size_t flagged = 0;
		for (size_t k = 0; k < g->nflags; k++)
			if (!strcmp(g->flags[k].kind, f->kind))
				flagged = g->flags[k].count;
		size_t node = graph_new_node(g, g->nodes[target].cluster, "finding%zu",
				       i + 1);
		size_t start = g->text.len;
		jsonw_reset(&b->label);
		const struct graph_finding *note = &g->findings[i];
		graph_text(&b->label, "⚠ %s: %s", finding_severity_name(f->severity),
			 f->kind);
		if (f->count > 1)
			graph_text(&b->label, " (×%zu in the trace)", f->count);
		if (note->count < f->count && note->last_step > note->step)
			graph_text(&b->label, "\n×%zu in steps %d–%d (folded)",
				   note->count, note->step, note->last_step);
		else if (note->count < f->count && note->step >= 0)
			graph_text(&b->label, "\n×%zu in step %d", note->count,
				   note->step);
		if (flagged > 1)
			graph_text(&b->label, "\n%zu red-bordered nodes here",
				 flagged);
		jsonw_cstr(&b->label, "\n");
		if (!note->first && f->event < b->s->trace->nevents)
			graph_text(&b->label, "the first, in step %d:\n",
				   b->s->analysis.step_of[f->event]);
		graph_wrap(&b->label, f->message, 56, 6);
		if (f->fix) {
			jsonw_cstr(&b->label, "\nfix: ");
			graph_wrap(&b->label, f->fix, 56, 3);
		}
		graph_attr(g, start, "label", b->label.data);
		graph_attr(g, start, "shape", "note");
		/* room for browsers' wider shaping (graph_slack) on both
		 * sides of centred lines */
		graph_attr(g, start, "margin", "0.15,0.06");
		graph_attr(g, start, "style", "filled");
		graph_attr(g, start, "fillcolor", "#ffe4e1");
		graph_attr(g, start, "color", "#cc0000");
		graph_attr(g, start, "fontcolor", "#990000");
		graph_attr(g, start, "tooltip", f->message);
		graph_end_node(g, node);
		size_t edge = graph_new_edge(g, node, target);
		start = g->text.len;
		graph_attr(g, start, "style", "dashed");
		graph_attr(g, start, "color", "#cc0000");
		graph_attr(g, start, "arrowhead", "none");
		graph_end_edge(g, edge);
	}
	draw_elsewhere(b);
}
