/* UTF-8 well-formedness, as RFC 3629 defines it (no overlong forms, no
 * surrogates, nothing past U+10FFFF): JSON text is UTF-8, and a trace
 * string that is not must neither be read as one nor written out. */
#ifndef AMPTRACE_UTF8_H
#define AMPTRACE_UTF8_H

#include <stddef.h>

/* The length (2 to 4) of the sequence starting with the byte >= 0x80 at
 * s[0], `avail` bytes being there; 0 when it is malformed, -1 when it is
 * cut short by the end of the text. */
static inline int utf8_sequence_length(const unsigned char *s, size_t avail)
{
	unsigned char lead = s[0];
	int n = lead >= 0xc2 && lead <= 0xdf   ? 2
		: lead >= 0xe0 && lead <= 0xef ? 3
		: lead >= 0xf0 && lead <= 0xf4 ? 4
					       : 0;
	/* the second byte's range, narrower after E0, ED, F0, F4 */
	unsigned char low = lead == 0xe0 ? 0xa0 : lead == 0xf0 ? 0x90 : 0x80;
	unsigned char high = lead == 0xed ? 0x9f : lead == 0xf4 ? 0x8f : 0xbf;

	if (!n)
		return 0;
	for (int i = 1; i < n; i++) {
		if ((size_t)i >= avail)
			return -1;
		unsigned char c = s[i];
		if (i == 1 ? c < low || c > high : c < 0x80 || c > 0xbf)
			return 0;
	}
	return n;
}

#endif /* AMPTRACE_UTF8_H */
