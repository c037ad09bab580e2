/* A progress line for long work (amptrace run; reading a big trace), in
 * the manner of tqdm and rich: one line
 * on stderr, rewritten in place (carriage return, then erase to the end
 * of the line), only on a terminal, so pipes and CI logs never get it
 * unless AMPTRACE_PROGRESS=1 asks.  The cursor is left at the start of
 * the line: a program sharing the terminal (amptrace run) writes over it
 * rather than after it, and the next draw rewrites its own line. */
#include "progress.h"
#include "terminal_text.h"
#include "trace_scan.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Redraws at most this often: a terminal is slow, and the eye slower. */
#define PROGRESS_INTERVAL_NS (250 * 1000 * 1000)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void progress_init(struct progress *p, bool quiet)
{
	const char *asked = getenv("AMPTRACE_PROGRESS");
	const char *term = getenv("TERM");

	*p = (struct progress){ 0 };
	if (asked && *asked)
		p->on = strcmp(asked, "0") != 0;
	else
		p->on = !quiet && isatty(STDERR_FILENO) &&
			!(term && !strcmp(term, "dumb"));
	/* the first line after a second: short work shows none */
	p->next_ns = now_ns() + 4 * PROGRESS_INTERVAL_NS;
}

/* The terminal's width, 80 when it has none. */
static int columns(void)
{
	struct winsize ws;

	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1)
		return ws.ws_col;
	return 80;
}

bool progress_due(const struct progress *p)
{
	return p->on && now_ns() >= p->next_ns;
}

void progress_draw(struct progress *p, const char *format, ...)
{
	char line[512];
	va_list ap;

	if (!p->on)
		return;
	uint64_t now = now_ns();
	if (now < p->next_ns)
		return;
	p->next_ns = now + PROGRESS_INTERVAL_NS;
	va_start(ap, format);
	int n = vsnprintf(line, sizeof line, format, ap);
	va_end(ap);
	if (n < 0)
		return;
	/* the line names a trace: its control characters are not ours */
	terminal_text_clean(line);
	n = (int)strlen(line);
	/* one column short: a full line would wrap on some terminals */
	int width = columns() - 1;
	FILE *out = terminal_raw_stderr();
	fprintf(out, "\r%.*s\033[K\r", n < width ? n : width, line);
	fflush(out);
	p->drawn = true;
}

void progress_clear(struct progress *p)
{
	if (!p->drawn)
		return;
	FILE *out = terminal_raw_stderr();
	fputs("\r\033[K", out);
	fflush(out);
	p->drawn = false;
}

/* The reading in progress: one at a time (each command reads its trace
 * once). */
static struct progress reading;
static char reading_label[512];

static void draw_reading(size_t done, size_t total)
{
	bool gigabytes = total >= 1000 * 1000 * 1000;
	progress_draw(&reading, "%s, %.0f%% of %.*f %s", reading_label,
		      total ? 100.0 * (double)done / (double)total : 100.0,
		      gigabytes, (double)total / (gigabytes ? 1e9 : 1e6),
		      gigabytes ? "GB" : "MB");
}

void progress_reading(const char *who, const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0 || st.st_size < PROGRESS_BIG_FILE)
		return;
	progress_init(&reading, false);
	if (!reading.on)
		return;
	snprintf(reading_label, sizeof reading_label, "%s: reading %s", who,
		 path);
	trace_scan_set_progress(draw_reading);
}

void progress_reading_done(void)
{
	trace_scan_set_progress(NULL);
	progress_clear(&reading);
}
