/* ampview's library (viewer/view.h): the folding of repeated blocks, a
 * DOT that depends only on the trace's content (not on tensor or op ids,
 * pids or timestamps' origin), the step/scope/phase/--ops selections, the
 * optimizer's box, independent parts left to right, finding notes in
 * every step where they occur, and SVG/PNG rendering through libgvc.  The golden DOT files are
 * compared by test_viewer_golden.sh, the command line by
 * test_viewer_cli.sh. */
#include "analyze.h"
#include "trace.h"
#include "view.h"
#include "view_internal.h"
#include "test_scratch.h"

#include <cJSON.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef VIEWER_FIXTURES
#error "VIEWER_FIXTURES (tests/fixtures/viewer) must be defined"
#endif

static const char *const fixture_names[] = { "infer.json", "mlp.json",
					     "nested.json", "whole_loop.json",
					     "torch_mlp.json" };
#define NFIXTURES (int)(sizeof fixture_names / sizeof *fixture_names)

static const char *fixture(const char *name)
{
	static char path[4096];

	snprintf(path, sizeof path, "%s/%s", VIEWER_FIXTURES, name);
	return path;
}

static void load(const char *path, struct trace *t)
{
	struct trace_error err;

	ck_assert_msg(trace_load(path, t, &err) == 0, "%s", err.message);
}

/* The DOT of `path` under `o` (NULL: the defaults). */
static char *dot_of(const char *path, const struct view_options *o,
		    struct view_stats *stats)
{
	struct view_options defaults;
	struct trace t;
	struct trace_error err;
	char *dot;
	size_t len;

	view_options_init(&defaults);
	load(path, &t);
	ck_assert_msg(view_dot(&t, o ? o : &defaults, &dot, &len, stats,
			       &err) == 0, "%s", err.message);
	ck_assert_uint_eq(strlen(dot), len);
	trace_free(&t);
	return dot;
}

/* Big strings: Check's own message would be too long. */
static void assert_same_text(const char *a, const char *b, const char *what)
{
	size_t at = 0;

	while (a[at] && a[at] == b[at])
		at++;
	ck_assert_msg(a[at] == b[at], "%s: the DOTs differ from byte %zu: "
		      "'%.60s' vs '%.60s'", what, at, a + at, b + at);
}

/* Removes the finding notes' lines: their text is the analysis's message,
 * which names op and tensor ids. */
static void drop_notes(char *dot)
{
	char *line = dot, *out = dot;

	while (*line) {
		char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
		char saved = line[len - 1];
		line[len - 1] = '\0';
		bool note = strstr(line, "[label=\"⚠ ") != NULL;
		line[len - 1] = saved;
		if (!note) {
			memmove(out, line, len);
			out += len;
		}
		line += len;
	}
	*out = '\0';
}

/* ------------------------------------------------------------ folding */

struct sequence {
	const char *ops;      /* one letter per op */
	const char *folds;    /* "start:period:count ..." expected */
	size_t min_hidden;
};

static const struct sequence sequences[] = {
	{ "abcdef", "", 1 },
	{ "xABCABCABCy", "1:3:3", 1 },
	{ "AAAAAAAA", "0:1:8", 1 },
	{ "xABABy", "", 3 },                     /* hides 2 < 3 */
	{ "xABABABy", "1:2:3", 3 },
	/* layers inside repeated steps: the steps fold, and inside the shown
	 * step the layers */
	{ "sLLLeSsLLLeSsLLLeS", "0:6:3 1:1:3", 1 },
	{ "pqABCDABCDABCDrs", "2:4:3", 1 },
	/* the run begins at the D that ends the first block: the fold
	 * starts where the repeated block does */
	{ "xDABCDABCDABCDy", "2:4:3", 1 },
};

static bool letters_equal(void *ctx, size_t i, size_t j, size_t period,
			  size_t block)
{
	const char *ops = ctx;

	(void)period;
	(void)block;
	return ops[i] == ops[j];
}

START_TEST(test_fold_sequences)
{
	const struct sequence *q = &sequences[_i];
	struct view_fold *folds;
	size_t nfolds;
	char got[256] = "";
	size_t used = 0;

	ck_assert_int_eq(view_fold_find(strlen(q->ops), 64, q->min_hidden,
					letters_equal, (void *)q->ops, &folds,
					&nfolds), 0);
	for (size_t f = 0; f < nfolds; f++)
		used += (size_t)snprintf(got + used, sizeof got - used, "%s%zu:%zu:%zu",
					 f ? " " : "", folds[f].start,
					 folds[f].period, folds[f].count);
	ck_assert_msg(!strcmp(got, q->folds), "%s: folds \"%s\", expected \"%s\"",
		      q->ops, got, q->folds);
	free(folds);
}
END_TEST

