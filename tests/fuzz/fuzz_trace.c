/* A trace file through the reader and every consumer of a single trace:
 * amptrace summary (analysis, findings), amptrace diff against a real
 * trace both ways, and ampview's selection, folding and graph (--all-steps,
 * and the default view) up to the DOT text. */
#include "fuzz_common.h"

#include "trace.h"
#include "commands.h"
#include "view.h"

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
	char path[PATH_MAX];
	struct trace t;
	struct trace_error err;

	fuzz_write(fuzz_path(path, sizeof path, "trace.json"), data, size);
	char *summary[] = { "summary", path, NULL };
	amptrace_summary(2, summary);
	char *diff[] = { "diff", FUZZ_GOOD_TRACE, path, NULL };
	amptrace_diff(3, diff);
	diff[1] = path;
	diff[2] = FUZZ_GOOD_TRACE;
	amptrace_diff(3, diff);
	if (trace_load(path, &t, &err) == 0) {
		draw(&t, true);
		draw(&t, false);
		trace_free(&t);
	}
	return 0;
}
