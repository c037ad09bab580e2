/* Scalar maths shared by the CPU backend (lib/cpu/) and the CUDA kernels:
 * activations, their numerically stable forms, and the loss terms, each
 * in f32 (opmath of f16/bf16/f32, libm's "f" suffix) and f64.
 * Header-only, static inline, host/device under nvcc. */
#ifndef AMP_MATH_H
#define AMP_MATH_H

#include "amp_scalar.h" /* AMP_HD */

#include <math.h>
#include <stdint.h>

/* sqrt(2 / pi) and 1 / sqrt(2), as PyTorch's GELU kernels spell them. */
#define AMP_SQRT_2_OVER_PI 0.7978845608028654
#define AMP_SQRT1_2 0.7071067811865476
#define AMP_GELU_TANH_COEFF 0.044715

/* PyTorch clamps the log terms of binary_cross_entropy here. */
#define AMP_BCE_LOG_MIN (-100.0)

static inline AMP_HD float amp_sigmoidf(float x)
{
	return 1.0f / (1.0f + expf(-x));
}

/* (amp_sigmoid is the op of amp.h, hence the suffix) */
static inline AMP_HD double amp_sigmoid_f64(double x)
{
	return 1.0 / (1.0 + exp(-x));
}

/* gelu(x) = x * Phi(x), the exact (erf) form: approximate='none'. */
static inline AMP_HD float amp_gelu_erff(float x)
{
	return 0.5f * x * (1.0f + erff(x * (float)AMP_SQRT1_2));
}

static inline AMP_HD double amp_gelu_erf(double x)
{
	return 0.5 * x * (1.0 + erf(x * AMP_SQRT1_2));
}

/* approximate='tanh', in ATen's order of operations. */
static inline AMP_HD float amp_gelu_tanhf(float x)
{
	float cube = x * x * x;
	float inner = (float)AMP_SQRT_2_OVER_PI *
		      (x + (float)AMP_GELU_TANH_COEFF * cube);
	return 0.5f * x * (1.0f + tanhf(inner));
}

static inline AMP_HD double amp_gelu_tanh(double x)
{
	double cube = x * x * x;
	double inner = AMP_SQRT_2_OVER_PI * (x + AMP_GELU_TANH_COEFF * cube);
	return 0.5 * x * (1.0 + tanh(inner));
}

/* log(sigmoid(x)) without overflow: min(x, 0) - log1p(exp(-|x|)). */
static inline AMP_HD float amp_log_sigmoidf(float x)
{
	return fminf(x, 0.0f) - log1pf(expf(-fabsf(x)));
}

static inline AMP_HD double amp_log_sigmoid(double x)
{
	return fmin(x, 0.0) - log1p(exp(-fabs(x)));
}

/* binary_cross_entropy_with_logits, one element, PyTorch's form:
 * (1 - t) * x - (1 + (pos_weight - 1) * t) * log_sigmoid(x). */
static inline AMP_HD float amp_bce_logitsf(float x, float t, float pos_weight)
{
	return (1.0f - t) * x - (1.0f + (pos_weight - 1.0f) * t) *
					amp_log_sigmoidf(x);
}

static inline AMP_HD double amp_bce_logits(double x, double t,
					   double pos_weight)
{
	return (1.0 - t) * x - (1.0 + (pos_weight - 1.0) * t) *
				       amp_log_sigmoid(x);
}

/* binary_cross_entropy, one element: logs clamped at -100 so that inputs
 * of exactly 0 or 1 give a finite loss. */
static inline AMP_HD float amp_bcef(float x, float t)
{
	float log_x = fmaxf(logf(x), (float)AMP_BCE_LOG_MIN);
	float log_1mx = fmaxf(log1pf(-x), (float)AMP_BCE_LOG_MIN);
	return (t - 1.0f) * log_1mx - t * log_x;
}

static inline AMP_HD double amp_bce(double x, double t)
{
	double log_x = fmax(log(x), AMP_BCE_LOG_MIN);
	double log_1mx = fmax(log1p(-x), AMP_BCE_LOG_MIN);
	return (t - 1.0) * log_1mx - t * log_x;
}

/* Integer power as ATen's powi: exact, negative exponents give 0 except
 * for bases 1 and -1. */
static inline AMP_HD int64_t amp_powi(int64_t base, int64_t exponent)
{
	int64_t result = 1;

	if (exponent < 0) {
		if (base == 1)
			return 1;
		if (base == -1)
			return (-exponent) % 2 ? -1 : 1;
		return 0;
	}
	while (exponent) {
		if (exponent & 1)
			result = (int64_t)((uint64_t)result * (uint64_t)base);
		exponent >>= 1;
		base = (int64_t)((uint64_t)base * (uint64_t)base);
	}
	return result;
}

#endif /* AMP_MATH_H */