/* The backward blocks of mlp's hidden layers fold, and what is folded is
 * said in the graph. */
START_TEST(test_fold_trace)
{
	struct view_stats stats;
	char *dot = dot_of(fixture("mlp.json"), NULL, &stats);

	ck_assert_uint_gt(stats.folds, 0);
	ck_assert_uint_gt(stats.ops_folded, 9);
	ck_assert_uint_eq(stats.ops_shown + stats.ops_folded +
			  stats.ops_left_out, stats.ops_selected);
	ck_assert_ptr_nonnull(strstr(dot, "folded: "));
	ck_assert_ptr_nonnull(strstr(dot, "shape=\"box3d\""));
	free(dot);

	struct view_options o;
	view_options_init(&o);
	o.fold = false;
	dot = dot_of(fixture("mlp.json"), &o, &stats);
	ck_assert_uint_eq(stats.folds, 0);
	ck_assert_uint_eq(stats.ops_shown, stats.ops_selected);
	ck_assert_ptr_null(strstr(dot, "box3d\""));
	free(dot);
}
END_TEST

/* ------------------------------------------------------- determinism */

START_TEST(test_same_trace_same_dot)
{
	char *a = dot_of(fixture(fixture_names[_i]), NULL, NULL);
	char *b = dot_of(fixture(fixture_names[_i]), NULL, NULL);

	assert_same_text(a, b, fixture_names[_i]);
	free(a);
	free(b);
}
END_TEST

/* Every id-valued field shifted: another run of the same program.  Node
 * ids are derived from positions, so only the findings' messages (the
 * analysis names "op 61") may change. */
static void shift_ids(cJSON *item)
{
	static const char *const keys[] = { "tensor", "result", "op_id",
					    "parent_op_id", "forward_op_id",
					    "External id", "inf_tensor", "pid" };
	cJSON *child;

	cJSON_ArrayForEach(child, item) {
		for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
			if (child->string && !strcmp(child->string, keys[k]) &&
			    cJSON_IsNumber(child) && child->valuedouble > 0)
				cJSON_SetNumberValue(child, child->valuedouble + 1000);
		shift_ids(child);
	}
}

/* Writes fixture `name` changed by `edit` to a scratch file, whose path
 * it returns (the caller unlinks it). */
static const char *write_edited(const char *name, void (*edit)(cJSON *))
{
	struct trace_error err;
	size_t len;
	char *text = trace_read_file(fixture(name), &len, &err);

	ck_assert_msg(text != NULL, "%s", err.message);
	cJSON *root = cJSON_Parse(text);
	ck_assert_ptr_nonnull(root);
	edit(root);
	char *out = cJSON_PrintUnformatted(root);
	const char *path = scratch_path(name);
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(out, f);
	fclose(f);
	free(out);
	free(text);
	cJSON_Delete(root);
	return path;
}

START_TEST(test_dot_ignores_ids)
{
	const char *shifted = write_edited(fixture_names[_i], shift_ids);
	char *a = dot_of(fixture(fixture_names[_i]), NULL, NULL);
	char *b = dot_of(shifted, NULL, NULL);
	drop_notes(a);
	drop_notes(b);
	assert_same_text(a, b, fixture_names[_i]);
	unlink(shifted);
	free(a);
	free(b);
}
END_TEST

/* --------------------------------------------------------- selection */

START_TEST(test_phase_backward)
{
	struct view_options o;
	struct view_stats stats;

	view_options_init(&o);
	o.phase = "backward";
	char *dot = dot_of(fixture("mlp.json"), &o, &stats);
	ck_assert_uint_gt(stats.ops_shown, 0);
	ck_assert_ptr_null(strstr(dot, "tooltip=\"forward on"));
	ck_assert_ptr_nonnull(strstr(dot, "tooltip=\"backward on"));
	ck_assert_ptr_nonnull(strstr(dot, "backward ops only"));
	free(dot);
}
END_TEST

