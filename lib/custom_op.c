/* Custom autograd ops: torch.autograd.Function.apply with the
 * torch.amp.custom_fwd / custom_bwd decorators (reference section 7).
 *   custom_fwd: ctx._dtype = the device's autocast dtype; without
 *   cast_inputs ctx._fwd_used_autocast = autocast enabled and the forward
 *   runs as is; with cast_inputs it is False and, when autocast is on, the
 *   forward runs inside autocast(device, enabled=False) on the inputs cast
 *   by _cast (floating, on the device, not f64) -- outside autocast it runs
 *   unchanged.
 *   custom_bwd: the backward runs inside autocast(device,
 *   enabled=ctx._fwd_used_autocast, dtype=ctx._dtype).
 * Function.apply runs the forward with grad mode off and gives the outputs
 * a graph node (amp_function_attach) whose backward is the op's. */
#include "train_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct amp_custom_op {
	struct amp_custom_op_def def;
	char *name;          /* def.name, owned */
	char *backward_name; /* "<name>Backward", the grad_fn name */
	char *forward_scope; /* names of the regions custom_fwd/_bwd open */
	char *backward_scope;
};

/* Everything the backward needs is copied here: the graph may outlive
 * the op handle. */
struct amp_custom_ctx {
	amp_custom_backward_fn backward;
	void *user;
	enum amp_device_type device;
	enum amp_dtype dtype;        /* ctx._dtype */
	bool fwd_used_autocast;      /* ctx._fwd_used_autocast */
	char *backward_scope;        /* the op's region name, copied */
	int nsaved;
	amp_tensor **saved;
};

static char *format_name(const char *name, const char *suffix)
{
	size_t size = strlen(name) + strlen(suffix) + 1;
	char *text = malloc(size);

	if (text)
		snprintf(text, size, "%s%s", name, suffix);
	return text;
}

amp_custom_op *amp_custom_op_new(const struct amp_custom_op_def *def)
{
	AMP_ASSERT(def && def->name && def->forward && def->backward);
	AMP_ASSERT(def->device < AMP_DEVICE_TYPE_COUNT);
	AMP_ASSERT(def->cast_inputs <= AMP_DTYPE_NONE);
	AMP_ASSERT(def->ninputs >= 0 && def->noutputs >= 1 &&
		   def->noutputs <= AMP_MAX_OUTPUTS);
	amp_custom_op *op = calloc(1, sizeof *op);
	if (!op)
		goto nomem;
	op->def = *def;
	op->name = format_name(def->name, "");
	op->backward_name = format_name(def->name, "Backward");
	op->forward_scope = format_name(def->name, ".custom_fwd");
	op->backward_scope = format_name(def->name, ".custom_bwd");
	if (!op->name || !op->backward_name || !op->forward_scope ||
	    !op->backward_scope) {
		amp_custom_op_free(op);
		goto nomem;
	}
	op->def.name = op->name;
	return op;
nomem:
	amp_error(AMP_ERR_NOMEM, "out of memory creating a custom op");
	return NULL;
}

void amp_custom_op_free(amp_custom_op *op)
{
	if (!op)
		return;
	free(op->name);
	free(op->backward_name);
	free(op->forward_scope);
	free(op->backward_scope);
	free(op);
}

/* ------------------------------------------------------------------ ctx */

static void ctx_free(void *opaque)
{
	amp_custom_ctx *ctx = opaque;

	if (!ctx)
		return;
	for (int i = 0; i < ctx->nsaved; i++)
		amp_tensor_free(ctx->saved[i]);
	free(ctx->saved);
	free(ctx->backward_scope);
	free(ctx);
}

int amp_custom_ctx_save_for_backward(amp_custom_ctx *ctx, int count,
				     amp_tensor *const *tensors)
{
	AMP_ASSERT(ctx && count >= 0 && (count == 0 || tensors));
	amp_tensor **saved = calloc(count ? (size_t)count : 1, sizeof *saved);
	if (!saved)
		return amp_error(AMP_ERR_NOMEM, "out of memory saving tensors");
	for (int i = 0; i < count; i++)
		saved[i] = tensors[i] ? amp_tensor_ref(tensors[i]) : NULL;
	for (int i = 0; i < ctx->nsaved; i++)
		amp_tensor_free(ctx->saved[i]);
	free(ctx->saved);
	ctx->saved = saved;
	ctx->nsaved = count;
	return AMP_OK;
}

int amp_custom_ctx_saved_count(const amp_custom_ctx *ctx)
{
	return ctx->nsaved;
}

amp_tensor *amp_custom_ctx_saved(const amp_custom_ctx *ctx, int index)
{
	AMP_ASSERT(index >= 0 && index < ctx->nsaved);
	return ctx->saved[index];
}

void *amp_custom_ctx_user(const amp_custom_ctx *ctx)
{
	return ctx->user;
}

enum amp_dtype amp_custom_ctx_autocast_dtype(const amp_custom_ctx *ctx)
{
	return ctx->dtype;
}

bool amp_custom_ctx_fwd_used_autocast(const amp_custom_ctx *ctx)
{
	return ctx->fwd_used_autocast;
}

/* ------------------------------------------------------------- backward */

