/* f32 <-> f16 and f32 <-> bf16 rows: a scalar tier built on
 * kernels/amp_scalar.h and x86 SIMD tiers compiled with target attributes,
 * so one binary runs everywhere and uses what the CPU has.
 *
 * f32 -> bf16 is integer arithmetic, except in the AVX512_BF16 tier:
 * vcvtne2ps2bf16 rounds to nearest even and quiets NaNs as the reference
 * does, but turns f32 subnormal inputs into zeros; that tier converts a
 * block holding one with the integer code instead, so every tier gives
 * the same bits.  Vector bodies leave fewer than one vector of elements
 * to the scalar code, which gives the same bits. */
#include "cast_rows.h"

#include "amp_scalar.h"

#include <stdatomic.h>

static void scalar_f32_to_f16(void *dst, const void *src, size_t n)
{
	uint16_t *out = dst;
	const float *in = src;
	for (size_t i = 0; i < n; i++)
		out[i] = amp_scalar_f32_to_f16(in[i]);
}

static void scalar_f16_to_f32(void *dst, const void *src, size_t n)
{
	float *out = dst;
	const uint16_t *in = src;
	for (size_t i = 0; i < n; i++)
		out[i] = amp_scalar_f16_to_f32(in[i]);
}

static void scalar_f32_to_bf16(void *dst, const void *src, size_t n)
{
	uint16_t *out = dst;
	const float *in = src;
	for (size_t i = 0; i < n; i++)
		out[i] = amp_scalar_f32_to_bf16(in[i]);
}

static void scalar_bf16_to_f32(void *dst, const void *src, size_t n)
{
	float *out = dst;
	const uint16_t *in = src;
	for (size_t i = 0; i < n; i++)
		out[i] = amp_scalar_bf16_to_f32(in[i]);
}

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>
#define AMP_HAVE_X86 1

/* ------------------------------------------------------- AVX2 + F16C */

#define AVX2 __attribute__((target("avx2,f16c")))

AVX2 static void avx2_f32_to_f16(void *dst, const void *src, size_t n)
{
	uint16_t *out = dst;
	const float *in = src;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_loadu_ps(in + i);
		_mm_storeu_si128((__m128i *)(out + i),
				 _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
	}
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	scalar_f32_to_f16(out + i, in + i, n - i);
}

AVX2 static void avx2_f16_to_f32(void *dst, const void *src, size_t n)
{
	float *out = dst;
	const uint16_t *in = src;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(in + i));
		_mm256_storeu_ps(out + i, _mm256_cvtph_ps(h));
	}
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	scalar_f16_to_f32(out + i, in + i, n - i);
}

/* amp_scalar_f32_to_bf16 on 8 lanes; the result is in each lane's low
 * 16 bits. */
AVX2 static inline __m256i avx2_bf16_round(__m256i bits)
{
	const __m256i one = _mm256_set1_epi32(1);
	const __m256i bias = _mm256_set1_epi32(0x7fff);
	const __m256i inf = _mm256_set1_epi32(0x7f800000);
	const __m256i quiet_bit = _mm256_set1_epi32(0x00400000);
	const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);

	__m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), one);
	__m256i rounded =
		_mm256_add_epi32(_mm256_add_epi32(bits, bias), odd);
	__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, abs_mask), inf);
	__m256i quieted = _mm256_or_si256(bits, quiet_bit);
	return _mm256_srli_epi32(_mm256_blendv_epi8(rounded, quieted, nan), 16);
}

AVX2 static void avx2_f32_to_bf16(void *dst, const void *src, size_t n)
{
	uint16_t *out = dst;
	const float *in = src;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256i lo = avx2_bf16_round(
			_mm256_loadu_si256((const __m256i *)(in + i)));
		__m256i hi = avx2_bf16_round(
			_mm256_loadu_si256((const __m256i *)(in + i + 8)));
		/* packus works within 128-bit lanes: lo0 hi0 lo1 hi1; the
		 * permute puts the quarters back in order. */
		__m256i packed = _mm256_packus_epi32(lo, hi);
		packed = _mm256_permute4x64_epi64(packed, 0xd8);
		_mm256_storeu_si256((__m256i *)(out + i), packed);
	}
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	scalar_f32_to_bf16(out + i, in + i, n - i);
}

AVX2 static void avx2_bf16_to_f32(void *dst, const void *src, size_t n)
{
	float *out = dst;
	const uint16_t *in = src;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(in + i));
		__m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
		_mm256_storeu_si256((__m256i *)(out + i), w);
	}
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	scalar_bf16_to_f32(out + i, in + i, n - i);
}

/* ----------------------------------------------------------- AVX-512F */

#define AVX512 __attribute__((target("avx512f")))

