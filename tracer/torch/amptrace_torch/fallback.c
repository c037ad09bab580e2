/* The pure-Python fallback's C side (fallback.h): Python describes what
 * its modes see (an op, its arguments in schema order, the autocast
 * state); this file turns tensors into producer_tensor with stable ids,
 * exactly as observer.cpp does, and calls events.c.
 *
 * Tensor ids: keyed by the TensorImpl's address (`_cdata`, what
 * name_tensor is given) and held with a weak reference to the Python
 * tensor.  torch 1.13 keeps a tensor's Python object alive as long as C++
 * holds its TensorImpl, so a live weak reference means a live TensorImpl
 * and an address is never mistaken for a dead tensor's; dead entries are
 * swept when the table fills.
 *
 * Casts: the entry of each cast result autocast made keeps its source, so
 * a cached cast consumed later (a cache hit, no `_to_copy` then) is
 * matched to the argument it stands for by identity, as events.c does.
 *
 * All of it runs with the GIL held: one table, one scratch, no locks. */
#include "fallback.h"

#include "events.h"

#include <stdlib.h>
#include <string.h>

/* observer.cpp's labels for a tensor first seen as an input (FORMAT.md):
 * the same words, so both traces read the same. */
static const char *const made_in_backward = "(saved inside a forward op)";
static const char *const made_elsewhere = "(made outside the recorded ops)";

struct entry {
	uintptr_t impl;        /* 0: empty slot */
	PyObject *ref;         /* weak reference; NULL: named, not seen yet */
	uint64_t id;
	const char *name;
	uint64_t source;       /* a cast of this tensor id (0: not a cast) */
	PyObject *source_ref;  /* weak reference to the source */
};

static bool active;
static PyObject *tensor_type;
static struct entry *table;
static size_t table_slots, table_used;
static uint64_t next_id = 1;
static struct obs_args scratch;
static struct obs_op *to_op;

#define MAX_DTYPES 16
static PyObject *dtype_objects[MAX_DTYPES];
static enum amp_dtype dtype_values[MAX_DTYPES];
static int ndtypes;

static PyObject *attr_cdata, *attr_dtype, *attr_shape, *attr_requires_grad,
	*attr_is_leaf, *attr_is_cuda, *attr_version, *attr_is_view,
	*attr_torch_function, *attr_enter;

/* Reading a tensor's attributes must not run a subclass's own
 * __torch_function__ (the program would see calls it never made): such a
 * tensor is read with it off (torch._C.DisableTorchFunctionSubclass, or
 * 1.13's DisableTorchFunction).  torch.Tensor, nn.Parameter and their
 * subclasses that keep torch's disabled impl have none to run. */
static PyObject *plain_types, *disabled_impl, *quiet_type;

bool fallback_active(void)
{
	return active;
}

/* Names live for the process's life (events keep pointers). */
static const char *intern(const char *name)
{
	static char **names;
	static size_t count;

	for (size_t i = 0; i < count; i++)
		if (!strcmp(names[i], name))
			return names[i];
	char **grown = realloc(names, (count + 1) * sizeof *grown);
	char *copy = strdup(name);
	if (!grown || !copy) {
		free(copy);
		if (grown)
			names = grown;
		return NULL;
	}
	names = grown;
	names[count++] = copy;
	return copy;
}

/* ------------------------------------------------------------ the table */

static bool entry_dead(const struct entry *e)
{
	return e->ref && PyWeakref_GetObject(e->ref) == Py_None;
}

static struct entry *slot_for(struct entry *slots, size_t nslots,
			      uintptr_t impl)
{
	size_t mask = nslots - 1;

	for (size_t i = (impl >> 4) * 0x9e3779b97f4a7c15ull >> 7 & mask;;
	     i = (i + 1) & mask)
		if (slots[i].impl == impl || !slots[i].impl)
			return &slots[i];
}

static void entry_clear(struct entry *e)
{
	Py_CLEAR(e->ref);
	Py_CLEAR(e->source_ref);
}

