/* `amptrace merge RANK0.json RANK1.json ... -o ALL.json`: joins per-rank
 * traces into one, one process per rank (pid = rank + 1; a file of
 * several ranks' processes, each named by its own, FORMAT.md §5, gives
 * each its own), timestamps moved
 * onto a common origin, the earliest input's start, through each file's
 * baseTimeNanoseconds (wall clock, so ranks on different hosts line up as
 * well as their clocks do).
 * Inputs that are truncated, or still being written, are merged as far
 * as they go, with a warning; inputs that do not load as traces are
 * refused. */
#include "command_line.h"
#include "commands.h"
#include "event_json.h"
#include "id_map.h"
#include "jsonw.h"
#include "output_file.h"
#include "trace.h"
#include "trace_scan.h"
#include "trace_writer.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#ifndef AMPTRACE_VERSION
#define AMPTRACE_VERSION "unknown"
#endif

static const char merge_usage[] =
	"usage: amptrace merge TRACE.json TRACE.json ... -o OUT.json\n"
	"\n"
	"Joins the traces of several processes (the per-rank files of\n"
	"`amptrace run`) into one trace with one process per rank: the pid of\n"
	"a file's events becomes its rank + 1 (rank: amptrace.rank, else its\n"
	"position on the command line, from 0), timestamps share one origin;\n"
	"flow ids are renumbered so that each stays unique.  A file whose\n"
	"processes name ranks of their own (one node's trace.json of a job\n"
	"whose ranks init_process_group gave: mp.spawn, Lightning) keeps\n"
	"them: each rank's process becomes pid rank + 1; a second process of\n"
	"a rank (its DataLoader worker) and one without a rank (the launching\n"
	"parent) get pids above the ranks.  A rank in two inputs is refused.\n"
	"The header's framework is the inputs' when they agree, else the\n"
	"first rank's (a note says so); each process keeps its own in its\n"
	"metadata.\n"
	"A trace merge wrote of several ranks is refused as an input (the\n"
	"files it lists as its inputs cannot nest): merge the traces it was\n"
	"made of.\n"
	"\n"
	"  -o, --output FILE  the merged trace (required; - for standard output)\n"
	"  -h, --help         this text\n"
	"\n"
	"Exit status: 0, 1 when the output cannot be written, 2 bad input.\n";

struct pid_map {
	int64_t old, mapped;
};

/* A process that names a rank of its own (its process_name's), or
 * named itself without one first. */
struct named_rank {
	int64_t pid;
	int rank;
	/* its first name had no rank: it learned its rank late, as a
	 * rank's own process does (its DataLoader worker, started after,
	 * has the rank from its start) */
	bool began_unranked;
};

struct input {
	const char *path;
	/* its text, when given or not a regular file (a pipe is read once);
	 * NULL: the file, read through the scanner's window in each pass */
	char *text;
	size_t len;
	struct stat file;     /* the file as pass 1 left it (text NULL) */
	/* its header and trailer; pass 1 reads its outline (header,
	 * trailer, events counted), pass 2 decodes each event into it, once,
	 * and writes it through the one writer (event_json.h): merging holds
	 * one event of each input at a time, not every input's events */
	struct trace trace;
	bool loaded;
	bool amptrace;        /* the whole file has amptrace's header */
	bool truncated;
	size_t events;
	/* what pass 1 read, which pass 2 reads again: up to stop_at (0: the
	 * end), where a truncated input's last whole event ended (a trace
	 * still being written grows past it meanwhile), and its digest */
	size_t stop_at;
	uint64_t digest;
	/* pass 2 */
	size_t written;       /* its events, to match pass 1's */
	double events_end_us; /* the latest end of its events (not metadata) */
	struct pid_map *pids; /* original pid -> merged pid, in order seen */
	size_t npids, pids_cap;
	/* pass 1: the ranks its processes name of their own (the last each
	 * said), in the order they first named one; late: its header names
	 * none, so these are its ranks (FORMAT.md §5: a job whose ranks
	 * learned them from init_process_group writes one file of them
	 * all), each process keeping its own */
	struct named_rank *named;
	size_t nnamed, named_cap;
	bool late;
	int new_rank;        /* its rank; a late input's: its lowest */
	int64_t new_pid;     /* new_rank + 1: Perfetto treats pid 0 as special */
	double shift_us;     /* onto the merged trace's time base */
};

struct merge {
	struct input *inputs;
	int ninputs;
	/* the merged ts 0: the earliest input's start, its base plus
	 * origin_us (another tool's first event: first_event_us), kept
	 * apart so that a shift is exact where bases are equal */
	double base_ns, origin_us;
	int64_t next_extra_pid;
	struct trace_writer writer;
	struct input *current;
	struct trace_error *err;
	struct jsonw text;   /* one event's */
	/* (input, flow id) -> merged id: flow ids are unique per file only */
	struct id_map flow_ids;
	uint64_t next_flow_id;
};

