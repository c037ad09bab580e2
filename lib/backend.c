/* Backends: where a device's memory lives and who runs its kernels.
 * cpu and the emulated cuda device use host memory and the CPU kernels;
 * the CUDA backend module (kernels/, dlopen()ed when a GPU is present)
 * takes over device cuda.  The loader, the routing of cuda calls, the
 * host-copy fallback and the CUPTI/NVTX annotations live here; the op ->
 * kernel glue is lib/backend_cuda.c.  See lib/backend.h for the rules. */
#include "backend.h"

#include "amp_cuda_config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	pthread_mutex_t lock;
	atomic_int tried;                     /* the loader ran (or install) */
	const struct amp_cuda_module *module; /* non-NULL: cuda is a GPU */
	bool nvtx;
	char status[768];
} backend = { .lock = PTHREAD_MUTEX_INITIALIZER };

static atomic_bool profiling;
/* The op whose forward runs on this thread (innermost), to tell an
 * autocast cast (made before its op's forward) from a kernel's own work. */
static _Thread_local uint64_t forward_op;
/* Autocast regions this thread has open as NVTX ranges. */
static _Thread_local int nvtx_scopes;

/* snprintf for messages that may be cut short (paths in reasons). */
__attribute__((format(printf, 3, 4))) static void set_text(char *dst,
							   size_t size,
							   const char *format,
							   ...)
{
	va_list args;

	va_start(args, format);
	vsnprintf(dst, size, format, args);
	va_end(args);
}

static bool env_flag(const char *name)
{
	const char *value = getenv(name);

	return value && *value && strcmp(value, "0") != 0;
}

/* ------------------------------------------------------------- loader */

static bool driver_present(char *reason, size_t size)
{
	/* cudart would dlopen the same library; failing here keeps machines
	 * without a GPU from loading cudart, cuBLAS and CUPTI at all.  The
	 * handle stays open: cudart uses the library anyway. */
	if (dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL))
		return true;
	const char *error = dlerror();
	set_text(reason, size, "no CUDA driver (%s)",
		 error ? error : "libcuda.so.1 not found");
	return false;
}

static bool find_module(char *path, size_t size, char *reason,
			size_t reason_size)
{
	const char *env = getenv("AMP_CUDA_MODULE");
	char candidates[3][512];
	int count = 0;
	Dl_info self;

	if (env && *env) {
		set_text(path, size, "%s", env);
		return true;
	}
	if (dladdr((void *)amp_backend_forward, &self) && self.dli_fname) {
		const char *slash = strrchr(self.dli_fname, '/');
		int dir = slash ? (int)(slash - self.dli_fname) : 1;
		const char *base = slash ? self.dli_fname : ".";
		set_text(candidates[count++], sizeof candidates[0], "%.*s/%s", dir,
			 base, AMP_CUDA_MODULE_NAME);
		set_text(candidates[count++], sizeof candidates[0],
			 "%.*s/../kernels/%s", dir, base, AMP_CUDA_MODULE_NAME);
	}
	set_text(candidates[count++], sizeof candidates[0], "%s/%s",
		 AMP_CUDA_MODULE_INSTALL_DIR, AMP_CUDA_MODULE_NAME);
	for (int i = 0; i < count; i++) {
		if (access(candidates[i], R_OK) == 0) {
			set_text(path, size, "%s", candidates[i]);
			return true;
		}
	}
	set_text(reason, reason_size, "%s not found (looked in %s%s%s%s%s)",
		 AMP_CUDA_MODULE_NAME, candidates[0], count > 1 ? ", " : "",
		 count > 1 ? candidates[1] : "", count > 2 ? ", " : "",
		 count > 2 ? candidates[2] : "");
	return false;
}

