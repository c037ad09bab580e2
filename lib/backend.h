/* libamp's backends, internal API (lib/backend.c, lib/backend_cuda.c).
 *
 * Device cuda is emulated on the CPU backend unless the CUDA module
 * (kernels/, libamp_cuda.so) loads AND reports a GPU.  The module is
 * looked for, in order: $AMP_CUDA_MODULE; next to libamp (dladdr); in
 * ../kernels/ from libamp (the build tree); in the install libdir.  It is
 * loaded lazily, the first time device cuda is used, and only when the
 * CUDA driver (libcuda.so.1) can be opened, so machines without a GPU
 * never load cudart/cuBLAS/CUPTI.  Environment:
 *   AMP_CUDA_MODULE=path   use this module file
 *   AMP_CUDA_DISABLE=1     stay emulated even with a GPU
 *   AMP_CUDA_VERBOSE=1     print the outcome once to stderr
 *   AMP_NVTX=0|1           NVTX ranges off / on (default: on when an NVTX
 *                          tool is attached, i.e. NVTX_INJECTION64_PATH)
 *
 * With a GPU, storages of device cuda are device memory.  An op on cuda
 * runs the module's kernel when the module implements it for the call's
 * dtypes and layouts (lib/backend_cuda.c); any other op runs its CPU kernel
 * over host copies: inputs are copied device -> host, the CPU forward runs
 * with device cpu, and outputs are copied back (outputs that alias an
 * input become device views of that input).  Factories run on the host
 * and are uploaded.  Views run directly (metadata only), except a reshape
 * of a non-contiguous tensor, which may copy. */
#ifndef AMP_BACKEND_H
#define AMP_BACKEND_H

#include "amp_cuda_module.h"
#include "amp_internal.h"

#include <stddef.h>

/* An optional module entry: inside the module's table and non-NULL (a
 * module of an older minor revision has a shorter table). */
#define AMP_CUDA_HAS(m, entry)                                            \
	(offsetof(struct amp_cuda_module, entry) < (m)->size && (m)->entry)

/* True when device cuda is a real GPU (module loaded, device found). */
bool amp_cuda_active(void);


/* The loaded module, or NULL while cuda is emulated. */
const struct amp_cuda_module *amp_cuda_backend_module(void);

/* Tests: makes `module` (already initialised) device cuda's backend, as
 * if it had been loaded; NULL returns to emulation.  Call it before any
 * cuda storage exists.  `status` is copied into the status line. */
void amp_cuda_backend_install(const struct amp_cuda_module *module,
			      const char *status);

/* True when the storage is GPU memory (host code must not touch it). */
static inline bool amp_storage_on_gpu(const struct amp_storage *storage)
{
	return storage->device == AMP_DEVICE_CUDA && amp_cuda_active();
}

/* Copies bytes between storages of any devices: memcpy unless a side is
 * GPU memory.  Returns AMP_OK or AMP_ERR_DEVICE (error recorded). */
int amp_device_copy(void *dst, enum amp_device_type dst_device,
		    const void *src, enum amp_device_type src_device,
		    size_t nbytes);

/* out = src converted to out's dtype, both on the GPU, out contiguous and
 * of src's shape (amp_tensor_convert's device path).  An autocast cast is
 * linked to its cast event for CUPTI and NVTX.  Returns AMP_OK,
 * AMP_CUDA_UNSUPPORTED (dtype pair without a kernel: nothing written), or
 * an error. */
int amp_backend_convert(struct amp_tensor *out, const struct amp_tensor *src);

/* lib/backend_cuda.c: runs a COMPUTE op with the module's kernels.
 * Returns AMP_OK, AMP_CUDA_UNSUPPORTED (no kernel for this call; nothing
 * was changed) or an error. */
int amp_cuda_forward(const struct amp_cuda_module *module,
		     struct amp_call *call);

/* Maps a module return value: 0 -> AMP_OK, AMP_CUDA_UNSUPPORTED kept,
 * -1 -> AMP_ERR_DEVICE with the module's message. */
int amp_cuda_status(const struct amp_cuda_module *module, int result);

#endif /* AMP_BACKEND_H */
