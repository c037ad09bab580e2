/* The backward engine (amp_backward, amp_grad), PyTorch's design in
 * small: it finds the nodes reachable from the roots, counts
 * dependencies, and runs each node once all its gradients have arrived
 * (later-created nodes first among the ready ones), with the thread's
 * phase set to backward and linked to the node's forward op, so every op
 * a formula dispatches is a backward event; gradients are summed to each
 * input's shape and cast to its dtype (validate_outputs), and accumulate
 * into the leaves' .grad at the end.  The engine runs on the calling
 * thread; nothing here is global but the lock that serialises
 * accumulation into .grad. */
#include "autograd_internal.h"
#include "cpu/cpu_ops.h" /* cpu_shape_string: PyTorch's "[2, 3]" */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------- the engine's maps */

/* Open addressing from a pointer (node or leaf) to an index. */
struct ptr_map {
	const void **keys;
	int *values;
	size_t capacity; /* a power of two */
	size_t count;
};

static size_t ptr_hash(const void *p, size_t capacity)
{
	uint64_t x = (uint64_t)(uintptr_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (capacity - 1);
}

static int ptr_map_get(const struct ptr_map *map, const void *key)
{
	if (!map->capacity)
		return -1;
	for (size_t i = ptr_hash(key, map->capacity);;
	     i = (i + 1) & (map->capacity - 1)) {
		if (!map->keys[i])
			return -1;
		if (map->keys[i] == key)
			return map->values[i];
	}
}

static int ptr_map_put(struct ptr_map *map, const void *key, int value)
{
	if ((map->count + 1) * 2 > map->capacity) {
		struct ptr_map bigger = { .capacity = map->capacity
							      ? map->capacity * 2
							      : 64 };
		bigger.keys = calloc(bigger.capacity, sizeof *bigger.keys);
		bigger.values = calloc(bigger.capacity, sizeof *bigger.values);
		if (!bigger.keys || !bigger.values) {
			free(bigger.keys);
			free(bigger.values);
			return amp_error(AMP_ERR_NOMEM,
					 "out of memory in backward");
		}
		for (size_t i = 0; i < map->capacity; i++)
			if (map->keys[i])
				ptr_map_put(&bigger, map->keys[i],
					    map->values[i]);
		free(map->keys);
		free(map->values);
		*map = bigger;
	}
	size_t i = ptr_hash(key, map->capacity);
	while (map->keys[i] && map->keys[i] != key)
		i = (i + 1) & (map->capacity - 1);
	if (!map->keys[i])
		map->count++;
	map->keys[i] = key;
	map->values[i] = value;
	return AMP_OK;
}

static void ptr_map_free(struct ptr_map *map)
{
	free(map->keys);
	free(map->values);
}

/* ------------------------------------------------------------ the engine */

struct task {
	struct amp_node *node;  /* borrowed: the graph keeps it alive */
	int dependencies;       /* edges from reachable nodes not run yet */
	bool runs;              /* leads to what is wanted */
	bool captured;          /* amp_grad wants one of its outputs */
	struct amp_tensor *buffer[AMP_MAX_OUTPUTS]; /* summed gradients */
};

struct leaf_slot {
	struct amp_tensor *leaf; /* borrowed from the edges */
	struct amp_tensor *buffer;
	int capture;             /* amp_grad input index, or -1 */
};

/* An amp_grad input: a leaf, or an output of a node. */
struct capture {
	struct amp_tensor *input;
	int task;                /* non-leaf inputs: the task of grad_fn */
	int output_nr;
	struct amp_tensor *grad;
};

struct engine {
	bool accumulate;         /* backward(): into .grad */
	bool retain_graph;
	bool create_graph;
	struct task *tasks;
	int ntasks, task_capacity;
	struct ptr_map task_index;
	struct leaf_slot *leaves;
	int nleaves, leaf_capacity;
	struct ptr_map leaf_index;
	struct capture *captures;
	int ncaptures;
};

static int add_task(struct engine *e, struct amp_node *node)
{
	if (e->ntasks == e->task_capacity) {
		int capacity = e->task_capacity ? e->task_capacity * 2 : 32;
		struct task *tasks =
			realloc(e->tasks, (size_t)capacity * sizeof *tasks);
		if (!tasks)
			return amp_error(AMP_ERR_NOMEM,
					 "out of memory in backward");
		e->tasks = tasks;
		e->task_capacity = capacity;
	}
	e->tasks[e->ntasks] = (struct task){ .node = node };
	int status = ptr_map_put(&e->task_index, node, e->ntasks);
	if (status != AMP_OK)
		return status;
	return e->ntasks++;
}

static int leaf_slot(struct engine *e, struct amp_tensor *leaf, bool create)
{
	int index = ptr_map_get(&e->leaf_index, leaf);

	if (index >= 0 || !create)
		return index;
	if (e->nleaves == e->leaf_capacity) {
		int capacity = e->leaf_capacity ? e->leaf_capacity * 2 : 32;
		struct leaf_slot *leaves =
			realloc(e->leaves, (size_t)capacity * sizeof *leaves);
		if (!leaves)
			return amp_error(AMP_ERR_NOMEM,
					 "out of memory in backward");
		e->leaves = leaves;
		e->leaf_capacity = capacity;
	}
	e->leaves[e->nleaves] =
		(struct leaf_slot){ .leaf = leaf, .capture = -1 };
	int status = ptr_map_put(&e->leaf_index, leaf, e->nleaves);
	if (status != AMP_OK)
		return status;
	return e->nleaves++;
}

static void engine_free(struct engine *e)
{
	for (int t = 0; t < e->ntasks; t++)
		for (int o = 0; o < AMP_MAX_OUTPUTS; o++)
			amp_tensor_free(e->tasks[t].buffer[o]);
	for (int l = 0; l < e->nleaves; l++)
		amp_tensor_free(e->leaves[l].buffer);
	for (int c = 0; c < e->ncaptures; c++)
		amp_tensor_free(e->captures[c].grad);
	free(e->tasks);
	free(e->leaves);
	free(e->captures);
	ptr_map_free(&e->task_index);
	ptr_map_free(&e->leaf_index);
}

/* Every node reachable from the roots, with dependency counts. */
static int discover(struct engine *e, int nroots, struct amp_node *const *roots)
{
	struct amp_node **stack = NULL;
	int depth = 0, capacity = 0, status = AMP_OK;

	for (int r = 0; r < nroots; r++) {
		if (!roots[r] || ptr_map_get(&e->task_index, roots[r]) >= 0)
			continue;
		status = add_task(e, roots[r]);
		if (status < 0)
			goto out;
		if (depth == capacity) {
			capacity = capacity ? capacity * 2 : 64;
			struct amp_node **grown =
				realloc(stack, (size_t)capacity * sizeof *stack);
			if (!grown) {
				status = amp_error(AMP_ERR_NOMEM,
						   "out of memory in backward");
				goto out;
			}
			stack = grown;
		}
		stack[depth++] = roots[r];
		while (depth) {
			struct amp_node *node = stack[--depth];
			for (int i = 0; i < node->ninputs; i++) {
				struct amp_node *next = node->edges[i].node;
				if (!next)
					continue;
				int index = ptr_map_get(&e->task_index, next);
				if (index < 0) {
					index = add_task(e, next);
					if (index < 0) {
						status = index;
						goto out;
					}
					if (depth == capacity) {
						capacity *= 2;
						struct amp_node **grown = realloc(
							stack, (size_t)capacity *
								       sizeof *stack);
						if (!grown) {
							status = amp_error(
								AMP_ERR_NOMEM,
								"out of memory in "
								"backward");
							goto out;
						}
						stack = grown;
					}
					stack[depth++] = next;
				}
				e->tasks[index].dependencies++;
			}
		}
	}
	status = AMP_OK;
out:
	free(stack);
	return status;
}

/* amp_grad: a node runs only when it leads to a wanted input.  Decided in
 * reverse topological order (inputs' nodes before the nodes using them). */
static int mark_runs(struct engine *e)
{
	int *order = malloc((size_t)(e->ntasks ? e->ntasks : 1) * sizeof *order);
	int *pending = malloc((size_t)(e->ntasks ? e->ntasks : 1) *
			      sizeof *pending);
	int head = 0, tail = 0;

	if (!order || !pending) {
		free(order);
		free(pending);
		return amp_error(AMP_ERR_NOMEM, "out of memory in backward");
	}
	for (int t = 0; t < e->ntasks; t++) {
		pending[t] = e->tasks[t].dependencies;
		if (!pending[t])
			order[tail++] = t;
	}
	while (head < tail) {
		const struct amp_node *node = e->tasks[order[head++]].node;
		for (int i = 0; i < node->ninputs; i++) {
			if (!node->edges[i].node)
				continue;
			int next = ptr_map_get(&e->task_index,
					       node->edges[i].node);
			if (--pending[next] == 0)
				order[tail++] = next;
		}
	}
	for (int k = tail - 1; k >= 0; k--) {
		struct task *task = &e->tasks[order[k]];
		const struct amp_node *node = task->node;
		for (int i = 0; i < node->ninputs && !task->runs; i++) {
			const struct amp_edge *edge = &node->edges[i];
			if (edge->node) {
				const struct task *next =
					&e->tasks[ptr_map_get(&e->task_index,
							      edge->node)];
				task->runs = next->runs || next->captured;
			} else if (edge->leaf) {
				int slot = leaf_slot(e, edge->leaf, false);
				task->runs = slot >= 0 &&
					     e->leaves[slot].capture >= 0;
			}
		}
	}
	free(order);
	free(pending);
	return AMP_OK;
}

/* Sets the thread up to run ops on behalf of `node` (or of the engine
 * itself when forward_op_id is 0). */
struct engine_state {
	enum amp_phase phase;
	uint64_t backward_of;
	bool grad_enabled;
};

static struct engine_state enter_backward(uint64_t forward_op_id,
					  bool create_graph)
{
	struct amp_autocast_tls *st = amp_autocast_state();
	struct engine_state saved = { st->phase, st->backward_of,
				      st->grad_enabled };

	st->phase = AMP_PHASE_BACKWARD;
	st->backward_of = forward_op_id;
	st->grad_enabled = create_graph;
	return saved;
}

static void leave_backward(struct engine_state saved)
{
	struct amp_autocast_tls *st = amp_autocast_state();

	st->phase = saved.phase;
	st->backward_of = saved.backward_of;
	st->grad_enabled = saved.grad_enabled;
}

/* Sums a gradient into a buffer slot (out of place, as InputBuffer does).
 * Takes ownership of grad. */
static int buffer_add(struct amp_tensor **slot, struct amp_tensor *grad)
{
	if (!*slot) {
		*slot = grad;
		return AMP_OK;
	}
	struct amp_tensor *sum = amp_add(*slot, grad);
	amp_tensor_free(grad);
	if (!sum)
		return amp_last_status();
	amp_tensor_free(*slot);
	*slot = sum;
	return AMP_OK;
}

/* PyTorch's validate_outputs: the gradient of input i takes the input's
 * shape (summing broadcast dimensions), dtype and device.  Takes
 * ownership of grad; *out is a new reference. */
static int validate(const struct amp_node *node, int i,
		    struct amp_tensor *grad, struct amp_tensor **out)
{
	const struct amp_tensor_meta *meta = &node->input_meta[i];
	bool same_shape = grad->ndim == meta->ndim &&
			  memcmp(grad->shape, meta->shape,
				 (size_t)meta->ndim * sizeof *meta->shape) == 0;

	*out = NULL;
	if (!same_shape) {
		struct amp_tensor *reduced =
			grad_sum_to(grad, meta->ndim, meta->shape);
		if (!reduced) {
			char got[128], want[128];
			amp_error(AMP_ERR_INVALID,
				  "Function %s returned an invalid gradient at "
				  "index %d - got %s but expected shape "
				  "compatible with %s",
				  node->name, i,
				  cpu_shape_string(grad->ndim, grad->shape, got,
						   sizeof got),
				  cpu_shape_string(meta->ndim, meta->shape, want,
						   sizeof want));
			amp_tensor_free(grad);
			return AMP_ERR_INVALID;
		}
		amp_tensor_free(grad);
		grad = reduced;
	}
	if (grad->dtype != meta->dtype) {
		struct amp_tensor *cast = amp_to(grad, meta->dtype);
		amp_tensor_free(grad);
		if (!cast)
			return amp_last_status();
		grad = cast;
	}
	if (grad->device != meta->device) {
		struct amp_tensor *moved = amp_to_device(grad, meta->device);
		amp_tensor_free(grad);
		if (!moved)
			return amp_last_status();
		grad = moved;
	}
	*out = grad;
	return AMP_OK;
}

static bool edge_wanted(struct engine *e, const struct amp_edge *edge)
{
	if (e->accumulate)
		return edge->node || edge->leaf;
	if (edge->node) {
		const struct task *next =
			&e->tasks[ptr_map_get(&e->task_index, edge->node)];
		return next->runs || next->captured;
	}
	if (edge->leaf) {
		int slot = leaf_slot(e, edge->leaf, false);
		return slot >= 0 && e->leaves[slot].capture >= 0;
	}
	return false;
}

static int call_formula(struct amp_node *node, struct amp_grad_ctx *ctx)
{
	if (!node->custom_backward)
		return amp_grad_defs[node->op].formula(ctx);

	/* custom functions see zeros for outputs that got no gradient */
	struct amp_tensor *grads[AMP_MAX_OUTPUTS] = { 0 };
	int status = AMP_OK;
	for (int o = 0; o < node->noutputs && status == AMP_OK; o++) {
		const struct amp_tensor_meta *meta = &node->output_meta[o];
		grads[o] = ctx->grad_outputs[o]
				   ? amp_tensor_ref(ctx->grad_outputs[o])
				   : amp_zeros(meta->ndim, meta->shape,
					       meta->dtype, meta->device);
		if (!grads[o])
			status = amp_last_status();
	}
	if (status == AMP_OK)
		status = node->custom_backward(node->custom_ctx, node->noutputs,
					       grads, node->ninputs,
					       ctx->grad_inputs);
	for (int o = 0; o < node->noutputs; o++)
		amp_tensor_free(grads[o]);
	return status;
}

/* Runs one node: its formula, validate_outputs, then hands each input
 * gradient to the next node's buffer or to the leaf's slot. */
static int run_task(struct engine *e, int index)
{
	struct task *task = &e->tasks[index];
	struct amp_node *node = task->node;
	int n = node->ninputs;
	struct amp_tensor *saved_inputs[AMP_PLAN_MAX_ARGS] = { 0 };
	struct amp_tensor *saved_outputs[AMP_MAX_OUTPUTS] = { 0 };
	struct amp_tensor *grads[AMP_PLAN_MAX_ARGS] = { 0 };
	bool needs[AMP_PLAN_MAX_ARGS] = { 0 };
	bool any_grad = false, any_need = false;
	int status;

	for (int o = 0; o < node->noutputs; o++)
		if (task->buffer[o])
			any_grad = true;
	for (int i = 0; i < n; i++)
		any_need |= needs[i] = edge_wanted(e, &node->edges[i]);
	if (!any_grad || !any_need)
		return AMP_OK;

	struct engine_state state =
		enter_backward(node->forward_op_id, e->create_graph);
	status = autograd_unpack(node, e->create_graph, saved_inputs, saved_outputs);
	if (status == AMP_OK) {
		struct amp_grad_ctx ctx = {
			.node = node,
			.grad_outputs = task->buffer,
			.grad_inputs = grads,
			.inputs = saved_inputs,
			.outputs = saved_outputs,
			.needs = needs,
			.create_graph = e->create_graph,
		};
		status = call_formula(node, &ctx);
	}
	for (int i = 0; i < n; i++)
		amp_tensor_free(saved_inputs[i]);
	for (int o = 0; o < node->noutputs; o++)
		amp_tensor_free(saved_outputs[o]);
	for (int i = 0; i < n && status == AMP_OK; i++) {
		if (!grads[i])
			continue;
		struct amp_tensor *grad = grads[i];
		grads[i] = NULL;
		if (!needs[i]) {
			amp_tensor_free(grad);
			continue;
		}
		status = validate(node, i, grad, &grads[i]);
	}
	/* only nodes that saved something: cast nodes the weight cache
	 * shares between threads' graphs are never written here */
	if (!e->retain_graph && node->saved_any) {
		autograd_free_saved(node);
		node->saved_freed = true;
	}
	for (int i = 0; i < n; i++) {
		struct amp_tensor *grad = grads[i];
		const struct amp_edge *edge = &node->edges[i];
		grads[i] = NULL;
		if (!grad)
			continue;
		if (status != AMP_OK) {
			amp_tensor_free(grad);
			continue;
		}
		if (edge->node) {
			struct task *next =
				&e->tasks[ptr_map_get(&e->task_index,
						      edge->node)];
			status = buffer_add(&next->buffer[edge->output_nr],
					    grad);
		} else {
			int slot = leaf_slot(e, edge->leaf, e->accumulate);
			if (slot < 0) {
				amp_tensor_free(grad);
				status = slot == -1 ? AMP_OK : slot;
				continue;
			}
			status = buffer_add(&e->leaves[slot].buffer, grad);
		}
	}
	leave_backward(state);
	return status;
}

/* amp_grad wants the gradient of a non-leaf input once its node has
 * received everything. */
static void take_captures(struct engine *e, int index)
{
	for (int c = 0; c < e->ncaptures; c++) {
		struct capture *capture = &e->captures[c];
		if (capture->task != index)
			continue;
		struct amp_tensor *grad =
			e->tasks[index].buffer[capture->output_nr];
		capture->grad = grad ? amp_tensor_ref(grad) : NULL;
	}
}

static int execute(struct engine *e)
{
	int *ready = malloc((size_t)(e->ntasks ? e->ntasks : 1) * sizeof *ready);
	int nready = 0, status = AMP_OK;

	if (!ready)
		return amp_error(AMP_ERR_NOMEM, "out of memory in backward");
	for (int t = 0; t < e->ntasks; t++)
		if (!e->tasks[t].dependencies)
			ready[nready++] = t;
	while (nready && status == AMP_OK) {
		int best = 0;
		for (int r = 1; r < nready; r++)
			if (e->tasks[ready[r]].node->sequence >
			    e->tasks[ready[best]].node->sequence)
				best = r;
		int index = ready[best];
		ready[best] = ready[--nready];
		struct task *task = &e->tasks[index];
		if (task->captured)
			take_captures(e, index);
		if (e->accumulate || task->runs)
			status = run_task(e, index);
		task = &e->tasks[index];
		for (int o = 0; o < AMP_MAX_OUTPUTS; o++) {
			amp_tensor_free(task->buffer[o]);
			task->buffer[o] = NULL;
		}
		const struct amp_node *node = task->node;
		for (int i = 0; i < node->ninputs; i++) {
			if (!node->edges[i].node)
				continue;
			int next = ptr_map_get(&e->task_index,
					       node->edges[i].node);
			if (--e->tasks[next].dependencies == 0)
				ready[nready++] = next;
		}
	}
	free(ready);
	return status;
}

/* AccumulateGrad: the first gradient is stolen when nobody else holds it
 * (else copied); later ones are added in place (out of place under
 * create_graph, so the sum stays differentiable). */
static int accumulate_grad(struct amp_tensor *leaf, struct amp_tensor *grad,
			   bool create_graph)
{
	if (!leaf->grad) {
		if (!create_graph &&
		    atomic_load_explicit(&grad->refcount,
					 memory_order_relaxed) == 1 &&
		    !grad->base && !grad->requires_grad &&
		    amp_tensor_is_contiguous(grad)) {
			leaf->grad = amp_tensor_ref(grad);
			return AMP_OK;
		}
		leaf->grad = amp_clone(grad);
		return leaf->grad ? AMP_OK : amp_last_status();
	}
	if (!create_graph && !leaf->grad->requires_grad) {
		struct amp_call call = {
			.op = AMP_OP_ADD_INPLACE,
			.nargs = 3,
			.args = { amp_arg_tensor(leaf->grad),
				  amp_arg_tensor(grad),
				  amp_arg_scalar(1, true) },
		};
		struct amp_tensor *same = amp_dispatch1(&call);
		if (!same)
			return amp_last_status();
		amp_tensor_free(same);
		return AMP_OK;
	}
	struct amp_tensor *sum = amp_add(leaf->grad, grad);
	if (!sum)
		return amp_last_status();
	amp_tensor_free(leaf->grad);
	leaf->grad = sum;
	return AMP_OK;
}

/* Threads running backward through graphs that share leaves (weights,
 * and the cached casts of the global autocast cache) accumulate into the
 * same .grad: one at a time, as AccumulateGrad's mutex makes PyTorch. */
static pthread_mutex_t accumulate_lock = PTHREAD_MUTEX_INITIALIZER;

static int finish_leaves(struct engine *e)
{
	int status = AMP_OK;

	for (int l = 0; l < e->nleaves && status == AMP_OK; l++) {
		struct leaf_slot *slot = &e->leaves[l];
		if (!slot->buffer)
			continue;
		if (slot->capture >= 0) {
			struct capture *capture = &e->captures[slot->capture];
			capture->grad = amp_tensor_ref(slot->buffer);
			continue;
		}
		if (!e->accumulate)
			continue;
		struct engine_state state = enter_backward(0, e->create_graph);
		pthread_mutex_lock(&accumulate_lock);
		status = accumulate_grad(slot->leaf, slot->buffer,
					 e->create_graph);
		pthread_mutex_unlock(&accumulate_lock);
		leave_backward(state);
	}
	return status;
}

/* The gradient a root starts with: the given one (checked and cast to
 * the root's dtype) or ones for a 1-element root. */
static int root_grad(struct amp_tensor *root, struct amp_tensor *given,
		     int index, struct amp_tensor **out)
{
	char got[128], want[128];

	*out = NULL;
	if (!given) {
		if (amp_tensor_numel(root) != 1)
			return amp_error(AMP_ERR_INVALID,
					 "grad can be implicitly created only "
					 "for scalar outputs");
		*out = amp_full(root->ndim, root->shape, 1.0, root->dtype,
				root->device);
		return *out ? AMP_OK : amp_last_status();
	}
	if (given->ndim != root->ndim ||
	    memcmp(given->shape, root->shape,
		   (size_t)root->ndim * sizeof *root->shape) != 0)
		return amp_error(AMP_ERR_INVALID,
				 "Mismatch in shape: grad_output[%d] has a shape "
				 "of torch.Size(%s) and output[%d] has a shape "
				 "of torch.Size(%s).",
				 index,
				 cpu_shape_string(given->ndim, given->shape, got,
						  sizeof got),
				 index,
				 cpu_shape_string(root->ndim, root->shape, want,
						  sizeof want));
	if (given->dtype == root->dtype) {
		*out = amp_tensor_ref(given);
		return AMP_OK;
	}
	*out = amp_to(given, root->dtype);
	return *out ? AMP_OK : amp_last_status();
}

/* Shared by amp_backward and amp_grad. */
static int run_backward(struct engine *e, int nroots,
			amp_tensor *const *roots, amp_tensor *const *root_grads)
{
	struct amp_node *nodes[AMP_PLAN_MAX_ARGS];
	int status = AMP_OK;

	for (int r = 0; r < nroots; r++) {
		AMP_ASSERT(roots[r]);
		if (!roots[r]->requires_grad)
			return amp_error(AMP_ERR_STATE,
					 "element %d of tensors does not "
					 "require grad and does not have a "
					 "grad_fn",
					 r);
		nodes[r] = roots[r]->grad_fn;
	}
	status = discover(e, nroots, nodes);
	for (int c = 0; c < e->ncaptures && status == AMP_OK; c++) {
		struct capture *capture = &e->captures[c];
		struct amp_tensor *input = capture->input;
		capture->task = -1;
		if (!input->grad_fn) {
			int slot = leaf_slot(e, input, true);
			if (slot < 0)
				status = slot;
			else
				e->leaves[slot].capture = c;
			continue;
		}
		capture->task = ptr_map_get(&e->task_index, input->grad_fn);
		capture->output_nr = autograd_output_nr(input->grad_fn, input);
		if (capture->task >= 0)
			e->tasks[capture->task].captured = true;
	}
	if (status == AMP_OK && !e->accumulate)
		status = mark_runs(e);

	struct amp_tensor *grads[AMP_PLAN_MAX_ARGS] = { 0 };
	for (int r = 0; r < nroots && status == AMP_OK; r++)
		status = root_grad(roots[r], root_grads ? root_grads[r] : NULL,
				   r, &grads[r]);
	struct engine_state state = enter_backward(0, e->create_graph);
	for (int r = 0; r < nroots; r++) {
		struct amp_tensor *grad = grads[r];
		if (status != AMP_OK) {
			amp_tensor_free(grad);
		} else if (roots[r]->grad_fn) {
			int t = ptr_map_get(&e->task_index, roots[r]->grad_fn);
			int o = autograd_output_nr(roots[r]->grad_fn, roots[r]);
			status = buffer_add(&e->tasks[t].buffer[o], grad);
		} else {
			int slot = leaf_slot(e, roots[r], e->accumulate);
			if (slot >= 0)
				status = buffer_add(&e->leaves[slot].buffer,
						    grad);
			else
				amp_tensor_free(grad);
		}
	}
	leave_backward(state);
	if (status == AMP_OK)
		status = execute(e);
	if (status == AMP_OK)
		status = finish_leaves(e);
	return status;
}

int amp_backward(amp_tensor *root, amp_tensor *grad, bool retain_graph,
		 bool create_graph)
{
	struct engine e = { .accumulate = true,
			    .retain_graph = retain_graph,
			    .create_graph = create_graph };

	AMP_ASSERT(root);
	/* a UserWarning: shown once, as Python's default filter does */
	static atomic_flag warned = ATOMIC_FLAG_INIT;
	if (create_graph && !atomic_flag_test_and_set(&warned))
		amp_warn("Using backward() with create_graph=True will create "
			 "a reference cycle between the parameter and its "
			 "gradient which can cause a memory leak. We recommend "
			 "using autograd.grad when creating the graph to avoid "
			 "this.");
	int status = run_backward(&e, 1, &root, grad ? &grad : NULL);
	engine_free(&e);
	return status;
}

int amp_grad(int noutputs, amp_tensor *const *outputs,
	     amp_tensor *const *grad_outputs, int ninputs,
	     amp_tensor *const *inputs, amp_tensor **grads, bool retain_graph,
	     bool create_graph, bool allow_unused)
{
	struct engine e = { .retain_graph = retain_graph,
			    .create_graph = create_graph };
	int status = AMP_OK;

	AMP_ASSERT(noutputs >= 1 && noutputs <= AMP_PLAN_MAX_ARGS && outputs);
	AMP_ASSERT(ninputs >= 1 && inputs && grads);
	for (int i = 0; i < ninputs; i++) {
		AMP_ASSERT(inputs[i]);
		grads[i] = NULL;
		if (!inputs[i]->requires_grad)
			status = amp_error(AMP_ERR_STATE,
					   "One of the differentiated Tensors "
					   "does not require grad");
	}
	if (status != AMP_OK)
		return status;
	e.captures = calloc((size_t)ninputs, sizeof *e.captures);
	if (!e.captures)
		return amp_error(AMP_ERR_NOMEM, "out of memory in grad");
	e.ncaptures = ninputs;
	for (int i = 0; i < ninputs; i++)
		e.captures[i].input = inputs[i];
	status = run_backward(&e, noutputs, outputs, grad_outputs);
	for (int i = 0; i < ninputs && status == AMP_OK; i++)
		if (!e.captures[i].grad && !allow_unused)
			status = amp_error(AMP_ERR_STATE,
					   "One of the differentiated Tensors "
					   "appears to not have been used in "
					   "the graph. Set allow_unused=True if "
					   "this is the desired behavior.");
	for (int i = 0; i < ninputs && status == AMP_OK; i++) {
		grads[i] = e.captures[i].grad;
		e.captures[i].grad = NULL;
	}
	engine_free(&e);
	return status;
}
