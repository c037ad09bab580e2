/* Flow events from a trace in memory (see flow.h). */
#include "flow.h"
#include "bigmem.h"
#include "event_json.h"
#include "jsonw.h"

#include <stdlib.h>
#include <string.h>

/* One X event of a thread, with its place in the thread's nesting:
 * children are linked in order of their begin. */
struct slice {
	int64_t pid, tid;
	int64_t begin, end;  /* ns since ts 0 */
	size_t event;
	size_t first_child, last_child, next_sibling; /* SIZE_MAX: none */
};

struct slices {
	struct slice *items;
	size_t count;
	size_t *of_event;    /* event index -> slice, SIZE_MAX when none */
};

/* Thread, then begin, then the longer first, so a parent comes before
 * the children it contains; of two equal spans the later event is the
 * parent, as an op is written after its casts and the ops inside it. */
static int compare_slices(const void *a, const void *b)
{
	const struct slice *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return (x->event < y->event) - (x->event > y->event);
}

static bool contains(const struct slice *outer, const struct slice *inner)
{
	return outer->pid == inner->pid && outer->tid == inner->tid &&
	       outer->begin <= inner->begin && inner->end <= outer->end;
}

/* items in compare_slices' order.  A thread's slices come as they ended,
 * each parent just after its children: an insertion sort moves each
 * parent back past its few children, in about linear time, where qsort
 * took half of the flows' time.  Slices far from that order (threads
 * interleaved, a slice around thousands of others) are left to qsort
 * past a budget of moves; compare_slices is a total order, so either
 * gives the same array. */
static void sort_slices(struct slice *items, size_t n)
{
	size_t budget = 8 * n + 4096;

	for (size_t i = 1; i < n; i++) {
		struct slice here = items[i];
		size_t j = i;
		for (; j > 0 && compare_slices(&here, &items[j - 1]) < 0; j--) {
			if (!budget--) {
				items[j] = here;
				trace_sort(items, n, sizeof *items, compare_slices);
				return;
			}
			items[j] = items[j - 1];
		}
		items[j] = here;
	}
}

/* Every X event, nested per thread as a viewer nests them. */
static int slices_build(const struct trace *t, struct slices *s)
{
	size_t n = 0;

	*s = (struct slices){ 0 };
	for (size_t i = 0; i < t->nevents; i++)
		n += t->events[i].ph == 'X';
	s->items = malloc((n ? n : 1) * sizeof *s->items);
	s->of_event = malloc((t->nevents ? t->nevents : 1) * sizeof *s->of_event);
	bigmem_advise(s->items, (n ? n : 1) * sizeof *s->items);
	bigmem_advise(s->of_event, (t->nevents ? t->nevents : 1) *
					   sizeof *s->of_event);
	size_t *stack = malloc((n ? n : 1) * sizeof *stack);
	if (!s->items || !s->of_event || !stack) {
		free(stack);
		return -1;
	}
	for (size_t i = 0; i < t->nevents; i++) {
		const struct trace_event *e = &t->events[i];
		s->of_event[i] = SIZE_MAX;
		if (e->ph != 'X')
			continue;
		int64_t begin = trace_us_to_ns(e->ts);
		s->items[s->count++] = (struct slice){
			.pid = e->pid, .tid = e->tid, .begin = begin,
			.end = begin + trace_us_to_ns(e->dur > 0 ? e->dur : 0),
			.event = i,
			.first_child = SIZE_MAX, .last_child = SIZE_MAX,
			.next_sibling = SIZE_MAX,
		};
	}
	sort_slices(s->items, s->count);
	size_t depth = 0;
	for (size_t k = 0; k < s->count; k++) {
		struct slice *here = &s->items[k];
		s->of_event[here->event] = k;
		while (depth && !contains(&s->items[stack[depth - 1]], here))
			depth--;
		if (depth) {
			struct slice *parent = &s->items[stack[depth - 1]];
			if (parent->last_child == SIZE_MAX)
				parent->first_child = k;
			else
				s->items[parent->last_child].next_sibling = k;
			parent->last_child = k;
		}
		stack[depth++] = k;
	}
	free(stack);
	return 0;
}

static void slices_free(struct slices *s)
{
	free(s->items);
	free(s->of_event);
}

/* A point strictly inside slice k, after `after`, outside every child
 * (their bounds included): the first such gap's middle, or the last
 * one's when `latest`.  False when the children leave no such point. */
static bool free_point(const struct slices *s, size_t k, int64_t after,
		       bool latest, int64_t *at)
{
	const struct slice *sl = &s->items[k];
	int64_t low = sl->begin; /* exclusive */
	size_t child = sl->first_child;
	bool found = false;

	for (;;) {
		int64_t high = child == SIZE_MAX ? sl->end
						 : s->items[child].begin;
		int64_t from = low > after ? low : after;
		if (high - from >= 2) {
			*at = from + (high - from) / 2;
			found = true;
			if (!latest)
				return true;
		}
		if (child == SIZE_MAX)
			return found;
		if (s->items[child].end > low)
			low = s->items[child].end;
		child = s->items[child].next_sibling;
	}
}

struct builder {
	const struct trace_index *ix;
	struct slices slices;
	struct trace_flows *flows;
	size_t cap;
	bool failed;
};