/* The input's rank from its header, or -1. */
static int header_rank(const struct input *in)
{
	return in->trace.amptrace ? in->trace.header.rank : -1;
}

/* The entry of the process of rank `rank` that is the rank's own: the
 * first to name it of those that began without a rank, else the first
 * to name it (not a process the rank started later, its DataLoader
 * worker, whose name may come first in the file: the writer appends
 * each process's events as it reads them). */
static size_t ranks_own(const struct input *in, int rank)
{
	size_t first = in->nnamed;

	for (size_t i = 0; i < in->nnamed; i++) {
		if (in->named[i].rank != rank)
			continue;
		if (in->named[i].began_unranked)
			return i;
		if (first == in->nnamed)
			first = i;
	}
	return first;
}

/* The rank process `pid` of the input names, or -1; *first: it is its
 * rank's own process (ranks_own). */
static int named_rank(const struct input *in, int64_t pid, bool *first)
{
	for (size_t i = 0; i < in->nnamed; i++) {
		if (in->named[i].pid != pid)
			continue;
		*first = in->named[i].rank >= 0 &&
			 ranks_own(in, in->named[i].rank) == i;
		return in->named[i].rank;
	}
	return -1;
}

/* GPU n of host process P has pid 2^30 + n*2^22 + P (FORMAT.md §3.8). */
#define GPU_PID_BASE ((int64_t)1 << 30)
#define GPU_PID_HOST_BITS 22

/* A late input's process: its rank's pid when it is the rank's own
 * (ranks_own), else one above every rank. */
static int64_t late_pid(struct merge *m, const struct input *in,
			int64_t pid)
{
	bool first = false;
	int rank = named_rank(in, pid, &first);

	return rank >= 0 && first ? (int64_t)rank + 1 : m->next_extra_pid++;
}

static int64_t map_pid(struct merge *m, struct input *in, int64_t pid)
{
	for (size_t i = 0; i < in->npids; i++)
		if (in->pids[i].old == pid)
			return in->pids[i].mapped;
	int64_t mapped;
	int64_t host_mask = ((int64_t)1 << GPU_PID_HOST_BITS) - 1;
	int64_t host;
	/* A GPU keeps its device and follows its host process, so that it
	 * stays a process of its own next to the host's new pid. */
	if (pid >= GPU_PID_BASE && pid < 2 * GPU_PID_BASE &&
	    (host = map_pid(m, in, pid & host_mask)) >= 0 && host <= host_mask)
		mapped = (pid & ~host_mask) + host;
	/* The file's first process is the rank, a late input's first of
	 * each rank that rank; any other gets a pid of its own above every
	 * rank. */
	else if (in->late)
		mapped = late_pid(m, in, pid);
	else
		mapped = in->npids == 0 ? in->new_pid : m->next_extra_pid++;
	if (in->npids == in->pids_cap) {
		size_t cap = in->pids_cap ? 2 * in->pids_cap : 16;
		struct pid_map *grown = realloc(in->pids, cap * sizeof *grown);
		if (!grown)
			return mapped;
		in->pids = grown;
		in->pids_cap = cap;
	}
	in->pids[in->npids++] = (struct pid_map){ pid, mapped };
	return mapped;
}

/* The numbers merge turns into integers (pids, ts, rank) were
 * range-checked by the reader (trace_load_text) before it starts. */

/* A flow id of the input as one unique in the merged file, the same for
 * every end of the flow.  0 when out of memory. */
static uint64_t map_flow_id(struct merge *m, struct input *in, uint64_t old)
{
	size_t *mapped = id_map_find(&m->flow_ids, in - m->inputs, old, true);

	if (!mapped) {
		trace_error_set(m->err, "out of memory");
		return 0;
	}
	if (!*mapped)
		*mapped = (size_t)++m->next_flow_id;
	return *mapped;
}

/* ts (µs) moved onto the merged trace's time base, rounded to the ns the
 * format keeps; false when it leaves the range a reader accepts. */
static bool move_ts(const struct input *in, double *ts)
{
	double moved = *ts + in->shift_us;

	if (!(fabs(moved) <= 9007199254740992.0))
		return false;
	*ts = (double)trace_us_to_ns(moved) / 1000.0;
	return true;
}

/* A process's name without the "rank N: " the converter put before it
 * (N its own rank: its environment's, or one it learned later, FORMAT.md
 * §5; a name without a rank, the merged one's), so that the merged rank
 * replaces it rather than stacking on it. */
static const char *without_rank(const char *name, int rank)
{
	char prefix[32];
	size_t n = (size_t)snprintf(prefix, sizeof prefix, "rank %d: ", rank);

	return rank >= 0 && !strncmp(name, prefix, n) ? name + n : name;
}

/* e, one of amptrace's events, as the merged trace has it. */
static int merge_model_event(struct merge *m, struct input *in,
			     struct trace_event e)
{
	char label[1100];

