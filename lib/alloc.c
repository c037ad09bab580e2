/* The host storage cache (see alloc.h).  A freed block goes onto its size
 * class's list in the freeing thread's cache, unless that would take the
 * cache over its bound; an allocation pops from its class's list, else
 * asks aligned_alloc for the class's size (fresh_block). */
#include "alloc.h"
#include "amp_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define CLASS_STEPS 4           /* classes per power of two */
#define MIN_BLOCK 64            /* the smallest class, the alignment */
#define MAX_CLASS_SHIFT 26      /* blocks over 64 MiB are not cached */
#define CLASSES ((MAX_CLASS_SHIFT - 5) * CLASS_STEPS)
#define DEFAULT_LIMIT_MB 256
#define HUGE_PAGE ((size_t)2 << 20)

struct block {
	struct block *next;
};

struct cache {
	struct block *free[CLASSES];
	size_t bytes;  /* held in free lists */
	bool live;     /* registered for release at thread exit */
	bool dead;     /* released: this thread caches no more */
};

static _Thread_local struct cache cache;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t exit_key;
static size_t limit;

static void cache_release(void *arg)
{
	struct cache *c = arg;

	for (int i = 0; i < CLASSES; i++) {
		while (c->free[i]) {
			struct block *b = c->free[i];
			c->free[i] = b->next;
			free(b);
		}
	}
	c->bytes = 0;
	c->dead = true;
}

static void cache_setup(void)
{
	const char *value = getenv("AMP_ALLOC_CACHE_MB");
	char *end;
	long mb = DEFAULT_LIMIT_MB;

	if (value && *value) {
		errno = 0;
		long parsed = strtol(value, &end, 10);
		/* beyond 2^44 MiB, mb << 20 would wrap */
		if (*end == '\0' && errno == 0 && parsed >= 0 &&
		    parsed <= (long)(SIZE_MAX >> 20))
			mb = parsed;
		else
			amp_warn("ignoring AMP_ALLOC_CACHE_MB=%s (want a size "
				 "in MiB, 0 for no cache); caching %d MiB "
				 "per thread",
				 value, DEFAULT_LIMIT_MB);
	}
	limit = (size_t)mb << 20;
	if (pthread_key_create(&exit_key, cache_release) != 0)
		limit = 0;
}

/* The class of nbytes and its block size; -1 when too big to cache.
 * Between 2^e (exclusive) and 2^(e+1) the classes are 2^e + q * 2^e / 4,
 * q = 1..4. */
static int size_class(size_t nbytes, size_t *block_bytes)
{
	size_t n = nbytes > MIN_BLOCK ? nbytes : MIN_BLOCK;
	int e = 63 - __builtin_clzll((unsigned long long)(n - 1));
	if (e >= MAX_CLASS_SHIFT)
		return -1;
	size_t base = (size_t)1 << e, step = base / CLASS_STEPS;
	size_t q = (n - base + step - 1) / step;
	*block_bytes = base + q * step;
	return (e - 5) * CLASS_STEPS + (int)q - 1;
}

static bool cache_usable(void)
{
	pthread_once(&once, cache_setup);
	if (limit == 0 || cache.dead)
		return false;
	if (!cache.live) {
		cache.live = true;
		pthread_setspecific(exit_key, &cache);
	}
	return true;
}

/* Blocks of 2 MiB and more sit on 2 MiB boundaries and ask for
 * transparent huge pages: a step streams through its weights, gradients
 * and momentum buffers, and with 4 KiB pages each of those is thousands
 * of TLB misses (dearer still under a hypervisor) and page faults. */
static void *fresh_block(size_t bytes)
{
	size_t align = bytes >= HUGE_PAGE ? HUGE_PAGE : MIN_BLOCK;
	/* C11 wants the size a multiple of the alignment (a class such as
	 * 80 bytes is not; ASan refuses it). */
	size_t size = (bytes + align - 1) & ~(align - 1);
	void *p = aligned_alloc(align, size);

#ifdef MADV_HUGEPAGE
	if (p && align == HUGE_PAGE)
		madvise(p, size, MADV_HUGEPAGE); /* advice: failure is fine */
#endif
	return p;
}

void *amp_host_alloc(size_t nbytes)
{
	size_t bytes;
	int c = size_class(nbytes, &bytes);

	if (c < 0)
		bytes = nbytes;
	else if (cache_usable() && cache.free[c]) {
		struct block *b = cache.free[c];
		cache.free[c] = b->next;
		cache.bytes -= bytes;
		return b;
	}
	return fresh_block(bytes);
}

void amp_host_free(void *block, size_t nbytes)
{
	size_t bytes;
	int c;

	if (!block)
		return;
	c = size_class(nbytes, &bytes);
	if (c < 0 || !cache_usable() || cache.bytes + bytes > limit) {
		free(block);
		return;
	}
	struct block *b = block;
	b->next = cache.free[c];
	cache.free[c] = b;
	cache.bytes += bytes;
}
