/* torch.amp.GradScaler's working part: lazy scale/growth-tracker
 * tensors, scale(), the per-optimizer READY -> UNSCALED -> STEPPED state
 * machine with PyTorch's error texts, unscale_() through the fused
 * non-finite check, step() skipped on inf/NaN and update() through
 * _amp_update_scale_.  Every decision is also published as an
 * AMP_EVENT_SCALER hook event.  Construction, getters, state save/load:
 * grad_scaler_state.c. */
#include "train_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- events */

static void emit(const amp_grad_scaler *s, const char *what,
		 uint64_t optimizer_id, bool found_inf, bool skipped,
		 uint64_t inf_tensor_id)
{
	if (!amp_hooks_want(AMP_EVENT_SCALER))
		return;
	struct amp_event event = { .kind = AMP_EVENT_SCALER };
	event.scaler = (struct amp_scaler_event){
		.scaler_id = s->id,
		.optimizer_id = optimizer_id,
		.what = what,
		.scale = amp_grad_scaler_get_scale(s),
		.found_inf = found_inf,
		.step_skipped = skipped,
		.inf_tensor_id = inf_tensor_id,
	};
	amp_hook_emit(&event);
}

/* defaultdict(_refresh_per_optimizer_state)[id(optimizer)] */
static struct scaler_optimizer_state *state_for(amp_grad_scaler *s,
						const amp_optimizer *opt)
{
	uint64_t id = amp_optimizer_id(opt);

	for (int i = 0; i < s->nstates; i++)
		if (s->states[i].optimizer_id == id)
			return &s->states[i];
	if (s->nstates == s->capacity) {
		int capacity = s->capacity ? 2 * s->capacity : 4;
		struct scaler_optimizer_state *grown =
			realloc(s->states, (size_t)capacity * sizeof *grown);
		if (!grown) {
			amp_error(AMP_ERR_NOMEM, "out of memory in GradScaler");
			return NULL;
		}
		s->states = grown;
		s->capacity = capacity;
	}
	struct scaler_optimizer_state *state = &s->states[s->nstates++];
	*state = (struct scaler_optimizer_state){ .optimizer_id = id };
	return state;
}

static int check_scale_growth_tracker(const amp_grad_scaler *s,
				      const char *funcname)
{
	const char *missing = !s->scale ? "_scale"
			      : !s->growth_tracker ? "_growth_tracker"
						   : NULL;

	if (!missing)
		return AMP_OK;
	return amp_error(AMP_ERR_STATE,
			 "Attempted %s but %s is None.  This may indicate your "
			 "script did not use scaler.scale(loss or outputs) "
			 "earlier in the iteration.",
			 funcname, missing);
}

static int lazy_init(amp_grad_scaler *s, enum amp_device_type device)
{
	s->scale = amp_full(0, NULL, s->init_scale, AMP_DTYPE_F32, device);
	s->growth_tracker = amp_full(0, NULL, (double)s->init_growth_tracker,
				     AMP_DTYPE_I32, device);
	if (s->scale && s->growth_tracker)
		return AMP_OK;
	amp_tensor_free(s->scale);
	amp_tensor_free(s->growth_tracker);
	s->scale = s->growth_tracker = NULL;
	return amp_last_status();
}

/* ----------------------------------------------------------------- scale */

/* outputs * scale.to(outputs.device): `to` is the scale itself on its own
 * device, a copy elsewhere. */
static amp_tensor *scale_one(amp_grad_scaler *s, amp_tensor *outputs,
			     amp_tensor **per_device)
{
	enum amp_device_type device = outputs->device;

	if (!per_device[device])
		per_device[device] = device == s->scale->device
					     ? amp_tensor_ref(s->scale)
					     : amp_to_device(s->scale, device);
	if (!per_device[device])
		return NULL;
	return amp_mul(outputs, per_device[device]);
}

amp_tensor *amp_grad_scaler_scale(amp_grad_scaler *s, amp_tensor *outputs)
{
	amp_tensor *scaled;

	AMP_ASSERT(s && outputs);
	if (amp_grad_scaler_scale_list(s, &outputs, 1, &scaled) != AMP_OK)
		return NULL;
	return scaled;
}