	e.pid = map_pid(m, in, e.pid);
	if (e.kind != TRACE_META && !move_ts(in, &e.ts))
		return trace_error_set(m->err, "%s:%u: event %u: ts %g moved "
				       "to the merged trace's start is out of "
				       "range", in->path, e.line, e.index,
				       e.ts);
	/* Kernels name their host process, GPU processes too: both follow
	 * the host's new pid. */
	if ((e.kind == TRACE_KERNEL || e.kind == TRACE_MEMCPY) &&
	    e.kernel.host_pid != -1)
		e.kernel.host_pid = map_pid(m, in, e.kernel.host_pid);
	if (e.kind == TRACE_META && e.meta.host_pid)
		e.meta.host_pid = map_pid(m, in, e.meta.host_pid);
	/* a late input's processes name their ranks already, as merged */
	if (e.kind == TRACE_META && e.pid == in->new_pid && !in->late) {
		if (!strcmp(e.name, "process_name") && e.meta.value) {
			snprintf(label, sizeof label, "rank %d: %.1024s",
				 in->new_rank,
				 without_rank(e.meta.value, e.meta.rank >= 0 ?
					      e.meta.rank : in->new_rank));
			e.meta.value = label;
			e.meta.rank = in->new_rank;
		}
		if (!strcmp(e.name, "process_sort_index"))
			e.meta.sort_index = in->new_rank;
	}
	if (e.kind == TRACE_FLOW && !(e.flow.id = map_flow_id(m, in, e.flow.id)))
		return -1;
	event_json_write(&m->text, &e);
	if (m->text.failed)
		return trace_error_set(m->err, "out of memory");
	trace_writer_event(&m->writer, m->text.data, m->text.len);
	return 0;
}

/* Sets object[key] to a number, adding the key when it is missing. */
static void set_number(cJSON *object, const char *key, double value)
{
	cJSON *item = cJSON_GetObjectItemCaseSensitive(object, key);

	if (item)
		cJSON_ReplaceItemInObjectCaseSensitive(object, key,
						       cJSON_CreateNumber(value));
	else
		cJSON_AddNumberToObject(object, key, value);
}

/* A flow event's id of another tool (`s`, `t`, `f`: a number, or a hex
 * string as Perfetto reads it); ids that are neither are left alone. */
static int map_foreign_flow_id(struct merge *m, struct input *in,
			       cJSON *event)
{
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(event, "ph");
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(event, "id");
	uint64_t old = 0;
	bool known = false;

	if (!cJSON_IsString(ph) || (strcmp(ph->valuestring, "s") &&
				    strcmp(ph->valuestring, "t") &&
				    strcmp(ph->valuestring, "f")))
		return 0;
	if (cJSON_IsNumber(id) && id->valuedouble >= 0 &&
	    id->valuedouble < 18446744073709551616.0) {
		old = (uint64_t)id->valuedouble;
		known = true;
	} else if (cJSON_IsString(id) && id->valuestring[0]) {
		char *rest;
		old = strtoull(id->valuestring, &rest, 16);
		known = !*rest;
	}
	if (!known)
		return 0;
	uint64_t mapped = map_flow_id(m, in, old);
	if (!mapped)
		return -1;
	set_number(event, "id", (double)mapped);
	return 0;
}

/* An event of another tool, which the model does not hold whole: its
 * text again, with its pid, time and flow id moved as amptrace's. */
static int merge_foreign_event(struct merge *m, struct input *in,
			       cJSON *event, const struct trace_event *e)
{
	set_number(event, "pid", (double)map_pid(m, in, e->pid));
	cJSON *ts = cJSON_GetObjectItemCaseSensitive(event, "ts");
	/* the model keeps no time of a metadata event: its text has it */
	double moved = e->kind == TRACE_META && cJSON_IsNumber(ts)
			       ? ts->valuedouble : e->ts;
	if (cJSON_IsNumber(ts) && !move_ts(in, &moved))
		return trace_error_set(m->err, "%s:%u: event %u: ts %g moved "
				       "to the merged trace's start is out of "
				       "range", in->path, e->line, e->index,
				       e->ts);
	/* a metadata event has no time (Chrome's and others' say ts 0):
	 * it moves with its events, never before the merged start */
	if (e->kind == TRACE_META && moved < 0)
		moved = 0;
	if (cJSON_IsNumber(ts))
		cJSON_SetNumberValue(ts, moved);
	if (map_foreign_flow_id(m, in, event) != 0)
		return -1;
	char *text = cJSON_PrintUnformatted(event);
	if (!text)
		return trace_error_set(m->err, "out of memory");
	trace_writer_event(&m->writer, text, strlen(text));
	free(text);
	return 0;
}

/* Pass 2's filter: each event of the current input, written and
 * dropped. */
static int merge_event(void *ctx, struct trace *trace,
		       const struct trace_event *e, cJSON *json,
		       struct trace_error *err)
{
	struct merge *m = ctx;
	struct input *in = m->current;

