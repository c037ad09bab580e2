/* ampview: draws a trace as an annotated computation graph (SVG, PNG or
 * DOT).  Command-line handling only; the work is in view.h. */
#include "command_line.h"
#include "output_file.h"
#include "progress.h"
#include "terminal_text.h"
#include "trace.h"
#include "view.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_BAD_INPUT 2

static const char usage[] =
	"usage: ampview TRACE.json [-o OUT] [--format svg|dot|png] [options]\n"
	"\n"
	"Draws an amptrace trace as a computation graph that shows where the\n"
	"casts are: ops (name, autocast policy, output dtype, time), tensors\n"
	"as edges coloured by dtype, autocast's casts between producer and\n"
	"consumer (cache hits dashed, uncacheable casts double-bordered),\n"
	"autocast regions as boxes, backward ops dashed, findings in red.\n"
	"\n"
	"  -o FILE        write to FILE; - for standard output (not a terminal\n"
	"                 for svg or png).  Default: TRACE.FMT next to the trace\n"
	"                 (trace.json -> trace.svg), named on stderr\n"
	"  --format FMT   svg, dot or png (default: from FILE's extension, else svg)\n"
	"  --step N       show step N, counted from 0 as `amptrace summary` counts\n"
	"                 (default: step 1 when the trace has several, else 0)\n"
	"  --all-steps    show the whole trace\n"
	"  --rank N       show rank N's processes (a distributed job's ranks\n"
	"                 each run the step; default: the first rank that\n"
	"                 trains); all: every process\n"
	"  --scope NAME   only ops inside the autocast region named NAME\n"
	"  --module PATH  only ops inside the nn.Module PATH (and its modules),\n"
	"                 e.g. transformer.h.3; a glob matches too (h.*.attn:\n"
	"                 * and ? within one dot-separated part)\n"
	"  --depth N      draw modules N levels deep (below --module's), each\n"
	"                 module there as one node: ops, output dtypes, casts,\n"
	"                 cache hits, time; 0: the model is one node.  Default:\n"
	"                 the deepest whose graph fits 2000x2000 px.  Traces\n"
	"                 whose ops name their modules (PyTorch's) only\n"
	"  --no-modules   draw every op, not modules (also --depth all)\n"
	"  --phase P      only the ops of phase P: forward, backward, optimizer\n"
	"                 or other (a PyTorch program's ops outside them)\n"
	"                 (default: forward when drawing modules; else all,\n"
	"                 each step's optimizer ops folded into one box:\n"
	"                 --phase optimizer draws them)\n"
	"  --ops N        at most N op nodes, a folded block counting as one\n"
	"                 (default 1000; 0: no limit, layout may take minutes)\n"
	"  --no-fold      draw repeated identical blocks (layers), module\n"
	"                 nodes and the optimizer's ops in full\n"
	"  -v, --verbose  report on stderr what was drawn and the time it took\n"
	"  -h, --help     this text\n"
	"      --version  the version\n"
	"\n"
	"The graph's title says which step it shows and what it folded or left\n"
	"out.  Exit status: 0; 1 when the output cannot be written or Graphviz\n"
	"fails; 2 for a bad command line or a trace that cannot be read.\n";

enum {
	OPTION_FORMAT = 256,
	OPTION_STEP,
	OPTION_ALL_STEPS,
	OPTION_RANK,
	OPTION_SCOPE,
	OPTION_PHASE,
	OPTION_OPS,
	OPTION_NO_FOLD,
	OPTION_MODULE,
	OPTION_DEPTH,
	OPTION_NO_MODULES,
	OPTION_VERSION,
};

static const struct option long_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ "format", required_argument, NULL, OPTION_FORMAT },
	{ "step", required_argument, NULL, OPTION_STEP },
	{ "all-steps", no_argument, NULL, OPTION_ALL_STEPS },
	{ "rank", required_argument, NULL, OPTION_RANK },
	{ "scope", required_argument, NULL, OPTION_SCOPE },
	{ "phase", required_argument, NULL, OPTION_PHASE },
	{ "ops", required_argument, NULL, OPTION_OPS },
	{ "no-fold", no_argument, NULL, OPTION_NO_FOLD },
	{ "module", required_argument, NULL, OPTION_MODULE },
	{ "depth", required_argument, NULL, OPTION_DEPTH },
	{ "no-modules", no_argument, NULL, OPTION_NO_MODULES },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "version", no_argument, NULL, OPTION_VERSION },
	{ NULL, 0, NULL, 0 },
};

