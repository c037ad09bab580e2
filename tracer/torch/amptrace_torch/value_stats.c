/* The value checks' statistics of a tensor the host does not read where
 * its op ends (value_stats.h).  A GPU's: the CUDA module reduces it on the
 * op's stream into a row it keeps on the device, read once per step.  The
 * host's (the tests' AMPTRACE_TEST_QUEUED_VALUES=1, device -1): the same
 * numbers (kernels/amp_value_stats.h), computed at once into rows kept
 * here, so the tests run the GPU's path on a machine without one. */
#include "value_stats.h"

#include "amp_scalar.h"
#include "gpu.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t host_lock = PTHREAD_MUTEX_INITIALIZER;
static struct amp_value_stats *host_rows;
static int64_t host_used, host_capacity;

static float element(const void *data, enum amp_dtype dtype, int64_t i)
{
	switch (dtype) {
	case AMP_DTYPE_F16:
		return amp_scalar_f16_to_f32(((const uint16_t *)data)[i]);
	case AMP_DTYPE_BF16:
		return amp_scalar_bf16_to_f32(((const uint16_t *)data)[i]);
	default:
		return ((const float *)data)[i];
	}
}

static int host_value_stats(const void *data, enum amp_dtype dtype,
			    int64_t count, const struct amp_value_limits *limits,
			    int64_t *row)
{
	struct amp_value_stats s;

	amp_value_stats_init(&s);
	for (int64_t i = 0; i < count; i++)
		amp_value_stats_add(&s, element(data, dtype, i), limits);
	pthread_mutex_lock(&host_lock);
	if (host_used == host_capacity) {
		int64_t capacity = host_capacity ? 2 * host_capacity : 256;
		struct amp_value_stats *rows =
			realloc(host_rows, (size_t)capacity * sizeof *rows);
		if (!rows) {
			pthread_mutex_unlock(&host_lock);
			return -1;
		}
		host_rows = rows;
		host_capacity = capacity;
	}
	host_rows[host_used] = s;
	*row = host_used++;
	pthread_mutex_unlock(&host_lock);
	return 0;
}

static int host_value_stats_read(struct amp_value_stats *rows, int64_t count)
{
	pthread_mutex_lock(&host_lock);
	bool enough = count >= 0 && count <= host_used;
	if (enough && count)
		memcpy(rows, host_rows, (size_t)count * sizeof *rows);
	if (enough) /* as the module's: rows start over once read */
		host_used = 0;
	pthread_mutex_unlock(&host_lock);
	return enough ? 0 : -1;
}

static const struct amp_cuda_module *with_value_stats(void)
{
	const struct amp_cuda_module *m = gpu_module();

	return m && m->value_stats && m->value_stats_read ? m : NULL;
}

static bool reducible(enum amp_dtype dtype)
{
	return dtype == AMP_DTYPE_F32 || dtype == AMP_DTYPE_F16 ||
	       dtype == AMP_DTYPE_BF16;
}

int value_stats(const void *data, enum amp_dtype dtype, int64_t count,
		const struct amp_value_limits *limits, int device,
		void *stream, int64_t *row)
{
	if (!reducible(dtype) || count < 0)
		return AMP_CUDA_UNSUPPORTED;
	if (device < 0)
		return host_value_stats(data, dtype, count, limits, row);
	const struct amp_cuda_module *m = with_value_stats();
	if (!m)
		return AMP_CUDA_UNSUPPORTED;
	return m->value_stats(data, dtype, count, limits, device, stream, row);
}

int value_stats_read(int device, void *stream, struct amp_value_stats *rows,
		     int64_t count)
{
	if (device < 0)
		return host_value_stats_read(rows, count);
	const struct amp_cuda_module *m = with_value_stats();
	if (!m)
		return -1;
	return m->value_stats_read(device, stream, rows, count);
}
