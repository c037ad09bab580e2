/* A float's bit pattern and back, for tests that walk formats bit by bit. */
#ifndef AMP_TEST_BITS_H
#define AMP_TEST_BITS_H

#include <stdint.h>
#include <string.h>

static inline uint32_t f32_bits(float value)
{
	uint32_t bits;
	memcpy(&bits, &value, sizeof bits);
	return bits;
}

static inline float f32_from_bits(uint32_t bits)
{
	float value;
	memcpy(&value, &bits, sizeof value);
	return value;
}

#endif
