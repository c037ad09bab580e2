/* `amptrace report TRACE.json [-o report.html]` (see report.h).
 *
 * The cast graph is ampview's SVG: ampview runs as a subprocess found next
 * to amptrace, as `amptrace run --svg` runs it, so that amptrace does not
 * link Graphviz and a machine without ampview still gets a report (the
 * page then says how to draw the graph).  It runs while this process
 * loads and aggregates the same trace: a trace that is not a regular
 * file (a pipe, a FIFO) is read once, into an anonymous file both read
 * (struct spool), since two readers of one stream would each get half. */
#include "report.h"
#include "ampview_path.h"
#include "command_line.h"
#include "commands.h"

#include "output_file.h"
#include "report_data.h"
#include "trace_scan.h"

#include <cJSON.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* tracer/commands/report/page.html with its style, script and Chart.js inlined
 * (report/embed.py, at build time); @@TITLE@@, @@DATA@@ and @@GRAPH@@
 * remain to be filled. */
extern const char report_template[];
extern const size_t report_template_len;

static const char report_usage[] =
	"usage: amptrace report TRACE.json [-o REPORT.html] [--no-graph]\n"
	"\n"
	"Writes one self-contained HTML page about a trace: how the program\n"
	"ran and a one-line verdict; the findings, most severe first, each\n"
	"with its fix and links to its op in the table and the graph; charts\n"
	"over steps (loss scale, casts by direction and bytes, cache hits and\n"
	"hit rate, ops by output dtype, op time by dtype); sortable tables of\n"
	"ops, casts and autocast regions; and ampview's cast graph of the\n"
	"default step with pan and zoom.  The page loads nothing from the\n"
	"network: it can be attached to a bug report or kept by CI.  Traces\n"
	"of several processes get a rank selector, which opens on the first\n"
	"that trains; truncated traces say so at the top.\n"
	"\n"
	"  -o, --output FILE  the page (default: TRACE with .html for .json;\n"
	"                     -: standard output)\n"
	"      --no-graph     leave the graph out (no ampview run)\n"
	"  -h, --help         this text\n"
	"\n"
	"Exit status: 0; 1 when the page cannot be written; 2 for a bad\n"
	"command line or a trace that cannot be read.\n";

struct graph_job {
	pid_t pid;
	int out, err; /* read ends of ampview's stdout and stderr */
	char ampview[PATH_MAX + 32];
};

/* Starts `ampview TRACE -o -` (its default view) writing SVG to a pipe.
 * Returns 0, or -1 when ampview is not found or cannot be started. */
static int graph_start(struct graph_job *job, const char *trace)
{
	int out[2], err[2];

	*job = (struct graph_job){ .pid = -1, .out = -1, .err = -1 };
	if (!find_ampview(job->ampview, sizeof job->ampview))
		return -1;
	if (pipe(out) != 0)
		return -1;
	if (pipe(err) != 0) {
		close(out[0]);
		close(out[1]);
		return -1;
	}
	fflush(NULL);
	job->pid = fork();
	if (job->pid == 0) {
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		close(out[0]);
		close(out[1]);
		close(err[0]);
		close(err[1]);
		execl(job->ampview, "ampview", trace, "--format", "svg", "-o",
		      "-", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	if (job->pid < 0) {
		close(out[0]);
		close(err[0]);
		return -1;
	}
	job->out = out[0];
	job->err = err[0];
	return 0;
}

/* One of ampview's output streams, read to its end. */
struct sink {
	int fd;     /* -1 once at its end */
	char *buf;  /* NUL-terminated; NULL when out of memory */
	size_t n, cap;
};

/* Reads what is there on s->fd; false at its end or on an error. */
static bool sink_read(struct sink *s)
{
	if (s->buf && s->n == s->cap) {
		char *grown = realloc(s->buf, s->cap * 2 + 1);
		if (!grown) {
			free(s->buf);
			s->buf = NULL;
		} else {
			s->buf = grown;
			s->cap *= 2;
		}
	}
	char scratch[4096]; /* out of memory: drain, so ampview can finish */
	ssize_t got = s->buf ? read(s->fd, s->buf + s->n, s->cap - s->n)
			     : read(s->fd, scratch, sizeof scratch);
	if (got < 0 && errno == EINTR)
		return true;
	if (got <= 0)
		return false;
	if (s->buf) {
		s->n += (size_t)got;
		s->buf[s->n] = '\0';
	}
	return true;
}

/* Both streams at once: reading one to its end first would deadlock
 * once ampview fills the other's pipe (64 KiB of warnings). */
static void read_both(struct sink *out, struct sink *err)
{
	struct sink *sinks[2] = { out, err };

	for (int i = 0; i < 2; i++) {
		sinks[i]->cap = 1 << 16;
		sinks[i]->n = 0;
		sinks[i]->buf = malloc(sinks[i]->cap + 1);
		if (sinks[i]->buf)
			sinks[i]->buf[0] = '\0';
	}
	while (out->fd >= 0 || err->fd >= 0) {
		struct pollfd fds[2] = { { .fd = out->fd, .events = POLLIN },
					 { .fd = err->fd, .events = POLLIN } };
		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int i = 0; i < 2; i++) {
			if (fds[i].fd < 0 || !fds[i].revents)
				continue;
			if (!sink_read(sinks[i])) {
				close(sinks[i]->fd);
				sinks[i]->fd = -1;
			}
		}
	}
	for (int i = 0; i < 2; i++)
		if (sinks[i]->fd >= 0)
			close(sinks[i]->fd);
}

/* The SVG element (the XML prolog and DOCTYPE cannot go inside HTML), or
 * NULL with `why` set. */
static char *graph_finish(struct graph_job *job, char *why, size_t why_size)
{
	struct sink out = { .fd = job->out }, error = { .fd = job->err };
	int status = 0;

	read_both(&out, &error);
	char *svg = out.buf, *err = error.buf;
	while (waitpid(job->pid, &status, 0) < 0 && errno == EINTR)
		;
	char *start = svg ? strstr(svg, "<svg") : NULL;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && start) {
		memmove(svg, start, strlen(start) + 1);
		free(err);
		return svg;
	}
	/* ampview's own message, its first line */
	char *newline = err ? strchr(err, '\n') : NULL;
	if (newline)
		*newline = '\0';
	snprintf(why, why_size, "%.400s failed: %.600s", job->ampview,
		 err && err[0] ? err : "no SVG");
	free(svg);
	free(err);
	return NULL;
}

