/* The value checks' element scans (lib/diag_scan.c) in every tier this CPU
 * runs, against the checks' definitions written as plain float
 * comparisons; then the checks end to end on the paths the scans do not
 * take alone: non-contiguous sources, f16 and bf16 targets, f32
 * subnormals, inf/NaN in the last element of a vector. */
#include "amp.h"
#include "amp_value_stats.h"
#include "diag_scan.h"
#include "test_bits.h"
#include "value_spread.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* f16's and bf16's smallest normal, half their smallest subnormal (diag.c's
 * thresholds), and the exponent mask of inf and NaN. */
static const struct {
	const char *name;
	float tiny, zero;
	uint16_t exponent_mask;
} formats[] = {
	{ "f16", 6.103515625e-05f, 2.98023224e-08f, 0x7c00 },
	{ "bf16", 1.17549435e-38f, 4.6e-41f, 0x7f80 },
};

/* The limits diag.c counts with: inf, the targets' smallest normals, and
 * the floats just above half their smallest subnormals. */
static float limits[5];

static void set_limits(void)
{
	limits[0] = INFINITY;
	for (int f = 0; f < 2; f++) {
		limits[1 + 2 * f] = formats[f].tiny;
		limits[2 + 2 * f] = nextafterf(formats[f].zero, INFINITY);
	}
}

/* The definition: cast-underflow's float comparisons before the tiers. */
static int64_t reference_count_below(const float *values, size_t n,
				     float limit)
{
	int64_t count = 0;

	for (size_t i = 0; i < n; i++) {
		float magnitude = fabsf(values[i]);
		count += magnitude > 0.0f && magnitude < limit;
	}
	return count;
}

/* One value among 1.0s (counted below inf only), at a position that
 * moves through the vector body and the scalar tail of every tier. */
static void check_count_value(enum amp_isa isa, float limit, uint32_t bits,
			      unsigned seed)
{
	float values[80];
	size_t n = 33 + seed % 47, at = (seed / 47) % n;

	for (size_t i = 0; i < n; i++)
		values[i] = 1.0f;
	values[at] = f32_from_bits(bits);
	int64_t got = amp_count_below(isa)(values, n, limit);
	int64_t want = reference_count_below(values, n, limit);
	ck_assert_msg(got == want, "%s: 0x%08x at %zu of %zu below %a: %lld, "
		      "want %lld", amp_isa_name(isa), bits, at, n,
		      (double)limit, (long long)got, (long long)want);
}

/* Every sign and exponent with several mantissas, and the neighbours of
 * each limit with both signs (zeros, inf and NaNs among them). */
START_TEST(test_count_below_tiers_per_value)
{
	static const uint32_t mantissas[] = { 0, 1, 0x3fffff, 0x400000,
					      0x7fffff };
	unsigned seed = 0;

	set_limits();
	for (int isa = AMP_ISA_SCALAR; isa <= (int)amp_isa_best(); isa++) {
		for (int l = 0; l < 5; l++) {
			for (uint32_t top = 0; top < 512; top++)
				for (size_t m = 0; m < 5; m++)
					check_count_value((enum amp_isa)isa,
							  limits[l],
							  top << 23 | mantissas[m],
							  seed++);
			for (int e = 0; e < 5; e++)
				for (uint32_t sign = 0; sign < 2; sign++)
					for (int d = -2; d <= 2; d++)
						check_count_value(
							(enum amp_isa)isa, limits[l],
							(f32_bits(limits[e]) +
							 (uint32_t)d) | sign << 31,
							seed++);
		}
	}
}
END_TEST

/* Mixed vectors of every length up to 300 from unaligned starts: the
 * counts add up across the body and the tail. */
