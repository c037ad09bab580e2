/* The element scans behind the value checks, in the same tiers as the
 * row converters (cast_rows.h): one C loop each, compiled for the
 * baseline ISA, AVX2 and AVX-512F and picked at run time.  Every tier
 * gives the same answer as the scalar definition in the comments.  And
 * the verdicts built on them that every producer of value checks shares:
 * libamp's dispatcher (diag.c) and the PyTorch bridge (its values.c),
 * which compiles this file in, so one rule decides for both.  The tests
 * compare the tiers. */
#ifndef AMP_DIAG_SCAN_H
#define AMP_DIAG_SCAN_H

#include "amp_value_stats.h"
#include "cast_rows.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How many of n contiguous f32 values v have 0 < |v| < limit, for a
 * positive limit (inf and NaN are never counted).  The cast-underflow
 * check counts with three limits: inf (the finite non-zero values), the
 * target's smallest normal (those flushed), and just above half its
 * smallest subnormal (those made zero). */
typedef int64_t (*amp_count_below_fn)(const float *values, size_t n,
				      float limit);

/* Whether any of n contiguous 16-bit floats is inf or NaN: all the bits
 * of `exponent_mask` set (0x7c00 for f16, 0x7f80 for bf16). */
typedef bool (*amp_non_finite_scan_fn)(const uint16_t *bits, size_t n,
				       uint16_t exponent_mask);

/* counts[0]: how many of n contiguous f32 values v have 0 < |v| < low;
 * counts[1]: how many are finite with |v| >= high (positive low <= high;
 * inf and NaN are never counted).  One pass for both checks of a cast:
 * values flushed below the target's smallest normal, and values that
 * round to inf in it. */
typedef void (*amp_count_outside_fn)(const float *values, size_t n,
				     float low, float high, int64_t counts[2]);

/* The scans of tier `isa` (the best this CPU runs: amp_isa_best()); tiers
 * above amp_isa_best() crash with SIGILL when called. */
amp_count_below_fn amp_count_below(enum amp_isa isa);
amp_non_finite_scan_fn amp_non_finite_scan(enum amp_isa isa);
amp_count_outside_fn amp_count_outside(enum amp_isa isa);

/* ------------------------------------------------------------ verdicts */

/* Where a cast from f32 to `target` (f16 or bf16) loses values: below
 * `tiny` (the smallest normal) a value becomes subnormal, at most `zero`
 * (half the smallest subnormal) it becomes zero, from `overflow` (half an
 * ulp above the largest finite, which rounds up) it becomes inf. */
struct amp_cast_limits {
	float tiny, zero, overflow, largest;
};
struct amp_cast_limits amp_cast_limits_of(enum amp_dtype target);

/* A cast of n contiguous f32 values to f16/bf16, read on the source (the
 * cast itself need not be looked at). */
struct amp_cast_verdict {
	int64_t overflowed; /* finite values that become inf */
	int64_t flushed;    /* non-zero values below the smallest normal */
	int64_t nonzero;    /* finite non-zero values (0 unless flushed) */
	int64_t zeroed;     /* of the flushed, those made zero (0 unless
			       underflow) */
	bool underflow;     /* the flushed values are material: the
			       cast-underflow rule */
};
/* The cast-underflow rule on a cast's counts (amp_cast_verdict_of applies
 * it; a producer that counts elsewhere, on a GPU, asks it the same):
 * `flushed` of `nonzero` finite non-zero values fell below the smallest
 * normal, carrying `lost` of the sum `total` of the finite |v|. */
bool amp_underflow_material(int64_t flushed, int64_t nonzero, double lost,
			    double total);
/* What the cast checks decide of `values`: one pass when the cast loses
 * nothing (the common case), more only to explain a loss. */
void amp_cast_verdict_of(const float *values, size_t n, enum amp_dtype target,
			 struct amp_cast_verdict *out);
/* The same verdict from the source's statistics against the target's
 * limits (amp_value_stats.h: a GPU's, counted where the cast ran). */
void amp_cast_verdict_of_stats(const struct amp_value_stats *stats,
			       struct amp_cast_verdict *out);

/* Of n contiguous 16-bit floats with exponent mask `exponent_mask`: how
 * many are inf (returned) and NaN (*nan).  Scalar: for messages, after a
 * non-finite scan found some. */
int64_t amp_count_inf_nan(const uint16_t *bits, size_t n,
			  uint16_t exponent_mask, int64_t *nan);

/* The range of n contiguous values of `dtype` (f32, f64, f16 or bf16):
 * the largest finite |v| into *max_abs (0 when none) and whether every
 * value is finite.  For messages ("max |input| 3.1e+04"). */
bool amp_values_range(const void *values, enum amp_dtype dtype, size_t n,
		      double *max_abs);

#endif /* AMP_DIAG_SCAN_H */
