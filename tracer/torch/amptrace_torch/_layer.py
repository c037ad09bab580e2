"""The Python layer: what the C++ observer cannot see.

Autocast regions (enter/exit, depth, dtype, cache flag, where), cache
clears, the phase (backward inside autograd.backward/grad, optimizer
inside Optimizer.step), parameter names, thread names, GradScaler (and
which gradient made it skip a step), LR scheduler steps of the optimizers
it steps, forked multiprocessing children, and the rank
torch.distributed gives the process, FSDP's mixed-precision policies
(_fsdp.py).  Each wrapper calls the original first
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
from . import _fsdp
from . import _regions
from . import _roots

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
        try:
            sys.stderr.write("amptrace: recording error (the program is not "
                             "affected): %r\n" % (error,))
        except Exception:  # no stderr to say it on (None, closed)
            pass


def _wrap_autocast(torch, bridge):
    """Each region's entry and exit recorded around autocast's own.
    Python functions, not C wrappers (wrap.h): a scripted function that
    uses torch.autocast has TorchScript compile the class from its
    methods' Python source ("Cannot instantiate class 'autocast'"
    otherwise), so a traceback through them shows their frame."""
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
            depth = _nesting(torch)
            self._amptrace_scope = _regions.name(torch_dir, depth)
            bridge.scope(True, depth, self.device, dtype, enabled,
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


def _wrapped(bridge, fn, phase=None, after=None, closure_phase=None,
             before=None, always=None):
    """fn in `phase`, after before(*args, **kwargs) and then
    after(result, *args, **kwargs) when it returned, always(*args,
    **kwargs) whether it returned or raised: a C callable (wrap.h) that
    leaves no frame in the program's tracebacks, binds as a method and
    carries fn's attributes (functools.update_wrapper)."""
    wrapper = functools.update_wrapper(
        bridge.wrapper(fn, phase, after, closure_phase, before=before,
                       always=always), fn)
    wrapper._amptrace = True
    return wrapper


def _in_phase(bridge, phase, fn):
    return _wrapped(bridge, fn, phase)


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
            # a closure (Lightning's, LBFGS's) runs the forward and
            # backward passes inside the step
            wrapped = _wrapped(bridge, step, "optimizer",
                               closure_phase="forward")
            wrapped.hooked = getattr(step, "hooked", None)
            self.__class__.step = wrapped

    setattr(optimizer, patch_name, patch_step)


def _wrap_clip_grad(torch, bridge):
    """Gradient clipping (clip_grad_norm_, clip_grad_value_) is part of
    the optimizer's step, not the forward pass: its ops are phase
    optimizer.  Both names torch exports them under (torch.nn.utils and
    torch.nn.utils.clip_grad) get the wrapper, before the program imports
    either."""
    import torch.nn.utils.clip_grad as clip_grad
    utils = torch.nn.utils
    for name in ("clip_grad_norm_", "clip_grad_norm", "clip_grad_value_"):
        fn = getattr(clip_grad, name, None)
        if fn is None or getattr(fn, "_amptrace", False):
            continue
        wrapped = _in_phase(bridge, "optimizer", fn)
        setattr(clip_grad, name, wrapped)
        if getattr(utils, name, None) is fn:
            setattr(utils, name, wrapped)


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

    def live(self):
        """The objects still alive."""
        return [obj for obj in (ref() for ref in list(self._refs.values()))
                if obj is not None]


def _tree(module, path=""):
    """([(path, module)], [(name, parameter)]) of a module's tree, from
    `path` (the root's), in the order of Module.named_modules() and
    named_parameters(), read from torch's own dicts: no method of the
    program's (a named_parameters or named_modules override) is called,
    and modules without __hash__ are walked too (torch's walk keeps a
    set)."""
    modules, params = [], []
    seen_modules, seen_params = set(), set()   # ids, all alive meanwhile
    stack = [(path, module)]
    while stack:
        path, m = stack.pop()
        if id(m) in seen_modules:
            continue
        seen_modules.add(id(m))
        modules.append((path, m))
        prefix = path + "." if path else ""
        own = getattr(m, "__dict__", {})
        for name, param in own.get("_parameters", {}).items():
            if param is not None and id(param) not in seen_params:
                seen_params.add(id(param))
                params.append((prefix + name, param))
        children = [(name, child) for name, child in
                    own.get("_modules", {}).items() if child is not None]
        for name, child in reversed(children):
            stack.append((prefix + name, child))
    return modules, params


