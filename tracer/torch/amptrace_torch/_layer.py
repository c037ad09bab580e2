"""The Python layer: what the C++ observer cannot see.

Autocast regions (enter/exit, depth, dtype, cache flag, where), cache
clears, the phase (backward inside autograd.backward/grad, optimizer
inside Optimizer.step), parameter names, thread names, GradScaler, and
forked multiprocessing children.  Each wrapper calls the original first
or last exactly as torch would and records around it: the program's
behaviour does not change.
"""
import functools
import linecache
import os
import sys
import threading
import weakref

from . import _compile

_THIS_DIR = os.path.dirname(os.path.abspath(__file__))


def _nesting(torch):
    # 1.13 has no getter: increment returns the new depth, decrement
    # restores it.
    depth = torch._C.autocast_increment_nesting()
    torch._C.autocast_decrement_nesting()
    return depth - 1


def _state_reader(torch):
    """(device) -> (enabled, dtype name) of the device's autocast on this
    thread, its readers picked once for this torch: it runs at every
    region's entry and exit."""
    names = {}

    def name(dtype):
        found = names.get(dtype)
        if found is None:
            found = names[dtype] = str(dtype).replace("torch.", "")
        return found

    if hasattr(torch, "get_autocast_dtype"):
        # 2.4+: the per-device functions below warn that they are
        # deprecated, which the program would see.
        def state(device):
            return (torch.is_autocast_enabled(device),
                    name(torch.get_autocast_dtype(device)))
        return state
    readers = {"cuda": (torch.is_autocast_enabled,
                        torch.get_autocast_gpu_dtype),
               "cpu": (torch.is_autocast_cpu_enabled,
                       torch.get_autocast_cpu_dtype)}

    def state(device):
        enabled, dtype = readers[device]
        return enabled(), name(dtype())
    return state


_failed = []


def _recording_failed(error):
    """Recording must never break the program: the first failure is said
    once and recording goes on without the part that failed."""
    if not _failed:
        _failed.append(error)
        sys.stderr.write("amptrace: recording error (the program is not "
                         "affected): %r\n" % (error,))


_locations = {}  # (code, line) -> "file:line", made once per place


def _location(torch_dir):
    """file:line of the code that opened the region (the `with` line or
    the decorated function's caller), outside torch's own files."""
    frame = sys._getframe(2)
    while frame and frame.f_code.co_filename.startswith(torch_dir):
        frame = frame.f_back
    if frame is None:
        return None
    key = (frame.f_code, frame.f_lineno)
    where = _locations.get(key)
    if where is None:
        where = _locations[key] = "%s:%d" % (
            os.path.basename(frame.f_code.co_filename), frame.f_lineno)
    return where


def _wrap_autocast(torch, bridge):
    cls = torch.amp.autocast_mode.autocast
    enter, exit_ = cls.__enter__, cls.__exit__
    is_scripting = torch._jit_internal.is_scripting
    state = _state_reader(torch)
    torch_dir = os.path.dirname(torch.__file__) + os.sep

    @functools.wraps(enter)
    def __enter__(self):
        result = enter(self)
        if is_scripting() or self.device not in ("cpu", "cuda"):
            return result
        try:
            enabled, dtype = state(self.device)
            self._amptrace_scope = _location(torch_dir)
            bridge.scope(True, _nesting(torch), self.device, dtype, enabled,
                         torch.is_autocast_cache_enabled(),
                         self._amptrace_scope)
        except Exception as e:
            _recording_failed(e)
        return result

    @functools.wraps(exit_)
    def __exit__(self, *exc):
        if is_scripting() or self.device not in ("cpu", "cuda"):
            return exit_(self, *exc)
        depth = 0
        try:
            depth = _nesting(torch)
            enabled, dtype = state(self.device)
            bridge.scope(False, depth, self.device, dtype, enabled,
                         torch.is_autocast_cache_enabled(),
                         getattr(self, "_amptrace_scope", None))
        except Exception as e:
            _recording_failed(e)
        result = exit_(self, *exc)
        if depth == 1:
            bridge.cache_clear()
        return result

    cls.__enter__, cls.__exit__ = __enter__, __exit__


