/* What lib/autograd.c (recording the graph), autograd_saved.c (the
 * tensors a node saves for its formula) and autograd_engine.c (backward)
 * share; the graph itself is grad/grad.h's. */
#ifndef AMP_AUTOGRAD_INTERNAL_H
#define AMP_AUTOGRAD_INTERNAL_H

#include "grad/grad.h"

/* A new reference to node (amp_node_release drops it). */
static inline struct amp_node *autograd_node_ref(struct amp_node *node)
{
	atomic_fetch_add_explicit(&node->refcount, 1, memory_order_relaxed);
	return node;
}

/* Which output of node the tensor t is (0 when none). */
static inline int autograd_output_nr(const struct amp_node *node,
				     const struct amp_tensor *t)
{
	for (int o = 0; o < node->noutputs; o++)
		if (node->output_ids[o] == t->id)
			return o;
	return 0;
}

/* autograd_saved.c */

/* Saves t (a reference the slot now owns) at its current version. */
static inline void autograd_save(struct amp_saved *saved, struct amp_tensor *t)
{
	saved->tensor = t;
	saved->version = amp_tensor_version(t);
}

/* The same tensor (id, storage, layout) without grad_fn: what a node
 * keeps of its own outputs.  NULL when out of memory. */
struct amp_tensor *autograd_tensor_alias(const struct amp_tensor *t);
/* Drops what the node saved (after a backward without retain_graph, or
 * with the node). */
void autograd_free_saved(struct amp_node *node);
/* The saved tensors as the node's formula sees them (new references in
 * inputs[] and outputs[]), or an error: saved tensors freed by an earlier
 * backward, or modified in place since they were saved. */
int autograd_unpack(struct amp_node *node, bool create_graph,
		    struct amp_tensor **inputs, struct amp_tensor **outputs);

#endif /* AMP_AUTOGRAD_INTERNAL_H */
