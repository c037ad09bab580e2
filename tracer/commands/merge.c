/* `amptrace merge RANK0.json RANK1.json ... -o ALL.json`: joins per-rank
 * traces into one, one process per rank (pid = rank + 1), timestamps moved
 * onto a common origin through each file's baseTimeNanoseconds (wall
 * clock, so ranks on different hosts line up as well as their clocks do).
 * Inputs that are truncated are merged as far as they go, with a warning;
 * inputs that do not load as traces are refused. */
#include "command_line.h"
#include "commands.h"
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
	"flow ids are renumbered so that each stays unique.  The header's\n"
	"framework is the inputs' when they agree, else the first rank's\n"
	"(a note says so); each process keeps its own in its metadata.\n"
	"\n"
	"  -o, --output FILE  the merged trace (required; - for standard output)\n"
	"  -h, --help         this text\n"
	"\n"
	"Exit status: 0, 1 when the output cannot be written, 2 bad input.\n";

struct pid_map {
	int64_t old, mapped;
};

struct input {
	const char *path;
	char *text;
	size_t len;
	int rank;           /* from the header, or -1 */
	double base_ns;     /* 0 when absent */
	char *framework;    /* what produced its events (FORMAT.md §1), or NULL */
	bool truncated;
	size_t events;
	cJSON *end;         /* amptraceEnd, or NULL */
	/* pass 2 */
	struct pid_map *pids; /* original pid -> merged pid, in order seen */
	size_t npids, pids_cap;
	int new_rank;
	int64_t new_pid;     /* new_rank + 1: Perfetto treats pid 0 as special */
};

struct merge {
	struct input *inputs;
	int ninputs;
	double base_ns;
	int64_t next_extra_pid;
	struct trace_writer writer;
	struct input *current;
	struct trace_error *err;
	/* (input, flow id) -> merged id: flow ids are unique per file only */
	struct id_map flow_ids;
	uint64_t next_flow_id;
};

/* holder.framework, when it is a string, as the input's. */
static void set_framework(struct input *in, const cJSON *holder)
{
	const cJSON *framework =
		cJSON_GetObjectItemCaseSensitive(holder, "framework");

	if (cJSON_IsString(framework)) {
		free(in->framework);
		in->framework = strdup(framework->valuestring);
	}
}

static int header_top(void *ctx, const char *key, cJSON *value, size_t line)
{
	struct input *in = ctx;

	(void)line;
	if (!strcmp(key, "amptrace") && cJSON_IsObject(value)) {
		const cJSON *rank = cJSON_GetObjectItemCaseSensitive(value, "rank");
		if (cJSON_IsNumber(rank) && rank->valuedouble >= 0)
			in->rank = rank->valueint;
		set_framework(in, value);
	} else if (!strcmp(key, "baseTimeNanoseconds") && cJSON_IsNumber(value)) {
		in->base_ns = value->valuedouble;
	} else if (!strcmp(key, "amptraceEnd") && cJSON_IsObject(value)) {
		cJSON_Delete(in->end);
		in->end = cJSON_Duplicate(value, true);
		/* format 1.0 names it per process only: the first's */
		if (!in->framework)
			set_framework(in, cJSON_GetArrayItem(
				cJSON_GetObjectItemCaseSensitive(value, "processes"), 0));
	}
	return 0;
}

/* GPU n of host process P has pid 2^30 + n*2^22 + P (FORMAT.md §3.8). */
#define GPU_PID_BASE ((int64_t)1 << 30)
#define GPU_PID_HOST_BITS 22

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
	/* The file's first process is the rank; any other gets a pid of its
	 * own above every rank. */
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

/* The pid of an event, keyed as the reader does (trace.c): a number; 0
 * when missing; each distinct string (Perfetto accepts them) a negative
 * number of its own. */
