/* The raw record encoder, generated from raw_schema.h: static inline so
 * that producer_emit's hot path compiles to straight stores.  For each
 * kind <name> of the schema:
 *   size_t raw_bound_<name>(const MODEL *m)   an upper bound of the
 *       payload, without strlen (the record must fit before it is written)
 *   uint8_t *raw_encode_<name>(uint8_t *p, const MODEL *m)   writes the
 *       payload at p, returns its end
 * and raw_event_bound/raw_event_encode dispatch a struct producer_event
 * on its kind (bound 0: not a recorded kind). */
#ifndef AMPTRACE_RAW_ENCODE_H
#define AMPTRACE_RAW_ENCODE_H

#include "raw_schema.h"

#include <stddef.h>
#include <string.h>

static inline uint8_t *raw_put_u64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

static inline uint8_t *raw_put_i32(uint8_t *p, int32_t v)
{
	memcpy(p, &v, 4);
	return p + 4;
}

static inline uint8_t *raw_put_u8(uint8_t *p, unsigned v)
{
	*p = (uint8_t)v;
	return p + 1;
}

static inline uint8_t *raw_put_f64(uint8_t *p, double v)
{
	memcpy(p, &v, 8);
	return p + 8;
}

/* V64: 7 bits a byte, low first, the top bit set on all but the last.
 * Ids, dims and time deltas mostly take one or two bytes: those are
 * written without a loop. */
static inline uint8_t *raw_put_var(uint8_t *p, uint64_t v)
{
	if (v < 0x80) {
		*p = (uint8_t)v;
		return p + 1;
	}
	if (v < 0x4000) {
		p[0] = (uint8_t)(v | 0x80);
		p[1] = (uint8_t)(v >> 7);
		return p + 2;
	}
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Zigzag: small magnitudes of either sign become small varints. */
static inline uint64_t raw_zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

/* n bytes from s to p: short strings (op names, scopes, tensor names)
 * with two overlapping moves instead of a memcpy call. */
static inline void raw_copy(uint8_t *p, const char *s, size_t n)
{
	uint64_t a, b;
	uint32_t c, d;

	if (n >= 8 && n <= 16) {
		memcpy(&a, s, 8);
		memcpy(&b, s + n - 8, 8);
		memcpy(p, &a, 8);
		memcpy(p + n - 8, &b, 8);
	} else if (n >= 4 && n < 8) {
		memcpy(&c, s, 4);
		memcpy(&d, s + n - 4, 4);
		memcpy(p, &c, 4);
		memcpy(p + n - 4, &d, 4);
	} else if (n < 4) {
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)s[i];
	} else {
		memcpy(p, s, n);
	}
}

static inline uint8_t *raw_put_str(uint8_t *p, const char *s)
{
	if (!s) {
		*p = 0;
		return p + 1;
	}
	size_t len = strnlen(s, RAW_MAX_STRING);
	/* gcc cannot tie len to a constant string's size and would warn
	 * about raw_copy's moves on branches that never run: hide s. */
	__asm__("" : "+r"(s));
	p = raw_put_var(p, len + 1);
	raw_copy(p, s, len);
	p[len] = '\0';
	return p + len + 1;
}

#define RAW_VAR_BOUND 10
/* A string's length + 1 is a varint of at most 2 bytes (< 2^14). */
#define RAW_STR_BOUND (2 + RAW_MAX_STRING + 1)
_Static_assert(RAW_MAX_STRING + 1 < 0x4000,
	       "RAW_STR_BOUND assumes a 2-byte string-length varint");
#define RAW_DIMS_BOUND (1 + 10 * PRODUCER_MAX_DIMS)
#define RAW_TENSOR_BOUND (2 * RAW_VAR_BOUND + 3 + RAW_DIMS_BOUND + RAW_STR_BOUND)
#define RAW_AUTOCAST_BOUND (4 + 5 + RAW_STR_BOUND)

/* A DIMS count, within what the decoder accepts. */
static inline unsigned raw_dims_count(unsigned n)
{
	return n > PRODUCER_MAX_DIMS ? PRODUCER_MAX_DIMS : n;
}

static inline uint8_t *raw_put_dims(uint8_t *p, const int64_t *dims,
				    unsigned n)
{
	n = raw_dims_count(n);
	p = raw_put_u8(p, n);
	for (unsigned d = 0; d < n; d++)
		p = raw_put_var(p, raw_zigzag(dims[d]));
	return p;
}

