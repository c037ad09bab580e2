/* The trace index (trace_index.h). */
#include "trace_index.h"

#include <string.h>

static void count_use(struct trace_index *ix, int64_t pid, uint64_t tensor)
{
	size_t *uses = id_map_find(&ix->uses, pid, tensor, true);

	if (uses)
		(*uses)++;
}

void trace_index_init(const struct trace *t, struct trace_index *ix)
{
	*ix = (struct trace_index){ .trace = t };
}

int trace_index_update(struct trace_index *ix)
{
	const struct trace *t = ix->trace;

	for (size_t i = ix->indexed; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		if (e->kind == TRACE_OP) {
			const struct trace_op *op = &e->op;
			id_map_put(&ix->ops, e->pid, op->op_id, i);
			for (int k = 0; k < op->ninputs; k++) {
				count_use(ix, e->pid, op->inputs[k].id);
				if (op->inputs[k].info->name)
					id_map_put(&ix->names, e->pid,
						   op->inputs[k].id, i);
			}
			for (int k = 0; k < op->noutputs; k++) {
				id_map_put(&ix->producer, e->pid,
					   op->outputs[k].id, i);
				if (op->outputs[k].info->name)
					id_map_put(&ix->names, e->pid,
						   op->outputs[k].id, i);
			}
		} else if (e->kind == TRACE_CAST) {
			count_use(ix, e->pid, e->cast.tensor);
			if (e->cast.cache && strcmp(e->cast.cache, "hit"))
				id_map_put(&ix->producer, e->pid,
					   e->cast.result, i);
			if (e->cast.source->name)
				id_map_put(&ix->names, e->pid, e->cast.tensor,
					   i);
		}
	}
	ix->indexed = t->nevents;
	return ix->ops.failed || ix->producer.failed || ix->names.failed ||
			       ix->uses.failed
		       ? -1
		       : 0;
}

int trace_index_build(const struct trace *t, struct trace_index *ix)
{
	trace_index_init(t, ix);
	return trace_index_update(ix);
}

void trace_index_free(struct trace_index *ix)
{
	id_map_free(&ix->ops);
	id_map_free(&ix->producer);
	id_map_free(&ix->names);
	id_map_free(&ix->uses);
}

size_t trace_index_input_producer(const struct trace_index *ix, size_t event,
				  int k)
{
	const struct trace_event *e = &ix->trace->events[event];
	const struct trace_tensor *t = &e->op.inputs[k];

	if (t->producer_op_id) {
		size_t p = id_map_get(&ix->ops, e->pid, t->producer_op_id);
		if (p != SIZE_MAX)
			return p;
	}
	return id_map_get(&ix->producer, e->pid, t->id);
}

const struct trace_event *trace_index_op(const struct trace_index *ix,
					 int64_t pid, uint64_t op_id)
{
	size_t i = id_map_get(&ix->ops, pid, op_id);

	return i == SIZE_MAX ? NULL : &ix->trace->events[i];
}
