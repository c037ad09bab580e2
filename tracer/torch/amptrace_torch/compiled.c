/* torch.compile as events (compiled.h): the compile and call ops
 * _compile.py opens and closes, the casts of a compiled graph, notes, and
 * libamp's plan for an op of a graph.  An open op's BEGIN is emitted at
 * once; its END repeats what the BEGIN said, with the outputs and, for a
 * compile, the name and graph known by then. */
#include "compiled.h"

#include "amp_policy.h"
#include "events.h"
#include "producer_event.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OPEN 16
#define MAX_TENSORS 255 /* what one raw record holds (raw_schema.h) */

struct open_op {
	struct producer_op event;      /* as BEGIN said it */
	char *name;                    /* owns event.op */
	struct producer_tensor *inputs;
	uint64_t previous_parent;      /* restored at the end */
};

struct compiled_thread {
	struct open_op ops[MAX_OPEN];
	int nops;
	int dropped;                   /* begun beyond MAX_OPEN */
};

static __thread struct compiled_thread *thread;

static struct compiled_thread *compiled_thread(void)
{
	if (!thread)
		thread = calloc(1, sizeof *thread);
	return thread;
}

static int phase_of(const char *name, uint8_t *out)
{
	for (int p = 0; p < AMP_PHASE_COUNT; p++)
		if (!strcmp(name, amp_phase_name((enum amp_phase)p))) {
			*out = (uint8_t)p;
			return 0;
		}
	PyErr_Format(PyExc_ValueError, "unknown phase %s", name);
	return -1;
}

/* The dtype's code (the producer's names are libamp's). */
static uint8_t dtype_of(const char *name)
{
	enum amp_dtype dtype;

	if (amp_dtype_from_name(name, &dtype) == 0)
		return (uint8_t)dtype;
	/* libamp has no 8/16-bit integers: the nearest type autocast treats
	 * the same way (never cast), as the observer does */
	return AMP_DTYPE_I32;
}

static int device_of(const char *name, enum amp_device_type *out)
{
	if (amp_device_type_from_name(name, out) == 0)
		return 0;
	PyErr_Format(PyExc_ValueError, "unknown device %s", name);
	return -1;
}

/* (enabled, device, dtype) -> the state an op records. */
static int autocast_of(PyObject *state, struct producer_autocast *out)
{
	int enabled, depth;
	const char *device_name, *dtype;
	enum amp_device_type device;

	if (!PyArg_ParseTuple(state, "pss", &enabled, &device_name, &dtype) ||
	    device_of(device_name, &device) != 0)
		return -1;
	*out = (struct producer_autocast){ .enabled = enabled,
					   .device = (uint8_t)device,
					   .dtype = dtype_of(dtype) };
	events_regions(&depth, &out->scope);
	out->depth = depth;
	return 0;
}

/* (enabled, device, dtype) -> "autocast(cpu, bf16)", "autocast(cpu, off)"
 * into buf: the state a compiled graph's cast was traced under, named as
 * the trace names an unnamed region (FORMAT.md §3.4). */
static int traced_under(PyObject *state, char *buf, size_t size)
{
	int enabled;
	const char *device_name, *dtype;
	enum amp_device_type device;

	if (!PyArg_ParseTuple(state, "pss", &enabled, &device_name, &dtype) ||
	    device_of(device_name, &device) != 0)
		return -1;
	snprintf(buf, size, "autocast(%s, %s)", amp_device_type_name(device),
		 enabled ? amp_dtype_name((enum amp_dtype)dtype_of(dtype))
			 : "off");
	return 0;
}

/* (tensor, dtype, shape, requires_grad, is_leaf) -> its description. */
static int tensor_of(PyObject *item, struct producer_tensor *out)
{
	PyObject *tensor, *shape;
	const char *dtype;
	int requires_grad, is_leaf;

	if (!PyArg_ParseTuple(item, "OsOpp", &tensor, &dtype, &shape,
			      &requires_grad, &is_leaf))
		return -1;
	Py_ssize_t ndim = PySequence_Size(shape);
	if (ndim < 0)
		return -1;
	*out = (struct producer_tensor){
		.flags = (uint8_t)((requires_grad
					    ? PRODUCER_TENSOR_REQUIRES_GRAD
					    : 0u) |
				   (is_leaf ? PRODUCER_TENSOR_LEAF : 0u)),
		.ndim = (uint8_t)(ndim > PRODUCER_MAX_DIMS ? PRODUCER_MAX_DIMS
							   : ndim),
		.dtype = dtype_of(dtype),
	};
	for (int d = 0; d < out->ndim; d++) {
		PyObject *size = PySequence_GetItem(shape, d);
		out->shape[d] = size ? PyLong_AsLongLong(size) : 0;
		Py_XDECREF(size);
	}
	if (PyErr_Occurred())
		return -1;
	out->id = bridge_tensor_id(tensor, &out->name);
	return 0;
}