def _in_phase(bridge, phase, fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        previous = bridge.set_phase(phase)
        try:
            return fn(*args, **kwargs)
        finally:
            bridge.set_phase(previous)
    wrapper._amptrace = True
    return wrapper


def _wrap_phases(torch, bridge):
    autograd = torch.autograd
    autograd.backward = _in_phase(bridge, "backward", autograd.backward)
    autograd.grad = _in_phase(bridge, "backward", autograd.grad)
    # Every Optimizer wraps its class's step once, for the profiler
    # (_hook_for_profile in 1.13, _patch_step_function in 2.x): wrap it
    # there too, so each optimizer class's own step is covered.
    optimizer = torch.optim.Optimizer
    patch_name = next(n for n in ("_patch_step_function", "_hook_for_profile")
                      if hasattr(optimizer, n))
    patch = getattr(optimizer, patch_name)

    @functools.wraps(patch)
    def patch_step(self):
        patch(self)
        step = self.__class__.step
        if not getattr(step, "_amptrace", False):
            wrapped = _in_phase(bridge, "optimizer", step)
            wrapped.hooked = getattr(step, "hooked", None)
            self.__class__.step = wrapped

    setattr(optimizer, patch_name, patch_step)


class _Identities:
    """A set of live objects by identity: modules may define __eq__
    without __hash__ (a WeakSet would raise in the program's forward), and
    a bare id() outlives its object and comes back on a new one."""

    def __init__(self):
        self._refs = {}

    def add(self, obj):
        key = id(obj)
        self._refs[key] = weakref.ref(
            obj, lambda _, key=key: self._refs.pop(key, None))

    def discard(self, obj):
        ref = self._refs.get(id(obj))
        if ref is not None and ref() is obj:
            del self._refs[id(obj)]

    def __contains__(self, obj):
        ref = self._refs.get(id(obj))
        return ref is not None and ref() is obj

    def __len__(self):
        return len(self._refs)


def _name_parameters(torch, bridge, modules_exist):
    """Parameters get their names (fc1.weight) from the outermost module
    that runs them, before its first forward.  A global forward pre-hook
    sends every module call down torch's slow path (hooks), so it stays
    registered only while some module has not run yet: modules made after
    install are known (Module.__init__), those made before it
    (`modules_exist`: the trace() API) are not, and keep it registered."""
    named = _Identities()     # needed only while unknown ones exist
    pending = _Identities()   # made since install, not named yet
    hook = []                 # the registration, while there is one
    lock = threading.Lock()   # threads make and run modules at once

    def name_module(module):
        if module in named or (not modules_exist and module not in pending):
            return
        try:
            subs = list(module.modules())
            params = list(module.named_parameters())
        except TypeError:
            # torch's own walk keeps modules in a set: one without
            # __hash__ cannot be walked (nor given to an optimizer); its
            # submodules name their parameters as they run
            pending.discard(module)
            params, subs = [], []
        for sub in subs:
            pending.discard(sub)
            if modules_exist:
                named.add(sub)
        for name, param in params:
            bridge.name_tensor(param._cdata, name)
        with lock:
            if not pending and not modules_exist and hook:
                hook.pop().remove()

    compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                        lambda: False)

    def pre_hook(module, inputs):
        # Dynamo traces global hooks into the graph: under compile the
        # hook is nothing (it would break the graph); the compiled module
        # was named when it was compiled (_compile.py)
        if compiling():
            return None
        try:
            name_module(module)
        except Exception as e:
            _recording_failed(e)
        return None

    def register():
        with lock:
            if not hook:
                hook.append(torch.nn.modules.module
                            .register_module_forward_pre_hook(pre_hook))

    def made(module):
        # torch.compile's wrapper of a module never runs hooks itself,
        # nor do the graph modules a compile makes
        if type(module).__name__ == "OptimizedModule" or \
                _compile.compiling():
            return
        try:
            pending.add(module)
            register()
        except Exception as e:
            _recording_failed(e)

    init = torch.nn.Module.__init__
    setstate = torch.nn.Module.__setstate__

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        made(self)

    # copy.deepcopy and unpickling (torch.load of a whole model) make a
    # module without __init__
    @functools.wraps(setstate)
    def __setstate__(self, state):
        setstate(self, state)
        made(self)

    torch.nn.Module.__init__ = __init__
    torch.nn.Module.__setstate__ = __setstate__
    if modules_exist:
        register()
    return name_module


def _wrap_inference_mode(torch, bridge):
    """torch.inference_mode's state per thread, after each enter and exit
    (nested, mode=False and decorator use alike): torch 2.11 caches no
    cast under it."""
    cls = torch.autograd.grad_mode.inference_mode
    enter, exit_ = cls.__enter__, cls.__exit__

    def record():
        try:
            bridge.set_inference_mode(torch.is_inference_mode_enabled())
        except Exception as e:
            _recording_failed(e)

    @functools.wraps(enter)
    def __enter__(self):
        result = enter(self)
        record()
        return result

    @functools.wraps(exit_)
    def __exit__(self, *exc):
        result = exit_(self, *exc)
        record()
        return result

    cls.__enter__, cls.__exit__ = __enter__, __exit__
    record()  # the trace() API may start inside inference_mode


def _wrap_threads(bridge):
    bootstrap = threading.Thread._bootstrap_inner

    @functools.wraps(bootstrap)
    def _bootstrap_inner(self):
        bridge.set_thread_name(self.name)
        return bootstrap(self)

    threading.Thread._bootstrap_inner = _bootstrap_inner