/* Rebuilds the table without its dead entries, twice as large as what is
 * left needs. */
static int table_rebuild(void)
{
	size_t live = 0;

	for (size_t i = 0; i < table_slots; i++) {
		if (table[i].impl && entry_dead(&table[i])) {
			entry_clear(&table[i]);
			table[i].impl = 0;
		} else if (table[i].impl) {
			live++;
		}
	}
	size_t slots = 1024;
	while (slots < live * 4)
		slots *= 2;
	struct entry *grown = calloc(slots, sizeof *grown);
	if (!grown)
		return -1;
	for (size_t i = 0; i < table_slots; i++)
		if (table[i].impl)
			*slot_for(grown, slots, table[i].impl) = table[i];
	free(table);
	table = grown;
	table_slots = slots;
	table_used = live;
	return 0;
}

/* The entry of `impl`, made when absent or dead. */
static struct entry *entry_for(uintptr_t impl)
{
	if ((table_used + 1) * 2 > table_slots && table_rebuild() != 0)
		return NULL;
	struct entry *e = slot_for(table, table_slots, impl);
	if (e->impl && entry_dead(e))
		entry_clear(e);
	else if (e->impl)
		return e;
	if (!e->impl)
		table_used++;
	*e = (struct entry){ .impl = impl, .id = next_id++ };
	return e;
}

/* Whether reading `tensor`'s attributes would run Python code of its
 * class (the last type asked is remembered: ops see few types). */
static bool runs_torch_function(PyObject *tensor)
{
	static PyTypeObject *last_type;
	static bool last_answer;
	PyTypeObject *type = Py_TYPE(tensor);

	if (!quiet_type)
		return false;
	if (type == last_type)
		return last_answer;
	for (Py_ssize_t i = 0; i < PyTuple_Size(plain_types); i++)
		if ((PyObject *)type == PyTuple_GetItem(plain_types, i))
			return false;
	PyObject *impl = PyObject_GetAttr((PyObject *)type, attr_torch_function);
	last_answer = !impl || impl != disabled_impl;
	Py_XDECREF(impl);
	PyErr_Clear();
	last_type = type;
	return last_answer;
}

/* tensor.attr, or tensor.attr() when `call`, with a subclass's own
 * __torch_function__ off. */
static PyObject *read_attr(PyObject *tensor, PyObject *attr, bool call)
{
	if (!runs_torch_function(tensor))
		return call ? PyObject_CallMethodNoArgs(tensor, attr)
			    : PyObject_GetAttr(tensor, attr);
	PyObject *guard = PyObject_CallObject(quiet_type, NULL);
	PyObject *entered = guard ? PyObject_CallMethodNoArgs(guard, attr_enter)
				  : NULL;
	PyObject *v = NULL;
	if (entered) {
		v = call ? PyObject_CallMethodNoArgs(tensor, attr)
			 : PyObject_GetAttr(tensor, attr);
		PyObject *error[3];
		PyErr_Fetch(&error[0], &error[1], &error[2]);
		PyObject *left = PyObject_CallMethod(guard, "__exit__", "OOO",
						     Py_None, Py_None, Py_None);
		Py_XDECREF(left);
		PyErr_Clear();
		PyErr_Restore(error[0], error[1], error[2]);
	}
	Py_XDECREF(entered);
	Py_XDECREF(guard);
	return v;
}

static uintptr_t impl_of(PyObject *tensor)
{
	PyObject *cdata = read_attr(tensor, attr_cdata, false);
	uintptr_t impl = cdata ? (uintptr_t)PyLong_AsVoidPtr(cdata) : 0;

	Py_XDECREF(cdata);
	return impl;
}

/* The entry of a Python tensor; `fresh` names it when first seen. */
static struct entry *entry_of(PyObject *tensor, const char *fresh)
{
	uintptr_t impl = impl_of(tensor);

