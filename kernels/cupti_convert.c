/* CUPTI record conversion (see cupti_convert.h). */
#include "cupti_convert.h"

#include <string.h>

void amp_cupti_converter_init(struct amp_cupti_converter *converter,
			      int64_t clock_offset_ns)
{
	memset(converter, 0, sizeof *converter);
	converter->clock_offset_ns = clock_offset_ns;
}

bool amp_cupti_launches_work(const char *name)
{
	return name && (strstr(name, "Launch") || strstr(name, "Memcpy"));
}

int64_t amp_clock_offset(const struct amp_clock_sample *samples, size_t count)
{
	const struct amp_clock_sample *best = NULL;

	for (size_t i = 0; i < count; i++) {
		if (samples[i].host_after < samples[i].host_before)
			continue;
		if (!best || samples[i].host_after - samples[i].host_before <
				     best->host_after - best->host_before)
			best = &samples[i];
	}
	if (!best)
		return 0;
	uint64_t middle = best->host_before +
			  (best->host_after - best->host_before) / 2;
	return (int64_t)(middle - best->device);
}

uint64_t amp_clock_map(int64_t offset, uint64_t timestamp)
{
	if (timestamp == 0)
		return 0;
	if (offset < 0 && (uint64_t)-offset > timestamp)
		return 0;
	return timestamp + (uint64_t)offset;
}

static struct amp_cupti_link *link_slot(struct amp_cupti_converter *converter,
					uint32_t correlation_id)
{
	return &converter->links[correlation_id % AMP_CUPTI_LINK_SLOTS];
}

static void add_link(struct amp_cupti_converter *converter,
		     const CUpti_ActivityExternalCorrelation *record)
{
	struct amp_cupti_link *link = link_slot(converter, record->correlationId);

	if (!link->used || link->correlation_id != record->correlationId)
		*link = (struct amp_cupti_link){
			.correlation_id = record->correlationId, .used = true };
	if (record->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
		link->op_id = record->externalId;
	else if (record->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1)
		link->cast_id = record->externalId;
}

static const struct amp_cupti_link *
find_link(struct amp_cupti_converter *converter, uint32_t correlation_id)
{
	const struct amp_cupti_link *link = link_slot(converter, correlation_id);

	if (correlation_id && link->used &&
	    link->correlation_id == correlation_id)
		return link;
	return NULL;
}

/* Work amptrace itself launched (AMP_GPU_OWN_WORK): counted, not kept. */
static bool own_work(struct amp_cupti_converter *converter,
		     const struct amp_cupti_link *link)
{
	if (!link || link->op_id != AMP_GPU_OWN_WORK)
		return false;
	converter->stats.own++;
	return true;
}

static void apply_link(struct amp_cupti_converter *converter,
		       struct amp_gpu_activity *activity,
		       const struct amp_cupti_link *link)
{
	if (link) {
		activity->op_id = link->op_id;
		activity->cast_id = link->cast_id;
	}
	if (!activity->op_id && !activity->cast_id)
		converter->stats.unlinked++;
}

static const char *memcpy_name(uint8_t copy_kind)
{
	switch (copy_kind) {
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
		return "Memcpy HtoD";
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
		return "Memcpy DtoH";
	case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
		return "Memcpy DtoD";
	case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
		return "Memcpy HtoH";
	case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
		return "Memcpy PtoP";
	default:
		return "Memcpy";
	}
}

static bool convert_kernel(struct amp_cupti_converter *converter,
			   const amp_cupti_kernel_record *k,
			   struct amp_gpu_activity *out)
{
	const struct amp_cupti_link *link =
		find_link(converter, k->correlationId);

	if (own_work(converter, link))
		return false;
	if (k->start == 0 && k->end == 0) {
		converter->stats.untimed++;
		return false;
	}
	*out = (struct amp_gpu_activity){
		.kind = AMP_GPU_ACTIVITY_KERNEL,
		.name = k->name ? k->name : "(unnamed kernel)",
		.start_ns = amp_clock_map(converter->clock_offset_ns, k->start),
		.end_ns = amp_clock_map(converter->clock_offset_ns, k->end),
		.device = k->deviceId,
		.stream = k->streamId,
		.correlation_id = k->correlationId,
		.grid = { k->gridX, k->gridY, k->gridZ },
		.block = { k->blockX, k->blockY, k->blockZ },
		.registers = k->registersPerThread,
		.shared_memory = k->staticSharedMemory + k->dynamicSharedMemory,
	};
	converter->stats.kernels++;
	apply_link(converter, out, link);
	return true;
}

static bool convert_memcpy(struct amp_cupti_converter *converter,
			   const amp_cupti_memcpy_record *m,
			   struct amp_gpu_activity *out)
{
	/* the runtime call (cudaMemcpy) carries our push; the driver call
	 * under it has its own id */
	const struct amp_cupti_link *link =
		find_link(converter, m->runtimeCorrelationId);

	if (!link)
		link = find_link(converter, m->correlationId);
	if (own_work(converter, link))
		return false;
	if (m->start == 0 && m->end == 0) {
		converter->stats.untimed++;
		return false;
	}
	*out = (struct amp_gpu_activity){
		.kind = AMP_GPU_ACTIVITY_MEMCPY,
		.name = memcpy_name(m->copyKind),
		.start_ns = amp_clock_map(converter->clock_offset_ns, m->start),
		.end_ns = amp_clock_map(converter->clock_offset_ns, m->end),
		.device = m->deviceId,
		.stream = m->streamId,
		.correlation_id = m->runtimeCorrelationId ? m->runtimeCorrelationId
							  : m->correlationId,
		.bytes = m->bytes,
		.copy_kind = m->copyKind,
	};
	converter->stats.memcpys++;
	apply_link(converter, out, link);
	return true;
}

size_t amp_cupti_convert(struct amp_cupti_converter *converter,
			 const CUpti_Activity *const *records, size_t count,
			 struct amp_gpu_activity *out)
{
	size_t written = 0;

	for (size_t i = 0; i < count; i++)
		if (records[i]->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)
			add_link(converter,
				 (const CUpti_ActivityExternalCorrelation *)
					 records[i]);
	for (size_t i = 0; i < count; i++) {
		switch (records[i]->kind) {
		case CUPTI_ACTIVITY_KIND_KERNEL:
		case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
			written += convert_kernel(
				converter,
				(const amp_cupti_kernel_record *)records[i],
				&out[written]);
			break;
		case CUPTI_ACTIVITY_KIND_MEMCPY:
			written += convert_memcpy(
				converter,
				(const amp_cupti_memcpy_record *)records[i],
				&out[written]);
			break;
		default:
			break;
		}
	}
	return written;
}