static inline int raw_tensor_count(int n)
{
	return n < 0 ? 0 : n > RAW_MAX_TENSORS ? RAW_MAX_TENSORS : n;
}

/* One field: X(TYPE, field, extra) of a model `m`, written at p. */
#define RAW_ENC_U64(f, x) p = raw_put_u64(p, (uint64_t)m->f);
#define RAW_ENC_I32(f, x) p = raw_put_i32(p, (int32_t)m->f);
#define RAW_ENC_U8(f, x) p = raw_put_u8(p, (unsigned)m->f);
#define RAW_ENC_F64(f, x) p = raw_put_f64(p, m->f);
#define RAW_ENC_V64(f, x) p = raw_put_var(p, (uint64_t)m->f);
#define RAW_ENC_S32(f, x) p = raw_put_var(p, raw_zigzag((int32_t)m->f));
#define RAW_ENC_T64(f, x)                                                   \
	p = raw_put_var(p, raw_zigzag((int64_t)(m->time_ns - m->f)));
#define RAW_ENC_STR(f, x) p = raw_put_str(p, m->f);
#define RAW_ENC_STR_IF(f, x) p = raw_put_str(p, m->x ? m->f : NULL);
#define RAW_ENC_FLAGS(f, x) p = raw_put_u8(p, m->f);
#define RAW_ENC_V64_IF(f, x) if (m->x) p = raw_put_var(p, (uint64_t)m->f);
#define RAW_ENC_DIMS(f, x) p = raw_put_dims(p, m->f, m->x);
#define RAW_ENC_PAD(f, x) p = raw_put_u8(p, 0);
#define RAW_ENC_AUTOCAST(f, x) p = raw_put_autocast(p, &m->f);
#define RAW_ENC_TENSOR(f, x) p = raw_put_tensor(p, &m->f);
#define RAW_ENC_TENSORS(f, x) p = raw_put_tensors(p, m->f, m->x);
#define RAW_ENC_OP_KEYS(f, x) p = raw_put_op_keys(p, &m->f);
#define RAW_ENC_CAST_KEYS(f, x) p = raw_put_cast_keys(p, &m->f);
#define RAW_ENC_DIAG_KEYS(f, x) p = raw_put_diag_keys(p, &m->f);
#define RAW_ENC_FIELD(type, f, x) RAW_ENC_##type(f, x)

/* Upper bound of one field's size. */
#define RAW_BOUND_U64(f, x) + 8
#define RAW_BOUND_I32(f, x) + 4
#define RAW_BOUND_U8(f, x) + 1
#define RAW_BOUND_F64(f, x) + 8
#define RAW_BOUND_V64(f, x) + RAW_VAR_BOUND
#define RAW_BOUND_S32(f, x) + 5
#define RAW_BOUND_T64(f, x) + RAW_VAR_BOUND
#define RAW_BOUND_STR(f, x) + RAW_STR_BOUND
#define RAW_BOUND_STR_IF(f, x) + RAW_STR_BOUND
#define RAW_BOUND_FLAGS(f, x) + 1
#define RAW_BOUND_V64_IF(f, x) + RAW_VAR_BOUND
#define RAW_BOUND_DIMS(f, x) + RAW_DIMS_BOUND
#define RAW_BOUND_PAD(f, x) + 1
#define RAW_BOUND_AUTOCAST(f, x) + RAW_AUTOCAST_BOUND
#define RAW_BOUND_TENSOR(f, x) + RAW_TENSOR_BOUND
#define RAW_BOUND_OP_KEYS(f, x) + RAW_OP_KEYS_BOUND
#define RAW_BOUND_CAST_KEYS(f, x) + RAW_CAST_KEYS_BOUND
#define RAW_BOUND_DIAG_KEYS(f, x) + RAW_DIAG_KEYS_BOUND
#define RAW_BOUND_TENSORS(f, x)                                             \
	+1 + (size_t)raw_tensor_count(m->x) * RAW_TENSOR_BOUND
#define RAW_BOUND_FIELD(type, f, x) RAW_BOUND_##type(f, x)

/* OP_KEYS, CAST_KEYS and DIAG_KEYS: which of ../producer_keys.h's rows
 * are set, then those.  `m` is the op, cast or diag. */
#define RAW_KEY_IS_SET(X, type, f, key, check, since)                       \
	mask |= (m->f ? 1u : 0u) << bit++;