struct command {
	const char *trace, *output; /* output NULL: standard output */
	char *default_output;       /* TRACE.FMT when -o is not given */
	enum view_format format;
	bool format_given, verbose;
	struct view_options view;
};

static const struct command_line ampview_command = { "ampview" };

static int bad_usage(const char *fmt, const char *arg)
{
	return command_line_error(&ampview_command, fmt, arg);
}

/* --format's value unknown, with the format meant when it is a typo. */
static int bad_format(const struct command_line *cl, const char *text)
{
	const char *names[VIEW_FORMAT_COUNT + 1] = { NULL };

	for (int f = 0; f < VIEW_FORMAT_COUNT; f++)
		names[f] = view_format_name((enum view_format)f);
	return command_line_value_error(cl, text, names, "unknown format '%s' "
					"(svg, dot or png)", text);
}

static bool parse_count(const char *text, long max, long *value)
{
	char *end;

	errno = 0;
	*value = strtol(text, &end, 10);
	return !errno && end != text && !*end && *value >= 0 && *value <= max;
}

/* A count up to max, or "all" (then *value is `all`). */
static bool parse_count_or_all(const char *text, long max, int all,
			       int *value)
{
	long count;

	if (!strcmp(text, "all")) {
		*value = all;
		return true;
	}
	if (!parse_count(text, max, &count))
		return false;
	*value = (int)count;
	return true;
}

static enum view_format format_of_path(const char *path)
{
	const char *dot = path ? strrchr(path, '.') : NULL;

	if (dot && (!strcmp(dot, ".dot") || !strcmp(dot, ".gv")))
		return VIEW_FORMAT_DOT;
	if (dot && !strcmp(dot, ".png"))
		return VIEW_FORMAT_PNG;
	return VIEW_FORMAT_SVG;
}

/* Without -o the graph goes next to the trace, the trace's extension
 * (.json) replaced by the format's: never SVG bytes onto a terminal.
 * Returns -1 to go on, else the exit status. */
static int default_output(struct command *c)
{
	const char *slash = strrchr(c->trace, '/');
	const char *dot = strrchr(slash ? slash + 1 : c->trace, '.');
	int stem = dot && dot != (slash ? slash + 1 : c->trace)
		? (int)(dot - c->trace) : (int)strlen(c->trace);
	const char *ext = view_format_name(c->format);
	size_t size = (size_t)stem + strlen(ext) + 2;

	c->default_output = malloc(size);
	if (!c->default_output) {
		fputs("ampview: out of memory\n", stderr);
		return 1;
	}
	snprintf(c->default_output, size, "%.*s.%s", stem, c->trace, ext);
	c->output = c->default_output;
	return -1;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, struct command *c)
{
	struct command_line cl = { "ampview", "o:vh", long_options, argc, argv };
	int option;
	long value;
	const char *step = NULL; /* --step's, to say it conflicts */
	bool all_steps = false;

	view_options_init(&c->view);
	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case 'o':
			if (!optarg[0])
				return command_line_error(&cl, "empty output "
							  "file name");
			c->output = optarg;
			break;
		case OPTION_FORMAT:
			if (view_format_from_name(optarg, &c->format) != 0)
				return bad_format(&cl, optarg);
			c->format_given = true;
			break;
		case OPTION_STEP:
			if (!parse_count(optarg, 1000000000, &value))
				return bad_usage("--step wants a step number "
						 "(0, 1, ...), got '%s'", optarg);
			step = optarg;
			c->view.step = (int)value;
			break;
		case OPTION_ALL_STEPS:
			all_steps = true;
			break;
		case OPTION_RANK:
			if (!parse_count_or_all(optarg, INT_MAX, VIEW_RANK_ALL,
						&c->view.rank))
				return bad_usage("--rank wants a rank (0, 1, "
						 "...) or all, got '%s'", optarg);
			break;
		case OPTION_SCOPE:
			c->view.scope = optarg;
			break;
		case OPTION_PHASE:
			if (!view_phase_known(optarg))
				return command_line_value_error(
					&cl, optarg, view_phase_names,
					"--phase wants forward, backward, "
					"optimizer or other, got '%s'", optarg);
			c->view.phase = optarg;
			break;
		case OPTION_OPS:
			if (!parse_count(optarg, 100000000, &value))
				return bad_usage("--ops wants a count (0: no "
						 "limit), got '%s'", optarg);
			c->view.max_ops = (size_t)value;
			break;
		case OPTION_NO_FOLD:
			c->view.fold = false;
			break;
		case OPTION_MODULE:
			c->view.module = optarg;
			break;
		case OPTION_DEPTH:
			if (!parse_count_or_all(optarg, 1000, VIEW_DEPTH_OPS,
						&c->view.depth))
				return bad_usage("--depth wants a module depth "
						 "(0, 1, ...) or all, got '%s'",
						 optarg);
			break;
		case OPTION_NO_MODULES:
			c->view.depth = VIEW_DEPTH_OPS;
			break;
		case 'v':
			c->verbose = true;
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		case OPTION_VERSION:
			printf("ampview %s\n", AMPTRACE_VERSION);
			return 0;
		default:
			return EXIT_BAD_INPUT;
		}
	}
	/* which of the two views was meant cannot be guessed */
	if (all_steps && step)
		return command_line_error(&cl, "--all-steps and --step %s "
					  "conflict: give one", step);
	if (all_steps)
		c->view.step = VIEW_STEP_ALL;
	if (optind != argc - 1)
		return bad_usage("%s", optind >= argc ? "which trace? (ampview "
				 "TRACE.json -o graph.svg)" : "one trace at a time");
	c->trace = argv[optind];
	if (c->output && !strcmp(c->output, "-"))
		c->output = NULL;
	else if (!c->output)
		return default_output(c);
	if (!c->format_given)
		c->format = format_of_path(c->output);
	if (!c->output && c->format != VIEW_FORMAT_DOT && isatty(STDOUT_FILENO))
		return bad_usage("will not write %s to a terminal; -o FILE "
				 "names a file", view_format_name(c->format));
	return -1;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A regular file is replaced whole; a device, FIFO or link written
 * through (output_file.h); NULL path: standard output. */
