/* C wrappers for the Python layer (wrap.h): a phase around a call and a
 * record after it, with no Python frame of their own.  Stable ABI only:
 * the type comes from PyType_FromSpec and its attributes live in a dict
 * this file looks up itself (no __dictoffset__ before Python 3.9). */
#include "wrap.h"

#include "events.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

struct wrapper {
	PyObject_HEAD
	PyObject *fn;
	PyObject *before;     /* NULL: nothing before */
	PyObject *after;      /* NULL: nothing after */
	PyObject *always;     /* NULL: nothing once it returned or raised */
	PyObject *dict;       /* attributes: __wrapped__, __name__, ... */
	int phase;            /* enum amp_phase, or -1: left as it is */
	int closure_phase;    /* an optimizer closure's phase, or -1 */
	/* after only when this call entered the phase (an optimizer step
	 * not inside another, nor inside GradScaler.step: _steps.py) */
	bool outermost;
	bool returns;         /* what after returns is the call's result */
};

static PyObject *wrapper_type;
static PyObject *method_type; /* types.MethodType: binding to an instance */
static PyObject *str_dict, *str_qualname;

static int wrapper_traverse(PyObject *self, visitproc visit, void *arg)
{
	struct wrapper *w = (struct wrapper *)self;

	Py_VISIT(w->fn);
	Py_VISIT(w->before);
	Py_VISIT(w->after);
	Py_VISIT(w->always);
	Py_VISIT(w->dict);
	return 0;
}

static int wrapper_clear(PyObject *self)
{
	struct wrapper *w = (struct wrapper *)self;

	Py_CLEAR(w->fn);
	Py_CLEAR(w->before);
	Py_CLEAR(w->after);
	Py_CLEAR(w->always);
	Py_CLEAR(w->dict);
	return 0;
}

static void wrapper_dealloc(PyObject *self)
{
	PyTypeObject *type = Py_TYPE(self);
	freefunc free_object = (freefunc)PyType_GetSlot(type, Py_tp_free);

	PyObject_GC_UnTrack(self);
	wrapper_clear(self);
	free_object(self);
	Py_DECREF(type);
}

/* after(result, *args, **kwargs): a failure there is the recording's,
 * never the program's.  Its value (a new reference), or NULL when it
 * failed. */
static PyObject *call_after(struct wrapper *w, PyObject *result,
			    PyObject *args, PyObject *kwargs)
{
	Py_ssize_t n = PyTuple_Size(args);
	PyObject *with_result = PyTuple_New(n + 1);
	PyObject *done = NULL;

	if (with_result) {
		Py_INCREF(result);
		PyTuple_SetItem(with_result, 0, result);
		for (Py_ssize_t i = 0; i < n; i++) {
			PyObject *item = PyTuple_GetItem(args, i);
			Py_INCREF(item);
			PyTuple_SetItem(with_result, i + 1, item);
		}
		done = PyObject_Call(w->after, with_result, kwargs);
		Py_DECREF(with_result);
	}
	PyErr_Clear();
	return done;
}

static PyObject *wrapper_new(PyObject *fn, int phase, PyObject *after,
			      int closure_phase, bool outermost);

/* before(*args, **kwargs), likewise. */
static void call_before(struct wrapper *w, PyObject *args, PyObject *kwargs)
{
	PyObject *done = PyObject_Call(w->before, args, kwargs);

	Py_XDECREF(done);
	PyErr_Clear();
}

/* always(*args, **kwargs), whether fn returned or raised: what it raised
 * is the caller's still. */
static void call_always(struct wrapper *w, PyObject *args, PyObject *kwargs)
{
	PyObject *type, *value, *traceback;

	PyErr_Fetch(&type, &value, &traceback);
	PyObject *done = PyObject_Call(w->always, args, kwargs);
	Py_XDECREF(done);
	PyErr_Clear();
	PyErr_Restore(type, value, traceback);
}

/* args and kwargs with an optimizer step's closure (args[1] or
 * closure=) run in `phase`: Lightning's and LBFGS's closures run the
 * forward and backward passes inside the step.  New references. */
