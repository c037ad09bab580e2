/* A thread's aggregates of a step (step_aggregate.h): rows in an array,
 * found through an open-addressing table of their indices.
 *
 * The rows and the totals (`struct live`) live in a file mapped
 * MAP_SHARED when the producer names one: its pages belong to the file,
 * so what a thread counted survives the thread's process, SIGKILL
 * included, and `amptrace run` reads it (step_aggregate_left) as the
 * step cut short.  The counting is the same plain stores into memory: no
 * lock, no system call but where the file grows (a row count doubles).
 * The index (slots, the fast table, the open ops) stays private. */
#include "step_aggregate.h"

#include "raw.h"
#include "xfsz.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NAME_LEN 96
#define OVERLOAD_LEN 48
#define OPEN_OPS 16
#define FAST_OPS 64
#define ORIGIN_LEN 16

/* A diag's first message takes the `message_rows` rows after its own,
 * as bytes (a row has no room of its own for one: the 1 KiB each row
 * kept for it made a thread's file 40 KB, where most rows are ops). */
struct row {
	uint16_t kind;          /* RAW_KIND_STEP_OP, _CAST or _DIAG */
	uint16_t message_rows;  /* a diag's: its message's rows */
	uint64_t hash;
	char op[NAME_LEN];      /* the op; a diag's kind */
	char overload[OVERLOAD_LEN]; /* an op's; a cast's origin */
	union {                 /* its strings unset: they are the row's */
		struct raw_step_op op;
		struct raw_step_cast cast;
		struct raw_step_diag diag;
	} m;
};

#define MESSAGE_ROWS_MAX ((RAW_MAX_STRING + sizeof(struct row) - 1) / \
			  sizeof(struct row))

static char *message_of(const struct row *r)
{
	return (char *)(r + 1);
}

/* The row after r and its message. */
static uint32_t next_row(const struct row *rows, uint32_t i)
{
	return i + 1 + rows[i].message_rows;
}

/* The file's layout (the same build writes and reads it: raw.h's
 * RAW_VERSION is checked).  `flushes` says where the rows are: even,
 * counting (flushes/2 flushes done); odd, flush number (flushes+1)/2
 * sealed them: they are being written into the stream, whose totals row
 * ends them, then emptied.  A reader that knows how many totals rows the
 * thread's stream holds tells whether the sealed rows reached it (a kill
 * anywhere between the seal and the reset loses no step).  `whole`: the
 * rows sealed are a whole step's (the thread moved on or ended), not a
 * part of one.  `nrows` counts the rows whose names are set. */
#define LIVE_MAGIC 0x41475632u /* "AGV2" */
struct live {
	uint32_t magic, version, row_size;
	_Atomic uint32_t nrows;
	_Atomic uint64_t flushes;
	_Atomic uint32_t whole;
	uint32_t pad;
	struct raw_step_totals totals;
	struct row rows[];
};

/* An op whose BEGIN came and whose END has not: its casts and diags
 * happen inside it. */
struct open_op {
	uint64_t op_id;
	uint8_t phase;
	char name[NAME_LEN];
};

/* An op's row as last found from its name's address: libamp's names are
 * static and the bridge keeps one per operator, so most ops find their
 * row here without hashing their names (the row's names are compared
 * all the same: an address may come back with another name). */
struct fast_op {
	const char *op, *overload;
	uint32_t small;        /* phase, policy, device, output dtype */
	uint32_t row;
};

struct step_aggregate {
	struct fast_op fast[FAST_OPS];
	struct live *live;      /* mapped from `path`, else allocated */
	struct row *rows;       /* live->rows */
	struct raw_step_totals *totals; /* &live->totals */
	uint32_t nrows, cap_rows;
	uint32_t *slots;        /* row index + 1; 0: empty */
	uint32_t nslots;        /* a power of two */
	struct open_op open[OPEN_OPS];
	int nopen;              /* may exceed OPEN_OPS: those are not kept */
	uint8_t last_phase;
	char *path;             /* NULL: in memory only */
	pid_t owner;            /* the process that made the file */
};

