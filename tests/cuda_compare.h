/* Op-by-op comparison of device cuda against the CPU backend, shared by
 * tests/test_cuda.c (a real GPU) and tests/test_cuda_host.c (a fake module
 * whose "device memory" host code cannot dereference).  Each case builds
 * random inputs (never zeros) on the CPU, copies them to cuda, runs the
 * same op on both devices and compares dtype, shape and values by
 * relative error. */
#ifndef CUDA_COMPARE_H
#define CUDA_COMPARE_H

#include "amp.h"

#include <stdbool.h>
#include <stddef.h>

#define CUDA_CASE_MAX_INPUTS 3

enum cuda_values {
	CUDA_VALUES_SIGNED,   /* |x| in [0.1, 2], random sign */
	CUDA_VALUES_POSITIVE, /* x in [0.1, 2] */
	CUDA_VALUES_INDEX,    /* i64 in [0, 4) */
	CUDA_VALUES_SIGNED_F32, /* signed, always f32 (mixed-dtype operands) */
};

struct cuda_case {
	const char *name;
	int ninputs;
	int ndim[CUDA_CASE_MAX_INPUTS];
	int64_t shape[CUDA_CASE_MAX_INPUTS][4];
	/* INDEX inputs are i64, SIGNED_F32 ones f32, the others have the
	 * run's dtype */
	enum cuda_values values[CUDA_CASE_MAX_INPUTS];
	amp_tensor *(*op)(amp_tensor *const *inputs);
	bool low_precision; /* also run with f16 and bf16 inputs */
};

extern const struct cuda_case cuda_cases[];
extern const size_t cuda_case_count;

/* Runs case `index` with `dtype` (f32, f16 or bf16) on cpu and cuda and
 * compares.  Fills `message` and returns false on a mismatch. */
bool cuda_case_run(size_t index, enum amp_dtype dtype, char *message,
		   size_t size);

/* Largest |a - b| / (|b| + atol / rtol) style check of two tensors with
 * the same dtype and shape: every element within atol + rtol * |b|, NaNs
 * in the same places.  Fills `message` and returns false otherwise. */
bool cuda_tensors_close(amp_tensor *got, amp_tensor *expected, double rtol,
			double atol, char *message, size_t size);

/* Tolerances for results of `dtype`: a few units in the last place. */
double cuda_rtol(enum amp_dtype dtype);

/* Deterministic values for tests (xorshift), never zero. */
void cuda_fill(float *values, size_t n, enum cuda_values kind, uint64_t seed);

/* A cpu tensor of `dtype` filled by cuda_fill. */
amp_tensor *cuda_random(int ndim, const int64_t *shape, enum amp_dtype dtype,
			enum cuda_values kind, uint64_t seed);
/* cuda_random's tensor on device cuda (the cpu one freed). */
amp_tensor *cuda_random_on_device(int ndim, const int64_t *shape,
				  enum amp_dtype dtype, enum cuda_values kind,
				  uint64_t seed);

#endif /* CUDA_COMPARE_H */
