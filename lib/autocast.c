/* Autocast state and regions: the thread-local enabled/dtype flags per
 * device type, the single nesting counter, cache_enabled, grad mode, and
 * the enter/exit of regions (torch.autocast's __enter__/__exit__). */
#include "amp_internal.h"

#include <stdlib.h>
#include <string.h>

static _Thread_local struct amp_autocast_tls state = {
	.dtype = { [AMP_DEVICE_CPU] = AMP_DTYPE_BF16,
		   [AMP_DEVICE_CUDA] = AMP_DTYPE_F16 },
	.cache_enabled = true,
	.grad_enabled = true,
};

/* What __exit__ must restore. */
struct region {
	enum amp_device_type device;
	bool prev_enabled;
	enum amp_dtype prev_dtype;
	bool prev_cache_enabled;
	const char *prev_scope;
	char *scope; /* this region's own name, owned */
	bool enabled;
	enum amp_dtype dtype;
};

static _Thread_local struct region *regions;
static _Thread_local int regions_open, regions_capacity;

struct amp_autocast_tls *amp_autocast_state(void)
{
	return &state;
}

static bool device_supports(enum amp_device_type device, enum amp_dtype dtype)
{
	if (device == AMP_DEVICE_CPU)
		return dtype == AMP_DTYPE_BF16 || dtype == AMP_DTYPE_F16;
	/* torch.autocast('cuda') accepts any dtype; only a GPU without bf16
	 * support rejects bf16, and the emulated device supports it. */
	return true;
}

static void emit_scope(enum amp_event_kind kind, const struct region *r,
		       int depth)
{
	if (!amp_hooks_want(kind))
		return;
	struct amp_event event = { .kind = kind };
	event.scope = (struct amp_scope_event){
		.depth = depth,
		.device = r->device,
		.dtype = r->dtype,
		.enabled = r->enabled,
		.cache_enabled = state.cache_enabled,
		.scope = r->scope,
	};
	amp_hook_emit(&event);
}

int amp_autocast_enter(const struct amp_autocast_opts *opts)
{
	AMP_ASSERT(opts && opts->device < AMP_DEVICE_TYPE_COUNT);
	enum amp_device_type device = opts->device;
	enum amp_dtype dtype =
		opts->dtype == AMP_DTYPE_NONE ? state.dtype[device] : opts->dtype;
	bool enabled = opts->enabled;
	bool cache_enabled = opts->cache_enabled < 0 ? state.cache_enabled
						     : opts->cache_enabled != 0;

	AMP_ASSERT(dtype < AMP_DTYPE_COUNT);
	if (enabled && !device_supports(device, dtype)) {
		amp_warn("In CPU autocast, but the target dtype is not "
			 "supported. Disabling autocast.\nCPU Autocast only "
			 "supports dtype of torch.bfloat16, torch.float16 "
			 "currently.");
		enabled = false;
	}
	char *scope = opts->scope ? strdup(opts->scope) : NULL;
	if (opts->scope && !scope)
		return amp_error(AMP_ERR_NOMEM, "out of memory entering autocast");
	if (regions_open == regions_capacity) {
		int capacity = regions_capacity ? 2 * regions_capacity : 16;
		struct region *grown =
			realloc(regions, (size_t)capacity * sizeof *grown);
		if (!grown) {
			free(scope);
			return amp_error(AMP_ERR_NOMEM,
					 "out of memory entering autocast");
		}
		regions = grown;
		regions_capacity = capacity;
	}
	struct region *r = &regions[regions_open++];
	*r = (struct region){
		.device = device,
		.prev_enabled = state.enabled[device],
		.prev_dtype = state.dtype[device],
		.prev_cache_enabled = state.cache_enabled,
		.prev_scope = state.scope,
		.scope = scope,
		.enabled = enabled,
		.dtype = dtype,
	};
	state.enabled[device] = enabled;
	state.dtype[device] = dtype;
	state.nesting++;
	state.cache_enabled = cache_enabled;
	if (r->scope)
		state.scope = r->scope;
	emit_scope(AMP_EVENT_SCOPE_ENTER, r, state.nesting);
	return AMP_OK;
}

void amp_autocast_exit(void)
{
	if (regions_open == 0)
		amp_abort(__FILE__, __LINE__,
			  "amp_autocast_exit: no autocast region is open");
	struct region *r = &regions[regions_open - 1];
	emit_scope(AMP_EVENT_SCOPE_EXIT, r, state.nesting);
	if (--state.nesting == 0)
		amp_autocast_clear_cache();
	state.enabled[r->device] = r->prev_enabled;
	state.dtype[r->device] = r->prev_dtype;
	state.cache_enabled = r->prev_cache_enabled;
	state.scope = r->prev_scope;
	free(r->scope);
	regions_open--;
	if (regions_open == 0) {
		free(regions);
		regions = NULL;
		regions_capacity = 0;
	}
}

int amp_autocast_call(const struct amp_autocast_opts *opts,
		      int (*fn)(void *user), void *user)
{
	int status = amp_autocast_enter(opts);

	if (status != AMP_OK)
		return status;
	status = fn(user);
	amp_autocast_exit();
	return status;
}

bool amp_autocast_is_enabled(enum amp_device_type device)
{
	AMP_ASSERT(device < AMP_DEVICE_TYPE_COUNT);
	return state.enabled[device];
}

void amp_autocast_set_enabled(enum amp_device_type device, bool enabled)
{
	AMP_ASSERT(device < AMP_DEVICE_TYPE_COUNT);
	state.enabled[device] = enabled;
}

enum amp_dtype amp_autocast_get_dtype(enum amp_device_type device)
{
	AMP_ASSERT(device < AMP_DEVICE_TYPE_COUNT);
	return state.dtype[device];
}

void amp_autocast_set_dtype(enum amp_device_type device, enum amp_dtype dtype)
{
	AMP_ASSERT(device < AMP_DEVICE_TYPE_COUNT && dtype < AMP_DTYPE_COUNT);
	state.dtype[device] = dtype;
}

bool amp_autocast_cache_enabled(void)
{
	return state.cache_enabled;
}

void amp_autocast_set_cache_enabled(bool enabled)
{
	state.cache_enabled = enabled;
}

int amp_autocast_nesting(void)
{
	return state.nesting;
}

bool amp_set_grad_enabled(bool enabled)
{
	bool previous = state.grad_enabled;

	state.grad_enabled = enabled;
	return previous;
}

bool amp_is_grad_enabled(void)
{
	return state.grad_enabled;
}