def _name_parameters(torch, bridge, modules_exist, roots):
    """Parameters get their names (fc1.weight) from the outermost module
    that runs them, under the prefix `roots` gives its tree (D.fc1.weight
    for a second model), before its first forward, through a global
    forward pre-hook.  That hook sends every module call down torch's
    slow path, so it is there only while modules wait for their names:
    once a module named this way runs again (the program's loop came
    round), the ones still waiting (never called: an unused head, a loss
    object) are named from their own outermost modules and the hook goes,
    until a new module is made.  The modules made before install
    (`modules_exist`: the trace() API) are found once, on the heap."""
    pending = _Identities()   # modules not named yet
    ran = _Identities()       # modules whose call named their tree
    hook = []                 # the registration, while there is one
    lock = threading.Lock()   # threads make and run modules at once

    def name_tree(module, prefix):
        modules, params = _tree(module, prefix)
        for _, sub in modules:
            pending.discard(sub)
        for name, param in params:
            bridge.name_tensor(param._cdata, name)

    def name_waiting():
        """Names each waiting module that is not inside another."""
        waiting = pending.live()
        inside = set()
        for module in waiting:
            inside.update(id(sub) for _, sub in _tree(module)[0][1:])
        for module in waiting:
            if id(module) not in inside and module in pending:
                name_tree(module, roots.prefix(module, True))

    def drop_hook():
        with lock:
            if hook:
                hook.pop().remove()

    def name_module(module):
        """Names a module's tree now: a compiled module's calls run no
        hooks (_compile.py names it when it is compiled).  One inside a
        module still waiting (torch.compile(model.block) before the model
        ran, Lightning's model inside its LightningModule) is named by
        paths from itself, as its graphs name its modules when it is
        compiled inside a module that runs eagerly: it takes no prefix,
        which would make it a model of its own."""
        if module in pending:
            name_tree(module, "" if inside_waiting(module)
                      else roots.prefix(module, True))

    def inside_waiting(module):
        """Whether a module is in the tree of another one waiting: a
        walk of every waiting tree, paid once per torch.compile."""
        return any(module is sub for outer in pending.live()
                   if outer is not module for _, sub in _tree(outer)[0])

    compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                        lambda: False)

    def pre_hook(module, inputs):
        # Dynamo traces global hooks into the graph: under compile the
        # hook is nothing (it would break the graph); the compiled module
        # was named when it was compiled (_compile.py)
        if compiling():
            return None
        try:
            if module in pending:
                name_tree(module,
                          roots.prefix(module, bridge.module_depth() == 0))
                ran.add(module)
            elif module in ran:
                name_waiting()
                drop_hook()
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

    def after_made(result, module, *args, **kwargs):
        made(module)

    # copy.deepcopy and unpickling (torch.load of a whole model) make a
    # module without __init__, through __setstate__
    module = torch.nn.Module
    module.__init__ = _wrapped(bridge, module.__init__, after=after_made)
    module.__setstate__ = _wrapped(bridge, module.__setstate__,
                                   after=after_made)
    if modules_exist:
        import gc
        # by type, not isinstance: isinstance asks an object for its
        # __class__, and one whose attribute access warns
        # (torch.distributed.reduce_op) printed a deprecation on the
        # program's stderr, or raised under -W error
        module_type = torch.nn.Module
        for obj in gc.get_objects():
            if issubclass(type(obj), module_type):
                made(obj)
    return name_module