START_TEST(test_count_below_tiers_mixed)
{
	static float values[303];
	const float picks[] = { 0.0f, -0.0f, 1.0f, -2.5f, 5e-5f, 1e-8f, 1e-39f,
				1e-41f, 1e-44f, INFINITY, -INFINITY, NAN,
				6.103515625e-05f, 1.17549435e-38f, 3e-5f,
				-1e-7f };
	uint32_t state = 12345;

	set_limits();
	for (size_t i = 0; i < 303; i++) {
		state = state * 1664525u + 1013904223u;
		values[i] = picks[(state >> 16) % (sizeof picks / sizeof *picks)];
	}
	for (int isa = AMP_ISA_SCALAR; isa <= (int)amp_isa_best(); isa++)
		for (int l = 0; l < 5; l++)
			for (size_t start = 0; start < 3; start++)
				for (size_t n = 0; n <= 300; n++) {
					const float *v = values + start;
					int64_t got = amp_count_below(
						(enum amp_isa)isa)(v, n, limits[l]);
					ck_assert_msg(
						got == reference_count_below(
							       v, n, limits[l]),
						"%s: %zu values from %zu below %a",
						amp_isa_name((enum amp_isa)isa), n,
						start, (double)limits[l]);
				}
}
END_TEST

/* Every 16-bit pattern, alone and at the start, in the body and as the
 * odd last element of vectors of finite values. */
START_TEST(test_non_finite_tiers_every_pattern)
{
	uint16_t bits[70];

	for (int isa = AMP_ISA_SCALAR; isa <= (int)amp_isa_best(); isa++) {
		amp_non_finite_scan_fn scan = amp_non_finite_scan((enum amp_isa)isa);
		for (int format = 0; format < 2; format++) {
			uint16_t mask = formats[format].exponent_mask;
			for (uint32_t p = 0; p < 0x10000; p++) {
				bool want = (p & mask) == mask;
				size_t n = 1 + p % 70, at = (p / 70) % n;
				for (size_t i = 0; i < n; i++)
					bits[i] = (uint16_t)(0x3c00 + i); /* finite */
				bits[at] = (uint16_t)p;
				ck_assert_msg(scan(bits, n, mask) == want,
					      "%s %s: 0x%04x at %zu of %zu",
					      amp_isa_name((enum amp_isa)isa),
					      formats[format].name, p, at, n);
				bits[n - 1] = (uint16_t)p;
				ck_assert_msg(scan(bits, n, mask) == want,
					      "%s %s: 0x%04x last of %zu",
					      amp_isa_name((enum amp_isa)isa),
					      formats[format].name, p, n);
			}
			ck_assert(!scan(bits, 0, mask));
		}
	}
}
END_TEST

/* The definition of count_outside: the same two questions as float
 * comparisons. */
static void reference_outside(const float *values, size_t n, float low,
			      float high, int64_t counts[2])
{
	counts[0] = counts[1] = 0;
	for (size_t i = 0; i < n; i++) {
		float magnitude = fabsf(values[i]);
		counts[0] += magnitude > 0.0f && magnitude < low;
		counts[1] += isfinite(magnitude) && magnitude >= high;
	}
}

/* Every tier against the definition: each sign and exponent next to the
 * bounds the cast checks use (both formats' smallest normal and
 * overflow), in vectors of every length to 100 from unaligned starts. */
