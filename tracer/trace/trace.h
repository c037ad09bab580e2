/* A trace file in memory: the events summary, check, diff and the format
 * test work on, decoded from FORMAT.md's JSON into plain structs.
 *
 * Ownership: trace_load() fills a `struct trace` that owns everything it
 * points to (strings are interned in the trace's arena); trace_free()
 * releases it.  Loading is strict for the amp.* categories (a field of the
 * wrong type is an error naming file:line) and lenient for everything
 * else (other tools' events are kept as TRACE_OTHER). */
#ifndef AMPTRACE_TRACE_H
#define AMPTRACE_TRACE_H

#include "trace_event.h"
#include "trace_scan.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

struct trace_arena_block;
struct trace_string_slot;

/* How many of one process's decoded events a reader's filter dropped. */
struct trace_dropped {
	int64_t pid;
	size_t count;
};

struct trace {
	char *path;
	struct trace_event *events;
	size_t nevents;
	size_t dropped;       /* events a reader's filter dropped */
	/* the decoded ones of those, by process (the undecoded ones of an
	 * outline or only_with have no process): a reader that keeps some
	 * processes alone (--rank) counts theirs */
	struct trace_dropped *dropped_pids;
	size_t ndropped_pids, cap_dropped_pids;
	size_t counts[TRACE_KIND_COUNT];
	bool amptrace;        /* written by amptrace (has the header) */
	char format[16];      /* "1.0"; "" when not an amptrace trace */
	bool truncated;       /* the file ended early and was repaired */
	size_t truncated_line;
	/* the header came before the events: a trace that ends early is
	 * amptrace's cut short (FORMAT.md, "Truncated traces") */
	bool header_first;
	bool finalized;       /* the trailer ("amptraceEnd") is present */
	double base_ns;       /* baseTimeNanoseconds, or 0 */
	/* the scan's (trace_scan_result): where the text read whole ends,
	 * and its digest when the filter asked for one */
	size_t whole_end;
	uint64_t digest;
	struct trace_header header;   /* amptrace: the "amptrace" object */
	struct trace_trailer trailer; /* finalized: "amptraceEnd" */
	/* internals */
	size_t cap_events;
	struct trace_arena_block *arena;        /* events' arrays */
	struct trace_arena_block *string_arena; /* interned strings */
	struct trace_string_slot *strings;
	size_t nstrings, cap_strings;
	/* the slots of the strings interned since trace_strings_mark() */
	size_t *string_log;
	size_t nstring_log, cap_string_log;
	bool string_log_on, string_log_lost;
};

/* Loads `path`.  Returns 0, or -1 with err set (the trace is then empty
 * and needs no trace_free, though calling it is harmless). */
/* The dtype names of FORMAT.md, in libamp's order, NULL-terminated
 * (the tracer reads traces without linking libamp). */
extern const char *const trace_dtype_names[];
#define TRACE_DTYPE_COUNT 7

int trace_load(const char *path, struct trace *trace, struct trace_error *err);

/* What a reader holds of a trace it reads: each event, once decoded, is
 * handed to `event`, which returns TRACE_KEEP (it is appended to
 * trace->events, as trace_load does with all), TRACE_DROP (its arrays are
 * given back: a reader that counts or aggregates holds the memory of one
 * event, whatever the trace's size), TRACE_FORGET (dropped, and the
 * strings it alone brought are given back too, for a filter that holds
 * none of them once it returns: merge, whose inputs name each step
 * anew), or -1 after setting err.  Whatever
 * the event points to lives until the call returns unless kept; its
 * strings (interned) live as long as the trace.  `json` is the event as
 * the file has it, which the model does not hold whole for other tools'
 * events (TRACE_OTHER): the reader's, a filter may change it.  The header
 * is read before the first event, the trailer after the last.
 *
 * A filter without `event` reads the trace's outline: its header and
 * trailer, its events counted (trace->dropped) but not decoded, nor
 * checked beyond their brackets.  stop_at and digest are the scan's
 * (trace_scan.h): a reader that reads a file twice (merge) reads the
 * same part of it, and knows it did (trace->whole_end, trace->digest). */
enum trace_keep { TRACE_DROP, TRACE_KEEP, TRACE_FORGET };
struct trace_filter {
	void *ctx;
	int (*event)(void *ctx, struct trace *trace,
		     const struct trace_event *event, cJSON *json,
		     struct trace_error *err);
	size_t stop_at;
	bool digest;
	/* the scan's too: only the events whose text holds it are decoded
	 * and handed to `event`; the others are counted in trace->dropped */
	const char *only_with;
};
int trace_load_filtered(const char *path, struct trace *trace,
			const struct trace_filter *filter,
			struct trace_error *err);
/* The same for a trace already in memory (`path` names it in messages). */
int trace_load_text_filtered(const char *path, const char *text, size_t len,
			     struct trace *trace,
			     const struct trace_filter *filter,
			     struct trace_error *err);
/* trace_load without the amp.flow events (FORMAT.md §3.10), for the
 * commands that read none (summary, check, report, ampview): a trace
 * has about one arrow end per op and cast, near half its events; they
 * are counted in trace->dropped. */
int trace_load_without_flows(const char *path, struct trace *trace,
			     struct trace_error *err);
/* The same for a trace already in memory (`path` names it in messages). */
int trace_load_text(const char *path, const char *text, size_t len,
		    struct trace *trace, struct trace_error *err);
void trace_free(struct trace *trace);

