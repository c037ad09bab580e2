/* Huge pages for big arrays (bigmem.h). */
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

void bigmem_advise(void *p, size_t size)
{
#ifdef MADV_HUGEPAGE
	if (!p || size < BIGMEM_MIN)
		return;
	uintptr_t begin = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	uintptr_t end = ((uintptr_t)p + size) & ~(HUGE_PAGE - 1);
	/* a failure (no THP in this kernel) leaves the pages as they are */
	if (end > begin)
		(void)madvise((void *)begin, end - begin, MADV_HUGEPAGE);
#else
	(void)p;
	(void)size;
#endif
}

void *bigmem_realloc(void *p, size_t size)
{
	void *grown = realloc(p, size);

	bigmem_advise(grown, size);
	return grown;
}