def _custom_functions(torch, bridge):
    """Custom autograd Functions are ops (their apply and backward node
    reach the observer under the class's name): the observer learns each
    class name, of those made already and of every one made later
    (FunctionMeta.__init__).  custom_fwd(cast_inputs=) casts a Function's
    inputs through torch's _cast: the casts inside are the Function's."""
    function = torch.autograd.Function
    meta = type(function)
    seen, todo = set(), list(function.__subclasses__())
    while todo:
        cls = todo.pop()
        if cls not in seen:
            seen.add(cls)
            bridge.custom_function(cls.__name__)
            todo.extend(cls.__subclasses__())

    def made(result, cls, *args, **kwargs):
        try:
            bridge.custom_function(cls.__name__)
        except Exception as e:
            _recording_failed(e)

    meta.__init__ = _wrapped(bridge, meta.__init__, after=made)
    for module in (torch.amp.autocast_mode, torch.cuda.amp.autocast_mode):
        cast = getattr(module, "_cast", None)
        if cast is not None:
            module._cast = _casting_inputs(bridge, cast)


def _casting_inputs(bridge, cast):
    @functools.wraps(cast)
    def _cast(*args, **kwargs):
        previous = bridge.custom_casts(True)
        try:
            return cast(*args, **kwargs)
        finally:
            bridge.custom_casts(previous)
    return _cast


class _Handles:
    """A value per live object, by identity (see _Identities)."""

    def __init__(self):
        self._items = {}

    def get(self, obj):
        item = self._items.get(id(obj))
        return item[1] if item is not None and item[0]() is obj else None

    def set(self, obj, value):
        key = id(obj)
        self._items[key] = (weakref.ref(
            obj, lambda _, key=key: self._items.pop(key, None)), value)


class _ModuleNames:
    """The (path, class name) each module is named by in the trace, once
    _track_modules named it, and who wants to know as it is named
    (_fsdp.py: a policy is recorded under its module's name)."""

    def __init__(self):
        self._names = _Handles()
        self.listeners = []

    def of(self, module):
        """(path, class name), or None before the module is named."""
        return self._names.get(module)

    def named(self, module, path, class_name):
        self._names.set(module, (path, class_name))
        for listener in self.listeners:
            listener(module, path, class_name)


def _track_modules(torch, bridge, roots, names):
    """The nn.Module each op runs in (FORMAT.md: module, module_class):
    global forward hooks push each module's handle on its thread's stack
    (events.c) before its forward and pop it after; an op reads the
    innermost.  A module is named by its path from the top-level module
    it runs in, under the prefix `roots` gives that one's tree ("" for
    the first, `D` for a second model); one that runs inside others
    without being their submodule, by its class (`roots` too).  `names`
    (_ModuleNames) learns each name as it is given."""
    handles = _Handles()
    # Dynamo traces global hooks into the graph: under compile they are
    # nothing (a call into the bridge would break the graph); a compiled
    # graph's casts carry their modules from the graph (_compile.py)
    compiling = getattr(getattr(torch, "compiler", None), "is_compiling",
                        lambda: False)

    def name_tree(root, prefix):
        for path, module in _tree(root, prefix)[0]:
            if handles.get(module) is None:
                class_name = type(module).__name__
                handles.set(module, bridge.module_name(path, class_name))
                names.named(module, path, class_name)

    def ours(module):
        # torch.compile's wrapper of a module runs the global hooks an
        # extra time, around the module's own
        return not compiling() and \
            type(module).__name__ != "OptimizedModule"

    def pre_hook(module, inputs):
        if not ours(module):
            return None
        try:
            handle = handles.get(module)
            if handle is None:
                outermost = bridge.module_depth() == 0
                name_tree(module, roots.prefix(module, outermost))
                handle = handles.get(module)
            bridge.module_enter(handle)
        except Exception as e:
            _recording_failed(e)
        return None

    def hook(module, inputs, output):
        if not ours(module):
            return None
        try:
            handle = handles.get(module)
            if handle is not None:
                bridge.module_exit(handle)
        except Exception as e:
            _recording_failed(e)
        return None

    hooks = torch.nn.modules.module
    hooks.register_module_forward_pre_hook(pre_hook)
    hooks.register_module_forward_hook(hook)


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