	if (!impl)
		return NULL;
	uint64_t first_new = next_id;
	struct entry *e = entry_for(impl);
	if (!e)
		return NULL;
	if (!e->ref) {
		e->ref = PyWeakref_NewRef(tensor, NULL);
		if (!e->ref)
			PyErr_Clear();
	}
	if (fresh && e->id >= first_new)
		e->name = fresh;
	return e;
}

/* The live entry of a Python tensor, or NULL: looking never makes one
 * (a tensor the trace has not shown gets no id). */
static struct entry *entry_find(PyObject *tensor)
{
	uintptr_t impl = impl_of(tensor);

	if (!impl || !table_slots) {
		PyErr_Clear();
		return NULL;
	}
	struct entry *e = slot_for(table, table_slots, impl);
	if (!e->impl || !e->ref || entry_dead(e))
		return NULL;
	return e;
}

uint64_t fallback_tensor_id(PyObject *tensor, const char **name)
{
	struct entry *e = entry_of(tensor, made_elsewhere);

	if (!e)
		PyErr_Clear();
	*name = e ? e->name : NULL;
	return e ? e->id : 0;
}

uint64_t fallback_name_tensor(uintptr_t impl, const char *name)
{
	if (!impl)
		return 0;
	struct entry *e = entry_for(impl);
	if (!e)
		return 0;
	/* A parameter seen before its module ran has a "(made ...)" label. */
	if (!e->name || e->name[0] == '(')
		e->name = intern(name);
	return e->id;
}

const char *fallback_tensor_name(uintptr_t impl)
{
	if (!impl || !table_slots)
		return NULL;
	struct entry *e = slot_for(table, table_slots, impl);
	return e->impl == impl && !entry_dead(e) ? e->name : NULL;
}

/* ------------------------------------------------------- describing */

static enum amp_dtype dtype_of(PyObject *dtype)
{
	for (int i = 0; i < ndtypes; i++)
		if (dtype_objects[i] == dtype)
			return dtype_values[i];
	/* libamp has no 8/16-bit integers: the nearest type autocast treats
	 * the same way (never cast), as the observer does. */
	return AMP_DTYPE_I32;
}

static bool is_tensor(PyObject *value)
{
	return PyObject_TypeCheck(value, (PyTypeObject *)tensor_type);
}

/* A boolean attribute; false when it cannot be read. */
static bool flag(PyObject *tensor, PyObject *attr, bool call)
{
	PyObject *v = read_attr(tensor, attr, call);
	int truth = v ? PyObject_IsTrue(v) : 0;

	Py_XDECREF(v);
	return truth > 0;
}

/* Recording never breaks the program: what cannot be read is left out
 * and the error dropped. */
static void describe(PyObject *tensor, struct obs_args *a, bool optional,
		     const char *fresh)
{
	int i = a->ntensors;

	if (i >= OBS_MAX_TENSORS)
		return;
	struct producer_tensor *info = &a->tensors[i];
	*info = (struct producer_tensor){ 0 };
	a->optional[i] = optional;
	a->versions[i] = 0;
	/* the value checks need the observer (elements read in place) */
	a->data[i] = NULL;
	a->numel[i] = 0;
	a->ntensors = i + 1;
	struct entry *e = entry_of(tensor, fresh);
	if (!e) {
		PyErr_Clear();
		return;
	}
	info->id = e->id;
	info->name = e->name;
	PyObject *v = read_attr(tensor, attr_dtype, false);
	info->dtype = v ? dtype_of(v) : AMP_DTYPE_I32;
	Py_XDECREF(v);
	info->device = flag(tensor, attr_is_cuda, false) ? AMP_DEVICE_CUDA
							 : AMP_DEVICE_CPU;
	v = read_attr(tensor, attr_shape, false);
	if (v && PyTuple_Check(v)) {
		Py_ssize_t n = PyTuple_GET_SIZE(v);
		info->ndim = (uint8_t)(n > PRODUCER_MAX_DIMS ? PRODUCER_MAX_DIMS
							   : n);
		for (int d = 0; d < info->ndim; d++)
			info->shape[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(v, d));
	}
	Py_XDECREF(v);
	info->flags = (flag(tensor, attr_requires_grad, false)
			       ? PRODUCER_TENSOR_REQUIRES_GRAD : 0u) |
		      (flag(tensor, attr_is_leaf, false) ? PRODUCER_TENSOR_LEAF
							 : 0u) |
		      (flag(tensor, attr_is_view, true) ? PRODUCER_TENSOR_VIEW
							: 0u);
	v = read_attr(tensor, attr_version, false);
	a->versions[i] = v ? PyLong_AsLongLong(v) : 0;
	Py_XDECREF(v);
	PyErr_Clear();
}