START_TEST(test_max_ops)
{
	struct view_options o;
	struct view_stats stats;

	view_options_init(&o);
	o.max_ops = 5;
	char *dot = dot_of(fixture("mlp.json"), &o, &stats);
	ck_assert_uint_le(stats.ops_shown + stats.folds, 5);
	ck_assert_uint_gt(stats.ops_left_out, 0);
	ck_assert_ptr_nonnull(strstr(dot, "left out: the last"));
	free(dot);
}
END_TEST

START_TEST(test_steps)
{
	struct view_options o;
	struct view_stats stats;

	view_options_init(&o);
	free(dot_of(fixture("mlp.json"), &o, &stats));
	ck_assert_int_eq(stats.nsteps, 2);
	ck_assert_int_eq(stats.step, 1);      /* the default: the second */
	size_t one_step = stats.ops_selected;

	o.step = VIEW_STEP_ALL;
	free(dot_of(fixture("mlp.json"), &o, &stats));
	ck_assert_uint_gt(stats.ops_selected, one_step);

	o.step = 0;
	free(dot_of(fixture("infer.json"), &o, &stats));
	ck_assert_int_eq(stats.step, 0);
}
END_TEST

/* Options that do not fit the trace are errors that say what would. */
START_TEST(test_bad_selection)
{
	struct view_options o;
	struct trace t;
	struct trace_error err;
	char *dot;
	size_t len;

	load(fixture("mlp.json"), &t);
	view_options_init(&o);
	o.step = 7;
	ck_assert_int_eq(view_dot(&t, &o, &dot, &len, NULL, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "no step 7"));
	ck_assert_ptr_nonnull(strstr(err.message, "0..1"));
	view_options_init(&o);
	o.scope = "no-such-region";
	ck_assert_int_eq(view_dot(&t, &o, &dot, &len, NULL, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "'forward'"));
	trace_free(&t);
}
END_TEST

/* What the graph must show: casts between producer and consumer with
 * their cache result, named leaves, regions, the dtype legend. */
START_TEST(test_dot_content)
{
	char *dot = dot_of(fixture("infer.json"), NULL, NULL);
	static const char *const wanted[] = {
		"cast f32→f16", "cache miss", "cache hit", "uncacheable",
		"fc1.weight", "subgraph \"cluster_1\"",
		"autocast 'forward' · cuda f16 · depth 1",
		"lower_precision_fp → f16[4,16]", "fp32_set_opt_dtype → f32[4,16]",
		"legend", "#1f77b4", "#d62728",
	};

	for (size_t i = 0; i < sizeof wanted / sizeof *wanted; i++)
		ck_assert_msg(strstr(dot, wanted[i]), "no '%s' in the DOT",
			      wanted[i]);
	free(dot);

	dot = dot_of(fixture("whole_loop.json"), NULL, NULL);
	ck_assert_ptr_nonnull(strstr(dot, "stale-cache"));
	ck_assert_ptr_nonnull(strstr(dot, "shape=\"note\""));
	ck_assert_ptr_nonnull(strstr(dot, "color=\"#cc0000\", penwidth"));
	free(dot);

	dot = dot_of(fixture("nested.json"), NULL, NULL);
	ck_assert_ptr_nonnull(strstr(dot, "autocast disabled 'imported_function'"));
	free(dot);
}
END_TEST

/* --------------------------------------------------- optimizer boxes */

/* A PyTorch trace's optimizer ops (phase optimizer) are one box per step
 * by default; --phase optimizer and --no-fold draw them. */
