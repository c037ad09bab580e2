/* The Python layer's wrappers of torch's functions and methods
 * (autograd.backward, Optimizer.step, GradScaler's steps, Module.__init__,
 * Module.train)
 * as C callables (wrap.c): a C call leaves no frame, so a traceback
 * through them reads as it does untraced.
 *
 *     wrapper(fn, phase=None, after=None, closure_phase=None,
 *             outermost=False, before=None, always=None, returns=False)
 *
 * calls fn(*args, **kwargs) with the calling thread's phase set to
 * `phase` ("backward", "optimizer"), before it (in the phase)
 * before(*args, **kwargs), then, when fn returned, still in that phase,
 * after(result, *args, **kwargs), then, whether fn returned or raised,
 * always(*args, **kwargs); the failures of before, after and always are
 * dropped (the Python layer reports its failures itself); the phase is
 * restored last.  With returns, what after returns is the call's result
 * (fn's, when after failed).  With closure_phase, an optimizer step's closure (args[1] or
 * closure=: Lightning's, LBFGS's) runs in that phase: the forward and
 * backward passes it runs are not the step's.  With outermost, after
 * runs only when the call entered the phase (the thread was in another):
 * an optimizer step's end, not that of one inside another or inside
 * GradScaler.step (_steps.py).  It binds as a method
 * where a class holds it, keeps attributes (functools.update_wrapper), and
 * pickles by its __qualname__, as the function it stands for. */
#ifndef AMPTRACE_TORCH_WRAP_H
#define AMPTRACE_TORCH_WRAP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Readies the wrapper type; 0, or -1 with a Python error set. */
int wrap_init(void);
/* wrapper(fn, phase=None, after=None) -> a wrapper of fn. */
PyObject *wrap_py_new(PyObject *self, PyObject *args, PyObject *kwargs);

#define WRAP_METHODS \
	{ "wrapper", (PyCFunction)(void (*)(void))wrap_py_new, \
	  METH_VARARGS | METH_KEYWORDS, \
	  "wrapper(fn, phase=None, after=None, closure_phase=None, " \
	  "outermost=False): fn in a phase, then after (outermost: only " \
	  "when the call entered the phase)" },

#endif /* AMPTRACE_TORCH_WRAP_H */
