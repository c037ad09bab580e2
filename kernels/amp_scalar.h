/* Scalar conversion maths shared by the CPU backend (gcc) and the CUDA
 * kernels (nvcc): f32 <-> f16, f32 <-> bf16 and PyTorch's float -> int
 * casts.  Everything is `static inline` and marked AMP_HD so both
 * compilers get the same numerics; the CPU tests check them exhaustively.
 *
 * Bit-level integer code on purpose: the results must not depend on the
 * floating-point environment (FTZ/DAZ, CUDA's flush-to-zero flags), and the
 * NaN payloads reproduce x86's F16C instructions so the scalar and SIMD
 * paths of the CPU backend agree bit for bit. */
#ifndef AMP_SCALAR_H
#define AMP_SCALAR_H

#include <stdint.h>
#include <string.h>

#ifdef __CUDACC__
#define AMP_HD __host__ __device__
#else
#define AMP_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

static inline AMP_HD uint32_t amp_scalar_f32_bits(float value)
{
	uint32_t bits;
	memcpy(&bits, &value, sizeof bits);
	return bits;
}

static inline AMP_HD float amp_scalar_f32_from_bits(uint32_t bits)
{
	float value;
	memcpy(&value, &bits, sizeof value);
	return value;
}

/* f32 -> f16, round to nearest even.  NaN stays NaN with its sign and the
 * top 10 payload bits, quieted (what vcvtps2ph does); 65520 and above
 * round to inf; f16 subnormals are rounded exactly. */
static inline AMP_HD uint16_t amp_scalar_f32_to_f16(float value)
{
	uint32_t bits = amp_scalar_f32_bits(value);
	uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
	uint32_t magnitude = bits & 0x7fffffffu;

	if (magnitude > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u | ((magnitude >> 13) & 0x03ffu));
	/* 65520 is the midpoint between 65504 (odd mantissa) and 2^16: the
	 * tie goes to the even side, which is inf. */
	if (magnitude >= 0x477ff000u)
		return (uint16_t)(sign | 0x7c00u);
	if (magnitude >= 0x38800000u) {
		/* Normal in f16: rebias the exponent (127 -> 15) and round
		 * the 13 dropped mantissa bits; a carry into the exponent is
		 * the correct result. */
		uint32_t odd = (magnitude >> 13) & 1u;
		uint32_t rounded = magnitude - 0x38000000u + 0x0fffu + odd;
		return (uint16_t)(sign | (rounded >> 13));
	}
	/* Below 2^-14: the result counts units of 2^-24.  The value is
	 * mantissa * 2^(exponent - 150), i.e. mantissa >> (126 - exponent)
	 * units.  A shift of 25 or more leaves less than half a unit (f32
	 * subnormals included), which rounds to zero. */
	uint32_t exponent = magnitude >> 23;
	if (exponent < 102)
		return sign;
	uint32_t mantissa = (magnitude & 0x007fffffu) | 0x00800000u;
	uint32_t shift = 126u - exponent;
	uint32_t units = mantissa >> shift;
	uint32_t rest = mantissa & ((1u << shift) - 1u);
	uint32_t half = 1u << (shift - 1u);
	if (rest > half || (rest == half && (units & 1u)))
		units++; /* 1023 + 1 carries into the smallest normal: correct */
	return (uint16_t)(sign | units);
}

/* f16 -> f32, exact.  A signalling NaN comes back quiet, as from vcvtph2ps
 * and c10::Half. */
static inline AMP_HD float amp_scalar_f16_to_f32(uint16_t bits)
{
	uint32_t sign = (uint32_t)(bits & 0x8000u) << 16;
	uint32_t exponent = (bits >> 10) & 0x1fu;
	uint32_t mantissa = bits & 0x03ffu;

	if (exponent == 0x1fu) {
		uint32_t quiet = mantissa ? 0x00400000u : 0u;
		return amp_scalar_f32_from_bits(sign | 0x7f800000u |
						(mantissa << 13) | quiet);
	}
	if (exponent == 0) {
		/* mantissa * 2^-24 is exact in f32 and far above f32's
		 * subnormal range, so flush-to-zero modes cannot touch it. */
		float magnitude = (float)mantissa * 5.9604644775390625e-08f;
		return amp_scalar_f32_from_bits(
			sign | amp_scalar_f32_bits(magnitude));
	}
	return amp_scalar_f32_from_bits(sign | ((exponent + 112u) << 23) |
					(mantissa << 13));
}

/* f32 -> bf16, round to nearest even (bf16 is f32's top half).  NaN stays
 * NaN with its sign and top payload bits, quieted: without the quiet bit a
 * NaN whose payload sits in the low half would truncate to inf.  Overflow
 * rounds to inf by the carry; f32 subnormals round exactly (integer maths,
 * unlike vcvtneps2bf16 which treats them as zero). */
static inline AMP_HD uint16_t amp_scalar_f32_to_bf16(float value)
{
	uint32_t bits = amp_scalar_f32_bits(value);

	if ((bits & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((bits >> 16) | 0x0040u);
	uint32_t odd = (bits >> 16) & 1u;
	return (uint16_t)((bits + 0x7fffu + odd) >> 16);
}

/* bf16 -> f32, exact (NaNs keep their bits). */
static inline AMP_HD float amp_scalar_bf16_to_f32(uint16_t bits)
{
	return amp_scalar_f32_from_bits((uint32_t)bits << 16);
}

/* float -> int64 as PyTorch's CPU cast on x86 (cvttsd2si): truncation
 * toward zero; NaN and out-of-range values give the "integer indefinite"
 * INT64_MIN.  Spelled out because the plain C cast is undefined there. */
static inline AMP_HD int64_t amp_scalar_f64_to_i64(double value)
{
	if (value >= -9223372036854775808.0 && value < 9223372036854775808.0)
		return (int64_t)value;
	return INT64_MIN;
}

/* float -> int32, the same rule with the int32 range (anything that
 * truncates into it is valid, so the bounds are exclusive +-1). */
static inline AMP_HD int32_t amp_scalar_f64_to_i32(double value)
{
	if (value > -2147483649.0 && value < 2147483648.0)
		return (int32_t)value;
	return INT32_MIN;
}

#ifdef __cplusplus
}
#endif

#endif /* AMP_SCALAR_H */