def _trace_name(name):
    """A thread's name as the trace shows it: UTF-8 (lone surrogates as
    \\udc80), NUL as \\0, at most 31 bytes, whole characters."""
    raw = str(name).encode("utf-8", "backslashreplace")
    raw = raw.replace(b"\0", b"\\0")[:31]
    return raw.decode("utf-8", "ignore").encode("utf-8")


def _wrap_threads(bridge):
    """The trace names each thread as Python does (not the OS: the
    thread's OS name stays the program's)."""
    bootstrap = threading.Thread._bootstrap_inner

    @functools.wraps(bootstrap)
    def _bootstrap_inner(self):
        try:  # Thread.start() waits for this thread: never raise here
            bridge.set_thread_name(_trace_name(self.name))
        except Exception:
            pass
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


def _wrap_distributed(torch, bridge):
    """A process told its rank by the program rather than its environment
    (torch.multiprocessing.spawn's workers, Lightning's DDP, whose first
    rank is the launching process) learns it when init_process_group
    returns: the trace labels the process with the rank torch gives it."""
    distributed = torch.distributed
    if not distributed.is_available():
        return
    original = distributed.distributed_c10d.init_process_group

    def initialized(result, *args, **kwargs):
        tell_rank(torch, bridge)

    wrapped = _wrapped(bridge, original, after=initialized)
    # torch's own modules imported the function by name as torch was
    # imported (torch.distributed, and 2.2+'s device_mesh, whose
    # init_device_mesh calls it when the program did not): each name is
    # replaced; a module imported later takes the wrapper from them
    for name, module in list(sys.modules.items()):
        if name.startswith("torch.distributed") and \
                getattr(module, "init_process_group", None) is original:
            module.init_process_group = wrapped


def tell_rank(torch, bridge):
    """The rank torch.distributed gave the process, if it gave one, to
    the recording: from init_process_group's wrapper, and as a trace()
    block attaches (a recording that began after the call, which told
    an earlier one or none)."""
    try:
        distributed = torch.distributed
        if distributed.is_available() and distributed.is_initialized():
            bridge.rank(distributed.get_rank())
    except Exception as e:
        _recording_failed(e)


def _found_inf(scaler, optimizer):
    """Whether unscaling `optimizer`'s gradients (or its id's) found an
    inf or NaN."""
    key = optimizer if isinstance(optimizer, int) else id(optimizer)
    state = scaler._per_optimizer_states.get(key, {})
    values = state.get("found_inf_per_device", {}).values()
    return sum(v.item() for v in values) > 0


def _parameters(optimizer):
    for group in optimizer.param_groups:
        for param in group["params"]:
            if param.grad is not None:
                yield param


def _name_grads(bridge, optimizer):
    """Each gradient named after its parameter (fc1.weight.grad) before
    unscale_ reads them, so the trace says whose gradient overflowed."""
    for param in _parameters(optimizer):
        bridge.name_grad(param._cdata, param.grad._cdata)


def _first_non_finite_grad(torch, bridge, optimizer):
    """The id of the first gradient (in the optimizer's order) holding
    inf or NaN, 0 when none is found: looked for only on a skipped step,
    with this thread's ops left out of the trace."""
    previous = bridge.pause(True)
    try:
        for param in _parameters(optimizer):
            grad = param.grad
            values = grad._values() if grad.is_sparse else grad
            if not bool(torch.isfinite(values).all()):
                return bridge.name_grad(param._cdata, grad._cdata)
    finally:
        bridge.pause(previous)
    return 0


