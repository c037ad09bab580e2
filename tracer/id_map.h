/* (pid, id) -> size_t: the one hash map of the trace tools (findings,
 * analysis, the viewer), keyed the way trace ids are unique: per process.
 * Open addressing with linear probing, a power-of-two capacity kept at
 * most half full; it only grows.  A zeroed struct is an empty map. */
#ifndef AMPTRACE_ID_MAP_H
#define AMPTRACE_ID_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct id_map_slot {
	int64_t pid;
	uint64_t id;
	size_t value;
	bool used;
};

struct id_map {
	struct id_map_slot *slots;
	size_t cap, count;
	bool failed; /* an insertion ran out of memory */
};

/* The value of (pid, id); when absent, a new one set to 0 if `insert`,
 * else NULL.  NULL too when inserting runs out of memory (failed set). */
size_t *id_map_find(struct id_map *m, int64_t pid, uint64_t id, bool insert);
/* Makes room for `n` entries in all, so that filling the map with them
 * does not rehash it again and again.  False when out of memory (failed
 * set). */
bool id_map_reserve(struct id_map *m, size_t n);
/* Returns false when out of memory (failed set). */
bool id_map_put(struct id_map *m, int64_t pid, uint64_t id, size_t value);
/* The value of (pid, id), or NULL when absent. */
const size_t *id_map_at(const struct id_map *m, int64_t pid, uint64_t id);
/* The value of (pid, id), or SIZE_MAX when absent. */
size_t id_map_get(const struct id_map *m, int64_t pid, uint64_t id);
void id_map_free(struct id_map *m);

#endif /* AMPTRACE_ID_MAP_H */
