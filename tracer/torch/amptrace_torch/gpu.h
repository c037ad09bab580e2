/* The bridge's GPU kernel timing: libamp's CUDA module (libamp_cuda.so,
 * its CUPTI session) loaded at the first op on device cuda, and every op
 * recorded from then on pushed as a CUPTI external correlation id, as
 * Kineto does, so each kernel's "External id" is the op that launched it. */
#ifndef AMPTRACE_TORCH_GPU_H
#define AMPTRACE_TORCH_GPU_H

#include "amp_cuda_module.h"

#include <stdbool.h>
#include <stdint.h>

/* Where the CUDA module is (set once, before recording; "" = none). */
void gpu_set_module(const char *path);
/* An op on device cuda began: the first one starts timing. */
void gpu_cuda_op(uint64_t thread, uint64_t time_ns);
/* Pushes `op_id` while timing is on; true when it did (pop at the op's
 * end, on the same thread). */
bool gpu_push(uint64_t op_id);
void gpu_pop(void);
/* The same around amptrace's own work on the device (the value checks'
 * reductions and reads): its kernels are not the program's, and kernel
 * timing leaves them out (AMP_GPU_OWN_WORK). */
bool gpu_push_own(void);
/* The CUDA module once it is loaded (the first op on device cuda), else
 * NULL. */
const struct amp_cuda_module *gpu_module(void);
/* The last activities and the counts (at exit or detach). */
void gpu_end(void);
void gpu_after_fork(void);

#endif /* AMPTRACE_TORCH_GPU_H */
