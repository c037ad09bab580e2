/* torch.amp.GradScaler's construction (with its checks), getters and
 * setters, and state_dict()/load_state_dict(); the disabled mode's
 * answers (scale 1.0, tracker 0, an empty state). */
#include "train_internal.h"

#include <stdlib.h>

static atomic_uint_fast64_t next_scaler_id = 1;

/* ------------------------------------------------------------- lifecycle */

amp_grad_scaler *amp_grad_scaler_new(const struct amp_grad_scaler_opts *opts)
{
	struct amp_grad_scaler_opts defaults =
		AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CUDA);

	if (!opts)
		opts = &defaults;
	AMP_ASSERT(opts->device < AMP_DEVICE_TYPE_COUNT);
	if (opts->enabled && !(opts->growth_factor > 1.0)) {
		amp_error(AMP_ERR_INVALID, "The growth factor must be > 1.0.");
		return NULL;
	}
	if (opts->enabled && !(opts->backoff_factor < 1.0)) {
		amp_error(AMP_ERR_INVALID, "The backoff factor must be < 1.0.");
		return NULL;
	}
	amp_grad_scaler *s = calloc(1, sizeof *s);
	if (!s) {
		amp_error(AMP_ERR_NOMEM, "out of memory creating a GradScaler");
		return NULL;
	}
	s->id = atomic_fetch_add(&next_scaler_id, 1);
	s->device = opts->device;
	s->enabled = opts->enabled;
	s->init_scale = opts->init_scale;
	s->growth_factor = opts->growth_factor;
	s->backoff_factor = opts->backoff_factor;
	s->growth_interval = opts->growth_interval;
	return s;
}

void scaler_reset_states(amp_grad_scaler *s)
{
	for (int i = 0; i < s->nstates; i++)
		for (int d = 0; d < s->states[i].ndevices; d++)
			amp_tensor_free(s->states[i].found_inf[d]);
	s->nstates = 0;
}

void amp_grad_scaler_free(amp_grad_scaler *s)
{
	if (!s)
		return;
	scaler_reset_states(s);
	free(s->states);
	amp_tensor_free(s->scale);
	amp_tensor_free(s->growth_tracker);
	free(s);
}

uint64_t amp_grad_scaler_id(const amp_grad_scaler *s)
{
	return s->id;
}

/* -------------------------------------------------------------- getters */

double amp_grad_scaler_get_scale(const amp_grad_scaler *s)
{
	if (!s->enabled)
		return 1.0;
	return s->scale ? amp_tensor_item(s->scale) : s->init_scale;
}

amp_tensor *amp_grad_scaler_scale_tensor(const amp_grad_scaler *s)
{
	return s->scale;
}

amp_tensor *amp_grad_scaler_growth_tracker_tensor(const amp_grad_scaler *s)
{
	return s->growth_tracker;
}

int64_t amp_grad_scaler_growth_tracker(const amp_grad_scaler *s)
{
	if (!s->enabled)
		return 0;
	return s->growth_tracker ? (int64_t)amp_tensor_item(s->growth_tracker)
				 : s->init_growth_tracker;
}

bool amp_grad_scaler_is_enabled(const amp_grad_scaler *s)
{
	return s->enabled;
}

double amp_grad_scaler_get_growth_factor(const amp_grad_scaler *s)
{
	return s->growth_factor;
}

void amp_grad_scaler_set_growth_factor(amp_grad_scaler *s, double factor)
{
	s->growth_factor = factor;
}

double amp_grad_scaler_get_backoff_factor(const amp_grad_scaler *s)
{
	return s->backoff_factor;
}

void amp_grad_scaler_set_backoff_factor(amp_grad_scaler *s, double factor)
{
	s->backoff_factor = factor;
}

int64_t amp_grad_scaler_get_growth_interval(const amp_grad_scaler *s)
{
	return s->growth_interval;
}

void amp_grad_scaler_set_growth_interval(amp_grad_scaler *s, int64_t interval)
{
	s->growth_interval = interval;
}

/* ------------------------------------------------------------ state dict */

void amp_grad_scaler_state_dict(const amp_grad_scaler *s,
				struct amp_grad_scaler_state *state)
{
	AMP_ASSERT(s && state);
	*state = (struct amp_grad_scaler_state){ .empty = !s->enabled };
	if (!s->enabled)
		return;
	state->scale = amp_grad_scaler_get_scale(s);
	state->growth_factor = s->growth_factor;
	state->backoff_factor = s->backoff_factor;
	state->growth_interval = s->growth_interval;
	state->growth_tracker = amp_grad_scaler_growth_tracker(s);
}

int amp_grad_scaler_load_state_dict(amp_grad_scaler *s,
				    const struct amp_grad_scaler_state *state)
{
	int status = AMP_OK;

	AMP_ASSERT(s && state);
	if (!s->enabled)
		return AMP_OK;
	if (state->empty)
		return amp_error(AMP_ERR_STATE,
				 "The source state dict is empty, possibly because "
				 "it was saved from a disabled instance of "
				 "GradScaler.");
	s->init_scale = state->scale;
	if (s->scale)
		status = amp_fill_(s->scale, state->scale);
	s->growth_factor = state->growth_factor;
	s->backoff_factor = state->backoff_factor;
	s->growth_interval = state->growth_interval;
	s->init_growth_tracker = state->growth_tracker;
	if (status == AMP_OK && s->growth_tracker)
		status = amp_fill_(s->growth_tracker,
				   (double)state->growth_tracker);
	return status;
}
