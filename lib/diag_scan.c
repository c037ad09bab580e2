/* The value checks' element scans (diag_scan.h), written once as inline C
 * loops on the values' bit patterns and instantiated per tier with target
 * attributes, so gcc vectorises each for the widest registers the tier
 * has.  The checks read every cast and every low-precision output while
 * `amptrace run` records: these loops are most of what they cost.  Then
 * the verdicts on them, shared by libamp and the PyTorch bridge. */
#include "diag_scan.h"

#include <math.h>
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

/* count_below_body's comparison for the low end, and for the high end
 * high_bits <= a < inf's bits as one unsigned comparison too. */
static inline __attribute__((always_inline)) void
count_outside_body(const float *values, size_t n, float low, float high,
		   int64_t counts[2])
{
	const uint32_t inf_bits = 0x7f800000u;
	uint32_t low_bits, high_bits;

	memcpy(&low_bits, &low, sizeof low_bits);
	memcpy(&high_bits, &high, sizeof high_bits);
	counts[0] = counts[1] = 0;
	for (size_t start = 0; start < n; start += (size_t)1 << 30) {
		size_t end = n - start < ((size_t)1 << 30) ? n
							   : start + ((size_t)1 << 30);
		uint32_t below = 0, above = 0;
		for (size_t i = start; i < end; i++) {
			uint32_t a;
			memcpy(&a, values + i, sizeof a);
			a &= F32_ABS_BITS;
			below += a - 1 < low_bits - 1;
			above += a - high_bits < inf_bits - high_bits;
		}
		counts[0] += below;
		counts[1] += above;
	}
}

static int64_t scalar_count_below(const float *values, size_t n, float limit)
{
	return count_below_body(values, n, limit);
}