/* Returns the initialised module, or NULL with `reason` filled. */
static const struct amp_cuda_module *open_module(char *path, size_t path_size,
						 struct amp_cuda_device_info *info,
						 char *reason, size_t size)
{
	const struct amp_cuda_module *m;
	char message[512] = "";
	void *handle;

	if (env_flag("AMP_CUDA_DISABLE")) {
		set_text(reason, size, "disabled by AMP_CUDA_DISABLE");
		return NULL;
	}
	if (!AMP_CUDA_MODULE_BUILT && !getenv("AMP_CUDA_MODULE")) {
		set_text(reason, size,
			 "libamp was built without the CUDA module (-Dcuda=disabled, "
			 "or nvcc, cuBLAS or CUPTI not found)");
		return NULL;
	}
	if (!driver_present(reason, size) ||
	    !find_module(path, path_size, reason, size))
		return NULL;
	/* RTLD_LOCAL: the module's CUDA symbols stay out of the program's
	 * namespace.  It is never dlclose()d: cudart registers exit handlers. */
	handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		set_text(reason, size, "cannot load the CUDA module: %s", dlerror());
		return NULL;
	}
	m = dlsym(handle, AMP_CUDA_MODULE_SYMBOL);
	if (!m) {
		set_text(reason, size, "%s has no symbol %s", path,
			 AMP_CUDA_MODULE_SYMBOL);
		return NULL;
	}
	if (m->version != AMP_CUDA_MODULE_VERSION) {
		set_text(reason, size,
			 "%s has interface version %" PRIu32 ", this libamp needs %d",
			 path, m->version, AMP_CUDA_MODULE_VERSION);
		return NULL;
	}
	if (m->size < offsetof(struct amp_cuda_module, convert) || !m->init ||
	    !m->alloc || !m->free || !m->copy || !m->synchronize || !m->error) {
		set_text(reason, size, "%s: incomplete module table", path);
		return NULL;
	}
	if (m->init(info, message, sizeof message) != 0) {
		set_text(reason, size, "%s", message[0] ? message : "no usable GPU");
		return NULL;
	}
	return m;
}

static void nvtx_scope_hook(const struct amp_event *event, void *user);

static void load(void)
{
	struct amp_cuda_device_info info;
	char path[512] = "", reason[640] = "";
	const struct amp_cuda_module *m =
		open_module(path, sizeof path, &info, reason, sizeof reason);

	if (m) {
		set_text(backend.status, sizeof backend.status,
			 "cuda: %s (sm_%d%d, %d SMs, %.1f GiB, driver %d, runtime %d) "
			 "via %s [%s]",
			 info.name, info.major, info.minor, info.multiprocessors,
			 (double)info.total_memory / (1024.0 * 1024 * 1024),
			 info.driver_version, info.runtime_version, path,
			 m->build ? m->build : "");
		const char *nvtx = getenv("AMP_NVTX");
		backend.nvtx = AMP_CUDA_HAS(m, range_push) && AMP_CUDA_HAS(m, range_pop) &&
			       (nvtx && *nvtx ? strcmp(nvtx, "0") != 0
					      : getenv("NVTX_INJECTION64_PATH") != NULL);
		if (backend.nvtx)
			amp_hook_add(AMP_EVENT_MASK(AMP_EVENT_SCOPE_ENTER) |
					     AMP_EVENT_MASK(AMP_EVENT_SCOPE_EXIT),
				     nvtx_scope_hook, NULL);
		backend.module = m;
	} else {
		set_text(backend.status, sizeof backend.status,
			 "emulated on the CPU: %s", reason);
	}
	if (env_flag("AMP_CUDA_VERBOSE"))
		fprintf(stderr, "amptrace: device %s\n", backend.status);
}

static void ensure_loaded(void)
{
	if (atomic_load_explicit(&backend.tried, memory_order_acquire))
		return;
	pthread_mutex_lock(&backend.lock);
	if (!atomic_load_explicit(&backend.tried, memory_order_relaxed)) {
		load();
		atomic_store_explicit(&backend.tried, 1, memory_order_release);
	}
	pthread_mutex_unlock(&backend.lock);
}

const struct amp_cuda_module *amp_cuda_backend_module(void)
{
	ensure_loaded();
	return backend.module;
}

bool amp_cuda_active(void)
{
	return amp_cuda_backend_module() != NULL;
}

bool amp_cuda_is_emulated(void)
{
	return !amp_cuda_active();
}

const char *amp_cuda_backend_status(void)
{
	ensure_loaded();
	return backend.status;
}

