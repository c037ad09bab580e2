/* The element scans behind the value checks (lib/diag.c), in the same
 * tiers as the row converters (convert_x86.h): one C loop each, compiled
 * for the baseline ISA, AVX2 and AVX-512F and picked at run time.  Every
 * tier gives the same answer as the scalar definition in the comments.
 * Internal to libamp; the tests compare the tiers. */
#ifndef AMP_DIAG_SCAN_H
#define AMP_DIAG_SCAN_H

#include "convert_x86.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What a cast of f32 values to a 16-bit float loses: among the finite
 * non-zero values, those below the target's smallest normal `tiny`
 * (flushed: subnormal or zero after the cast) and those at or below
 * `zero`, half its smallest subnormal (zero after the cast).  inf and NaN
 * count as none of them. */
struct amp_underflow_counts {
	int64_t nonzero;
	int64_t flushed;
	int64_t zeroed;
};

/* Adds n contiguous values' counts to *counts; tiny and zero are
 * positive finite f32 values. */
typedef void (*amp_underflow_scan_fn)(const float *values, size_t n,
				      float tiny, float zero,
				      struct amp_underflow_counts *counts);

/* Whether any of n contiguous 16-bit floats is inf or NaN: all the bits
 * of `exponent_mask` set (0x7c00 for f16, 0x7f80 for bf16). */
typedef bool (*amp_non_finite_scan_fn)(const uint16_t *bits, size_t n,
				       uint16_t exponent_mask);

/* The scans of tier `isa` (the best this CPU runs: amp_isa_best()); tiers
 * above amp_isa_best() crash with SIGILL when called. */
amp_underflow_scan_fn amp_underflow_scan(enum amp_isa isa);
amp_non_finite_scan_fn amp_non_finite_scan(enum amp_isa isa);

#endif /* AMP_DIAG_SCAN_H */
