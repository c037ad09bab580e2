/* amptrace_torch._bridge: the CPython extension the Python layer calls.
 *
 * It holds the bridge's producer: producer.c is compiled into this module
 * with hidden visibility, so its calls bind here and not to the copy the
 * preloaded libamp recorder exports (`amptrace run` preloads it into every
 * process; without libamp it stays idle).  One producer per process.
 *
 * Each entry point is a thin conversion to events.c or the observer:
 * Python calls cost ~50-80 ns each this way (ctypes: ~500 ns).
 *
 * It needs no torch to build and uses CPython's stable ABI (one build
 * serves every Python >= 3.8): what depends on the exact torch is the
 * observer library, bound at run time by load_observer(). */
#define PY_SSIZE_T_CLEAN
#define Py_LIMITED_API 0x03080000
#include <Python.h>

#include "compiled.h"
#include "events.h"
#include "gpu.h"
#include "fallback.h"
#include "producer.h"
#include "value_stats.h"
#include "values.h"
#include "window_flow.h"
#include "wrap.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

/* Scope names live for the process's life (events keep pointers). */
static const char *intern(const char *name)
{
	static char **names;
	static size_t count;
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const char *found = NULL;

	if (!name)
		return NULL;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < count && !found; i++)
		if (!strcmp(names[i], name))
			found = names[i];
	if (!found) {
		char **grown = realloc(names, (count + 1) * sizeof *grown);
		char *copy = strdup(name);
		if (grown && copy) {
			names = grown;
			names[count++] = copy;
			found = copy;
		} else {
			free(copy);
			if (grown)
				names = grown;
		}
	}
	pthread_mutex_unlock(&lock);
	return found;
}

static void after_fork_in_child(void)
{
	events_after_fork();
}

static void install_fork_handler(void)
{
	pthread_atfork(NULL, NULL, after_fork_in_child);
}

static const struct obs_events events_table = {
	events_begin_asking, events_begin_args, events_end,
	value_stats,	     value_stats_read,
};
static struct obs_observer observer; /* bound by load_observer */

/* load_observer(path): binds and installs the observer library built for
 * the running torch (once per process; the callback stays off until
 * attach). */
static PyObject *bridge_load_observer(PyObject *self, PyObject *args)
{
	const char *path;
	char error[512];

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &path))
		return NULL;
	if (observer.install)
		Py_RETURN_NONE;
	/* RTLD_LOCAL: its torch symbols bind to the libraries torch loaded
	 * (same sonames); it is never closed (torch holds its callback). */
	void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!handle) {
		PyErr_Format(PyExc_RuntimeError, "cannot load the observer: %s",
			     dlerror());
		return NULL;
	}
	obs_bind_fn bind = (obs_bind_fn)dlsym(handle, OBS_BIND_SYMBOL);
	struct obs_observer bound;
	if (!bind || bind(OBS_ABI_VERSION, &events_table, &bound) != 0) {
		PyErr_Format(PyExc_RuntimeError,
			     "%s is not an observer of this amptrace "
			     "(interface version %d)", path, OBS_ABI_VERSION);
		return NULL;
	}
	if (bound.install(error, sizeof error) != 0) {
		PyErr_Format(PyExc_RuntimeError,
			     "cannot observe torch's ops: %s", error);
		return NULL;
	}
	observer = bound;
	values_bind(&observer);
	Py_RETURN_NONE;
}

/* gpu_module(path): where libamp's CUDA module is, for kernel timing
 * ("" when amptrace has none). */
static PyObject *bridge_gpu_module(PyObject *self, PyObject *args)
{
	const char *path;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &path))
		return NULL;
	gpu_set_module(path);
	Py_RETURN_NONE;
}

/* attach(raw_dir, framework): starts recording into raw_dir. */
static PyObject *bridge_attach(PyObject *self, PyObject *args)
{
	const char *raw_dir, *framework;
	static pthread_once_t fork_handler = PTHREAD_ONCE_INIT;

	(void)self;
	if (!PyArg_ParseTuple(args, "ss", &raw_dir, &framework))
		return NULL;
	/* _framework() picked the table (events_policy_table) first */
	struct producer_info info = {
		.framework = framework,
		.policy_table = amp_torch_table(events_policy_version())->name,
		.names = producer_amp_names(),
	};
	if (producer_attach(raw_dir, &info) != 0) {
		PyErr_Format(PyExc_RuntimeError, "cannot record into %s",
			     raw_dir);
		return NULL;
	}
	pthread_once(&fork_handler, install_fork_handler);
	if (observer.enable)
		observer.enable(true);
	Py_RETURN_NONE;
}