void amp_cuda_backend_install(const struct amp_cuda_module *module,
			      const char *status)
{
	pthread_mutex_lock(&backend.lock);
	backend.module = module;
	backend.nvtx = false;
	set_text(backend.status, sizeof backend.status, "%s%s",
		 module ? "cuda: " : "emulated on the CPU: ",
		 status ? status : "");
	atomic_store_explicit(&backend.tried, 1, memory_order_release);
	pthread_mutex_unlock(&backend.lock);
}

/* ------------------------------------------------------------- memory */

void *amp_device_alloc(enum amp_device_type device, size_t nbytes)
{
	if (device == AMP_DEVICE_CUDA) {
		const struct amp_cuda_module *m = amp_cuda_backend_module();
		if (m) {
			void *ptr = m->alloc(nbytes);
			if (!ptr)
				amp_error(AMP_ERR_NOMEM, "CUDA: %s", m->error());
			return ptr;
		}
	}
	/* 64-byte alignment keeps the SIMD paths on aligned loads. */
	return aligned_alloc(64, (nbytes + 63) & ~(size_t)63);
}

void amp_device_free(enum amp_device_type device, void *ptr)
{
	if (device == AMP_DEVICE_CUDA) {
		const struct amp_cuda_module *m = amp_cuda_backend_module();
		if (m) {
			m->free(ptr);
			return;
		}
	}
	free(ptr);
}

int amp_cuda_status(const struct amp_cuda_module *m, int result)
{
	if (result == 0)
		return AMP_OK;
	if (result == AMP_CUDA_UNSUPPORTED)
		return AMP_CUDA_UNSUPPORTED;
	return amp_error(AMP_ERR_DEVICE, "CUDA: %s", m->error());
}

int amp_device_copy(void *dst, enum amp_device_type dst_device,
		    const void *src, enum amp_device_type src_device,
		    size_t nbytes)
{
	const struct amp_cuda_module *m = amp_cuda_backend_module();
	bool dst_gpu = m && dst_device == AMP_DEVICE_CUDA;
	bool src_gpu = m && src_device == AMP_DEVICE_CUDA;

	if (nbytes == 0)
		return AMP_OK;
	if (!dst_gpu && !src_gpu) {
		memcpy(dst, src, nbytes);
		return AMP_OK;
	}
	enum amp_cuda_copy_kind kind =
		!src_gpu ? AMP_CUDA_COPY_HOST_TO_DEVICE
			 : !dst_gpu ? AMP_CUDA_COPY_DEVICE_TO_HOST
				    : AMP_CUDA_COPY_DEVICE_TO_DEVICE;
	return amp_cuda_status(m, m->copy(dst, src, nbytes, kind));
}

/* -------------------------------------------------------- annotations */

/* What was pushed around one piece of GPU work, to pop it again. */
struct annotation {
	bool correlation;
	bool range;
	enum amp_gpu_correlation kind;
};

static struct annotation annotate_begin(const struct amp_cuda_module *m,
					enum amp_gpu_correlation kind,
					uint64_t id, const char *message)
{
	struct annotation a = { .kind = kind };

	if (atomic_load_explicit(&profiling, memory_order_relaxed) &&
	    AMP_CUDA_HAS(m, correlation_push) && AMP_CUDA_HAS(m, correlation_pop)) {
		m->correlation_push(kind, id);
		a.correlation = true;
	}
	if (backend.nvtx && message) {
		m->range_push(message);
		a.range = true;
	}
	return a;
}

static void annotate_end(const struct amp_cuda_module *m, struct annotation a)
{
	if (a.range)
		m->range_pop();
	if (a.correlation)
		m->correlation_pop(a.kind);
}

