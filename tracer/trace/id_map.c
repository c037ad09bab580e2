/* The (pid, id) map (id_map.h). */
#include "id_map.h"
#include "bigmem.h"

#include <stdlib.h>
#include <string.h>

/* A process's array may cover ids up to this, or up to four times its
 * entries: room for dense ids, never for a hash. */
#define DENSE_MIN_CAP ((size_t)1 << 16)

/* ------------------------------------------------------------ sparse ids */

static size_t id_hash(int64_t pid, uint64_t id)
{
	uint64_t h = ((uint64_t)pid * 0x9E3779B97F4A7C15ull) ^ id;

	h ^= h >> 31;
	h *= 0xBF58476D1CE4E5B9ull;
	h ^= h >> 29;
	return (size_t)h;
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

/* Rehashes the sparse part into twice the slots (or 256). */
static bool grow_slots(struct id_map *m)
{
	struct id_map grown = { .cap = m->cap ? m->cap * 2 : 256 };

	grown.slots = calloc(grown.cap, sizeof *grown.slots);
	if (!grown.slots)
		return false;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slots[i].used)
			*slot_of(&grown, m->slots[i].pid, m->slots[i].id) =
				m->slots[i];
	free(m->slots);
	m->slots = grown.slots;
	m->cap = grown.cap;
	return true;
}

/* ------------------------------------------------------------- dense ids */

static struct id_map_dense *dense_of(const struct id_map *m, int64_t pid)
{
	for (size_t i = 0; i < m->ndense; i++)
		if (m->dense[i].pid == pid)
			return &m->dense[i];
	return NULL;
}

static bool is_present(const struct id_map_dense *d, uint64_t id)
{
	return d->present[id / 64] >> (id % 64) & 1;
}

/* Widens d to cover `id`.  Entries of d's process that went to the
 * sparse part before stay there: lookups try both. */
static bool dense_cover(struct id_map_dense *d, uint64_t id)
{
	size_t cap = d->cap ? d->cap : 64;

	while (cap <= id)
		cap *= 2;
	uint64_t *present = realloc(d->present, cap / 64 * sizeof *present);
	if (!present)
		return false;
	memset(present + d->cap / 64, 0, (cap - d->cap) / 64 * sizeof *present);
	d->present = present;
	/* values last: its size must stay d->cap's (bigmem_free) */
	size_t *values = bigmem_grow(d->values, d->cap * sizeof *values,
				     cap * sizeof *values);
	if (!values)
		return false;
	d->values = values;
	d->cap = cap;
	return true;
}

/* The process's array, made when `insert`. */
static struct id_map_dense *dense_for(struct id_map *m, int64_t pid,
				      bool insert)
{
	struct id_map_dense *d = dense_of(m, pid);

	if (d || !insert)
		return d;
	size_t n = m->ndense + 1;
	d = realloc(m->dense, n * sizeof *d);
	if (!d)
		return NULL;
	m->dense = d;
	d = &m->dense[m->ndense++];
	*d = (struct id_map_dense){ .pid = pid };
	return d;
}

/* ------------------------------------------------------------------ API */

size_t *id_map_find(struct id_map *m, int64_t pid, uint64_t id, bool insert)
{
	struct id_map_dense *d = dense_for(m, pid, insert);

	if (!d && insert)
		goto failed;
	if (d && id < d->cap && is_present(d, id))
		return &d->values[id];
	if (m->hashed) {
		struct id_map_slot *slot = slot_of(m, pid, id);
		if (slot->used)
			return &slot->value;
	}
	if (!insert)
		return NULL;
	if (id >= d->cap && id < DENSE_MIN_CAP + 4 * (d->count + 1) &&
	    !dense_cover(d, id))
		goto failed;
	m->count++;
	if (id < d->cap) {
		d->present[id / 64] |= (uint64_t)1 << (id % 64);
		d->values[id] = 0;
		d->count++;
		return &d->values[id];
	}
	if ((m->hashed + 1) * 2 > m->cap && !grow_slots(m)) {
		m->count--;
		goto failed;
	}
	struct id_map_slot *slot = slot_of(m, pid, id);
	*slot = (struct id_map_slot){ .pid = pid, .id = id, .used = true };
	m->hashed++;
	return &slot->value;
failed:
	m->failed = true;
	return NULL;
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
	const struct id_map_dense *d = dense_of(m, pid);

	if (d && id < d->cap && is_present(d, id))
		return &d->values[id];
	if (!m->hashed)
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
	for (size_t i = 0; i < m->ndense; i++) {
		bigmem_free(m->dense[i].values,
			    m->dense[i].cap * sizeof *m->dense[i].values);
		free(m->dense[i].present);
	}
	free(m->dense);
	free(m->slots);
	*m = (struct id_map){ 0 };
}