static PyObject *bridge_detach(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	values_flush();
	if (observer.enable)
		observer.enable(false);
	gpu_end();
	producer_detach();
	Py_RETURN_NONE;
}

static PyObject *bridge_mark_exit(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	values_flush();
	gpu_end();
	producer_mark_exit();
	Py_RETURN_NONE;
}

static PyObject *bridge_policy_table(PyObject *self, PyObject *args)
{
	const char *version;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &version))
		return NULL;
	return PyUnicode_FromString(events_policy_table(version));
}

static int dtype_arg(const char *name, enum amp_dtype *out)
{
	if (amp_dtype_from_name(name, out) == 0)
		return 0;
	PyErr_Format(PyExc_ValueError, "unknown dtype %s", name);
	return -1;
}

/* scope(enter, depth, device, dtype, enabled, cache_enabled, name) */
static PyObject *bridge_scope(PyObject *self, PyObject *args)
{
	int enter, depth, enabled, cache_enabled;
	const char *device_name, *dtype_name, *name;
	enum amp_device_type device;
	enum amp_dtype dtype;

	(void)self;
	if (!PyArg_ParseTuple(args, "pissppz", &enter, &depth, &device_name,
			      &dtype_name, &enabled, &cache_enabled, &name))
		return NULL;
	if (amp_device_type_from_name(device_name, &device) != 0) {
		/* xpu, hpu, ...: libamp has cpu and cuda only. */
		Py_RETURN_NONE;
	}
	if (dtype_arg(dtype_name, &dtype) != 0)
		return NULL;
	struct producer_scope scope = {
		.depth = depth, .device = (uint8_t)device,
		.dtype = (uint8_t)dtype,
		.enabled = enabled, .cache_enabled = cache_enabled,
		.scope = intern(name),
	};
	events_scope(enter, &scope);
	Py_RETURN_NONE;
}

/* module_name(path, class_name) -> handle (0: none) */
static PyObject *bridge_module_name(PyObject *self, PyObject *args)
{
	const char *path, *class_name;

	(void)self;
	if (!PyArg_ParseTuple(args, "ss", &path, &class_name))
		return NULL;
	return PyLong_FromLong(events_module_name(path, class_name));
}

/* module_enter(handle), module_exit(handle): a module's forward starts
 * and ends on this thread. */
static PyObject *bridge_module_enter(PyObject *self, PyObject *handle)
{
	(void)self;
	long module = PyLong_AsLong(handle);
	if (module == -1 && PyErr_Occurred())
		return NULL;
	events_module_enter((int)module);
	Py_RETURN_NONE;
}

static PyObject *bridge_module_exit(PyObject *self, PyObject *handle)
{
	(void)self;
	long module = PyLong_AsLong(handle);
	if (module == -1 && PyErr_Occurred())
		return NULL;
	events_module_exit((int)module);
	Py_RETURN_NONE;
}

/* module_depth() -> how many modules' forwards run on this thread */
static PyObject *bridge_module_depth(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyLong_FromLong(events_module_depth());
}

static PyObject *bridge_cache_clear(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	events_cache_clear();
	Py_RETURN_NONE;
}

/* set_inference_mode(enabled): torch.inference_mode's state here. */
static PyObject *bridge_set_inference_mode(PyObject *self, PyObject *args)
{
	int enabled;

	(void)self;
	if (!PyArg_ParseTuple(args, "p", &enabled))
		return NULL;
	events_set_inference_mode(enabled);
	Py_RETURN_NONE;
}

/* custom_function(name): a custom autograd Function's class name. */
static PyObject *bridge_custom_function(PyObject *self, PyObject *args)
{
	const char *name;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &name))
		return NULL;
	events_custom_function(name);
	Py_RETURN_NONE;
}

