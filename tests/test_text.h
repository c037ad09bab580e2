/* A text the tests build a small trace or rules file in, printf-style;
 * a text that does not fit fails the test. */
#ifndef AMP_TEST_TEXT_H
#define AMP_TEST_TEXT_H

#include <check.h>
#include <stdarg.h>
#include <stdio.h>

#define MAX_TEXT 16384

struct text {
	char data[MAX_TEXT];
	size_t len;
};

static inline void add(struct text *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline void add(struct text *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	t->len += (size_t)vsnprintf(t->data + t->len, MAX_TEXT - t->len, fmt, ap);
	va_end(ap);
	ck_assert_uint_lt(t->len, MAX_TEXT);
}

#endif /* AMP_TEST_TEXT_H */