#define FIRST_ROWS 32

static size_t live_size(uint32_t rows)
{
	return sizeof(struct live) + (size_t)rows * sizeof(struct row);
}

/* The file's mapping of `size` bytes, `old` (of `old_size`) moved there
 * when grown; NULL when it cannot be had.  The descriptor is closed: the
 * mapping keeps the file. */
static struct live *map_file(const char *path, bool create, size_t size,
			     struct live *old, size_t old_size)
{
	int fd = open(path, O_RDWR | O_CLOEXEC | (create ? O_CREAT | O_EXCL : 0),
		      0600);
	if (fd < 0)
		return NULL;
	void *mapped = MAP_FAILED;
	if (xfsz_reserve(fd, 0, (off_t)size) == 0)
		mapped = old ? mremap(old, old_size, size, MREMAP_MAYMOVE)
			     : mmap(NULL, size, PROT_READ | PROT_WRITE,
				    MAP_SHARED, fd, 0);
	close(fd);
	if (mapped == MAP_FAILED && create)
		unlink(path);
	return mapped == MAP_FAILED ? NULL : mapped;
}

/* The rows go on in memory (the file could not grow): the file goes, a
 * killed thread's step is then lost as before. */
static struct live *to_memory(struct step_aggregate *a, size_t size)
{
	struct live *moved = malloc(size);

	if (!moved)
		return NULL;
	memcpy(moved, a->live, live_size(a->cap_rows));
	munmap(a->live, live_size(a->cap_rows));
	unlink(a->path);
	free(a->path);
	a->path = NULL;
	return moved;
}

static bool grow_rows(struct step_aggregate *a)
{
	uint32_t cap = a->cap_rows * 2;
	size_t size = live_size(cap);
	struct live *grown = NULL;

	if (a->path)
		grown = map_file(a->path, false, size, a->live,
				 live_size(a->cap_rows));
	if (!grown && a->path)
		grown = to_memory(a, size);
	else if (!grown)
		grown = realloc(a->live, size);
	if (!grown)
		return false;
	a->live = grown;
	a->rows = grown->rows;
	a->totals = &grown->totals;
	a->cap_rows = cap;
	return true;
}

struct step_aggregate *step_aggregate_new(const char *path)
{
	struct step_aggregate *a = calloc(1, sizeof *a);
	size_t size = live_size(FIRST_ROWS);

	if (!a)
		return NULL;
	a->path = path ? strdup(path) : NULL;
	a->live = a->path ? map_file(a->path, true, size, NULL, 0) : NULL;
	if (!a->live) {
		free(a->path);
		a->path = NULL;
		a->live = calloc(1, size);
	}
	if (!a->live) {
		free(a);
		return NULL;
	}
	a->live->version = RAW_VERSION;
	a->live->row_size = sizeof(struct row);
	atomic_store_explicit(&a->live->flushes, 0, memory_order_release);
	a->live->magic = LIVE_MAGIC;
	a->rows = a->live->rows;
	a->totals = &a->live->totals;
	a->cap_rows = FIRST_ROWS;
	a->owner = getpid();
	return a;
}

void step_aggregate_free(struct step_aggregate *a)
{
	if (!a)
		return;
	if (a->path) {
		munmap(a->live, live_size(a->cap_rows));
		/* a forked child's copy is its parent's file */
		if (a->owner == getpid())
			unlink(a->path);
		free(a->path);
	} else {
		free(a->live);
	}
	free(a->slots);
	free(a);
}

void step_aggregate_seal(struct step_aggregate *a, bool whole)
{
	uint64_t n = atomic_load_explicit(&a->live->flushes,
					  memory_order_relaxed);

	atomic_store_explicit(&a->live->whole, whole, memory_order_relaxed);
	atomic_store_explicit(&a->live->flushes, n | 1, memory_order_release);
}