/* A list of tensor tuples -> a malloc'd array (NULL and 0 when empty). */
static struct producer_tensor *tensors_of(PyObject *list, int32_t *count)
{
	Py_ssize_t n = PySequence_Size(list);
	struct producer_tensor *out;

	*count = 0;
	if (n < 0)
		return NULL;
	if (n > MAX_TENSORS)
		n = MAX_TENSORS;
	if (!n)
		return NULL;
	out = calloc((size_t)n, sizeof *out);
	if (!out) {
		PyErr_NoMemory();
		return NULL;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = PySequence_GetItem(list, i);
		int failed = !item || tensor_of(item, &out[i]) != 0;
		Py_XDECREF(item);
		if (failed) {
			free(out);
			return NULL;
		}
	}
	*count = (int32_t)n;
	return out;
}

/* compiled_ignore(on) -> previous */
PyObject *compiled_py_ignore(PyObject *self, PyObject *args)
{
	int on;

	(void)self;
	if (!PyArg_ParseTuple(args, "p", &on))
		return NULL;
	return PyBool_FromLong(events_set_ignoring(on));
}

/* compiled_phase() -> this thread's phase outside autograd's nodes */
PyObject *compiled_py_phase(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyUnicode_FromString(amp_phase_name(events_phase()));
}

/* compiled_now() -> the trace clock's time, in ns */
PyObject *compiled_py_now(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyLong_FromUnsignedLongLong(amp_now_ns());
}

/* compiled_begin(name, graph, phase, forward_op_id, tensors, autocast,
 *                parent, begin_ns) -> op_id.  `parent`: the op parents
 * the ops this thread runs until it ends (a call), or not (a compile);
 * begin_ns: when it began (0: now). */
PyObject *compiled_py_begin(PyObject *self, PyObject *args)
{
	const char *name, *phase;
	unsigned long long graph, forward, begin_ns;
	PyObject *tensors, *state;
	int parent;
	struct compiled_thread *t = compiled_thread();

	(void)self;
	if (!PyArg_ParseTuple(args, "sKsKOOpK", &name, &graph, &phase, &forward,
			      &tensors, &state, &parent, &begin_ns))
		return NULL;
	if (!t)
		return PyErr_NoMemory();
	if (t->nops >= MAX_OPEN) {
		t->dropped++;
		return PyLong_FromLong(0);
	}
	struct open_op *o = &t->ops[t->nops];
	*o = (struct open_op){ .name = strdup(name) };
	struct producer_op *e = &o->event;
	if (!o->name || phase_of(phase, &e->phase) != 0 ||
	    autocast_of(state, &e->autocast) != 0)
		goto fail;
	o->inputs = tensors_of(tensors, &e->ninputs);
	if (PyErr_Occurred())
		goto fail;
	e->op_id = events_new_op_id();
	e->op = o->name;
	e->overload = "";
	e->graph = graph;
	e->forward_op_id = forward;
	e->device = e->autocast.device;
	e->inputs = o->inputs;
	e->policy = AMP_POLICY_NONE;
	o->previous_parent = parent ? events_set_compiled_parent(e->op_id)
				    : UINT64_MAX;
	struct producer_event begin = { .kind = PRODUCER_OP_BEGIN,
					.time_ns = begin_ns, .op = *e };
	events_emit(&begin);
	e->begin_ns = begin.time_ns;
	t->nops++;
	return PyLong_FromUnsignedLongLong(e->op_id);
fail:
	free(o->name);
	free(o->inputs);
	return NULL;
}

/* Emits the END of open op `o` and frees it: its outputs (a list of
 * tensor tuples, or NULL), its error (NULL: none) and how Dynamo handled
 * it (NULL: it reached the program), and what a compile knows by its end
 * (name NULL, graph 0: as begun). */