/* The page's "graph" entry: what was drawn, or why not. */
static void add_graph_info(cJSON *root, const char *trace, bool drawn,
			   const char *why)
{
	cJSON *g = cJSON_AddObjectToObject(root, "graph");

	cJSON_AddBoolToObject(g, "drawn", drawn);
	cJSON_AddStringToObject(g, "why", why);
	cJSON_AddStringToObject(g, "trace", trace);
}

static int write_escaped_html(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default: fputc(*s, f); break;
		}
	}
	return 0;
}

/* JSON inside <script>: '<' only occurs in strings, where \u003c keeps
 * "</script>" from ending the element. */
static void write_script_json(FILE *f, const char *json)
{
	for (; *json; json++) {
		if (*json == '<')
			fputs("\\u003c", f);
		else
			fputc(*json, f);
	}
}

static void write_page(FILE *f, const char *title, const char *json,
		       const char *svg, const char *why)
{
	const char *t = report_template, *end = t + report_template_len;

	while (t < end) {
		const char *mark = strstr(t, "@@");
		if (!mark)
			mark = end;
		fwrite(t, 1, (size_t)(mark - t), f);
		if (mark == end)
			break;
		if (!strncmp(mark, "@@TITLE@@", 9)) {
			write_escaped_html(f, title);
			t = mark + 9;
		} else if (!strncmp(mark, "@@DATA@@", 8)) {
			write_script_json(f, json);
			t = mark + 8;
		} else if (!strncmp(mark, "@@GRAPH@@", 9)) {
			if (svg)
				fputs(svg, f);
			else
				write_escaped_html(f, why);
			t = mark + 9;
		} else {
			fputs("@@", f);
			t = mark + 2;
		}
	}
}

/* A regular file is written next to the page, then renamed: a reader
 * never sees half; a device, a FIFO or a link is written through
 * (output_file.h). */
static int save_page(const char *html, const char *title, const char *json,
		     const char *svg, const char *why, const char *who)
{
	struct output_file out;

	if (output_file_open(&out, html) != 0) {
		fprintf(stderr, "%s: cannot write %s: %s\n", who, html,
			output_strerror(errno));
		return 1;
	}
	write_page(out.f, title, json, svg, why);
	if (output_file_close(&out) != 0) {
		fprintf(stderr, "%s: cannot write %s: %s\n", who, html,
			output_strerror(errno));
		return 1;
	}
	return 0;
}

/* The trace as ampview and report_data_load read it: `path` is the trace
 * itself when it is a regular file, else /dev/fd/N of an anonymous file
 * (memfd: nothing is left behind, even when killed) holding what the
 * stream gave, read once with trace_read_file's limits and FIFO wait. */
struct spool {
	int fd; /* -1: not spooled */
	char path[32];
};

/* Returns the name to read, or NULL with `error` set. */
static const char *spool_open(struct spool *s, const char *trace,
			      char *error, size_t error_size)
{
	struct stat st;
	struct trace_error err;
	size_t len;

	s->fd = -1;
	if (stat(trace, &st) != 0 || S_ISREG(st.st_mode))
		return trace; /* a missing file is the loader's to say */
	char *text = trace_read_file(trace, &len, &err);
	if (!text) {
		snprintf(error, error_size, "%s", err.message);
		return NULL;
	}
	/* not close-on-exec: ampview opens it by its /dev/fd name */
	s->fd = memfd_create("amptrace-report-trace", 0);
	size_t done = 0;
	while (s->fd >= 0 && done < len) {
		ssize_t n = write(s->fd, text + done, len - done);
		if (n < 0 && errno != EINTR)
			break;
		done += n > 0 ? (size_t)n : 0;
	}
	free(text);
	if (s->fd < 0 || done < len) {
		snprintf(error, error_size, "%s: cannot keep a copy of the "
			 "stream: %s", trace, strerror(errno));
		if (s->fd >= 0)
			close(s->fd);
		s->fd = -1;
		return NULL;
	}
	snprintf(s->path, sizeof s->path, "/dev/fd/%d", s->fd);
	return s->path;
}

