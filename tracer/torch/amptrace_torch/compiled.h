/* torch.compile's side of the bridge (compiled.c): what _compile.py sees
 * of a compiled program, as events.  A compile is an op (`compile:f`)
 * inside which the ops torch runs on fake tensors are not recorded and
 * the graph's casts are (once, as compiled casts); each call of a
 * compiled region is an op (`compiled:f`) that parents the ops it runs;
 * notes and divergences are amp.diag events.  libamp's policy table
 * answers what eager autocast would have done.  Everything here runs
 * with the GIL held. */
#ifndef AMPTRACE_TORCH_COMPILED_H
#define AMPTRACE_TORCH_COMPILED_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>

/* The id and name of a Python tensor as its events give them (module.c:
 * the observer's, or the fallback's). */
uint64_t bridge_tensor_id(PyObject *tensor, const char **name);

PyObject *compiled_py_ignore(PyObject *self, PyObject *args);
PyObject *compiled_py_now(PyObject *self, PyObject *unused);
PyObject *compiled_py_phase(PyObject *self, PyObject *unused);
PyObject *compiled_py_begin(PyObject *self, PyObject *args);
PyObject *compiled_py_end(PyObject *self, PyObject *args);
PyObject *compiled_py_cast(PyObject *self, PyObject *args);
PyObject *compiled_py_diag(PyObject *self, PyObject *args);
PyObject *compiled_py_plan(PyObject *self, PyObject *args);
PyObject *compiled_py_link(PyObject *self, PyObject *args);

#define COMPILED_METHODS \
	{ "compiled_ignore", compiled_py_ignore, METH_VARARGS, \
	  "compiled_ignore(on) -> previous: this thread's ops unrecorded" }, \
	{ "compiled_now", compiled_py_now, METH_NOARGS, \
	  "compiled_now() -> the trace clock, ns" }, \
	{ "compiled_phase", compiled_py_phase, METH_NOARGS, \
	  "compiled_phase() -> this thread's phase (forward, optimizer, " \
	  "backward)" }, \
	{ "compiled_begin", compiled_py_begin, METH_VARARGS, \
	  "compiled_begin(name, graph, phase, forward_op_id, tensors, " \
	  "autocast, parent, begin_ns) -> op_id" }, \
	{ "compiled_end", compiled_py_end, METH_VARARGS, \
	  "compiled_end(op_id, tensors, error, name, graph[, handled])" }, \
	{ "compiled_cast", compiled_py_cast, METH_VARARGS, \
	  "compiled_cast(op_id, cast): a compiled graph's cast" }, \
	{ "compiled_diag", compiled_py_diag, METH_VARARGS, \
	  "compiled_diag(kind, message, op_id): a note or a divergence" }, \
	{ "compiled_plan", compiled_py_plan, METH_VARARGS, \
	  "compiled_plan(device, dtype, op, overload, args, cache) -> " \
	  "(policy, casts) or None" }, \
	{ "compiled_link", compiled_py_link, METH_VARARGS, \
	  "compiled_link(seq, op_id): backward ops of seq differentiate op" },

#endif /* AMPTRACE_TORCH_COMPILED_H */