static void close_op(struct open_op *o, PyObject *tensors, const char *error,
		     const char *handled, const char *name, uint64_t graph)
{
	struct producer_event end = { .kind = PRODUCER_OP_END, .op = o->event };

	if (tensors)
		end.op.outputs = tensors_of(tensors, &end.op.noutputs);
	PyErr_Clear(); /* an output we cannot describe is left out */
	if (name)
		end.op.op = name;
	if (graph)
		end.op.graph = graph;
	if (error) {
		end.op.status = AMP_ERR_INVALID;
		end.op.error = error;
		end.op.handled = handled;
	}
	events_emit(&end);
	if (o->previous_parent != UINT64_MAX)
		events_set_compiled_parent(o->previous_parent);
	free((void *)end.op.outputs);
	free(o->inputs);
	free(o->name);
}

/* compiled_end(op_id, tensors, error, name, graph[, handled]): op `op_id`
 * ends; name and graph (None, 0: as begun) may say more now; handled:
 * how Dynamo handled the error of a compile, the program never seeing it
 * ("skipped", "suppressed"; None: it did).  Ops opened after it and still
 * open end with it, failed: a backward node that raises never runs the
 * hook that would have ended its op. */
PyObject *compiled_py_end(PyObject *self, PyObject *args)
{
	unsigned long long op_id, graph;
	PyObject *tensors;
	const char *error, *name, *handled = NULL;
	struct compiled_thread *t = compiled_thread();

	(void)self;
	if (!PyArg_ParseTuple(args, "KOzzK|z", &op_id, &tensors, &error, &name,
			      &graph, &handled))
		return NULL;
	if (t && t->dropped) {
		t->dropped--;
		Py_RETURN_NONE;
	}
	int at = t ? t->nops : 0;
	while (at > 0 && t->ops[at - 1].event.op_id != op_id)
		at--;
	if (!at) {
		PyErr_Format(PyExc_RuntimeError, "compiled op %llu is not open",
			     op_id);
		return NULL;
	}
	while (t->nops > at)
		close_op(&t->ops[--t->nops], NULL,
			 "its end was not seen: the compiled code raised", NULL,
			 NULL, 0);
	close_op(&t->ops[--t->nops], tensors, error, handled, name, graph);
	Py_RETURN_NONE;
}

/* compiled_cast(op_id, (graph, phase, made_by, op, feeds, source, module,
 *               module_class, from, to, arg, shape, reason, autocast)) */
PyObject *compiled_py_cast(PyObject *self, PyObject *args)
{
	unsigned long long op_id, graph;
	const char *phase, *made_by, *op, *feeds, *source, *module, *class_;
	const char *from, *to, *reason;
	int arg;
	uint8_t part;
	char state_name[64];
	PyObject *shape, *state;
	struct producer_event e = { .kind = PRODUCER_CAST };
	struct producer_cast *c = &e.cast;

	(void)self;
	if (!PyArg_ParseTuple(args, "K(KssszzzzssiOsO)", &op_id, &graph, &phase,
			      &made_by, &op, &feeds, &source, &module, &class_,
			      &from, &to, &arg, &shape, &reason, &state))
		return NULL;
	if (phase_of(phase, &part) != 0 ||
	    traced_under(state, state_name, sizeof state_name) != 0)
		return NULL;
	*c = (struct producer_cast){
		.op_id = op_id, .arg = arg, .cache = AMP_CACHE_UNCACHEABLE,
		.reason = reason, .origin = "compiled", .graph = graph,
		.graph_phase = amp_phase_name((enum amp_phase)part),
		.graph_op = op, .feeds = feeds, .made_by = made_by,
		.source_line = source, .module = module,
		.module_class = class_, .traced_under = state_name,
		.from = dtype_of(from), .to = dtype_of(to),
	};
	Py_ssize_t ndim = PySequence_Size(shape);
	if (ndim < 0)
		return NULL;
	c->source.dtype = c->from;
	c->result.dtype = c->to;
	c->source.ndim = (uint8_t)(ndim > PRODUCER_MAX_DIMS ? PRODUCER_MAX_DIMS
							    : ndim);
	size_t numel = 1;
	for (int d = 0; d < c->source.ndim; d++) {
		PyObject *size = PySequence_GetItem(shape, d);
		c->source.shape[d] = size ? PyLong_AsLongLong(size) : 0;
		Py_XDECREF(size);
		numel *= c->source.shape[d] > 0 ? (size_t)c->source.shape[d] : 0;
	}
	if (PyErr_Occurred())
		return NULL;
	c->result.ndim = c->source.ndim;
	memcpy(c->result.shape, c->source.shape, sizeof c->source.shape);
	c->bytes = numel * amp_dtype_size((enum amp_dtype)c->to);
	events_emit(&e);
	Py_RETURN_NONE;
}

