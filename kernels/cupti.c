/* The CUPTI session: asynchronous activity buffers for CONCURRENT_KERNEL,
 * MEMCPY, RUNTIME, DRIVER and EXTERNAL_CORRELATION records, converted by
 * cupti_convert.c and handed to libamp's sink.
 *
 * API records: CUPTI writes an external-correlation record (the link from
 * a kernel to its op) only for a runtime or driver API call it records.
 * Of those, only the calls that launch a kernel or copy memory are kept
 * (skip_other_api_records, with CUPTI 12.5+), as Kineto skips a few:
 * torch makes several other CUDA calls per op (cudaGetDevice,
 * cuCtxGetCurrent, ...), whose records and correlation records cost more
 * than the kernels' own.  Their records are otherwise ignored.
 *
 * Clock: CUPTI is asked to take its timestamps from CLOCK_MONOTONIC (the
 * trace clock, amp_now_ns) through cuptiActivityRegisterTimestampCallback,
 * so GPU times come out on the trace clock after CUPTI's own GPU->CPU
 * interpolation.  If that registration fails, an offset between
 * cuptiGetTimestamp (CLOCK_REALTIME on Linux) and CLOCK_MONOTONIC is
 * measured once (amp_clock_offset). */
#include "cuda_kernels.h"
#include "cupti_convert.h"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BUFFER_SIZE ((size_t)8 << 20)
#define FLUSH_PERIOD_MS 500

static const CUpti_ActivityKind traced_kinds[] = {
	CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
	CUPTI_ACTIVITY_KIND_RUNTIME,
	CUPTI_ACTIVITY_KIND_DRIVER,
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
};
#define TRACED_KIND_COUNT (sizeof traced_kinds / sizeof traced_kinds[0])

/* CUPTI's selection of API records one by one (cuptiActivityEnable-
 * RuntimeApi, -DriverApi), looked up at run time: the CUPTI the module
 * runs with is the program's (torch's), which may predate them. */
typedef CUptiResult (*select_api_fn)(CUpti_CallbackId cbid, uint8_t enable);

static struct {
	pthread_mutex_t lock;
	bool active;
	bool callbacks_registered;
	bool clock_is_trace_clock;
	amp_gpu_activity_fn sink;
	void *user;
	struct amp_cupti_converter *converter;
	const CUpti_Activity **records;
	struct amp_gpu_activity *activities;
	size_t capacity;
	uint64_t dropped, buffers;
} session = { .lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI trace_clock(void)
{
	return monotonic_ns();
}

static int fail_cupti(const char *what, CUptiResult result)
{
	const char *text = NULL;

	if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || !text)
		text = "unknown CUPTI error";
	return amp_cuda_fail(what, text);
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size,
				      size_t *max_records)
{
	*buffer = aligned_alloc(8, BUFFER_SIZE);
	*size = *buffer ? BUFFER_SIZE : 0;
	*max_records = 0; /* as many as fit */
}

/* Grows the scratch arrays to hold `count` records; false on OOM. */
static bool reserve(size_t count)
{
	if (count <= session.capacity)
		return true;
	size_t capacity = session.capacity ? session.capacity : 4096;
	while (capacity < count)
		capacity *= 2;
	const CUpti_Activity **records =
		realloc(session.records, capacity * sizeof *records);
	if (records)
		session.records = records;
	struct amp_gpu_activity *activities =
		realloc(session.activities, capacity * sizeof *activities);
	if (activities)
		session.activities = activities;
	if (!records || !activities)
		return false;
	session.capacity = capacity;
	return true;
}

static void CUPTIAPI buffer_completed(CUcontext context, uint32_t stream,
				      uint8_t *buffer, size_t size,
				      size_t valid_size)
{
	CUpti_Activity *record = NULL;
	size_t count = 0, dropped = 0;

	(void)size;
	pthread_mutex_lock(&session.lock);
	if (session.active) {
		while (cuptiActivityGetNextRecord(buffer, valid_size, &record) ==
		       CUPTI_SUCCESS) {
			if (!reserve(count + 1)) {
				session.dropped++;
				continue;
			}
			session.records[count++] = record;
		}
		size_t n = amp_cupti_convert(session.converter, session.records,
					     count, session.activities);
		if (n && session.sink)
			session.sink(session.activities, n, session.user);
		if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) ==
		    CUPTI_SUCCESS)
			session.dropped += dropped;
		session.buffers++;
	}
	pthread_mutex_unlock(&session.lock);
	free(buffer);
}

static int64_t measure_clock_offset(void)
{
	struct amp_clock_sample samples[8];
	size_t count = 0;

	for (int i = 0; i < 8; i++) {
		uint64_t device = 0;
		samples[count].host_before = monotonic_ns();
		if (cuptiGetTimestamp(&device) != CUPTI_SUCCESS)
			continue;
		samples[count].device = device;
		samples[count].host_after = monotonic_ns();
		count++;
	}
	return amp_clock_offset(samples, count);
}

static bool launches_work(CUpti_CallbackDomain domain, uint32_t cbid)
{
	const char *name = NULL;

	return cuptiGetCallbackName(domain, cbid, &name) == CUPTI_SUCCESS &&
	       amp_cupti_launches_work(name);
}

/* `name` in the CUPTI library this module's CUPTI calls resolve to; NULL
 * where it has none. */