/* `values`: a call's arguments in schema order (observer.cpp's
 * describe_values on the dispatcher's IValues). */
static void describe_values(PyObject *values, struct obs_args *a,
			    const char *fresh, uint64_t optional_args,
			    int dtype_index)
{
	PyObject *seq = PySequence_Fast(values, "values");

	a->ntensors = 0;
	a->dtype_arg = AMP_DTYPE_NONE;
	if (!seq) {
		PyErr_Clear();
		return;
	}
	Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
	for (Py_ssize_t i = 0; i < n; i++) {
		PyObject *v = PySequence_Fast_GET_ITEM(seq, i);
		if (i == dtype_index && v != Py_None && !is_tensor(v)) {
			a->dtype_arg = dtype_of(v);
		} else if (is_tensor(v)) {
			describe(v, a, i < 64 && (optional_args >> i & 1),
				 fresh);
		} else if (PyList_Check(v) || PyTuple_Check(v)) {
			for (Py_ssize_t k = 0; k < PySequence_Size(v); k++) {
				PyObject *t = PySequence_GetItem(v, k);
				if (t && is_tensor(t))
					describe(t, a, false, fresh);
				Py_XDECREF(t);
			}
		}
	}
	Py_DECREF(seq);
	PyErr_Clear();
}

/* (cpu_enabled, cpu_dtype, cuda_enabled, cuda_dtype, cache_enabled,
 *  grad_enabled), read by _modes.py where autocast's state is visible. */
static void autocast_of(PyObject *state, struct obs_autocast *ac)
{
	PyObject *cpu_dtype = NULL, *cuda_dtype = NULL;
	int cpu = 0, cuda = 0, cache = 1, grad = 1;

	*ac = (struct obs_autocast){ 0 };
	if (state == Py_None ||
	    !PyArg_ParseTuple(state, "pOpOpp", &cpu, &cpu_dtype, &cuda,
			      &cuda_dtype, &cache, &grad)) {
		PyErr_Clear();
		ac->dtype[AMP_DEVICE_CPU] = AMP_DTYPE_BF16;
		ac->dtype[AMP_DEVICE_CUDA] = AMP_DTYPE_F16;
		ac->cache_enabled = true;
		ac->grad_enabled = true;
		return;
	}
	ac->enabled[AMP_DEVICE_CPU] = cpu;
	ac->enabled[AMP_DEVICE_CUDA] = cuda;
	ac->dtype[AMP_DEVICE_CPU] = dtype_of(cpu_dtype);
	ac->dtype[AMP_DEVICE_CUDA] = dtype_of(cuda_dtype);
	ac->cache_enabled = cache;
	ac->grad_enabled = grad;
}

/* -------------------------------------------------------------- ops */

static struct obs_op **ops;
static Py_ssize_t nops;

static struct obs_op *op_of(Py_ssize_t handle)
{
	if (handle < 0 || handle >= nops) {
		PyErr_SetString(PyExc_ValueError, "no such fallback op");
		return NULL;
	}
	return ops[handle];
}

