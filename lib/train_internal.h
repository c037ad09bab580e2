/* Internal header of the training part of libamp (optimizers, scaler,
 * clipping, custom ops): the optimizer object shared by optim.c and the
 * per-algorithm files, and the scaler kernel's internal entry point. */
#ifndef AMP_TRAIN_INTERNAL_H
#define AMP_TRAIN_INTERNAL_H

#include "amp_internal.h"
#include "amp_train.h"

/* amp_non_finite_check_and_unscale_ that also reports the id of the first
 * gradient holding inf/NaN into *first_non_finite (left alone when none;
 * the caller zeroes it). */
int amp_non_finite_check_and_unscale_sink(amp_tensor *const *grads, int count,
					  amp_tensor *found_inf,
					  amp_tensor *inv_scale,
					  uint64_t *first_non_finite);

/* A double as Python's f"{value}" prints it in PyTorch's messages
 * ("0.1", "1.0", "1e-05", "inf"). */
void train_format_float(char *buf, size_t size, double value);

/* Sets the calling thread's phase for the ops it dispatches next and
 * returns the one it replaces (train_phase_leave restores it).  An
 * optimizer's step and GradScaler's unscale_() and update() run their ops
 * as phase OPTIMIZER: in PyTorch they are not autograd's forward (they run
 * under no_grad, outside the model, with no sequence number), and the
 * PyTorch bridge marks Optimizer.step's ops the same way. */
enum amp_phase train_phase_enter(enum amp_phase phase);
void train_phase_leave(enum amp_phase saved);

/* ------------------------------------------------------------ optimizers */

/* The per-parameter state tensors (PyTorch's optimizer.state[p]), NULL
 * until the first step that sees the parameter's gradient. */
enum optim_slot {
	OPTIM_MOMENTUM_BUFFER = 0, /* SGD */
	OPTIM_STEP = 0,            /* Adam: 0-dim f32 step count on the CPU */
	OPTIM_EXP_AVG,
	OPTIM_EXP_AVG_SQ,
	OPTIM_MAX_EXP_AVG_SQ,
	OPTIM_SLOT_COUNT
};

struct optim_algorithm {
	const char *name;
	/* One parameter's update from its gradient (grad mode is off). */
	int (*update)(struct amp_optimizer *opt, struct amp_tensor *param,
		      struct amp_tensor *grad,
		      struct amp_tensor *state[OPTIM_SLOT_COUNT]);
};

struct amp_optimizer {
	uint64_t id;
	const struct optim_algorithm *algorithm;
	int count;
	struct amp_tensor **params;
	struct amp_tensor *(*state)[OPTIM_SLOT_COUNT];
	double lr;
	double weight_decay;
	/* SGD */
	double momentum, dampening;
	bool nesterov;
	/* Adam / AdamW */
	double beta1, beta2, eps;
	bool amsgrad;
};

/* Validates the parameter list (PyTorch's ValueErrors; each algorithm
 * checks its own hyper-parameters first) and creates the
 * object with references to the parameters; NULL on failure. */
struct amp_optimizer *optim_new(const struct optim_algorithm *algorithm,
				amp_tensor *const *params, int count, double lr);
/* Records "Invalid <what>: <value>" with Python's float spelling. */
int optim_invalid(const char *what, double value);

extern const struct optim_algorithm optim_sgd;
extern const struct optim_algorithm optim_adam;
extern const struct optim_algorithm optim_adamw;

/* ----------------------------------------------------------- GradScaler */

enum scaler_stage { STAGE_READY, STAGE_UNSCALED, STAGE_STEPPED };

/* _per_optimizer_states[id(optimizer)]: found_inf_per_device keeps the
 * order devices were first seen in, as the Python dict does. */
struct scaler_optimizer_state {
	uint64_t optimizer_id;
	enum scaler_stage stage;
	int ndevices;
	amp_tensor *found_inf[AMP_DEVICE_TYPE_COUNT];
};

struct amp_grad_scaler {
	uint64_t id;
	enum amp_device_type device; /* the constructor's device type */
	bool enabled;
	double init_scale;
	double growth_factor;
	double backoff_factor;
	int64_t growth_interval;
	int64_t init_growth_tracker;
	amp_tensor *scale;          /* 0-dim f32, lazily created */
	amp_tensor *growth_tracker; /* 0-dim i32, lazily created */
	struct scaler_optimizer_state *states;
	int nstates, capacity;
};

/* update() starts a fresh defaultdict: every optimizer is READY again. */
void scaler_reset_states(amp_grad_scaler *s);

#endif /* AMP_TRAIN_INTERNAL_H */