AVX512 static void avx512_f32_to_f16(void *dst, const void *src, size_t n)
{
	uint16_t *out = dst;
	const float *in = src;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m512 x = _mm512_loadu_ps(in + i);
		_mm256_storeu_si256((__m256i *)(out + i),
				    _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT));
	}
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	scalar_f32_to_f16(out + i, in + i, n - i);
}

AVX512 static void avx512_f16_to_f32(void *dst, const void *src, size_t n)
{
	float *out = dst;
	const uint16_t *in = src;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256i h = _mm256_loadu_si256((const __m256i *)(in + i));
		_mm512_storeu_ps(out + i, _mm512_cvtph_ps(h));
	}
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	scalar_f16_to_f32(out + i, in + i, n - i);
}

/* 16 f32 lanes rounded to bf16 with integer arithmetic (any input). */
AVX512 static inline __m256i avx512_bf16_round(__m512i bits)
{
	const __m512i one = _mm512_set1_epi32(1);
	const __m512i bias = _mm512_set1_epi32(0x7fff);
	const __m512i inf = _mm512_set1_epi32(0x7f800000);
	const __m512i quiet_bit = _mm512_set1_epi32(0x00400000);
	const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
	__m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), one);
	__m512i rounded = _mm512_add_epi32(_mm512_add_epi32(bits, bias), odd);
	__mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(bits, abs_mask),
						inf);
	__m512i result = _mm512_mask_or_epi32(rounded, nan, bits, quiet_bit);
	return _mm512_cvtepi32_epi16(_mm512_srli_epi32(result, 16));
}

AVX512 static void avx512_f32_to_bf16(void *dst, const void *src, size_t n)
{
	uint16_t *out = dst;
	const float *in = src;
	size_t i = 0;
	for (; i + 16 <= n; i += 16)
		_mm256_storeu_si256((__m256i *)(out + i),
				    avx512_bf16_round(_mm512_loadu_si512(in + i)));
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	scalar_f32_to_bf16(out + i, in + i, n - i);
}

AVX512 static void avx512_bf16_to_f32(void *dst, const void *src, size_t n)
{
	float *out = dst;
	const uint16_t *in = src;
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256i h = _mm256_loadu_si256((const __m256i *)(in + i));
		__m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
		_mm512_storeu_si512(out + i, w);
	}
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	scalar_bf16_to_f32(out + i, in + i, n - i);
}
/* ---------------------------------------------------- AVX512_BF16 */

#define AVX512_BF16 \
	__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

/* Lanes holding an f32 subnormal, which vcvtne2ps2bf16 flushes. */
AVX512_BF16 static inline __mmask16 avx512_subnormal_lanes(__m512 x)
{
	return _mm512_fpclass_ps_mask(x, 0x20); /* class: denormal */
}

AVX512_BF16 static void avx512bf16_f32_to_bf16(void *dst, const void *src,
					       size_t n)
{
	uint16_t *out = dst;
	const float *in = src;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m512 lo = _mm512_loadu_ps(in + i);
		__m512 hi = _mm512_loadu_ps(in + i + 16);
		if (avx512_subnormal_lanes(lo) | avx512_subnormal_lanes(hi)) {
			_mm256_storeu_si256((__m256i *)(out + i),
					    avx512_bf16_round(_mm512_castps_si512(lo)));
			_mm256_storeu_si256((__m256i *)(out + i + 16),
					    avx512_bf16_round(_mm512_castps_si512(hi)));
			continue;
		}
		/* the second operand fills the low half */
		__m512bh packed = _mm512_cvtne2ps_pbh(hi, lo);
		_mm512_storeu_si512(out + i, (__m512i)packed);
	}
	/* leave no dirty upper register state: the SSE code that runs
	 * next (libm, the scalar tail) would pay a transition per op */
	_mm256_zeroupper();
	avx512_f32_to_bf16(out + i, in + i, n - i);
}
#endif /* x86 */

/* -------------------------------------------------------------- tables */