START_TEST(test_optimizer_box)
{
	struct view_options o;
	struct view_stats stats;
	char *dot = dot_of(fixture("torch_mlp.json"), NULL, &stats);

	ck_assert_uint_eq(stats.boxes, 1);
	ck_assert_uint_eq(stats.ops_boxed, 12);   /* SGD momentum, 4 params */
	ck_assert_uint_eq(stats.ops_shown + stats.ops_folded +
			  stats.ops_left_out, stats.ops_selected);
	ck_assert_ptr_nonnull(strstr(dot, "\"optimizer1\" [id=\"optimizer1\", "
				     "label=\"optimizer step 1, folded\\n12 ops"));
	ck_assert_ptr_nonnull(strstr(dot, "--phase optimizer draws them"));
	ck_assert_ptr_null(strstr(dot, "label=\"mul_.Tensor\\n"));
	ck_assert_ptr_nonnull(strstr(dot, "label=\"mm\\n"));   /* backward */
	free(dot);

	view_options_init(&o);
	o.phase = "optimizer";
	dot = dot_of(fixture("torch_mlp.json"), &o, &stats);
	ck_assert_uint_eq(stats.boxes, 0);
	ck_assert_uint_eq(stats.ops_shown + stats.ops_folded, 12);
	ck_assert_ptr_nonnull(strstr(dot, "label=\"mul_.Tensor\\n"));
	ck_assert_ptr_nonnull(strstr(dot, "optimizer ops only"));
	ck_assert_ptr_null(strstr(dot, "label=\"mm\\n"));
	free(dot);

	view_options_init(&o);
	o.fold = false;
	dot = dot_of(fixture("torch_mlp.json"), &o, &stats);
	ck_assert_uint_eq(stats.boxes, 0);
	ck_assert_uint_eq(stats.ops_shown, stats.ops_selected);
	ck_assert_ptr_nonnull(strstr(dot, "label=\"mul_.Tensor\\n"));
	free(dot);

	/* all steps: steps 1 and 2 are the same, step 2 folds whole (its
	 * optimizer ops with it); steps 0 and 1 get a box each */
	o.fold = true;
	o.step = VIEW_STEP_ALL;
	dot = dot_of(fixture("torch_mlp.json"), &o, &stats);
	ck_assert_uint_eq(stats.boxes, 2);
	ck_assert_uint_eq(stats.ops_boxed, 2 * 12);
	ck_assert_uint_eq(stats.folds, 1);
	ck_assert_ptr_nonnull(strstr(dot, "optimizer step 0, folded\\n12 ops"));
	ck_assert_ptr_nonnull(strstr(dot, "optimizer step 1, folded\\n12 ops"));
	free(dot);
}
END_TEST

/* Every op of phase backward made phase optimizer: a box of many kinds. */
static void backward_to_optimizer(cJSON *root)
{
	cJSON *event;

	cJSON_ArrayForEach(event, cJSON_GetObjectItem(root, "traceEvents")) {
		cJSON *phase = cJSON_GetObjectItem(cJSON_GetObjectItem(event, "args"),
						   "phase");
		if (cJSON_IsString(phase) && !strcmp(phase->valuestring, "backward"))
			cJSON_SetValuestring(phase, "optimizer");
	}
}

/* The box names its most frequent kinds of op, and the count of the
 * others, adding up to its ops. */
START_TEST(test_optimizer_box_label)
{
	struct view_stats stats;
	const char *path = write_edited("torch_mlp.json", backward_to_optimizer);
	char *dot = dot_of(path, NULL, &stats);
	unlink(path);
	ck_assert_uint_eq(stats.boxes, 1);
	static const char head[] = "label=\"optimizer step 1, folded\\n";
	const char *label = strstr(dot, head);
	ck_assert_ptr_nonnull(label);
	label += strlen(head);
	char *end;
	size_t total = strtoul(label, &end, 10), named = 0, kinds = 0;
	ck_assert_uint_eq(total, stats.ops_boxed);
	ck_assert_uint_gt(total, 12);
	for (const char *p = strstr(label, " ×"); p && p < strstr(label, "draws");
	     p = strstr(p + 1, " ×")) {
		named += strtoul(p + strlen(" ×"), NULL, 10);
		kinds++;
	}
	ck_assert_uint_eq(kinds, 4);
	const char *others = strstr(label, "\\n+");
	ck_assert_ptr_nonnull(others);
	ck_assert_uint_eq(named + strtoul(others + 3, NULL, 10), total);
	free(dot);
}
END_TEST

/* A box exactly when the trace has optimizer-phase ops (the recordings
 * made before libamp published the phase have none). */
START_TEST(test_no_optimizer_box)
{
	struct view_stats stats;
	const char *path = fixture(fixture_names[_i]);
	char *dot = dot_of(path, NULL, &stats);
	FILE *f = fopen(path, "r");
	char line[65536];
	bool optimizer = false;

	ck_assert_ptr_nonnull(f);
	while (!optimizer && fgets(line, sizeof line, f))
		optimizer = strstr(line, "\"phase\":\"optimizer\"") != NULL;
	fclose(f);
	if (optimizer) {
		ck_assert_uint_gt(stats.boxes, 0);
	} else {
		ck_assert_uint_eq(stats.boxes, 0);
		ck_assert_ptr_null(strstr(dot, "shape=\"box3d\", style=\"filled\", "
					  "fillcolor=\"#e3eedb\""));
	}
	free(dot);
}
END_TEST