static void add_flow(struct builder *b, enum flow_kind kind, size_t from,
		     size_t to, uint64_t tensor)
{
	const struct trace_event *events = b->ix->trace->events;
	size_t from_slice = b->slices.of_event[from];
	size_t to_slice = b->slices.of_event[to];
	int64_t from_ns, to_ns;

	if (from_slice == SIZE_MAX || to_slice == SIZE_MAX ||
	    !free_point(&b->slices, from_slice, INT64_MIN, true, &from_ns) ||
	    !free_point(&b->slices, to_slice, from_ns, false, &to_ns)) {
		b->flows->unbindable++;
		return;
	}
	struct trace_flows *f = b->flows;
	if (f->count == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 256;
		struct trace_flow *grown = realloc(f->items, cap * sizeof *grown);
		if (!grown) {
			b->failed = true;
			return;
		}
		f->items = grown;
		b->cap = cap;
	}
	const struct trace_event *source = &events[from];
	f->items[f->count++] = (struct trace_flow){
		.kind = kind, .pid = source->pid, .from_tid = source->tid,
		.to_tid = events[to].tid, .from_ns = from_ns, .to_ns = to_ns,
		.from_op_id = source->kind == TRACE_OP ? source->op.op_id
						       : source->cast.op_id,
		.to_op_id = events[to].op.op_id, .tensor = tensor,
	};
}

static bool is_backward(const struct trace_op *op)
{
	/* the first letter first: half of the ops are forward ops */
	return op->phase && op->phase[0] == 'b' &&
	       !strcmp(op->phase, "backward");
}

/* Autograd's node for a forward op runs one or more backward ops; an op
 * nested in one of them (a composite's parts) gets no arrow of its own. */
static void backward_flow(struct builder *b, size_t i)
{
	const struct trace_event *e = &b->ix->trace->events[i];
	const struct trace_op *op = &e->op;

	if (!is_backward(op) || !op->forward_op_id)
		return;
	const struct trace_event *parent =
		op->parent_op_id ? trace_index_op(b->ix, e->pid, op->parent_op_id)
				 : NULL;
	if (parent && is_backward(&parent->op) &&
	    parent->op.forward_op_id == op->forward_op_id)
		return;
	const struct trace_event *forward =
		trace_index_op(b->ix, e->pid, op->forward_op_id);
	if (forward)
		add_flow(b, FLOW_BACKWARD, (size_t)(forward - b->ix->trace->events),
			 i, 0);
}

/* The casts (not hits: a hit made nothing) whose results op i read, one
 * arrow per cast even when the op reads the result twice. */
static void cast_flows(struct builder *b, size_t i)
{
	const struct trace_event *events = b->ix->trace->events;
	const struct trace_op *op = &events[i].op;

	for (int k = 0; k < op->ninputs; k++) {
		size_t p = trace_index_input_producer(b->ix, i, k);
		if (p == SIZE_MAX || events[p].kind != TRACE_CAST)
			continue;
		bool again = false;
		for (int j = 0; j < k && !again; j++)
			again = op->inputs[j].id == op->inputs[k].id;
		if (!again)
			add_flow(b, FLOW_CAST, p, i, op->inputs[k].id);
	}
}

int flow_build(const struct trace_index *ix, struct trace_flows *flows)
{
	const struct trace *t = ix->trace;
	struct builder b = { .ix = ix, .flows = flows };

	*flows = (struct trace_flows){ 0 };
	if (slices_build(t, &b.slices) != 0) {
		slices_free(&b.slices);
		return -1;
	}
	for (size_t i = 0; i < t->nevents && !b.failed; i++) {
		if (t->events[i].kind != TRACE_OP || t->events[i].op.incomplete)
			continue;
		backward_flow(&b, i);
		cast_flows(&b, i);
	}
	slices_free(&b.slices);
	if (b.failed) {
		flow_free(flows);
		return -1;
	}
	return 0;
}

void flow_free(struct trace_flows *flows)
{
	free(flows->items);
	*flows = (struct trace_flows){ 0 };
}

/* One end of f as its trace event (FORMAT.md §3.10). */
static struct trace_event flow_event(const struct trace_flow *f, bool start,
				     uint64_t id)
{
	return (struct trace_event){
		.kind = TRACE_FLOW, .ph = start ? 's' : 'f',
		.name = f->kind == FLOW_CAST ? "cast" : "backward",
		.cat = "amp.flow", .pid = f->pid,
		.tid = start ? f->from_tid : f->to_tid,
		.ts = (double)(start ? f->from_ns : f->to_ns) / 1000.0,
		.flow = {
			.id = id, .bind = start ? NULL : "e",
			.op_id = start ? f->from_op_id : f->to_op_id,
			.tensor = f->kind == FLOW_CAST ? f->tensor : 0,
		},
	};
}

uint64_t flow_text(const struct trace_flows *flows, uint64_t first_id,
		   struct jsonw *out)
{
	uint64_t id = first_id;
	size_t start = out->len;
	struct jsonw_cache *cache = out->cache;

	/* the events' strings are the few literals above: escaped once */
	out->cache = calloc(1, sizeof *out->cache);
	for (size_t i = 0; i < flows->count && !out->failed; i++, id++) {
		for (int end = 0; end < 2; end++) {
			struct trace_event e = flow_event(&flows->items[i],
							  end == 0, id);
			if (i || end)
				jsonw_raw(out, ",\n", 2);
			event_json_append(out, &e);
		}
	}
	free(out->cache);
	out->cache = cache;
	if (out->failed) {
		out->len = start;
		id = first_id;
	}
	return id;
}

uint64_t flow_write(const struct trace_flows *flows, struct trace_writer *w,
		    uint64_t first_id)
{
	struct jsonw text;

	jsonw_init(&text);
	uint64_t id = flow_text(flows, first_id, &text);
	trace_writer_events(w, text.data, text.len, 2 * (id - first_id));
	jsonw_free(&text);
	return id;
}