int amp_grad_scaler_scale_list(amp_grad_scaler *s, amp_tensor *const *outputs,
			       int count, amp_tensor **scaled)
{
	amp_tensor *per_device[AMP_DEVICE_TYPE_COUNT] = { NULL };
	int status = AMP_OK;
	int done = 0;

	AMP_ASSERT(s && count >= 0 && (count == 0 || (outputs && scaled)));
	if (!s->enabled) {
		for (int i = 0; i < count; i++)
			scaled[i] = amp_tensor_ref(outputs[i]);
		return AMP_OK;
	}
	if (count > 0 && !s->scale)
		status = lazy_init(s, outputs[0]->device);
	for (; done < count && status == AMP_OK; done++) {
		scaled[done] = scale_one(s, outputs[done], per_device);
		if (!scaled[done])
			status = amp_last_status();
	}
	for (int d = 0; d < AMP_DEVICE_TYPE_COUNT; d++)
		amp_tensor_free(per_device[d]);
	if (status != AMP_OK) {
		for (int i = 0; i < done; i++) {
			amp_tensor_free(scaled[i]);
			scaled[i] = NULL;
		}
		return status;
	}
	if (count > 0)
		emit(s, "scale", 0, false, false, 0);
	return AMP_OK;
}

/* --------------------------------------------------------------- unscale */

/* The optimizer's gradients (new references) in PyTorch's grouping order:
 * by device, then dtype, each in order of first appearance.  f16
 * gradients are refused (allow_fp16=False: only fused optimizers allow
 * them). */
static int grouped_grads(amp_optimizer *opt, amp_tensor **out, int *count)
{
	int n = 0, total = amp_optimizer_param_count(opt);
	amp_tensor **found = calloc(total ? (size_t)total : 1, sizeof *found);

	if (!found)
		return amp_error(AMP_ERR_NOMEM, "out of memory in GradScaler");
	for (int i = 0; i < total; i++) {
		amp_tensor *g = amp_tensor_grad(amp_optimizer_param(opt, i));
		if (!g)
			continue;
		if (amp_tensor_dtype(g) == AMP_DTYPE_F16) {
			amp_tensor_free(g);
			for (int j = 0; j < n; j++)
				amp_tensor_free(found[j]);
			free(found);
			return amp_error(AMP_ERR_DTYPE,
					 "Attempting to unscale FP16 gradients.");
		}
		found[n++] = g;
	}
	/* device-major, then dtype, each key in first-seen order */
	int placed = 0;
	for (int i = 0; i < n; i++) {
		if (!found[i])
			continue;
		enum amp_device_type device = found[i]->device;
		for (int k = i; k < n; k++) {
			if (!found[k] || found[k]->device != device)
				continue;
			enum amp_dtype dtype = found[k]->dtype;
			for (int j = k; j < n; j++)
				if (found[j] && found[j]->device == device &&
				    found[j]->dtype == dtype) {
					out[placed++] = found[j];
					found[j] = NULL;
				}
		}
	}
	free(found);
	*count = placed;
	return AMP_OK;
}

/* _unscale_grads_: one fused call per (device, dtype) group, with a
 * found_inf per device recorded in the optimizer's state. */
static int unscale_grads(struct scaler_optimizer_state *state,
			 amp_optimizer *opt, amp_tensor *inv_scale,
			 amp_tensor *found_inf, uint64_t *first_non_finite)
{
	int total = amp_optimizer_param_count(opt), n = 0;
	amp_tensor **grads = calloc(total ? (size_t)total : 1, sizeof *grads);
	amp_tensor *inv_per_device[AMP_DEVICE_TYPE_COUNT] = { NULL };

	if (!grads)
		return amp_error(AMP_ERR_NOMEM, "out of memory in GradScaler");
	bool grad_mode = amp_set_grad_enabled(false);
	int status = grouped_grads(opt, grads, &n);
	for (int first = 0; first < n && status == AMP_OK;) {
		enum amp_device_type device = grads[first]->device;
		enum amp_dtype dtype = grads[first]->dtype;
		int end = first;
		while (end < n && grads[end]->device == device &&
		       grads[end]->dtype == dtype)
			end++;
		/* _MultiDeviceReplicator.get(device): a copy per device */
		if (!inv_per_device[device]) {
			inv_per_device[device] =
				device == inv_scale->device
					? amp_tensor_ref(inv_scale)
					: amp_to_device(inv_scale, device);
			amp_tensor *copy = device == found_inf->device
						   ? amp_clone(found_inf)
						   : amp_to_device(found_inf, device);
			if (!inv_per_device[device] || !copy) {
				amp_tensor_free(copy);
				status = amp_last_status();
				break;
			}
			state->found_inf[state->ndevices++] = copy;
		}
		amp_tensor *device_found_inf = NULL;
		for (int d = 0; d < state->ndevices; d++)
			if (state->found_inf[d]->device == device)
				device_found_inf = state->found_inf[d];
		status = amp_non_finite_check_and_unscale_sink(
			grads + first, end - first, device_found_inf,
			inv_per_device[device], first_non_finite);
		first = end;
	}
	amp_set_grad_enabled(grad_mode);
	for (int d = 0; d < AMP_DEVICE_TYPE_COUNT; d++)
		amp_tensor_free(inv_per_device[d]);
	for (int i = 0; i < n; i++)
		amp_tensor_free(grads[i]);
	free(grads);
	return status;
}