static void wrap_closure(PyObject **args, PyObject **kwargs, int phase)
{
	PyObject *closure = *kwargs ? PyDict_GetItemString(*kwargs, "closure")
				    : NULL;
	bool keyword = closure != NULL;

	if (!keyword && PyTuple_Size(*args) >= 2)
		closure = PyTuple_GetItem(*args, 1);
	if (!closure || closure == Py_None || !PyCallable_Check(closure))
		return;
	PyObject *wrapped = wrapper_new(closure, phase, NULL, -1, false);
	if (!wrapped) {
		PyErr_Clear();
		return;
	}
	if (keyword) {
		PyObject *copy = PyDict_Copy(*kwargs);
		if (copy && PyDict_SetItemString(copy, "closure", wrapped) == 0) {
			*kwargs = copy;
			Py_INCREF(*args);
		} else {
			Py_XDECREF(copy);
			PyErr_Clear();
		}
	} else {
		Py_ssize_t n = PyTuple_Size(*args);
		PyObject *copy = PyTuple_New(n);
		for (Py_ssize_t i = 0; copy && i < n; i++) {
			PyObject *item = i == 1 ? wrapped : PyTuple_GetItem(*args, i);
			Py_INCREF(item);
			PyTuple_SetItem(copy, i, item);
		}
		if (copy) {
			*args = copy;
			Py_XINCREF(*kwargs);
		} else {
			PyErr_Clear();
		}
	}
	Py_DECREF(wrapped);
}

static PyObject *wrapper_call(PyObject *self, PyObject *args,
			      PyObject *kwargs)
{
	struct wrapper *w = (struct wrapper *)self;
	enum amp_phase previous = AMP_PHASE_FORWARD;
	PyObject *given_args = args, *given_kwargs = kwargs;

	if (w->closure_phase >= 0)
		wrap_closure(&args, &kwargs, w->closure_phase);

	if (w->phase >= 0) {
		previous = events_phase();
		events_set_phase((enum amp_phase)w->phase);
	}
	if (w->before)
		call_before(w, args, kwargs);
	PyObject *result = PyObject_Call(w->fn, args, kwargs);
	/* in the phase still: what it records (a scale read) is the call's */
	if (result && w->after &&
	    (!w->outermost || (w->phase >= 0 && (int)previous != w->phase))) {
		PyObject *done = call_after(w, result, args, kwargs);
		if (done && w->returns) {
			Py_DECREF(result);
			result = done;
		} else {
			Py_XDECREF(done);
		}
	}
	if (w->always)
		call_always(w, args, kwargs);
	if (w->phase >= 0)
		events_set_phase(previous);
	if (args != given_args) {
		Py_DECREF(args);
		Py_XDECREF(kwargs);
	} else if (kwargs != given_kwargs) {
		Py_DECREF(kwargs);
		Py_DECREF(args);
	}
	return result;
}

/* Held by a class, it binds to the instance as a function would. */
static PyObject *wrapper_get(PyObject *self, PyObject *instance,
			     PyObject *owner)
{
	(void)owner;
	if (!instance || instance == Py_None) {
		Py_INCREF(self);
		return self;
	}
	return PyObject_CallFunctionObjArgs(method_type, self, instance, NULL);
}

static PyObject *wrapper_getattro(PyObject *self, PyObject *name)
{
	struct wrapper *w = (struct wrapper *)self;

	if (PyUnicode_Check(name) &&
	    PyUnicode_Compare(name, str_dict) == 0) {
		Py_INCREF(w->dict);
		return w->dict;
	}
	PyObject *found = PyDict_GetItemWithError(w->dict, name);
	if (found) {
		Py_INCREF(found);
		return found;
	}
	if (PyErr_Occurred())
		return NULL;
	return PyObject_GenericGetAttr(self, name);
}

static int wrapper_setattro(PyObject *self, PyObject *name, PyObject *value)
{
	struct wrapper *w = (struct wrapper *)self;

	if (value)
		return PyDict_SetItem(w->dict, name, value);
	if (PyDict_DelItem(w->dict, name) == 0)
		return 0;
	PyErr_SetObject(PyExc_AttributeError, name);
	return -1;
}

