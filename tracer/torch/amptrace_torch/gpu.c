/* The bridge's GPU kernel timing (gpu.h).
 *
 * The module is loaded, not linked: CPU-only programs never load CUDA.
 * Its init is not called: that would make device 0 current on this
 * thread, and the program may use another GPU; CUPTI's activity API needs
 * no context.  torch has loaded cudart and CUPTI already by the first op
 * on device cuda: the module binds to those same libraries (sonames). */
#include "gpu.h"

#include "amp_cuda_module.h"
#include "gpu_session.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>

static char module_path[4096];
/* Loaded once, then read from any thread (ops and the value checks). */
static _Atomic(const struct amp_cuda_module *) module;

static const struct amp_cuda_module *loaded(void)
{
	return atomic_load_explicit(&module, memory_order_acquire);
}

void gpu_set_module(const char *path)
{
	snprintf(module_path, sizeof module_path, "%s", path ? path : "");
}

static int load(char *why, size_t size)
{
	if (!module_path[0]) {
		snprintf(why, size, "amptrace was built without its CUDA module "
			 "(libamp_cuda.so): no kernel timing");
		return -1;
	}
	void *handle = dlopen(module_path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		snprintf(why, size, "cannot load %s: %s", module_path, dlerror());
		return -1;
	}
	const struct amp_cuda_module *m = dlsym(handle, AMP_CUDA_MODULE_SYMBOL);
	if (!m || m->version != AMP_CUDA_MODULE_VERSION ||
	    m->size < sizeof *m || !m->profiler_start || !m->profiler_flush ||
	    !m->profiler_stop || !m->correlation_push || !m->correlation_pop) {
		snprintf(why, size, "%s is not a CUDA module of this amptrace "
			 "(interface version %d)", module_path,
			 AMP_CUDA_MODULE_VERSION);
		return -1;
	}
	atomic_store(&module, m);
	return 0;
}

static int start(amp_gpu_activity_fn sink, char *why, size_t size)
{
	if (!loaded() && load(why, size) != 0)
		return -1;
	const struct amp_cuda_module *m = loaded();
	int result = m->profiler_start(sink, NULL);
	if (result == 0)
		snprintf(why, size, "kernel timing by CUPTI through %s",
			 module_path);
	else
		snprintf(why, size, "%s",
			 m->error ? m->error() : "CUPTI refused");
	return result;
}

static int flush(void)
{
	return loaded()->profiler_flush();
}

static int stop(struct amp_gpu_profiler_stats *stats)
{
	return loaded()->profiler_stop(stats);
}

static const struct gpu_profiler profiler = { start, flush, stop };

void gpu_cuda_op(uint64_t thread, uint64_t time_ns)
{
	gpu_session_cuda_op(&profiler, thread, time_ns);
}

bool gpu_push(uint64_t op_id)
{
	if (!gpu_session_running())
		return false;
	loaded()->correlation_push(AMP_GPU_CORRELATION_OP, op_id);
	return true;
}

bool gpu_push_own(void)
{
	return gpu_push(AMP_GPU_OWN_WORK);
}

void gpu_pop(void)
{
	loaded()->correlation_pop(AMP_GPU_CORRELATION_OP);
}

const struct amp_cuda_module *gpu_module(void)
{
	return loaded();
}

void gpu_end(void)
{
	gpu_session_end();
}

void gpu_after_fork(void)
{
	gpu_session_after_fork();
}
