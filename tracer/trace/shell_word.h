/* A path as one word of a shell command a message tells the user to run
 * (`<(zcat 'my trace.json.gz')`, `amptrace merge ...`): in single quotes
 * unless every byte is one that needs none, so that it stays one word. */
#ifndef AMPTRACE_SHELL_WORD_H
#define AMPTRACE_SHELL_WORD_H

#include <stddef.h>

/* `path` so quoted into BUF (SIZE bytes; a path too long is cut, still
 * quoted). */
void shell_word(char *buf, size_t size, const char *path);

#endif
