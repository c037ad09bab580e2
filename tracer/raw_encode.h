/* The raw record encoder, generated from raw_schema.h: static inline so
 * that producer_emit's hot path compiles to straight stores.  For each
 * kind <name> of the schema:
 *   size_t raw_bound_<name>(const MODEL *m)   an upper bound of the
 *       payload, without strlen (the record must fit before it is written)
 *   uint8_t *raw_encode_<name>(uint8_t *p, const MODEL *m)   writes the
 *       payload at p, returns its end
 * and raw_event_bound/raw_event_encode dispatch a struct amp_event on its
 * kind (bound 0: not a recorded kind). */
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

static inline uint8_t *raw_put_str(uint8_t *p, const char *s)
{
	uint16_t len = RAW_NULL_STRING;

	if (s)
		len = (uint16_t)strnlen(s, RAW_MAX_STRING);
	memcpy(p, &len, 2);
	p += 2;
	if (s) {
		memcpy(p, s, len);
		p[len] = '\0';
		p += len + 1;
	}
	return p;
}

#define RAW_STR_BOUND (2 + RAW_MAX_STRING + 1)
#define RAW_TENSOR_BOUND (16 + 4 + 8 * AMP_MAX_DIMS + RAW_STR_BOUND)
#define RAW_AUTOCAST_BOUND (8 + RAW_STR_BOUND)

static inline int raw_tensor_dims(const struct amp_tensor_info *t)
{
	return t->ndim < 0 ? 0 : t->ndim > AMP_MAX_DIMS ? AMP_MAX_DIMS : t->ndim;
}

static inline uint8_t *raw_put_tensor(uint8_t *p, const struct amp_tensor_info *t)
{
	int ndim = raw_tensor_dims(t);

	p = raw_put_u64(p, t->id);
	p = raw_put_u64(p, t->producer_op_id);
	p = raw_put_u8(p, t->dtype);
	p = raw_put_u8(p, t->device);
	p = raw_put_u8(p, (unsigned)ndim);
	unsigned flags = (t->is_leaf ? RAW_TENSOR_LEAF : 0u) |
			 (t->requires_grad ? RAW_TENSOR_REQUIRES_GRAD : 0u) |
			 (t->is_view ? RAW_TENSOR_VIEW : 0u);
	p = raw_put_u8(p, flags);
	memcpy(p, t->shape, (size_t)ndim * 8);
	p += (size_t)ndim * 8;
	return raw_put_str(p, t->name);
}

static inline int raw_tensor_count(int n)
{
	return n < 0 ? 0 : n > RAW_MAX_TENSORS ? RAW_MAX_TENSORS : n;
}

static inline uint8_t *raw_put_tensors(uint8_t *p,
				       const struct amp_tensor_info *list, int n)
{
	n = raw_tensor_count(n);
	p = raw_put_u8(p, (unsigned)n);
	for (int i = 0; i < n; i++)
		p = raw_put_tensor(p, &list[i]);
	return p;
}

/* One field: X(TYPE, field, extra) of a model `m`, written at p. */
#define RAW_ENC_U64(f, x) p = raw_put_u64(p, (uint64_t)m->f);
#define RAW_ENC_I32(f, x) p = raw_put_i32(p, (int32_t)m->f);
#define RAW_ENC_U8(f, x) p = raw_put_u8(p, (unsigned)m->f);
#define RAW_ENC_F64(f, x) p = raw_put_f64(p, m->f);
#define RAW_ENC_STR(f, x) p = raw_put_str(p, m->f);
#define RAW_ENC_STR_IF(f, x) p = raw_put_str(p, m->x ? m->f : NULL);
#define RAW_ENC_U64_IF(f, x) if (m->x) p = raw_put_u64(p, (uint64_t)m->f);
#define RAW_ENC_PAD(f, x) p = raw_put_u8(p, 0);
#define RAW_ENC_AUTOCAST(f, x) p = raw_put_autocast(p, &m->f);
#define RAW_ENC_TENSOR(f, x) p = raw_put_tensor(p, &m->f);
#define RAW_ENC_TENSORS(f, x) p = raw_put_tensors(p, m->f, m->x);
#define RAW_ENC_FIELD(type, f, x) RAW_ENC_##type(f, x)

/* Upper bound of one field's size. */
#define RAW_BOUND_U64(f, x) + 8
#define RAW_BOUND_I32(f, x) + 4
#define RAW_BOUND_U8(f, x) + 1
#define RAW_BOUND_F64(f, x) + 8
#define RAW_BOUND_STR(f, x) + RAW_STR_BOUND
#define RAW_BOUND_STR_IF(f, x) + RAW_STR_BOUND
#define RAW_BOUND_U64_IF(f, x) + 8
#define RAW_BOUND_PAD(f, x) + 1
#define RAW_BOUND_AUTOCAST(f, x) + RAW_AUTOCAST_BOUND
#define RAW_BOUND_TENSOR(f, x) + RAW_TENSOR_BOUND
#define RAW_BOUND_TENSORS(f, x)                                             \
	+1 + (size_t)raw_tensor_count(m->x) * RAW_TENSOR_BOUND
#define RAW_BOUND_FIELD(type, f, x) RAW_BOUND_##type(f, x)

static inline uint8_t *raw_put_autocast(uint8_t *p,
					const struct amp_autocast_info *m)
{
	RAW_AUTOCAST_FIELDS(RAW_ENC_FIELD)
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
#undef RAW_ENCODER

static inline size_t raw_event_bound(const struct amp_event *e)
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

static inline uint8_t *raw_event_encode(uint8_t *p, const struct amp_event *e)
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
