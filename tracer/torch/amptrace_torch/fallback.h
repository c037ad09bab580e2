/* The pure-Python fallback's C side (fallback.c): when the C++ observer
 * is not there (no compiler or no torch headers) or
 * AMPTRACE_TORCH_FALLBACK=1 asks for it, _modes.py watches torch through
 * Python's TorchFunctionMode and TorchDispatchMode and hands what it sees
 * to the same event logic (events.c) through these entry points, filling
 * the same struct obs_op / obs_args / obs_autocast the observer fills.
 * Everything here runs with the GIL held. */
#ifndef AMPTRACE_TORCH_FALLBACK_H
#define AMPTRACE_TORCH_FALLBACK_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdbool.h>
#include <stdint.h>

/* The fallback was chosen (fallback_init ran): the observer stays out. */
bool fallback_active(void);
/* Names the tensor whose TensorImpl is `impl` (a Tensor's _cdata), as
 * observer_name_tensor does for the observer.  Returns its id. */
uint64_t fallback_name_tensor(uintptr_t impl, const char *name);
/* The id and name of a Python tensor, as the observer's tensor_id gives
 * them. */
uint64_t fallback_tensor_id(PyObject *tensor, const char **name);
/* The name of the tensor whose TensorImpl is `impl`, or NULL. */
const char *fallback_tensor_name(uintptr_t impl);

/* The Python entry points, for the module's method table. */
PyObject *fallback_py_init(PyObject *self, PyObject *args);
PyObject *fallback_py_op(PyObject *self, PyObject *args);
PyObject *fallback_py_begin(PyObject *self, PyObject *args);
PyObject *fallback_py_end(PyObject *self, PyObject *args);
PyObject *fallback_py_cast(PyObject *self, PyObject *args);
PyObject *fallback_py_inner(PyObject *self, PyObject *args);
PyObject *fallback_py_sources(PyObject *self, PyObject *args);
PyObject *fallback_py_node(PyObject *self, PyObject *args);

#define FALLBACK_METHODS \
	{ "fallback_init", fallback_py_init, METH_VARARGS, \
	  "fallback_init(TensorBase, dtypes[, plain_types, disabled_impl, " \
	  "quiet_type]): record through Python modes" }, \
	{ "fallback_op", fallback_py_op, METH_VARARGS, \
	  "fallback_op(op, overload, optional_mask, dtype_index) -> " \
	  "(handle, listed_cpu, listed_cuda)" }, \
	{ "fallback_begin", fallback_py_begin, METH_VARARGS, \
	  "fallback_begin(handle, values, autocast, autocast_any[, seq]) " \
	  "-> want" }, \
	{ "fallback_end", fallback_py_end, METH_VARARGS, \
	  "fallback_end(outputs, failed)" }, \
	{ "fallback_cast", fallback_py_cast, METH_VARARGS, \
	  "fallback_cast(source, result): autocast's cast inside an op" }, \
	{ "fallback_inner", fallback_py_inner, METH_VARARGS, \
	  "fallback_inner(handle, values, seen): the op run on its casts" }, \
	{ "fallback_sources", fallback_py_sources, METH_VARARGS, \
	  "fallback_sources(values) -> values with casts undone" }, \
	{ "fallback_node", fallback_py_node, METH_VARARGS, \
	  "fallback_node(seq[, name]): an autograd node runs; None: it ended" },

#endif /* AMPTRACE_TORCH_FALLBACK_H */
