/* Backends: where a device's memory lives and who runs its kernels.
 * cpu and the emulated cuda device use host memory and the CPU kernels;
 * the CUDA backend module (kernels/, loaded at run time when a GPU is
 * present) takes over device cuda. */
#include "amp_internal.h"

#include <stdlib.h>

bool amp_cuda_is_emulated(void)
{
	return true;
}

void *amp_device_alloc(enum amp_device_type device, size_t nbytes)
{
	(void)device;
	/* 64-byte alignment keeps the SIMD paths on aligned loads. */
	return aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
}

void amp_device_free(enum amp_device_type device, void *ptr)
{
	(void)device;
	free(ptr);
}

int amp_backend_forward(struct amp_call *call)
{
	return amp_op_defs[call->op].forward(call);
}
