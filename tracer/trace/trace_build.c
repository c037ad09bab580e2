/* A trace's memory (trace.h): the arenas its events' arrays and its
 * strings live in, the table that interns its strings, and appending
 * events.  Strings have an arena of their own, so that the arrays of an
 * event a reader drops can be given back (trace_arena_release) while
 * the strings it interned stay. */
#include "trace.h"
#include "bigmem.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct trace_arena_block {
	struct trace_arena_block *next;
	size_t used, size;
	max_align_t data[];
};

/* One interned string: its hash and length are kept, so that looking a
 * string up compares them before any byte, and growing the table never
 * reads a string again. */
struct trace_string_slot {
	const char *text;   /* NULL: empty slot */
	uint32_t hash, len;
};

#define ARENA_BLOCK_MAX ((size_t)8 << 20)

static void *arena_alloc(struct trace_arena_block **arena, size_t size)
{
	struct trace_arena_block *b = *arena;

	size = (size + 15) & ~(size_t)15;
	if (!b || b->used + size > b->size) {
		/* blocks double up to 8 MiB: a big trace's arena is a few
		 * dozen blocks in huge pages (bigmem.h), a small one's 64 KiB */
		size_t block = !b ? 65536 : b->size < ARENA_BLOCK_MAX
						    ? 2 * b->size
						    : ARENA_BLOCK_MAX;
		if (block < size)
			block = size;
		b = malloc(sizeof *b + block);
		if (!b)
			return NULL;
		bigmem_advise(b, sizeof *b + block);
		b->next = *arena;
		b->used = 0;
		b->size = block;
		*arena = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += size;
	return p;
}

static void arena_free(struct trace_arena_block **arena)
{
	while (*arena) {
		struct trace_arena_block *next = (*arena)->next;
		free(*arena);
		*arena = next;
	}
}

void *trace_grow(void *array, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap && array)
		return array;
	if (need < 1)
		need = 1; /* an array, so that NULL says only "out of memory" */
	size_t n = *cap ? *cap : 64;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (elem && n > SIZE_MAX / elem)
		return NULL;
	void *grown = realloc(array, n * elem);
	if (grown)
		*cap = n;
	return grown;
}

void *trace_alloc(struct trace *t, size_t size)
{
	return arena_alloc(&t->arena, size);
}

struct trace_arena_mark trace_arena_mark(const struct trace *t)
{
	return (struct trace_arena_mark){ t->arena,
					  t->arena ? t->arena->used : 0 };
}

/* The arena as it was when `block` was its newest, `used` bytes of it. */
static void arena_release(struct trace_arena_block **arena,
			  struct trace_arena_block *block, size_t used)
{
	while (*arena && *arena != block) {
		struct trace_arena_block *next = (*arena)->next;
		free(*arena);
		*arena = next;
	}
	if (*arena)
		(*arena)->used = used;
}

void trace_arena_release(struct trace *t, struct trace_arena_mark mark)
{
	arena_release(&t->arena, mark.block, mark.used);
}

/* Eight bytes at a time: interning is on the converter's path for every
 * string of every event, and names are short. */
uint64_t trace_string_hash(const char *s, size_t len)
{
	uint64_t h = 0x9E3779B97F4A7C15ull ^ len;
	uint64_t word;

	for (; len >= 8; s += 8, len -= 8) {
		memcpy(&word, s, 8);
		h = (h ^ word) * 0xBF58476D1CE4E5B9ull;
		h ^= h >> 29;
	}
	if (len) {
		word = 0;
		memcpy(&word, s, len);
		h = (h ^ word) * 0xBF58476D1CE4E5B9ull;
		h ^= h >> 29;
	}
	h *= 0x94D049BB133111EBull;
	return h ^ (h >> 32);
}

static bool grow_strings(struct trace *t)
{
	size_t cap = t->cap_strings ? t->cap_strings * 2 : 1024;
	struct trace_string_slot *table = calloc(cap, sizeof *table);

	if (!table)
		return false;
	for (size_t i = 0; i < t->cap_strings; i++) {
		if (!t->strings[i].text)
			continue;
		size_t j = t->strings[i].hash & (cap - 1);
		while (table[j].text)
			j = (j + 1) & (cap - 1);
		table[j] = t->strings[i];
	}
	free(t->strings);
	t->strings = table;
	t->cap_strings = cap;
	return true;
}

/* Slot j's string came since trace_strings_mark(). */
static void log_string(struct trace *t, size_t j)
{
	size_t *grown = trace_grow(t->string_log, &t->cap_string_log,
				   t->nstring_log + 1, sizeof *grown);

	if (!grown) {
		t->string_log_lost = true;
		return;
	}
	t->string_log = grown;
	t->string_log[t->nstring_log++] = j;
}

/* Interned copy of the `len` bytes at s (a string's have no NUL; a
 * shape's may): equal strings share one pointer, which keeps a trace of
 * a million ops to a few distinct op names in memory. */
static const char *intern(struct trace *t, const char *s, size_t len)
{
	if (len > UINT32_MAX)
		return NULL;
	if ((t->nstrings + 1) * 2 > t->cap_strings && !grow_strings(t))
		return NULL;
	uint32_t hash = (uint32_t)trace_string_hash(s, len);
	size_t j = hash & (t->cap_strings - 1);
	while (t->strings[j].text) {
		const struct trace_string_slot *slot = &t->strings[j];
		if (slot->hash == hash && slot->len == len &&
		    !memcmp(slot->text, s, len))
			return slot->text;
		j = (j + 1) & (t->cap_strings - 1);
	}
	char *copy = arena_alloc(&t->string_arena, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len);
	copy[len] = '\0';
	t->strings[j] = (struct trace_string_slot){ copy, hash, (uint32_t)len };
	t->nstrings++;
	if (t->string_log_on)
		log_string(t, j);
	return copy;
}

