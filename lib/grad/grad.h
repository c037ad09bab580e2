/* Autograd internals shared by the graph (lib/autograd*.c) and the
 * backward formulas (lib/grad/grad_*.c): the graph node, the context a
 * formula runs with, and the formula table indexed by enum amp_op.
 *
 * A formula reads the gradients of the node's outputs and the tensors the
 * node saved, and sets grad_inputs[i] (a new reference, or NULL for "no
 * gradient") for each flattened tensor input i that needs one.  It builds
 * the gradients from dispatched ops only (amp_mm, amp_mul, the backward
 * ops of grad_ops.h ...), so they run in the forward's dtypes, publish
 * backward events, are autocast when the backward runs inside an autocast
 * region, and are recorded for double backward under create_graph.  The
 * engine then sums each gradient to its input's shape and casts it to the
 * input's dtype and device (PyTorch's validate_outputs). */
#ifndef AMP_GRAD_H
#define AMP_GRAD_H

#include "amp_internal.h"

/* What the graph remembers of a tensor it does not keep. */
struct amp_tensor_meta {
	enum amp_dtype dtype;
	enum amp_device_type device;
	int ndim;
	int64_t shape[AMP_MAX_DIMS];
};

/* Where the gradient of one node input goes. */
struct amp_edge {
	struct amp_node *node;   /* the input's grad_fn (a reference) */
	int output_nr;           /* which output of `node` the input is */
	struct amp_tensor *leaf; /* or a leaf requiring grad (a reference) */
};

/* A tensor saved for backward.  Inputs are kept as they are (a reference);
 * the node's own outputs as an alias without grad_fn (the same id and
 * storage), so that no reference cycle output -> node -> output exists. */
struct amp_saved {
	struct amp_tensor *tensor;
	uint64_t version;        /* storage version when saved */
};

struct amp_node {
	atomic_int refcount;
	enum amp_op op;          /* AMP_OP_COUNT for custom functions */
	const char *name;        /* "MmBackward0" */
	uint64_t forward_op_id;  /* backward events link to this op */
	uint64_t sequence;       /* creation order: later nodes run first */
	/* the forward call's arguments (tensor pointers cleared) */
	int nargs;
	struct amp_arg args[AMP_MAX_ARGS];
	/* flattened tensor inputs, as the dispatcher flattens them */
	int ninputs;
	struct amp_edge *edges;            /* [ninputs] */
	struct amp_tensor_meta *input_meta; /* [ninputs]; ndim -1 = absent */
	struct amp_saved *saved_inputs;    /* [ninputs]; tensor NULL = none */
	int noutputs;
	uint64_t output_ids[AMP_MAX_OUTPUTS];
	struct amp_tensor_meta output_meta[AMP_MAX_OUTPUTS];
	struct amp_saved saved_outputs[AMP_MAX_OUTPUTS];
	bool saved_any;          /* something was saved */
	bool saved_freed;        /* released by a backward without retain_graph */
	/* custom functions (amp_function_attach) */
	char *custom_name;
	amp_function_backward_fn custom_backward;
	void (*custom_free)(void *ctx);
	void *custom_ctx;
	struct amp_node *next_release; /* the thread's queue of nodes to free */
};

/* What a formula runs with.  Tensors are borrowed from the engine for the
 * duration of the call. */
struct amp_grad_ctx {
	const struct amp_node *node;
	struct amp_tensor *const *grad_outputs; /* [noutputs]; NULL = zero */
	struct amp_tensor **grad_inputs;        /* [ninputs]; set by formula */
	struct amp_tensor **inputs;  /* saved inputs, unpacked ([ninputs]) */
	struct amp_tensor **outputs; /* saved outputs, unpacked */
	const bool *needs;           /* [ninputs]: a gradient is wanted */
	bool create_graph;
};

typedef int (*amp_grad_formula)(struct amp_grad_ctx *ctx);

#define AMP_GRAD_SAVE(i) (1u << (i))

struct amp_grad_def {
	enum amp_op op;              /* equals the row's index */
	const char *name;            /* grad_fn name, PyTorch's spelling */
	amp_grad_formula formula;    /* NULL: never recorded (factories,
				      * detach, composites) */
	unsigned save_inputs;        /* AMP_GRAD_SAVE(flat input index) */
	unsigned save_outputs;       /* AMP_GRAD_SAVE(output index) */
	bool save_all_inputs;        /* list ops: every input */
};
extern const struct amp_grad_def amp_grad_defs[AMP_OP_COUNT];

/* ----------------------------------------------------- formula helpers */

static inline struct amp_tensor *grad_out(const struct amp_grad_ctx *ctx,
					  int index)
{
	return ctx->grad_outputs[index];
}

static inline const struct amp_arg *grad_arg(const struct amp_grad_ctx *ctx,
					      int index)
{
	return &ctx->node->args[index];
}

static inline const struct amp_tensor_meta *
grad_meta(const struct amp_grad_ctx *ctx, int input)
{
	return &ctx->node->input_meta[input];
}

/* Stores `grad` (a new reference or NULL after a failed op) as input i's
 * gradient; returns the status to propagate. */
int grad_set(struct amp_grad_ctx *ctx, int input, struct amp_tensor *grad);

/* Scales by a number, skipping the op when it is 1 (PyTorch's
 * maybe_multiply).  Takes ownership of t; NULL in, NULL out. */
struct amp_tensor *grad_scale(struct amp_tensor *t, double factor);
/* a * b and a - b etc. that take ownership of their first argument
 * (chains of ops read naturally: grad_mul_own(grad_mul_own(x, y), z)). */
struct amp_tensor *grad_mul_own(struct amp_tensor *a, struct amp_tensor *b);
struct amp_tensor *grad_mul_own_both(struct amp_tensor *a,
				     struct amp_tensor *b);
struct amp_tensor *grad_sub_own_both(struct amp_tensor *a,
				     struct amp_tensor *b);
struct amp_tensor *grad_add_own_both(struct amp_tensor *a,
				     struct amp_tensor *b);
struct amp_tensor *grad_neg_own(struct amp_tensor *a);
/* Sums over every dimension but keeps none (a 0-dim tensor). */
struct amp_tensor *grad_sum_own(struct amp_tensor *a);
/* Multiplies an elementwise loss gradient by the reduction's factor:
 * mean divides by numel. Takes ownership. */
struct amp_tensor *grad_reduce_scale(struct amp_tensor *t, int64_t reduction,
				     int64_t numel);
/* Zeros shaped like flat input i (PyTorch's zeros_like for formulas
 * whose gradient is identically zero). */
struct amp_tensor *grad_zeros_like_input(const struct amp_grad_ctx *ctx,
					 int input);
/* sum_to_size: reduces a broadcast gradient to `ndim`/`shape`, NULL +
 * error when the shapes are not broadcast-compatible.  Borrows grad,
 * returns a new reference (grad itself when the shapes match). */
struct amp_tensor *grad_sum_to(struct amp_tensor *grad, int ndim,
			       const int64_t *shape);

#endif /* AMP_GRAD_H */
