/* How a row-major product (struct amp_cuda_gemm, llm.c's convention) maps
 * onto column-major cuBLAS: row-major C = A @ B is column-major
 * C^T = B^T @ A^T, so cuBLAS gets B first, A second and m/n swapped, each
 * operand keeping its own leading dimension and transposition.  Pure, so
 * the host tests check it against a reference column-major GEMM. */
#ifndef AMP_GEMM_MAP_H
#define AMP_GEMM_MAP_H

#include "amp_cuda_module.h"

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

/* The arguments of cublasGemmEx / cublasGemmStridedBatchedEx, in order. */
struct amp_cublas_gemm {
	bool trans_first, trans_second; /* CUBLAS_OP_T when true */
	int m, n, k;
	const void *first;
	int ld_first;
	int64_t stride_first;
	const void *second;
	int ld_second;
	int64_t stride_second;
	void *c;
	int ldc;
	int64_t stride_c;
	int batch;
};

/* false when a size or leading dimension does not fit cuBLAS's int. */
static inline bool amp_gemm_to_cublas(const struct amp_cuda_gemm *g,
				      struct amp_cublas_gemm *out)
{
	const int64_t ints[] = { g->m, g->n, g->k, g->lda, g->ldb, g->ldc,
				 g->batch };

	for (unsigned i = 0; i < sizeof ints / sizeof ints[0]; i++)
		if (ints[i] < 0 || ints[i] > INT_MAX)
			return false;
	*out = (struct amp_cublas_gemm){
		.trans_first = g->trans_b,
		.trans_second = g->trans_a,
		.m = (int)g->n,
		.n = (int)g->m,
		.k = (int)g->k,
		.first = g->b,
		.ld_first = (int)g->ldb,
		.stride_first = g->stride_b,
		.second = g->a,
		.ld_second = (int)g->lda,
		.stride_second = g->stride_a,
		.c = g->c,
		.ldc = (int)g->ldc,
		.stride_c = g->stride_c,
		.batch = (int)g->batch,
	};
	return true;
}

#endif /* AMP_GEMM_MAP_H */
