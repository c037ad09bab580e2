/* Fitting text output to a terminal's width: long lines are wrapped at
 * spaces (or cut inside a word longer than a line), continuation lines
 * indented under the first; amptrace's colours (terminal_text.h) take
 * no column. */
#ifndef AMPTRACE_TEXTFIT_H
#define AMPTRACE_TEXTFIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* summary's width: fits a 100-column terminal or CI log. */
#define TEXTFIT_WIDTH 100

/* Writes TEXT (LEN bytes, lines ending in '\n') to OUT, each line wrapped
 * to at most WIDTH columns. */
void textfit_write(FILE *out, const char *text, size_t len, int width);

/* Columns S takes: UTF-8 characters, amptrace's colours none. */
size_t textfit_columns(const char *s, size_t len);

/* --color=WHEN: "always", "never" or "auto" (stdout is a terminal and
 * NO_COLOR is unset or empty).  Returns -1 for any other WHEN. */
int textfit_color(const char *when, bool *color);

/* LABEL in WIDTH columns (padded when PAD), cut short with "..." when
 * longer. */
void textfit_cell(FILE *out, const char *label, int width, bool pad);

/* LABEL padded to WIDTH columns; a longer one whole, the row pushed
 * right. */
void textfit_pad(FILE *out, const char *label, int width);

/* US microseconds as "1.500 ms" (us, ms or s) in BUF. */
const char *textfit_duration(double us, char *buf, size_t size);

#endif
