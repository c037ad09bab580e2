/* The tensors a graph node saves for its formula (autograd_internal.h),
 * PyTorch's SavedVariable in small: an input is kept as it is, an output
 * as an alias without grad_fn; each with its version when saved, so a
 * later in-place change is caught when backward unpacks it, with
 * PyTorch's message. */
#include "autograd_internal.h"
#include "cpu/cpu_ops.h" /* cpu_shape_string: PyTorch's "[2, 3]" */

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const char second_backward_message[] =
	"Trying to backward through the graph a second time (or directly "
	"access saved tensors after they have already been freed). Saved "
	"intermediate values of the graph are freed when you call .backward() "
	"or autograd.grad(). Specify retain_graph=True if you need to "
	"backward through the graph a second time or if you need to access "
	"saved tensors after calling backward.";

static void saved_free(struct amp_saved *saved)
{
	amp_tensor_free(saved->tensor);
	saved->tensor = NULL;
}

void autograd_free_saved(struct amp_node *node)
{
	for (int i = 0; i < node->ninputs; i++)
		saved_free(&node->saved_inputs[i]);
	for (int o = 0; o < node->noutputs; o++)
		saved_free(&node->saved_outputs[o]);
}

struct amp_tensor *autograd_tensor_alias(const struct amp_tensor *t)
{
	struct amp_tensor *alias = malloc(sizeof *alias);

	if (!alias)
		return NULL;
	memcpy(alias, t, sizeof *alias);
	atomic_init(&alias->refcount, 1);
	atomic_fetch_add_explicit(&alias->storage->refcount, 1,
				  memory_order_relaxed);
	if (alias->base)
		amp_tensor_ref(alias->base);
	alias->name = t->name ? strdup(t->name) : NULL;
	alias->grad = NULL;
	alias->grad_fn = NULL;
	alias->requires_grad = false;
	alias->is_leaf = true;
	return alias;
}

static int check_version(const struct amp_node *node,
			 const struct amp_saved *saved)
{
	uint64_t version = amp_tensor_version(saved->tensor);
	char shape[128];

	if (version == saved->version)
		return AMP_OK;
	return amp_error(AMP_ERR_STATE,
			 "one of the variables needed for gradient computation "
			 "has been modified by an inplace operation: [%s %s] "
			 "is at version %" PRIu64 "; expected version %" PRIu64
			 " instead. Hint: the backtrace further above shows "
			 "the operation that failed to compute its gradient "
			 "(%s).",
			 amp_dtype_torch_name(saved->tensor->dtype),
			 cpu_shape_string(saved->tensor->ndim,
					  saved->tensor->shape, shape,
					  sizeof shape),
			 version, saved->version, node->name);
}

/* Under create_graph a saved output is re-attached to the node, so the
 * formula's use of it is differentiated too (PyTorch's
 * SavedVariable::unpack). */
int autograd_unpack(struct amp_node *node, bool create_graph,
		    struct amp_tensor **inputs, struct amp_tensor **outputs)
{
	if (node->saved_any && node->saved_freed)
		return amp_error(AMP_ERR_STATE, "%s", second_backward_message);
	for (int i = 0; i < node->ninputs; i++) {
		const struct amp_saved *saved = &node->saved_inputs[i];
		if (!saved->tensor)
			continue;
		int status = check_version(node, saved);
		if (status != AMP_OK)
			return status;
		inputs[i] = amp_tensor_ref(saved->tensor);
	}
	for (int o = 0; o < node->noutputs; o++) {
		const struct amp_saved *saved = &node->saved_outputs[o];
		if (!saved->tensor)
			continue;
		int status = check_version(node, saved);
		if (status != AMP_OK)
			return status;
		if (!create_graph) {
			outputs[o] = amp_tensor_ref(saved->tensor);
			continue;
		}
		struct amp_tensor *attached = autograd_tensor_alias(saved->tensor);
		if (!attached)
			return amp_error(AMP_ERR_NOMEM,
					 "out of memory in backward");
		attached->grad_fn = autograd_node_ref(node);
		attached->requires_grad = true;
		attached->is_leaf = false;
		outputs[o] = attached;
	}
	return AMP_OK;
}