START_TEST(test_count_outside_tiers)
{
	static float values[160];
	uint32_t state = 777;

	for (int format = 0; format < 2; format++) {
		struct amp_cast_limits l = amp_cast_limits_of(
			format ? AMP_DTYPE_BF16 : AMP_DTYPE_F16);
		uint32_t edges[] = { f32_bits(l.tiny), f32_bits(l.overflow),
				     0x7f800000u, 0x7fc00000u, 0, 1 };
		for (size_t i = 0; i < 160; i++) {
			state = state * 1664525u + 1013904223u;
			uint32_t edge = edges[(state >> 8) % 6];
			int delta = (int)((state >> 16) % 5) - 2;
			uint32_t bits = edge + (uint32_t)delta;
			if (bits > 0x7fffffffu) /* below zero's pattern */
				bits = 0;
			values[i] = f32_from_bits(bits | (state >> 31) << 31);
		}
		for (int isa = AMP_ISA_SCALAR; isa <= (int)amp_isa_best(); isa++)
			for (size_t start = 0; start < 3; start++)
				for (size_t n = 0; n <= 100; n++) {
					int64_t got[2], want[2];
					amp_count_outside((enum amp_isa)isa)(
						values + start, n, l.tiny,
						l.overflow, got);
					reference_outside(values + start, n, l.tiny,
							  l.overflow, want);
					ck_assert_msg(got[0] == want[0] &&
						      got[1] == want[1],
						      "%s: %zu from %zu: %lld/%lld, "
						      "want %lld/%lld",
						      amp_isa_name((enum amp_isa)isa),
						      n, start, (long long)got[0],
						      (long long)got[1],
						      (long long)want[0],
						      (long long)want[1]);
				}
	}
}
END_TEST

/* The limits are where libamp's own conversion (round to nearest even)
 * loses values: `overflow` rounds to inf and the float below it to the
 * largest finite; the smallest normal stays normal and half of it is
 * subnormal; `zero` rounds to zero, the float above it does not. */
START_TEST(test_cast_limits_match_the_conversion)
{
	const enum amp_dtype targets[] = { AMP_DTYPE_F16, AMP_DTYPE_BF16 };
	int64_t shape[1] = { 6 };

	for (int t = 0; t < 2; t++) {
		struct amp_cast_limits l = amp_cast_limits_of(targets[t]);
		float values[6] = { l.overflow, nextafterf(l.overflow, 0.0f),
				    l.tiny, l.tiny / 2, l.zero,
				    nextafterf(l.zero, INFINITY) };
		amp_tensor *x = amp_from_data(1, shape, AMP_DTYPE_F32,
					      AMP_DEVICE_CPU, values);
		amp_tensor *y = amp_to(x, targets[t]);
		amp_tensor *back = amp_to(y, AMP_DTYPE_F32);
		float got[6];
		ck_assert_int_eq(amp_tensor_read(back, AMP_DTYPE_F32, got, 6), AMP_OK);
		ck_assert_msg(isinf(got[0]), "%s: %a", amp_dtype_name(targets[t]),
			      (double)got[0]);
		ck_assert_float_eq(got[1], l.largest);
		ck_assert_float_eq(got[2], l.tiny);
		ck_assert(got[3] < l.tiny && got[3] > 0.0f);
		ck_assert_float_eq(got[4], 0.0f);
		ck_assert(got[5] > 0.0f);
		amp_tensor *done[] = { x, y, back };
		for (int i = 0; i < 3; i++)
			amp_tensor_free(done[i]);
	}
}
END_TEST

/* The verdict of one cast: overflows counted always, the underflow's
 * counts only when something flushed, the zeroed only when material;
 * inf, NaN and zeros are never counted. */
START_TEST(test_cast_verdict)
{
	float values[100];
	struct amp_cast_verdict v;

	for (int i = 0; i < 100; i++)
		values[i] = i < 3 ? 70000.0f : i < 4 ? -1e6f : i < 5 ? INFINITY
			  : i < 6 ? NAN : i < 10 ? 0.0f : 1.0f;
	amp_cast_verdict_of(values, 100, AMP_DTYPE_F16, &v);
	ck_assert_int_eq(v.overflowed, 4);
	ck_assert_int_eq(v.flushed, 0);
	ck_assert_int_eq(v.nonzero, 0);
	ck_assert(!v.underflow);
	amp_cast_verdict_of(values, 100, AMP_DTYPE_BF16, &v);
	ck_assert_int_eq(v.overflowed, 0);
	/* 90 of 94 finite non-zero values below f16's smallest normal: a
	 * share and a magnitude above 1 %, the 49 at 1e-8 to zero */
	for (int i = 0; i < 4; i++)
		values[i] = 1e-4f;
	for (int i = 50; i < 100; i++)
		values[i] = i == 50 ? 3e-5f : 1e-8f;
	for (int i = 10; i < 50; i++)
		values[i] = 1e-6f;
	amp_cast_verdict_of(values, 100, AMP_DTYPE_F16, &v);
	ck_assert_int_eq(v.flushed, 90);
	ck_assert_int_eq(v.nonzero, 94);
	ck_assert(v.underflow);
	ck_assert_int_eq(v.zeroed, 49);
	/* one flushed value among many ordinary ones is not material */
	for (int i = 10; i < 100; i++)
		values[i] = i == 10 ? 1e-8f : 1.0f;
	amp_cast_verdict_of(values, 100, AMP_DTYPE_F16, &v);
	ck_assert_int_eq(v.flushed, 1);
	ck_assert(!v.underflow);
	ck_assert_int_eq(v.zeroed, 0);
}
END_TEST

