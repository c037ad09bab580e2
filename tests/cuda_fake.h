/* A fake CUDA backend module for tests on machines without a GPU
 * (tests/cuda_fake.c).  It implements the module interface
 * (lib/amp_cuda_module.h) on the host, with the semantics each entry
 * documents, so libamp's loader-independent parts run for real: the op
 * glue, the host-copy fallback, device copies, the CUPTI/NVTX linking.
 *
 * Its "device pointers" are host pointers with bit 62 set: non-canonical
 * addresses on x86-64 and aarch64, so host code that dereferences device
 * memory crashes the test instead of passing by luck. */
#ifndef CUDA_FAKE_H
#define CUDA_FAKE_H

#include "amp_cuda_module.h"

enum cuda_fake_kind {
	CUDA_FAKE_FULL, /* every entry: kernels run (on the host) */
	CUDA_FAKE_BARE, /* required entries only: every op falls back */
	CUDA_FAKE_KIND_COUNT
};

const struct amp_cuda_module *cuda_fake_module(enum cuda_fake_kind kind);

/* Kernel entries called since the last reset (convert, unary, ...). */
struct cuda_fake_counts {
	int kernels;
	int convert, gemm, unscale, update_scale;
	int copies;
	int activities; /* handed to kernel timing (own work left out) */
};
extern struct cuda_fake_counts cuda_fake_counts;
void cuda_fake_reset(void);

/* Makes the next kernel entry fail with "fake failure". */
extern bool cuda_fake_fail;

/* Profiling calls, in order: "push op 12", "pop op", "push cast 40",
 * "range ..." (ranges only when enabled). */
#define CUDA_FAKE_LOG_MAX 256
extern char cuda_fake_log[CUDA_FAKE_LOG_MAX][64];
extern int cuda_fake_log_count;

/* Kernel timing (profiler_start/flush/stop): while started, each kernel
 * entry and copy is one activity linked, as CUPTI links it, to the
 * innermost op pushed (op_id) and the innermost cast (cast_id); flush
 * hands them to the sink on the calling thread.  At most this many are held between flushes (the
 * rest count as dropped). */
#define CUDA_FAKE_ACTIVITY_MAX 4096

#endif /* CUDA_FAKE_H */
