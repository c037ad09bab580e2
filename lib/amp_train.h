/* libamp training: the in-place updates optimizers are made of, SGD, Adam
 * and AdamW over f32 master weights, gradient clipping, GradScaler
 * (torch.amp.GradScaler, its state machine and error texts), and custom
 * autograd ops with torch.amp.custom_fwd/custom_bwd semantics.
 * Included by amp.h; may also be included alone.
 *
 * Ownership, as everywhere in libamp:
 *   - Every `amp_tensor *` returned is a NEW reference owned by the
 *     caller (amp_tensor_free); tensor arguments are borrowed.
 *   - Handles (amp_optimizer, amp_grad_scaler, amp_custom_op) come from
 *     their _new function and are released by their _free, which accepts
 *     NULL.  An optimizer holds a reference to each of its parameters and
 *     to its state tensors until it is freed.
 *   - Functions returning int return AMP_OK or a negative amp_status;
 *     amp_last_error() then holds the message, PyTorch's text where
 *     PyTorch raises (e.g. "unscale_() has already been called on this
 *     optimizer since the last update().").
 * Everything here runs through the dispatcher, so traces see each update
 * (add_, mul_, lerp_, addcdiv_, _amp_update_scale_, ...). */
#ifndef AMP_TRAIN_H
#define AMP_TRAIN_H

#include "amp.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default) /* the API (see amp.h) */

/* ------------------------------------------------------- in-place updates */

/* ATen's in-place ops: self keeps its shape and dtype, the other operands
 * broadcast to it, the maths runs in the opmath of the common dtype.  They
 * bump self's version and are never autocast.  With grad mode on they
 * refuse an operand that requires grad ("a leaf Variable that requires
 * grad is being used in an in-place operation."): run them, as
 * optimizers do, under amp_set_grad_enabled(false). */
int amp_add_(amp_tensor *self, amp_tensor *other, double alpha); /* self += alpha * other */
int amp_add_scalar_(amp_tensor *self, double other);
int amp_mul_(amp_tensor *self, amp_tensor *other);
int amp_mul_scalar_(amp_tensor *self, double other);
int amp_div_scalar_(amp_tensor *self, double other);
/* self += value * tensor1 * tensor2  /  self += value * tensor1 / tensor2 */
int amp_addcmul_(amp_tensor *self, amp_tensor *tensor1, amp_tensor *tensor2,
		 double value);
int amp_addcdiv_(amp_tensor *self, amp_tensor *tensor1, amp_tensor *tensor2,
		 double value);
/* self += weight * (end - self), ATen's two-sided formula */
int amp_lerp_(amp_tensor *self, amp_tensor *end, double weight);
/* NAN for an absent bound (PyTorch's None); not both. */
int amp_clamp_(amp_tensor *self, double min, double max);
int amp_fill_(amp_tensor *self, double value);
int amp_copy_(amp_tensor *self, amp_tensor *src);
/* torch.maximum(self, other, out=out) */
int amp_maximum_out(amp_tensor *self, amp_tensor *other, amp_tensor *out);

/* Out-of-place maths used by optimizers and clipping. */
amp_tensor *amp_sqrt(amp_tensor *a);
amp_tensor *amp_reciprocal(amp_tensor *a);
amp_tensor *amp_clamp(amp_tensor *a, double min, double max); /* NAN = None */
/* torch.linalg.vector_norm(a, ord) over all elements; dtype may be
 * AMP_DTYPE_NONE.  ord may be INFINITY or -INFINITY. */
amp_tensor *amp_linalg_vector_norm(amp_tensor *a, double ord,
				   enum amp_dtype dtype);

/* torch._amp_foreach_non_finite_check_and_unscale_: multiplies every
 * gradient by inv_scale in place (skipping the multiply when inv_scale is
 * 1) and sets found_inf to 1.0 when any element is inf or NaN (it never
 * clears it).  Gradients are unscaled even when inf/NaN is found. */
int amp_non_finite_check_and_unscale_(amp_tensor *const *grads, int count,
				      amp_tensor *found_inf,
				      amp_tensor *inv_scale);