static bool any_found_inf(const struct scaler_optimizer_state *state)
{
	for (int d = 0; d < state->ndevices; d++)
		if (amp_tensor_item(state->found_inf[d]) != 0)
			return true;
	return false;
}

/* The found_inf tensors from an earlier unscale_ are replaced. */
static void drop_found_inf(struct scaler_optimizer_state *state)
{
	for (int d = 0; d < state->ndevices; d++)
		amp_tensor_free(state->found_inf[d]);
	state->ndevices = 0;
}

/* inv_scale = scale.double().reciprocal().float(): the reciprocal in f64
 * because f32 division can be imprecise under some compile options. */
static amp_tensor *inverse_scale(const amp_grad_scaler *s)
{
	amp_tensor *wide = amp_to(s->scale, AMP_DTYPE_F64);
	amp_tensor *inverse = wide ? amp_reciprocal(wide) : NULL;
	amp_tensor *narrow = inverse ? amp_to(inverse, AMP_DTYPE_F32) : NULL;

	amp_tensor_free(wide);
	amp_tensor_free(inverse);
	return narrow;
}

static int unscale(amp_grad_scaler *s, amp_optimizer *opt)
{
	int status = check_scale_growth_tracker(s, "unscale_");
	if (status != AMP_OK)
		return status;
	struct scaler_optimizer_state *state = state_for(s, opt);
	if (!state)
		return amp_last_status();
	if (state->stage == STAGE_UNSCALED)
		return amp_error(AMP_ERR_STATE,
				 "unscale_() has already been called on this "
				 "optimizer since the last update().");
	if (state->stage == STAGE_STEPPED)
		return amp_error(AMP_ERR_STATE,
				 "unscale_() is being called after step().");
	amp_tensor *inv_scale = inverse_scale(s);
	amp_tensor *found_inf = amp_full(0, NULL, 0.0, AMP_DTYPE_F32,
					 s->scale->device);
	uint64_t first_non_finite = 0;
	status = inv_scale && found_inf ? AMP_OK : amp_last_status();
	if (status == AMP_OK) {
		drop_found_inf(state);
		status = unscale_grads(state, opt, inv_scale, found_inf,
				       &first_non_finite);
	}
	amp_tensor_free(inv_scale);
	amp_tensor_free(found_inf);
	if (status != AMP_OK)
		return status;
	state->stage = STAGE_UNSCALED;
	emit(s, "unscale", amp_optimizer_id(opt), first_non_finite != 0, false,
	     first_non_finite);
	return AMP_OK;
}

int amp_grad_scaler_unscale_(amp_grad_scaler *s, amp_optimizer *opt)
{
	AMP_ASSERT(s && opt);
	if (!s->enabled)
		return AMP_OK;
	enum amp_phase phase = train_phase_enter(AMP_PHASE_OPTIMIZER);
	int status = unscale(s, opt);
	train_phase_leave(phase);
	return status;
}

/* ------------------------------------------------------------------ step */

int amp_grad_scaler_step(amp_grad_scaler *s, amp_optimizer *opt, bool *stepped)
{
	bool ran = false;
	int status;

	AMP_ASSERT(s && opt);
	if (stepped)
		*stepped = false;
	if (!s->enabled) {
		status = amp_optimizer_step(opt);
		if (stepped)
			*stepped = status == AMP_OK;
		return status;
	}
	status = check_scale_growth_tracker(s, "step");
	if (status != AMP_OK)
		return status;
	struct scaler_optimizer_state *state = state_for(s, opt);
	if (!state)
		return amp_last_status();
	if (state->stage == STAGE_STEPPED)
		return amp_error(AMP_ERR_STATE,
				 "step() has already been called since the last "
				 "update().");
	if (state->stage == STAGE_READY) {
		status = amp_grad_scaler_unscale_(s, opt);
		if (status != AMP_OK)
			return status;
		state = state_for(s, opt);
	}
	if (state->ndevices == 0)
		return amp_error(AMP_ERR_STATE,
				 "No inf checks were recorded for this optimizer.");
	bool found_inf = any_found_inf(state);
	if (!found_inf) {
		status = amp_optimizer_step(opt);
		if (status != AMP_OK)
			return status;
		ran = true;
	}
	state->stage = STAGE_STEPPED;
	if (stepped)
		*stepped = ran;
	emit(s, "step", amp_optimizer_id(opt), found_inf, !ran, 0);
	return AMP_OK;
}