static int write_output(const char *path, const char *data, size_t len)
{
	struct output_file out = { .f = stdout };

	if (path && output_file_open(&out, path) != 0) {
		fprintf(stderr, "ampview: cannot write %s: %s\n", path,
			output_strerror(errno));
		return 1;
	}
	size_t written = fwrite(data, 1, len, out.f);
	int closed = path ? output_file_close(&out) : fflush(stdout);
	if (written != len || closed != 0) {
		fprintf(stderr, "ampview: cannot write %s: %s\n",
			path ? path : "standard output", output_strerror(errno));
		return 1;
	}
	return 0;
}

/* -v: the modules' depth drawn and, when ampview chose it, why. */
/* "ampview: warning: no op of step 1 is of phase forward (by default
 * in a module view; --phase backward or optimizer draws another) and in
 * module blocks.2; the graph is empty; 4 ops of other steps match, the
 * first in step 0 (--step 0 draws it)". */
static void warn_empty(const struct view_options *o,
		       const struct view_stats *stats)
{
	const char *and = "";

	fprintf(stderr, "ampview: warning: no op ");
	if (stats->step != VIEW_STEP_ALL && stats->nsteps > 1)
		fprintf(stderr, "of step %d ", stats->step);
	fprintf(stderr, "is");
	if (stats->phase) {
		fprintf(stderr, " of phase %s", stats->phase);
		if (stats->phase_by_default)
			fprintf(stderr, " (by default in a module view; "
				"--phase backward or optimizer draws another)");
		and = " and";
	}
	if (o->scope) {
		fprintf(stderr, "%s in region %s", and, o->scope);
		and = " and";
	}
	if (o->module)
		fprintf(stderr, "%s in module %s", and, o->module);
	fprintf(stderr, "; the graph is empty");
	if (stats->ops_matching_elsewhere)
		fprintf(stderr, "; %zu op%s of other steps match%s, the first "
			"in step %d (--step %d draws it)",
			stats->ops_matching_elsewhere,
			stats->ops_matching_elsewhere == 1 ? "" : "s",
			stats->ops_matching_elsewhere == 1 ? "es" : "",
			stats->step_matching, stats->step_matching);
	fputc('\n', stderr);
}

/* A --depth the view cannot draw: no op names a module, or the modules
 * do not go that deep (the deepest is drawn, which looks the same). */
static void warn_depth(const struct view_options *o,
		       const struct view_stats *stats)
{
	if (o->depth < 0 || (stats->depth >= 0 && stats->depth >= o->depth))
		return;
	if (stats->depth == VIEW_DEPTH_OPS)
		fprintf(stderr, "ampview: warning: --depth %d: no op in the view "
			"names its nn.Module (torch traces do); every op is "
			"drawn\n", o->depth);
	else
		fprintf(stderr, "ampview: warning: --depth %d: the modules go "
			"%d level%s deep%s%s; drawing them all\n", o->depth,
			stats->depth, stats->depth == 1 ? "" : "s",
			o->module ? " below " : "", o->module ? o->module : "");
}

