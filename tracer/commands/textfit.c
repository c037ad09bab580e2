/* Wrapping and colour decisions for text output (textfit.h). */
#include "textfit.h"

#include "terminal_text.h"

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

size_t textfit_columns(const char *s, size_t len)
{
	size_t columns = 0;

	for (size_t i = 0; i < len;) {
		size_t esc = escape_length(s + i, len - i);
		if (esc) {
			i += esc;
			continue;
		}
		/* a UTF-8 continuation byte is part of the previous column */
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			columns++;
		i++;
	}
	return columns;
}

/* The byte offset where LINE's first WIDTH columns end. */
static size_t offset_of_column(const char *line, size_t len, size_t width)
{
	size_t columns = 0, i = 0;

	while (i < len) {
		size_t esc = escape_length(line + i, len - i);
		if (esc) {
			i += esc;
			continue;
		}
		if (((unsigned char)line[i] & 0xc0) != 0x80) {
			if (columns == width)
				break;
			columns++;
		}
		i++;
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
	int n = (int)strlen(label);

	if (n <= width)
		fprintf(out, "%-*s", pad ? width : 0, label);
	else
		fprintf(out, "%.*s...", width - 3, label);
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