struct trace_strings_mark trace_strings_mark(struct trace *t)
{
	t->string_log_on = true;
	t->string_log_lost = false;
	t->nstring_log = 0;
	return (struct trace_strings_mark){
		t->string_arena, t->string_arena ? t->string_arena->used : 0,
		t->cap_strings,
	};
}

/* Emptied newest first: with linear probing, the newest string's slot
 * is on no older string's path (it was free when they were placed), so
 * each one removed leaves the table as it was before it came. */
void trace_strings_forget(struct trace *t, struct trace_strings_mark mark)
{
	if (t->string_log_lost || t->cap_strings != mark.cap_strings)
		return;
	while (t->nstring_log) {
		t->strings[t->string_log[--t->nstring_log]].text = NULL;
		t->nstrings--;
	}
	arena_release(&t->string_arena, mark.block, mark.used);
}

const char *trace_intern_n(struct trace *t, const char *s, size_t len)
{
	if (!s)
		return NULL;
	const char *nul = memchr(s, '\0', len);
	return intern(t, s, nul ? (size_t)(nul - s) : len);
}

const char *trace_intern(struct trace *t, const char *s)
{
	return s ? intern(t, s, strlen(s)) : NULL;
}

/* A shape's bytes interned as a string's are: arena allocations are
 * aligned for int64_t, and equal bytes are equal sizes whatever interned
 * them first. */
const int64_t *trace_intern_shape(struct trace *t, const int64_t *sizes,
				  int ndim)
{
	return (const int64_t *)intern(t, (const char *)sizes,
				       (size_t)ndim * sizeof *sizes);
}

/* A kind's bytes interned as a shape's are: its members are interned
 * strings and shapes, so equal kinds are equal bytes once the padding
 * is zero, which copying member by member into a zeroed key makes sure
 * of (a struct copy may carry the padding along).  A new member must be
 * copied too: */
_Static_assert(sizeof(void *) != 8 || sizeof(struct trace_tensor_info) == 48,
	       "copy the new member of struct trace_tensor_info below");
_Static_assert(sizeof(void *) != 8 || sizeof(struct trace_autocast) == 56,
	       "copy the new member of struct trace_autocast below");
const struct trace_tensor_info *
trace_intern_tensor_info(struct trace *t, const struct trace_tensor_info *info)
{
	struct trace_tensor_info key;

	memset(&key, 0, sizeof key);
	key.dtype = info->dtype;
	key.name = info->name;
	key.shape = info->shape;
	key.ndim = info->ndim;
	key.requires_grad = info->requires_grad;
	key.leaf = info->leaf;
	key.view = info->view;
	key.device = info->device;
	key.profiler_type = info->profiler_type;
	return (const struct trace_tensor_info *)intern(t, (const char *)&key,
							sizeof key);
}

const struct trace_autocast *
trace_intern_autocast(struct trace *t, const struct trace_autocast *state)
{
	struct trace_autocast key;

	memset(&key, 0, sizeof key);
	key.enabled = state->enabled;
	key.device = state->device;
	key.dtype = state->dtype;
	key.cache_enabled = state->cache_enabled;
	key.depth = state->depth;
	key.scope = state->scope;
	key.nscopes = state->nscopes;
	if (state->nscopes > 0) {
		key.scopes = (const char **)intern(
			t, (const char *)state->scopes,
			(size_t)state->nscopes * sizeof *state->scopes);
		if (!key.scopes)
			return NULL;
	}
	return (const struct trace_autocast *)intern(t, (const char *)&key,
						     sizeof key);
}

int trace_cast_from_record(struct trace *t,
			   const struct trace_cast_record *record,
			   struct trace_cast *cast)
{
	struct trace_tensor_info source = record->source;

	*cast = record->cast;
	source.dtype = cast->from;
	cast->source = trace_intern_tensor_info(t, &source);
	cast->compiled = NULL;
	if (trace_cast_compiled_set(&record->compiled)) {
		struct trace_cast_compiled *compiled =
			trace_alloc(t, sizeof *compiled);
		if (!compiled)
			return -1;
		*compiled = record->compiled;
		cast->compiled = compiled;
	}
	return cast->source ? 0 : -1;
}

int trace_init(struct trace *trace, const char *path)
{
	*trace = (struct trace){ .path = strdup(path) };
	return trace->path ? 0 : -1;
}

struct trace_event *trace_append(struct trace *t, const struct trace_event *e)
{
	if (t->nevents >= UINT32_MAX)
		return NULL; /* an event's index is 32 bits */
	if (t->nevents == t->cap_events) {
		size_t cap = t->cap_events ? t->cap_events * 2 : 1024;
		struct trace_event *grown =
			bigmem_grow(t->events, t->cap_events * sizeof *grown,
				    cap * sizeof *grown);
		if (!grown)
			return NULL;
		t->events = grown;
		t->cap_events = cap;
	}
	struct trace_event *added = &t->events[t->nevents];
	*added = *e;
	added->index = t->nevents++;
	t->counts[e->kind]++;
	return added;
}

void trace_free(struct trace *trace)
{
	arena_free(&trace->arena);
	arena_free(&trace->string_arena);
	bigmem_free(trace->events, trace->cap_events * sizeof *trace->events);
	free(trace->strings);
	free(trace->string_log);
	free(trace->dropped_pids);
	free(trace->path);
	*trace = (struct trace){ 0 };
}
