/* The autocast weight-cast cache: PyTorch keeps one process-global map
 * from a source TensorImpl to its lower-precision copy, under a mutex, and
 * empties it only when the outermost autocast region exits.  Keys here are
 * tensor ids, which are never reused, so the source need not be pinned. */
#include "amp_internal.h"

#include <pthread.h>
#include <stdlib.h>

struct cache_entry {
	uint64_t source_id;  /* 0 = empty slot */
	uint64_t source_version;
	struct amp_tensor *cast;
};

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cache_entry *table;
static size_t capacity, used, bytes;

static size_t slot_of(uint64_t id, size_t cap)
{
	/* Fibonacci hashing spreads consecutive ids over the table. */
	return (size_t)((id * 0x9E3779B97F4A7C15ull) >> 7) & (cap - 1);
}

static struct cache_entry *find(uint64_t id)
{
	if (!capacity)
		return NULL;
	for (size_t i = slot_of(id, capacity);; i = (i + 1) & (capacity - 1)) {
		if (table[i].source_id == id)
			return &table[i];
		if (table[i].source_id == 0)
			return NULL;
	}
}

static bool grow(void)
{
	size_t new_capacity = capacity ? 2 * capacity : 64;
	struct cache_entry *fresh = calloc(new_capacity, sizeof *fresh);

	if (!fresh)
		return false;
	for (size_t i = 0; i < capacity; i++) {
		if (!table[i].source_id)
			continue;
		size_t j = slot_of(table[i].source_id, new_capacity);
		while (fresh[j].source_id)
			j = (j + 1) & (new_capacity - 1);
		fresh[j] = table[i];
	}
	free(table);
	table = fresh;
	capacity = new_capacity;
	return true;
}

struct amp_tensor *amp_cache_lookup(struct amp_tensor *source, bool *stale)
{
	struct amp_tensor *cast = NULL;

	pthread_mutex_lock(&cache_lock);
	struct cache_entry *e = find(source->id);
	if (e) {
		cast = amp_tensor_ref(e->cast);
		*stale = e->source_version != amp_tensor_version(source);
	}
	pthread_mutex_unlock(&cache_lock);
	return cast;
}

void amp_cache_insert(struct amp_tensor *source, struct amp_tensor *cast)
{
	pthread_mutex_lock(&cache_lock);
	/* Keep the load under 1/2 so probes stay short. */
	if ((used + 1) * 2 > capacity && !grow()) {
		pthread_mutex_unlock(&cache_lock);
		return; /* out of memory: the cast is simply not cached */
	}
	size_t i = slot_of(source->id, capacity);
	while (table[i].source_id && table[i].source_id != source->id)
		i = (i + 1) & (capacity - 1);
	if (table[i].source_id) {
		bytes -= amp_tensor_nbytes(table[i].cast);
		amp_tensor_free(table[i].cast);
	} else {
		used++;
	}
	table[i] = (struct cache_entry){ source->id, amp_tensor_version(source),
					 amp_tensor_ref(cast) };
	bytes += amp_tensor_nbytes(cast);
	pthread_mutex_unlock(&cache_lock);
}

void amp_autocast_clear_cache(void)
{
	struct cache_entry *old;
	size_t old_capacity, old_used, old_bytes;

	pthread_mutex_lock(&cache_lock);
	old = table;
	old_capacity = capacity;
	old_used = used;
	old_bytes = bytes;
	table = NULL;
	capacity = used = bytes = 0;
	pthread_mutex_unlock(&cache_lock);

	/* Freeing outside the lock: a cast's last reference may be here. */
	for (size_t i = 0; i < old_capacity; i++)
		if (old[i].source_id)
			amp_tensor_free(old[i].cast);
	free(old);
	if (amp_hooks_want(AMP_EVENT_CACHE_CLEAR)) {
		struct amp_event event = { .kind = AMP_EVENT_CACHE_CLEAR };
		event.cache = (struct amp_cache_event){ old_used, old_bytes };
		amp_hook_emit(&event);
	}
}

struct amp_cache_stats amp_autocast_cache_stats(void)
{
	struct amp_cache_stats stats;

	pthread_mutex_lock(&cache_lock);
	stats = (struct amp_cache_stats){ used, bytes };
	pthread_mutex_unlock(&cache_lock);
	return stats;
}