def _wrap_scaler(torch, bridge, scaled_optimizers):
    """GradScaler: each scale, unscale_, step and update, with the scale,
    found_inf and skipped steps, and the first gradient that held inf/NaN
    when a step is skipped.  1.13's scaler disables itself without CUDA:
    no events then.  torch 2.x's is torch.amp.GradScaler (torch.cuda.amp's
    subclasses it), and runs on the CPU ("cpu").  `scaled_optimizers`: the
    optimizers a scaler steps (their LR schedulers are watched).  Each
    gradient is named after its parameter before unscale_ reads it."""
    amp = getattr(torch, "amp", None)
    cls = getattr(amp, "GradScaler", None) or torch.cuda.amp.GradScaler
    # found_inf of the optimizers unscaled or stepped since the last update,
    # per scaler: update() resets them before its after-callback runs
    pending_inf = {}

    def report(what, self, optimizer, found_inf, skipped, culprit=0):
        bridge.scaler(what, id(self), id(optimizer) if optimizer else 0,
                      self.get_scale(), found_inf, skipped, culprit)

    def naming(self, optimizer):
        try:
            if self._enabled:
                _name_grads(bridge, optimizer)
        except Exception as e:
            _recording_failed(e)

    def scaled(result, self, outputs):
        try:
            if self._enabled:
                report("scale", self, None, False, False)
        except Exception as e:
            _recording_failed(e)

    def unscaled(result, self, optimizer):
        try:
            if self._enabled:
                inf = _found_inf(self, optimizer)
                pending_inf[id(self)] = pending_inf.get(id(self), False) or inf
                report("unscale", self, optimizer, inf, False)
        except Exception as e:
            _recording_failed(e)

    def stepped(result, self, optimizer, *args, **kwargs):
        try:
            if self._enabled:
                inf = _found_inf(self, optimizer)
                pending_inf[id(self)] = pending_inf.get(id(self), False) or inf
                scaled_optimizers.add(optimizer)
                culprit = _first_non_finite_grad(torch, bridge, optimizer) \
                    if inf else 0
                report("step", self, optimizer, inf, inf, culprit)
        except Exception as e:
            _recording_failed(e)

    def updated(result, self, *args, **kwargs):
        try:
            inf = pending_inf.pop(id(self), False)
            if self._enabled:
                report("update", self, None, inf, False)
        except Exception as e:
            _recording_failed(e)

    # Its ops (unscale and inf check, the scale update) are the
    # optimizer step's, not the forward pass's.
    cls.scale = _wrapped(bridge, cls.scale, None, scaled)
    cls.unscale_ = _wrapped(bridge, cls.unscale_, "optimizer", unscaled,
                            before=naming)
    cls.step = _wrapped(bridge, cls.step, "optimizer", stepped)
    cls.update = _wrapped(bridge, cls.update, "optimizer", updated)


def _wrap_lr_schedulers(torch, bridge, scaled):
    """An LR scheduler's step, for an optimizer a GradScaler steps: an
    amp.scaler event "lr_scheduler_step" (scaler 0, the optimizer's id),
    so that a schedule advanced on a skipped step is seen
    (lr-scheduler-skipped-step).  A step ends by setting the scheduler's
    _last_lr (every scheduler of torch 1.13 and 2.x does), so that set is
    watched rather than step() wrapped: a Python wrapper of step() would
    stand between the program and step(), and step()'s own warnings
    (stacklevel=2: "lr_scheduler.step() before optimizer.step()", which a
    skipped first step triggers) would name the wrapper's line instead of
    the program's."""
    module = torch.optim.lr_scheduler
    base = getattr(module, "LRScheduler", None) or module._LRScheduler
    classes = [base]
    plateau = getattr(module, "ReduceLROnPlateau", None)
    if plateau is not None and not issubclass(plateau, base):
        classes.append(plateau)

    def watch(cls):
        set_attribute = cls.__setattr__

        def __setattr__(self, name, value):
            set_attribute(self, name, value)
            if name != "_last_lr":
                return
            try:
                optimizer = self.__dict__.get("optimizer")
                if optimizer is not None and optimizer in scaled:
                    bridge.scaler("lr_scheduler_step", 0, id(optimizer),
                                  float("nan"), False, False, 0)
            except Exception as e:
                _recording_failed(e)
        cls.__setattr__ = __setattr__

    for cls in classes:
        watch(cls)


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


