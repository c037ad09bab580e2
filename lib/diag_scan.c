/* The value checks' element scans (diag_scan.h), written once as inline C
 * loops on the values' bit patterns and instantiated per tier with target
 * attributes, so gcc vectorises each for the widest registers the tier
 * has.  The checks read every cast and every low-precision output while
 * `amptrace run` records: these loops are most of what they cost. */
#include "diag_scan.h"

#include <string.h>

/* gcc's -O2 very-cheap cost model leaves these loops scalar (clang
 * vectorises them at -O2 and knows no such pragma). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#define F32_ABS_BITS 0x7fffffffu

/* On |v|'s bit pattern a (NaNs above inf's), 0 < |v| < limit is
 * a - 1 < bits(limit) - 1 unsigned: zero wraps to the top, and one
 * comparison per element is left.  32-bit counts per block of 2^30 so the
 * sum vectorises. */
static inline __attribute__((always_inline)) int64_t
count_below_body(const float *values, size_t n, float limit)
{
	uint32_t limit_bits;
	int64_t count = 0;

	memcpy(&limit_bits, &limit, sizeof limit_bits);
	for (size_t start = 0; start < n; start += (size_t)1 << 30) {
		size_t end = n - start < ((size_t)1 << 30) ? n
							   : start + ((size_t)1 << 30);
		uint32_t block = 0;
		for (size_t i = start; i < end; i++) {
			uint32_t a;
			memcpy(&a, values + i, sizeof a);
			block += (a & F32_ABS_BITS) - 1 < limit_bits - 1;
		}
		count += block;
	}
	return count;
}

/* A 16-bit float is inf or NaN when h = bits & 0x7fff reaches the
 * exponent mask, that is when h + (0x8000 - mask) sets bit 15.  Pairs are
 * handled as 32-bit words: neither half carries into the other (h + 0x8000
 * - mask < 0x10000), so the test is an and, an add and an or per word,
 * with no compare, at any register width. */
static inline __attribute__((always_inline)) bool
non_finite_body(const uint16_t *bits, size_t n, uint16_t exponent_mask)
{
	const uint32_t bias = 0x8000u - exponent_mask;
	const uint32_t bias_pair = bias | bias << 16;
	uint32_t seen = 0;
	size_t pairs = n / 2;

	for (size_t i = 0; i < pairs; i++) {
		uint32_t word;
		memcpy(&word, bits + 2 * i, sizeof word);
		seen |= (word & 0x7fff7fffu) + bias_pair;
	}
	if (n % 2)
		seen |= (uint32_t)(bits[n - 1] & 0x7fffu) + bias;
	return (seen & 0x80008000u) != 0;
}

static int64_t scalar_count_below(const float *values, size_t n, float limit)
{
	return count_below_body(values, n, limit);
}

static bool scalar_non_finite(const uint16_t *bits, size_t n,
			      uint16_t exponent_mask)
{
	return non_finite_body(bits, n, exponent_mask);
}

#if defined(__x86_64__) || defined(__i386__)
#define AMP_HAVE_X86 1

/* gcc ends these functions with vzeroupper itself (they use ymm/zmm
 * registers and call nothing), so the SSE code after them pays no
 * transition. */
#define AVX2 __attribute__((target("avx2")))
#define AVX512 __attribute__((target("avx512f")))

AVX2 static int64_t avx2_count_below(const float *values, size_t n,
				     float limit)
{
	return count_below_body(values, n, limit);
}

AVX2 static bool avx2_non_finite(const uint16_t *bits, size_t n,
				 uint16_t exponent_mask)
{
	return non_finite_body(bits, n, exponent_mask);
}

AVX512 static int64_t avx512_count_below(const float *values, size_t n,
					 float limit)
{
	return count_below_body(values, n, limit);
}

AVX512 static bool avx512_non_finite(const uint16_t *bits, size_t n,
				     uint16_t exponent_mask)
{
	return non_finite_body(bits, n, exponent_mask);
}
#endif /* x86 */

static const struct {
	amp_count_below_fn count_below;
	amp_non_finite_scan_fn non_finite;
} tiers[AMP_ISA_COUNT] = {
	[AMP_ISA_SCALAR] = { scalar_count_below, scalar_non_finite },
#ifdef AMP_HAVE_X86
	[AMP_ISA_AVX2] = { avx2_count_below, avx2_non_finite },
	[AMP_ISA_AVX512] = { avx512_count_below, avx512_non_finite },
	[AMP_ISA_AVX512_BF16] = { avx512_count_below, avx512_non_finite },
#endif
};

amp_count_below_fn amp_count_below(enum amp_isa isa)
{
	return (unsigned)isa < AMP_ISA_COUNT ? tiers[isa].count_below : NULL;
}

amp_non_finite_scan_fn amp_non_finite_scan(enum amp_isa isa)
{
	return (unsigned)isa < AMP_ISA_COUNT ? tiers[isa].non_finite : NULL;
}