static void nvtx_scope_hook(const struct amp_event *event, void *user)
{
	const struct amp_cuda_module *m = backend.module;
	char message[160];

	(void)user;
	if (!m)
		return;
	if (event->kind == AMP_EVENT_SCOPE_ENTER) {
		snprintf(message, sizeof message, "autocast(%s, %s%s)%s%s",
			 amp_device_type_name(event->scope.device),
			 amp_dtype_name(event->scope.dtype),
			 event->scope.enabled ? "" : ", disabled",
			 event->scope.scope ? " " : "",
			 event->scope.scope ? event->scope.scope : "");
		m->range_push(message);
		nvtx_scopes++;
	} else if (nvtx_scopes > 0) {
		/* a region opened before the module loaded has no range */
		m->range_pop();
		nvtx_scopes--;
	}
}

/* ------------------------------------------------- host-copy fallback */

/* Host copies of the device storages a call reads, shared by arguments
 * that alias the same storage. */
struct mirrors {
	int count;
	struct amp_tensor *device[AMP_PLAN_MAX_ARGS]; /* a tensor on storage i */
	struct amp_tensor *host_base[AMP_PLAN_MAX_ARGS]; /* 1-D copy of it */
};

/* Gives `view` (a view of some base) the view-ness of `like`: outputs and
 * mirrors of tensors that are not views (detach's alias, a whole storage)
 * must not report is_view. */
static void match_view_ness(struct amp_tensor *view, const struct amp_tensor *like)
{
	if (!like->base) {
		amp_tensor_free(view->base);
		view->base = NULL;
	}
}

/* A 1-D tensor on `device` holding a copy of t's whole storage. */
static struct amp_tensor *copy_storage(const struct amp_tensor *t,
				       enum amp_device_type device)
{
	size_t size = amp_dtype_size(t->dtype);
	int64_t elements = (int64_t)(t->storage->nbytes / size);
	struct amp_tensor *copy = amp_tensor_alloc(1, &elements, t->dtype, device);

	if (copy && amp_device_copy(copy->storage->data, device,
				    t->storage->data, t->storage->device,
				    (size_t)elements * size) != AMP_OK) {
		amp_tensor_free(copy);
		return NULL;
	}
	return copy;
}

static struct amp_tensor *mirror(struct mirrors *ms, struct amp_tensor *t)
{
	int i = 0;

	while (i < ms->count && ms->device[i]->storage != t->storage)
		i++;
	if (i == ms->count) {
		ms->host_base[i] = copy_storage(t, AMP_DEVICE_CPU);
		if (!ms->host_base[i])
			return NULL;
		ms->device[i] = t;
		ms->count++;
	}
	struct amp_tensor *m = amp_tensor_view(ms->host_base[i], t->ndim, t->shape,
					       t->strides, t->offset);
	if (!m)
		return NULL;
	match_view_ness(m, t);
	m->requires_grad = t->requires_grad;
	m->is_leaf = t->is_leaf;
	return m;
}

/* A GPU tensor with host's shape, strides and values. */
static struct amp_tensor *upload(const struct amp_tensor *host)
{
	size_t size = amp_dtype_size(host->dtype);
	int64_t numel = amp_tensor_numel(host);
	struct amp_tensor *out;

	if (host->offset == 0 && !host->base && amp_tensor_is_contiguous(host) &&
	    host->storage->nbytes == (size_t)numel * size) {
		out = amp_tensor_alloc(host->ndim, host->shape, host->dtype,
				       AMP_DEVICE_CUDA);
		if (!out)
			return NULL;
		memcpy(out->strides, host->strides, sizeof out->strides);
		if (amp_device_copy(amp_tensor_data(out), AMP_DEVICE_CUDA,
				    amp_tensor_data(host), AMP_DEVICE_CPU,
				    (size_t)numel * size) != AMP_OK) {
			amp_tensor_free(out);
			return NULL;
		}
		return out;
	}
	struct amp_tensor *base = copy_storage(host, AMP_DEVICE_CUDA);
	if (!base)
		return NULL;
	out = amp_tensor_view(base, host->ndim, host->shape, host->strides,
			      host->offset);
	amp_tensor_free(base);
	if (out)
		match_view_ness(out, host);
	return out;
}

/* In-place writes land in the host copies: sends back every copy the
 * CPU kernel wrote (its version moved), or all of them for in-place ops,
 * and carries the version bumps over to the device storages. */
