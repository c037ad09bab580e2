/* Autograd's forward half: recording the graph (called by the
 * dispatcher), PyTorch's design in small: every differentiable op whose
 * inputs require grad gets a node that keeps the tensors its formula
 * needs (autograd_saved.c) and one edge per input (the input's own node,
 * or the leaf the gradient accumulates into); custom functions attach
 * nodes of their own; the nodes' lifetime; .grad access.  The backward
 * engine that runs the graph is autograd_engine.c.  Nothing here is
 * global but the sequence counter. */
#include "autograd_internal.h"

#include <stdlib.h>
#include <string.h>

static atomic_uint_fast64_t next_sequence = 1;

/* ------------------------------------------------------- node lifetime */

/* Releasing a node can release the nodes it points to: a long chain
 * would recurse as deep as the graph, so releases queue on the thread (a
 * list through the nodes themselves: nothing to allocate, nothing left
 * behind when the thread exits) and the outermost call drains the queue. */
struct release_queue {
	struct amp_node *head;
	bool draining;
};
static _Thread_local struct release_queue releases;

static void node_destroy(struct amp_node *node)
{
	autograd_free_saved(node);
	for (int i = 0; i < node->ninputs; i++) {
		amp_node_release(node->edges[i].node);
		amp_tensor_free(node->edges[i].leaf);
	}
	if (node->custom_free)
		node->custom_free(node->custom_ctx);
	free(node->custom_name);
	free(node->edges);
	free(node->input_meta);
	free(node->saved_inputs);
	free(node);
}

void amp_node_release(struct amp_node *node)
{
	struct release_queue *q = &releases;

	if (!node)
		return;
	if (atomic_fetch_sub_explicit(&node->refcount, 1,
				      memory_order_acq_rel) != 1)
		return;
	node->next_release = q->head;
	q->head = node;
	if (q->draining)
		return;
	q->draining = true;
	while (q->head) {
		struct amp_node *next = q->head;
		q->head = next->next_release;
		node_destroy(next);
	}
	q->draining = false;
}

static struct amp_node *node_new(int ninputs)
{
	struct amp_node *node = calloc(1, sizeof *node);

	if (!node)
		return NULL;
	node->ninputs = ninputs;
	size_t n = ninputs ? (size_t)ninputs : 1;
	node->edges = calloc(n, sizeof *node->edges);
	node->input_meta = calloc(n, sizeof *node->input_meta);
	node->saved_inputs = calloc(n, sizeof *node->saved_inputs);
	if (!node->edges || !node->input_meta || !node->saved_inputs) {
		free(node->edges);
		free(node->input_meta);
		free(node->saved_inputs);
		free(node);
		return NULL;
	}
	atomic_init(&node->refcount, 1);
	node->sequence = atomic_fetch_add_explicit(&next_sequence, 1,
						   memory_order_relaxed);
	return node;
}

static void meta_of(const struct amp_tensor *t, struct amp_tensor_meta *meta)
{
	if (!t) {
		*meta = (struct amp_tensor_meta){ .ndim = -1 };
		return;
	}
	meta->dtype = t->dtype;
	meta->device = t->device;
	meta->ndim = t->ndim;
	memcpy(meta->shape, t->shape, sizeof meta->shape);
}

/* The edge to a tensor requiring grad: its node, or the leaf itself. */
static void make_edge(struct amp_edge *edge, struct amp_tensor *t)
{
	if (!t || !t->requires_grad)
		return;
	if (t->grad_fn) {
		edge->node = autograd_node_ref(t->grad_fn);
		edge->output_nr = autograd_output_nr(t->grad_fn, t);
	} else {
		edge->leaf = amp_tensor_ref(t);
	}
}

static bool is_call_input(struct amp_tensor *const *flat, int count,
			  const struct amp_tensor *t)
{
	for (int i = 0; i < count; i++)
		if (flat[i] == t)
			return true;
	return false;
}

/* Outputs that get the node: floating, marked requiring grad by the
 * dispatcher, and not one of the inputs returned as is. */
static bool takes_node(struct amp_tensor *const *flat, int count,
		       const struct amp_tensor *out)
{
	return out->requires_grad && amp_dtype_is_floating(out->dtype) &&
	       !out->grad_fn && !is_call_input(flat, count, out);
}