/* ------------------------------------------------ independent parts */

/* The x of node `id`'s first text in an SVG. */
static double svg_node_x(const char *svg, const char *id)
{
	char key[64];

	snprintf(key, sizeof key, "id=\"%s\"", id);
	const char *at = strstr(svg, key);
	ck_assert_msg(at != NULL, "no node %s in the SVG", id);
	at = strstr(at, "<text");
	ck_assert_ptr_nonnull(at);
	at = strstr(at, " x=\"");
	ck_assert_ptr_nonnull(at);
	return strtod(at + 4, NULL);
}

/* infer runs its forward pass twice, the second reading nothing the
 * first made: drawn side by side, the first on the left. */
START_TEST(test_parts_left_to_right)
{
	char *dot = dot_of(fixture("infer.json"), NULL, NULL);
	struct trace_error err;
	char *svg;
	size_t len;

	ck_assert_ptr_nonnull(strstr(dot, "{ rank=\"same\"; \"op1\"; \"op8\"; }"));
	ck_assert_ptr_nonnull(strstr(dot, "newrank=\"true\""));
	ck_assert_ptr_nonnull(strstr(dot, "\"op1\" -> \"op8\" [style=\"invis\"]"));
	ck_assert_msg(view_render(dot, strlen(dot), VIEW_FORMAT_SVG, &svg, &len,
				  &err) == 0, "%s", err.message);
	double first = svg_node_x(svg, "op1"), second = svg_node_x(svg, "op8");
	ck_assert_msg(first < second, "forward 1 at x=%.1f, forward 2 at x=%.1f",
		      first, second);
	/* each pass's last op too: the whole pass is on its side */
	ck_assert_double_lt(svg_node_x(svg, "op7"), svg_node_x(svg, "op14"));
	free(svg);
	free(dot);
}
END_TEST

/* One training step is one part (backward reads the forward's
 * activations): no rank constraint. */
START_TEST(test_one_part)
{
	char *dot = dot_of(fixture("mlp.json"), NULL, NULL);

	ck_assert_ptr_null(strstr(dot, "rank=\"same\""));
	ck_assert_ptr_null(strstr(dot, "newrank"));
	free(dot);
	dot = dot_of(fixture("torch_mlp.json"), NULL, NULL);
	ck_assert_ptr_null(strstr(dot, "rank=\"same\""));
	free(dot);
}
END_TEST

/* ------------------------------------------------------------ findings */

/* The analysis keeps every occurrence of a finding (findings.h): as many
 * as it counted, the first one's event among them. */
START_TEST(test_finding_occurrences)
{
	struct trace t;
	struct analysis a;

	load(fixture(fixture_names[_i]), &t);
	ck_assert_int_eq(analysis_run(&t, &a), 0);
	for (size_t i = 0; i < a.nfindings; i++) {
		const struct trace_finding *f = &a.findings[i];
		size_t n = 0;
		bool first = false;
		for (size_t o = f->occurrences; o < a.nfinding_occurrences;
		     o = a.finding_occurrences[o].next) {
			first |= a.finding_occurrences[o].event == f->event;
			n++;
		}
		ck_assert_msg(n == f->count, "%s: %zu occurrences, count %zu",
			      f->kind, n, f->count);
		ck_assert(first);
	}
	analysis_free(&a);
	trace_free(&t);
}
END_TEST

/* The DOT's note of `kind`, or NULL. */
static const char *note_of(const char *dot, const char *kind)
{
	char key[96];

	snprintf(key, sizeof key, ": %s (×", kind);
	return strstr(dot, key);
}

/* whole_loop: backward-under-autocast occurs in every step, stale-cache
 * in step 1 only.  Each step drawn notes what occurs in it. */
