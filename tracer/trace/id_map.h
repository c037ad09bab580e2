/* (pid, id) -> size_t: the one map of the trace tools (findings,
 * analysis, the viewer), keyed the way trace ids are unique: per process.
 * Trace ids (ops, tensors, threads) count up from 1 in each process, so
 * each process's ids index an array of values directly, grown as they
 * come; an id far beyond the others (a hash, as diff's keys) goes to an
 * open-addressing hash table instead.  It only grows.  A zeroed struct is
 * an empty map. */
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

/* One process's ids below `cap`: values[id], present when its bit is. */
struct id_map_dense {
	int64_t pid;
	size_t *values;
	uint64_t *present;
	size_t cap, count;
};

struct id_map {
	struct id_map_dense *dense;
	size_t ndense;
	struct id_map_slot *slots; /* the sparse ids */
	size_t cap, hashed;
	size_t count;              /* entries in all */
	bool failed;               /* an insertion ran out of memory */
};

/* The value of (pid, id); when absent, a new one set to 0 if `insert`,
 * else NULL.  NULL too when inserting runs out of memory (failed set). */
size_t *id_map_find(struct id_map *m, int64_t pid, uint64_t id, bool insert);
/* Returns false when out of memory (failed set). */
bool id_map_put(struct id_map *m, int64_t pid, uint64_t id, size_t value);
/* The value of (pid, id), or NULL when absent. */
const size_t *id_map_at(const struct id_map *m, int64_t pid, uint64_t id);
/* The value of (pid, id), or SIZE_MAX when absent. */
size_t id_map_get(const struct id_map *m, int64_t pid, uint64_t id);
void id_map_free(struct id_map *m);

#endif /* AMPTRACE_ID_MAP_H */
