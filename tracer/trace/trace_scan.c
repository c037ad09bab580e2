/* Streaming walk over a trace file's JSON (see trace_scan.h). */
#include "trace_scan.h"

#include "shell_word.h"
#include "terminal_text.h"
#include "trace.h" /* trace_string_hash, for the digest */
#include "utf8.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_NESTING 512

int trace_error_set(struct trace_error *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->message, sizeof err->message, fmt, ap);
	va_end(ap);
	/* A message quotes the trace (a name, a ph) and goes to a terminal,
	 * or into a page (report): a trace's "\u001b]0;..." must not reach
	 * either as control bytes, whatever prints it. */
	terminal_text_clean(err->message);
	return -1;
}

/* An input that is not a regular file (a pipe: `<(zcat t.json.gz)`, a
 * FIFO, a socket) is read up to this much: one that never ends must not
 * take the machine's memory.  A device is not read at all: /dev/zero
 * never ends, a terminal holds no trace. */
#define READ_STREAM_MAX ((size_t)1 << 30)
/* How long a FIFO is waited for until its first byte: a FIFO that no
 * process writes would otherwise block for ever. */
#define READ_FIFO_WAIT_MS 10000

/* Opened without blocking (a FIFO's open waits for a writer), then
 * checked: what kind of file, and for a stream, that something comes. */