int amp_autograd_record(struct amp_call *call)
{
	const struct amp_grad_def *def = &amp_grad_defs[call->op];
	struct amp_tensor *flat[AMP_PLAN_MAX_ARGS];
	int count = 0;
	bool any = false;

	AMP_ASSERT(def->formula);
	for (int a = 0; a < call->nargs; a++) {
		const struct amp_arg *arg = &call->args[a];
		if (arg->kind == AMP_ARG_TENSOR ||
		    arg->kind == AMP_ARG_OPT_TENSOR)
			flat[count++] = arg->tensor;
		else if (arg->kind == AMP_ARG_TENSOR_LIST)
			for (int i = 0; i < arg->list.count; i++)
				flat[count++] = arg->list.items[i];
	}
	for (int o = 0; o < call->noutputs; o++)
		if (takes_node(flat, count, call->outputs[o]))
			any = true;
	if (!any)
		return AMP_OK;

	struct amp_node *node = node_new(count);
	if (!node)
		return amp_error(AMP_ERR_NOMEM, "out of memory recording %s",
				 def->name);
	node->op = call->op;
	node->name = def->name;
	node->forward_op_id = call->op_id;
	node->nargs = call->nargs;
	memcpy(node->args, call->args, sizeof node->args);
	for (int a = 0; a < call->nargs; a++) {
		if (node->args[a].kind == AMP_ARG_TENSOR_LIST)
			node->args[a].list.items = NULL;
		else if (node->args[a].kind == AMP_ARG_TENSOR ||
			 node->args[a].kind == AMP_ARG_OPT_TENSOR)
			node->args[a].tensor = NULL;
	}
	for (int i = 0; i < count; i++) {
		meta_of(flat[i], &node->input_meta[i]);
		make_edge(&node->edges[i], flat[i]);
		if (flat[i] && (def->save_all_inputs ||
				(def->save_inputs & AMP_GRAD_SAVE(i)))) {
			autograd_save(&node->saved_inputs[i], amp_tensor_ref(flat[i]));
			node->saved_any = true;
		}
	}
	node->noutputs = call->noutputs;
	for (int o = 0; o < call->noutputs; o++) {
		struct amp_tensor *out = call->outputs[o];
		node->output_ids[o] = out->id;
		meta_of(out, &node->output_meta[o]);
		if (def->save_outputs & AMP_GRAD_SAVE(o)) {
			struct amp_tensor *alias = autograd_tensor_alias(out);
			if (!alias) {
				amp_node_release(node);
				return amp_error(AMP_ERR_NOMEM,
						 "out of memory recording %s",
						 def->name);
			}
			autograd_save(&node->saved_outputs[o], alias);
			node->saved_any = true;
		}
	}
	for (int o = 0; o < call->noutputs; o++)
		if (takes_node(flat, count, call->outputs[o]))
			call->outputs[o]->grad_fn = autograd_node_ref(node);
	amp_node_release(node);
	return AMP_OK;
}

int amp_autograd_record_cast(struct amp_tensor *source, struct amp_tensor *cast)
{
	struct amp_node *node = node_new(1);

	if (!node)
		return amp_error(AMP_ERR_NOMEM, "out of memory recording a cast");
	node->op = AMP_OP_TO;
	node->name = amp_grad_defs[AMP_OP_TO].name;
	/* the op whose autocast made the cast */
	node->forward_op_id = amp_autocast_state()->current_op;
	node->nargs = 2;
	node->args[0] = amp_arg_tensor(NULL);
	node->args[1] = amp_arg_dtype(cast->dtype);
	meta_of(source, &node->input_meta[0]);
	make_edge(&node->edges[0], source);
	node->noutputs = 1;
	node->output_ids[0] = cast->id;
	meta_of(cast, &node->output_meta[0]);
	cast->grad_fn = node;
	return AMP_OK;
}

/* ----------------------------------------------------- custom functions */