static void report_modules(const struct view_stats *stats)
{
	bool chosen = stats->width_px > 0;
	bool fits = stats->width_px <= VIEW_FIT_PX &&
		    stats->height_px <= VIEW_FIT_PX;

	fprintf(stderr, "ampview: modules %d level%s deep: %zu op%s in %zu "
		"module node%s", stats->depth, stats->depth == 1 ? "" : "s",
		stats->ops_collapsed, stats->ops_collapsed == 1 ? "" : "s",
		stats->modules, stats->modules == 1 ? "" : "s");
	if (stats->ops_folded > stats->ops_boxed)
		fprintf(stderr, ", %zu in their folded repetitions",
			stats->ops_folded - stats->ops_boxed);
	if (chosen && fits)
		fprintf(stderr, " (the deepest whose layout, %.0fx%.0f px, fits "
			"%dx%d)", stats->width_px, stats->height_px,
			VIEW_FIT_PX, VIEW_FIT_PX);
	else if (chosen)
		fprintf(stderr, " (no depth fits %dx%d: this one lays out "
			"%.0fx%.0f px)", VIEW_FIT_PX, VIEW_FIT_PX,
			stats->width_px, stats->height_px);
	if (chosen)
		fprintf(stderr, "; %zu layout%s to choose it", stats->layouts,
			stats->layouts == 1 ? "" : "s");
	fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	struct command c = { 0 };
	struct trace trace;
	struct trace_error err;
	struct view_stats stats;
	char *dot = NULL, *out = NULL;
	size_t dot_len, out_len;
	/* past `ulimit -f`, a write fails with EFBIG (said as any write
	 * error) instead of SIGXFSZ killing ampview half-way */
	signal(SIGXFSZ, SIG_IGN);
	/* its messages quote the trace and the arguments (terminal_text.h);
	 * stdout is left as it is: it carries the graph, and a PNG is
	 * binary (DOT escapes its names itself, graph_quote) */
	terminal_filter_stderr();
	int status = parse(argc, argv, &c);

	if (status >= 0) {
		free(c.default_output);
		return status;
	}
	/* -o t.json would replace the trace it draws */
	if (c.output && output_refuse_input("ampview", c.output, &c.trace, 1)) {
		free(c.default_output);
		return EXIT_BAD_INPUT;
	}
	double start = now_ms();
	progress_reading("ampview", c.trace);
	status = trace_load_without_flows(c.trace, &trace, &err);
	progress_reading_done();
	if (status != 0) {
		fprintf(stderr, "ampview: %s\n", err.message);
		free(c.default_output);
		return EXIT_BAD_INPUT;
	}
	if (!trace.counts[TRACE_OP])
		fprintf(stderr, "ampview: warning: %s has no amp.op events (was "
			"it written by amptrace run?); the graph is empty\n",
			c.trace);
	double loaded = now_ms();
	if (view_dot(&trace, &c.view, &dot, &dot_len, &stats, &err) != 0) {
		fprintf(stderr, "ampview: %s\n", err.message);
		trace_free(&trace);
		free(c.default_output);
		return EXIT_BAD_INPUT;
	}
	double built = now_ms();
	if (!stats.ops_selected && trace.counts[TRACE_OP] &&
	    (stats.phase || c.view.scope || c.view.module))
		warn_empty(&c.view, &stats);
	warn_depth(&c.view, &stats);
	status = 1;
	if (view_render(dot, dot_len, c.format, &out, &out_len, &err) != 0)
		fprintf(stderr, "ampview: %s\n", err.message);
	else
		status = write_output(c.output, out, out_len);
	if (status == 0 && c.default_output)
		fprintf(stderr, "ampview: wrote %s\n", c.default_output);
	double rendered = now_ms();
	if (c.verbose)
		fprintf(stderr, "ampview: %zu ops selected: %zu drawn, %zu folded "
			"into %zu nodes, %zu optimizer ops into %zu boxes, "
			"%zu left out; %zu nodes, %zu edges, %zu clusters; "
			"load %.0f ms, graph %.0f ms, %s %.0f ms\n",
			stats.ops_selected, stats.ops_shown + stats.ops_collapsed,
			stats.ops_folded - stats.ops_boxed, stats.folds,
			stats.ops_boxed, stats.boxes, stats.ops_left_out, stats.nodes,
			stats.edges, stats.clusters, loaded - start,
			built - loaded, c.format == VIEW_FORMAT_DOT ? "write"
			: "layout+render", rendered - built);
	if (c.verbose && stats.depth != VIEW_DEPTH_OPS)
		report_modules(&stats);
	free(dot);
	free(out);
	free(c.default_output);
	trace_free(&trace);
	return status;
}