/* A GPU's one pass (kernels/amp_value_stats.h) decides as the host's
 * checks do: the cast verdict from its statistics
 * (amp_cast_verdict_of_stats) is the verdict of the values, and it says
 * the inf, NaN and largest finite |v| of a result, on values spread
 * across every limit (value_spread.h). */
static void assert_same_verdict(const struct amp_cast_verdict *got,
				const struct amp_cast_verdict *want)
{
	ck_assert_int_eq(got->overflowed, want->overflowed);
	ck_assert_int_eq(got->flushed, want->flushed);
	ck_assert_int_eq(got->nonzero, want->nonzero);
	ck_assert_int_eq(got->zeroed, want->zeroed);
	ck_assert(got->underflow == want->underflow);
}

static struct amp_value_stats stats_of(const float *values, size_t n,
				       struct amp_value_limits against)
{
	struct amp_value_stats s;

	amp_value_stats_init(&s);
	for (size_t i = 0; i < n; i++)
		amp_value_stats_add(&s, values[i], &against);
	return s;
}

/* Statistics merged from parts (a GPU's blocks) against those of the
 * whole: counts and the largest |v| exactly, sums to their rounding. */
static void assert_merged_as_whole(const struct amp_value_stats *got,
				   const struct amp_value_stats *want)
{
	ck_assert(got->nan == want->nan && got->inf == want->inf &&
		  got->max_abs == want->max_abs &&
		  got->overflowed == want->overflowed &&
		  got->nonzero == want->nonzero && got->normal == want->normal &&
		  got->above_zero == want->above_zero);
	ck_assert_double_eq_tol(got->flushed_sum, want->flushed_sum,
				1e-12 * want->flushed_sum);
	ck_assert_double_eq_tol(got->sum, want->sum, 1e-12 * want->sum);
}

