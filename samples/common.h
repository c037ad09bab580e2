/* What the training samples share: flag parsing (--help exits 0, a bad
 * flag exits 2), a synthetic classification set an MLP can learn, the MLP
 * itself (f32 master weights named fc1.weight ...), loss printing in the
 * parseable form `step N loss X`, and small helpers that turn a libamp
 * failure into a message and exit 1.  Each sample keeps its own training
 * loop: the loop is the recipe it demonstrates. */
#ifndef SAMPLES_COMMON_H
#define SAMPLES_COMMON_H

#include "amp.h"

#include <stddef.h>
#include <stdint.h>

/* Flags beyond the common --steps --batch --hidden --layers --device
 * --dtype --seed --lr --help. */
enum sample_flag {
	SAMPLE_FLAG_ACCUMULATE = 1u << 0, /* --accumulate N */
	SAMPLE_FLAG_MAX_NORM = 1u << 1,   /* --max-norm X */
	SAMPLE_FLAG_THREADS = 1u << 2,    /* --threads N */
	SAMPLE_FLAG_SEQ = 1u << 3,        /* --seq N */
};

struct sample_options {
	enum amp_device_type device;
	enum amp_dtype dtype; /* autocast dtype; AMP_DTYPE_NONE = device's */
	long steps, batch, hidden, layers, seed;
	double lr;
	long accumulate, threads, seq;
	double max_norm;
};

struct sample_info {
	const char *name;
	const char *summary; /* the recipe, for --help */
	unsigned flags;      /* enum sample_flag bits accepted */
	struct sample_options defaults;
};

/* Parses argv over info->defaults; prints usage and exits 0 on --help,
 * exits 2 on anything it does not accept.  dtype is resolved to the
 * device's autocast default when not given. */
void sample_parse(int argc, char **argv, const struct sample_info *info,
		  struct sample_options *opts);

/* ------------------------------------------------------------- failures */

/* A NULL tensor or a failed status: prints "<sample>: <what>: <error>" to
 * stderr and exits 1. */
amp_tensor *sample_check(amp_tensor *t, const char *what);
void sample_check_status(int status, const char *what);
void *sample_check_ptr(void *p, const char *what);

/* --------------------------------------------------------------- data */

/* A deterministic host generator (splitmix64), independent of libamp's. */
struct sample_rng {
	uint64_t state;
};
uint64_t sample_rng_next(struct sample_rng *rng);
double sample_rng_uniform(struct sample_rng *rng);  /* [0, 1) */
double sample_rng_normal(struct sample_rng *rng);

/* Classes are Gaussian blobs around random centres: an MLP separates them
 * in a few dozen steps. */
struct sample_data {
	int features, classes;
	enum amp_device_type device;
	float *centers; /* classes x features */
	struct sample_rng rng;
};
void sample_data_init(struct sample_data *data, int features, int classes,
		      uint64_t seed, enum amp_device_type device);
/* x: (batch, features) f32, y: (batch) i64 class indices. */
void sample_data_batch(struct sample_data *data, int batch, amp_tensor **x,
		       amp_tensor **y);
void sample_data_free(struct sample_data *data);

/* ---------------------------------------------------------------- model */

/* `layers` linear layers (in -> hidden ... hidden -> out) with ReLU
 * between, PyTorch's default Linear init U(-1/sqrt(in), 1/sqrt(in)). */
struct mlp {
	int layers;
	amp_tensor **weight, **bias;
};
void mlp_init(struct mlp *m, int in, int hidden, int out, int layers,
	      struct sample_rng *rng, enum amp_device_type device,
	      const char *prefix);
amp_tensor *mlp_forward(const struct mlp *m, amp_tensor *x);
/* The parameters in order (weight, bias per layer); returns the count. */
int mlp_params(const struct mlp *m, amp_tensor **params, int capacity);
void mlp_free(struct mlp *m);

/* A leaf parameter of `shape` filled with U(-bound, bound), named. */
amp_tensor *sample_param(int ndim, const int64_t *shape, double bound,
			 struct sample_rng *rng, enum amp_device_type device,
			 const char *name);

/* cross_entropy(logits, y), mean reduction. */
amp_tensor *sample_cross_entropy(amp_tensor *logits, amp_tensor *y);

/* The usual task: the dataset, an MLP over it (--layers of width
 * --hidden, 10 classes) and its parameter list. */
#define SAMPLE_CLASSES 10
#define SAMPLE_MAX_PARAMS 256
struct sample_task {
	struct sample_rng rng;
	struct sample_data data;
	struct mlp model;
	amp_tensor *params[SAMPLE_MAX_PARAMS];
	int nparams;
};
void sample_task_init(struct sample_task *task, const struct sample_options *opts,
		      const char *prefix);
void sample_task_free(struct sample_task *task);
/* cross_entropy(model(x), y) under whatever autocast state is current. */
amp_tensor *sample_task_loss(const struct sample_task *task, amp_tensor *x,
			     amp_tensor *y);
/* SGD with momentum 0.9 over the task's parameters, at --lr. */
amp_optimizer *sample_sgd(amp_tensor *const *params, int count,
			  const struct sample_options *opts);
/* GradScaler(device) with the defaults. */
amp_grad_scaler *sample_scaler(const struct sample_options *opts);

/* ------------------------------------------------------------- running */

/* autocast(device, dtype) with a scope name shown by traces. */
void sample_autocast_enter(const struct sample_options *opts, const char *scope);
/* A disabled nested region (autocast(enabled=False)). */
void sample_autocast_disable(const struct sample_options *opts,
			     const char *scope);

/* The GradScaler calls of a recipe, one checked call each (a failure
 * prints the call's name and exits 1), so a loop reads as its Python:
 * scaler.scale(loss), .backward(), scaler.unscale_(optimizer),
 * scaler.step(optimizer), scaler.update(). */
amp_tensor *sample_scaler_scale(amp_grad_scaler *scaler, amp_tensor *loss);
void sample_backward(amp_tensor *scaled);
void sample_scaler_unscale_(amp_grad_scaler *scaler, amp_optimizer *optimizer);
void sample_scaler_step(amp_grad_scaler *scaler, amp_optimizer *optimizer);
void sample_scaler_update(amp_grad_scaler *scaler);

/* Frees the tensors of a step, in the order given. */
void sample_free_tensors(amp_tensor *const *tensors, size_t count);
#define SAMPLE_FREE_TENSORS(...)                                     \
	sample_free_tensors((amp_tensor *[]){ __VA_ARGS__ },         \
			    sizeof((amp_tensor *[]){ __VA_ARGS__ }) / \
				    sizeof(amp_tensor *))

/* The value of a 1-element tensor. */
double sample_item(const amp_tensor *t);
/* `step N loss X` on stdout (N counts from 1). */
void sample_print_loss(long step, double loss);
/* Monotonic milliseconds, this thread's CPU milliseconds (what a step
 * costs, without the time a busy machine keeps it waiting), and the
 * median of n values (sorted in place). */
double sample_now_ms(void);
double sample_cpu_ms(void);
double sample_median(double *values, int n);

#endif /* SAMPLES_COMMON_H */
