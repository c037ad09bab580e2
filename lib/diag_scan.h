/* The element scans behind the value checks (lib/diag.c), in the same
 * tiers as the row converters (cast_rows.h): one C loop each, compiled
 * for the baseline ISA, AVX2 and AVX-512F and picked at run time.  Every
 * tier gives the same answer as the scalar definition in the comments.
 * Internal to libamp; the tests compare the tiers. */
#ifndef AMP_DIAG_SCAN_H
#define AMP_DIAG_SCAN_H

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

/* The scans of tier `isa` (the best this CPU runs: amp_isa_best()); tiers
 * above amp_isa_best() crash with SIGILL when called. */
amp_count_below_fn amp_count_below(enum amp_isa isa);
amp_non_finite_scan_fn amp_non_finite_scan(enum amp_isa isa);

#endif /* AMP_DIAG_SCAN_H */
