/* The (pid, id) hash map (id_map.h). */
#include "id_map.h"

#include <stdlib.h>

/* Ids are mostly dense and looked up roughly in order (tensor and op ids
 * count up as a trace goes on), so a run of ID_BLOCK consecutive ids keeps
 * its order in consecutive slots and only the blocks are scattered: one
 * cache miss per block instead of one per id, which was the findings'
 * largest cost on long traces.  Keys that all share their low bits still
 * spread, by their high bits, to at most cap / ID_BLOCK blocks: a map at
 * most half full then probes a few slots more, never a long chain. */
#define ID_BLOCK 16

static size_t id_hash(int64_t pid, uint64_t id)
{
	uint64_t h = ((uint64_t)pid * 0x9E3779B97F4A7C15ull) ^ (id / ID_BLOCK);

	h ^= h >> 31;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 29;
	return (size_t)(h * ID_BLOCK + id % ID_BLOCK);
}

/* The slot of (pid, id), or the empty slot where it would go (cap > 0). */
static struct id_map_slot *slot_of(const struct id_map *m, int64_t pid,
				   uint64_t id)
{
	size_t j = id_hash(pid, id) & (m->cap - 1);

	while (m->slots[j].used &&
	       !(m->slots[j].pid == pid && m->slots[j].id == id))
		j = (j + 1) & (m->cap - 1);
	return &m->slots[j];
}

/* Rehashes into `cap` slots (a power of two, more than twice the count). */
static bool resize(struct id_map *m, size_t cap)
{
	struct id_map grown = { .cap = cap };

	grown.slots = calloc(grown.cap, sizeof *grown.slots);
	if (!grown.slots) {
		m->failed = true;
		return false;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].used)
			*slot_of(&grown, m->slots[i].pid, m->slots[i].id) =
				m->slots[i];
	grown.count = m->count;
	free(m->slots);
	*m = grown;
	return true;
}

static bool grow(struct id_map *m)
{
	return resize(m, m->cap ? m->cap * 2 : 256);
}

bool id_map_reserve(struct id_map *m, size_t n)
{
	size_t cap = m->cap ? m->cap : 256;

	while (cap < SIZE_MAX / 4 / sizeof *m->slots && (n + 1) * 2 > cap)
		cap *= 2;
	return cap == m->cap || resize(m, cap);
}

size_t *id_map_find(struct id_map *m, int64_t pid, uint64_t id, bool insert)
{
	if (insert && (m->count + 1) * 2 > m->cap && !grow(m))
		return NULL;
	if (!m->cap)
		return NULL;
	struct id_map_slot *slot = slot_of(m, pid, id);
	if (!slot->used) {
		if (!insert)
			return NULL;
		*slot = (struct id_map_slot){ .pid = pid, .id = id, .used = true };
		m->count++;
	}
	return &slot->value;
}

bool id_map_put(struct id_map *m, int64_t pid, uint64_t id, size_t value)
{
	size_t *slot = id_map_find(m, pid, id, true);

	if (slot)
		*slot = value;
	return slot != NULL;
}

const size_t *id_map_at(const struct id_map *m, int64_t pid, uint64_t id)
{
	if (!m->cap)
		return NULL;
	const struct id_map_slot *slot = slot_of(m, pid, id);
	return slot->used ? &slot->value : NULL;
}

size_t id_map_get(const struct id_map *m, int64_t pid, uint64_t id)
{
	const size_t *value = id_map_at(m, pid, id);

	return value ? *value : SIZE_MAX;
}

void id_map_free(struct id_map *m)
{
	free(m->slots);
	*m = (struct id_map){ 0 };
}