int amp_function_attach(const struct amp_function *fn, void *ctx, int ninputs,
			amp_tensor *const *inputs, int noutputs,
			amp_tensor *const *outputs)
{
	bool requires_grad = false;

	AMP_ASSERT(fn && fn->backward && fn->name);
	AMP_ASSERT(ninputs >= 0 && ninputs <= AMP_PLAN_MAX_ARGS &&
		   (ninputs == 0 || inputs));
	AMP_ASSERT(noutputs >= 1 && noutputs <= AMP_MAX_OUTPUTS && outputs);
	if (amp_autocast_state()->grad_enabled)
		for (int i = 0; i < ninputs; i++)
			if (inputs[i] && inputs[i]->requires_grad)
				requires_grad = true;
	if (!requires_grad) {
		if (fn->ctx_free)
			fn->ctx_free(ctx);
		return AMP_OK;
	}
	struct amp_node *node = node_new(ninputs);
	char *name = strdup(fn->name);
	if (!node || !name) {
		amp_node_release(node);
		free(name);
		if (fn->ctx_free)
			fn->ctx_free(ctx);
		return amp_error(AMP_ERR_NOMEM, "out of memory recording %s",
				 fn->name);
	}
	node->op = AMP_OP_COUNT;
	node->custom_name = name;
	node->name = name;
	node->custom_backward = fn->backward;
	node->custom_free = fn->ctx_free;
	node->custom_ctx = ctx;
	node->forward_op_id = fn->forward_op_id;
	for (int i = 0; i < ninputs; i++) {
		meta_of(inputs[i], &node->input_meta[i]);
		make_edge(&node->edges[i], inputs[i]);
	}
	node->noutputs = noutputs;
	for (int o = 0; o < noutputs; o++) {
		struct amp_tensor *out = outputs[o];
		node->output_ids[o] = out->id;
		meta_of(out, &node->output_meta[o]);
		if (!amp_dtype_is_floating(out->dtype) ||
		    is_call_input(inputs, ninputs, out))
			continue;
		amp_node_release(out->grad_fn);
		out->grad_fn = autograd_node_ref(node);
		out->requires_grad = true;
		out->is_leaf = false;
	}
	amp_node_release(node);
	return AMP_OK;
}

/* -------------------------------------------------------- .grad access */

amp_tensor *amp_tensor_grad(const amp_tensor *t)
{
	AMP_ASSERT(t);
	return t->grad ? amp_tensor_ref(t->grad) : NULL;
}

int amp_tensor_set_grad(amp_tensor *t, amp_tensor *grad)
{
	AMP_ASSERT(t);
	if (grad) {
		if (grad->dtype != t->dtype)
			return amp_error(AMP_ERR_DTYPE,
					 "assigned grad has data of a different "
					 "type");
		if (grad->device != t->device)
			return amp_error(AMP_ERR_DEVICE,
					 "assigned grad has data located on a "
					 "different device");
		if (grad->ndim != t->ndim ||
		    memcmp(grad->shape, t->shape,
			   (size_t)t->ndim * sizeof *t->shape) != 0)
			return amp_error(AMP_ERR_INVALID,
					 "assigned grad has data of a different "
					 "size");
		amp_tensor_ref(grad);
	}
	amp_tensor_free(t->grad);
	t->grad = grad;
	return AMP_OK;
}

void amp_tensor_zero_grad(amp_tensor *t, bool set_to_none)
{
	AMP_ASSERT(t);
	if (!t->grad)
		return;
	if (set_to_none) {
		amp_tensor_free(t->grad);
		t->grad = NULL;
		return;
	}
	if (t->grad->requires_grad) {
		/* a gradient with a graph (create_graph): detached zeros */
		struct amp_tensor *zeros =
			amp_zeros(t->ndim, t->shape, t->dtype, t->device);
		if (zeros) {
			amp_tensor_free(t->grad);
			t->grad = zeros;
		}
		return;
	}
	struct amp_call call = {
		.op = AMP_OP_FILL_INPLACE,
		.nargs = 2,
		.args = { amp_arg_tensor(t->grad), amp_arg_scalar(0, true) },
	};
	amp_tensor_free(amp_dispatch1(&call));
}

const char *amp_tensor_grad_fn_name(const amp_tensor *t)
{
	AMP_ASSERT(t);
	return t->grad_fn ? t->grad_fn->name : NULL;
}

uint64_t amp_tensor_grad_fn_op_id(const amp_tensor *t)
{
	AMP_ASSERT(t);
	return t->grad_fn ? t->grad_fn->forward_op_id : 0;
}