static int write_back(const struct mirrors *ms, bool inplace)
{
	for (int i = 0; i < ms->count; i++) {
		struct amp_storage *host = ms->host_base[i]->storage;
		struct amp_storage *device = ms->device[i]->storage;
		uint_fast64_t writes = atomic_load(&host->version);
		if (!writes && !inplace)
			continue;
		int status = amp_device_copy(device->data, device->device,
					     host->data, AMP_DEVICE_CPU,
					     host->nbytes);
		if (status != AMP_OK)
			return status;
		atomic_fetch_add(&device->version, writes);
	}
	return AMP_OK;
}

/* The tensor argument slots of a call (list items inline). */
static int tensor_slots(struct amp_call *call, struct amp_tensor ***slots)
{
	int n = 0;

	for (int a = 0; a < call->nargs; a++) {
		struct amp_arg *arg = &call->args[a];
		if ((arg->kind == AMP_ARG_TENSOR || arg->kind == AMP_ARG_OPT_TENSOR) &&
		    arg->tensor)
			slots[n++] = &arg->tensor;
		else if (arg->kind == AMP_ARG_TENSOR_LIST)
			for (int i = 0; i < arg->list.count; i++)
				slots[n++] = &arg->list.items[i];
	}
	return n;
}

/* The device tensor for a host output of the CPU kernel. */
static struct amp_tensor *device_output(const struct mirrors *ms,
					struct amp_tensor *const *hosts,
					struct amp_tensor *const *devices, int n,
					const struct amp_tensor *host)
{
	for (int i = 0; i < n; i++)
		if (host == hosts[i])
			return amp_tensor_ref(devices[i]); /* returned self */
	for (int i = 0; i < ms->count; i++) {
		if (host->storage != ms->host_base[i]->storage)
			continue;
		struct amp_tensor *view = amp_tensor_view(
			ms->device[i], host->ndim, host->shape, host->strides,
			host->offset);
		if (view)
			match_view_ness(view, host);
		return view;
	}
	return upload(host);
}

static void drop_outputs(struct amp_call *call)
{
	for (int o = 0; o < call->noutputs; o++)
		amp_tensor_free(call->outputs[o]);
	call->noutputs = 0;
}

/* Runs the CPU kernel of a cuda call over host copies (see backend.h). */
static int forward_on_host(struct amp_call *call)
{
	struct amp_tensor **slots[AMP_PLAN_MAX_ARGS];
	struct amp_tensor *devices[AMP_PLAN_MAX_ARGS], *hosts[AMP_PLAN_MAX_ARGS];
	struct mirrors ms = { 0 };
	int n = tensor_slots(call, slots), status = AMP_OK, mirrored = 0;

	for (; mirrored < n; mirrored++) {
		devices[mirrored] = *slots[mirrored];
		hosts[mirrored] = devices[mirrored]->device == AMP_DEVICE_CUDA
					  ? mirror(&ms, devices[mirrored])
					  : amp_tensor_ref(devices[mirrored]);
		if (!hosts[mirrored]) {
			status = amp_last_status() ? amp_last_status()
						   : AMP_ERR_NOMEM;
			break;
		}
		*slots[mirrored] = hosts[mirrored];
	}
	if (status == AMP_OK) {
		call->device = AMP_DEVICE_CPU;
		status = amp_op_defs[call->op].forward(call);
		call->device = AMP_DEVICE_CUDA;
	}
	if (status == AMP_OK)
		status = write_back(&ms, amp_op_defs[call->op].kind ==
						 AMP_OP_KIND_INPLACE);
	for (int o = 0; status == AMP_OK && o < call->noutputs; o++) {
		struct amp_tensor *host = call->outputs[o];
		struct amp_tensor *device = device_output(&ms, hosts, devices, n, host);
		if (!device) {
			status = amp_last_status() ? amp_last_status()
						   : AMP_ERR_NOMEM;
			break;
		}
		call->outputs[o] = device;
		amp_tensor_free(host);
	}
	if (status != AMP_OK)
		drop_outputs(call); /* host or device, all ours */
	for (int i = 0; i < mirrored; i++) {
		*slots[i] = devices[i];
		amp_tensor_free(hosts[i]);
	}
	for (int i = 0; i < ms.count; i++)
		amp_tensor_free(ms.host_base[i]);
	return status;
}

