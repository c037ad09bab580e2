/* Row converters between f32 and the 16-bit float formats (the casts
 * autocast does all the time), in tiers: portable scalar code and x86 SIMD
 * (AVX2 + F16C, AVX-512F) picked at run time from the CPU's features.
 * Every tier gives the same bits as kernels/amp_scalar.h.  Internal to
 * libamp (dtype.c); tests and benchmarks use the tiers to compare them. */
#ifndef AMP_CAST_ROWS_H
#define AMP_CAST_ROWS_H

#include "amp.h"

enum amp_isa {
	AMP_ISA_SCALAR,
	AMP_ISA_AVX2,   /* AVX2 + F16C */
	AMP_ISA_AVX512, /* AVX-512F */
	AMP_ISA_AVX512_BF16, /* AVX-512F/BW/VL/DQ + BF16 (vcvtne2ps2bf16) */
	AMP_ISA_COUNT
};

enum amp_cast_pair {
	AMP_CAST_F32_TO_F16,
	AMP_CAST_F16_TO_F32,
	AMP_CAST_F32_TO_BF16,
	AMP_CAST_BF16_TO_F32,
	AMP_CAST_PAIR_COUNT
};

/* Converts n contiguous elements; dst and src must not overlap. */
typedef void (*amp_row_fn)(void *dst, const void *src, size_t n);

/* The best tier this CPU (and OS) runs. */
enum amp_isa amp_isa_best(void);
/* "scalar", "avx2", "avx512", "avx512bf16" */
const char *amp_isa_name(enum amp_isa isa);
/* Whether the CPU and OS run AVX512_BF16 with AVX-512 BW, VL and DQ. */
bool amp_cpu_has_avx512_bf16(void);
/* The row converter of `pair` in tier `isa`; NULL when this build has no
 * such tier.  Tiers above amp_isa_best() crash with SIGILL when called. */
amp_row_fn amp_cast_row(enum amp_isa isa, enum amp_cast_pair pair);
/* The best row converter for (dst, src) on this CPU, or NULL when the
 * pair is not one of enum amp_cast_pair. */
amp_row_fn amp_cast_row_for(enum amp_dtype dst, enum amp_dtype src);

#endif /* AMP_CAST_ROWS_H */
