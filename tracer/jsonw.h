/* A growable text buffer with JSON helpers: the trace writer formats each
 * event into one of these (escaping strings itself) rather than building a
 * cJSON tree, because `amptrace run` converts events as fast as programs
 * emit them. */
#ifndef AMPTRACE_JSONW_H
#define AMPTRACE_JSONW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Strings already escaped, by address: for a writer whose strings are
 * interned (the converter's: a few hundred distinct names written over
 * and over), so that each is escaped once.  Only for strings that stay
 * unchanged at their address as long as the cache is used. */
#define JSONW_CACHE_SLOTS 1024
#define JSONW_CACHE_TEXT 54
struct jsonw_cache_slot {
	const char *key;
	uint8_t len;
	char json[JSONW_CACHE_TEXT + 1];
};
struct jsonw_cache {
	struct jsonw_cache_slot slots[JSONW_CACHE_SLOTS];
};

struct jsonw {
	char *data;
	size_t len;
	size_t cap;
	bool failed; /* an allocation failed: contents are incomplete */
	struct jsonw_cache *cache; /* NULL, or see struct jsonw_cache */
};

void jsonw_init(struct jsonw *w);
void jsonw_free(struct jsonw *w);
void jsonw_reset(struct jsonw *w);
/* Room for `extra` more bytes and the NUL; false when out of memory
 * (failed set).  The slow path of jsonw_reserve. */
bool jsonw_grow(struct jsonw *w, size_t extra);

/* Inline: the converter appends a few dozen pieces per event, and the call
 * for each piece cost as much as copying it. */
static inline bool jsonw_reserve(struct jsonw *w, size_t extra)
{
	if (!w->failed && w->len + extra + 1 <= w->cap)
		return true;
	return jsonw_grow(w, extra);
}

static inline void jsonw_raw(struct jsonw *w, const char *text, size_t len)
{
	if (!jsonw_reserve(w, len))
		return;
	memcpy(w->data + w->len, text, len);
	w->len += len;
	w->data[w->len] = '\0';
}

void jsonw_cstr(struct jsonw *w, const char *text); /* raw, NUL-terminated */
/* A string literal, raw (its length known at compile time). */
#define jsonw_lit(w, literal) jsonw_raw((w), "" literal, sizeof(literal) - 1)
void jsonw_printf(struct jsonw *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A JSON string literal with quotes; NULL writes null.  `len` bytes. */
void jsonw_strn(struct jsonw *w, const char *text, size_t len);
void jsonw_str(struct jsonw *w, const char *text);
void jsonw_u64_slow(struct jsonw *w, uint64_t value);
/* Inline for one and two digits: most numbers of a trace are dimensions,
 * flags and small ids. */
static inline void jsonw_u64(struct jsonw *w, uint64_t value)
{
	if (value >= 100 || !jsonw_reserve(w, 2)) {
		jsonw_u64_slow(w, value);
		return;
	}
	char *out = w->data + w->len;
	if (value >= 10) {
		out[0] = (char)('0' + value / 10);
		out[1] = (char)('0' + value % 10);
		w->len += 2;
	} else {
		out[0] = (char)('0' + value);
		w->len += 1;
	}
	w->data[w->len] = '\0';
}
static inline void jsonw_i64(struct jsonw *w, int64_t value)
{
	if (value < 0) {
		jsonw_raw(w, "-", 1);
		jsonw_u64(w, (uint64_t)0 - (uint64_t)value);
	} else {
		jsonw_u64(w, (uint64_t)value);
	}
}
/* A number that round-trips (%.17g), or null for NaN/inf (JSON has none). */
void jsonw_double(struct jsonw *w, double value);
/* Nanoseconds as microseconds with three decimals: 1234567 -> 1234.567. */
void jsonw_us(struct jsonw *w, int64_t ns);
void jsonw_bool(struct jsonw *w, bool value);

#endif /* AMPTRACE_JSONW_H */