/* Factories run on the host (the CPU generator, host data) and upload. */
static int forward_factory(struct amp_call *call)
{
	int status;

	call->device = AMP_DEVICE_CPU;
	status = amp_op_defs[call->op].forward(call);
	call->device = AMP_DEVICE_CUDA;
	for (int o = 0; status == AMP_OK && o < call->noutputs; o++) {
		struct amp_tensor *device = upload(call->outputs[o]);
		if (!device) {
			status = amp_last_status() ? amp_last_status()
						   : AMP_ERR_NOMEM;
			break;
		}
		amp_tensor_free(call->outputs[o]);
		call->outputs[o] = device;
	}
	if (status != AMP_OK)
		drop_outputs(call);
	return status;
}

/* to.device (self, int device): an explicit host <-> device copy. */
static int forward_to_device(struct amp_call *call)
{
	struct amp_tensor *self = call->args[0].tensor;
	enum amp_device_type target = (enum amp_device_type)call->args[1].i;
	struct amp_tensor *out = NULL, *host = self;
	int status = AMP_OK;

	if (target == self->device) {
		call->outputs[call->noutputs++] = amp_tensor_ref(self);
		return AMP_OK;
	}
	if (self->device == AMP_DEVICE_CUDA) {
		struct mirrors ms = { 0 };
		host = mirror(&ms, self);
		if (host)
			out = amp_tensor_alloc(self->ndim, self->shape, self->dtype,
					       target);
		if (host && out)
			amp_tensor_gather(host, self->dtype, amp_tensor_data(out));
		amp_tensor_free(host);
		amp_tensor_free(ms.host_base[0]);
		if (!host || !out)
			return amp_last_status() ? amp_last_status() : AMP_ERR_NOMEM;
	} else {
		out = amp_tensor_alloc(self->ndim, self->shape, self->dtype,
				       target);
		if (!out)
			return amp_last_status();
		size_t nbytes = amp_tensor_nbytes(self);
		void *staging = NULL;
		const void *src = amp_tensor_data(self);
		if (!amp_tensor_is_contiguous(self)) {
			staging = malloc(nbytes ? nbytes : 1);
			if (!staging) {
				amp_tensor_free(out);
				return amp_error(AMP_ERR_NOMEM, "out of memory");
			}
			amp_tensor_gather(self, self->dtype, staging);
			src = staging;
		}
		status = amp_device_copy(amp_tensor_data(out), target, src,
					 AMP_DEVICE_CPU, nbytes);
		free(staging);
		if (status != AMP_OK) {
			amp_tensor_free(out);
			return status;
		}
	}
	call->outputs[call->noutputs++] = out;
	return AMP_OK;
}

static int forward_on_gpu(const struct amp_cuda_module *m,
			  struct amp_call *call)
{
	const struct amp_op_def *def = &amp_op_defs[call->op];
	int status;

	if (call->op == AMP_OP_TO_DEVICE)
		return forward_to_device(call);
	switch (def->kind) {
	case AMP_OP_KIND_FACTORY:
		return forward_factory(call);
	case AMP_OP_KIND_COMPOSITE:
		return def->forward(call); /* its body dispatches */
	case AMP_OP_KIND_VIEW:
		/* views only touch metadata, but reshape copies when the
		 * strides cannot express the new shape */
		if (call->op == AMP_OP_RESHAPE &&
		    !amp_tensor_is_contiguous(call->args[0].tensor))
			return forward_on_host(call);
		return def->forward(call);
	default:
		status = amp_cuda_forward(m, call);
		if (status == AMP_CUDA_UNSUPPORTED)
			status = forward_on_host(call);
		return status;
	}
}