START_TEST(test_value_stats_decide_as_the_host)
{
	enum amp_dtype targets[] = { AMP_DTYPE_F16, AMP_DTYPE_BF16 };
	float values[4096];

	for (unsigned seed = 1; seed <= 40; seed++) {
		unsigned state = seed;
		size_t n = 1 + seed * 97 % 4096;
		for (size_t i = 0; i < n; i++)
			values[i] = value_spread_next(&state);
		for (int t = 0; t < 2; t++) {
			struct amp_cast_limits c = amp_cast_limits_of(targets[t]);
			struct amp_value_stats s = stats_of(
				values, n, (struct amp_value_limits){
						   c.tiny, c.zero, c.overflow, 1 });
			struct amp_cast_verdict v, from_stats;
			amp_cast_verdict_of(values, n, targets[t], &v);
			amp_cast_verdict_of_stats(&s, &from_stats);
			assert_same_verdict(&from_stats, &v);
			double lost = 0.0, total = 0.0;
			for (size_t i = 0; i < n; i++)
				if (isfinite(values[i])) {
					total += fabsf(values[i]);
					lost += fabsf(values[i]) < c.tiny
							? fabsf(values[i]) : 0.0;
				}
			ck_assert(fabs(s.flushed_sum - lost) <= 1e-12 * lost);
			ck_assert_double_eq_tol(s.sum, total, 1e-12 * total);
			struct amp_value_limits against = {
				c.tiny, c.zero, c.overflow, 1 };
			struct amp_value_stats merged = stats_of(values, n / 3,
								 against);
			struct amp_value_stats rest = stats_of(
				values + n / 3, n - n / 3, against);
			amp_value_stats_merge(&merged, &rest);
			assert_merged_as_whole(&merged, &s);
		}
		/* only small values: each cast's underflow is material, and
		 * its zeroed count compares at the zero point */
		float near_zero[4];
		value_spread_small(targets[seed % 2], near_zero);
		for (size_t i = 0; i < 64; i++)
			values[i] = near_zero[i % 4];
		struct amp_cast_limits c = amp_cast_limits_of(targets[seed % 2]);
		struct amp_value_stats small = stats_of(
			values, 64, (struct amp_value_limits){ c.tiny, c.zero,
							      c.overflow, 1 });
		struct amp_cast_verdict v, from_stats;
		amp_cast_verdict_of(values, 64, targets[seed % 2], &v);
		amp_cast_verdict_of_stats(&small, &from_stats);
		ck_assert(v.underflow && v.zeroed > 0);
		assert_same_verdict(&from_stats, &v);
		/* half the values flushed, carrying a share of the magnitude
		 * either side of the material one (1%) */
		const double shares[] = { 0.005, 0.009, 0.011, 0.02 };
		double share = shares[seed % 4];
		for (size_t i = 0; i < 100; i++)
			values[i] = i < 50 ? c.tiny / 2
				   : (float)(c.tiny / 2 * (1 / share - 1));
		small = stats_of(values, 100, (struct amp_value_limits){
						      c.tiny, c.zero, c.overflow, 1 });
		amp_cast_verdict_of(values, 100, targets[seed % 2], &v);
		amp_cast_verdict_of_stats(&small, &from_stats);
		ck_assert(v.underflow == (share > 0.01));
		/* exact: 50 equal floats then 50 others, summed in double */
		double flushed = 50.0 * (c.tiny / 2);
		ck_assert_double_eq(small.flushed_sum, flushed);
		ck_assert_double_eq(small.sum, flushed + 50.0 * values[99]);
		assert_same_verdict(&from_stats, &v);
		for (size_t i = 0; i < n; i++)
			values[i] = value_spread_next(&state);
		struct amp_value_stats r =
			stats_of(values, n, (struct amp_value_limits){ 0 });
		int64_t inf = 0, nan = 0;
		for (size_t i = 0; i < n; i++) {
			inf += isinf(values[i]) != 0;
			nan += isnan(values[i]) != 0;
		}
		double max_abs;
		amp_values_range(values, AMP_DTYPE_F32, n, &max_abs);
		ck_assert_int_eq((int64_t)r.inf, inf);
		ck_assert_int_eq((int64_t)r.nan, nan);
		ck_assert_double_eq(r.max_abs, max_abs);
		ck_assert(r.overflowed == 0 && r.sum == 0 && r.nonzero == 0);
	}
}
END_TEST

/* inf and NaN counted apart in both formats (both signs, every NaN
 * payload); the range of each source dtype, with its non-finite values
 * left out of the maximum. */