	(void)trace;
	(void)err;
	in->written++;
	if (e->kind != TRACE_META)
		in->events_end_us = fmax(in->events_end_us, e->ts + e->dur);
	/* amptrace's own events are the model's whole (pass 1 read the
	 * whole file: its header may follow the events) */
	int status = in->amptrace && e->kind != TRACE_OTHER
			     ? merge_model_event(m, in, *e)
			     : merge_foreign_event(m, in, json, e);
	/* nothing of it is held once written: its strings go too (each
	 * step's names are new, and would pile up) */
	return status != 0 ? -1 : TRACE_FORGET;
}

static void free_inputs(struct merge *m)
{
	for (int i = 0; i < m->ninputs; i++) {
		free(m->inputs[i].text);
		if (m->inputs[i].loaded)
			trace_free(&m->inputs[i].trace);
		free(m->inputs[i].pids);
		free(m->inputs[i].named);
	}
	free(m->inputs);
	id_map_free(&m->flow_ids);
	jsonw_free(&m->text);
}

/* The merged header's framework and policy table: the ones every input
 * that names one names, else the first process's (the lowest rank's that
 * names one), as the header of any trace names its first process's; the
 * note says which process came from what, and each keeps its own in
 * process_name. */
static const struct input *framework_input(const struct merge *m)
{
	const struct input *first = NULL;
	bool differ = false;

	for (int i = 0; i < m->ninputs; i++) {
		const struct input *in = &m->inputs[i];
		const char *framework = trace_framework(&in->trace);
		if (!framework)
			continue;
		if (first && strcmp(framework, trace_framework(&first->trace)))
			differ = true;
		if (!first || in->new_rank < first->new_rank)
			first = in;
	}
	if (differ) {
		fprintf(stderr, "amptrace merge: note: the inputs come from "
			"different frameworks (");
		for (int i = 0, listed = 0; i < m->ninputs; i++) {
			const char *framework =
				trace_framework(&m->inputs[i].trace);
			if (!framework)
				continue;
			fprintf(stderr, "%srank %d: %s", listed++ ? "; " : "",
				m->inputs[i].new_rank, framework);
		}
		fprintf(stderr, "); the header names rank %d's, each process "
			"its own in its process_name metadata\n",
			first->new_rank);
	}
	return first;
}

/* The merged file's header; the inputs' list in `merged`. */
static struct trace_header merged_header(const struct merge *m,
					 struct trace_merged_input *merged)
{
	const struct input *source = framework_input(m);
	struct trace_header h = {
		.generator = "amptrace " AMPTRACE_VERSION " merge", .rank = -1,
		.merged = merged, .nmerged = m->ninputs,
	};

	for (int i = 0; i < m->ninputs; i++)
		merged[i] = (struct trace_merged_input){
			.file = m->inputs[i].path,
			.rank = m->inputs[i].new_rank,
			.truncated = m->inputs[i].truncated,
		};
	if (source) {
		h.framework = trace_framework(&source->trace);
		h.policy_table = trace_policy_table(&source->trace);
	}
	return h;
}

/* Where an input ends on the merged time base, in µs: its trailer's
 * duration (from its ts 0 to the program's end), else the end of its last
 * event (a truncated input). */
static double input_end_us(const struct input *in)
{
	const struct trace *t = &in->trace;
	double end = in->events_end_us;

	if (t->trailer.duration_ns > 0)
		end = (double)t->trailer.duration_ns / 1000.0;
	return in->shift_us + end;
}

/* The merged trace's duration_us: from its ts 0 (the earliest input's)
 * to the end of the input that ends last (FORMAT.md §6).  Without it a
 * reader takes the span of the events, shorter than any program's run. */
static int64_t merged_duration_ns(const struct merge *m)
{
	double end_us = 0;

	for (int i = 0; i < m->ninputs; i++)
		end_us = fmax(end_us, input_end_us(&m->inputs[i]));
	return (int64_t)llround(end_us * 1000.0);
}

/* The merged file's trailer; the inputs' ends in `ends`. */
static struct trace_trailer merged_trailer(const struct merge *m,
					   struct trace_merged_end *ends)
{
	for (int i = 0; i < m->ninputs; i++) {
		const struct input *in = &m->inputs[i];
		ends[i] = (struct trace_merged_end){
			.file = in->path, .rank = in->new_rank,
			.pid = in->new_pid, .events = in->events,
			.truncated = in->truncated,
			.exit = in->trace.finalized ? in->trace.trailer.exit : NULL,
		};
	}
	return (struct trace_trailer){
		.complete = true, .events = m->writer.events,
		.duration_ns = merged_duration_ns(m),
		.inputs = ends, .ninputs = m->ninputs,
	};
}

static int merge_inputs(struct merge *m, const char *out);

enum { OPTION_OUTPUT = 'o' };

