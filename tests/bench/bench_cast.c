/* Cast throughput: f32 -> bf16 and f32 -> f16 rows through amp_convert
 * (the best SIMD tier of this CPU) and through the scalar tier, next to a
 * memcpy moving the same number of bytes, from L1/L2-sized buffers to
 * DRAM-sized ones.  GB/s counts bytes read plus bytes written (10^9 B/s),
 * best of several repetitions.  Last, the in-cache comparison the
 * conversions aim at (f32 -> bf16 at least as fast as memcpy), from the
 * fastest single call of many, which a busy machine disturbs least. */
#include "amp.h"
#include "cast_rows.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPETITIONS 5
/* Each repetition loops until it has run this long, so small buffers
 * are timed over many calls. */
#define MIN_SECONDS 0.02

enum method {
	METHOD_BF16,
	METHOD_BF16_SCALAR,
	METHOD_F16,
	METHOD_F16_SCALAR,
	METHOD_MEMCPY,
	METHOD_COUNT
};

static const char *const method_names[METHOD_COUNT] = {
	[METHOD_BF16] = "->bf16",
	[METHOD_BF16_SCALAR] = "scalar",
	[METHOD_F16] = "->f16",
	[METHOD_F16_SCALAR] = "scalar",
	[METHOD_MEMCPY] = "memcpy",
};

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void run(enum method method, void *out, const float *in, size_t n)
{
	switch (method) {
	case METHOD_BF16:
		amp_convert(out, AMP_DTYPE_BF16, in, AMP_DTYPE_F32, n);
		break;
	case METHOD_BF16_SCALAR:
		amp_cast_row(AMP_ISA_SCALAR, AMP_CAST_F32_TO_BF16)(out, in, n);
		break;
	case METHOD_F16:
		amp_convert(out, AMP_DTYPE_F16, in, AMP_DTYPE_F32, n);
		break;
	case METHOD_F16_SCALAR:
		amp_cast_row(AMP_ISA_SCALAR, AMP_CAST_F32_TO_F16)(out, in, n);
		break;
	case METHOD_MEMCPY:
		/* 3n bytes: the traffic of a 4n-byte read plus 2n-byte write */
		memcpy(out, in, 3 * n);
		break;
	default:
		break;
	}
}

/* Best GB/s of `method` on n f32 elements (6n bytes moved per call). */
static double measure(enum method method, void *out, const float *in,
		      size_t n)
{
	double best = 0;
	for (int rep = 0; rep < REPETITIONS; rep++) {
		long calls = 0;
		double start = now(), elapsed;
		do {
			run(method, out, in, n);
			calls++;
			elapsed = now() - start;
		} while (elapsed < MIN_SECONDS);
		double rate = 6.0 * (double)n * (double)calls / elapsed / 1e9;
		if (rate > best)
			best = rate;
	}
	return best;
}

/* GB/s of the fastest of `calls` single calls on n elements. */
static double fastest_call(enum method method, void *out, const float *in,
			   size_t n, long calls)
{
	double best = 1e9;

	for (long c = 0; c < calls; c++) {
		double start = now();
		run(method, out, in, n);
		double elapsed = now() - start;
		if (elapsed < best)
			best = elapsed;
	}
	return 6.0 * (double)n / best / 1e9;
}

int main(void)
{
	static const size_t sizes[] = { 64u << 10, 1u << 20, 16u << 20,
					128u << 20 };
	size_t largest = sizes[sizeof sizes / sizeof sizes[0] - 1];
	float *in = aligned_alloc(64, largest);
	/* room for memcpy's 3n bytes */
	void *out = aligned_alloc(64, largest);

	if (!in || !out) {
		fprintf(stderr, "bench_cast: out of memory\n");
		return 1;
	}
	/* activations-like values: mostly small, both signs; a cheap LCG */
	uint32_t state = 12345;
	for (size_t i = 0; i < largest / sizeof(float); i++) {
		state = state * 1664525u + 1013904223u;
		in[i] = ((float)(state >> 8) / 16777216.0f - 0.5f) * 8.0f;
	}
	memset(out, 0, largest);

	printf("f32 -> bf16 / f16 casts, GB/s (bytes read + written), "
	       "best of %d; SIMD tier: %s\n",
	       REPETITIONS, amp_isa_name(amp_isa_best()));
	printf("%10s", "f32 input");
	for (int m = 0; m < METHOD_COUNT; m++)
		printf(" %9s", method_names[m]);
	printf("\n");
	for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
		size_t n = sizes[s] / sizeof(float);
		char label[32];
		if (sizes[s] >= (1u << 20))
			snprintf(label, sizeof label, "%zu MiB", sizes[s] >> 20);
		else
			snprintf(label, sizeof label, "%zu KiB", sizes[s] >> 10);
		printf("%10s", label);
		for (int m = 0; m < METHOD_COUNT; m++)
			printf(" %9.1f", measure((enum method)m, out, in, n));
		printf("\n");
	}
	size_t cached = (64u << 10) / sizeof(float);
	double bf16 = fastest_call(METHOD_BF16, out, in, cached, 20000);
	double copy = fastest_call(METHOD_MEMCPY, out, in, cached, 20000);
	printf("in cache (64 KiB of f32, fastest of 20000 calls): f32 -> bf16 "
	       "%.1f GB/s, memcpy %.1f GB/s: %.2fx memcpy\n",
	       bf16, copy, bf16 / copy);
	free(in);
	free(out);
	return 0;
}