static void scalar_count_outside(const float *values, size_t n, float low,
				 float high, int64_t counts[2])
{
	count_outside_body(values, n, low, high, counts);
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

AVX2 static void avx2_count_outside(const float *values, size_t n, float low,
				    float high, int64_t counts[2])
{
	count_outside_body(values, n, low, high, counts);
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

AVX512 static void avx512_count_outside(const float *values, size_t n,
					float low, float high,
					int64_t counts[2])
{
	count_outside_body(values, n, low, high, counts);
}
#endif /* x86 */

static const struct {
	amp_count_below_fn count_below;
	amp_non_finite_scan_fn non_finite;
	amp_count_outside_fn count_outside;
} tiers[AMP_ISA_COUNT] = {
	[AMP_ISA_SCALAR] = { scalar_count_below, scalar_non_finite,
			     scalar_count_outside },
#ifdef AMP_HAVE_X86
	[AMP_ISA_AVX2] = { avx2_count_below, avx2_non_finite,
			   avx2_count_outside },
	[AMP_ISA_AVX512] = { avx512_count_below, avx512_non_finite,
			     avx512_count_outside },
	[AMP_ISA_AVX512_BF16] = { avx512_count_below, avx512_non_finite,
				  avx512_count_outside },
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

amp_count_outside_fn amp_count_outside(enum amp_isa isa)
{
	return (unsigned)isa < AMP_ISA_COUNT ? tiers[isa].count_outside : NULL;
}

/* ------------------------------------------------------------ verdicts */

/* What flushed values must reach to be reported (underflow_material):
 * 1 % of the non-zero values (below that they are the tail of a healthy
 * distribution: N(0,1) puts 5e-5 of its mass under f16's smallest
 * normal) and 1 % of the tensor's magnitude (sum of |x|: values that
 * carry less change a sum or a dot product over the tensor by less than
 * that).  One bias value of 5e-5 among 64 near 0.05 is 1.6 % of the
 * values but 1e-5 of the magnitude; attention probabilities below 6e-5
 * are many but weigh nothing; 1e-8-scale inputs, or small activations
 * and gradients lost wholesale, are both. */
#define UNDERFLOW_FRACTION 0.01
#define UNDERFLOW_MAGNITUDE 0.01

struct amp_cast_limits amp_cast_limits_of(enum amp_dtype target)
{
	/* f16: largest 65504 (0x7bff), 65520 rounds to inf (to even),
	 * smallest subnormal 2^-24; bf16: largest 0x7f7f0000, 0x7f7f8000
	 * rounds to inf, smallest subnormal 2^-133.  Half the smallest
	 * subnormal ties to even: zero. */
	if (target == AMP_DTYPE_F16)
		return (struct amp_cast_limits){ 0x1p-14f, 0x1p-25f, 65520.0f,
						 65504.0f };
	return (struct amp_cast_limits){ 0x1p-126f, 0x1p-134f, 0x1.ffp+127f,
					 0x1.fep+127f };
}

bool amp_underflow_material(int64_t flushed, int64_t nonzero, double lost,
			    double total)
{
	return flushed &&
	       (double)flushed >= UNDERFLOW_FRACTION * (double)nonzero &&
	       lost >= UNDERFLOW_MAGNITUDE * total;
}

/* amp_underflow_material on the values: the magnitude pass runs only once
 * the share of values is reached. */
static bool underflow_material(const float *values, size_t n, float tiny,
			       int64_t flushed, int64_t nonzero)
{
	if (!flushed ||
	    (double)flushed < UNDERFLOW_FRACTION * (double)nonzero)
		return false;
	double lost = 0.0, total = 0.0;
	for (size_t i = 0; i < n; i++) {
		double magnitude = fabs((double)values[i]);
		if (!isfinite(magnitude))
			continue;
		total += magnitude;
		if (magnitude < tiny)
			lost += magnitude;
	}
	return amp_underflow_material(flushed, nonzero, lost, total);
}

/* A value flushes when it lies below the target's smallest normal (the
 * few values within half an ulp of it that round up are counted too: the
 * fraction is a diagnosis, not a kernel). */
void amp_cast_verdict_of(const float *values, size_t n, enum amp_dtype target,
			 struct amp_cast_verdict *out)
{
	struct amp_cast_limits limits = amp_cast_limits_of(target);
	enum amp_isa isa = amp_isa_best();
	int64_t counts[2];

	*out = (struct amp_cast_verdict){ 0 };
	amp_count_outside(isa)(values, n, limits.tiny, limits.overflow, counts);
	out->flushed = counts[0];
	out->overflowed = counts[1];
	if (!out->flushed)
		return;
	out->nonzero = amp_count_below(isa)(values, n, INFINITY);
	out->underflow = underflow_material(values, n, limits.tiny,
					    out->flushed, out->nonzero);
	/* at most `zero`: below the next float up */
	if (out->underflow)
		out->zeroed = amp_count_below(isa)(
			values, n, nextafterf(limits.zero, INFINITY));
}

void amp_cast_verdict_of_stats(const struct amp_value_stats *stats,
			       struct amp_cast_verdict *out)
{
	*out = (struct amp_cast_verdict){
		.overflowed = (int64_t)stats->overflowed,
		.flushed = (int64_t)(stats->nonzero - stats->normal),
	};
	if (!out->flushed)
		return;
	out->nonzero = (int64_t)stats->nonzero;
	out->underflow = amp_underflow_material(out->flushed, out->nonzero,
						stats->flushed_sum, stats->sum);
	if (out->underflow)
		out->zeroed = (int64_t)(stats->nonzero - stats->above_zero);
}

int64_t amp_count_inf_nan(const uint16_t *bits, size_t n,
			  uint16_t exponent_mask, int64_t *nan)
{
	int64_t inf = 0;

	*nan = 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t magnitude = bits[i] & 0x7fffu;
		if (magnitude == exponent_mask)
			inf++;
		else if (magnitude > exponent_mask)
			(*nan)++;
	}
	return inf;
}

/* f16 and bf16 go through the row converters, a block at a time. */
bool amp_values_range(const void *values, enum amp_dtype dtype, size_t n,
		      double *max_abs)
{
	float block[256];
	amp_row_fn widen = dtype == AMP_DTYPE_F16 || dtype == AMP_DTYPE_BF16
				   ? amp_cast_row_for(AMP_DTYPE_F32, dtype)
				   : NULL;
	size_t width = dtype == AMP_DTYPE_F64 ? 8 : widen ? 2 : 4;
	bool finite = true;

	*max_abs = 0.0;
	for (size_t start = 0; start < n; start += 256) {
		size_t count = n - start < 256 ? n - start : 256;
		const char *at = (const char *)values + start * width;
		for (size_t i = 0; i < count; i++) {
			double v;
			if (dtype == AMP_DTYPE_F64) {
				memcpy(&v, at + 8 * i, sizeof v);
			} else if (widen) {
				if (i == 0)
					widen(block, at, count);
				v = block[i];
			} else {
				float f;
				memcpy(&f, at + 4 * i, sizeof f);
				v = f;
			}
			if (!isfinite(v))
				finite = false;
			else if (fabs(v) > *max_abs)
				*max_abs = fabs(v);
		}
	}
	return finite;
}