START_TEST(test_notes_every_step)
{
	struct view_options o;
	char *dot = dot_of(fixture("whole_loop.json"), NULL, NULL);
	const char *note = note_of(dot, "backward-under-autocast");

	ck_assert_ptr_nonnull(note);   /* first occurred in step 0 */
	ck_assert_ptr_nonnull(strstr(note, "×12 in step 1\\n"));
	ck_assert_ptr_nonnull(strstr(note, "the first, in step 0:"));
	ck_assert_ptr_nonnull(note_of(dot, "stale-cache"));
	ck_assert_ptr_null(strstr(dot, "\"elsewhere\""));   /* all drawn */
	free(dot);

	view_options_init(&o);
	o.step = 0;
	dot = dot_of(fixture("whole_loop.json"), &o, NULL);
	note = note_of(dot, "backward-under-autocast");
	ck_assert_ptr_nonnull(note);
	ck_assert_ptr_nonnull(strstr(note, "×12 in step 0\\n"));
	ck_assert_ptr_null(strstr(dot, "the first, in step"));
	/* not in step 0: no note, the title says where it is */
	ck_assert_ptr_null(note_of(dot, "stale-cache"));
	ck_assert_ptr_nonnull(strstr(dot, "warning stale-cache ×2 (first in "
				     "step 1: --step 1 draws it)"));
	/* and so does a red note, declared first: beside the legend */
	const char *elsewhere = strstr(dot, "\t\"elsewhere\" [label=\"⚠ findings "
				       "about ops not drawn:");
	ck_assert_ptr_nonnull(elsewhere);
	ck_assert_ptr_nonnull(strstr(elsewhere, "stale-cache ×2 (first in step 1"));
	ck_assert(strstr(dot, "\t\"elsewhere\"") < strstr(dot, "subgraph"));
	free(dot);

	/* all steps: one note per step where it occurs */
	struct trace t;
	struct analysis a;
	bool in_step[64] = { false };
	size_t steps = 0, notes = 0;
	load(fixture("whole_loop.json"), &t);
	ck_assert_int_eq(analysis_run(&t, &a), 0);
	for (size_t i = 0; i < a.nfindings; i++)
		for (size_t k = a.findings[i].occurrences;
		     !strcmp(a.findings[i].kind, "backward-under-autocast") &&
		     k < a.nfinding_occurrences; k = a.finding_occurrences[k].next) {
			int step = a.step_of[a.finding_occurrences[k].event];
			steps += !in_step[step];
			in_step[step] = true;
		}
	analysis_free(&a);
	trace_free(&t);
	o.step = VIEW_STEP_ALL;
	o.fold = false;
	dot = dot_of(fixture("whole_loop.json"), &o, NULL);
	for (const char *p = dot; (p = note_of(p, "backward-under-autocast")); p++)
		notes++;
	ck_assert_uint_ge(steps, 2);
	ck_assert_uint_eq(notes, steps);
	free(dot);
}
END_TEST

/* Every backward op made to run under autocast: backward-under-autocast
 * in every step of whole_loop, the steps a fold hides included. */
static void backward_under_autocast(cJSON *root)
{
	cJSON *event;

	cJSON_ArrayForEach(event, cJSON_GetObjectItem(root, "traceEvents")) {
		cJSON *args = cJSON_GetObjectItem(event, "args");
		cJSON *phase = cJSON_GetObjectItem(args, "phase");
		cJSON *autocast = cJSON_GetObjectItem(args, "autocast");
		if (cJSON_IsString(phase) && !strcmp(phase->valuestring, "backward") &&
		    cJSON_IsObject(autocast))
			cJSON_ReplaceItemInObject(autocast, "enabled",
						  cJSON_CreateTrue());
	}
}

/* The steps a fold hides share its node: one note there says how many
 * occurrences in which steps. */
START_TEST(test_notes_folded_steps)
{
	struct view_options o;
	const char *path = write_edited("whole_loop.json",
					backward_under_autocast);
	view_options_init(&o);
	o.step = VIEW_STEP_ALL;
	char *dot = dot_of(path, &o, NULL);
	unlink(path);
	size_t on_fold = 0;
	for (const char *p = dot; (p = strstr(p, "\" -> \"fold1\" [style=\"dashed\", "
					      "color=\"#cc0000\"")); p++)
		on_fold++;
	ck_assert_uint_eq(on_fold, 1);
	const char *note = strstr(dot, " in steps 3–5 (folded)\\n");
	ck_assert_ptr_nonnull(note);
	while (note > dot && strncmp(note, "label=", 6))
		note--;
	ck_assert_int_eq(strncmp(note, "label=\"⚠ warning: backward-under-autocast",
				 strlen("label=\"⚠ warning: backward-under-autocast")), 0);
	free(dot);
}
END_TEST

