/* A thread's aggregates of a step (step_aggregate.h): rows in an array,
 * found through an open-addressing table of their indices. */
#include "step_aggregate.h"

#include <stdlib.h>
#include <string.h>

#define NAME_LEN 96
#define OVERLOAD_LEN 48
#define OPEN_OPS 16
#define FAST_OPS 64
#define ORIGIN_LEN 16

struct row {
	uint16_t kind;          /* RAW_KIND_STEP_OP, _CAST or _DIAG */
	uint64_t hash;
	char op[NAME_LEN];      /* the op; a diag's kind */
	char overload[OVERLOAD_LEN]; /* an op's; a cast's origin */
	char *message;          /* a diag's first message (owned) */
	union {
		struct raw_step_op op;
		struct raw_step_cast cast;
		struct raw_step_diag diag;
	} m;
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
	struct row *rows;
	uint32_t nrows, cap_rows;
	uint32_t *slots;        /* row index + 1; 0: empty */
	uint32_t nslots;        /* a power of two */
	struct raw_step_totals totals;
	struct open_op open[OPEN_OPS];
	int nopen;              /* may exceed OPEN_OPS: those are not kept */
	uint8_t last_phase;
};

struct step_aggregate *step_aggregate_new(void)
{
	return calloc(1, sizeof(struct step_aggregate));
}

void step_aggregate_free(struct step_aggregate *a)
{
	if (!a)
		return;
	for (uint32_t i = 0; i < a->nrows; i++)
		free(a->rows[i].message);
	free(a->rows);
	free(a->slots);
	free(a);
}

void step_aggregate_reset(struct step_aggregate *a, uint64_t step)
{
	for (uint32_t i = 0; i < a->nrows; i++)
		free(a->rows[i].message);
	a->nrows = 0;
	if (a->slots)
		memset(a->slots, 0, a->nslots * sizeof *a->slots);
	/* the cache outlives the step: its size carries over */
	a->totals = (struct raw_step_totals){
		.step = step, .cache_entries = a->totals.cache_entries,
		.cache_bytes = a->totals.cache_bytes,
		.cache_max_entries = a->totals.cache_entries,
		.cache_max_bytes = a->totals.cache_bytes,
	};
	a->nopen = 0;
}

uint64_t step_aggregate_step(const struct step_aggregate *a)
{
	return a->totals.step;
}

uint64_t step_aggregate_events(const struct step_aggregate *a)
{
	return a->totals.events;
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
	for (uint32_t r = 0; r < a->nrows; r++) {
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

/* The row of `key` (kind, hash, and the names and fields `matches`
 * compares), made when new; NULL when out of memory. */
static struct row *row_of(struct step_aggregate *a, uint16_t kind,
			  uint64_t hash, bool (*matches)(const struct row *,
							 const void *),
			  const void *key, bool *made)
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
	if (a->nrows == a->cap_rows) {
		uint32_t cap = a->cap_rows ? a->cap_rows * 2 : 32;
		struct row *grown = realloc(a->rows, cap * sizeof *grown);
		if (!grown)
			return NULL;
		a->rows = grown;
		a->cap_rows = cap;
	}
	struct row *r = &a->rows[a->nrows];
	memset(r, 0, sizeof *r);
	r->kind = kind;
	r->hash = hash;
	a->slots[i] = ++a->nrows;
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
	struct row *r = row_of(a, RAW_KIND_STEP_OP, h, op_matches, e, made);
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
			       &made);

	if (e->cache_counted) {
		a->totals.cache_entries = e->cache_entries;
		a->totals.cache_bytes = e->cache_bytes;
		if (e->cache_entries > a->totals.cache_max_entries)
			a->totals.cache_max_entries = e->cache_entries;
		if (e->cache_bytes > a->totals.cache_max_bytes)
			a->totals.cache_max_bytes = e->cache_bytes;
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
	bool made;
	struct row *r = row_of(a, RAW_KIND_STEP_DIAG, h, diag_matches, &key,
			       &made);

	if (!r)
		return false;
	if (made) {
		copy_name(r->op, NAME_LEN, e->kind);
		r->message = e->message ? strdup(e->message) : NULL;
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

bool step_aggregate_add(struct step_aggregate *a,
			const struct producer_event *e)
{
	if (!a->totals.events++)
		a->totals.begin_ns = e->time_ns;
	switch (e->kind) {
	case PRODUCER_OP_BEGIN:
		open_op(a, &e->op);
		return true;
	case PRODUCER_OP_END:
		if (a->nopen > 0)
			a->nopen--;
		a->last_phase = e->op.phase;
		return add_op(a, e);
	case PRODUCER_CAST:
		return add_cast(a, e);
	case PRODUCER_SCOPE_ENTER:
		a->totals.regions++;
		return true;
	case PRODUCER_CACHE_CLEAR:
		a->totals.clears++;
		a->totals.cache_entries = 0;
		a->totals.cache_bytes = 0;
		return true;
	case PRODUCER_DIAG:
		return add_diag(a, e);
	default:
		return true;
	}
}

void step_aggregate_rows(const struct step_aggregate *a,
			 step_aggregate_row_fn *row, void *user)
{
	for (uint32_t i = 0; i < a->nrows; i++) {
		const struct row *r = &a->rows[i];
		bool more;
		if (r->kind == RAW_KIND_STEP_OP) {
			struct raw_step_op m = r->m.op;
			m.step = a->totals.step;
			m.op = r->op;
			m.overload = r->overload;
			more = row(user, r->kind, &m);
		} else if (r->kind == RAW_KIND_STEP_CAST) {
			struct raw_step_cast m = r->m.cast;
			m.step = a->totals.step;
			m.op = r->op;
			m.origin = r->overload[0] ? r->overload : NULL;
			more = row(user, r->kind, &m);
		} else {
			struct raw_step_diag m = r->m.diag;
			m.step = a->totals.step;
			m.kind = r->op;
			m.message = r->message;
			more = row(user, r->kind, &m);
		}
		if (!more)
			return;
	}
	row(user, RAW_KIND_STEP_TOTALS, &a->totals);
}
