/* torch.optim.Optimizer's common part: the parameter list and its
 * checks, per-parameter state, step() over the parameters that have a
 * gradient with grad mode off, zero_grad(set_to_none=True).  The update
 * rules are in optim_sgd.c and optim_adam.c. */
#include "train_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t next_optimizer_id = 1;

/* Python's float repr: the shortest digits that round-trip, "1.0" for
 * integral values, exponent form outside [1e-4, 1e16). */
void train_format_float(char *buf, size_t size, double value)
{
	if (isnan(value) || isinf(value)) {
		snprintf(buf, size, "%s", isnan(value) ? "nan"
					  : value > 0  ? "inf"
						       : "-inf");
		return;
	}
	char digits[40];
	int precision = 1;
	for (; precision < 17; precision++) {
		snprintf(digits, sizeof digits, "%.*e", precision - 1, value);
		if (strtod(digits, NULL) == value)
			break;
	}
	snprintf(digits, sizeof digits, "%.*e", precision - 1, value);
	int exponent = atoi(strchr(digits, 'e') + 1);
	if (value != 0 && (exponent < -4 || exponent >= 16)) {
		/* Python: "1e-05", "1.5e+16" */
		char *e = strchr(digits, 'e');
		snprintf(buf, size, "%.*se%c%02d", (int)(e - digits), digits,
			 exponent < 0 ? '-' : '+', abs(exponent));
		return;
	}
	int decimals = precision - 1 - exponent;
	snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 1, value);
}

int optim_invalid(const char *what, double value)
{
	char text[48];

	train_format_float(text, sizeof text, value);
	return amp_error(AMP_ERR_INVALID, "Invalid %s: %s", what, text);
}

struct amp_optimizer *optim_new(const struct optim_algorithm *algorithm,
				amp_tensor *const *params, int count, double lr)
{
	AMP_ASSERT(count >= 0 && (count == 0 || params));
	if (count == 0) {
		amp_error(AMP_ERR_INVALID, "optimizer got an empty parameter list");
		return NULL;
	}
	for (int i = 0; i < count; i++) {
		AMP_ASSERT(params[i]);
		if (!params[i]->is_leaf) {
			amp_error(AMP_ERR_INVALID,
				  "can't optimize a non-leaf Tensor");
			return NULL;
		}
	}
	struct amp_optimizer *opt = calloc(1, sizeof *opt);
	if (opt) {
		opt->params = calloc((size_t)count, sizeof *opt->params);
		opt->state = calloc((size_t)count, sizeof *opt->state);
	}
	if (!opt || !opt->params || !opt->state) {
		if (opt) {
			free(opt->params);
			free(opt->state);
		}
		free(opt);
		amp_error(AMP_ERR_NOMEM, "out of memory creating an optimizer");
		return NULL;
	}
	opt->id = atomic_fetch_add(&next_optimizer_id, 1);
	opt->algorithm = algorithm;
	opt->count = count;
	opt->lr = lr;
	for (int i = 0; i < count; i++)
		opt->params[i] = amp_tensor_ref(params[i]);
	return opt;
}

void amp_optimizer_free(amp_optimizer *opt)
{
	if (!opt)
		return;
	for (int i = 0; i < opt->count; i++) {
		amp_tensor_free(opt->params[i]);
		for (int s = 0; s < OPTIM_SLOT_COUNT; s++)
			amp_tensor_free(opt->state[i][s]);
	}
	free(opt->params);
	free(opt->state);
	free(opt);
}

enum amp_phase train_phase_enter(enum amp_phase phase)
{
	struct amp_autocast_tls *st = amp_autocast_state();
	enum amp_phase saved = st->phase;

	st->phase = phase;
	return saved;
}

void train_phase_leave(enum amp_phase saved)
{
	amp_autocast_state()->phase = saved;
}

/* Optimizer.step runs under torch.no_grad (differentiable=False). */
int amp_optimizer_step(amp_optimizer *opt)
{
	int status = AMP_OK;

	AMP_ASSERT(opt);
	enum amp_phase phase = train_phase_enter(AMP_PHASE_OPTIMIZER);
	bool grad_mode = amp_set_grad_enabled(false);
	for (int i = 0; i < opt->count && status == AMP_OK; i++) {
		amp_tensor *grad = amp_tensor_grad(opt->params[i]);
		if (!grad)
			continue;
		status = opt->algorithm->update(opt, opt->params[i], grad,
						opt->state[i]);
		amp_tensor_free(grad);
	}
	amp_set_grad_enabled(grad_mode);
	train_phase_leave(phase);
	return status;
}

void amp_optimizer_zero_grad(amp_optimizer *opt)
{
	AMP_ASSERT(opt);
	for (int i = 0; i < opt->count; i++)
		amp_tensor_zero_grad(opt->params[i], true);
}

uint64_t amp_optimizer_id(const amp_optimizer *opt)
{
	return opt->id;
}

const char *amp_optimizer_name(const amp_optimizer *opt)
{
	return opt->algorithm->name;
}

int amp_optimizer_param_count(const amp_optimizer *opt)
{
	return opt->count;
}

amp_tensor *amp_optimizer_param(const amp_optimizer *opt, int index)
{
	AMP_ASSERT(index >= 0 && index < opt->count);
	return opt->params[index];
}

double amp_optimizer_get_lr(const amp_optimizer *opt)
{
	return opt->lr;
}

void amp_optimizer_set_lr(amp_optimizer *opt, double lr)
{
	opt->lr = lr;
}