/* ---------------------------------------------------------------- update */

/* found_inf_combined: the first found_inf (moved to the scale's device)
 * with the others added into it in place, as `+=` does. */
static amp_tensor *combined_found_inf(amp_grad_scaler *s)
{
	amp_tensor *combined = NULL;
	int status = AMP_OK;

	for (int i = 0; i < s->nstates && status == AMP_OK; i++)
		for (int d = 0; d < s->states[i].ndevices && status == AMP_OK;
		     d++) {
			amp_tensor *f = s->states[i].found_inf[d];
			amp_tensor *here = f->device == s->scale->device
						   ? amp_tensor_ref(f)
						   : amp_to_device(f, s->scale->device);
			if (!here) {
				status = amp_last_status();
			} else if (!combined) {
				combined = here;
			} else {
				status = amp_add_(combined, here, 1.0);
				amp_tensor_free(here);
			}
		}
	if (status == AMP_OK && !combined)
		amp_error(AMP_ERR_STATE,
			  "No inf checks were recorded prior to update.");
	if (status != AMP_OK) {
		amp_tensor_free(combined);
		combined = NULL;
	}
	return combined;
}

static int update(amp_grad_scaler *s)
{
	int status = check_scale_growth_tracker(s, "update");
	if (status != AMP_OK)
		return status;
	bool grad_mode = amp_set_grad_enabled(false);
	amp_tensor *found_inf = combined_found_inf(s);
	status = found_inf ? amp_update_scale_(s->scale, s->growth_tracker,
					       found_inf, s->growth_factor,
					       s->backoff_factor,
					       s->growth_interval)
			   : amp_last_status();
	amp_set_grad_enabled(grad_mode);
	bool any = status == AMP_OK && amp_tensor_item(found_inf) != 0;
	amp_tensor_free(found_inf);
	if (status != AMP_OK)
		return status;
	scaler_reset_states(s);
	emit(s, "update", 0, any, false, 0);
	return AMP_OK;
}

int amp_grad_scaler_update(amp_grad_scaler *s)
{
	AMP_ASSERT(s);
	if (!s->enabled)
		return AMP_OK;
	enum amp_phase phase = train_phase_enter(AMP_PHASE_OPTIMIZER);
	int status = update(s);
	train_phase_leave(phase);
	return status;
}

int amp_grad_scaler_update_with(amp_grad_scaler *s, double new_scale)
{
	AMP_ASSERT(s);
	if (!s->enabled)
		return AMP_OK;
	int status = check_scale_growth_tracker(s, "update");
	if (status == AMP_OK) {
		enum amp_phase phase = train_phase_enter(AMP_PHASE_OPTIMIZER);
		status = amp_fill_(s->scale, new_scale);
		train_phase_leave(phase);
	}
	if (status != AMP_OK)
		return status;
	scaler_reset_states(s);
	emit(s, "update", 0, false, false, 0);
	return AMP_OK;
}

int amp_grad_scaler_update_with_tensor(amp_grad_scaler *s,
				       amp_tensor *new_scale)
{
	/* Python's line continuation keeps the next line's indentation. */
	static const char reason[] =
		"new_scale should be a float or a 1-element "
		"torch.cuda.FloatTensor or                     "
		"torch.FloatTensor with requires_grad=False.";

	AMP_ASSERT(s && new_scale);
	if (!s->enabled)
		return AMP_OK;
	int status = check_scale_growth_tracker(s, "update");
	if (status != AMP_OK)
		return status;
	if (new_scale->device != s->device || amp_tensor_numel(new_scale) != 1 ||
	    new_scale->requires_grad)
		return amp_error(AMP_ERR_INVALID, "%s", reason);
	enum amp_phase phase = train_phase_enter(AMP_PHASE_OPTIMIZER);
	status = amp_copy_(s->scale, new_scale);
	train_phase_leave(phase);
	if (status != AMP_OK)
		return status;
	scaler_reset_states(s);
	emit(s, "update", 0, false, false, 0);
	return AMP_OK;
}
