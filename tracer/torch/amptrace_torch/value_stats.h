/* The value checks' statistics of tensors reduced where their op ends and
 * read once per step (obs_events.value_stats): a GPU's through the CUDA
 * module (lib/amp_cuda_module.h, same contract), the host's (device -1,
 * the tests) computed here. */
#ifndef AMPTRACE_TORCH_VALUE_STATS_H
#define AMPTRACE_TORCH_VALUE_STATS_H

#include "amp.h"
#include "amp_value_stats.h"

#include <stdint.h>

/* 0 with *row set; AMP_CUDA_UNSUPPORTED where neither reduces it (another
 * dtype, no CUDA module loaded or one without value statistics), -1 on a
 * device error. */
int value_stats(const void *data, enum amp_dtype dtype, int64_t count,
		const struct amp_value_limits *limits, int device,
		void *stream, int64_t *row);
/* 0 with the device's first `count` rows in `rows`, its rows starting
 * over; or -1, its rows kept. */
int value_stats_read(int device, void *stream, struct amp_value_stats *rows,
		     int64_t count);

#endif /* AMPTRACE_TORCH_VALUE_STATS_H */
