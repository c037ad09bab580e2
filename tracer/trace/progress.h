/* One progress line on stderr, rewritten in place (progress.c). */
#ifndef AMPTRACE_PROGRESS_H
#define AMPTRACE_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct progress {
	bool on;
	bool drawn;        /* a line is on the screen */
	uint64_t next_ns;  /* when the next draw may happen */
};

/* On when stderr is a terminal (not TERM=dumb) and not `quiet`;
 * AMPTRACE_PROGRESS=1 turns it on anywhere, =0 off. */
void progress_init(struct progress *p, bool quiet);
/* Whether a draw now would show: the caller's cue to gather what it
 * shows. */
bool progress_due(const struct progress *p);
/* Draws the line (printf format), at most a few times a second; cut to
 * the terminal's width. */
void progress_draw(struct progress *p, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
/* Removes the line, leaving the cursor where it was before the first
 * draw: what follows is printed as if there had been none. */
void progress_clear(struct progress *p);

/* While a trace file of over PROGRESS_BIG_FILE bytes is read (summary,
 * report, ampview): "WHO: reading PATH, 42% of 1.3 GB" on a terminal.
 * Call before trace_load(), and progress_reading_done() after it. */
#define PROGRESS_BIG_FILE (100 * 1000 * 1000)
void progress_reading(const char *who, const char *path);
void progress_reading_done(void);

#endif /* AMPTRACE_PROGRESS_H */
