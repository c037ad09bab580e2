/* Helper of tests/test_cuda_host.c: in a fresh process (the CUDA module
 * loader runs once per process), reports what device cuda is, then uses
 * it: an op on cuda must work whatever the outcome.  Output, on stdout:
 *   emulated=0|1
 *   status=<amp_cuda_backend_status()>
 *   sum=<sum of a cuda computation, 12> */
#include "amp.h"
#include "backend.h"

#include <stdio.h>

int main(void)
{
	int64_t shape[1] = { 4 };
	bool emulated = amp_cuda_is_emulated();

	printf("emulated=%d\n", emulated ? 1 : 0);
	printf("status=%s\n", amp_cuda_backend_status());
	amp_tensor *a = amp_full(1, shape, 1.5, AMP_DTYPE_F32, AMP_DEVICE_CUDA);
	amp_tensor *b = a ? amp_add(a, a) : NULL;
	amp_tensor *s = b ? amp_sum(b, AMP_DTYPE_NONE) : NULL;
	printf("sum=%g\n", s ? amp_tensor_item(s) : -1.0);
	/* asking again must not report again */
	printf("again=%d\n", amp_cuda_is_emulated() == emulated);
	amp_tensor_free(s);
	amp_tensor_free(b);
	amp_tensor_free(a);
	return 0;
}
