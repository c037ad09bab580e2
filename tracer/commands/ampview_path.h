/* Where ampview is: the program `amptrace run --svg` and `amptrace
 * report` run to draw a trace's graph. */
#ifndef AMPTRACE_AMPVIEW_PATH_H
#define AMPTRACE_AMPVIEW_PATH_H

#include <stddef.h>

/* ampview next to amptrace (installed), in ../viewer (build tree), or on
 * PATH, into buf; NULL when not found. */
const char *find_ampview(char *buf, size_t size);

#endif /* AMPTRACE_AMPVIEW_PATH_H */
