/* Streaming walk over a trace file's JSON (see trace_scan.h). */
#include "trace_scan.h"

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

struct scanner {
	const char *path;
	const char *text;
	size_t len;
	size_t pos;
	size_t line;        /* 1-based line of text[pos] */
	size_t line_start;  /* offset of that line's first byte */
	struct trace_error *err;
};

static size_t column(const struct scanner *s)
{
	return s->pos - s->line_start + 1;
}

static int syntax_error(struct scanner *s, const char *what)
{
	if (s->pos >= s->len)
		return trace_error_set(s->err, "%s:%zu:%zu: %s, but the file "
				       "ends here", s->path, s->line, column(s),
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
		s->line_start = s->pos + 1;
	}
	s->pos++;
}

static void skip_ws(struct scanner *s)
{
	while (s->pos < s->len) {
		char c = s->text[s->pos];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			break;
		advance(s);
	}
}

/* Moves past one JSON value.  1: done; 0: the file ended inside it;
 * -1: malformed (err set).  Only brackets and strings are checked here;
 * cJSON checks the rest when the value is parsed. */
static int skip_value(struct scanner *s)
{
	char closers[MAX_NESTING];
	int depth = 0;

	do {
		if (s->pos >= s->len)
			return 0;
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
			advance(s);
			for (;;) {
				if (s->pos >= s->len)
					return 0;
				char d = s->text[s->pos];
				if (d == '\\') {
					advance(s);
					if (s->pos >= s->len)
						return 0;
				} else if (d == '"') {
					break;
				} else if ((unsigned char)d >= 0x80) {
					int n = utf8_sequence_length(
						(const unsigned char *)s->text +
							s->pos,
						s->len - s->pos);
					if (n < 0)
						return 0;
					if (n == 0)
						return syntax_error(
							s, "invalid UTF-8 in a "
							   "string");
					s->pos += (size_t)n - 1;
				}
				advance(s);
			}
			advance(s);
		} else if (c == ' ' || c == '\t' || c == '\n' || c == '\r' ||
			   c == ',' || c == ':') {
			if (!depth)
				return syntax_error(s, "expected a value");
			advance(s);
		} else {
			size_t start = s->pos;
			while (s->pos < s->len &&
			       strchr("+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ",
				      s->text[s->pos]) &&
			       s->text[s->pos])
				advance(s);
			if (s->pos == start)
				return syntax_error(s, "expected a JSON value");
			/* A bare number at the very end may be cut short. */
			if (!depth && s->pos >= s->len)
				return 0;
		}
	} while (depth);
	return 1;
}

/* Parses text[start, s->pos) with cJSON; on error names the position. */
static cJSON *parse_span(struct scanner *s, size_t start, size_t line,
			 size_t line_start)
{
	const char *end = NULL;
	cJSON *value = cJSON_ParseWithLengthOpts(s->text + start, s->pos - start,
						 &end, 0);

	if (value)
		return value;
	size_t at = end ? (size_t)(end - s->text) : start;
	if (at < start || at > s->pos)
		at = start;
	for (size_t i = start; i < at; i++)
		if (s->text[i] == '\n') {
			line++;
			line_start = i + 1;
		}
	trace_error_set(s->err, "%s:%zu:%zu: malformed JSON value", s->path,
			line, at - line_start + 1);
	return NULL;
}

static void (*scan_progress)(size_t done, size_t total);

void trace_scan_set_progress(void (*progress)(size_t done, size_t total))
{
	scan_progress = progress;
}