/* custom_casts(inside) -> previous: inside custom_fwd's input casts. */
static PyObject *bridge_custom_casts(PyObject *self, PyObject *args)
{
	int inside;

	(void)self;
	if (!PyArg_ParseTuple(args, "p", &inside))
		return NULL;
	return PyBool_FromLong(events_custom_casts(inside));
}

/* phase() -> this thread's phase outside autograd nodes ("forward",
 * "backward" inside autograd.backward, "optimizer", "other"). */
static PyObject *bridge_phase(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyUnicode_FromString(amp_phase_name(events_phase()));
}

/* name_tensor(cdata, name) -> id: cdata is a Tensor's _cdata. */
static PyObject *bridge_name_tensor(PyObject *self, PyObject *args)
{
	unsigned long long impl;
	const char *name;

	(void)self;
	if (!PyArg_ParseTuple(args, "Ks", &impl, &name))
		return NULL;
	if (fallback_active())
		return PyLong_FromUnsignedLongLong(
			fallback_name_tensor((uintptr_t)impl, name));
	return PyLong_FromUnsignedLongLong(
		observer.name_tensor
			? observer.name_tensor((uintptr_t)impl, name)
			: 0);
}

uint64_t bridge_tensor_id(PyObject *tensor, const char **name)
{
	*name = NULL;
	if (fallback_active())
		return fallback_tensor_id(tensor, name);
	if (!observer.tensor_id)
		return 0;
	PyObject *cdata = PyObject_GetAttrString(tensor, "_cdata");
	uintptr_t impl = cdata ? (uintptr_t)PyLong_AsVoidPtr(cdata) : 0;
	Py_XDECREF(cdata);
	if (!impl) {
		PyErr_Clear();
		return 0;
	}
	return observer.tensor_id(impl, name);
}

/* name_grad(param_cdata, grad_cdata) -> the gradient's id: named after
 * its parameter ("fc1.weight.grad") when the parameter has a name. */
static PyObject *bridge_name_grad(PyObject *self, PyObject *args)
{
	unsigned long long param, grad;
	char name[1100];

	(void)self;
	if (!PyArg_ParseTuple(args, "KK", &param, &grad))
		return NULL;
	const char *base = fallback_active()
				   ? fallback_tensor_name((uintptr_t)param)
			   : observer.tensor_name
				   ? observer.tensor_name((uintptr_t)param)
				   : NULL;
	if (base && base[0] && base[0] != '(')
		snprintf(name, sizeof name, "%s.grad", base);
	else
		snprintf(name, sizeof name, "(a gradient)");
	if (fallback_active())
		return PyLong_FromUnsignedLongLong(
			fallback_name_tensor((uintptr_t)grad, name));
	return PyLong_FromUnsignedLongLong(
		observer.name_tensor ? observer.name_tensor((uintptr_t)grad, name)
				     : 0);
}

/* value_checks(enabled): the bridge's value checks on or off (values.h). */
static PyObject *bridge_value_checks(PyObject *self, PyObject *args)
{
	int enabled;

	(void)self;
	if (!PyArg_ParseTuple(args, "p", &enabled))
		return NULL;
	values_set_enabled(enabled);
	Py_RETURN_NONE;
}

/* graph_capture(began): a CUDA graph began or ended capturing
 * (values.h). */
static PyObject *bridge_graph_capture(PyObject *self, PyObject *args)
{
	int began;

	(void)self;
	if (!PyArg_ParseTuple(args, "p", &began))
		return NULL;
	values_capturing(began);
	Py_RETURN_NONE;
}

/* pause(paused) -> the previous state: while paused, the calling thread's
 * torch ops are not recorded (the bridge's own look at the gradients). */
static PyObject *bridge_pause(PyObject *self, PyObject *args)
{
	int paused;

	(void)self;
	if (!PyArg_ParseTuple(args, "p", &paused))
		return NULL;
	return PyBool_FromLong(events_pause(paused));
}

/* scaler(what, scaler_id, optimizer_id, scale, found_inf, skipped,
 *        inf_tensor_id) */
