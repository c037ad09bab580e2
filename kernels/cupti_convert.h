/* CUPTI activity records -> struct amp_gpu_activity, and the CUPTI clock
 * -> trace clock mapping.  Pure: no CUPTI call, no global state (the
 * converter carries the correlation table between buffers), so the host
 * tests feed it records built in memory from cupti_activity.h.
 *
 * Linking: libamp pushes external correlation ids around the work it
 * launches (CUSTOM0 = op id, CUSTOM1 = cast result tensor id).  CUPTI then
 * emits CUpti_ActivityExternalCorrelation {externalKind, externalId,
 * correlationId} records; the kernel or memcpy record carries the same
 * correlationId.  External records are written when the API call is made,
 * kernel records when the kernel completes, so a batch is converted in
 * two passes (links first) and links persist across batches in a
 * direct-mapped table indexed by correlation id. */
#ifndef AMP_CUPTI_CONVERT_H
#define AMP_CUPTI_CONVERT_H

#include "amp_cuda_module.h"

#include <cupti_activity.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The kernel record version of the CUPTI this module is compiled
 * against; CUPTI emits the newest version it knows, and the fields read
 * here (kind .. name) have kept their place across versions. */
typedef CUpti_ActivityKernel10 amp_cupti_kernel_record;
typedef CUpti_ActivityMemcpy6 amp_cupti_memcpy_record;

/* Correlation ids are sequential: a slot is reused after this many API
 * calls.  A kernel's record may come a pull (the tracer's, every 200 ms)
 * after its launch, and torch makes some ten CUDA calls per op (12 MB of
 * links). */
#define AMP_CUPTI_LINK_SLOTS (1u << 19)

struct amp_cupti_link {
	uint32_t correlation_id;
	bool used;
	uint64_t op_id, cast_id;
};

struct amp_cupti_converter {
	int64_t clock_offset_ns; /* trace ns = CUPTI ns + offset */
	struct amp_cupti_link links[AMP_CUPTI_LINK_SLOTS];
	struct amp_gpu_profiler_stats stats; /* kernels, memcpys, unlinked, untimed */
};

void amp_cupti_converter_init(struct amp_cupti_converter *converter,
			      int64_t clock_offset_ns);

/* Converts `count` records (in buffer order) into at most `count`
 * activities in `out`; returns how many were written.  Records of other
 * kinds are skipped; untimed kernels (start = end = 0) and the work of
 * amptrace's own (linked to AMP_GPU_OWN_WORK) are counted and skipped.
 * Names point into CUPTI's records. */
size_t amp_cupti_convert(struct amp_cupti_converter *converter,
			 const CUpti_Activity *const *records, size_t count,
			 struct amp_gpu_activity *out);

/* Whether the runtime or driver call of this name (cuptiGetCallbackName)
 * launches a kernel or copies memory: the calls whose records link work
 * to an op.  False for NULL. */
bool amp_cupti_launches_work(const char *name);

/* One reading of both clocks: host before, CUPTI, host after. */
struct amp_clock_sample {
	uint64_t host_before, device, host_after;
};

/* host ~= device + offset, from the sample with the tightest bracket
 * (its midpoint); 0 when there are no samples. */
int64_t amp_clock_offset(const struct amp_clock_sample *samples, size_t count);

/* A CUPTI timestamp on the trace clock (0 stays 0; never negative). */
uint64_t amp_clock_map(int64_t offset, uint64_t timestamp);

#ifdef __cplusplus
}
#endif

#endif /* AMP_CUPTI_CONVERT_H */