int amp_backend_forward(struct amp_call *call)
{
	const struct amp_cuda_module *m = amp_cuda_backend_module();
	char message[96];

	if (!m || (call->device != AMP_DEVICE_CUDA &&
		   call->op != AMP_OP_TO_DEVICE))
		return amp_op_defs[call->op].forward(call);
	const struct amp_op_def *def = &amp_op_defs[call->op];
	if (backend.nvtx)
		snprintf(message, sizeof message, "%s%s%s #%" PRIu64, def->name,
			 def->overload[0] ? "." : "", def->overload, call->op_id);
	uint64_t outer = forward_op;
	forward_op = call->op_id;
	struct annotation a = annotate_begin(m, AMP_GPU_CORRELATION_OP,
					     call->op_id,
					     backend.nvtx ? message : NULL);
	int status = forward_on_gpu(m, call);
	annotate_end(m, a);
	forward_op = outer;
	return status;
}

bool amp_backend_own_work_begin(void)
{
	const struct amp_cuda_module *m = backend.module;

	return m && annotate_begin(m, AMP_GPU_CORRELATION_OP, AMP_GPU_OWN_WORK,
				   NULL).correlation;
}

void amp_backend_own_work_end(bool pushed)
{
	if (pushed)
		backend.module->correlation_pop(AMP_GPU_CORRELATION_OP);
}

/* ---------------------------------------------------------- casting */

int amp_backend_convert(struct amp_tensor *out, const struct amp_tensor *src)
{
	const struct amp_cuda_module *m = amp_cuda_backend_module();
	struct amp_cuda_shape shape = { .ndim = src->ndim };
	uint64_t op = amp_autocast_state()->current_op;
	struct annotation a = { 0 }, for_op = { 0 };
	char message[96];

	if (!m || !AMP_CUDA_HAS(m, convert))
		return AMP_CUDA_UNSUPPORTED;
	memcpy(shape.size, src->shape, sizeof shape.size);
	/* before its op's forward: an autocast cast, linked by the id of the
	 * tensor it produces (the cast event's result), and to the op it is
	 * for (CUPTI keeps a stack per kind: the kernel gets both) */
	if (op != forward_op) {
		if (op)
			for_op = annotate_begin(m, AMP_GPU_CORRELATION_OP, op,
						NULL);
		if (backend.nvtx)
			snprintf(message, sizeof message,
				 "cast %s->%s #%" PRIu64, amp_dtype_name(src->dtype),
				 amp_dtype_name(out->dtype), op);
		a = annotate_begin(m, AMP_GPU_CORRELATION_CAST, out->id,
				   backend.nvtx ? message : NULL);
	}
	int result = m->convert(amp_tensor_data(out), out->dtype,
				amp_tensor_data(src), src->dtype, &shape,
				src->strides);
	annotate_end(m, a);
	annotate_end(m, for_op);
	return amp_cuda_status(m, result);
}

/* ---------------------------------------------------- kernel timing */

int amp_gpu_profiler_start(amp_gpu_activity_fn fn, void *user)
{
	const struct amp_cuda_module *m = amp_cuda_backend_module();

	AMP_ASSERT(fn);
	if (!m)
		return amp_error(AMP_ERR_DEVICE,
				 "CUDA kernel timing needs a GPU; device cuda is %s",
				 backend.status);
	if (!AMP_CUDA_HAS(m, profiler_start) || !AMP_CUDA_HAS(m, profiler_stop) ||
	    !AMP_CUDA_HAS(m, profiler_flush))
		return amp_error(AMP_ERR_UNSUPPORTED,
				 "the CUDA module has no profiler");
	int status = amp_cuda_status(m, m->profiler_start(fn, user));
	if (status == AMP_OK)
		atomic_store(&profiling, true);
	return status;
}

int amp_gpu_profiler_flush(void)
{
	const struct amp_cuda_module *m = amp_cuda_backend_module();

	if (!m || !atomic_load(&profiling))
		return amp_error(AMP_ERR_STATE, "kernel timing is not running");
	return amp_cuda_status(m, m->profiler_flush());
}

int amp_gpu_profiler_stop(struct amp_gpu_profiler_stats *stats)
{
	const struct amp_cuda_module *m = amp_cuda_backend_module();

	if (!m || !atomic_exchange(&profiling, false))
		return amp_error(AMP_ERR_STATE, "kernel timing is not running");
	return amp_cuda_status(m, m->profiler_stop(stats));
}