/* 1 done, 0 ended early, -1 error. */
static int scan_events(struct scanner *s, const struct trace_scan_handlers *h,
		       struct trace_scan_result *r)
{
	advance(s); /* '[' */
	r->has_events = true;
	skip_ws(s);
	if (s->pos < s->len && s->text[s->pos] == ']') {
		advance(s);
		return 1;
	}
	for (;;) {
		skip_ws(s);
		if (s->pos >= s->len)
			return 0;
		size_t start = s->pos, line = s->line, line_start = s->line_start;
		if (s->text[start] != '{')
			return syntax_error(s, "expected an event object "
					    "('{') in traceEvents");
		int status = skip_value(s);
		if (status <= 0)
			return status;
		if (h->event) {
			cJSON *event = parse_span(s, start, line, line_start);
			if (!event)
				return -1;
			status = h->event(h->ctx, event, r->events, line);
			cJSON_Delete(event);
			if (status != 0)
				return -1;
		}
		r->events++;
		if (scan_progress && !(r->events & 4095))
			scan_progress(s->pos, s->len);
		skip_ws(s);
		if (s->pos >= s->len)
			return 0;
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

static int scan_object(struct scanner *s, const struct trace_scan_handlers *h,
		       struct trace_scan_result *r)
{
	advance(s); /* '{' */
	for (bool first = true;; first = false) {
		skip_ws(s);
		if (s->pos >= s->len)
			return ended_early(s, r);
		if (s->text[s->pos] == '}' && first) {
			advance(s);
			return 0;
		}
		if (s->text[s->pos] != '"')
			return syntax_error(s, "expected a key (a string)");
		size_t start = s->pos, line = s->line, line_start = s->line_start;
		int status = skip_value(s);
		if (status < 0)
			return -1;
		if (status == 0)
			return ended_early(s, r);
		cJSON *key = parse_span(s, start, line, line_start);
		if (!key)
			return -1;
		char name[64];
		snprintf(name, sizeof name, "%s",
			 cJSON_IsString(key) ? key->valuestring : "");
		cJSON_Delete(key);
		skip_ws(s);
		if (s->pos >= s->len)
			return ended_early(s, r);
		if (s->text[s->pos] != ':')
			return syntax_error(s, "expected ':' after a key");
		advance(s);
		skip_ws(s);
		if (s->pos >= s->len)
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
			start = s->pos;
			line = s->line;
			line_start = s->line_start;
			status = skip_value(s);
			if (status < 0)
				return -1;
			if (status == 0)
				return ended_early(s, r);
			cJSON *value = parse_span(s, start, line, line_start);
			if (!value)
				return -1;
			if (!strcmp(name, "amptrace") && !r->has_events)
				r->amptrace = true;
			status = h->top ? h->top(h->ctx, name, value, line) : 0;
			cJSON_Delete(value);
			if (status != 0)
				return -1;
		}
		skip_ws(s);
		if (s->pos >= s->len)
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

int trace_scan(const char *path, const char *text, size_t len,
	       const struct trace_scan_handlers *h,
	       struct trace_scan_result *result, struct trace_error *err)
{
	struct scanner s = { .path = path, .text = text, .len = len,
			     .line = 1, .err = err };

	*result = (struct trace_scan_result){ 0 };
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		s.pos = s.line_start = 3;
	skip_ws(&s);
	if (s.pos >= s.len)
		return trace_error_set(err, "%s: empty file (a trace is a JSON "
				       "object with a traceEvents array)",
				       path);
	if (text[s.pos] == '[') {
		result->array_form = true;
		int status = scan_events(&s, h, result);
		if (status < 0)
			return -1;
		if (status == 0)
			return ended_early(&s, result);
	} else if (text[s.pos] == '{') {
		if (scan_object(&s, h, result) != 0)
			return -1;
		if (result->truncated)
			return 0;
		if (!result->has_events)
			return trace_error_set(err, "%s: no traceEvents array "
					       "(not a Chrome/Perfetto JSON "
					       "trace)", path);
	} else {
		return syntax_error(&s, "expected a trace: a JSON object "
				    "('{') or array ('[')");
	}
	skip_ws(&s);
	if (s.pos < s.len)
		return syntax_error(&s, "expected the end of the file after "
				    "the trace");
	return 0;
}