static int64_t pid_key(const cJSON *pid)
{
	if (cJSON_IsNumber(pid))
		return (int64_t)pid->valuedouble;
	if (!cJSON_IsString(pid))
		return 0;
	uint32_t hash = 2166136261u;
	for (const char *c = pid->valuestring; *c; c++)
		hash = (hash ^ (unsigned char)*c) * 16777619u;
	return -(int64_t)(hash & 0x7fffffff) - 1;
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

/* A flow event's id (`s`, `t`, `f`: a number, or a hex string as
 * Perfetto reads it) becomes one unique in the merged file, the same for
 * every end of the flow; ids that are neither are left alone. */
static int map_flow_id(struct merge *m, struct input *in, cJSON *event)
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
	size_t *mapped = id_map_find(&m->flow_ids, in - m->inputs, old, true);
	if (!mapped)
		return trace_error_set(m->err, "out of memory");
	if (!*mapped)
		*mapped = (size_t)++m->next_flow_id;
	set_number(event, "id", (double)*mapped);
	return 0;
}

static int merge_event(void *ctx, cJSON *event, size_t index, size_t line)
{
	struct merge *m = ctx;
	struct input *in = m->current;

	if (!cJSON_IsObject(event))
		return trace_error_set(m->err, "%s:%zu: an event must be a JSON "
				       "object", in->path, line);
	cJSON *pid = cJSON_GetObjectItemCaseSensitive(event, "pid");
	if (pid && !cJSON_IsNumber(pid) && !cJSON_IsString(pid))
		return trace_error_set(m->err, "%s:%zu: pid must be a number",
				       in->path, line);
	int64_t mapped = map_pid(m, in, pid_key(pid));
	set_number(event, "pid", (double)mapped);
	cJSON *ts = cJSON_GetObjectItemCaseSensitive(event, "ts");
	if (cJSON_IsNumber(ts) && in->base_ns > 0) {
		/* ns → µs, rounded to the ns the format keeps */
		double shift = (in->base_ns - m->base_ns) / 1000.0;
		double moved = ts->valuedouble + shift;
		if (!(fabs(moved) <= 9007199254740992.0))
			return trace_error_set(m->err, "%s:%zu: event %zu: ts "
					       "%g moved to the merged trace's "
					       "start is out of range", in->path,
					       line, index, ts->valuedouble);
		cJSON_SetNumberValue(ts, (double)(int64_t)(moved * 1000.0 + 0.5) /
						 1000.0);
	}
	cJSON *name = cJSON_GetObjectItemCaseSensitive(event, "name");
	cJSON *args = cJSON_GetObjectItemCaseSensitive(event, "args");
	const cJSON *ph = cJSON_GetObjectItemCaseSensitive(event, "ph");
	/* Kernels name their host process ("amp.pid"), GPU processes too
	 * ("host_pid"): both follow the host's new pid. */
	static const char *const host_keys[] = { "amp.pid", "host_pid" };
	for (size_t k = 0; k < 2 && cJSON_IsObject(args); k++) {
		cJSON *host = cJSON_GetObjectItemCaseSensitive(args, host_keys[k]);
		if (cJSON_IsNumber(host))
			set_number(args, host_keys[k],
				   (double)map_pid(m, in, (int64_t)host->valuedouble));
	}
	if (cJSON_IsString(ph) && !strcmp(ph->valuestring, "M") &&
	    cJSON_IsString(name) && cJSON_IsObject(args) &&
	    mapped == in->new_pid) {
		char prefix[32];
		snprintf(prefix, sizeof prefix, "rank %d:", in->new_rank);
		cJSON *label = cJSON_GetObjectItemCaseSensitive(args, "name");
		if (!strcmp(name->valuestring, "process_name") &&
		    cJSON_IsString(label) &&
		    strncmp(label->valuestring, prefix, strlen(prefix))) {
			size_t size = strlen(label->valuestring) + 40;
			char *text = malloc(size);
			if (text) {
				snprintf(text, size, "%s %s", prefix,
					 label->valuestring);
				cJSON_ReplaceItemInObjectCaseSensitive(
					args, "name", cJSON_CreateString(text));
				free(text);
			}
		}
		if (!strcmp(name->valuestring, "process_name") &&
		    !cJSON_GetObjectItemCaseSensitive(args, "rank"))
			cJSON_AddNumberToObject(args, "rank", in->new_rank);
		if (!strcmp(name->valuestring, "process_sort_index"))
			set_number(args, "sort_index", in->new_rank);
	}
	if (map_flow_id(m, in, event) != 0)
		return -1;
	char *text = cJSON_PrintUnformatted(event);
	if (!text)
		return trace_error_set(m->err, "out of memory");
	trace_writer_event(&m->writer, text, strlen(text));
	free(text);
	return 0;
}