/* ---------------------------------------------------------- rendering */

START_TEST(test_render_svg)
{
	char *dot = dot_of(fixture("infer.json"), NULL, NULL);
	struct trace_error err;
	char *svg;
	size_t len;

	ck_assert_msg(view_render(dot, strlen(dot), VIEW_FORMAT_SVG, &svg, &len,
				  &err) == 0, "%s", err.message);
	ck_assert_uint_eq(strlen(svg), len);
	ck_assert_ptr_nonnull(strstr(svg, "<svg"));
	ck_assert_ptr_nonnull(strstr(svg, "</svg>"));
	ck_assert_ptr_nonnull(strstr(svg, "class=\"cluster\""));
	ck_assert_ptr_nonnull(strstr(svg, "cast f32→f16"));
	ck_assert_ptr_nonnull(strstr(svg, ">f16[4,16]<"));
	ck_assert_ptr_nonnull(strstr(svg, "id=\"op8\""));
	free(svg);
	free(dot);
}
END_TEST

START_TEST(test_render_png_and_dot)
{
	const char *dot = "digraph g { a -> b; }";
	static const unsigned char png_magic[8] = { 0x89, 'P', 'N', 'G', '\r',
						    '\n', 0x1a, '\n' };
	struct trace_error err;
	char *out;
	size_t len;

	ck_assert_msg(view_render(dot, strlen(dot), VIEW_FORMAT_PNG, &out, &len,
				  &err) == 0, "%s", err.message);
	ck_assert_uint_gt(len, 100);
	ck_assert_int_eq(memcmp(out, png_magic, 8), 0);
	free(out);
	ck_assert_int_eq(view_render(dot, strlen(dot), VIEW_FORMAT_DOT, &out,
				     &len, &err), 0);
	ck_assert_str_eq(out, dot);
	free(out);
	ck_assert_int_eq(view_render("digraph {", 9, VIEW_FORMAT_SVG, &out, &len,
				     &err), -1);
	ck_assert_ptr_nonnull(strstr(err.message, "graphviz"));
}
END_TEST

START_TEST(test_formats)
{
	enum view_format f;

	for (int i = 0; i < VIEW_FORMAT_COUNT; i++) {
		ck_assert_int_eq(view_format_from_name(
			view_format_name((enum view_format)i), &f), 0);
		ck_assert_int_eq(f, i);
	}
	ck_assert_int_eq(view_format_from_name("jpg", &f), -1);
}
END_TEST

static Suite *viewer_suite(void)
{
	Suite *s = suite_create("viewer");
	TCase *fold = tcase_create("fold");
	TCase *determinism = tcase_create("determinism");
	TCase *selection = tcase_create("selection");
	TCase *render = tcase_create("render");

	tcase_add_loop_test(fold, test_fold_sequences, 0,
			    (int)(sizeof sequences / sizeof *sequences));
	tcase_add_test(fold, test_fold_trace);
	tcase_add_loop_test(determinism, test_same_trace_same_dot, 0, NFIXTURES);
	tcase_add_loop_test(determinism, test_dot_ignores_ids, 0, NFIXTURES);
	tcase_add_test(selection, test_phase_backward);
	tcase_add_test(selection, test_max_ops);
	tcase_add_test(selection, test_steps);
	tcase_add_test(selection, test_bad_selection);
	tcase_add_test(selection, test_dot_content);
	tcase_add_test(selection, test_optimizer_box);
	tcase_add_test(selection, test_optimizer_box_label);
	tcase_add_loop_test(selection, test_no_optimizer_box, 0, NFIXTURES);
	tcase_add_test(selection, test_parts_left_to_right);
	tcase_add_test(selection, test_one_part);
	tcase_add_loop_test(selection, test_finding_occurrences, 0, NFIXTURES);
	tcase_add_test(selection, test_notes_every_step);
	tcase_add_test(selection, test_notes_folded_steps);
	tcase_add_test(render, test_render_svg);
	tcase_add_test(render, test_render_png_and_dot);
	tcase_add_test(render, test_formats);
	suite_add_tcase(s, fold);
	suite_add_tcase(s, determinism);
	suite_add_tcase(s, selection);
	suite_add_tcase(s, render);
	return s;
}

int main(void)
{
	SRunner *runner = srunner_create(viewer_suite());

	scratch_make("viewer");
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	if (scratch_remove() != 0)
		failed = 1;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
