/* The raw record decoder (raw_decode.h): each kind's fields come from
 * raw_schema.h, the tables the encoder (raw_encode.h) is generated from. */
#include "raw_decode.h"

#include <stdlib.h>
#include <string.h>

struct cursor {
	const uint8_t *p, *end;
	bool bad;
	struct raw_decoded *d;
};

static bool need(struct cursor *c, size_t n)
{
	if (c->bad || (size_t)(c->end - c->p) < n) {
		c->bad = true;
		return false;
	}
	return true;
}

/* Copies the next n bytes to dst; zeros when the payload is too short. */
static void take(struct cursor *c, void *dst, size_t n)
{
	if (need(c, n)) {
		memcpy(dst, c->p, n);
		c->p += n;
	} else {
		memset(dst, 0, n);
	}
}

/* get_u64, get_i32, get_u8, get_f64: the next value, 0 past the end. */
#define GETTER(name, type, result)                                          \
	static result name(struct cursor *c)                                \
	{                                                                   \
		type v;                                                     \
		take(c, &v, sizeof v);                                      \
		return v;                                                   \
	}
GETTER(get_u64, uint64_t, uint64_t)
GETTER(get_i32, int32_t, int32_t)
GETTER(get_u8, uint8_t, unsigned)
GETTER(get_f64, double, double)
#undef GETTER

/* A varint (raw_encode.h's raw_put_var); 0 and bad past the end or
 * beyond 10 bytes. */
static uint64_t get_var(struct cursor *c)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 64 && !c->bad; shift += 7) {
		if (c->p >= c->end)
			break;
		uint8_t b = *c->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	c->bad = true;
	return 0;
}