static PyObject *bridge_scaler(PyObject *self, PyObject *args)
{
	const char *what;
	unsigned long long scaler_id, optimizer_id, inf_tensor;
	double scale;
	int found_inf, skipped;

	(void)self;
	if (!PyArg_ParseTuple(args, "sKKdppK", &what, &scaler_id,
			      &optimizer_id, &scale, &found_inf, &skipped,
			      &inf_tensor))
		return NULL;
	struct producer_event e = { .kind = PRODUCER_SCALER };
	e.scaler = (struct producer_scaler){
		.scaler_id = scaler_id, .optimizer_id = optimizer_id,
		.what = intern(what), .scale = scale, .found_inf = found_inf,
		.step_skipped = skipped, .inf_tensor_id = inf_tensor,
	};
	events_emit(&e);
	Py_RETURN_NONE;
}

/* set_thread_name(name): the name the trace shows for the calling
 * thread (UTF-8 bytes, at most 31: the Python layer cuts Python's
 * threading name); the OS thread keeps its own name. */
static PyObject *bridge_set_thread_name(PyObject *self, PyObject *args)
{
	const char *name;

	(void)self;
	if (!PyArg_ParseTuple(args, "y", &name))
		return NULL;
	producer_set_thread_name(name);
	Py_RETURN_NONE;
}

/* rank(rank): torch.distributed gave this process its rank (the Python
 * layer, after init_process_group): the trace labels it with it. */
static PyObject *bridge_rank(PyObject *self, PyObject *args)
{
	int rank;

	(void)self;
	if (!PyArg_ParseTuple(args, "i", &rank))
		return NULL;
	producer_rank(rank, amp_thread_number(), amp_now_ns());
	Py_RETURN_NONE;
}

/* fsdp_policy(module, module_class, param, reduce, input, output, buffer):
 * the mixed precision FSDP applies to a module (_fsdp.py), each dtype a
 * name libamp knows ("bfloat16", "torch.float32") or None where FSDP
 * casts nothing: an fsdp-mixed-precision amp.diag (FORMAT.md §3.7) on
 * the calling thread. */
static PyObject *bridge_fsdp_policy(PyObject *self, PyObject *args)
{
	static const char *const roles[] = { "param", "reduce", "input",
					     "output", "buffer" };
	const char *module, *module_class, *given[5];
	const char *names[5] = { NULL };
	char message[512];
	int n;

	(void)self;
	if (!PyArg_ParseTuple(args, "sszzzzz", &module, &module_class,
			      &given[0], &given[1], &given[2], &given[3],
			      &given[4]))
		return NULL;
	n = snprintf(message, sizeof message, "FSDP's mixed precision on %s%s%s"
		     " (%s):", *module ? "module '" : "the top-level module",
		     module, *module ? "'" : "", module_class);
	for (int i = 0; i < 5; i++) {
		enum amp_dtype dtype;
		if (!given[i])
			continue;
		if (dtype_arg(given[i], &dtype) != 0)
			return NULL;
		names[i] = amp_dtype_name(dtype);
		if (n > 0 && (size_t)n < sizeof message)
			n += snprintf(message + n, sizeof message - (size_t)n,
				      " %s %s,", roles[i], names[i]);
	}
	if (n > 0 && (size_t)n < sizeof message && message[n - 1] == ',')
		message[n - 1] = '\0';
	struct producer_event e = { .kind = PRODUCER_DIAG };
	e.diag = (struct producer_diag){
		.kind = "fsdp-mixed-precision", .message = message,
		.module = module, .module_class = module_class,
		.param_dtype = names[0], .reduce_dtype = names[1],
		.input_dtype = names[2], .output_dtype = names[3],
		.buffer_dtype = names[4],
	};
	events_emit(&e);
	Py_RETURN_NONE;
}

/* op_exception(text) -> bool: an uncaught exception ended this thread
 * (the Python layer's excepthooks); attached to the op that failed last
 * here, if the last op failed. */
static PyObject *bridge_op_exception(PyObject *self, PyObject *args)
{
	const char *text;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &text))
		return NULL;
	return PyBool_FromLong(events_op_exception(text));
}

/* recompute_stopped(): activation checkpointing is stopping a recompute
 * (the Python layer's _StopRecomputationError is being raised). */
static PyObject *bridge_recompute_stopped(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	events_recompute_stopped();
	Py_RETURN_NONE;
}

