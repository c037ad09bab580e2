/* The raw encoder generated a second time (raw_encode.h has the first),
 * over libamp's `struct amp_event`: the recorder writes each of libamp's
 * events as the producer model's record (producer_event.h), field by
 * field, as the decoder then reads it into the model.  No copy into the
 * model comes first: it cost a third more instructions per event
 * (bench_recorder under callgrind), and every op of a traced program
 * pays it.
 *
 * libamp's members bear the model's names, so raw_schema.h's tables serve
 * both; what differs is spelled out here: a tensor's flags are three
 * bools in libamp, and the keys producers hand over as they are
 * (../producer_keys.h: OP_KEYS, CAST_KEYS, DIAG_KEYS), which libamp
 * lacks, are written as absent.  A member libamp renames
 * fails to compile here; it cannot be misencoded.
 *   size_t libamp_event_bound(const struct amp_event *e)    0: not recorded
 *   uint16_t libamp_event_kind(const struct amp_event *e)   its record kind
 *   uint8_t *libamp_event_encode(uint8_t *p, const struct amp_event *e) */
#ifndef AMPTRACE_LIBAMP_ENCODE_H
#define AMPTRACE_LIBAMP_ENCODE_H

#include "raw_encode.h"

/* libamp's event kinds and the producer's, which name their records. */
#define LIBAMP_KINDS(X)                                                     \
	X(op_begin, AMP_EVENT_OP_BEGIN, PRODUCER_OP_BEGIN)                  \
	X(op_end, AMP_EVENT_OP_END, PRODUCER_OP_END)                        \
	X(cast, AMP_EVENT_CAST, PRODUCER_CAST)                              \
	X(scope_enter, AMP_EVENT_SCOPE_ENTER, PRODUCER_SCOPE_ENTER)         \
	X(scope_exit, AMP_EVENT_SCOPE_EXIT, PRODUCER_SCOPE_EXIT)            \
	X(cache_clear, AMP_EVENT_CACHE_CLEAR, PRODUCER_CACHE_CLEAR)         \
	X(scaler, AMP_EVENT_SCALER, PRODUCER_SCALER)                        \
	X(diag, AMP_EVENT_DIAG, PRODUCER_DIAG)

_Static_assert(AMP_MAX_DIMS == PRODUCER_MAX_DIMS,
	       "libamp's shapes fit the model's");

/* The fields whose libamp form differs; the others are raw_encode.h's. */
#define LIBAMP_ENC_FLAGS(f, x)                                              \
	p = raw_put_u8(p, (m->is_leaf ? PRODUCER_TENSOR_LEAF : 0u) |        \
			  (m->requires_grad ? PRODUCER_TENSOR_REQUIRES_GRAD \
					    : 0u) |                         \
			  (m->is_view ? PRODUCER_TENSOR_VIEW : 0u));
/* libamp's ops, casts and diags have none of the keys producers hand
 * over: a mask of 0, one byte */
#define LIBAMP_ENC_OP_KEYS(f, x) p = raw_put_u8(p, 0);
#define LIBAMP_ENC_CAST_KEYS(f, x) p = raw_put_u8(p, 0);
#define LIBAMP_ENC_DIAG_KEYS(f, x) p = raw_put_u8(p, 0);
#define LIBAMP_ENC_AUTOCAST(f, x) p = libamp_put_autocast(p, &m->f);
#define LIBAMP_ENC_TENSOR(f, x) p = libamp_put_tensor(p, &m->f);
#define LIBAMP_ENC_TENSORS(f, x) p = libamp_put_tensors(p, m->f, m->x);
#define LIBAMP_ENC_U64 RAW_ENC_U64
#define LIBAMP_ENC_I32 RAW_ENC_I32
#define LIBAMP_ENC_U8 RAW_ENC_U8
#define LIBAMP_ENC_F64 RAW_ENC_F64
#define LIBAMP_ENC_V64 RAW_ENC_V64
#define LIBAMP_ENC_S32 RAW_ENC_S32
#define LIBAMP_ENC_T64 RAW_ENC_T64
#define LIBAMP_ENC_STR RAW_ENC_STR
#define LIBAMP_ENC_STR_IF RAW_ENC_STR_IF
#define LIBAMP_ENC_V64_IF RAW_ENC_V64_IF
#define LIBAMP_ENC_DIMS RAW_ENC_DIMS
#define LIBAMP_ENC_PAD RAW_ENC_PAD
#define LIBAMP_ENC_FIELD(type, f, x) LIBAMP_ENC_##type(f, x)