static int64_t get_zigzag(struct cursor *c)
{
	uint64_t v = get_var(c);

	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* The string where it lies in the record (the encoder ends each with a
 * NUL, checked here): valid as long as the record is. */
static const char *get_str(struct cursor *c)
{
	uint64_t len = get_var(c);

	if (c->bad || len-- == 0)
		return NULL;
	if (len > RAW_MAX_STRING || !need(c, (size_t)len + 1) ||
	    c->p[len] != '\0') {
		c->bad = true;
		return NULL;
	}
	const char *s = (const char *)c->p;
	c->p += (size_t)len + 1;
	return s;
}

/* DIMS: a count (at most `max`, else the record is bad), then as many
 * signed varints. */
static uint8_t get_dims(struct cursor *c, int64_t *dims, unsigned max)
{
	unsigned n = get_u8(c);

	if (n > max) {
		c->bad = true;
		return 0;
	}
	for (unsigned d = 0; d < n; d++)
		dims[d] = get_zigzag(c);
	return (uint8_t)n;
}

#define DEC_U64(f, x) m->f = get_u64(c);
#define DEC_I32(f, x) m->f = get_i32(c);
#define DEC_U8(f, x) m->f = get_u8(c);
#define DEC_F64(f, x) m->f = get_f64(c);
#define DEC_V64(f, x) m->f = get_var(c);
#define DEC_S32(f, x) m->f = (int32_t)get_zigzag(c);
#define DEC_T64(f, x) m->f = m->time_ns - (uint64_t)get_zigzag(c);
#define DEC_STR(f, x) m->f = get_str(c);
#define DEC_STR_IF(f, x) m->f = get_str(c);
#define DEC_FLAGS(f, x) m->f = (uint8_t)get_u8(c);
#define DEC_V64_IF(f, x) if (m->x) m->f = get_var(c);
#define DEC_DIMS(f, x)                                                      \
	m->x = get_dims(c, m->f, sizeof m->f / sizeof m->f[0]);
#define DEC_PAD(f, x) get_u8(c);
#define DEC_AUTOCAST(f, x) get_autocast(c, &m->f);
#define DEC_TENSOR(f, x) get_tensor(c, &m->f);
#define DEC_TENSORS(f, x) m->f = get_tensors(c, &m->x);
#define DEC_OP_KEYS(f, x) get_op_keys(c, &m->f);
#define DEC_CAST_KEYS(f, x) get_cast_keys(c, &m->f);
#define DEC_DIAG_KEYS(f, x) get_diag_keys(c, &m->f);
#define DEC_FIELD(type, f, x) DEC_##type(f, x)

/* OP_KEYS, CAST_KEYS and DIAG_KEYS: the rows of ../producer_keys.h the
 * mask says are there (the members are NULL or 0 already: raw_decode
 * zeroes the event); a bit of no row is a bad record. */
#define DEC_KEY(X, type, f, key, check, since)                              \
	if (mask >> bit++ & 1)                                              \
		m->f = DEC_KEY_##type(c);
#define DEC_KEY_STRING get_str
#define DEC_KEY_ID get_var

static void get_op_keys(struct cursor *c, struct producer_op *m)
{
	uint64_t mask = get_var(c);
	unsigned bit = 0;

	if (!mask)
		return; /* libamp's, and most */
	PRODUCER_OP_KEYS(DEC_KEY, _)
	if (mask >> bit)
		c->bad = true;
}

static void get_cast_keys(struct cursor *c, struct producer_cast *m)
{
	uint64_t mask = get_var(c);
	unsigned bit = 0;

	if (!mask)
		return;
	PRODUCER_CAST_KEYS(DEC_KEY, _)
	if (mask >> bit)
		c->bad = true;
}

static void get_diag_keys(struct cursor *c, struct producer_diag *m)
{
	uint64_t mask = get_var(c);
	unsigned bit = 0;

	if (!mask)
		return; /* libamp's, and every diag but FSDP's notes */
	PRODUCER_DIAG_KEYS(DEC_KEY, _)
	if (mask >> bit)
		c->bad = true;
}

static void get_autocast(struct cursor *c, struct producer_autocast *m)
{
	RAW_AUTOCAST_FIELDS(DEC_FIELD)
}

static void get_tensor(struct cursor *c, struct producer_tensor *m)
{
	*m = (struct producer_tensor){ 0 };
	RAW_TENSOR_FIELDS(DEC_FIELD)
}

static const struct producer_tensor *get_tensors(struct cursor *c,
						 int32_t *count)
{
	struct raw_decoded *d = c->d;
	struct producer_tensor *list = &d->tensors[d->ntensors];

	*count = (int32_t)get_u8(c);
	for (int i = 0; i < *count && !c->bad; i++)
		get_tensor(c, &list[i]);
	d->ntensors += (size_t)*count;
	return list;
}

#define DECODER(name, number, model, fields)                                \
	static void decode_##name(struct cursor *c, model *m)               \
	{                                                                   \
		fields(DEC_FIELD)                                           \
	}
RAW_EVENT_KINDS(DECODER)
RAW_GPU_KINDS(DECODER)
RAW_STEP_KINDS(DECODER)
RAW_PROCESS_KINDS(DECODER)
#undef DECODER

bool raw_decode(const struct raw_record *r, struct raw_decoded *d)
{
	size_t size = atomic_load_explicit(&r->size, memory_order_acquire);
	struct cursor c = { (const uint8_t *)(r + 1), (const uint8_t *)r + size,
			    false, d };

	if (size < sizeof *r)
		return false;
	d->ntensors = 0;
	d->kind = r->kind;
	d->time_ns = r->time_ns;
	switch (r->kind) {
#define DECODE_EVENT(name, number, model, fields)                           \
	case number:                                                        \
		d->event = (struct producer_event){ .kind = number,         \
						    .time_ns = r->time_ns }; \
		decode_##name(&c, &d->event);                               \
		break;
		RAW_EVENT_KINDS(DECODE_EVENT)
#undef DECODE_EVENT
	case RAW_KIND_GPU_ACTIVITY:
		d->gpu_activity =
			(struct amp_gpu_activity){ .start_ns = r->time_ns };
		decode_gpu_activity(&c, &d->gpu_activity);
		break;
	case RAW_KIND_GPU_STATUS:
		d->gpu_status = (struct raw_gpu_status){ 0 };
		decode_gpu_status(&c, &d->gpu_status);
		break;
	case RAW_KIND_GPU_STATS:
		d->gpu_stats = (struct raw_gpu_stats){ 0 };
		decode_gpu_stats(&c, &d->gpu_stats);
		break;
#define DECODE_MODEL(name, number, model, fields)                           \
	case number:                                                        \
		d->name = (model){ 0 };                                     \
		decode_##name(&c, &d->name);                                \
		break;
		RAW_STEP_KINDS(DECODE_MODEL)
		RAW_PROCESS_KINDS(DECODE_MODEL)
#undef DECODE_MODEL
	default:
		return false;
	}
	return !c.bad;
}

void raw_decoded_free(struct raw_decoded *d)
{
	d->ntensors = 0;
}