/* Pickled as a reference to the function it stands for (its module and
 * __qualname__), as that function would be. */
static PyObject *wrapper_reduce(PyObject *self, PyObject *unused)
{
	(void)unused;
	return PyObject_GetAttr(self, str_qualname);
}

static PyMethodDef wrapper_methods[] = {
	{ "__reduce__", wrapper_reduce, METH_NOARGS, NULL },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot wrapper_slots[] = {
	{ Py_tp_call, (void *)wrapper_call },
	{ Py_tp_descr_get, (void *)wrapper_get },
	{ Py_tp_getattro, (void *)wrapper_getattro },
	{ Py_tp_setattro, (void *)wrapper_setattro },
	{ Py_tp_traverse, (void *)wrapper_traverse },
	{ Py_tp_clear, (void *)wrapper_clear },
	{ Py_tp_dealloc, (void *)wrapper_dealloc },
	{ Py_tp_methods, wrapper_methods },
	{ 0, NULL },
};

static PyType_Spec wrapper_spec = {
	.name = "amptrace_torch._bridge.wrapper",
	.basicsize = sizeof(struct wrapper),
	.flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
	.slots = wrapper_slots,
};

int wrap_init(void)
{
	PyObject *types = PyImport_ImportModule("types");

	if (!types)
		return -1;
	method_type = PyObject_GetAttrString(types, "MethodType");
	Py_DECREF(types);
	str_dict = PyUnicode_InternFromString("__dict__");
	str_qualname = PyUnicode_InternFromString("__qualname__");
	wrapper_type = PyType_FromSpec(&wrapper_spec);
	return method_type && str_dict && str_qualname && wrapper_type ? 0
									 : -1;
}

static PyObject *wrapper_new(PyObject *fn, int phase, PyObject *after,
			      int closure_phase, bool outermost)
{
	allocfunc alloc = (allocfunc)PyType_GetSlot((PyTypeObject *)wrapper_type,
						    Py_tp_alloc);
	struct wrapper *w =
		(struct wrapper *)alloc((PyTypeObject *)wrapper_type, 0);
	if (!w)
		return NULL;
	w->dict = PyDict_New();
	if (!w->dict) {
		Py_DECREF(w);
		return NULL;
	}
	Py_INCREF(fn);
	w->fn = fn;
	Py_XINCREF(after);
	w->after = after;
	w->phase = phase;
	w->closure_phase = closure_phase;
	w->outermost = outermost;
	return (PyObject *)w;
}

/* A phase's number from its name; -1 (a ValueError set) if none. */
static int phase_named(const char *name)
{
	for (int p = 0; p < AMP_PHASE_COUNT; p++)
		if (!strcmp(name, amp_phase_name((enum amp_phase)p)))
			return p;
	PyErr_Format(PyExc_ValueError, "unknown phase %s", name);
	return -1;
}

PyObject *wrap_py_new(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char *keywords[] = { "fn", "phase", "after", "closure_phase",
				    "outermost", "before", "always", "returns",
				    NULL };
	PyObject *fn, *after = Py_None, *before = Py_None, *always = Py_None;
	const char *phase = NULL, *closure_phase = NULL;
	int phase_number = -1, closure_number = -1, outermost = 0, returns = 0;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|zOzpOOp", keywords,
					 &fn, &phase, &after, &closure_phase,
					 &outermost, &before, &always,
					 &returns))
		return NULL;
	if ((phase && (phase_number = phase_named(phase)) < 0) ||
	    (closure_phase &&
	     (closure_number = phase_named(closure_phase)) < 0))
		return NULL;
	PyObject *w = wrapper_new(fn, phase_number,
				  after == Py_None ? NULL : after,
				  closure_number, outermost);
	if (w && before != Py_None) {
		Py_INCREF(before);
		((struct wrapper *)w)->before = before;
	}
	if (w)
		((struct wrapper *)w)->returns = returns;
	if (w && always != Py_None) {
		Py_INCREF(always);
		((struct wrapper *)w)->always = always;
	}
	return w;
}