def _wrap_processes(bridge):
    """A forked multiprocessing child leaves through os._exit (no atexit):
    it marks its clean end itself."""
    import multiprocessing.process as mp

    bootstrap = mp.BaseProcess._bootstrap

    @functools.wraps(bootstrap)
    def _bootstrap(self, *args, **kwargs):
        code = bootstrap(self, *args, **kwargs)
        if code == 0:
            bridge.mark_exit()
        return code

    mp.BaseProcess._bootstrap = _bootstrap


def _found_inf(scaler, optimizer):
    state = scaler._per_optimizer_states.get(id(optimizer), {})
    values = state.get("found_inf_per_device", {}).values()
    return sum(v.item() for v in values) > 0


def _wrap_scaler(torch, bridge):
    """GradScaler: the scale after each update, found_inf and skipped
    steps.  1.13's scaler disables itself without CUDA: no events then.
    torch 2.x's is torch.amp.GradScaler (torch.cuda.amp's subclasses it)."""
    amp = getattr(torch, "amp", None)
    cls = getattr(amp, "GradScaler", None) or torch.cuda.amp.GradScaler
    step, update = cls.step, cls.update

    @functools.wraps(step)
    def step_(self, optimizer, *args, **kwargs):
        result = step(self, optimizer, *args, **kwargs)
        if self._enabled:
            inf = _found_inf(self, optimizer)
            bridge.scaler("step", id(self), id(optimizer), self.get_scale(),
                          inf, inf, 0)
        return result

    @functools.wraps(update)
    def update_(self, *args, **kwargs):
        result = update(self, *args, **kwargs)
        if self._enabled:
            bridge.scaler("update", id(self), 0, self.get_scale(), False,
                          False, 0)
        return result

    # Its ops (unscale and inf check, the scale update) are the
    # optimizer step's, not the forward pass's.
    cls.step = _in_phase(bridge, "optimizer", step_)
    cls.update = _in_phase(bridge, "optimizer", update_)
    cls.unscale_ = _in_phase(bridge, "optimizer", cls.unscale_)


# What torch raises for a failed op (c10::Error and its Python mappings).
_OP_ERRORS = (RuntimeError, TypeError, ValueError, IndexError)


def _op_exception_text(exc):
    """'Type: text' of the chain's first exception (`raise ... from` or
    inside `except` keeps the op's error at the root), when it is of a
    kind torch raises for a failed op; else None."""
    seen = set()
    while id(exc) not in seen:
        seen.add(id(exc))
        root = exc.__cause__ or (None if exc.__suppress_context__
                                 else exc.__context__)
        if root is None:
            break
        exc = root
    if not isinstance(exc, _OP_ERRORS) or _raised_by_program(exc):
        return None
    return "%s: %s" % (type(exc).__name__, str(exc)[:500])


def _raised_by_program(exc):
    """Whether the exception comes from a `raise` statement (the
    program's, or torch's Python code) rather than from a call into an
    op: its innermost frame's line starts with `raise`."""
    tb = exc.__traceback__
    if tb is None:
        return False
    while tb.tb_next is not None:
        tb = tb.tb_next
    line = linecache.getline(tb.tb_frame.f_code.co_filename, tb.tb_lineno)
    return line.lstrip().startswith("raise")


def _hook_exceptions(bridge):
    """The observer only sees that an op failed; an exception that ends a
    thread right after a failed op brings the text to that op (an
    op-error diag), then the program's own hook runs as before."""
    def attach(value):
        try:  # never in the program's way (a __str__ that raises, a NUL)
            text = value is not None and _op_exception_text(value)
            if text:
                bridge.op_exception(text)
        except Exception:
            pass

    previous = sys.excepthook

    def excepthook(kind, value, tb):
        attach(value)
        previous(kind, value, tb)

    sys.excepthook = excepthook
    thread_previous = threading.excepthook

    def thread_excepthook(args):
        attach(args.exc_value)
        thread_previous(args)

    threading.excepthook = thread_excepthook


def install(torch, bridge, modules_exist):
    """Each part on its own: one that does not fit this torch is said
    once and the others still record.  `modules_exist`: the program may
    have made modules already (installed by the trace() API, not right
    after its `import torch`)."""
    namer = []
    for part in (lambda: _wrap_autocast(torch, bridge),
                 lambda: _wrap_phases(torch, bridge),
                 lambda: namer.append(
                     _name_parameters(torch, bridge, modules_exist)),
                 lambda: _wrap_threads(bridge),
                 lambda: _wrap_processes(bridge),
                 lambda: _wrap_scaler(torch, bridge),
                 lambda: _wrap_inference_mode(torch, bridge),
                 lambda: _hook_exceptions(bridge),
                 lambda: _compile.install(torch, bridge, _recording_failed,
                                          _state_reader(torch),
                                          namer[0] if namer else None)):
        try:
            part()
        except Exception as e:
            _recording_failed(e)