/* compiled_diag(kind, message, op_id) */
PyObject *compiled_py_diag(PyObject *self, PyObject *args)
{
	const char *kind, *message;
	unsigned long long op_id;
	struct producer_event e = { .kind = PRODUCER_DIAG };

	(void)self;
	if (!PyArg_ParseTuple(args, "ssK", &kind, &message, &op_id))
		return NULL;
	e.diag = (struct producer_diag){ .kind = kind, .message = message,
					 .op_id = op_id };
	events_emit(&e);
	Py_RETURN_NONE;
}

/* The op's row: of `overload`, or for "" (a graph's op named without its
 * overload, as Dynamo's are: "softmax") its first overload's. */
static const struct amp_policy_row *any_overload(enum amp_device_type device,
						 const char *op,
						 const char *overload)
{
	const struct amp_policy_row *row =
		events_policy_lookup(device, op, overload);

	for (size_t i = 0; !row && !*overload && i < amp_policy_row_count();
	     i++) {
		const struct amp_policy_row *r = amp_policy_row_at(i);
		if (r->device == device && !strcmp(r->op, op) &&
		    amp_policy_row_in(r, events_policy_version()))
			row = r;
	}
	return row;
}

/* compiled_plan(device, dtype, op, overload, args, cache_enabled) ->
 * (policy, [(arg, to), ...]), or None when the op is on no list of the
 * running torch's table.  args: (dtype, requires_grad, is_leaf) of each
 * tensor argument, None for an absent optional one. */
PyObject *compiled_py_plan(PyObject *self, PyObject *args)
{
	const char *device_name, *lp_name, *op, *overload;
	PyObject *list;
	int cache_enabled;
	enum amp_device_type device;
	enum amp_dtype lp;
	struct amp_plan_arg plan_args[AMP_PLAN_MAX_ARGS];

	static struct amp_plan plan; /* ~2 KiB; the GIL is held */

	(void)self;
	if (!PyArg_ParseTuple(args, "ssssOp", &device_name, &lp_name, &op,
			      &overload, &list, &cache_enabled))
		return NULL;
	if (device_of(device_name, &device) != 0)
		return NULL;
	lp = (enum amp_dtype)dtype_of(lp_name);
	const struct amp_policy_row *row = any_overload(device, op, overload);
	if (!row)
		Py_RETURN_NONE;
	Py_ssize_t n = PySequence_Size(list);
	if (n < 0)
		return NULL;
	if (n > AMP_PLAN_MAX_ARGS)
		n = AMP_PLAN_MAX_ARGS;
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *item = PySequence_GetItem(list, i);
		const char *dtype;
		int requires_grad = 0, is_leaf = 0;
		struct amp_plan_arg *a = &plan_args[i];
		*a = (struct amp_plan_arg){ .device = device };
		if (item && item != Py_None &&
		    PyArg_ParseTuple(item, "spp", &dtype, &requires_grad,
				     &is_leaf)) {
			a->defined = true;
			a->requires_grad = requires_grad;
			a->is_leaf = is_leaf;
			a->dtype = (enum amp_dtype)dtype_of(dtype);
		} else if (item == Py_None) {
			a->optional = true;
		}
		Py_XDECREF(item);
		if (PyErr_Occurred())
			return NULL;
	}
	amp_autocast_plan(events_policy_version(), row, device, lp,
			  cache_enabled, (int)n, plan_args, AMP_DTYPE_NONE,
			  &plan);
	PyObject *casts = PyList_New(0);
	for (int i = 0; casts && i < plan.nargs; i++) {
		if (!plan.casts[i].cast)
			continue;
		PyObject *cast = Py_BuildValue(
			"(is)", i, amp_dtype_name(plan.casts[i].to));
		if (!cast || PyList_Append(casts, cast) != 0)
			Py_CLEAR(casts);
		Py_XDECREF(cast);
	}
	if (!casts)
		return NULL;
	return Py_BuildValue("(sN)", amp_policy_name(plan.policy), casts);
}

/* compiled_link(seq, op_id) */
PyObject *compiled_py_link(PyObject *self, PyObject *args)
{
	long long seq;
	unsigned long long op_id;

	(void)self;
	if (!PyArg_ParseTuple(args, "LK", &seq, &op_id))
		return NULL;
	events_link_forward(seq, op_id);
	Py_RETURN_NONE;
}