void step_aggregate_reset(struct step_aggregate *a, uint64_t step)
{
	a->nrows = 0;
	atomic_store_explicit(&a->live->nrows, 0, memory_order_release);
	if (a->slots)
		memset(a->slots, 0, a->nslots * sizeof *a->slots);
	/* the cache outlives the step: its size carries over */
	*a->totals = (struct raw_step_totals){
		.step = step, .cache_entries = a->totals->cache_entries,
		.cache_bytes = a->totals->cache_bytes,
		.cache_max_entries = a->totals->cache_entries,
		.cache_max_bytes = a->totals->cache_bytes,
	};
	a->nopen = 0;
	/* counting again: the sealed rows' flush is done */
	uint64_t n = atomic_load_explicit(&a->live->flushes,
					  memory_order_relaxed);
	atomic_store_explicit(&a->live->flushes, (n + 1) & ~(uint64_t)1,
			      memory_order_release);
}

uint64_t step_aggregate_step(const struct step_aggregate *a)
{
	return a->totals->step;
}

uint64_t step_aggregate_events(const struct step_aggregate *a)
{
	return a->totals->events;
}

/* FNV-1a over a string, folded into h. */
static uint64_t hash_str(uint64_t h, const char *s)
{
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return (h ^ 0xff) * 0x100000001b3ull;
}