/* torch._amp_update_scale_: on found_inf != 0 scale *= backoff_factor and
 * the tracker resets; otherwise the tracker is incremented and, when it
 * reaches growth_interval, scale *= growth_factor (kept only if finite)
 * and the tracker resets.  Products in f64 rounded to f32. */
int amp_update_scale_(amp_tensor *scale, amp_tensor *growth_tracker,
		      amp_tensor *found_inf, double growth_factor,
		      double backoff_factor, int64_t growth_interval);

/* ------------------------------------------------------------ optimizers */

typedef struct amp_optimizer amp_optimizer;

/* torch.optim.SGD(params, lr, momentum, dampening, weight_decay,
 * nesterov).  Parameters must be leaves; they stay in their dtype (f32
 * master weights: autocast casts them per op).  NULL on PyTorch's
 * ValueErrors ("Invalid learning rate: -0.1", "optimizer got an empty
 * parameter list", "Nesterov momentum requires a momentum and zero
 * dampening", "can't optimize a non-leaf Tensor"). */
amp_optimizer *amp_sgd_new(amp_tensor *const *params, int count, double lr,
			   double momentum, double dampening,
			   double weight_decay, bool nesterov);

/* torch.optim.Adam / AdamW hyper-parameters. */
struct amp_adam_opts {
	double lr;
	double beta1, beta2;
	double eps;
	double weight_decay; /* Adam: L2 added to the gradient; AdamW: decoupled */
	bool amsgrad;
};
#define AMP_ADAM_OPTS                                                        \
	((struct amp_adam_opts){ .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999,    \
				 .eps = 1e-8, .weight_decay = 0.0,            \
				 .amsgrad = false })
#define AMP_ADAMW_OPTS                                                       \
	((struct amp_adam_opts){ .lr = 1e-3, .beta1 = 0.9, .beta2 = 0.999,    \
				 .eps = 1e-8, .weight_decay = 1e-2,           \
				 .amsgrad = false })
/* NULL opts = the defaults above.  NULL on PyTorch's ValueErrors. */
amp_optimizer *amp_adam_new(amp_tensor *const *params, int count,
			    const struct amp_adam_opts *opts);
amp_optimizer *amp_adamw_new(amp_tensor *const *params, int count,
			     const struct amp_adam_opts *opts);

void amp_optimizer_free(amp_optimizer *opt);
/* optimizer.step(): updates every parameter that has a gradient, with
 * grad mode off (the updates are dispatched in-place ops). */
int amp_optimizer_step(amp_optimizer *opt);
/* optimizer.zero_grad() with PyTorch's default set_to_none=True. */
void amp_optimizer_zero_grad(amp_optimizer *opt);
/* Unique in the process (the scaler's per-optimizer key, hook events). */
uint64_t amp_optimizer_id(const amp_optimizer *opt);
const char *amp_optimizer_name(const amp_optimizer *opt); /* "SGD", "Adam", "AdamW" */
int amp_optimizer_param_count(const amp_optimizer *opt);
amp_tensor *amp_optimizer_param(const amp_optimizer *opt, int index); /* borrowed */
double amp_optimizer_get_lr(const amp_optimizer *opt);
void amp_optimizer_set_lr(amp_optimizer *opt, double lr);

/* ------------------------------------------------------------- clipping */

/* torch.nn.utils.clip_grad_norm_: the norm_type-norm of all gradients
 * together (norms of each, stacked, normed), then every gradient is
 * multiplied by min(max_norm / (total_norm + 1e-6), 1.0) computed as
 * PyTorch does (reciprocal, mul, clamp in f32).  Returns the total norm
 * (a 0-dim tensor; 0.0 when no parameter has a gradient), or NULL.  With
 * error_if_nonfinite a NaN/inf total norm fails with PyTorch's text and
 * leaves the gradients alone. */
amp_tensor *amp_clip_grad_norm_(amp_tensor *const *params, int count,
				double max_norm, double norm_type,
				bool error_if_nonfinite);
/* torch.nn.utils.clip_grad_value_: clamps every gradient to
 * [-clip_value, clip_value]. */
int amp_clip_grad_value_(amp_tensor *const *params, int count,
			 double clip_value);

/* ----------------------------------------------------------- GradScaler */

typedef struct amp_grad_scaler amp_grad_scaler;