static struct obs_op *op_new(const char *name, const char *overload,
			     uint64_t optional_args, int dtype_index)
{
	struct obs_op **grown = realloc(ops, (nops + 1) * sizeof *grown);
	struct obs_op *op = calloc(1, sizeof *op);

	if (!grown || !op) {
		free(op);
		if (grown)
			ops = grown;
		return NULL;
	}
	ops = grown;
	snprintf(op->op, sizeof op->op, "%s", name);
	snprintf(op->overload, sizeof op->overload, "%s", overload);
	op->aten = true;
	op->optional_args = optional_args;
	op->dtype_index = dtype_index;
	ops[nops++] = op;
	return op;
}

/* ------------------------------------------------- Python entry points */

PyObject *fallback_py_init(PyObject *self, PyObject *args)
{
	PyObject *type, *dtypes, *plain = NULL, *disabled = NULL,
		*quiet = NULL;

	(void)self;
	if (!PyArg_ParseTuple(args, "OO|O!OO", &type, &dtypes, &PyTuple_Type,
			      &plain, &disabled, &quiet))
		return NULL;
	if (!PyType_Check(type)) {
		PyErr_SetString(PyExc_TypeError, "fallback_init: not a type");
		return NULL;
	}
	PyObject *seq = PySequence_Fast(dtypes, "fallback_init: dtypes");
	if (!seq)
		return NULL;
	ndtypes = 0;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq) &&
			       ndtypes < MAX_DTYPES; i++) {
		PyObject *dtype;
		const char *name;
		if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "Os",
				      &dtype, &name) ||
		    amp_dtype_from_name(name, &dtype_values[ndtypes]) != 0) {
			Py_DECREF(seq);
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_ValueError,
					     "fallback_init: unknown dtype %s",
					     name);
			return NULL;
		}
		Py_INCREF(dtype);
		dtype_objects[ndtypes++] = dtype;
	}
	Py_DECREF(seq);
	Py_INCREF(type);
	tensor_type = type;
	Py_XINCREF(plain);
	plain_types = plain;
	Py_XINCREF(disabled);
	disabled_impl = disabled;
	Py_XINCREF(quiet);
	quiet_type = quiet;
	attr_torch_function = PyUnicode_InternFromString("__torch_function__");
	attr_enter = PyUnicode_InternFromString("__enter__");
	attr_cdata = PyUnicode_InternFromString("_cdata");
	attr_dtype = PyUnicode_InternFromString("dtype");
	attr_shape = PyUnicode_InternFromString("shape");
	attr_requires_grad = PyUnicode_InternFromString("requires_grad");
	attr_is_leaf = PyUnicode_InternFromString("is_leaf");
	attr_is_cuda = PyUnicode_InternFromString("is_cuda");
	attr_version = PyUnicode_InternFromString("_version");
	attr_is_view = PyUnicode_InternFromString("_is_view");
	/* autocast's casts, as the observer names them (aten::to) */
	to_op = op_new("to", "dtype", 0, 1);
	if (!to_op || table_rebuild() != 0)
		return PyErr_NoMemory();
	active = true;
	Py_RETURN_NONE;
}

PyObject *fallback_py_op(PyObject *self, PyObject *args)
{
	const char *name, *overload;
	unsigned long long optional_args;
	int dtype_index;

	(void)self;
	if (!PyArg_ParseTuple(args, "ssKi", &name, &overload, &optional_args,
			      &dtype_index))
		return NULL;
	struct obs_op *op = op_new(name, overload, optional_args, dtype_index);
	if (!op)
		return PyErr_NoMemory();
	return Py_BuildValue(
		"nOO", nops - 1,
		events_policy_lookup(AMP_DEVICE_CPU, name, overload) ? Py_True
								      : Py_False,
		events_policy_lookup(AMP_DEVICE_CUDA, name, overload) ? Py_True
								       : Py_False);
}

/* fallback_begin(handle, values, autocast, autocast_any[, seq]) -> want:
 * an op starts (events_begin, then events_begin_args when it is wanted).
 * `seq` stands for autograd's sequence number: the autograd node the op
 * makes is announced with it (fallback_node), linking backward to it. */