static int open_input(const char *path, size_t *limit, struct trace_error *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		trace_error_set(err, "%s: cannot open: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
		trace_error_set(err, "%s: not a regular file (a directory)", path);
		close(fd);
		return -1;
	}
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
		trace_error_set(err, "%s: not a regular file (a device): give "
				"the trace as a file", path);
		close(fd);
		return -1;
	}
	*limit = S_ISREG(st.st_mode) ? SIZE_MAX : READ_STREAM_MAX;
	if (!S_ISREG(st.st_mode)) {
		struct pollfd ready = { .fd = fd, .events = POLLIN };
		int n;
		while ((n = poll(&ready, 1, READ_FIFO_WAIT_MS)) < 0 &&
		       errno == EINTR)
			;
		if (n == 0) {
			trace_error_set(err, "%s: nothing to read after %d s (a "
					"FIFO that no process writes?)", path,
					READ_FIFO_WAIT_MS / 1000);
			close(fd);
			return -1;
		}
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

char *trace_read_file(const char *path, size_t *len, struct trace_error *err)
{
	struct stat st;
	size_t limit;
	int fd = open_input(path, &limit, err);

	if (fd < 0)
		return NULL;
	size_t cap = fstat(fd, &st) == 0 && st.st_size > 0
			     ? (size_t)st.st_size + 1 : 65536;
	char *text = malloc(cap);
	size_t n = 0;
	ssize_t got = 1;
	while (text && got > 0) {
		if (n == cap - 1) {
			/* Full: at the end of a file of st_size bytes, the usual
			 * case, the next read finds nothing and the buffer stays
			 * the file's size. */
			char probe;
			while ((got = read(fd, &probe, 1)) < 0 && errno == EINTR)
				;
			if (got <= 0)
				break;
			if (n >= limit) {
				trace_error_set(err, "%s: more than %zu MiB from a "
						"pipe or FIFO: give the trace as a "
						"file", path, limit >> 20);
				free(text);
				close(fd);
				return NULL;
			}
			char *grown = realloc(text, cap * 2);
			if (!grown) {
				free(text);
				text = NULL;
				break;
			}
			text = grown;
			cap *= 2;
			text[n++] = probe;
		}
		size_t want = cap - 1 - n;
		if (limit - n < want)
			want = limit - n + 1; /* one past: says it went over */
		got = read(fd, text + n, want);
		if (got < 0 && errno == EINTR)
			got = 1;
		else if (got > 0)
			n += (size_t)got;
	}
	if (!text) {
		trace_error_set(err, "%s: out of memory reading the file", path);
		close(fd);
		return NULL;
	}
	if (got < 0) {
		trace_error_set(err, "%s: read error: %s", path, strerror(errno));
		free(text);
		close(fd);
		return NULL;
	}
	close(fd);
	if (n > limit) {
		trace_error_set(err, "%s: more than %zu MiB from a pipe or FIFO: "
				"give the trace as a file", path, limit >> 20);
		free(text);
		return NULL;
	}
	text[n] = '\0';
	*len = n;
	return text;
}

/* A set of keys, for finding one given twice in an object: JSON readers
 * disagree on which of two equal keys counts (cJSON takes the first;
 * Python, JavaScript and Perfetto the last), so the reader refuses them.
 * Open addressing over the keys' hashes: an object's keys are checked in
 * one pass, not each against all the others. */
struct key_set {
	const char **slots; /* NULL: free */
	size_t size;        /* a power of two, twice the keys or more */
	size_t count;
};

static size_t key_hash(const char *key)
{
	size_t hash = 2166136261u;

	for (; *key; key++)
		hash = (hash ^ (unsigned char)*key) * 16777619u;
	return hash;
}

/* Adds key (not copied); false when it is there already. */
static bool key_set_add(struct key_set *set, const char *key)
{
	size_t i = key_hash(key) & (set->size - 1);

	for (; set->slots[i]; i = (i + 1) & (set->size - 1))
		if (!strcmp(set->slots[i], key))
			return false;
	set->slots[i] = key;
	set->count++;
	return true;
}

/* Room for an event's keys on the stack: events have about ten. */
#define KEY_SET_SMALL 64

/* An object of this many keys or fewer (a tensor in args has five) is
 * checked key against key, the first bytes first: cheaper than hashing
 * them into a set, and every object of every event is checked. */
#define KEY_PAIRS_MAX 8

static const char *repeated_key_of_few(const cJSON *obj)
{
	const char *keys[KEY_PAIRS_MAX];
	const cJSON *member;
	size_t n = 0;

	cJSON_ArrayForEach(member, obj) {
		const char *key = member->string;
		for (size_t i = 0; i < n; i++)
			if (keys[i][0] == key[0] && !strcmp(keys[i], key))
				return key;
		keys[n++] = key;
	}
	return NULL;
}

/* The first key of obj that repeats an earlier one, NULL when none.
 * -1 when out of memory (err not set). */
static int repeated_key(const cJSON *obj, const char **repeated)
{
	const char *small[KEY_SET_SMALL];
	struct key_set set = { .slots = small, .size = 8 };
	const cJSON *member;
	size_t n = 0;

	*repeated = NULL;
	if (!cJSON_IsObject(obj))
		return 0;
	cJSON_ArrayForEach(member, obj)
		n++;
	if (n < 2)
		return 0;
	if (n <= KEY_PAIRS_MAX) {
		*repeated = repeated_key_of_few(obj);
		return 0;
	}
	/* as small as the keys allow: the slots are cleared for each event */
	while (set.size < 2 * n)
		set.size *= 2;
	if (set.size > KEY_SET_SMALL &&
	    !(set.slots = malloc(set.size * sizeof *set.slots)))
		return -1;
	memset(set.slots, 0, set.size * sizeof *set.slots);
	cJSON_ArrayForEach(member, obj)
		if (!key_set_add(&set, member->string)) {
			*repeated = member->string;
			break;
		}
	if (set.slots != small)
		free(set.slots);
	return 0;
}

/* The first object in value (value itself, or one nested in its objects
 * and arrays, depth first) that gives a key twice, NULL when none; the
 * key in *repeated.  -1 when out of memory.  The nesting is bounded by
 * the scanner's MAX_NESTING. */
static int object_with_repeated_key(const cJSON *value, const cJSON **object,
				    const char **repeated)
{
	const cJSON *child;

	*object = NULL;
	if (cJSON_IsObject(value)) {
		if (repeated_key(value, repeated) < 0)
			return -1;
		if (*repeated) {
			*object = value;
			return 0;
		}
	} else if (!cJSON_IsArray(value)) {
		return 0;
	}
	cJSON_ArrayForEach(child, value) {
		if (!cJSON_IsObject(child) && !cJSON_IsArray(child))
			continue;
		if (object_with_repeated_key(child, object, repeated) < 0)
			return -1;
		if (*object)
			return 0;
	}
	return 0;
}

/* The path from value to target (".exit", ".processes[0]") in path;
 * whether target is in value.  Only for a message: it walks again. */
static bool path_to(const cJSON *value, const cJSON *target, char *path,
		    size_t size)
{
	const cJSON *child;
	size_t used = strlen(path), index = 0;

	if (value == target)
		return true;
	cJSON_ArrayForEach(child, value) {
		if (cJSON_IsArray(value))
			snprintf(path + used, size - used, "[%zu]", index++);
		else
			snprintf(path + used, size - used, ".%.40s",
				 child->string);
		if (path_to(child, target, path, size))
			return true;
		path[used] = '\0';
	}
	return false;
}

/* The bytes the scanner looks at: the whole text (trace_scan), or a
 * window of a file that slides forward as events are consumed
 * (trace_scan_file), so a trace of any size needs memory for the window
 * only.  Offsets into the input (`keep`, line starts, spans) are
 * absolute; `text[i]` is the input's byte `base + i`. */
struct scanner {
	const char *path;
	char *text;
	size_t len;         /* bytes of the window in text */
	size_t pos;         /* index in text */
	size_t base;        /* the input's offset of text[0] */
	size_t line;        /* 1-based line of text[pos] */
	size_t line_start;  /* absolute offset of that line's first byte */
	struct trace_error *err;
	/* a file's window: fd >= 0 */
	int fd;
	size_t cap;         /* room in text */
	size_t keep;        /* absolute offset of the first byte still needed */
	size_t total;       /* the file's size, for progress (0: a stream) */
	bool eof;
	bool failed;        /* reading failed: err is set */
	struct key_set top_keys; /* the top-level object's, copies */
	size_t stop_at;     /* the input ends here (SIZE_MAX: its end) */
	bool digesting;     /* the handlers asked for a digest */
	size_t whole_end;   /* the result's */
	uint64_t digest;    /* the result's */
};

/* The largest single value a window grows to hold: one event (or the
 * header) of a trace is a few KiB; a value larger than this is not one. */
#define SCAN_VALUE_MAX ((size_t)1 << 30)

static size_t offset(const struct scanner *s, size_t index)
{
	return s->base + index;
}

/* More of the file into the window, dropping what is before `keep`.
 * Returns whether bytes were added. */
static bool refill(struct scanner *s)
{
	if (s->fd < 0 || s->eof || s->failed)
		return false;
	size_t left = s->stop_at - (s->base + s->len);
	if (!left) {
		s->eof = true;
		return false;
	}
	size_t drop = s->keep - s->base;
	if (drop) {
		memmove(s->text, s->text + drop, s->len - drop);
		s->len -= drop;
		s->pos -= drop;
		s->base += drop;
	}
	if (s->len == s->cap) {
		if (s->cap >= SCAN_VALUE_MAX) {
			trace_error_set(s->err, "%s:%zu: a value of more than "
					"%zu MiB (not a trace event)", s->path,
					s->line, SCAN_VALUE_MAX >> 20);
			s->failed = true;
			return false;
		}
		char *grown = realloc(s->text, s->cap * 2);
		if (!grown) {
			trace_error_set(s->err, "%s: out of memory reading the "
					"file", s->path);
			s->failed = true;
			return false;
		}
		s->text = grown;
		s->cap *= 2;
	}
	ssize_t got;
	size_t room = s->cap - s->len < left ? s->cap - s->len : left;
	while ((got = read(s->fd, s->text + s->len, room)) < 0 &&
	       errno == EINTR)
		;
	if (got < 0) {
		trace_error_set(s->err, "%s: read error: %s", s->path,
				strerror(errno));
		s->failed = true;
		return false;
	}
	if (got == 0) {
		s->eof = true;
		return false;
	}
	s->len += (size_t)got;
	return true;
}

/* Whether the input ends at pos (reading more when the window does). */
static bool at_end(struct scanner *s)
{
	return s->pos >= s->len && !refill(s);
}

/* At least n bytes from pos in the window, unless the input ends first. */
static void ensure(struct scanner *s, size_t n)
{
	while (s->len - s->pos < n && refill(s))
		;
}

static size_t column(const struct scanner *s)
{
	return offset(s, s->pos) - s->line_start + 1;
}

static int syntax_error(struct scanner *s, const char *what)
{
	if (s->failed)
		return -1;
	if (at_end(s))
		return s->failed ? -1
				 : trace_error_set(s->err, "%s:%zu:%zu: %s, but "
						   "the file ends here",
						   s->path, s->line, column(s),
						   what);
	unsigned char c = (unsigned char)s->text[s->pos];
	if (c >= 0x20 && c < 0x7f)
		return trace_error_set(s->err, "%s:%zu:%zu: %s, found '%c'",
				       s->path, s->line, column(s), what, c);
	return trace_error_set(s->err, "%s:%zu:%zu: %s, found byte 0x%02x "
			       "(not JSON text)", s->path, s->line, column(s),
			       what, c);
}

static void advance(struct scanner *s)
{
	if (s->text[s->pos] == '\n') {
		s->line++;
		s->line_start = offset(s, s->pos) + 1;
	}
	s->pos++;
}

static void skip_ws(struct scanner *s)
{
	while (!at_end(s)) {
		char c = s->text[s->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		advance(s);
	}
}

/* At a backslash in a string: whether the escape is \u0000.  The model
 * holds names as C strings, where it would cut the name short. */
static bool at_nul_escape(struct scanner *s)
{
	ensure(s, 6);
	return s->len - s->pos >= 6 && !memcmp(s->text + s->pos, "\\u0000", 6);
}

/* Moves past one string (at its opening quote), with skip_value's
 * returns.  JSON forbids raw control bytes in a string (a raw newline
 * too): they are refused here, where the position is known. */
static int skip_string(struct scanner *s)
{
	advance(s);
	for (;;) {
		if (at_end(s))
			return s->failed ? -1 : 0;
		unsigned char d = (unsigned char)s->text[s->pos];
		if (d == '\\') {
			if (at_nul_escape(s))
				return syntax_error(s, "\\u0000 in a string (a "
						    "NUL would cut the name "
						    "short)");
			advance(s);
			if (at_end(s))
				return s->failed ? -1 : 0;
		} else if (d == '"') {
			break;
		} else if (d < 0x20) {
			return syntax_error(s, "a control character in a string "
					    "(JSON wants it escaped)");
		} else if (d >= 0x80) {
			ensure(s, 4);
			int n = utf8_sequence_length(
				(const unsigned char *)s->text + s->pos,
				s->len - s->pos);
			if (n < 0)
				return s->failed ? -1 : 0;
			if (n == 0)
				return syntax_error(s, "invalid UTF-8 in a string");
			s->pos += (size_t)n - 1;
		}
		advance(s);
	}
	advance(s);
	return 1;
}

/* Moves past one JSON value.  1: done; 0: the file ended inside it;
 * -1: malformed or unreadable (err set).  Only brackets and strings are
 * checked here; cJSON checks the rest when the value is parsed. */
static int skip_value(struct scanner *s)
{
	char closers[MAX_NESTING];
	int depth = 0;

	do {
		if (at_end(s))
			return s->failed ? -1 : 0;
		char c = s->text[s->pos];
		if (c == '{' || c == '[') {
			if (depth == MAX_NESTING)
				return trace_error_set(s->err, "%s:%zu:%zu: "
						       "nesting deeper than %d",
						       s->path, s->line,
						       column(s), MAX_NESTING);
			closers[depth++] = c == '{' ? '}' : ']';
			advance(s);
		} else if (c == '}' || c == ']') {
			if (!depth || closers[depth - 1] != c)
				return syntax_error(s, depth ? "mismatched "
							 "bracket"
							   : "expected a value");
			depth--;
			advance(s);
		} else if (c == '"') {
			int status = skip_string(s);
			if (status <= 0)
				return status;
		} else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
			   c == ',' || c == ':') {
			if (!depth)
				return syntax_error(s, "expected a value");
			advance(s);
		} else {
			size_t start = offset(s, s->pos);
			while (!at_end(s) &&
			       strchr("+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
				      s->text[s->pos]) &&
			       s->text[s->pos])
				advance(s);
			if (s->failed)
				return -1;
			if (offset(s, s->pos) == start)
				return syntax_error(s, "expected a JSON value");
			/* A bare number at the very end may be cut short. */
			if (!depth && at_end(s))
				return s->failed ? -1 : 0;
		}
	} while (depth);
	return 1;
}

/* Where a value starts: its absolute offset, line and line start.  The
 * window keeps it until the value is parsed. */
struct span_start {
	size_t at, line, line_start;
};

static struct span_start mark(struct scanner *s)
{
	s->keep = offset(s, s->pos);
	return (struct span_start){ s->keep, s->line, s->line_start };
}

/* Parses the input from `from` to pos with cJSON; on error names the
 * position. */
static cJSON *parse_span(struct scanner *s, struct span_start from)
{
	const char *begin = s->text + (from.at - s->base);
	const char *end = NULL;
	size_t length = offset(s, s->pos) - from.at;
	cJSON *value = cJSON_ParseWithLengthOpts(begin, length, &end, 0);

	if (value)
		return value;
	size_t at = end ? (size_t)(end - begin) : 0;
	if (at > length)
		at = 0;
	size_t line = from.line, line_start = from.line_start;
	for (size_t i = 0; i < at; i++)
		if (begin[i] == '\n') {
			line++;
			line_start = from.at + i + 1;
		}
	trace_error_set(s->err, "%s:%zu:%zu: malformed JSON value", s->path,
			line, from.at + at - line_start + 1);
	return NULL;
}

/* The value (or key) from `from` to pos was read whole: a truncated
 * input reads the same again up to here, and the digest covers it. */
static void took_whole(struct scanner *s, struct span_start from)
{
	s->whole_end = offset(s, s->pos);
	if (s->digesting)
		s->digest = s->digest * 0x100000001B3ull ^
			    trace_string_hash(s->text + (from.at - s->base),
					      s->whole_end - from.at);
}

static void (*scan_progress)(size_t done, size_t total);

void trace_scan_set_progress(void (*progress)(size_t done, size_t total))
{
	scan_progress = progress;
}

/* The next byte is c (reading more when needed). */
static bool next_is(struct scanner *s, char c)
{
	return !at_end(s) && s->text[s->pos] == c;
}

/* Refuses a key given twice in an event, in its args or in an object
 * within them (key_set).  The event is one line in amptrace's traces: its
 * line names the key's. */
static int check_event_keys(struct scanner *s, const cJSON *event,
			    size_t index, size_t line)
{
	const cJSON *object;
	const char *key;
	char path[256] = "";

	if (object_with_repeated_key(event, &object, &key) < 0)
		return trace_error_set(s->err, "%s: out of memory reading the "
				       "file", s->path);
	if (!object)
		return 0;
	path_to(event, object, path, sizeof path);
	return trace_error_set(s->err, "%s:%zu: event %zu: the key \"%.60s\" "
			       "is given twice in %s%s (JSON readers disagree "
			       "on which one counts)", s->path, line, index, key,
			       path[0] ? "an event's " : "an event",
			       path[0] ? path + 1 : "");
}

/* Whether the text from `from` to pos holds `word` (NULL: any does). */
static bool holds(const struct scanner *s, struct span_start from,
		  const char *word)
{
	return !word || memmem(s->text + (from.at - s->base),
			       offset(s, s->pos) - from.at, word,
			       strlen(word));
}

/* 1 done, 0 ended early, -1 error. */
static int scan_events(struct scanner *s, const struct trace_scan_handlers *h,
		       struct trace_scan_result *r)
{
	struct span_start bracket = mark(s);
	advance(s); /* '[' */
	took_whole(s, bracket);
	r->has_events = true;
	skip_ws(s);
	if (next_is(s, ']')) {
		advance(s);
		return 1;
	}
	for (;;) {
		skip_ws(s);
		if (at_end(s))
			return s->failed ? -1 : 0;
		struct span_start from = mark(s);
		if (s->text[s->pos] != '{')
			return syntax_error(s, "expected an event object "
					    "('{') in traceEvents");
		int status = skip_value(s);
		if (status <= 0)
			return status;
		took_whole(s, from);
		if (h->event && !holds(s, from, h->only_with)) {
			r->skipped++;
		} else if (h->event) {
			cJSON *event = parse_span(s, from);
			if (!event)
				return -1;
			status = check_event_keys(s, event, r->events,
						  from.line);
			if (status == 0)
				status = h->event(h->ctx, event, r->events,
						  from.line);
			cJSON_Delete(event);
			if (status != 0)
				return -1;
		}
		r->events++;
		if (scan_progress && !(r->events & 4095))
			scan_progress(offset(s, s->pos),
				      s->total ? s->total : offset(s, s->len));
		skip_ws(s);
		if (at_end(s))
			return s->failed ? -1 : 0;
		if (s->text[s->pos] == ']') {
			advance(s);
			return 1;
		}
		if (s->text[s->pos] != ',')
			return syntax_error(s, "expected ',' or ']' after an "
					    "event");
		advance(s);
	}
}

static int ended_early(struct scanner *s, struct trace_scan_result *r)
{
	if (s->failed)
		return -1;
	if (r->amptrace && r->has_events) {
		r->truncated = true;
		r->truncated_line = s->line;
		return 0;
	}
	return trace_error_set(s->err, "%s:%zu:%zu: the file ends in the middle "
			       "of the JSON (truncated)%s", s->path, s->line,
			       column(s),
			       r->amptrace ? " before its traceEvents array"
					   : "");
}

/* Records a top-level key (a copy).  1: new; 0: given before; -1: out
 * of memory.  The set grows: a top level has a few keys, but nothing
 * bounds their number. */
static int top_key_add(struct scanner *s, const char *key)
{
	struct key_set *set = &s->top_keys;

	if (2 * (set->count + 1) > set->size) {
		struct key_set grown = { .size = set->size ? 2 * set->size : 16 };
		grown.slots = calloc(grown.size, sizeof *grown.slots);
		if (!grown.slots)
			return -1;
		for (size_t i = 0; i < set->size; i++)
			if (set->slots[i])
				key_set_add(&grown, set->slots[i]);
		free(set->slots);
		*set = grown;
	}
	char *copy = strdup(key);
	if (!copy)
		return -1;
	if (key_set_add(set, copy))
		return 1;
	free(copy);
	return 0;
}

static void top_keys_free(struct key_set *set)
{
	for (size_t i = 0; i < set->size; i++)
		free((char *)set->slots[i]);
	free(set->slots);
	*set = (struct key_set){ 0 };
}

/* A top-level key given twice is refused (key_set): two traceEvents
 * would be read as one, a second header would replace the first. */
static int check_top_key(struct scanner *s, const char *key,
			 struct span_start at)
{
	int status = top_key_add(s, key);

	if (status < 0)
		return trace_error_set(s->err, "%s: out of memory reading the "
				       "file", s->path);
	if (status > 0)
		return 0;
	return trace_error_set(s->err, "%s:%zu:%zu: the key \"%.60s\" is "
			       "given twice in the top-level object (JSON "
			       "readers disagree on which one counts)", s->path,
			       at.line, at.at - at.line_start + 1, key);
}

/* The header (amptrace) and the trailer (amptraceEnd) are refused for a
 * key given twice at any depth, as an event is; other top-level values
 * are not read. */
static int check_header_keys(struct scanner *s, const char *name,
			     const cJSON *value, struct span_start at)
{
	const cJSON *object;
	const char *key;
	char path[256];
	bool header = !strcmp(name, "amptrace");

	if (!header && strcmp(name, "amptraceEnd"))
		return 0;
	if (object_with_repeated_key(value, &object, &key) < 0)
		return trace_error_set(s->err, "%s: out of memory reading the "
				       "file", s->path);
	if (!object)
		return 0;
	snprintf(path, sizeof path, "%s", name);
	path_to(value, object, path, sizeof path);
	return trace_error_set(s->err, "%s:%zu:%zu: the key \"%.60s\" is "
			       "given twice in the %s (%s; JSON readers "
			       "disagree on which one counts)", s->path,
			       at.line, at.at - at.line_start + 1, key,
			       header ? "header" : "trailer", path);
}

static int scan_object(struct scanner *s, const struct trace_scan_handlers *h,
		       struct trace_scan_result *r)
{
	advance(s); /* '{' */
	for (bool first = true;; first = false) {
		skip_ws(s);
		if (at_end(s))
			return ended_early(s, r);
		if (s->text[s->pos] == '}' && first) {
			advance(s);
			return 0;
		}
		if (s->text[s->pos] != '"')
			return syntax_error(s, "expected a key (a string)");
		struct span_start from = mark(s);
		int status = skip_value(s);
		if (status < 0)
			return -1;
		if (status == 0)
			return ended_early(s, r);
		cJSON *key = parse_span(s, from);
		if (!key)
			return -1;
		took_whole(s, from);
		if (check_top_key(s, cJSON_IsString(key) ? key->valuestring : "",
				  from) != 0) {
			cJSON_Delete(key);
			return -1;
		}
		char name[64];
		snprintf(name, sizeof name, "%s",
			 cJSON_IsString(key) ? key->valuestring : "");
		cJSON_Delete(key);
		skip_ws(s);
		if (at_end(s))
			return ended_early(s, r);
		if (s->text[s->pos] != ':')
			return syntax_error(s, "expected ':' after a key");
		advance(s);
		skip_ws(s);
		if (at_end(s))
			return ended_early(s, r);
		if (!strcmp(name, "traceEvents")) {
			if (s->text[s->pos] != '[')
				return trace_error_set(s->err, "%s:%zu:%zu: "
						       "traceEvents must be an "
						       "array of events",
						       s->path, s->line,
						       column(s));
			status = scan_events(s, h, r);
			if (status < 0)
				return -1;
			if (status == 0)
				return ended_early(s, r);
		} else {
			from = mark(s);
			status = skip_value(s);
			if (status < 0)
				return -1;
			if (status == 0)
				return ended_early(s, r);
			cJSON *value = parse_span(s, from);
			if (!value)
				return -1;
			took_whole(s, from);
			if (check_header_keys(s, name, value, from) != 0) {
				cJSON_Delete(value);
				return -1;
			}
			if (!strcmp(name, "amptrace") && !r->has_events)
				r->amptrace = true;
			status = h->top ? h->top(h->ctx, name, value, from.line)
					: 0;
			cJSON_Delete(value);
			if (status != 0)
				return -1;
		}
		skip_ws(s);
		if (at_end(s))
			return ended_early(s, r);
		if (s->text[s->pos] == '}') {
			advance(s);
			return 0;
		}
		if (s->text[s->pos] != ',')
			return syntax_error(s, "expected ',' or '}' in the "
					    "top-level object");
		advance(s);
	}
}

/* A compressed trace (Perfetto opens a gzip'd one, torch.profiler's
 * tensorboard handler writes .json.gz) is refused with the command that
 * reads it: a pipe is an input like a file. */
static const struct compression {
	const char *magic;
	size_t size;
	const char *name, *decompressor;
} compressions[] = {
	{ "\x1f\x8b", 2, "gzip", "zcat" },
	{ "\x28\xb5\x2f\xfd", 4, "zstd", "zstdcat" },
	{ "\xfd" "7zXZ\0", 6, "xz", "xzcat" },
	{ "BZh", 3, "bzip2", "bzcat" },
};

static int refuse_compressed(struct scanner *s)
{
	char word[1024];

	ensure(s, 6);
	for (size_t i = 0; i < sizeof compressions / sizeof *compressions;
	     i++) {
		const struct compression *c = &compressions[i];
		if (s->len < c->size || memcmp(s->text, c->magic, c->size))
			continue;
		shell_word(word, sizeof word, s->path);
		return trace_error_set(s->err, "%s: compressed with %s, not "
				       "JSON text: give it as <(%s %s)",
				       s->path, c->name, c->decompressor,
				       word);
	}
	return 0;
}

static int scan(struct scanner *s, const struct trace_scan_handlers *h,
		struct trace_scan_result *result)
{
	*result = (struct trace_scan_result){ 0 };
	ensure(s, 3);
	if (s->len >= 3 && !memcmp(s->text, "\xef\xbb\xbf", 3)) {
		s->pos = 3;
		s->line_start = 3;
	}
	skip_ws(s);
	if (at_end(s))
		return s->failed ? -1
				 : trace_error_set(s->err, "%s: empty file (a "
						   "trace is a JSON object "
						   "with a traceEvents array)",
						   s->path);
	if (s->text[s->pos] == '[') {
		result->array_form = true;
		int status = scan_events(s, h, result);
		if (status < 0)
			return -1;
		if (status == 0)
			return ended_early(s, result);
	} else if (s->text[s->pos] == '{') {
		int status = scan_object(s, h, result);
		top_keys_free(&s->top_keys);
		if (status != 0)
			return -1;
		if (result->truncated)
			return 0;
		if (!result->has_events)
			return trace_error_set(s->err, "%s: no traceEvents "
					       "array (not a Chrome/Perfetto "
					       "JSON trace)", s->path);
	} else {
		if (offset(s, s->pos) == 0 && refuse_compressed(s) != 0)
			return -1;
		return syntax_error(s, "expected a trace: a JSON object "
				    "('{') or array ('[')");
	}
	s->keep = offset(s, s->pos);
	skip_ws(s);
	if (!at_end(s))
		return syntax_error(s, "expected the end of the file after "
				    "the trace");
	return s->failed ? -1 : 0;
}

/* scan, as the handlers ask: up to their stop_at, with their digest. */
static int scan_with(struct scanner *s, const struct trace_scan_handlers *h,
		     struct trace_scan_result *result)
{
	s->stop_at = h->stop_at ? h->stop_at : SIZE_MAX;
	s->digesting = h->digest;
	int status = scan(s, h, result);
	result->whole_end = s->whole_end;
	result->digest = s->digest;
	return status;
}

int trace_scan(const char *path, const char *text, size_t len,
	       const struct trace_scan_handlers *h,
	       struct trace_scan_result *result, struct trace_error *err)
{
	struct scanner s = { .path = path, .text = (char *)text, .len = len,
			     .line = 1, .err = err, .fd = -1 };

	if (h->stop_at && h->stop_at < len)
		s.len = h->stop_at;
	return scan_with(&s, h, result);
}

int trace_scan_file(const char *path, const struct trace_scan_handlers *h,
		    struct trace_scan_result *result, struct trace_error *err)
{
	struct stat st;
	size_t limit;
	int fd = open_input(path, &limit, err);

	*result = (struct trace_scan_result){ 0 };
	if (fd < 0)
		return -1;
	struct scanner s = { .path = path, .line = 1, .err = err, .fd = fd,
			     .cap = TRACE_SCAN_WINDOW, .text = malloc(TRACE_SCAN_WINDOW) };
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		s.total = (size_t)st.st_size;
	int status = s.text ? scan_with(&s, h, result)
			    : trace_error_set(err, "%s: out of memory reading "
					      "the file", path);
	free(s.text);
	close(fd);
	return status;
}