/* torch.amp.GradScaler(device, init_scale, growth_factor, backoff_factor,
 * growth_interval, enabled).  Device cuda works on the emulated device
 * (it is CUDA for every purpose here). */
struct amp_grad_scaler_opts {
	enum amp_device_type device;
	double init_scale;
	double growth_factor;
	double backoff_factor;
	int64_t growth_interval;
	bool enabled;
};
#define AMP_GRAD_SCALER_OPTS(dev)                                            \
	((struct amp_grad_scaler_opts){ .device = (dev),                     \
					.init_scale = 65536.0,               \
					.growth_factor = 2.0,                \
					.backoff_factor = 0.5,               \
					.growth_interval = 2000,             \
					.enabled = true })

/* NULL opts = AMP_GRAD_SCALER_OPTS(AMP_DEVICE_CUDA).  NULL when enabled
 * with growth_factor <= 1 ("The growth factor must be > 1.0.") or
 * backoff_factor >= 1 ("The backoff factor must be < 1.0."). */
amp_grad_scaler *amp_grad_scaler_new(const struct amp_grad_scaler_opts *opts);
void amp_grad_scaler_free(amp_grad_scaler *scaler);
uint64_t amp_grad_scaler_id(const amp_grad_scaler *scaler);

/* scaler.scale(outputs): outputs * scale (a new tensor; the result dtype
 * follows promotion with the 0-dim f32 scale).  The first call creates the
 * scale (0-dim f32) and growth tracker (0-dim i32) on the output's device.
 * Disabled: a new reference to outputs itself. */
amp_tensor *amp_grad_scaler_scale(amp_grad_scaler *scaler, amp_tensor *outputs);
/* The list form: scaled[i] = scale(outputs[i]), one scale copy per device. */
int amp_grad_scaler_scale_list(amp_grad_scaler *scaler,
			       amp_tensor *const *outputs, int count,
			       amp_tensor **scaled);
/* scaler.unscale_(optimizer): divides the optimizer's gradients by the
 * scale in place (inv_scale = f32(1 / f64(scale))) and records found_inf
 * per device.  Once per optimizer between updates. */
int amp_grad_scaler_unscale_(amp_grad_scaler *scaler, amp_optimizer *opt);
/* scaler.step(optimizer): unscale_ first unless done, then the optimizer's
 * step unless any gradient held inf/NaN.  *stepped (may be NULL) tells
 * whether the step ran.  Disabled: a plain optimizer step. */
int amp_grad_scaler_step(amp_grad_scaler *scaler, amp_optimizer *opt,
			 bool *stepped);
/* scaler.update(): _amp_update_scale_ with the found_inf of every
 * optimizer stepped since the last update, summed; resets every
 * optimizer's state to READY. */
int amp_grad_scaler_update(amp_grad_scaler *scaler);
/* scaler.update(new_scale): sets the scale (growth tracker untouched). */
int amp_grad_scaler_update_with(amp_grad_scaler *scaler, double new_scale);
/* scaler.update(tensor): a 1-element tensor on the scaler's device type
 * that does not require grad, copied into the scale. */
int amp_grad_scaler_update_with_tensor(amp_grad_scaler *scaler,
				       amp_tensor *new_scale);

/* get_scale(): the scale as a double (init_scale before the first
 * scale(), 1.0 when disabled). */
double amp_grad_scaler_get_scale(const amp_grad_scaler *scaler);
/* The scale and tracker tensors (borrowed; NULL before the first scale()). */
amp_tensor *amp_grad_scaler_scale_tensor(const amp_grad_scaler *scaler);
amp_tensor *amp_grad_scaler_growth_tracker_tensor(const amp_grad_scaler *scaler);
/* _get_growth_tracker(): consecutive clean steps (0 when disabled). */
int64_t amp_grad_scaler_growth_tracker(const amp_grad_scaler *scaler);
bool amp_grad_scaler_is_enabled(const amp_grad_scaler *scaler);
double amp_grad_scaler_get_growth_factor(const amp_grad_scaler *scaler);
void amp_grad_scaler_set_growth_factor(amp_grad_scaler *scaler, double factor);
double amp_grad_scaler_get_backoff_factor(const amp_grad_scaler *scaler);
void amp_grad_scaler_set_backoff_factor(amp_grad_scaler *scaler, double factor);
int64_t amp_grad_scaler_get_growth_interval(const amp_grad_scaler *scaler);
void amp_grad_scaler_set_growth_interval(amp_grad_scaler *scaler,
					 int64_t interval);