PyObject *fallback_py_begin(PyObject *self, PyObject *args)
{
	Py_ssize_t handle;
	PyObject *values, *state;
	int any;
	long long seq = -1;

	(void)self;
	if (!PyArg_ParseTuple(args, "nOOp|L", &handle, &values, &state, &any,
			      &seq))
		return NULL;
	struct obs_op *op = op_of(handle);
	if (!op)
		return NULL;
	unsigned want = events_begin(op, false, seq, any);
	if (want & OBS_WANT_INPUTS) {
		struct obs_autocast ac;
		describe_values(values, &scratch,
				(want & OBS_IN_BACKWARD) ? made_in_backward
							 : made_elsewhere,
				op->optional_args, op->dtype_index);
		autocast_of(state, &ac);
		events_begin_args(&scratch, &ac);
	}
	return PyLong_FromUnsignedLong(want);
}

/* fallback_end(outputs, failed): outputs is None, a tensor or a sequence
 * of tensors (the op's results). */
PyObject *fallback_py_end(PyObject *self, PyObject *args)
{
	PyObject *outputs;
	int failed;

	(void)self;
	if (!PyArg_ParseTuple(args, "Op", &outputs, &failed))
		return NULL;
	if (outputs == Py_None) {
		events_end(NULL, failed);
		Py_RETURN_NONE;
	}
	if (is_tensor(outputs)) {
		scratch.ntensors = 0;
		describe(outputs, &scratch, false, NULL);
	} else {
		describe_values(outputs, &scratch, NULL, 0, -1);
	}
	events_end(&scratch, failed);
	Py_RETURN_NONE;
}

/* fallback_cast(source, result): autocast's aten::to inside the op that
 * began last, made before that op's inner call. */
PyObject *fallback_py_cast(PyObject *self, PyObject *args)
{
	PyObject *source, *result;
	struct obs_autocast ac = { 0 };

	(void)self;
	if (!PyArg_ParseTuple(args, "OO", &source, &result))
		return NULL;
	if (!is_tensor(source) || !is_tensor(result))
		Py_RETURN_NONE;
	unsigned want = events_begin(to_op, false, -1, false);
	scratch.ntensors = 0;
	scratch.dtype_arg = AMP_DTYPE_NONE;
	describe(source, &scratch, false, made_elsewhere);
	uint64_t source_id = scratch.tensors[0].id;
	if (want & OBS_WANT_INPUTS)
		events_begin_args(&scratch, &ac);
	scratch.ntensors = 0;
	describe(result, &scratch, false, NULL);
	events_end((want & OBS_WANT_OUTPUTS) ? &scratch : NULL, false);
	struct entry *e = entry_of(result, NULL);
	if (e && source_id) {
		e->source = source_id;
		Py_XSETREF(e->source_ref, PyWeakref_NewRef(source, NULL));
	}
	PyErr_Clear();
	Py_RETURN_NONE;
}

/* The tensors of `seen` (sequences of argument tuples) that are casts,
 * appended to `out` (at most `max`). */
static int casts_in(PyObject *seen, PyObject **out, struct entry **entries,
		    int n, int max)
{
	if (n >= max)
		return n;
	if (is_tensor(seen)) {
		struct entry *e = entry_find(seen);
		if (e && e->source) {
			out[n] = seen;
			entries[n++] = e;
		}
		PyErr_Clear();
		return n;
	}
	if (!PyList_Check(seen) && !PyTuple_Check(seen))
		return n;
	PyObject *seq = PySequence_Fast(seen, "seen");
	if (!seq)
		return n;
	for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); i++)
		n = casts_in(PySequence_Fast_GET_ITEM(seq, i), out, entries, n,
			     max);
	Py_DECREF(seq);
	return n;
}

/* fallback_inner(handle, values, seen): the op run again on its cast
 * arguments.  Each argument autocast handed a cast of (made now or taken
 * from its cache) is that cast: found among the tensors the op's
 * implementation consumed (`seen`) by the source it was made from. */