static void free_inputs(struct merge *m)
{
	for (int i = 0; i < m->ninputs; i++) {
		free(m->inputs[i].text);
		free(m->inputs[i].framework);
		cJSON_Delete(m->inputs[i].end);
		free(m->inputs[i].pids);
	}
	free(m->inputs);
	id_map_free(&m->flow_ids);
}

/* The merged header's framework: the one every input that names one
 * names, else the first process's (the lowest rank's that names one), as
 * the header of any trace names its first process's; the note says which
 * process came from what, and each keeps its own in process_name. */
static const char *merged_framework(const struct merge *m)
{
	const struct input *first = NULL;
	bool differ = false;

	for (int i = 0; i < m->ninputs; i++) {
		const struct input *in = &m->inputs[i];
		if (!in->framework)
			continue;
		if (first && strcmp(in->framework, first->framework))
			differ = true;
		if (!first || in->new_rank < first->new_rank)
			first = in;
	}
	if (differ) {
		fprintf(stderr, "amptrace merge: note: the inputs come from "
			"different frameworks (");
		for (int i = 0, listed = 0; i < m->ninputs; i++) {
			if (!m->inputs[i].framework)
				continue;
			fprintf(stderr, "%srank %d: %s", listed++ ? "; " : "",
				m->inputs[i].new_rank, m->inputs[i].framework);
		}
		fprintf(stderr, "); the header names rank %d's, each process "
			"its own in its process_name metadata\n",
			first->new_rank);
	}
	return first ? first->framework : NULL;
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
		m->inputs[m->ninputs++] = (struct input){ .path = argv[i],
							  .rank = -1 };
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
			.rank = -1,
		};
	}
	return merge_inputs(&m, out);
}

/* Pass 1: every input must read (its text read here unless given); its
 * header, rank and time base.  Returns 0, or 2 (said). */
static int read_input(struct merge *m, struct input *in, const char *out)
{
	struct trace_scan_handlers h = { .ctx = in, .top = header_top };
	struct trace_scan_result r;
	struct trace checked;
	int status = -1;

	if (output_refuse_input("amptrace merge", out, &in->path, 1))
		return 2;
	/* Loading checks every event as summary and check would. */
	if (!in->text)
		in->text = trace_read_file(in->path, &in->len, m->err);
	if (in->text && trace_load_text(in->path, in->text, in->len,
					&checked, m->err) == 0) {
		trace_free(&checked);
		status = trace_scan(in->path, in->text, in->len, &h, &r, m->err);
	}
	if (status != 0) {
		fprintf(stderr, "amptrace merge: %s\n", m->err->message);
		return 2;
	}
	in->truncated = r.truncated || (r.amptrace && !in->end);
	in->events = r.events;
	if (in->truncated)
		fprintf(stderr, "amptrace merge: warning: %s is truncated "
			"(its writer was stopped); merging its %zu "
			"complete events\n", in->path, r.events);
	if (in->base_ns > 0 && (m->base_ns == 0 || in->base_ns < m->base_ns))
		m->base_ns = in->base_ns;
	return 0;
}

/* Ranks: the header's when all are known and distinct, else the
 * position on the command line; pids follow (rank + 1). */
static void assign_ranks(struct merge *m)
{
	bool ranks_ok = true;
	int max_rank = 0;

	for (int i = 0; i < m->ninputs; i++) {
		ranks_ok &= m->inputs[i].rank >= 0;
		for (int j = 0; j < i; j++)
			ranks_ok &= m->inputs[i].rank != m->inputs[j].rank;
	}
	for (int i = 0; i < m->ninputs; i++) {
		m->inputs[i].new_rank = ranks_ok ? m->inputs[i].rank : i;
		m->inputs[i].new_pid = (int64_t)m->inputs[i].new_rank + 1;
		if (m->inputs[i].new_rank > max_rank)
			max_rank = m->inputs[i].new_rank;
	}
	if (!ranks_ok)
		fprintf(stderr, "amptrace merge: note: not every input has a "
			"distinct rank; using the order of the arguments (rank "
			"= position, from 0)\n");
	m->next_extra_pid = (int64_t)max_rank + 2;
}

