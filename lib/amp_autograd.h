/* libamp autograd: reverse-mode differentiation of every op the runtime
 * executes (torch.autograd).  Included by amp.h; may also be included alone.
 *
 * Ownership, as everywhere in libamp:
 *   - Every `amp_tensor *` returned (directly or through an out array) is a
 *     NEW reference owned by the caller; release it with amp_tensor_free().
 *   - Tensor arguments are borrowed; the graph takes its own references to
 *     what it keeps (saved tensors, leaves it accumulates into).
 *   - Returned `const char *` strings are static.
 *   - Functions returning int return AMP_OK or a negative amp_status; the
 *     message is in amp_last_error() (PyTorch's text where PyTorch raises).
 *
 * The graph is recorded by the dispatcher: an op whose inputs require grad,
 * run while grad mode is on (amp_set_grad_enabled), gives its floating
 * outputs a graph node (grad_fn).  Autocast's casts are graph nodes too
 * (ToCopyBackward0), so gradients reach f32 leaves as f32.  Backward
 * formulas are themselves dispatched ops: they run in the dtypes the
 * forward ran in, publish OP events with phase AMP_PHASE_BACKWARD and
 * forward_op_id = the op they differentiate, and are autocast when the
 * backward is called inside an autocast region, as in PyTorch.  The engine
 * runs on the calling thread. */
#ifndef AMP_AUTOGRAD_H
#define AMP_AUTOGRAD_H

#include "amp.h"

#ifdef __cplusplus
extern "C" {
#endif

#pragma GCC visibility push(default) /* the API (see amp.h) */

/* tensor.backward(gradient, retain_graph, create_graph): accumulates the
 * gradient of `root` into the .grad of every leaf that requires grad and
 * was used to compute it.  `grad` is the gradient of root (same shape);
 * NULL means ones, allowed only for a 1-element root ("grad can be
 * implicitly created only for scalar outputs" otherwise).  Without
 * retain_graph the saved tensors of the nodes run are freed: a second
 * backward through them fails with PyTorch's "Trying to backward through
 * the graph a second time ..." (AMP_ERR_STATE).  With create_graph the
 * backward ops are themselves recorded, so the grads can be
 * differentiated again (higher-order derivatives).  A root that does not
 * require grad fails with "element 0 of tensors does not require grad and
 * does not have a grad_fn". */
int amp_backward(amp_tensor *root, amp_tensor *grad, bool retain_graph,
		 bool create_graph);

/* torch.autograd.grad(outputs, inputs, grad_outputs, retain_graph,
 * create_graph, allow_unused): computes the gradients of the sum of
 * `outputs` (weighted by grad_outputs) with respect to each of `inputs`,
 * into grads[0 .. ninputs-1] (new references), without touching any
 * .grad.  grad_outputs may be NULL, and so may each of its entries (ones,
 * for 1-element outputs).  Only the part of the graph leading to `inputs`
 * runs.  An input the outputs do not depend on fails with PyTorch's "One
 * of the differentiated Tensors appears to not have been used in the
 * graph. Set allow_unused=True if this is the desired behavior." unless
 * allow_unused, which gives NULL for it.  On failure every grads[i] is
 * NULL.  PyTorch's default for retain_graph is create_graph. */
int amp_grad(int noutputs, amp_tensor *const *outputs,
	     amp_tensor *const *grad_outputs, int ninputs,
	     amp_tensor *const *inputs, amp_tensor **grads, bool retain_graph,
	     bool create_graph, bool allow_unused);

/* tensor.grad: the accumulated gradient of a leaf (a new reference to the
 * tensor held, so in-place changes through it are seen by the leaf), or
 * NULL when none has been accumulated. */
amp_tensor *amp_tensor_grad(const amp_tensor *t);

/* tensor.grad = grad: replaces the accumulated gradient (the leaf takes a
 * reference); NULL clears it.  The gradient must have t's shape, dtype and
 * device (PyTorch's "assigned grad has data of a different type/size"). */
int amp_tensor_set_grad(amp_tensor *t, amp_tensor *grad);

/* Optimizer.zero_grad for one tensor: set_to_none drops the gradient
 * (PyTorch's default), otherwise it is filled with zeros in place. */
void amp_tensor_zero_grad(amp_tensor *t, bool set_to_none);

/* tensor.grad_fn's name, PyTorch's spelling ("AddmmBackward0",
 * "ToCopyBackward0"), or NULL for leaves and tensors not requiring grad. */
const char *amp_tensor_grad_fn_name(const amp_tensor *t);

/* The op_id of the forward op whose graph node is t's grad_fn (the
 * forward_op_id its backward events will carry), or 0 when none. */
uint64_t amp_tensor_grad_fn_op_id(const amp_tensor *t);

/* --------------------------------------- custom functions (autograd.Function) */

/* The backward of a custom function: receives one gradient per output
 * (zeros where an output got none, PyTorch's materialize_grads) and sets
 * grad_inputs[i] to a new reference for each input that needs one (NULL:
 * no gradient).  Gradients are cast to the input's dtype and summed to its
 * shape by the engine.  Ops it dispatches are backward events linked to
 * the function's forward_op_id; it runs with grad mode on only under
 * create_graph.  Returns AMP_OK or a status (the backward fails with it). */
typedef int (*amp_function_backward_fn)(void *ctx, int noutputs,
					 amp_tensor *const *grad_outputs,
					 int ninputs, amp_tensor **grad_inputs);

struct amp_function {
	const char *name;                  /* grad_fn name; copied */
	amp_function_backward_fn backward;
	void (*ctx_free)(void *ctx);       /* may be NULL */
	uint64_t forward_op_id;            /* backward events link here; 0 none */
};

/* Function.apply's graph part: call it after computing `outputs` from
 * `inputs` (normally under amp_set_grad_enabled(false)).  When grad mode
 * is on and any input requires grad, the floating outputs become non-leaf
 * tensors requiring grad whose grad_fn runs fn->backward with `ctx`; the
 * node owns ctx and calls ctx_free when it dies.  Otherwise nothing is
 * recorded and ctx is freed at once.  Returns a status (ctx is freed on
 * failure too).  At most 74 inputs and 4 outputs. */
int amp_function_attach(const struct amp_function *fn, void *ctx, int ninputs,
			amp_tensor *const *inputs, int noutputs,
			amp_tensor *const *outputs);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* AMP_AUTOGRAD_H */
