/* The tracer's big arrays (a kept trace's events, the text of its flows,
 * the index's maps) fill fresh memory as fast as they are written, and a
 * fault per 4 KiB page was a fifth of `amptrace run`'s time after the
 * program ended: these ask for transparent huge pages instead (a fault
 * per 2 MiB), where the kernel gives them (THP "madvise" or "always"). */
#ifndef AMPTRACE_BIGMEM_H
#define AMPTRACE_BIGMEM_H

#include <stddef.h>

/* Below this, an array is left as malloc made it. */
#define BIGMEM_MIN ((size_t)4 << 20)

/* Advises huge pages for the whole 2 MiB pages inside [p, p + size)
 * when size is at least BIGMEM_MIN; harmless where they are not had. */
void bigmem_advise(void *p, size_t size);

/* realloc, then bigmem_advise on the result. */
void *bigmem_realloc(void *p, size_t size);

#endif /* AMPTRACE_BIGMEM_H */