/* Opens the output with the merged header; 0, or 1 when it cannot be
 * written (said). */
static int open_output(struct merge *m, const char *out)
{
	struct jsonw header;
	jsonw_init(&header);
	jsonw_printf(&header, "\"generator\":\"amptrace %s merge\",\"rank\":null,"
			      "\"merged\":[", AMPTRACE_VERSION);
	for (int i = 0; i < m->ninputs; i++) {
		if (i)
			jsonw_raw(&header, ",", 1);
		jsonw_cstr(&header, "{\"file\":");
		jsonw_str(&header, m->inputs[i].path);
		jsonw_printf(&header, ",\"rank\":%d,\"truncated\":%s}",
			     m->inputs[i].new_rank,
			     m->inputs[i].truncated ? "true" : "false");
	}
	jsonw_raw(&header, "]", 1);
	const char *framework = merged_framework(m);
	if (framework) {
		jsonw_cstr(&header, ",\"framework\":");
		jsonw_str(&header, framework);
	}
	int status = trace_writer_open(&m->writer, out, header.data,
				       (uint64_t)m->base_ns);
	if (status != 0)
		fprintf(stderr, "amptrace merge: cannot write %s: %s\n",
			strcmp(out, "-") ? out : "standard output",
			strerror(errno));
	jsonw_free(&header);
	return status ? 1 : 0;
}

/* Pass 2: events, re-numbered and re-timed.  Returns 0, or 2 (said, the
 * output discarded). */
static int write_events(struct merge *m, const char *out)
{
	for (int i = 0; i < m->ninputs; i++) {
		struct input *in = &m->inputs[i];
		struct trace_scan_handlers h = { .ctx = m, .event = merge_event };
		struct trace_scan_result r;
		m->current = in;
		if (trace_scan(in->path, in->text, in->len, &h, &r, m->err) != 0) {
			fprintf(stderr, "amptrace merge: %s\n", m->err->message);
			trace_writer_close(&m->writer, "{\"complete\":false}");
			output_file_discard(out);
			return 2;
		}
		free(in->text);
		in->text = NULL;
	}
	return 0;
}

/* The trailer, and the file closed; 0, or 1 when it cannot be
 * written (said). */
static int close_output(struct merge *m, const char *out)
{
	struct jsonw end;
	jsonw_init(&end);
	jsonw_printf(&end, "{\"complete\":true,\"events\":%llu,\"inputs\":[",
		     (unsigned long long)m->writer.events);
	for (int i = 0; i < m->ninputs; i++) {
		struct input *in = &m->inputs[i];
		if (i)
			jsonw_raw(&end, ",", 1);
		jsonw_cstr(&end, "{\"file\":");
		jsonw_str(&end, in->path);
		jsonw_printf(&end, ",\"rank\":%d,\"pid\":%lld,\"events\":%zu,"
				   "\"truncated\":%s,\"exit\":",
			     in->new_rank, (long long)in->new_pid, in->events,
			     in->truncated ? "true" : "false");
		cJSON *exit = cJSON_GetObjectItemCaseSensitive(in->end, "exit");
		char *text = exit ? cJSON_PrintUnformatted(exit) : NULL;
		jsonw_cstr(&end, text ? text : "null");
		free(text);
		jsonw_raw(&end, "}", 1);
	}
	jsonw_cstr(&end, "]}");
	int status = trace_writer_close(&m->writer, end.data) == 0 ? 0 : 1;
	if (status)
		fprintf(stderr, "amptrace merge: error writing %s: %s\n",
			strcmp(out, "-") ? out : "standard output",
			strerror(errno));
	jsonw_free(&end);
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
	if (status == 0) {
		assign_ranks(&m);
		status = open_output(&m, out);
	}
	if (status == 0)
		status = write_events(&m, out);
	if (status == 0)
		status = close_output(&m, out);
	free_inputs(&m);
	return status;
}
