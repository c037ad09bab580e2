/* Text for a terminal carries no control characters from a trace.  A
 * trace's strings (op names, categories, args) are JSON, where
 * "x\u001b]0;pwned\u0007" is a valid name: printed as it is, it would set
 * the terminal's title, move its cursor or write its clipboard.  The
 * model keeps names faithful (merge and the --json outputs write them back
 * JSON-escaped, so they hold no raw control bytes), and the text printers
 * print them as they are; stdout and stderr are filtered once instead, in
 * each main (amptrace's, ampview's), so no printer can forget it. */
#ifndef AMPTRACE_TERMINAL_TEXT_H
#define AMPTRACE_TERMINAL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* amptrace's own colours: TERMINAL_COLOUR "1;31m" for ESC "[1;31m".  The
 * byte 0xff is never in UTF-8 text and the reader refuses a trace that is
 * not UTF-8, so no trace can write it: the filter makes it ESC '[', and
 * turns every ESC (a trace's) into '?'.  An argument or a path can hold
 * 0xff, so only the palette below is a colour, only on stdout, and only
 * once a command asks for colours (terminal_stdout_colours): any other
 * 0xff is '?'. */
#define TERMINAL_COLOUR "\xff"
#define TERMINAL_RED TERMINAL_COLOUR "1;31m"
#define TERMINAL_YELLOW TERMINAL_COLOUR "33m"
#define TERMINAL_CYAN TERMINAL_COLOUR "36m"
#define TERMINAL_PLAIN TERMINAL_COLOUR "0m"

/* Where a filter is inside a colour, across writes. */
struct terminal_filter {
	char pending[16]; /* TERMINAL_COLOUR and the digits after it */
	size_t npending;
	/* the first bytes of what may be a hidden character (a C1 control,
	 * or a bidi control), held until the next byte tells */
	unsigned char held[2];
	size_t nheld;
	bool colours;     /* the palette as colours (stdout), else '?' */
};

/* Copies n bytes of in to out (room for 2 n + sizeof f->pending), each
 * control character but '\n' and '\t' (C0, DEL, and UTF-8's C1
 * U+0080-U+009F) replaced by '?', each bidi control too (U+061C,
 * U+200E-U+200F, U+202A-U+202E, U+2066-U+2069: a name holding one would
 * reorder the line it is printed on, as in "Trojan Source"), and
 * each colour of the palette, with f->colours, by its ESC '[' sequence;
 * any other 0xff is '?'.  An unfinished colour is held in f for the next
 * call; in NULL (n 0) lets it go, as '?' and its digits.  Returns the
 * bytes written to out. */
size_t terminal_filter(struct terminal_filter *f, const char *in, size_t n,
		       char *out);

/* Replaces each control character of text ('\n' and '\t' kept) and each
 * bidi control by '?', in place, as terminal_filter does, and each byte that is not UTF-8 too
 * (a name cut short by a "%.40s", a path's): for a message built before
 * it is printed (trace_error_set's), which may go on into a page or into
 * check's JUnit XML, where it must be UTF-8. */
void terminal_text_clean(char *text);

/* Makes stdout a stream that writes through terminal_filter (stdout must
 * then be closed, not only flushed, for the last bytes), the palette as
 * '?'.  Returns 0, or -1 (stdout left as it was). */
int terminal_filter_stdout(void);

/* Lets the palette through stdout's filter as colours, for a command
 * that colours its text (summary --color).  Its arguments' bytes (a
 * path) must then go out cleaned (terminal_text_clean), or a path holding
 * the palette's bytes would be a colour. */
void terminal_stdout_colours(void);

/* The same for stderr, unbuffered as stderr is: every message that
 * quotes a trace's name, a path or an argument goes through it.  What
 * the filter holds at exit is written then. */
int terminal_filter_stderr(void);

/* The stream stderr was before terminal_filter_stderr: the one writer
 * of control characters of its own on stderr (progress.h's carriage
 * return and erase), which cleans its text with terminal_text_clean. */
FILE *terminal_raw_stderr(void);

#endif