static inline uint8_t *libamp_put_autocast(uint8_t *p,
					   const struct amp_autocast_info *m)
{
	RAW_AUTOCAST_FIELDS(LIBAMP_ENC_FIELD)
	return p;
}

static inline uint8_t *libamp_put_tensor(uint8_t *p,
					 const struct amp_tensor_info *m)
{
	RAW_TENSOR_FIELDS(LIBAMP_ENC_FIELD)
	return p;
}

static inline uint8_t *libamp_put_tensors(uint8_t *p,
					  const struct amp_tensor_info *list,
					  int n)
{
	n = raw_tensor_count(n);
	p = raw_put_u8(p, (unsigned)n);
	for (int i = 0; i < n; i++)
		p = libamp_put_tensor(p, &list[i]);
	return p;
}

/* The model's field tables of a record kind, by its raw kind name. */
#define LIBAMP_FIELDS_op_begin RAW_OP_BEGIN_FIELDS
#define LIBAMP_FIELDS_op_end RAW_OP_END_FIELDS
#define LIBAMP_FIELDS_cast RAW_CAST_FIELDS
#define LIBAMP_FIELDS_scope_enter RAW_SCOPE_FIELDS
#define LIBAMP_FIELDS_scope_exit RAW_SCOPE_FIELDS
#define LIBAMP_FIELDS_cache_clear RAW_CACHE_CLEAR_FIELDS
#define LIBAMP_FIELDS_scaler RAW_SCALER_FIELDS
#define LIBAMP_FIELDS_diag RAW_DIAG_FIELDS

#define LIBAMP_ENCODER(name, amp_kind, producer_kind)                       \
	static inline size_t libamp_bound_##name(const struct amp_event *m) \
	{                                                                   \
		return 0 LIBAMP_FIELDS_##name(RAW_BOUND_FIELD);             \
	}                                                                   \
	static inline uint8_t *libamp_encode_##name(uint8_t *p,             \
						    const struct amp_event *m) \
	{                                                                   \
		LIBAMP_FIELDS_##name(LIBAMP_ENC_FIELD) return p;            \
	}
LIBAMP_KINDS(LIBAMP_ENCODER)
#undef LIBAMP_ENCODER

static inline size_t libamp_event_bound(const struct amp_event *e)
{
	switch (e->kind) {
#define LIBAMP_CASE(name, amp_kind, producer_kind)                          \
	case amp_kind:                                                      \
		return libamp_bound_##name(e);
		LIBAMP_KINDS(LIBAMP_CASE)
#undef LIBAMP_CASE
	default:
		return 0;
	}
}

static inline uint16_t libamp_event_kind(const struct amp_event *e)
{
	switch (e->kind) {
#define LIBAMP_CASE(name, amp_kind, producer_kind)                          \
	case amp_kind:                                                      \
		return producer_kind;
		LIBAMP_KINDS(LIBAMP_CASE)
#undef LIBAMP_CASE
	default:
		return PRODUCER_KIND_COUNT;
	}
}

static inline uint8_t *libamp_event_encode(uint8_t *p,
					   const struct amp_event *e)
{
	switch (e->kind) {
#define LIBAMP_CASE(name, amp_kind, producer_kind)                          \
	case amp_kind:                                                      \
		return libamp_encode_##name(p, e);
		LIBAMP_KINDS(LIBAMP_CASE)
#undef LIBAMP_CASE
	default:
		return p;
	}
}

#endif /* AMPTRACE_LIBAMP_ENCODE_H */
