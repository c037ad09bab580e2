/* GradScaler's two device-side steps as scalar functions, shared by the
 * CUDA kernels (kernels/scaler.cu) and any host implementation, so both
 * follow PyTorch's ATen kernels to the letter:
 *   _amp_foreach_non_finite_check_and_unscale_ (AmpKernels.cu)
 *   _amp_update_scale_                          (AmpKernels.cu)
 * Finiteness is tested on the bits, so fast-math or FTZ settings cannot
 * change the answer. */
#ifndef AMP_SCALER_H
#define AMP_SCALER_H

#include "amp_scalar.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

static inline AMP_HD bool amp_scaler_is_finite(float value)
{
	return (amp_scalar_f32_bits(value) & 0x7f800000u) != 0x7f800000u;
}

/* One gradient element in f32 opmath: flags a non-finite value and
 * returns what is stored back (non-finite values are stored too). */
static inline AMP_HD float amp_scaler_unscale(float value, float inv_scale,
					      bool *found_inf)
{
	/* branch-free, so a host loop over a gradient vectorises */
	*found_inf |= !amp_scaler_is_finite(value);
	return inv_scale == 1.0f ? value : value * inv_scale;
}

/* amp_scaler_unscale for a caller that has already tested inv_scale != 1
 * outside its loop (the multiply is then unconditional, as in ATen). */
static inline AMP_HD float amp_scaler_unscale_by(float value, float inv_scale,
						bool *found_inf)
{
	*found_inf |= !amp_scaler_is_finite(value);
	return value * inv_scale;
}

/* The same for f64 gradients, whose opmath is f64 (ATen multiplies by
 * the f32 inv_scale widened to f64). */
static inline AMP_HD double amp_scaler_unscale_f64(double value,
						   float inv_scale,
						   bool *found_inf)
{
	uint64_t bits;

	memcpy(&bits, &value, sizeof bits);
	if ((bits & 0x7ff0000000000000ull) == 0x7ff0000000000000ull)
		*found_inf = true;
	return inv_scale == 1.0f ? value : value * (double)inv_scale;
}

/* _amp_update_scale_: after an overflow the scale backs off and the
 * growth tracker restarts; after growth_interval clean steps in a row the
 * scale grows, unless growing would overflow f32.  The factors are
 * doubles and the products are taken in f64 then rounded to f32, as ATen
 * computes `float * double` (a float factor would round twice). */
static inline AMP_HD void amp_scaler_update(float *scale,
					    int32_t *growth_tracker,
					    float found_inf,
					    double growth_factor,
					    double backoff_factor,
					    int64_t growth_interval)
{
	if (found_inf != 0.0f) {
		*scale = (float)((double)*scale * backoff_factor);
		*growth_tracker = 0;
		return;
	}
	/* incremented before the test: this update follows a clean step */
	int32_t successful = *growth_tracker + 1;
	if (successful == growth_interval) {
		float grown = (float)((double)*scale * growth_factor);
		if (amp_scaler_is_finite(grown))
			*scale = grown;
		*growth_tracker = 0;
	} else {
		*growth_tracker = successful;
	}
}

#ifdef __cplusplus
}
#endif

#endif /* AMP_SCALER_H */