PyObject *fallback_py_inner(PyObject *self, PyObject *args)
{
	Py_ssize_t handle;
	PyObject *values, *seen;
	PyObject *casts[OBS_MAX_TENSORS];
	struct entry *entries[OBS_MAX_TENSORS];
	struct obs_autocast ac = { 0 };

	(void)self;
	if (!PyArg_ParseTuple(args, "nOO", &handle, &values, &seen))
		return NULL;
	struct obs_op *op = op_of(handle);
	if (!op)
		return NULL;
	/* Autocast is off inside the op it wraps (no op of its own here). */
	unsigned want = events_begin(op, false, -1, false);
	if (want & OBS_WANT_INPUTS) {
		int ncasts = casts_in(seen, casts, entries, 0, OBS_MAX_TENSORS);
		describe_values(values, &scratch, made_elsewhere,
				op->optional_args, op->dtype_index);
		for (int i = 0; i < scratch.ntensors; i++)
			for (int c = 0; c < ncasts; c++)
				if (entries[c]->source == scratch.tensors[i].id) {
					struct obs_args one = { 0 };
					describe(casts[c], &one, false, NULL);
					scratch.tensors[i] = one.tensors[0];
					break;
				}
		events_begin_args(&scratch, &ac);
	}
	events_end(NULL, false);
	Py_RETURN_NONE;
}

/* fallback_sources(values) -> a list: each cast autocast made replaced by
 * its source (the arguments as called, for an op seen only below
 * autocast). */
PyObject *fallback_py_sources(PyObject *self, PyObject *args)
{
	PyObject *values;

	(void)self;
	if (!PyArg_ParseTuple(args, "O", &values))
		return NULL;
	PyObject *list = PySequence_List(values);
	if (!list)
		return NULL;
	for (Py_ssize_t i = 0; i < PyList_GET_SIZE(list); i++) {
		PyObject *v = PyList_GET_ITEM(list, i);
		if (!is_tensor(v))
			continue;
		struct entry *e = entry_find(v);
		PyObject *source = e && e->source_ref
					   ? PyWeakref_GetObject(e->source_ref)
					   : Py_None;
		if (source != Py_None) {
			Py_INCREF(source);
			PyList_SetItem(list, i, source);
		}
	}
	PyErr_Clear();
	return list;
}

/* fallback_node(seq) -> True / fallback_node(None): an autograd node
 * starts running backward (its pre-hook) or ends (its hook); `seq` is the
 * one the op that made it began with. */
/* The op of the autograd node named `name` (its class: ToCopyBackward0),
 * made once; a few dozen kinds of node run in a program. */
static struct obs_op *node_op(const char *name)
{
	static struct obs_op **nodes;
	static size_t nnodes;

	for (size_t i = 0; i < nnodes; i++)
		if (!strcmp(nodes[i]->op, name))
			return nodes[i];
	struct obs_op **grown = realloc(nodes, (nnodes + 1) * sizeof *grown);
	if (!grown)
		return NULL;
	nodes = grown;
	struct obs_op *op = op_new(name, "", 0, -1);
	if (!op)
		return NULL;
	op->aten = false;
	op->backward_node = true;
	nodes[nnodes++] = op;
	return op;
}

PyObject *fallback_py_node(PyObject *self, PyObject *args)
{
	PyObject *seq;
	const char *name = "(autograd node)";

	(void)self;
	if (!PyArg_ParseTuple(args, "O|s", &seq, &name))
		return NULL;
	if (seq == Py_None) {
		events_end(NULL, false);
		Py_RETURN_NONE;
	}
	struct obs_op *node = node_op(name);
	if (!node)
		return PyErr_NoMemory();
	long long number = PyLong_AsLongLong(seq);
	if (number == -1 && PyErr_Occurred())
		return NULL;
	events_begin(node, true, number, false);
	Py_RETURN_TRUE;
}