/* custom_bwd: the backward in the autocast state the forward saw. */
static int run_backward(void *opaque, int noutputs,
			amp_tensor *const *grad_outputs, int ninputs,
			amp_tensor **grad_inputs)
{
	amp_custom_ctx *ctx = opaque;
	struct amp_autocast_opts region = AMP_AUTOCAST_OPTS(ctx->device);

	region.enabled = ctx->fwd_used_autocast;
	region.dtype = ctx->dtype;
	region.scope = ctx->backward_scope;
	amp_autocast_enter(&region);
	int status = ctx->backward(ctx, noutputs, grad_outputs, ninputs,
				   grad_inputs);
	amp_autocast_exit();
	return status;
}

/* -------------------------------------------------------------- forward */

/* _cast(value, device_type, dtype) for one tensor: a new reference, cast
 * when floating, on the device and not f64. */
static amp_tensor *cast_input(amp_tensor *t, enum amp_device_type device,
			      enum amp_dtype dtype)
{
	enum amp_dtype from = amp_tensor_dtype(t);

	if (!amp_dtype_is_floating(from) || from == AMP_DTYPE_F64 ||
	    amp_tensor_device(t) != device || from == dtype)
		return amp_tensor_ref(t);
	return amp_to(t, dtype);
}

static int run_forward(amp_custom_op *op, amp_custom_ctx *ctx,
		       amp_tensor *const *inputs, amp_tensor **outputs)
{
	const struct amp_custom_op_def *def = &op->def;
	bool autocast_on = amp_autocast_is_enabled(def->device);

	if (def->cast_inputs == AMP_DTYPE_NONE || !autocast_on)
		return def->forward(ctx, def->ninputs, inputs, def->noutputs,
				    outputs);
	struct amp_autocast_opts region = AMP_AUTOCAST_OPTS(def->device);
	region.enabled = false;
	region.scope = op->forward_scope;
	amp_autocast_enter(&region);
	amp_tensor **cast = calloc(def->ninputs ? (size_t)def->ninputs : 1,
				   sizeof *cast);
	int status = cast ? AMP_OK
			  : amp_error(AMP_ERR_NOMEM, "out of memory casting inputs");
	int made = 0;
	for (; status == AMP_OK && made < def->ninputs; made++) {
		cast[made] = inputs[made] ? cast_input(inputs[made], def->device,
						       def->cast_inputs)
					  : NULL;
		if (inputs[made] && !cast[made])
			status = amp_last_status();
	}
	if (status == AMP_OK)
		status = def->forward(ctx, def->ninputs, cast, def->noutputs,
				      outputs);
	for (int i = 0; i < made; i++)
		amp_tensor_free(cast[i]);
	free(cast);
	amp_autocast_exit();
	return status;
}

/* An output that is one of the inputs becomes a view of it, so the graph
 * node it gets does not turn the input itself into a non-leaf. */
static int separate_from_inputs(int ninputs, amp_tensor *const *inputs,
				amp_tensor **output)
{
	for (int i = 0; i < ninputs; i++)
		if (*output && *output == inputs[i]) {
			amp_tensor *view = amp_detach(*output);
			amp_tensor_free(*output);
			*output = view;
			return view ? AMP_OK : amp_last_status();
		}
	return AMP_OK;
}

int amp_custom_op_apply(amp_custom_op *op, amp_tensor *const *inputs,
			amp_tensor **outputs)
{
	AMP_ASSERT(op && outputs);
	const struct amp_custom_op_def *def = &op->def;

	AMP_ASSERT(def->ninputs == 0 || inputs);
	amp_custom_ctx *ctx = calloc(1, sizeof *ctx);
	if (!ctx)
		return amp_error(AMP_ERR_NOMEM, "out of memory applying %s",
				 def->name);
	ctx->backward = def->backward;
	ctx->user = def->user;
	ctx->device = def->device;
	ctx->dtype = amp_autocast_get_dtype(def->device);
	ctx->fwd_used_autocast = def->cast_inputs == AMP_DTYPE_NONE &&
				 amp_autocast_is_enabled(def->device);
	ctx->backward_scope = format_name(op->backward_scope, "");
	for (int o = 0; o < def->noutputs; o++)
		outputs[o] = NULL;

	bool grad_mode = amp_set_grad_enabled(false);
	int status = ctx->backward_scope
			     ? run_forward(op, ctx, inputs, outputs)
			     : amp_error(AMP_ERR_NOMEM, "out of memory");
	amp_set_grad_enabled(grad_mode);
	for (int o = 0; o < def->noutputs && status == AMP_OK; o++) {
		if (!outputs[o])
			status = amp_error(AMP_ERR_INVALID,
					   "%s: the forward returned no output %d",
					   def->name, o);
		else
			status = separate_from_inputs(def->ninputs, inputs,
						      &outputs[o]);
	}
	if (status != AMP_OK) {
		ctx_free(ctx);
		for (int o = 0; o < def->noutputs; o++) {
			amp_tensor_free(outputs[o]);
			outputs[o] = NULL;
		}
		return status;
	}
	const struct amp_function fn = {
		.name = op->backward_name,
		.backward = run_backward,
		.ctx_free = ctx_free,
	};
	status = amp_function_attach(&fn, ctx, def->ninputs, inputs,
				     def->noutputs, outputs);
	if (status != AMP_OK)
		for (int o = 0; o < def->noutputs; o++) {
			amp_tensor_free(outputs[o]);
			outputs[o] = NULL;
		}
	return status;
}
