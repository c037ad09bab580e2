/* Autograd: graph recording and the backward engine.  Forward-only for
 * now: outputs are marked (requires_grad, is_leaf) by the dispatcher but
 * no graph is recorded yet; the training issue replaces this file. */
#include "amp_internal.h"

int amp_autograd_record(struct amp_call *call)
{
	(void)call;
	return AMP_OK;
}

int amp_autograd_record_cast(struct amp_tensor *source, struct amp_tensor *cast)
{
	(void)source;
	(void)cast;
	return AMP_OK;
}

void amp_node_release(struct amp_node *node)
{
	AMP_ASSERT(node == NULL);
}
