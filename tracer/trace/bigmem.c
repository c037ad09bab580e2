/* Huge pages for big arrays (bigmem.h). */
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HUGE_PAGE ((uintptr_t)2 << 20)

static void advise(void *begin, size_t size)
{
#ifdef MADV_HUGEPAGE
	/* a failure (no THP in this kernel) leaves the pages as they are */
	(void)madvise(begin, size, MADV_HUGEPAGE);
#else
	(void)begin;
	(void)size;
#endif
}

void bigmem_advise(void *p, size_t size)
{
	if (!p || size < BIGMEM_MIN)
		return;
	uintptr_t begin = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
	uintptr_t end = ((uintptr_t)p + size) & ~(HUGE_PAGE - 1);
	if (end > begin)
		advise((void *)begin, end - begin);
}

/* A mapping's length for `size` bytes: whole pages. */
static size_t mapped(size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (size + page - 1) / page * page;
}

void *bigmem_grow(void *p, size_t old_size, size_t new_size)
{
	if (new_size < BIGMEM_MIN)
		return realloc(p, new_size);
	if (old_size >= BIGMEM_MIN) {
		/* one mapping, advised whole: mremap keeps its advice */
		void *grown = mremap(p, mapped(old_size), mapped(new_size),
				     MREMAP_MAYMOVE);
		return grown == MAP_FAILED ? NULL : grown;
	}
	void *fresh = mmap(NULL, mapped(new_size), PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED)
		return NULL;
	advise(fresh, mapped(new_size));
	if (old_size)
		memcpy(fresh, p, old_size);
	free(p);
	return fresh;
}

void bigmem_free(void *p, size_t size)
{
	if (size >= BIGMEM_MIN)
		munmap(p, mapped(size));
	else
		free(p);
}
