/* Values of every kind the value checks tell apart, for tests that hold
 * one reckoning of them to another: zeros, inf, NaN, f16's and bf16's
 * smallest normal, zero point and overflow point with the floats either
 * side, and |x| log-uniform from 1e-12 to 1e6; either sign.  Also four
 * values about a target's zero point, where only small values are cast,
 * and spread values stored in a 16-bit dtype. */
#ifndef AMP_TEST_VALUE_SPREAD_H
#define AMP_TEST_VALUE_SPREAD_H

#include "amp.h"
#include "amp_scalar.h"
#include "diag_scan.h"

#include <math.h>

static inline float value_spread_next(unsigned *state)
{
	static float edges[18];
	if (!edges[0]) {
		enum amp_dtype targets[] = { AMP_DTYPE_F16, AMP_DTYPE_BF16 };
		for (int t = 0; t < 2; t++) {
			struct amp_cast_limits c = amp_cast_limits_of(targets[t]);
			float at[] = { c.tiny, c.zero, c.overflow };
			for (int l = 0; l < 3; l++) {
				edges[9 * t + 3 * l] = at[l];
				edges[9 * t + 3 * l + 1] = nextafterf(at[l], 0.0f);
				edges[9 * t + 3 * l + 2] = nextafterf(at[l], INFINITY);
			}
		}
	}
	*state = *state * 1103515245u + 12345u;
	unsigned r = *state >> 8;
	float sign = r & 16 ? -1.0f : 1.0f;
	switch (r % 16) {
	case 0: return 0.0f;
	case 1: return INFINITY;
	case 2: return -INFINITY;
	case 3: return NAN;
	case 4: case 5: return sign * edges[(r >> 5) % 18];
	default:
		return sign * powf(10.0f, -12.0f + 18.0f *
						     (float)(r >> 5 & 1023) / 1023.0f);
	}
}

/* On `target`'s zero point, the floats either side, half its smallest
 * normal. */
static inline void value_spread_small(enum amp_dtype target, float out[4])
{
	struct amp_cast_limits c = amp_cast_limits_of(target);

	out[0] = c.zero;
	out[1] = nextafterf(c.zero, 0.0f);
	out[2] = nextafterf(c.zero, INFINITY);
	out[3] = c.tiny / 2;
}

/* n spread values stored as `dtype` (f32, f16 or bf16) in `bits`, and
 * each as the f32 it stands for in `exact`. */
static inline void value_spread_fill(enum amp_dtype dtype, size_t n,
				     unsigned seed, void *bits, float *exact)
{
	for (size_t i = 0; i < n; i++) {
		float v = value_spread_next(&seed);
		if (dtype == AMP_DTYPE_F16) {
			((uint16_t *)bits)[i] = amp_scalar_f32_to_f16(v);
			v = amp_scalar_f16_to_f32(((uint16_t *)bits)[i]);
		} else if (dtype == AMP_DTYPE_BF16) {
			((uint16_t *)bits)[i] = amp_scalar_f32_to_bf16(v);
			v = amp_scalar_bf16_to_f32(((uint16_t *)bits)[i]);
		} else {
			((float *)bits)[i] = v;
		}
		exact[i] = v;
	}
}

#endif