static const amp_row_fn rows[AMP_ISA_COUNT][AMP_CAST_PAIR_COUNT] = {
	[AMP_ISA_SCALAR] = {
		[AMP_CAST_F32_TO_F16] = scalar_f32_to_f16,
		[AMP_CAST_F16_TO_F32] = scalar_f16_to_f32,
		[AMP_CAST_F32_TO_BF16] = scalar_f32_to_bf16,
		[AMP_CAST_BF16_TO_F32] = scalar_bf16_to_f32,
	},
#ifdef AMP_HAVE_X86
	[AMP_ISA_AVX2] = {
		[AMP_CAST_F32_TO_F16] = avx2_f32_to_f16,
		[AMP_CAST_F16_TO_F32] = avx2_f16_to_f32,
		[AMP_CAST_F32_TO_BF16] = avx2_f32_to_bf16,
		[AMP_CAST_BF16_TO_F32] = avx2_bf16_to_f32,
	},
	[AMP_ISA_AVX512] = {
		[AMP_CAST_F32_TO_F16] = avx512_f32_to_f16,
		[AMP_CAST_F16_TO_F32] = avx512_f16_to_f32,
		[AMP_CAST_F32_TO_BF16] = avx512_f32_to_bf16,
		[AMP_CAST_BF16_TO_F32] = avx512_bf16_to_f32,
	},
	[AMP_ISA_AVX512_BF16] = {
		[AMP_CAST_F32_TO_F16] = avx512_f32_to_f16,
		[AMP_CAST_F16_TO_F32] = avx512_f16_to_f32,
		[AMP_CAST_F32_TO_BF16] = avx512bf16_f32_to_bf16,
		[AMP_CAST_BF16_TO_F32] = avx512_bf16_to_f32,
	},
#endif
};

static const char *const isa_names[AMP_ISA_COUNT] = {
	[AMP_ISA_SCALAR] = "scalar",
	[AMP_ISA_AVX2] = "avx2",
	[AMP_ISA_AVX512] = "avx512",
	[AMP_ISA_AVX512_BF16] = "avx512bf16",
};

static const struct {
	enum amp_dtype dst;
	enum amp_dtype src;
} pair_dtypes[AMP_CAST_PAIR_COUNT] = {
	[AMP_CAST_F32_TO_F16] = { AMP_DTYPE_F16, AMP_DTYPE_F32 },
	[AMP_CAST_F16_TO_F32] = { AMP_DTYPE_F32, AMP_DTYPE_F16 },
	[AMP_CAST_F32_TO_BF16] = { AMP_DTYPE_BF16, AMP_DTYPE_F32 },
	[AMP_CAST_BF16_TO_F32] = { AMP_DTYPE_F32, AMP_DTYPE_BF16 },
};

static enum amp_isa detect_isa(void)
{
#ifdef AMP_HAVE_X86
	/* Needed when we run before libgcc's own constructor, e.g. from
	 * another library's constructor. */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx512f"))
		return AMP_ISA_AVX512;
	/* F16C from CPUID leaf 1: clang's __builtin_cpu_supports does not
	 * know "f16c" (and AVX2, checked first, covers the OS's YMM state). */
	unsigned eax, ebx, ecx, edx;
	if (__builtin_cpu_supports("avx2") &&
	    __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C))
		return AMP_ISA_AVX2;
#endif
	return AMP_ISA_SCALAR;
}

bool amp_cpu_has_avx512_bf16(void)
{
#ifdef AMP_HAVE_X86
	unsigned eax, ebx, ecx, edx;

	/* the bits say nothing when the OS does not save zmm state; the
	 * tier also uses BW, VL and DQ (leaf 7.0 EBX bits 30, 31, 17) */
	if (detect_isa() != AMP_ISA_AVX512 ||
	    !__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx))
		return false;
	unsigned bw_vl_dq = (1u << 30) | (1u << 31) | (1u << 17);
	if ((ebx & bw_vl_dq) != bw_vl_dq ||
	    !__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx))
		return false;
	return (eax >> 5) & 1;
#else
	return false;
#endif
}

enum amp_isa amp_isa_best(void)
{
	/* amp_convert runs per element in some kernels: detect once.
	 * Racing first callers store the same value. */
	static atomic_int best = -1;
	int isa = atomic_load_explicit(&best, memory_order_relaxed);
	if (isa < 0) {
		isa = detect_isa();
		if (isa == AMP_ISA_AVX512 && amp_cpu_has_avx512_bf16())
			isa = AMP_ISA_AVX512_BF16;
		atomic_store_explicit(&best, isa, memory_order_relaxed);
	}
	return (enum amp_isa)isa;
}

const char *amp_isa_name(enum amp_isa isa)
{
	return (unsigned)isa < AMP_ISA_COUNT ? isa_names[isa] : "?";
}

amp_row_fn amp_cast_row(enum amp_isa isa, enum amp_cast_pair pair)
{
	if ((unsigned)isa >= AMP_ISA_COUNT ||
	    (unsigned)pair >= AMP_CAST_PAIR_COUNT)
		return NULL;
	return rows[isa][pair];
}

amp_row_fn amp_cast_row_for(enum amp_dtype dst, enum amp_dtype src)
{
	for (int pair = 0; pair < AMP_CAST_PAIR_COUNT; pair++) {
		if (pair_dtypes[pair].dst == dst && pair_dtypes[pair].src == src)
			return rows[amp_isa_best()][pair];
	}
	return NULL;
}
