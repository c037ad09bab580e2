/* A caching allocator for host tensor storage.  A training step frees and
 * reallocates the same sizes every step; handing those blocks back from a
 * per-thread cache instead of malloc keeps the step from faulting and
 * zeroing fresh pages (glibc returns big blocks to the kernel on free).
 * Size classes are four per power of two (at most 25% slack), each thread
 * keeps its own free lists, bounded by AMP_ALLOC_CACHE_MB (default 256
 * MiB per thread; 0 turns the cache off), and a thread's blocks are
 * released when it exits.  Blocks of 2 MiB and more are aligned to 2 MiB
 * and advised to use transparent huge pages.  Internal to libamp. */
#ifndef AMP_ALLOC_H
#define AMP_ALLOC_H

#include <stddef.h>

/* 64-byte aligned, at least nbytes; NULL when out of memory (no error
 * recorded: the caller names what it was allocating). */
void *amp_host_alloc(size_t nbytes);
/* Returns a block from amp_host_alloc(nbytes), the same nbytes; NULL is a
 * no-op.  Any thread may free any block. */
void amp_host_free(void *block, size_t nbytes);

#endif /* AMP_ALLOC_H */