START_TEST(test_inf_nan_and_range)
{
	const uint16_t masks[] = { 0x7c00, 0x7f80 };
	uint16_t bits[6];
	int64_t nan;

	for (int f = 0; f < 2; f++) {
		uint16_t m = masks[f];
		uint16_t set[6] = { m, (uint16_t)(m | 0x8000), (uint16_t)(m | 1),
				    (uint16_t)(m | 0x8000 | (m == 0x7c00 ? 0x3ff : 0x7f)),
				    0x3c00 & (uint16_t)~0u, 0 };
		memcpy(bits, set, sizeof bits);
		ck_assert_int_eq(amp_count_inf_nan(bits, 6, m, &nan), 2);
		ck_assert_int_eq(nan, 2);
	}
	float f32[4] = { -3.5f, 2.0f, INFINITY, 0.0f };
	double f64[3] = { 1e300, -2.0, 0.5 };
	uint16_t f16[3] = { 0xc500 /* -5 */, 0x7c00, 0x3c00 };
	uint16_t bf16[2] = { 0x4120 /* 10 */, 0xbf80 /* -1 */ };
	double max_abs;
	ck_assert(!amp_values_range(f32, AMP_DTYPE_F32, 4, &max_abs));
	ck_assert_double_eq(max_abs, 3.5);
	ck_assert(amp_values_range(f64, AMP_DTYPE_F64, 3, &max_abs));
	ck_assert_double_eq(max_abs, 1e300);
	ck_assert(!amp_values_range(f16, AMP_DTYPE_F16, 3, &max_abs));
	ck_assert_double_eq(max_abs, 5.0);
	ck_assert(amp_values_range(bf16, AMP_DTYPE_BF16, 2, &max_abs));
	ck_assert_double_eq(max_abs, 10.0);
	ck_assert(amp_values_range(f32, AMP_DTYPE_F32, 0, &max_abs));
	ck_assert_double_eq(max_abs, 0.0);
}
END_TEST

/* ------------------------------------------------------------ end to end */

struct seen {
	int diags;
	char kind[32];
	char message[768];
	uint64_t tensor_id;
};

static void on_diag(const struct amp_event *e, void *user)
{
	struct seen *s = user;

	s->diags++;
	snprintf(s->kind, sizeof s->kind, "%s", e->diag.kind);
	snprintf(s->message, sizeof s->message, "%s", e->diag.message);
	s->tensor_id = e->diag.tensor_id;
}

/* x.to(dtype) with the value checks on: what they reported. */
static struct seen checked_cast(amp_tensor *x, enum amp_dtype dtype)
{
	struct seen s = { 0 };
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_DIAG), on_diag, &s);

	amp_set_value_checks(true);
	amp_tensor *y = amp_to(x, dtype);
	amp_set_value_checks(false);
	amp_hook_remove(hook);
	ck_assert_ptr_nonnull(y);
	amp_tensor_free(y);
	return s;
}

/* A transposed 8x8 source (read through a copy): 10 values that an f16
 * cast zeroes (one exactly half the smallest subnormal), 10 it makes
 * subnormal, zeros, inf and NaN (none of them
 * counted) and 36 normal values; the message gives the exact counts. */
START_TEST(test_underflow_non_contiguous_f16)
{
	float values[64];
	int64_t shape[2] = { 8, 8 };

	for (int i = 0; i < 64; i++)
		values[i] = i < 9 ? 1e-8f : i < 10 ? 0x1p-25f /* ties to 0 */
			  : i < 20 ? -3e-5f : i < 25 ? 0.0f
			  : i < 27 ? INFINITY : i < 28 ? NAN : 1e-4f;
	amp_tensor *x = amp_from_data(2, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU,
				      values);
	amp_tensor *xt = amp_t(x);
	ck_assert_ptr_nonnull(xt);
	ck_assert(!amp_tensor_is_contiguous(xt));
	struct seen s = checked_cast(xt, AMP_DTYPE_F16);
	ck_assert_int_eq(s.diags, 1);
	ck_assert_str_eq(s.kind, "cast-underflow");
	ck_assert_uint_eq(s.tensor_id, amp_tensor_id(xt));
	ck_assert_msg(strstr(s.message, "flushed 35.7% of its non-zero values "
					"(20 of 56; about 10 to zero)"),
		      "%s", s.message);
	amp_tensor_free(xt);
	amp_tensor_free(x);
}
END_TEST

/* bf16 flushes below f32's smallest normal: f32 subnormal sources, 37 of
 * them (an odd tail), 13 flushed, 3 of those to zero. */