static void *cupti_symbol(const char *name)
{
	Dl_info info;

	if (!dladdr((void *)cuptiActivityEnable, &info) || !info.dli_fname)
		return NULL;
	void *cupti = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
	if (!cupti)
		return NULL;
	void *symbol = dlsym(cupti, name);
	dlclose(cupti); /* the module's own reference keeps it loaded */
	return symbol;
}

/* Stops recording the calls of `domain` (ids below `ids`) that launch no
 * work, through CUPTI's `selector`, when it has one. */
static void skip_calls(const char *selector, CUpti_CallbackDomain domain,
		       uint32_t ids)
{
	select_api_fn select = (select_api_fn)cupti_symbol(selector);

	for (uint32_t cbid = 1; select && cbid < ids; cbid++)
		if (!launches_work(domain, cbid))
			select(cbid, 0);
}

/* Stops recording the runtime and driver calls that launch no work, once
 * their kinds are enabled (CUPTI_ACTIVITY_KIND_RUNTIME and _DRIVER record
 * every call; enabling them again records all again).  Where this CUPTI
 * cannot select calls one by one, every call stays recorded. */
static void skip_other_api_records(void)
{
	skip_calls("cuptiActivityEnableRuntimeApi", CUPTI_CB_DOMAIN_RUNTIME_API,
		   CUPTI_RUNTIME_TRACE_CBID_SIZE);
	skip_calls("cuptiActivityEnableDriverApi", CUPTI_CB_DOMAIN_DRIVER_API,
		   CUPTI_DRIVER_TRACE_CBID_SIZE);
}

static void disable_kinds(size_t count)
{
	for (size_t i = 0; i < count; i++)
		cuptiActivityDisable(traced_kinds[i]);
}

/* Enables the traced kinds, all of them or none. */
static CUptiResult enable_kinds(void)
{
	for (size_t i = 0; i < TRACED_KIND_COUNT; i++) {
		CUptiResult result = cuptiActivityEnable(traced_kinds[i]);
		if (result != CUPTI_SUCCESS) {
			disable_kinds(i);
			return result;
		}
	}
	skip_other_api_records();
	return CUPTI_SUCCESS;
}

int amp_cuda_profiler_start(amp_gpu_activity_fn sink, void *user)
{
	CUptiResult result;
	int64_t offset = 0;

	pthread_mutex_lock(&session.lock);
	bool busy = session.active;
	pthread_mutex_unlock(&session.lock);
	if (busy)
		return amp_cuda_fail("CUPTI", "a profiling session is already active");
	if (!session.callbacks_registered) {
		/* before any kind is enabled, as CUPTI requires */
		session.clock_is_trace_clock =
			cuptiActivityRegisterTimestampCallback(trace_clock) ==
			CUPTI_SUCCESS;
		result = cuptiActivityRegisterCallbacks(buffer_requested,
							buffer_completed);
		if (result != CUPTI_SUCCESS)
			return fail_cupti("cuptiActivityRegisterCallbacks", result);
		session.callbacks_registered = true;
	}
	if (!session.clock_is_trace_clock)
		offset = measure_clock_offset();
	struct amp_cupti_converter *converter = malloc(sizeof *converter);
	if (!converter)
		return amp_cuda_fail("CUPTI", "out of memory");
	amp_cupti_converter_init(converter, offset);

	pthread_mutex_lock(&session.lock);
	session.converter = converter;
	session.sink = sink;
	session.user = user;
	session.dropped = 0;
	session.buffers = 0;
	session.active = true;
	pthread_mutex_unlock(&session.lock);

	result = enable_kinds();
	if (result != CUPTI_SUCCESS) {
		pthread_mutex_lock(&session.lock);
		session.active = false;
		session.converter = NULL;
		pthread_mutex_unlock(&session.lock);
		free(converter);
		return fail_cupti("cuptiActivityEnable", result);
	}
	cuptiActivityFlushPeriod(FLUSH_PERIOD_MS);
	return 0;
}

int amp_cuda_profiler_flush(void)
{
	CUptiResult result = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);

	return result == CUPTI_SUCCESS ? 0 : fail_cupti("cuptiActivityFlushAll", result);
}

int amp_cuda_profiler_stop(struct amp_gpu_profiler_stats *stats)
{
	int status = 0;

	pthread_mutex_lock(&session.lock);
	bool active = session.active;
	pthread_mutex_unlock(&session.lock);
	if (!active)
		return amp_cuda_fail("CUPTI", "no profiling session is active");
	/* kernels still running complete into the last buffers */
	cudaDeviceSynchronize();
	disable_kinds(TRACED_KIND_COUNT);
	cuptiActivityFlushPeriod(0);
	/* the completion callback takes the lock: do not hold it here */
	status = amp_cuda_profiler_flush();

	pthread_mutex_lock(&session.lock);
	struct amp_cupti_converter *converter = session.converter;
	if (stats) {
		*stats = converter->stats;
		stats->dropped = session.dropped;
		stats->buffers = session.buffers;
	}
	session.active = false;
	session.converter = NULL;
	session.sink = NULL;
	pthread_mutex_unlock(&session.lock);
	free(converter);
	return status;
}

void amp_cuda_correlation_push(enum amp_gpu_correlation kind, uint64_t id)
{
	cuptiActivityPushExternalCorrelationId(
		kind == AMP_GPU_CORRELATION_OP
			? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0
			: CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1,
		id);
}

void amp_cuda_correlation_pop(enum amp_gpu_correlation kind)
{
	uint64_t last = 0;

	cuptiActivityPopExternalCorrelationId(
		kind == AMP_GPU_CORRELATION_OP
			? CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0
			: CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1,
		&last);
}
