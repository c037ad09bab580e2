/* The tracer's big arrays (a kept trace's events and arena, the flows'
 * slices, the index's maps) fill fresh memory as fast as they are
 * written, and a fault per 4 KiB page was a fifth of `amptrace run`'s
 * time after the program ended: these ask for transparent huge pages (a
 * fault per 2 MiB) where the kernel gives them (THP "madvise" or
 * "always"). */
#ifndef AMPTRACE_BIGMEM_H
#define AMPTRACE_BIGMEM_H

#include <stddef.h>

/* Below this, memory is left as malloc makes it. */
#define BIGMEM_MIN ((size_t)4 << 20)

/* Advises huge pages for the whole 2 MiB pages inside [p, p + size), a
 * block from malloc that is never realloc'd (the advice splits its
 * mapping, and glibc's realloc then copies where it would have moved
 * the mapping), when size is at least BIGMEM_MIN. */
void bigmem_advise(void *p, size_t size);

/* An array that grows: `old_size` bytes at p (p NULL, old_size 0 for a
 * new one) become `new_size` (> old_size), contents kept; NULL when out
 * of memory (p then unchanged).  At BIGMEM_MIN and beyond it is a
 * mapping of its own in huge pages, grown by mremap (no copy).  Freed
 * only by bigmem_free with its size. */
void *bigmem_grow(void *p, size_t old_size, size_t new_size);
void bigmem_free(void *p, size_t size);

#endif /* AMPTRACE_BIGMEM_H */