static const struct option merge_options[] = {
	{ "output", required_argument, NULL, OPTION_OUTPUT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* The inputs into m, the output into *out; returns -1 to go on, else the
 * exit status. */
static int parse_args(int argc, char **argv, struct merge *m,
		      const char **out)
{
	struct command_line cl = { "amptrace merge", "ho:", merge_options,
				   argc, argv };
	int option;

	while ((option = command_line_next(&cl)) != -1) {
		switch (option) {
		case OPTION_OUTPUT:
			if (!optarg[0])
				return command_line_error(&cl, "empty output "
							  "file name");
			*out = optarg;
			break;
		case 'h':
			fputs(merge_usage, stdout);
			return 0;
		default:
			return COMMAND_LINE_BAD_USAGE;
		}
	}
	if (!*out || optind == argc)
		return command_line_error(&cl, "need input traces and -o OUT");
	for (int i = optind; i < argc; i++)
		m->inputs[m->ninputs++] = (struct input){ .path = argv[i] };
	return -1;
}

int amptrace_merge(int argc, char **argv)
{
	struct merge m = { 0 };
	const char *out = NULL;

	m.inputs = calloc((size_t)argc, sizeof *m.inputs);
	if (!m.inputs)
		return 2;
	int status = parse_args(argc, argv, &m, &out);
	if (status >= 0) {
		free_inputs(&m);
		return status;
	}
	return merge_inputs(&m, out);
}

int merge_texts(int count, const char *const *paths,
		const char *const *texts, const size_t *lens, const char *out)
{
	struct merge m = { .inputs = calloc((size_t)count + 1,
					    sizeof *m.inputs) };

	if (!m.inputs)
		return 2;
	for (int i = 0; i < count; i++) {
		char *text = malloc(lens[i] + 1);
		if (!text) {
			free_inputs(&m);
			return 2;
		}
		memcpy(text, texts[i], lens[i]);
		text[lens[i]] = '\0';
		m.inputs[m.ninputs++] = (struct input){
			.path = paths[i], .text = text, .len = lens[i],
		};
	}
	return merge_inputs(&m, out);
}

/* The input's events, each handed to `filter`, into *trace: from its
 * text, or streamed from its file. */
static int load_input(const struct input *in, struct trace *trace,
		      const struct trace_filter *filter, struct trace_error *err)
{
	return in->text ? trace_load_text_filtered(in->path, in->text, in->len,
						   trace, filter, err)
			: trace_load_filtered(in->path, trace, filter, err);
}

/* Whether input `in` is a regular file, as *st has it now. */
static bool is_regular_file(const struct input *in, struct stat *st)
{
	return stat(in->path, st) == 0 && S_ISREG(st->st_mode);
}

/* Whether pass 2 read what pass 1 did: the same events, the same bytes
 * (the digest), of the same file (not another put in its place); a whole
 * trace also the same size and time.  A truncated one may have grown
 * since (a trace still being written): pass 2 stopped where pass 1's
 * last whole event ended, and merges it as pass 1 found it. */
static bool read_same_file(const struct input *in)
{
	struct stat now;

	if (in->written != in->events || in->trace.digest != in->digest)
		return false;
	if (in->text)
		return true;
	if (!is_regular_file(in, &now) || now.st_dev != in->file.st_dev ||
	    now.st_ino != in->file.st_ino)
		return false;
	return in->stop_at ||
	       (now.st_size == in->file.st_size &&
		now.st_mtim.tv_sec == in->file.st_mtim.tv_sec &&
		now.st_mtim.tv_nsec == in->file.st_mtim.tv_nsec);
}

/* Keeps the earliest ts (µs) of the events that have one: not a
 * metadata event's, which is no time (often 0, weeks before the events
 * of a trace with a Kineto-like base). */
static int earliest_ts(void *ctx, struct trace *trace,
		       const struct trace_event *e, cJSON *json,
		       struct trace_error *err)
{
	double *earliest = ctx;
	const cJSON *ts = json ? cJSON_GetObjectItemCaseSensitive(json, "ts")
			       : NULL;

	(void)trace;
	(void)err;
	if (e->kind == TRACE_META)
		return TRACE_FORGET;
	if (cJSON_IsNumber(ts))
		*earliest = fmin(*earliest, ts->valuedouble);
	else if (!json)
		*earliest = fmin(*earliest, e->ts);
	return TRACE_FORGET;
}

/* Where another tool's trace starts after its baseTimeNanoseconds, in
 * µs: at its first event.  Kineto's base is a round time weeks before
 * its events (absolute time = base + ts), where amptrace's is its ts 0,
 * the program's start: merged from the base, a torch.profiler trace
 * spanned 58 days.  Returns 0, or -1 with err set. */
static int first_event_us(const struct input *in, double *first_us,
			  struct trace_error *err)
{
	struct trace scan = { 0 };
	double earliest = INFINITY;
	struct trace_filter filter = { &earliest, earliest_ts,
				       .stop_at = in->stop_at };
	int status = load_input(in, &scan, &filter, err);

	trace_free(&scan);
	*first_us = isfinite(earliest) ? earliest : 0;
	return status;
}

/* Notes the file as pass 1 left it, which pass 2 must find again: its
 * size and time after the read, not before (a writer that finishes while
 * pass 1 reads leaves a whole trace, and a later size); false when
 * another file took its name meanwhile. */
static bool file_as_read(struct input *in)
{
	struct stat now;

	if (!is_regular_file(in, &now) || now.st_dev != in->file.st_dev ||
	    now.st_ino != in->file.st_ino)
		return false;
	in->file = now;
	return true;
}

/* An input that merge wrote of several ranks: its header and trailer
 * list the files it was made of, one entry each, and a merged file's
 * lists do not nest (FORMAT.md §6): its files are merged instead.  One
 * of one rank is a rank's file as any other:
 * `amptrace run` writes a rank's trace.json so (merged of its
 * trace.rankN.json), and a job's nodes' traces are merged so.
 * Returns 0, or 2 (said). */
static int refuse_merged(const struct input *in)
{
	const struct trace_header *h = &in->trace.header;

	if (!in->trace.amptrace || h->nmerged < 2)
		return 0;
	fprintf(stderr, "amptrace merge: %s is a merged trace already (",
		in->path);
	for (int i = 0; i < h->nmerged; i++)
		fprintf(stderr, "%srank %d from %s", i ? ", " : "",
			h->merged[i].rank, h->merged[i].file);
	fprintf(stderr, "): a merged trace lists the files it was made of, "
		"and those lists do not nest; merge the traces it was made "
		"of\n");
	return 2;
}

/* Pass 1's filter: the rank each process names of its own, the last
 * it said (a GPU's process_name names its host, whose pid it follows).
 * Pass 1 decodes no other event (only_with): a process_name's rank is
 * there whether or not the file has its trailer (a truncated one). */
static int note_rank(void *ctx, struct trace *trace,
		     const struct trace_event *e, cJSON *json,
		     struct trace_error *err)
{
	struct input *in = ctx;
	size_t i = 0;

	(void)trace;
	(void)json;
	if (e->kind != TRACE_META || !e->name ||
	    strcmp(e->name, "process_name") || e->meta.host_pid)
		return TRACE_FORGET;
	while (i < in->nnamed && in->named[i].pid != e->pid)
		i++;
	if (i == in->nnamed) {
		struct named_rank *grown = trace_grow(in->named,
						      &in->named_cap, i + 1,
						      sizeof *grown);
		if (!grown)
			return trace_error_set(err, "out of memory");
		in->named = grown;
		in->named[in->nnamed++] = (struct named_rank){
			e->pid, -1, e->meta.rank < 0 };
	}
	/* a name without a rank after one with: none, as readers take it */
	in->named[i].rank = e->meta.rank;
	return TRACE_FORGET;
}

/* Whether a process of the input names a rank of its own. */
static bool names_a_rank(const struct input *in)
{
	for (size_t i = 0; i < in->nnamed; i++)
		if (in->named[i].rank >= 0)
			return true;
	return false;
}

/* Pass 1: every input's outline (its events are decoded once, in pass
 * 2, where a bad one stops the merge; here only its process_name
 * events): its header, rank, the ranks its processes name, time base,
 * its events counted, where a truncated one's last whole event ends.
 * Returns 0, or 2 (said). */
static int read_input(struct merge *m, struct input *in, const char *out)
{
	struct trace_filter filter = { in, note_rank, .digest = true,
				       .only_with = "\"process_name\"" };

	if (output_refuse_input("amptrace merge", out, &in->path, 1))
		return 2;
	if (!in->text && !is_regular_file(in, &in->file) &&
	    !(in->text = trace_read_file(in->path, &in->len, m->err))) {
		fprintf(stderr, "amptrace merge: %s\n", m->err->message);
		return 2;
	}
	if (load_input(in, &in->trace, &filter, m->err) != 0) {
		fprintf(stderr, "amptrace merge: %s\n", m->err->message);
		return 2;
	}
	in->loaded = true;
	if (refuse_merged(in) != 0)
		return 2;
	if (!in->text && !file_as_read(in)) {
		fprintf(stderr, "amptrace merge: %s was replaced while merge "
			"read it\n", in->path);
		return 2;
	}
	in->amptrace = in->trace.amptrace;
	in->late = in->amptrace && header_rank(in) < 0 &&
		   !in->trace.header.nmerged && names_a_rank(in);
	in->events = in->trace.dropped;
	in->digest = in->trace.digest;
	in->stop_at = in->trace.truncated ? in->trace.whole_end : 0;
	in->truncated = in->trace.truncated ||
			(in->trace.header_first && !in->trace.finalized);
	if (in->truncated)
		fprintf(stderr, "amptrace merge: warning: %s is truncated "
			"(its writer was stopped, or is still writing it); "
			"merging its %zu complete events\n", in->path,
			in->events);
	/* amptrace's ts 0 is the program's start (its trailer's duration
	 * counts from it); another tool's, its base */
	double first_us = 0;
	if (in->trace.base_ns > 0 && !in->amptrace && !in->trace.finalized &&
	    first_event_us(in, &first_us, m->err) != 0) {
		fprintf(stderr, "amptrace merge: %s\n", m->err->message);
		return 2;
	}
	double start_ns = in->trace.base_ns + first_us * 1000.0;
	if (in->trace.base_ns > 0 &&
	    (m->base_ns == 0 || start_ns < m->base_ns + m->origin_us * 1000.0)) {
		m->base_ns = in->trace.base_ns;
		m->origin_us = first_us;
	}
	return 0;
}

/* The rank a file of one rank says it is of: its header's, or a
 * merged file's of one input, that input's (a rank's trace.json that
 * `amptrace run` merged of its trace.rankN.json); -1: none. */
static int file_rank(const struct input *in)
{
	const struct trace_header *h = &in->trace.header;

	if (header_rank(in) >= 0 || !in->trace.amptrace)
		return header_rank(in);
	return h->nmerged == 1 ? h->merged[0].rank : -1;
}

/* Whether input `in` holds a process of `rank` as merged: a late input's
 * named by it, another's its file's. */
static bool input_has_rank(const struct input *in, int rank)
{
	if (rank < 0 || !in->late)
		return rank >= 0 && file_rank(in) == rank;
	for (size_t i = 0; i < in->nnamed; i++)
		if (in->named[i].rank == rank)
			return true;
	return false;
}

/* A rank both inputs hold, or -1. */
static int shared_rank(const struct input *a, const struct input *b)
{
	if (!a->late)
		return input_has_rank(b, file_rank(a)) ? file_rank(a) : -1;
	for (size_t i = 0; i < a->nnamed; i++)
		if (input_has_rank(b, a->named[i].rank))
			return a->named[i].rank;
	return -1;
}

/* With a late input among them, every input's ranks as input_has_rank
 * says: each rank one input's, and an input of no rank refused (by its
 * position it would take a late input's rank).  Returns 0, or 2
 * (said). */
static int check_late_ranks(const struct merge *m)
{
	for (int i = 0; i < m->ninputs; i++) {
		const struct input *in = &m->inputs[i];
		if (!in->late && file_rank(in) < 0) {
			fprintf(stderr, "amptrace merge: %s names no rank (nor "
				"do its processes) while the processes of "
				"another input name theirs: merge the ranks' "
				"traces\n", in->path);
			return 2;
		}
		for (int j = 0; j < i; j++) {
			int rank = shared_rank(&m->inputs[j], in);
			if (rank < 0)
				continue;
			fprintf(stderr, "amptrace merge: rank %d is in both %s "
				"and %s: each rank must come from one input\n",
				rank, m->inputs[j].path, in->path);
			return 2;
		}
	}
	return 0;
}

/* An input's lowest rank (a late input's, of its processes'), its
 * highest in *max. */
static int lowest_rank(const struct input *in, int *max)
{
	int low = file_rank(in);

	*max = low;
	for (size_t i = 0; in->late && i < in->nnamed; i++) {
		int rank = in->named[i].rank;
		if (rank >= 0 && (low < 0 || rank < low))
			low = rank;
		if (rank > *max)
			*max = rank;
	}
	return low;
}

/* A file of one rank whose processes name others (torch's rank given to
 * init_process_group where the environment said another, FORMAT.md §5)
 * is merged as its file's rank: said, each process once. */
static void note_other_ranks(const struct input *in, int rank)
{
	for (size_t i = 0; !in->late && i < in->nnamed; i++)
		if (in->named[i].rank >= 0 && in->named[i].rank != rank)
			fprintf(stderr, "amptrace merge: note: process %lld of "
				"%s names rank %d, its file rank %d: merged as "
				"rank %d's, as its file is\n",
				(long long)in->named[i].pid, in->path,
				in->named[i].rank, rank, rank);
}

/* Ranks when an input is late: each late input's processes' own, each
 * other input's its file's (file_rank).  Returns 0, or 2 (said). */
static int assign_late_ranks(struct merge *m)
{
	int max_rank = 0;

	if (check_late_ranks(m) != 0)
		return 2;
	for (int i = 0; i < m->ninputs; i++) {
		struct input *in = &m->inputs[i];
		int max;
		in->new_rank = lowest_rank(in, &max);
		in->new_pid = (int64_t)in->new_rank + 1;
		if (max > max_rank)
			max_rank = max;
		note_other_ranks(in, in->new_rank);
	}
	m->next_extra_pid = (int64_t)max_rank + 2;
	return 0;
}

/* Ranks: a late input's processes' own (assign_late_ranks), else the
 * headers' when all are known and distinct, else the position on the
 * command line.  Returns 0, or 2 (said). */
static int assign_ranks(struct merge *m)
{
	bool ranks_ok = true;
	int max_rank = 0;
	bool late = false;

	for (int i = 0; i < m->ninputs; i++)
		late |= m->inputs[i].late;
	if (late)
		return assign_late_ranks(m);

	for (int i = 0; i < m->ninputs; i++) {
		ranks_ok &= header_rank(&m->inputs[i]) >= 0;
		for (int j = 0; j < i; j++)
			ranks_ok &= header_rank(&m->inputs[i]) !=
				    header_rank(&m->inputs[j]);
	}
	for (int i = 0; i < m->ninputs; i++) {
		struct input *in = &m->inputs[i];
		in->new_rank = ranks_ok ? header_rank(in) : i;
		in->new_pid = (int64_t)in->new_rank + 1;
		if (in->new_rank > max_rank)
			max_rank = in->new_rank;
		if (ranks_ok)
			note_other_ranks(in, in->new_rank);
	}
	/* one input is rank 0 by its position: nothing to say */
	if (!ranks_ok && m->ninputs > 1)
		fprintf(stderr, "amptrace merge: note: not every input has a "
			"distinct rank; using the order of the arguments (rank "
			"= position, from 0)\n");
	m->next_extra_pid = (int64_t)max_rank + 2;
	return 0;
}

/* Each input's shift onto the merged trace's time base. */
static void shift_inputs(struct merge *m)
{
	for (int i = 0; i < m->ninputs; i++) {
		struct input *in = &m->inputs[i];
		if (in->trace.base_ns > 0)
			in->shift_us = (in->trace.base_ns - m->base_ns) / 1000.0 -
				       m->origin_us;
	}
}

/* Opens the output with the merged header; 0, or 1 when it cannot be
 * written (said). */
static int open_output(struct merge *m, const char *out)
{
	struct trace_merged_input *merged = calloc((unsigned)m->ninputs,
						   sizeof *merged);

	if (!merged)
		return 2;
	struct trace_header header = merged_header(m, merged);
	int status = trace_writer_open_whole(&m->writer, out, &header,
					     (uint64_t)(m->base_ns +
							m->origin_us * 1000.0));
	if (status != 0)
		fprintf(stderr, "amptrace merge: cannot write %s: %s\n",
			strcmp(out, "-") ? out : "standard output",
			output_strerror(errno));
	free(merged);
	return status ? 1 : 0;
}

/* Pass 2: events, decoded, checked, re-numbered and re-timed.  Returns
 * 0, or 2 (said; a file output left as it was, standard output without
 * its trailer: a reader says it is truncated). */
static int write_events(struct merge *m, const char *out)
{
	for (int i = 0; i < m->ninputs; i++) {
		struct trace_filter filter = {
			m, merge_event, .stop_at = m->inputs[i].stop_at,
			.digest = true,
		};
		m->current = &m->inputs[i];
		/* its strings held once: pass 1's go, pass 2 reads them again
		 * (and the header and trailer) */
		trace_free(&m->current->trace);
		int status = load_input(m->current, &m->current->trace, &filter,
					m->err);
		if (status == 0 && !read_same_file(m->current))
			status = trace_error_set(m->err, "%s changed while it "
						 "was merged: it was replaced, "
						 "shrunk or rewritten since merge "
						 "first read it (a trace still "
						 "being written may only grow)",
						 m->current->path);
		if (status != 0) {
			fprintf(stderr, "amptrace merge: %s\n", m->err->message);
			trace_writer_abandon(&m->writer);
			return 2;
		}
	}
	return 0;
}

/* The trailer, and the file closed; 0, or 1 when it cannot be written
 * (said). */
static int close_output(struct merge *m, const char *out)
{
	struct trace_merged_end *ends = calloc((unsigned)m->ninputs,
					       sizeof *ends);

	if (!ends)
		return 2;
	struct trace_trailer trailer = merged_trailer(m, ends);
	int status = trace_writer_close(&m->writer, &trailer) == 0 ? 0 : 1;
	if (status)
		fprintf(stderr, "amptrace merge: error writing %s: %s\n",
			strcmp(out, "-") ? out : "standard output",
			output_strerror(errno));
	free(ends);
	return status;
}

/* The merge once the inputs are named (their text read here, or given):
 * frees them; returns the exit status. */
static int merge_inputs(struct merge *pm, const char *out)
{
	struct merge m = *pm;
	struct trace_error err;
	int status = 0;

	m.err = &err;
	for (int i = 0; status == 0 && i < m.ninputs; i++)
		status = read_input(&m, &m.inputs[i], out);
	if (status == 0)
		status = assign_ranks(&m);
	if (status == 0) {
		shift_inputs(&m);
		status = open_output(&m, out);
	}
	if (status == 0)
		status = write_events(&m, out);
	if (status == 0)
		status = close_output(&m, out);
	free_inputs(&m);
	return status;
}