/* recompute_unwound(): the context of a recompute exited (the Python
 * layer's _recomputation_hook): ops that fail from here really failed. */
static PyObject *bridge_recompute_unwound(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	events_recompute_unwound();
	Py_RETURN_NONE;
}

/* step_end(marker): the training step in progress ended now (_steps.py
 * decides when); `marker` says what ended it. */
static PyObject *bridge_step_end(PyObject *self, PyObject *args)
{
	const char *marker;

	(void)self;
	if (!PyArg_ParseTuple(args, "s", &marker))
		return NULL;
	producer_step_end(intern(marker), amp_now_ns(), amp_thread_number());
	Py_RETURN_NONE;
}

/* evaluation(begin_ns, how[, end_ns, step]): an evaluation window ran
 * from begin_ns (window_begin()'s) to end_ns, by default now, in `step`,
 * by default the one in progress: a region under no_grad is known for one
 * when its step ends, or the next (window_flow.h). */
static PyObject *bridge_evaluation(PyObject *self, PyObject *args)
{
	unsigned long long begin_ns, end_ns = 0;
	long long step = -1;
	const char *how;

	(void)self;
	if (!PyArg_ParseTuple(args, "Ks|KL", &begin_ns, &how, &end_ns, &step))
		return NULL;
	producer_evaluation(step >= 0 ? (uint64_t)step : producer_step_now(),
			    begin_ns, end_ns ? end_ns : amp_now_ns(),
			    intern(how), amp_thread_number());
	Py_RETURN_NONE;
}

/* window_begin() -> the events' clock, in ns: an evaluation window may
 * begin here (producer_window_edge); evaluation() gets it as begin_ns. */
static PyObject *bridge_window_begin(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	uint64_t begin_ns = amp_now_ns();

	producer_window_edge();
	return PyLong_FromUnsignedLongLong(begin_ns);
}

/* window_open() -> slot: a region under no_grad begins on this thread;
 * -1: not followed. */
static PyObject *bridge_window_open(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyLong_FromLong(window_flow_open());
}

/* window_close(slot): its region exited, an edge of the window it may
 * be (producer_window_edge: judged later, its rows are apart already). */
static PyObject *bridge_window_close(PyObject *self, PyObject *args)
{
	int slot;

	(void)self;
	if (!PyArg_ParseTuple(args, "i", &slot))
		return NULL;
	window_flow_close(slot);
	producer_window_edge();
	Py_RETURN_NONE;
}

/* window_end(slot) -> whether its results reached training. */
static PyObject *bridge_window_end(PyObject *self, PyObject *args)
{
	int slot;

	(void)self;
	if (!PyArg_ParseTuple(args, "i", &slot))
		return NULL;
	return PyBool_FromLong(window_flow_end(slot));
}

/* now() -> the events' clock, in ns. */
static PyObject *bridge_now(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyLong_FromUnsignedLongLong(amp_now_ns());
}

/* step_now() -> (the step in progress, whether it is recorded in full). */
static PyObject *bridge_step_now(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return Py_BuildValue("(KO)", (unsigned long long)producer_step_now(),
			     producer_step_detail() ? Py_True : Py_False);
}

