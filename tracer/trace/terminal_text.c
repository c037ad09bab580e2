/* The filter between the text printers and stdout, stderr
 * (terminal_text.h). */
#include "terminal_text.h"

#include "utf8.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static bool is_control(unsigned char c)
{
	return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
}

/* Characters a terminal must not be handed as they are, beyond the
 * single-byte controls: UTF-8's C1 controls (U+0080-U+009F, 0xc2 and a
 * byte up to 0x9f: CSI is U+009B; some terminals obey them as their ESC
 * sequences) and the bidi controls, which reorder the rest of the line
 * (U+061C; U+200E-U+200F; U+202A-U+202E; U+2066-U+2069).  Whether the
 * n bytes at seq are one, whole. */
static bool is_hidden(const unsigned char *seq, size_t n)
{
	if (n == 2)
		return (seq[0] == 0xc2 && seq[1] >= 0x80 && seq[1] <= 0x9f) ||
		       (seq[0] == 0xd8 && seq[1] == 0x9c);
	if (n != 3 || seq[0] != 0xe2)
		return false;
	if (seq[1] == 0x80)
		return seq[2] == 0x8e || seq[2] == 0x8f ||
		       (seq[2] >= 0xaa && seq[2] <= 0xae);
	return seq[1] == 0x81 && seq[2] >= 0xa6 && seq[2] <= 0xa9;
}

/* Whether the n bytes at seq may begin one of them. */
static bool may_begin_hidden(const unsigned char *seq, size_t n)
{
	if (n == 1)
		return seq[0] == 0xc2 || seq[0] == 0xd8 || seq[0] == 0xe2;
	return n == 2 && seq[0] == 0xe2 && (seq[1] == 0x80 || seq[1] == 0x81);
}

/* The held bytes as text: the marker as '?', the digits as they are. */
static size_t release(struct terminal_filter *f, char *out)
{
	size_t n = f->npending;

	if (n) {
		out[0] = '?';
		memcpy(out + 1, f->pending + 1, n - 1);
	}
	f->npending = 0;
	return n;
}

/* The held digits are one of the palette's (terminal_text.h). */
static bool in_palette(const struct terminal_filter *f)
{
	static const char *const palette[] = { TERMINAL_RED, TERMINAL_YELLOW,
					       TERMINAL_CYAN, TERMINAL_PLAIN };

	for (size_t i = 0; i < sizeof palette / sizeof *palette; i++)
		if (strlen(palette[i]) == f->npending + 1 &&
		    !memcmp(palette[i], f->pending, f->npending))
			return true;
	return false;
}

/* The held colour, finished by its 'm', as the terminal's ESC '['. */
static size_t colour(struct terminal_filter *f, char *out)
{
	out[0] = '\033';
	out[1] = '[';
	memcpy(out + 2, f->pending + 1, f->npending - 1);
	out[f->npending + 1] = 'm';
	size_t n = f->npending + 2;
	f->npending = 0;
	return n;
}

size_t terminal_filter(struct terminal_filter *f, const char *in, size_t n,
		       char *out)
{
	size_t written = 0;

	if (!in) {
		written = release(f, out);
		memcpy(out + written, f->held, f->nheld);
		written += f->nheld;
		f->nheld = 0;
		return written;
	}
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		if (f->nheld) {
			unsigned char seq[3];
			memcpy(seq, f->held, f->nheld);
			seq[f->nheld] = (unsigned char)c;
			size_t nseq = f->nheld + 1;
			if (is_hidden(seq, nseq)) {
				out[written++] = '?';
				f->nheld = 0;
				continue;
			}
			if (may_begin_hidden(seq, nseq)) {
				memcpy(f->held, seq, nseq);
				f->nheld = nseq;
				continue;
			}
			/* not one: the held bytes as they are, c on its own */
			memcpy(out + written, f->held, f->nheld);
			written += f->nheld;
			f->nheld = 0;
		}
		if (f->npending) {
			if (c == 'm' && in_palette(f)) {
				written += colour(f, out + written);
				continue;
			}
			if (((c >= '0' && c <= '9') || c == ';') &&
			    f->npending < sizeof f->pending) {
				f->pending[f->npending++] = c;
				continue;
			}
			written += release(f, out + written);
		}
		if (c == TERMINAL_COLOUR[0] && f->colours)
			f->pending[f->npending++] = c;
		else if (may_begin_hidden((const unsigned char *)&c, 1))
			f->held[f->nheld++] = (unsigned char)c;
		else if (c == TERMINAL_COLOUR[0] || is_control((unsigned char)c))
			out[written++] = '?';
		else
			out[written++] = c;
	}
	return written;
}