/* Building a trace in memory, event by event, without a file: `amptrace
 * run` keeps the events it writes this way, so that its findings need
 * not read the trace back.  trace_init() starts an empty trace named
 * `path`; the strings and arrays an event points to must come from
 * trace_intern()/trace_alloc() of the same trace (they live as long as
 * it); trace_append() copies the event in, setting its index, and
 * counts it.  Each returns NULL (trace_init -1) when out of memory
 * (trace_append too past UINT32_MAX events: an index is 32 bits). */
int trace_init(struct trace *trace, const char *path);
const char *trace_intern(struct trace *trace, const char *s);
/* The first `len` bytes of s (up to a NUL among them). */
const char *trace_intern_n(struct trace *trace, const char *s, size_t len);
void *trace_alloc(struct trace *trace, size_t size);
/* `array`, of elements of `elem` bytes with room for *cap, given room
 * for at least `need`: its room doubled as often as it takes (from 64).
 * Returns the array, perhaps moved, or NULL when out of memory (then
 * `array` and *cap are as they were); never NULL otherwise, even for
 * `need` 0.  The one growth of the tracer's
 * arrays; each caller keeps its own answer to running out. */
void *trace_grow(void *array, size_t *cap, size_t need, size_t elem);
/* The `ndim` sizes, interned with the strings: equal shapes share one
 * array, which lives as long as the trace. */
const int64_t *trace_intern_shape(struct trace *trace, const int64_t *sizes,
				  int ndim);
/* A tensor's kind, interned with the strings: equal kinds share one
 * struct, which lives as long as the trace.  Its strings and shape must
 * be the trace's own (interned), as a kind compares them by address. */
const struct trace_tensor_info *
trace_intern_tensor_info(struct trace *trace,
			 const struct trace_tensor_info *info);
/* An op's autocast state, interned as a tensor's kind is (its scopes
 * list too): equal states share one struct. */
const struct trace_autocast *
trace_intern_autocast(struct trace *trace,
		      const struct trace_autocast *state);
/* `cast` from its record: its source's kind interned (its dtype: from),
 * its compiled graph's keys, when any is set, copied into the trace's
 * room.  Returns 0, or -1 when out of memory.  The record's strings and
 * shape must be the trace's own. */
int trace_cast_from_record(struct trace *trace,
			   const struct trace_cast_record *record,
			   struct trace_cast *cast);
/* Everything trace_alloc() gave since trace_arena_mark(), given back
 * (interned strings stay). */
struct trace_arena_mark {
	struct trace_arena_block *block;
	size_t used;
};
struct trace_arena_mark trace_arena_mark(const struct trace *trace);
void trace_arena_release(struct trace *trace, struct trace_arena_mark mark);
/* The strings interned from here on, forgotten again: the table holds
 * them no more and their room is given back.  Only for strings nothing
 * points to any more (a dropped event's, TRACE_FORGET); when the table
 * grew in between, they are kept (it is rare: it doubles). */
struct trace_strings_mark {
	struct trace_arena_block *block;
	size_t used, cap_strings;
};
struct trace_strings_mark trace_strings_mark(struct trace *trace);
void trace_strings_forget(struct trace *trace, struct trace_strings_mark mark);
/* The hash the string table uses (string pids use it too). */
uint64_t trace_string_hash(const char *s, size_t len);
struct trace_event *trace_append(struct trace *trace,
				 const struct trace_event *event);

/* What produced the trace's events: the header's framework, else (format
 * 1.0) its first process's; NULL when neither says. */
const char *trace_framework(const struct trace *trace);
/* The policy table its policies come from ("1.13", "newest"): the
 * header's policy_table, else (before format 1.4) the one its framework
 * names in "(policy table: 1.13)"; NULL when none is named. */
const char *trace_policy_table(const struct trace *trace);

/* The file ended early: repaired (its last line was cut), or an amptrace
 * trace without its trailer; its writer was stopped, or is still writing
 * it (FORMAT.md §7, "Truncated traces"). */
bool trace_unfinished(const struct trace *trace);

/* A one-line description of how the trace ended, or NULL when it ended
 * normally: "truncated at line 1234 (its writer was stopped ...)" or
 * "rank 0: killed by SIGSEGV".  Written into buf. */
const char *trace_end_note(const struct trace *trace, char *buf, size_t size);

/* The run's duration, in µs, the one every reader shows: from ts 0 (the
 * program's start) to its end as the trailer says (duration_us); without
 * a trailer (truncated, merged by an older amptrace, another tool's
 * trace), from the first event to the end of the last. */
double trace_duration_us(const struct trace *trace);

/* A cast of another origin than autocast's (FORMAT.md §3.3) is a kind of
 * its own (TRACE_OTHER_CAST), so that what reads autocast's decisions
 * reads only those; "autocast" is absent's other spelling (origin NULL).
 * Both the reader and the converter sort a TRACE_CAST with it. */
void trace_cast_set_origin(struct trace_event *e);

/* "softmax.int" or "softmax" into buf. */
const char *trace_op_label(const struct trace_op *op, char *buf, size_t size);

/* qsort for arrays that may be empty, and then NULL: qsort(NULL, 0, ...)
 * is undefined behaviour. */
static inline void trace_sort(void *base, size_t count, size_t size,
			      int (*compare)(const void *, const void *))
{
	if (count > 1)
		qsort(base, count, size, compare);
}

#endif /* AMPTRACE_TRACE_H */
