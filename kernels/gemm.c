/* GEMM through cuBLAS: cublasGemmEx / cublasGemmStridedBatchedEx with
 * CUBLAS_COMPUTE_32F for f32, f16 and bf16 (f32 accumulation, one rounding
 * into C, no TF32), the semantics of the CPU backend's cpu_gemm.  One
 * cuBLAS handle per thread: handles must not be shared by threads running
 * concurrently. */
#include "cuda_kernels.h"
#include "gemm_map.h"

#include <cublas_v2.h>
#include <pthread.h>
#include <stdio.h>

static pthread_key_t handle_key;
static pthread_once_t handle_once = PTHREAD_ONCE_INIT;

static void destroy_handle(void *handle)
{
	cublasDestroy((cublasHandle_t)handle);
}

static void create_key(void)
{
	pthread_key_create(&handle_key, destroy_handle);
}

static int fail_cublas(const char *what, cublasStatus_t status)
{
	return amp_cuda_fail(what, cublasGetStatusString(status));
}

static cublasHandle_t thread_handle(void)
{
	cublasHandle_t handle;
	cublasStatus_t status;

	pthread_once(&handle_once, create_key);
	handle = pthread_getspecific(handle_key);
	if (handle)
		return handle;
	status = cublasCreate(&handle);
	if (status != CUBLAS_STATUS_SUCCESS) {
		fail_cublas("cublasCreate", status);
		return NULL;
	}
	/* Split-K partial sums stay in f32 instead of being rounded to the
	 * output type: one rounding, as on the CPU. */
	cublasSetMathMode(handle,
			  CUBLAS_DEFAULT_MATH |
				  CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
	pthread_setspecific(handle_key, handle);
	return handle;
}

int amp_cuda_gemm(const struct amp_cuda_gemm *g)
{
	struct amp_cublas_gemm c;
	cudaDataType type;
	cublasStatus_t status;

	switch (g->dtype) {
	case AMP_DTYPE_F32:
		type = CUDA_R_32F;
		break;
	case AMP_DTYPE_F16:
		type = CUDA_R_16F;
		break;
	case AMP_DTYPE_BF16:
		type = CUDA_R_16BF;
		break;
	default:
		return AMP_CUDA_UNSUPPORTED;
	}
	if (!amp_gemm_to_cublas(g, &c) || c.m == 0 || c.n == 0 || c.k == 0 ||
	    c.batch == 0)
		return AMP_CUDA_UNSUPPORTED; /* the CPU handles the edge cases */
	cublasHandle_t handle = thread_handle();
	if (!handle)
		return -1;
	cublasOperation_t op_first = c.trans_first ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t op_second = c.trans_second ? CUBLAS_OP_T : CUBLAS_OP_N;
	if (c.batch == 1)
		status = cublasGemmEx(handle, op_first, op_second, c.m, c.n, c.k,
				      &g->alpha, c.first, type, c.ld_first,
				      c.second, type, c.ld_second, &g->beta, c.c,
				      type, c.ldc, CUBLAS_COMPUTE_32F,
				      CUBLAS_GEMM_DEFAULT);
	else
		status = cublasGemmStridedBatchedEx(
			handle, op_first, op_second, c.m, c.n, c.k, &g->alpha,
			c.first, type, c.ld_first, c.stride_first, c.second,
			type, c.ld_second, c.stride_second, &g->beta, c.c, type,
			c.ldc, c.stride_c, c.batch, CUBLAS_COMPUTE_32F,
			CUBLAS_GEMM_DEFAULT);
	return status == CUBLAS_STATUS_SUCCESS ? 0 : fail_cublas("cublasGemmEx", status);
}