static PyMethodDef methods[] = {
	{ "load_observer", bridge_load_observer, METH_VARARGS,
	  "load_observer(path): bind the observer built for this torch" },
	{ "gpu_module", bridge_gpu_module, METH_VARARGS,
	  "gpu_module(path): libamp's CUDA module, for kernel timing" },
	{ "attach", bridge_attach, METH_VARARGS,
	  "attach(raw_dir, framework): start recording" },
	{ "detach", bridge_detach, METH_NOARGS, "stop recording" },
	{ "mark_exit", bridge_mark_exit, METH_NOARGS,
	  "record that this process ended cleanly" },
	{ "policy_table", bridge_policy_table, METH_VARARGS,
	  "policy_table(torch_version): the policy table used" },
	{ "scope", bridge_scope, METH_VARARGS,
	  "scope(enter, depth, device, dtype, enabled, cache_enabled, name)" },
	{ "cache_clear", bridge_cache_clear, METH_NOARGS,
	  "the autocast cache of this thread was emptied" },
	{ "phase", bridge_phase, METH_NOARGS, "phase() -> this thread's phase" },
	{ "custom_function", bridge_custom_function, METH_VARARGS,
	  "custom_function(name): a custom autograd Function's class name" },
	{ "custom_casts", bridge_custom_casts, METH_VARARGS,
	  "custom_casts(inside) -> previous: inside custom_fwd's casts" },
	{ "module_name", bridge_module_name, METH_VARARGS,
	  "module_name(path, class_name) -> handle of an nn.Module's names" },
	{ "module_enter", bridge_module_enter, METH_O,
	  "module_enter(handle): its forward starts on this thread" },
	{ "module_exit", bridge_module_exit, METH_O,
	  "module_exit(handle): its forward ended on this thread" },
	{ "module_depth", bridge_module_depth, METH_NOARGS,
	  "module_depth() -> modules whose forward runs on this thread" },
	{ "name_tensor", bridge_name_tensor, METH_VARARGS,
	  "name_tensor(cdata, name) -> tensor id" },
	{ "name_grad", bridge_name_grad, METH_VARARGS,
	  "name_grad(param_cdata, grad_cdata) -> the gradient's tensor id" },
	{ "value_checks", bridge_value_checks, METH_VARARGS,
	  "value_checks(enabled): the value checks on or off" },
	{ "graph_capture", bridge_graph_capture, METH_VARARGS,
	  "graph_capture(began): a CUDA graph began or ended capturing" },
	{ "pause", bridge_pause, METH_VARARGS,
	  "pause(paused) -> previous: this thread's ops unrecorded meanwhile" },
	{ "scaler", bridge_scaler, METH_VARARGS,
	  "scaler(what, scaler_id, optimizer_id, scale, found_inf, skipped, "
	  "inf_tensor_id)" },
	{ "set_thread_name", bridge_set_thread_name, METH_VARARGS,
	  "set_thread_name(name)" },
	{ "rank", bridge_rank, METH_VARARGS,
	  "rank(rank): the process's rank, from torch.distributed" },
	{ "set_inference_mode", bridge_set_inference_mode, METH_VARARGS,
	  "set_inference_mode(enabled)" },
	{ "fsdp_policy", bridge_fsdp_policy, METH_VARARGS,
	  "fsdp_policy(module, module_class, param, reduce, input, output, "
	  "buffer): FSDP's mixed precision on a module" },
	{ "op_exception", bridge_op_exception, METH_VARARGS,
	  "op_exception(text) -> whether the last op here failed" },
	{ "recompute_stopped", bridge_recompute_stopped, METH_NOARGS,
	  "recompute_stopped(): checkpointing stops a recompute here" },
	{ "recompute_unwound", bridge_recompute_unwound, METH_NOARGS,
	  "recompute_unwound(): a recompute's context exited" },
	{ "step_end", bridge_step_end, METH_VARARGS,
	  "step_end(marker): the training step in progress ended" },
	{ "evaluation", bridge_evaluation, METH_VARARGS,
	  "evaluation(begin_ns, how[, end_ns, step]): an evaluation window "
	  "ended" },
	{ "window_begin", bridge_window_begin, METH_NOARGS,
	  "window_begin() -> the clock (ns): a window may begin here" },
	{ "window_open", bridge_window_open, METH_NOARGS,
	  "window_open() -> slot: a region under no_grad begins here" },
	{ "window_close", bridge_window_close, METH_VARARGS,
	  "window_close(slot): its region exited" },
	{ "window_end", bridge_window_end, METH_VARARGS,
	  "window_end(slot) -> whether its results reached training" },
	{ "now", bridge_now, METH_NOARGS, "now() -> the events' clock (ns)" },
	{ "step_now", bridge_step_now, METH_NOARGS,
	  "step_now() -> (step in progress, recorded in full detail)" },
	FALLBACK_METHODS
	COMPILED_METHODS
	WRAP_METHODS
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
	PyModuleDef_HEAD_INIT, "_bridge",
	"amptrace's PyTorch observer: records autocast's decisions", -1,
	methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__bridge(void)
{
	if (wrap_init() != 0)
		return NULL;
	return PyModule_Create(&module);
}
