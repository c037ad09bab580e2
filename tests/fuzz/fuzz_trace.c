/* A trace through the reader and every consumer of a single trace:
 * amptrace summary (text and --json: analysis, findings), amptrace diff
 * against a real trace both ways, and ampview's selection, folding and
 * graph (--all-steps, and the default view) up to the DOT text.  The
 * input is read once, in memory. */
#include "fuzz_common.h"

#include "trace.h"
#include "commands.h"
#include "view.h"

/* The real trace's diff side is built once and again after this many
 * inputs: aligning an input interns the input's keys into it, so it
 * grows with every input. */
#define GOOD_SIDE_REUSE 256

static struct diff_side *good_diff_side(void)
{
	static struct diff_side *side;
	static unsigned uses;
	struct trace good;
	struct trace_error err;
	size_t len;

	if (side && uses++ < GOOD_SIDE_REUSE)
		return side;
	diff_side_free(side);
	const char *text = fuzz_good_text(&len);
	if (trace_load_text(FUZZ_GOOD_TRACE, text, len, &good, &err) != 0)
		abort();
	side = diff_side_new(&good);
	uses = 0;
	return side;
}

static void draw(const struct trace *t, bool all_steps)
{
	struct view_options o;
	struct trace_error err;
	struct view_stats stats;
	char *dot = NULL;
	size_t len;

	view_options_init(&o);
	if (all_steps)
		o.step = VIEW_STEP_ALL;
	if (view_dot(t, &o, &dot, &len, &stats, &err) == 0)
		free(dot);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_text(data, size);
	struct trace t;
	struct trace_error err;

	if (trace_load_text("fuzz.json", text, size, &t, &err) == 0) {
		summary_print(&t, false, false, 2, -1);
		summary_print(&t, true, false, 2, -1);
		draw(&t, true);
		draw(&t, false);
		struct diff_side *input = diff_side_new(&t);
		struct diff_side *good = good_diff_side();
		diff_print(good, input, false, DIFF_MODULE_DEPTH);
		diff_print(input, good, true, 1);
		diff_side_free(input);
	}
	/* --rank takes the other ranks' events out of the trace it reads */
	if (trace_load_text("fuzz.json", text, size, &t, &err) == 0) {
		summary_print(&t, false, false, 2, 0);
		trace_free(&t);
	}
	free(text);
	return 0;
}
