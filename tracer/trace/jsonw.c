/* JSON text writer (see jsonw.h). */
#include "jsonw.h"

#include "utf8.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void jsonw_init(struct jsonw *w)
{
	*w = (struct jsonw){ 0 };
}

void jsonw_free(struct jsonw *w)
{
	free(w->data);
	*w = (struct jsonw){ 0 };
}

void jsonw_reset(struct jsonw *w)
{
	w->len = 0;
	w->failed = false;
}

bool jsonw_grow(struct jsonw *w, size_t extra)
{
	if (w->failed)
		return false;
	if (w->len + extra + 1 <= w->cap)
		return true;
	size_t cap = w->cap ? w->cap : 4096;
	while (cap < w->len + extra + 1)
		cap *= 2;
	char *grown = realloc(w->data, cap);
	if (!grown) {
		w->failed = true;
		return false;
	}
	w->data = grown;
	w->cap = cap;
	return true;
}

void jsonw_cstr(struct jsonw *w, const char *text)
{
	jsonw_raw(w, text, strlen(text));
}

void jsonw_printf(struct jsonw *w, const char *fmt, ...)
{
	va_list ap;
	char small[256];

	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n < sizeof small) {
		jsonw_raw(w, small, (size_t)n);
		return;
	}
	if (!jsonw_reserve(w, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(w->data + w->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	w->len += (size_t)n;
}

static bool needs_escape(unsigned char c)
{
	return c < 0x20 || c == '"' || c == '\\' || c == 0x7f;
}

/* Whether any of the 8 bytes in `word` needs an escape (or is >= 0x80:
 * those are checked one by one, as needs_escape leaves them alone). */
static bool word_needs_look(uint64_t word)
{
	const uint64_t ones = 0x0101010101010101ull, highs = ones * 0x80;
	uint64_t quote = word ^ (ones * '"'), backslash = word ^ (ones * '\\');
	uint64_t del = word ^ (ones * 0x7f);

	return ((word - ones * 0x20) | (quote - ones) | (backslash - ones) |
		(del - ones) | word) & highs;
}

/* The length of text's longest prefix that needs no escape. */
static size_t clean_prefix(const char *text, size_t len)
{
	size_t clean = 0;
	uint64_t word;

	while (clean + 8 <= len) {
		memcpy(&word, text + clean, 8);
		if (word_needs_look(word))
			break;
		clean += 8;
	}
	while (clean < len && !needs_escape((unsigned char)text[clean]) &&
	       (unsigned char)text[clean] < 0x80)
		clean++;
	return clean;
}

void jsonw_strn(struct jsonw *w, const char *text, size_t len)
{
	static const char hex[] = "0123456789abcdef";

	if (!text) {
		jsonw_raw(w, "null", 4);
		return;
	}
	/* Worst case every byte becomes \u00XX. */
	if (!jsonw_reserve(w, len * 6 + 2))
		return;
	/* Most strings (op, dtype, device names) need no escape: their
	 * longest clean prefix is copied whole, not byte by byte. */
	size_t clean = clean_prefix(text, len);
	char *out = w->data + w->len;
	*out++ = '"';
	memcpy(out, text, clean);
	out += clean;
	for (size_t i = clean; i < len; i++) {
		unsigned char c = (unsigned char)text[i];
		switch (c) {
		case '"': *out++ = '\\'; *out++ = '"'; break;
		case '\\': *out++ = '\\'; *out++ = '\\'; break;
		case '\n': *out++ = '\\'; *out++ = 'n'; break;
		case '\r': *out++ = '\\'; *out++ = 'r'; break;
		case '\t': *out++ = '\\'; *out++ = 't'; break;
		default:
			if (c < 0x20 || c == 0x7f) {
				memcpy(out, "\\u00", 4);
				out[4] = hex[c >> 4];
				out[5] = hex[c & 15];
				out += 6;
			} else if (c < 0x80) {
				*out++ = (char)c;
			} else {
				/* JSON is UTF-8: a malformed byte (a name
				 * from a program that is not UTF-8) becomes
				 * U+FFFD, the replacement character. */
				int n = utf8_sequence_length(
					(const unsigned char *)text + i, len - i);
				if (n > 0) {
					memcpy(out, text + i, (size_t)n);
					out += n;
					i += (size_t)n - 1;
				} else {
					memcpy(out, "\xef\xbf\xbd", 3);
					out += 3;
				}
			}
		}
	}
	*out++ = '"';
	*out = '\0';
	w->len = (size_t)(out - w->data);
}

void jsonw_str_slow(struct jsonw *w, const char *text)
{
	if (!w->cache || !text) {
		jsonw_strn(w, text, text ? strlen(text) : 0);
		return;
	}
	/* Interned strings are 16-byte aligned (trace_alloc). */
	struct jsonw_cache_slot *slot =
		&w->cache->slots[((uintptr_t)text >> 4) % JSONW_CACHE_SLOTS];
	size_t at = w->len;
	jsonw_strn(w, text, strlen(text));
	size_t n = w->len - at;
	if (!w->failed && n < JSONW_CACHE_TEXT) {
		slot->key = text;
		slot->len = n;
		memcpy(slot->json, w->data + at, n);
	}
}

void jsonw_double(struct jsonw *w, double value)
{
	if (!isfinite(value)) {
		jsonw_raw(w, "null", 4);
		return;
	}
	/* The range test first: converting a double beyond int64 is
	 * undefined behaviour. */
	if (fabs(value) < 1e15 && value == (double)(int64_t)value) {
		jsonw_i64(w, (int64_t)value);
		return;
	}
	jsonw_printf(w, "%.17g", value);
}