static void spool_close(struct spool *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* A loader's message names what it read; the user gave `trace`. */
static void say_load_error(const char *who, const char *error,
			   const char *trace, const char *source)
{
	size_t n = strlen(source);

	if (source != trace && strncmp(error, source, n) == 0)
		fprintf(stderr, "%s: %s%s\n", who, trace, error + n);
	else
		fprintf(stderr, "%s: %s\n", who, error);
}

/* The report of `trace`, read from `source` (the trace or its spool). */
static int report_from(const char *trace, const char *source, const char *html,
		       bool graph, const char *who)
{
	struct graph_job job;
	struct report_data data;
	char error[1024], why[1200] = "";
	bool drawing = graph && graph_start(&job, source) == 0;

	if (!graph)
		snprintf(why, sizeof why, "the graph was left out (--no-graph)");
	else if (!drawing)
		snprintf(why, sizeof why, "ampview was not found next to "
			 "amptrace or on PATH");
	int status = report_data_load(source, &data, error, sizeof error);
	char *svg = drawing ? graph_finish(&job, why, sizeof why) : NULL;
	if (status != 0) {
		say_load_error(who, error, trace, source);
		free(svg);
		return 2;
	}
	add_graph_info(data.json, trace, svg != NULL, why);
	char *json = cJSON_PrintUnformatted(data.json);
	status = json ? save_page(html, trace, json, svg, why, who) : 1;
	if (!json)
		fprintf(stderr, "%s: out of memory\n", who);
	if (status == 0 && data.truncated)
		fprintf(stderr, "%s: warning: %s: %s\n", who, trace, data.note);
	if (status == 0 && graph && !svg)
		fprintf(stderr, "%s: warning: no graph in %s: %s\n", who, html,
			why);
	free(json);
	free(svg);
	report_data_free(&data);
	return status;
}

int report_write(const char *trace, const char *html, bool graph,
		 const char *who)
{
	struct spool spool;
	char error[1024];

	/* `-o trace.json` would replace the trace by its report */
	if (output_refuse_input(who, html, &trace, 1))
		return 2;
	const char *source = spool_open(&spool, trace, error, sizeof error);
	if (!source) {
		fprintf(stderr, "%s: %s\n", who, error);
		return 2;
	}
	int status = report_from(trace, source, html, graph, who);
	spool_close(&spool);
	return status;
}

/* TRACE.json → TRACE.html; other names get .html appended. */
static char *default_output(const char *trace)
{
	size_t n = strlen(trace);
	char *out = malloc(n + 6);

	if (!out)
		return NULL;
	if (n > 5 && !strcmp(trace + n - 5, ".json"))
		n -= 5;
	memcpy(out, trace, n);
	strcpy(out + n, ".html");
	return out;
}

enum { OPTION_OUTPUT = 'o', OPTION_NO_GRAPH = 256 };

static const struct option report_options[] = {
	{ "output", required_argument, NULL, OPTION_OUTPUT },
	{ "no-graph", no_argument, NULL, OPTION_NO_GRAPH },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* Returns -1 to go on, else the exit status. */
static int parse_args(int argc, char **argv, const char **trace,
		      const char **html, bool *graph)
{
	struct command_line cl = { "amptrace report", "ho:", report_options,
				   argc, argv };
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case OPTION_OUTPUT:
			if (!optarg[0])
				return command_line_error(&cl, "-o needs a file "
							  "name");
			*html = optarg;
			break;
		case OPTION_NO_GRAPH:
			*graph = false;
			break;
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		default:
			return COMMAND_LINE_BAD_USAGE;
		}
	}
	if (optind == argc)
		return command_line_error(&cl, "no trace given");
	if (argc - optind > 1)
		return command_line_error(&cl, "one trace at a time (got '%s' "
					  "and '%s')", argv[optind],
					  argv[optind + 1]);
	*trace = argv[optind];
	return -1;
}

int amptrace_report(int argc, char **argv)
{
	const char *trace = NULL, *html = NULL;
	bool graph = true;
	int parsed = parse_args(argc, argv, &trace, &html, &graph);

	if (parsed >= 0)
		return parsed;
	char *fallback = html ? NULL : default_output(trace);
	if (!html && !fallback) {
		fputs("amptrace report: out of memory\n", stderr);
		return 2;
	}
	int status = report_write(trace, html ? html : fallback, graph,
				  "amptrace report");
	/* "-": the page is standard output, which "wrote" would spoil */
	if (status == 0 && !(html && strcmp(html, "-") == 0))
		printf("wrote %s\n", html ? html : fallback);
	free(fallback);
	return status;
}