/* state_dict(): a disabled scaler saves an empty state ({}). */
struct amp_grad_scaler_state {
	bool empty;
	double scale;
	double growth_factor;
	double backoff_factor;
	int64_t growth_interval;
	int64_t growth_tracker; /* "_growth_tracker" */
};
void amp_grad_scaler_state_dict(const amp_grad_scaler *scaler,
				struct amp_grad_scaler_state *state);
/* load_state_dict(): a no-op when disabled; an empty state fails with
 * "The source state dict is empty, possibly because it was saved from a
 * disabled instance of GradScaler.". */
int amp_grad_scaler_load_state_dict(amp_grad_scaler *scaler,
				    const struct amp_grad_scaler_state *state);

/* ----------------------------------------------------------- custom ops */

/* torch.autograd.Function with torch.amp.custom_fwd / custom_bwd:
 *   - cast_inputs AMP_DTYPE_NONE: the forward runs under the current
 *     autocast state; the backward runs under the state the forward saw
 *     (autocast(device, enabled = forward's, dtype = forward's)).
 *   - cast_inputs a dtype: inside an autocast region of `device`, the
 *     floating (non-f64) inputs on that device are cast to it and the
 *     forward runs with autocast off; the backward runs with autocast off.
 *   - outside autocast both are no-ops: forward and backward run as is.
 * The forward runs with grad mode off (Function.forward); its outputs get
 * a graph node whose backward is the op's backward. */
typedef struct amp_custom_op amp_custom_op;
typedef struct amp_custom_ctx amp_custom_ctx;

/* Computes outputs[0 .. noutputs-1] (new references) from inputs (the
 * cast ones under cast_inputs).  Returns AMP_OK or a status. */
typedef int (*amp_custom_forward_fn)(amp_custom_ctx *ctx, int ninputs,
				     amp_tensor *const *inputs, int noutputs,
				     amp_tensor **outputs);
/* Sets grad_inputs[i] (new references, NULL = no gradient) from one
 * gradient per output; the engine casts each to its input's dtype. */
typedef int (*amp_custom_backward_fn)(amp_custom_ctx *ctx, int noutputs,
				      amp_tensor *const *grad_outputs,
				      int ninputs, amp_tensor **grad_inputs);

struct amp_custom_op_def {
	const char *name;          /* "MyMM": grad_fn "MyMMBackward"; copied */
	enum amp_device_type device;  /* custom_fwd(device_type=...) */
	enum amp_dtype cast_inputs;   /* AMP_DTYPE_NONE: no casting */
	int ninputs, noutputs;
	amp_custom_forward_fn forward;
	amp_custom_backward_fn backward;
	void *user;                /* handed to both through the ctx */
};

amp_custom_op *amp_custom_op_new(const struct amp_custom_op_def *def);
void amp_custom_op_free(amp_custom_op *op);
/* Function.apply(inputs): outputs[0 .. noutputs-1] get new references. */
int amp_custom_op_apply(amp_custom_op *op, amp_tensor *const *inputs,
			amp_tensor **outputs);

/* ctx.save_for_backward(tensors): the ctx keeps references. */
int amp_custom_ctx_save_for_backward(amp_custom_ctx *ctx, int count,
				     amp_tensor *const *tensors);
int amp_custom_ctx_saved_count(const amp_custom_ctx *ctx);
amp_tensor *amp_custom_ctx_saved(const amp_custom_ctx *ctx, int index); /* borrowed */
void *amp_custom_ctx_user(const amp_custom_ctx *ctx);
/* ctx._dtype and ctx._fwd_used_autocast, as custom_fwd records them. */
enum amp_dtype amp_custom_ctx_autocast_dtype(const amp_custom_ctx *ctx);
bool amp_custom_ctx_fwd_used_autocast(const amp_custom_ctx *ctx);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* AMP_TRAIN_H */