def _quiet_checkpoint_stop(bridge):
    """Non-reentrant activation checkpointing (torch 2.1+) stops a
    recompute as soon as backward has the tensors it needs: its
    saved-tensor hook raises _StopRecomputationError through the op that
    saves the last one, and catches it around the recompute.  Those ops
    stopped on purpose; they did not fail (no op-error).  torch looks the
    class up in its module both where it raises and where it catches, so
    a subclass there is raised and caught as the original, and tells
    the observer first.  Only ops that began inside the recompute are
    unwound by it: the context it runs in (_recomputation_hook, looked up
    the same way) tells the observer when it exits, so that an op open
    before it (a Function's backward that unpacked its saved tensors)
    and failing right after still failed."""
    checkpoint = sys.modules.get("torch.utils.checkpoint")
    stop = getattr(checkpoint, "_StopRecomputationError", None)
    if stop is None:  # torch 1.x, or not imported with torch
        return
    _mark_recompute_exit(checkpoint, bridge)

    class _StopRecomputationError(stop):
        def __init__(self, *args):
            try:
                bridge.recompute_stopped()
            except Exception as e:
                _recording_failed(e)
            super().__init__(*args)

    _replace_in_module(checkpoint, stop, _StopRecomputationError)


def _mark_recompute_exit(checkpoint, bridge):
    """torch's recompute context, telling the observer when it exits
    (the stop's exception has left every op begun inside it by then)."""
    hook = getattr(checkpoint, "_recomputation_hook", None)
    if not isinstance(hook, type):
        return

    class _recomputation_hook(hook):
        def __exit__(self, *args):
            try:
                bridge.recompute_unwound()
            except Exception as e:
                _recording_failed(e)
            return super().__exit__(*args)

    _replace_in_module(checkpoint, hook, _recomputation_hook)


def _replace_in_module(module, original, subclass):
    """subclass, under original's name, where torch looks original up
    when it runs (its module): it reads, pickles and prints as torch's."""
    subclass.__module__ = original.__module__
    subclass.__qualname__ = original.__qualname__
    setattr(module, original.__name__, subclass)


def install(torch, bridge, modules_exist):
    """Each part on its own: one that does not fit this torch is said
    once and the others still record.  `modules_exist`: the program may
    have made modules already (installed by the trace() API, not right
    after its `import torch`)."""
    scaled = _Identities()  # optimizers a GradScaler steps
    roots = _roots.Roots()  # one naming of top-level trees for all three
    names = _ModuleNames()
    namer = []
    for part in (lambda: _wrap_autocast(torch, bridge),
                 lambda: _wrap_phases(torch, bridge),
                 lambda: _wrap_clip_grad(torch, bridge),
                 lambda: namer.append(
                     _name_parameters(torch, bridge, modules_exist, roots)),
                 lambda: _track_modules(torch, bridge, roots, names),
                 lambda: _fsdp.install(torch, bridge, _recording_failed,
                                       _wrapped, names),
                 lambda: _wrap_threads(bridge),
                 lambda: _wrap_processes(bridge),
                 lambda: _wrap_distributed(torch, bridge),
                 lambda: _wrap_scaler(torch, bridge, scaled),
                 lambda: _wrap_lr_schedulers(torch, bridge, scaled),
                 lambda: _wrap_inference_mode(torch, bridge),
                 lambda: _custom_functions(torch, bridge),
                 lambda: _hook_exceptions(bridge),
                 lambda: _quiet_checkpoint_stop(bridge),
                 lambda: _compile.install(torch, bridge, _recording_failed,
                                          _state_reader(torch),
                                          namer[0] if namer else None,
                                          roots)):
        try:
            part()
        except Exception as e:
            _recording_failed(e)
