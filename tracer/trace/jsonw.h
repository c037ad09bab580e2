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
#define JSONW_CACHE_TEXT 48
struct jsonw_cache_slot {
	const char *key;
	size_t len;
	char json[JSONW_CACHE_TEXT]; /* copied whole: one fixed-size move */
};
struct jsonw_cache {
	struct jsonw_cache_slot slots[JSONW_CACHE_SLOTS];
};

/* Where the values that vary went in a text being written (the event
 * writer's templates, event_json.h): spans [start, end) of data. */
#define JSONW_MAX_HOLES 32
struct jsonw_holes {
	int count;   /* may pass JSONW_MAX_HOLES: then not all are noted */
	size_t start[JSONW_MAX_HOLES], end[JSONW_MAX_HOLES];
};

struct jsonw {
	char *data;
	size_t len;
	size_t cap;
	bool failed; /* an allocation failed: contents are incomplete */
	struct jsonw_cache *cache; /* NULL, or see struct jsonw_cache */
	struct jsonw_holes *holes; /* NULL, or noting jsonw_hole_* spans */
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
/* A string through w's cache (jsonw_cache), or escaped when it is not
 * there (the slow path fills the cache). */
void jsonw_str_slow(struct jsonw *w, const char *text);
static inline void jsonw_str(struct jsonw *w, const char *text)
{
	struct jsonw_cache_slot *slot =
		w->cache && text ? &w->cache->slots[((uintptr_t)text >> 4) %
						    JSONW_CACHE_SLOTS]
				 : NULL;

	if (!slot || slot->key != text || !jsonw_reserve(w, JSONW_CACHE_TEXT)) {
		jsonw_str_slow(w, text);
		return;
	}
	/* a fixed-size copy compiles to a few moves, not a call */
	memcpy(w->data + w->len, slot->json, JSONW_CACHE_TEXT);
	w->len += slot->len;
	w->data[w->len] = '\0';
}

/* The decimal digits of v at out (room for 20); returns their end.
 * Numbers are about a third of a trace's text: four digits per division,
 * written in place from the last. */
static inline char *jsonw_digits(char *out, uint64_t v)
{
	static const char pairs[] = "0001020304050607080910111213141516171819"
		"2021222324252627282930313233343536373839"
		"4041424344454647484950515253545556575859"
		"6061626364656667686970717273747576777879"
		"8081828384858687888990919293949596979899";

	static const uint64_t powers[20] = {
		1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull,
		10000000ull, 100000000ull, 1000000000ull, 10000000000ull,
		100000000000ull, 1000000000000ull, 10000000000000ull,
		100000000000000ull, 1000000000000000ull, 10000000000000000ull,
		100000000000000000ull, 1000000000000000000ull,
		10000000000000000000ull,
	};

	if (v < 10) {
		*out = (char)('0' + v);
		return out + 1;
	}
	/* the digit count from the bit length: log10(2) ~ 1233 / 4096 */
	int bits = 64 - __builtin_clzll(v);
	int n = (bits * 1233) >> 12;
	n += v >= powers[n];
	char *end = out + n, *p = end;
	/* four digits per 64-bit division, then two per 32-bit one */
	while (v >= 10000) {
		uint64_t q = v / 10000;
		uint32_t r = (uint32_t)(v - q * 10000);
		p -= 4;
		memcpy(p, &pairs[(r / 100) * 2], 2);
		memcpy(p + 2, &pairs[(r % 100) * 2], 2);
		v = q;
	}
	if (v >= 100) {
		p -= 2;
		memcpy(p, &pairs[(v % 100) * 2], 2);
		v /= 100;
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, &pairs[v * 2], 2);
	} else {
		*--p = (char)('0' + v);
	}
	return end;
}

static inline void jsonw_u64(struct jsonw *w, uint64_t value)
{
	if (!jsonw_reserve(w, 20))
		return;
	w->len = (size_t)(jsonw_digits(w->data + w->len, value) - w->data);
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
/* A value that varies between texts otherwise alike: noted in w->holes
 * when it is set (begin before writing it, end after). */
static inline void jsonw_hole_begin(struct jsonw *w)
{
	if (w->holes && w->holes->count < JSONW_MAX_HOLES)
		w->holes->start[w->holes->count] = w->len;
}

static inline void jsonw_hole_end(struct jsonw *w)
{
	if (!w->holes)
		return;
	if (w->holes->count < JSONW_MAX_HOLES)
		w->holes->end[w->holes->count] = w->len;
	w->holes->count++;
}

/* Nanoseconds as microseconds with three decimals at out (room for 26);
 * returns their end: 1234567 -> 1234.567. */
static inline char *jsonw_us_text(char *out, int64_t ns)
{
	uint64_t magnitude = (uint64_t)ns;

	if (ns < 0) {
		*out++ = '-';
		magnitude = (uint64_t)0 - magnitude;
	}
	out = jsonw_digits(out, magnitude / 1000);
	unsigned frac = (unsigned)(magnitude % 1000);
	out[0] = '.';
	out[1] = (char)('0' + frac / 100);
	out[2] = (char)('0' + frac / 10 % 10);
	out[3] = (char)('0' + frac % 10);
	return out + 4;
}

/* A number that round-trips (%.17g), or null for NaN/inf (JSON has none). */
void jsonw_double(struct jsonw *w, double value);
/* Nanoseconds as microseconds with three decimals: 1234567 -> 1234.567. */
static inline void jsonw_us(struct jsonw *w, int64_t ns)
{
	if (!jsonw_reserve(w, 26))
		return;
	w->len = (size_t)(jsonw_us_text(w->data + w->len, ns) - w->data);
	w->data[w->len] = '\0';
}
static inline void jsonw_bool(struct jsonw *w, bool value)
{
	if (value)
		jsonw_raw(w, "true", 4);
	else
		jsonw_raw(w, "false", 5);
}

#endif /* AMPTRACE_JSONW_H */