void terminal_text_clean(char *text)
{
	unsigned char *to = (unsigned char *)text;
	const unsigned char *c = (unsigned char *)text;

	while (*c) {
		int n = *c < 0x80 ? 1 : utf8_sequence_length(c, strnlen((char *)c, 4));
		if (n <= 0) { /* not UTF-8: cut short, or an argument's */
			*to++ = '?';
			c++;
		} else if (is_hidden(c, (size_t)n)) {
			*to++ = '?';
			c += n;
		} else if (n == 1) {
			*to++ = is_control(*c) ? '?' : *c;
			c++;
		} else {
			memmove(to, c, (size_t)n);
			to += n;
			c += n;
		}
	}
	*to = '\0';
}

struct filtered_stream {
	struct terminal_filter filter;
	int fd;
};

static int write_all(int fd, const char *bytes, size_t n)
{
	while (n) {
		ssize_t got = write(fd, bytes, n);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -1;
		bytes += got;
		n -= (size_t)got;
	}
	return 0;
}

#define FILTER_CHUNK 4096

static ssize_t filtered_write(void *cookie, const char *in, size_t n)
{
	struct filtered_stream *s = cookie;
	char out[2 * FILTER_CHUNK + sizeof s->filter.pending];

	for (size_t done = 0; done < n;) {
		size_t chunk = n - done < FILTER_CHUNK ? n - done : FILTER_CHUNK;
		size_t len = terminal_filter(&s->filter, in + done, chunk, out);
		if (write_all(s->fd, out, len) != 0)
			return -1;
		done += chunk;
	}
	return (ssize_t)n;
}

static int filtered_close(void *cookie)
{
	struct filtered_stream *s = cookie;
	char out[sizeof s->filter.pending + sizeof s->filter.held];

	return write_all(s->fd, out, terminal_filter(&s->filter, NULL, 0, out));
}

/* A stream that writes fd's bytes through state's filter, or NULL. */
static FILE *filtered_stream(struct filtered_stream *state)
{
	cookie_io_functions_t io = { .write = filtered_write,
				     .close = filtered_close };

	return fopencookie(state, "w", io);
}

/* stdout's filter: its palette is '?' until a command asks for colours. */
static struct filtered_stream stdout_state = { .fd = STDOUT_FILENO };

int terminal_filter_stdout(void)
{
	FILE *filtered = filtered_stream(&stdout_state);

	if (!filtered)
		return -1;
	/* as stdout: line by line to a terminal, so that it interleaves
	 * with stderr as a user reads it */
	if (isatty(STDOUT_FILENO))
		setvbuf(filtered, NULL, _IOLBF, 0);
	fflush(stdout);
	stdout = filtered;
	return 0;
}

void terminal_stdout_colours(void)
{
	stdout_state.filter.colours = true;
}

static FILE *raw_stderr;
static struct filtered_stream stderr_state = { .fd = STDERR_FILENO };

/* stderr is never closed: what its filter holds (a 0xc2 that may have
 * begun a C1 control, an unfinished colour) is let go at exit. */
static void release_stderr(void)
{
	char out[sizeof stderr_state.filter.pending + 1];

	write_all(STDERR_FILENO, out,
		  terminal_filter(&stderr_state.filter, NULL, 0, out));
}

int terminal_filter_stderr(void)
{
	FILE *filtered = filtered_stream(&stderr_state);

	if (!filtered)
		return -1;
	/* each message whole as it is printed, as stderr writes it: a
	 * message is never held back behind a crash or a child's output */
	setvbuf(filtered, NULL, _IONBF, 0);
	fflush(stderr);
	raw_stderr = stderr;
	stderr = filtered;
	atexit(release_stderr);
	return 0;
}

FILE *terminal_raw_stderr(void)
{
	return raw_stderr ? raw_stderr : stderr;
}