static uint64_t hash_u64(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

static void copy_name(char *dst, size_t size, const char *s)
{
	size_t n = s ? strnlen(s, size - 1) : 0;

	memcpy(dst, s ? s : "", n);
	dst[n] = '\0';
}

static bool same_name(const char *kept, size_t size, const char *s)
{
	return !strncmp(kept, s ? s : "", size - 1);
}

static bool grow_slots(struct step_aggregate *a)
{
	uint32_t nslots = a->nslots ? a->nslots * 2 : 64;
	uint32_t *slots = calloc(nslots, sizeof *slots);

	if (!slots)
		return false;
	for (uint32_t r = 0; r < a->nrows; r = next_row(a->rows, r)) {
		uint32_t i = (uint32_t)a->rows[r].hash & (nslots - 1);
		while (slots[i])
			i = (i + 1) & (nslots - 1);
		slots[i] = r + 1;
	}
	free(a->slots);
	a->slots = slots;
	a->nslots = nslots;
	return true;
}

/* Rows first to last become a message: an op found there in an earlier
 * step is not. */
static void forget_fast_rows(struct step_aggregate *a, uint32_t first,
			     uint32_t last)
{
	for (int i = 0; i < FAST_OPS; i++)
		if (a->fast[i].row >= first && a->fast[i].row <= last)
			a->fast[i] = (struct fast_op){ 0 };
}

/* The row of `key` (kind, hash, and the names and fields `matches`
 * compares), made when new, with `message_rows` rows after it; NULL when
 * out of memory. */
static struct row *row_of(struct step_aggregate *a, uint16_t kind,
			  uint64_t hash, bool (*matches)(const struct row *,
							 const void *),
			  const void *key, uint16_t message_rows, bool *made)
{
	*made = false;
	if ((a->nrows + 1) * 2 > a->nslots && !grow_slots(a))
		return NULL;
	uint32_t mask = a->nslots - 1, i = (uint32_t)hash & mask;
	for (; a->slots[i]; i = (i + 1) & mask) {
		struct row *r = &a->rows[a->slots[i] - 1];
		if (r->kind == kind && r->hash == hash && matches(r, key))
			return r;
	}
	while (a->nrows + 1 + message_rows > a->cap_rows)
		if (!grow_rows(a))
			return NULL;
	struct row *r = &a->rows[a->nrows];
	if (message_rows)
		forget_fast_rows(a, a->nrows + 1, a->nrows + message_rows);
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->message_rows = message_rows;
	r->hash = hash;
	a->slots[i] = a->nrows + 1;
	a->nrows += 1 + message_rows;
	*made = true;
	return r;
}

/* ------------------------------------------------------------------ ops */

static bool op_matches(const struct row *r, const void *key)
{
	const struct producer_op *e = key;
	const struct raw_step_op *m = &r->m.op;
	unsigned dtype = e->noutputs > 0 ? e->outputs[0].dtype : 0;

	return m->phase == e->phase && m->policy == e->policy &&
	       m->device == e->device && m->has_dtype == (e->noutputs > 0) &&
	       m->dtype == dtype && same_name(r->op, NAME_LEN, e->op) &&
	       same_name(r->overload, OVERLOAD_LEN, e->overload);
}

/* The op's row through the fast table, else by its hash. */
static struct row *op_row_of(struct step_aggregate *a,
			     const struct producer_op *e, bool *made)
{
	bool out = e->noutputs > 0;
	uint32_t small = (uint32_t)e->phase << 24 | (uint32_t)e->policy << 16 |
			 (uint32_t)e->device << 8 |
			 (out ? 0x80u | e->outputs[0].dtype : 0);
	struct fast_op *f = &a->fast[((uintptr_t)e->op >> 3 ^ small) &
				     (FAST_OPS - 1)];

	*made = false;
	if (f->op == e->op && f->overload == e->overload && f->small == small &&
	    f->row < a->nrows && a->rows[f->row].kind == RAW_KIND_STEP_OP &&
	    op_matches(&a->rows[f->row], e))
		return &a->rows[f->row];
	uint64_t h = hash_u64(hash_str(hash_str(0xcbf29ce484222325ull, e->op),
				       e->overload), small);
	struct row *r = row_of(a, RAW_KIND_STEP_OP, h, op_matches, e, 0, made);
	if (r)
		*f = (struct fast_op){ e->op, e->overload, small,
				       (uint32_t)(r - a->rows) };
	return r;
}

static bool add_op(struct step_aggregate *a,
		   const struct producer_event *event)
{
	const struct producer_op *e = &event->op;
	bool out = e->noutputs > 0;
	bool made;
	struct row *r = op_row_of(a, e, &made);

	if (!r)
		return false;
	if (made) {
		copy_name(r->op, NAME_LEN, e->op);
		copy_name(r->overload, OVERLOAD_LEN, e->overload);
		r->m.op = (struct raw_step_op){
			.phase = e->phase, .policy = e->policy,
			.device = e->device, .has_dtype = out,
			.dtype = out ? e->outputs[0].dtype : 0,
		};
	}
	r->m.op.count++;
	r->m.op.failed += e->status != 0;
	r->m.op.dur_ns += event->time_ns > e->begin_ns && e->begin_ns
				  ? event->time_ns - e->begin_ns : 0;
	return true;
}

/* ---------------------------------------------------------------- casts */

struct cast_key {
	const struct producer_cast *e;
	const struct open_op *op;
};

static bool cast_matches(const struct row *r, const void *key)
{
	const struct cast_key *k = key;
	const struct raw_step_cast *m = &r->m.cast;

	return m->from == k->e->from && m->to == k->e->to &&
	       m->cache == k->e->cache && m->phase == k->op->phase &&
	       same_name(r->op, NAME_LEN, k->op->name) &&
	       same_name(r->overload, ORIGIN_LEN, k->e->origin);
}

/* The op `op_id` names among the open ones (innermost first). */
static const struct open_op *open_op_of(const struct step_aggregate *a,
					uint64_t op_id)
{
	static const struct open_op unknown = { 0, 0, "" } /* phase 0: forward */;

	for (int i = (a->nopen < OPEN_OPS ? a->nopen : OPEN_OPS); i-- > 0;)
		if (a->open[i].op_id == op_id)
			return &a->open[i];
	return &unknown;
}

static bool add_cast(struct step_aggregate *a,
		     const struct producer_event *event)
{
	const struct producer_cast *e = &event->cast;
	struct cast_key key = { e, open_op_of(a, e->op_id) };
	uint64_t h = hash_u64(hash_str(hash_str(0x84222325cbf29ce4ull,
						 key.op->name), e->origin),
			      (uint64_t)key.op->phase << 24 |
				      (uint64_t)e->from << 16 |
				      (uint64_t)e->to << 8 | (uint64_t)e->cache);
	bool made;
	struct row *r = row_of(a, RAW_KIND_STEP_CAST, h, cast_matches, &key,
			       0, &made);

	if (e->cache_counted) {
		a->totals->cache_entries = e->cache_entries;
		a->totals->cache_bytes = e->cache_bytes;
		if (e->cache_entries > a->totals->cache_max_entries)
			a->totals->cache_max_entries = e->cache_entries;
		if (e->cache_bytes > a->totals->cache_max_bytes)
			a->totals->cache_max_bytes = e->cache_bytes;
	}
	if (!r)
		return false;
	if (made) {
		copy_name(r->op, NAME_LEN, key.op->name);
		if (e->origin)
			copy_name(r->overload, ORIGIN_LEN, e->origin);
		r->m.cast = (struct raw_step_cast){
			.phase = key.op->phase, .from = e->from, .to = e->to,
			.cache = e->cache,
		};
	}
	r->m.cast.count++;
	r->m.cast.bytes += e->bytes;
	r->m.cast.stale += e->stale;
	r->m.cast.dur_ns += event->time_ns > e->begin_ns && e->begin_ns
				    ? event->time_ns - e->begin_ns : 0;
	return true;
}

/* ---------------------------------------------------------------- diags */

struct diag_key {
	const char *kind;
	uint8_t phase;
};

static bool diag_matches(const struct row *r, const void *key)
{
	const struct diag_key *k = key;

	return r->m.diag.phase == k->phase && same_name(r->op, NAME_LEN, k->kind);
}

static bool add_diag(struct step_aggregate *a,
		     const struct producer_event *event)
{
	const struct producer_diag *e = &event->diag;
	struct diag_key key = {
		e->kind, a->nopen > 0 && a->nopen <= OPEN_OPS
				 ? a->open[a->nopen - 1].phase : a->last_phase,
	};
	uint64_t h = hash_u64(hash_str(0x9ce484222325cbf2ull, e->kind),
			      key.phase);
	size_t message = e->message && *e->message
				 ? strnlen(e->message, RAW_MAX_STRING - 1) + 1 : 0;
	bool made;
	struct row *r = row_of(a, RAW_KIND_STEP_DIAG, h, diag_matches, &key,
			       (uint16_t)((message + sizeof *r - 1) / sizeof *r),
			       &made);

	if (!r)
		return false;
	if (made) {
		copy_name(r->op, NAME_LEN, e->kind);
		if (message)
			copy_name(message_of(r), message, e->message);
		r->m.diag = (struct raw_step_diag){
			.phase = key.phase, .op_id = e->op_id,
			.tensor = e->tensor_id,
		};
	}
	r->m.diag.count++;
	return true;
}

/* -------------------------------------------------------------- folding */

static void open_op(struct step_aggregate *a, const struct producer_op *e)
{
	if (a->nopen < OPEN_OPS) {
		struct open_op *o = &a->open[a->nopen];
		o->op_id = e->op_id;
		o->phase = e->phase;
		copy_name(o->name, NAME_LEN, e->op);
	}
	a->nopen++;
}

/* The rows whose names are set, for a reader of the file. */
static bool published(struct step_aggregate *a, bool added)
{
	if (atomic_load_explicit(&a->live->nrows, memory_order_relaxed) !=
	    a->nrows)
		atomic_store_explicit(&a->live->nrows, a->nrows,
				      memory_order_release);
	return added;
}

bool step_aggregate_add(struct step_aggregate *a,
			const struct producer_event *e)
{
	if (!a->totals->events++)
		a->totals->begin_ns = e->time_ns;
	a->totals->end_ns = e->time_ns;
	switch (e->kind) {
	case PRODUCER_OP_BEGIN:
		open_op(a, &e->op);
		return true;
	case PRODUCER_OP_END:
		if (a->nopen > 0)
			a->nopen--;
		a->last_phase = e->op.phase;
		return published(a, add_op(a, e));
	case PRODUCER_CAST:
		return published(a, add_cast(a, e));
	case PRODUCER_SCOPE_ENTER:
		a->totals->regions++;
		return true;
	case PRODUCER_CACHE_CLEAR:
		a->totals->clears++;
		a->totals->cache_entries = 0;
		a->totals->cache_bytes = 0;
		return true;
	case PRODUCER_DIAG:
		return published(a, add_diag(a, e));
	default:
		return true;
	}
}

void step_aggregate_rows(const struct step_aggregate *a,
			 step_aggregate_row_fn *row, void *user)
{
	for (uint32_t i = 0; i < a->nrows; i = next_row(a->rows, i)) {
		const struct row *r = &a->rows[i];
		bool more;
		if (r->kind == RAW_KIND_STEP_OP) {
			struct raw_step_op m = r->m.op;
			m.step = a->totals->step;
			m.op = r->op;
			m.overload = r->overload;
			more = row(user, r->kind, &m);
		} else if (r->kind == RAW_KIND_STEP_CAST) {
			struct raw_step_cast m = r->m.cast;
			m.step = a->totals->step;
			m.op = r->op;
			m.origin = r->overload[0] ? r->overload : NULL;
			more = row(user, r->kind, &m);
		} else {
			struct raw_step_diag m = r->m.diag;
			m.step = a->totals->step;
			m.kind = r->op;
			m.message = r->message_rows ? message_of(r) : NULL;
			more = row(user, r->kind, &m);
		}
		if (!more)
			return;
	}
	row(user, RAW_KIND_STEP_TOTALS, a->totals);
}

/* ------------------------------------------------------------- reading */

/* Whether the file's rows are in no stream: counted and not flushed, or
 * sealed by a flush whose totals row the stream lacks (the thread ended
 * between its seal and its last row). */
static bool rows_unwritten(const struct live *live, uint64_t written,
			   bool *whole)
{
	uint64_t flushes = atomic_load(&live->flushes);

	*whole = flushes & 1 && atomic_load(&live->whole);
	return !(flushes & 1) || (flushes + 1) / 2 > written;
}

struct step_aggregate *step_aggregate_left(const void *data, size_t size,
					   uint64_t written, bool *whole)
{
	const struct live *live = data;

	*whole = false;
	if (size < sizeof *live || live->magic != LIVE_MAGIC ||
	    live->version != RAW_VERSION ||
	    live->row_size != sizeof(struct row) ||
	    !rows_unwritten(live, written, whole) || !live->totals.events)
		return NULL;
	uint32_t nrows = atomic_load(&live->nrows);
	if (nrows > (size - sizeof *live) / sizeof(struct row))
		return NULL;
	struct step_aggregate *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	a->live = malloc(live_size(nrows));
	if (!a->live) {
		free(a);
		return NULL;
	}
	memcpy(a->live, live, live_size(nrows));
	a->rows = a->live->rows;
	a->totals = &a->live->totals;
	a->nrows = a->cap_rows = nrows;
	/* a name cut by the kill still ends; a message past the rows
	 * published is not a row's */
	for (uint32_t i = 0; i < nrows; i = next_row(a->rows, i)) {
		struct row *r = &a->rows[i];
		if (r->message_rows > MESSAGE_ROWS_MAX ||
		    r->message_rows >= nrows - i) {
			a->nrows = i;
			break;
		}
		r->op[NAME_LEN - 1] = r->overload[OVERLOAD_LEN - 1] = '\0';
		if (r->message_rows)
			message_of(r)[r->message_rows * sizeof *r - 1] = '\0';
	}
	return a;
}
