/* Wrapping and colour decisions for text output (textfit.h). */
#include "textfit.h"

#include "terminal_text.h"
#include "utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Bytes of amptrace's colour at S (TERMINAL_COLOUR "...m"), 0 when
 * none.  A trace's ESC is no colour: stdout shows it as '?'. */
static size_t escape_length(const char *s, size_t len)
{
	size_t i = 1;

	if (len < 1 || s[0] != TERMINAL_COLOUR[0])
		return 0;
	while (i < len && !(s[i] >= 0x40 && s[i] <= 0x7e))
		i++;
	return i < len ? i + 1 : len;
}

/* Whether code point C is East Asian Wide or Fullwidth: the blocks of
 * Unicode's EastAsianWidth.txt (W, F) that names and labels use (CJK,
 * kana, Hangul, fullwidth forms, the common emoji), two columns on a
 * terminal.  Without the locale's wcwidth: LANG=C must align alike. */
static bool is_wide(uint32_t c)
{
	return (c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0x303e) ||
	       (c >= 0x3041 && c <= 0x33ff) || (c >= 0x3400 && c <= 0x4dbf) ||
	       (c >= 0x4e00 && c <= 0x9fff) || (c >= 0xa000 && c <= 0xa4cf) ||
	       (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) ||
	       (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff60) ||
	       (c >= 0xffe0 && c <= 0xffe6) ||
	       (c >= 0x1f300 && c <= 0x1f64f) ||
	       (c >= 0x1f680 && c <= 0x1f6c5) ||
	       (c >= 0x1f900 && c <= 0x1f9ff) ||
	       (c >= 0x1fa70 && c <= 0x1faff) ||
	       (c >= 0x20000 && c <= 0x3fffd);
}

/* Whether C takes no column of its own: a combining mark (drawn on the
 * character before it) or a zero-width space or joiner. */
static bool is_zero_width(uint32_t c)
{
	return (c >= 0x0300 && c <= 0x036f) || (c >= 0x1ab0 && c <= 0x1aff) ||
	       (c >= 0x1dc0 && c <= 0x1dff) || (c >= 0x200b && c <= 0x200f) ||
	       (c >= 0x20d0 && c <= 0x20ff) || (c >= 0xfe00 && c <= 0xfe0f) ||
	       (c >= 0xfe20 && c <= 0xfe2f);
}

/* The text unit at S (LEN > 0 bytes): one of amptrace's colours, one
 * UTF-8 character, or one byte that is neither (the terminal filter
 * shows it as '?').  Returns its bytes; *columns is what it takes. */
static size_t next_unit(const char *s, size_t len, size_t *columns)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t esc = escape_length(s, len);
	int n = u[0] < 0x80 ? 1 : utf8_sequence_length(u, len);

	if (esc) {
		*columns = 0;
		return esc;
	}
	if (n <= 1) {
		*columns = 1;
		return 1;
	}
	uint32_t c = u[0] & (0x7f >> n);
	for (int i = 1; i < n; i++)
		c = c << 6 | (u[i] & 0x3f);
	*columns = is_zero_width(c) ? 0 : is_wide(c) ? 2 : 1;
	return (size_t)n;
}

size_t textfit_columns(const char *s, size_t len)
{
	size_t columns = 0, taken;

	for (size_t i = 0; i < len; columns += taken)
		i += next_unit(s + i, len - i, &taken);
	return columns;
}

/* The byte offset where LINE's first WIDTH columns end: no character
 * is split, and one that would cross WIDTH is left out whole. */
static size_t offset_of_column(const char *line, size_t len, size_t width)
{
	size_t columns = 0, i = 0;

	while (i < len) {
		size_t taken, n = next_unit(line + i, len - i, &taken);
		if (columns + taken > width)
			break;
		columns += taken;
		i += n;
	}
	return i;
}

static void fit_line(FILE *out, const char *line, size_t len, int width)
{
	size_t indent = 0;

	while (indent < len && line[indent] == ' ')
		indent++;
	/* continuation lines go 4 columns right of the first, so that they
	 * read as one item; never so far that nothing fits */
	size_t half = (size_t)width / 2;
	size_t cont = indent + 4 < half ? indent + 4 : indent < half ? indent : 0;
	size_t lead = 0;  /* the indent of the piece being written */
	while (textfit_columns(line, len) + lead > (size_t)width) {
		size_t room = (size_t)width - lead;
		size_t cut = offset_of_column(line, len, room);
		size_t brk = cut;
		/* break at the last space that fits, past the indent */
		while (brk > indent && line[brk] != ' ')
			brk--;
		if (brk <= indent)
			brk = cut;
		fprintf(out, "%*s%.*s\n", (int)lead, "", (int)brk, line);
		while (brk < len && line[brk] == ' ')
			brk++;
		line += brk;
		len -= brk;
		lead = cont;
		indent = 0;
	}
	fprintf(out, "%*s%.*s\n", (int)lead, "", (int)len, line);
}

void textfit_write(FILE *out, const char *text, size_t len, int width)
{
	while (len) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;
		fit_line(out, text, n, width);
		if (!nl)
			break;
		text += n + 1;
		len -= n + 1;
	}
}

int textfit_color(const char *when, bool *color)
{
	if (!strcmp(when, "always")) {
		*color = true;
	} else if (!strcmp(when, "never")) {
		*color = false;
	} else if (!strcmp(when, "auto")) {
		const char *no_color = getenv("NO_COLOR");
		*color = isatty(STDOUT_FILENO) && !(no_color && no_color[0]);
	} else {
		return -1;
	}
	return 0;
}

void textfit_cell(FILE *out, const char *label, int width, bool pad)
{
	size_t len = strlen(label), columns = textfit_columns(label, len);

	if (columns <= (size_t)width) {
		fputs(label, out);
	} else {
		size_t room = width > 3 ? (size_t)width - 3 : 0;
		size_t cut = offset_of_column(label, len, room);
		fprintf(out, "%.*s...", (int)cut, label);
		columns = textfit_columns(label, cut) + 3;
	}
	if (pad)
		textfit_pad(out, "", width - (int)columns);
}

void textfit_pad(FILE *out, const char *label, int width)
{
	size_t columns = textfit_columns(label, strlen(label));

	fputs(label, out);
	if (width > 0 && columns < (size_t)width)
		fprintf(out, "%*s", width - (int)columns, "");
}

const char *textfit_duration(double us, char *buf, size_t size)
{
	if (us >= 1e6)
		snprintf(buf, size, "%.3f s", us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, size, "%.3f ms", us / 1e3);
	else
		snprintf(buf, size, "%.3f us", us);
	return buf;
}
