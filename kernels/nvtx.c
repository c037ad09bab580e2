/* NVTX ranges in an "amptrace" domain, for Nsight Systems and any other
 * NVTX tool.  nvtx3 is header-only: without a tool attached
 * (NVTX_INJECTION64_PATH unset) every call is a cheap no-op. */
#include "cuda_kernels.h"

#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

static nvtxDomainHandle_t domain;
static pthread_once_t domain_once = PTHREAD_ONCE_INIT;

static void create_domain(void)
{
	domain = nvtxDomainCreateA("amptrace");
}

void amp_cuda_range_push(const char *message)
{
	nvtxEventAttributes_t attributes = {
		.version = NVTX_VERSION,
		.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE,
		.messageType = NVTX_MESSAGE_TYPE_ASCII,
		.message.ascii = message,
	};

	pthread_once(&domain_once, create_domain);
	nvtxDomainRangePushEx(domain, &attributes);
}

void amp_cuda_range_pop(void)
{
	pthread_once(&domain_once, create_domain);
	nvtxDomainRangePop(domain);
}