#define RAW_KEY_PUT(X, type, f, key, check, since)                          \
	if (m->f)                                                           \
		p = RAW_KEY_PUT_##type(p, m->f);
#define RAW_KEY_PUT_STRING raw_put_str
#define RAW_KEY_PUT_ID raw_put_var
#define RAW_KEY_BOUND(X, type, f, key, check, since)                        \
	+ RAW_KEY_BOUND_##type
#define RAW_KEY_BOUND_STRING RAW_STR_BOUND
#define RAW_KEY_BOUND_ID RAW_VAR_BOUND
#define RAW_OP_KEYS_BOUND                                                   \
	(RAW_VAR_BOUND PRODUCER_OP_KEYS(RAW_KEY_BOUND, _))
#define RAW_CAST_KEYS_BOUND                                                 \
	(RAW_VAR_BOUND PRODUCER_CAST_KEYS(RAW_KEY_BOUND, _))
#define RAW_DIAG_KEYS_BOUND                                                 \
	(RAW_VAR_BOUND PRODUCER_DIAG_KEYS(RAW_KEY_BOUND, _))

static inline uint8_t *raw_put_op_keys(uint8_t *p, const struct producer_op *m)
{
	unsigned mask = 0, bit = 0;

	PRODUCER_OP_KEYS(RAW_KEY_IS_SET, _)
	p = raw_put_var(p, mask);
	PRODUCER_OP_KEYS(RAW_KEY_PUT, _)
	return p;
}

static inline uint8_t *raw_put_cast_keys(uint8_t *p,
					 const struct producer_cast *m)
{
	unsigned mask = 0, bit = 0;

	PRODUCER_CAST_KEYS(RAW_KEY_IS_SET, _)
	p = raw_put_var(p, mask);
	PRODUCER_CAST_KEYS(RAW_KEY_PUT, _)
	return p;
}

static inline uint8_t *raw_put_diag_keys(uint8_t *p,
					 const struct producer_diag *m)
{
	unsigned mask = 0, bit = 0;

	PRODUCER_DIAG_KEYS(RAW_KEY_IS_SET, _)
	p = raw_put_var(p, mask);
	PRODUCER_DIAG_KEYS(RAW_KEY_PUT, _)
	return p;
}

static inline uint8_t *raw_put_autocast(uint8_t *p,
					const struct producer_autocast *m)
{
	RAW_AUTOCAST_FIELDS(RAW_ENC_FIELD)
	return p;
}

static inline uint8_t *raw_put_tensor(uint8_t *p,
				      const struct producer_tensor *m)
{
	RAW_TENSOR_FIELDS(RAW_ENC_FIELD)
	return p;
}

static inline uint8_t *raw_put_tensors(uint8_t *p,
				       const struct producer_tensor *list, int n)
{
	n = raw_tensor_count(n);
	p = raw_put_u8(p, (unsigned)n);
	for (int i = 0; i < n; i++)
		p = raw_put_tensor(p, &list[i]);
	return p;
}

#define RAW_ENCODER(name, number, model, fields)                            \
	static inline size_t raw_bound_##name(const model *m)               \
	{                                                                   \
		(void)m;                                                    \
		return 0 fields(RAW_BOUND_FIELD);                           \
	}                                                                   \
	static inline uint8_t *raw_encode_##name(uint8_t *p, const model *m) \
	{                                                                   \
		fields(RAW_ENC_FIELD) return p;                             \
	}
RAW_EVENT_KINDS(RAW_ENCODER)
RAW_GPU_KINDS(RAW_ENCODER)
RAW_STEP_KINDS(RAW_ENCODER)
RAW_PROCESS_KINDS(RAW_ENCODER)
#undef RAW_ENCODER

static inline size_t raw_event_bound(const struct producer_event *e)
{
	switch (e->kind) {
#define RAW_CASE(name, number, model, fields)                               \
	case number:                                                        \
		return raw_bound_##name(e);
		RAW_EVENT_KINDS(RAW_CASE)
#undef RAW_CASE
	default:
		return 0;
	}
}

static inline uint8_t *raw_event_encode(uint8_t *p,
					const struct producer_event *e)
{
	switch (e->kind) {
#define RAW_CASE(name, number, model, fields)                               \
	case number:                                                        \
		return raw_encode_##name(p, e);
		RAW_EVENT_KINDS(RAW_CASE)
#undef RAW_CASE
	default:
		return p;
	}
}

#endif /* AMPTRACE_RAW_ENCODE_H */