START_TEST(test_underflow_subnormals_bf16)
{
	float values[37];
	int64_t shape[1] = { 37 };

	for (int i = 0; i < 37; i++)
		values[i] = i < 3 ? 1e-41f : i < 13 ? 1e-39f : 2e-38f;
	amp_tensor *x = amp_from_data(1, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU,
				      values);
	struct seen s = checked_cast(x, AMP_DTYPE_BF16);
	ck_assert_int_eq(s.diags, 1);
	ck_assert_msg(strstr(s.message, "(13 of 37; about 3 to zero)"), "%s",
		      s.message);
	/* the same values are f16-flushed too, but 2e-38 is no f16 normal
	 * either: all 37 flushed, all to zero */
	s = checked_cast(x, AMP_DTYPE_F16);
	ck_assert_int_eq(s.diags, 1);
	ck_assert_msg(strstr(s.message, "(37 of 37; about 37 to zero)"), "%s",
		      s.message);
	amp_tensor_free(x);
}
END_TEST

/* a * a with one large value in the last element of an odd-length vector:
 * inf there in f16 (300^2 > 65504) and in bf16 (1e20^2 > 3.4e38); finite
 * one step below (200^2, 1e19^2). */
static int squares_overflowing(enum amp_dtype dtype, float large)
{
	float values[33];
	int64_t shape[1] = { 33 };
	struct seen s = { 0 };

	for (int i = 0; i < 33; i++)
		values[i] = i == 32 ? large : 1.5f;
	amp_tensor *f32 = amp_from_data(1, shape, AMP_DTYPE_F32, AMP_DEVICE_CPU,
					values);
	amp_tensor *a = amp_to(f32, dtype);
	int hook = amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_DIAG), on_diag, &s);
	amp_set_value_checks(true);
	amp_tensor *y = amp_mul(a, a);
	amp_set_value_checks(false);
	amp_hook_remove(hook);
	ck_assert_ptr_nonnull(y);
	if (s.diags) {
		ck_assert_str_eq(s.kind, "fp16-overflow");
		ck_assert_uint_eq(s.tensor_id, amp_tensor_id(y));
	}
	amp_tensor *done[] = { f32, a, y };
	for (int i = 0; i < 3; i++)
		amp_tensor_free(done[i]);
	return s.diags;
}

START_TEST(test_overflow_in_last_element)
{
	ck_assert_int_eq(squares_overflowing(AMP_DTYPE_F16, 300.0f), 1);
	ck_assert_int_eq(squares_overflowing(AMP_DTYPE_F16, 200.0f), 0);
	ck_assert_int_eq(squares_overflowing(AMP_DTYPE_BF16, 1e20f), 1);
	ck_assert_int_eq(squares_overflowing(AMP_DTYPE_BF16, 1e19f), 0);
}
END_TEST

static Suite *diag_scan_suite(void)
{
	Suite *s = suite_create("diag_scan");
	TCase *tiers = tcase_create("tiers");
	TCase *checks = tcase_create("checks");

	tcase_add_test(tiers, test_count_below_tiers_per_value);
	tcase_add_test(tiers, test_count_below_tiers_mixed);
	tcase_add_test(tiers, test_non_finite_tiers_every_pattern);
	tcase_add_test(tiers, test_count_outside_tiers);
	tcase_add_test(checks, test_cast_limits_match_the_conversion);
	tcase_add_test(checks, test_cast_verdict);
	tcase_add_test(checks, test_value_stats_decide_as_the_host);
	tcase_add_test(checks, test_inf_nan_and_range);
	suite_add_tcase(s, tiers);
	tcase_add_test(checks, test_underflow_non_contiguous_f16);
	tcase_add_test(checks, test_underflow_subnormals_bf16);
	tcase_add_test(checks, test_overflow_in_last_element);
	suite_add_tcase(s, checks);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(diag_scan_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
