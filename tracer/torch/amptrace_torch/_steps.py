"""Training steps and evaluation windows: where a PyTorch program's steps
begin and end (FORMAT.md §8).  The one place that decides it; the C side
(producer_step_end) numbers the steps and chooses which are recorded in
full detail.

A step ends:
  - when the outermost `step()` of a torch.optim.Optimizer returns (the
    wrappers of Lightning, accelerate and Hugging Face call it), unless
    it ran inside an enabled GradScaler's `step()`;
  - when an enabled GradScaler's `update()` returns;
  - at `amptrace_torch.step()`: once a program calls it, only its calls
    end steps;
  - as long as the program has made no optimizer and no enabled
    GradScaler: when an outermost autocast region is entered in
    training mode (grad on, no inference_mode, no evaluation window
    open, not in backward, where activation checkpointing recomputes)
    after another such region in the same step.

An evaluation window is not a step: from `model.eval()` to the same
module's `model.train()` (dropped when an optimizer steps inside it: a
module kept in eval mode, as an EMA copy is, while the program trains),
recorded when it ends; or an outermost autocast region entered under
no_grad or inference_mode outside such a window whose results reach no
training in its step (window_flow.h: a frozen backbone's or a teacher's
forward feeds the head or the loss, and is part of the step's training),
recorded when that is known: when its step ends, or the next where
regions end the steps.

Each wrapper calls the original exactly as torch would; recording
failures are said once and never reach the program (_layer's rule).
"""
import functools
import os
import threading

_USER = "amptrace_torch.step()"
_OPTIMIZER = "optimizer step"
_SCALER = "scaler update"
_REGION = "autocast region"


class _State:
    """What decides the next step's end, shared by the program's threads."""

    def __init__(self):
        self.lock = threading.Lock()
        self.optimizers = False   # an optimizer exists
        self.user = False         # amptrace_torch.step() was called
        self.region_in_step = False
        self.eval_windows = {}    # id(module) -> [begin_ns, dropped]
        # regions under no_grad that ended in this step, undecided:
        # [begin_ns, end_ns, how, slot, step, carried to the next step]
        self.regions_pending = []
        self.local = threading.local()


_state = _State()
_bridge = None


def _depth(name):
    return getattr(_state.local, name, 0)


def _add_depth(name, delta):
    setattr(_state.local, name, _depth(name) + delta)


def _end_step(marker):
    """The step in progress ends now, if `marker` is the program's kind."""
    if _bridge is None or (_state.user and marker != _USER):
        return
    with _state.lock:
        _state.region_in_step = False
        for window in _state.eval_windows.values():
            window[1] = True
    _judge_regions()
    _bridge.step_end(marker)


def step():
    """amptrace_torch.step(): the program says where its training step
    ends; from then on only these calls end steps."""
    _state.user = True
    _end_step(_USER)


def _failed(error):
    from . import _layer
    _layer._recording_failed(error)


# ------------------------------------------------------------ optimizers

def _optimizer_stepped(result, *args, **kwargs):
    try:
        _end_step(_OPTIMIZER)
    except Exception as e:
        _failed(e)


def _ends_step(step_fn):
    """An optimizer class's step: the outermost call ends a step.  A C
    wrapper (wrap.h: no frame in the program's tracebacks) whose callback
    runs only for a call that entered phase optimizer: not for a step
    inside another (a wrapper's), nor inside GradScaler.step, which
    _layer runs in phase optimizer (its update, or its step when it is
    disabled, ends the step then)."""
    wrapped = functools.update_wrapper(
        _bridge.wrapper(step_fn, "optimizer", _optimizer_stepped, None, True),
        step_fn)
    wrapped._amptrace_steps = True
    return wrapped


def _wrap_optimizers(torch):
    """Every Optimizer wraps its class's step once (for the profiler:
    _hook_for_profile in 1.13, _patch_step_function in 2.x): wrap it
    there, after the phase's wrapper, so each class's own step is
    covered, subclasses that override step() included."""
    optimizer = torch.optim.Optimizer
    name = next(n for n in ("_patch_step_function", "_hook_for_profile")
                if hasattr(optimizer, n))
    patch = getattr(optimizer, name)

    def wrap_class(cls):
        step_fn = cls.step
        if not getattr(step_fn, "_amptrace_steps", False):
            cls.step = _ends_step(step_fn)

    @functools.wraps(patch)
    def patch_step(self):
        patch(self)
        _state.optimizers = True
        wrap_class(self.__class__)

    setattr(optimizer, name, patch_step)
    # Optimizers made before (the trace() API): torch marked the step of
    # each class it patched ("hooked").
    for cls in _subclasses(optimizer):
        if getattr(cls.__dict__.get("step"), "hooked", False):
            _state.optimizers = True
            wrap_class(cls)


def _subclasses(cls):
    found, todo = [], list(cls.__subclasses__())
    while todo:
        sub = todo.pop()
        if sub not in found:
            found.append(sub)
            todo.extend(sub.__subclasses__())
    return found


def _scaler_stepped(result, scaler, *args, **kwargs):
    # 1.13's disables itself without CUDA: its step() is the optimizer's
    if not getattr(scaler, "_enabled", False):
        _optimizer_stepped(result)


def _scaler_updated(result, scaler, *args, **kwargs):
    if getattr(scaler, "_enabled", False):
        try:
            _end_step(_SCALER)
        except Exception as e:
            _failed(e)


def _wrap_scaler(torch):
    """An enabled GradScaler's update() ends the step; the optimizer step
    its step() runs does not.  A disabled one's step() is the optimizer
    step.  C wrappers, as the optimizers'."""
    amp = getattr(torch, "amp", None)
    cls = getattr(amp, "GradScaler", None) or torch.cuda.amp.GradScaler
    step_fn, update = cls.step, cls.update
    cls.step = functools.update_wrapper(
        _bridge.wrapper(step_fn, "optimizer", _scaler_stepped, None, True),
        step_fn)
    cls.update = functools.update_wrapper(
        _bridge.wrapper(update, None, _scaler_updated), update)


def _capture_began(result, *args, **kwargs):
    _bridge.graph_capture(True)


def _capture_ended(*args, **kwargs):
    _bridge.graph_capture(False)


def _wrap_graph_capture(torch):
    """While a CUDA graph captures (torch.cuda.graph, torch.compile's
    reduce-overhead), the value checks' device reductions would be
    captured with it and read before the graph ever ran: they pause from
    a capture_begin that succeeded to its capture_end (values.h).  C
    wrappers, as the optimizers'."""
    cls = torch.cuda.CUDAGraph
    begin, end = cls.capture_begin, cls.capture_end
    cls.capture_begin = functools.update_wrapper(
        _bridge.wrapper(begin, None, _capture_began), begin)
    cls.capture_end = functools.update_wrapper(
        _bridge.wrapper(end, always=_capture_ended), end)


# ---------------------------------------------------- regions and windows

def _evaluating():
    """Whether an evaluation window of model.eval() is open (one dropped
    for an optimizer step inside it is a module kept in eval mode)."""
    return any(not dropped for _, dropped in _state.eval_windows.values())


def _training(torch):
    return (torch.is_grad_enabled() and
            not torch.is_inference_mode_enabled() and not _evaluating())


def _wrap_autocast(torch):
    """Before a region is recorded (_layer's wrapper, inside this one):
    without optimizers, a second outermost region in training mode in a
    step begins the next; a region under no_grad or inference_mode is an
    evaluation window.  A Python function for TorchScript, as _layer's."""
    from ._layer import _nesting
    cls = torch.amp.autocast_mode.autocast
    enter, exit_ = cls.__enter__, cls.__exit__
    is_scripting = torch._jit_internal.is_scripting

    @functools.wraps(enter)
    def __enter__(self):
        try:
            if not is_scripting() and _nesting(torch) == 0:
                _outermost_region(torch, self)
        except Exception as e:
            _failed(e)
        return enter(self)

    @functools.wraps(exit_)
    def __exit__(self, *exc):
        result = exit_(self, *exc)
        window = self.__dict__.pop("_amptrace_window", None)
        if window is not None:
            try:
                _region_ended(*window, "autocast region under " + (
                    "inference_mode" if torch.is_inference_mode_enabled()
                    else "no_grad"))
            except Exception as e:
                _failed(e)
        return result

    cls.__enter__, cls.__exit__ = __enter__, __exit__


def _outermost_region(torch, region):
    # activation checkpointing's recompute enters regions in backward:
    # neither a step nor an evaluation
    if _bridge is None or _bridge.phase() == "backward":
        return
    if not _training(torch):
        if not _evaluating() and (
                not torch.is_grad_enabled() or
                torch.is_inference_mode_enabled()):
            region._amptrace_window = (_bridge.window_begin(),
                                       _bridge.window_open())
        return
    if _state.optimizers or _state.user:
        return
    with _state.lock:
        ends = _state.region_in_step
        _state.region_in_step = True
    if ends:
        _judge_regions(carry=True)
        _bridge.step_end(_REGION)
        with _state.lock:
            _state.region_in_step = True


def _region_ended(begin, slot, how):
    """A region under no_grad exited: whether it was an evaluation is
    known when its step ends (a slot of -1 is not followed: it is one)."""
    _bridge.window_close(slot)
    if slot < 0:
        _bridge.evaluation(begin, how)
        return
    end, (step, _) = _bridge.now(), _bridge.step_now()
    with _state.lock:
        _state.regions_pending.append([begin, end, how, slot, step, False])


def _judge_regions(carry=False):
    """Before a step ends: the regions under no_grad in it whose results
    reached no training were evaluations, recorded in their step.
    `carry`: the step ends as a region is entered (no optimizer), before
    that region reads what a frozen backbone computed: this step's are
    judged when the next one ends."""
    with _state.lock:
        pending, kept = _state.regions_pending, []
        if carry:
            kept = [r for r in pending if not r[5]]
            pending = [r for r in pending if r[5]]
            for region in kept:
                region[5] = True
        _state.regions_pending = kept
    for begin, end, how, slot, step, _ in pending:
        if not _bridge.window_end(slot):
            _bridge.evaluation(begin, how, end, step)


def _wrap_train_mode(torch):
    """model.eval() opens an evaluation window of the module, its
    model.train() closes it; only the outermost call of a module tree
    counts (train() walks the children)."""
    from ._layer import _wrapped

    def entering(module, mode=True):
        _add_depth("train", 1)

    def trained(result, module, mode=True):
        if _depth("train") == 1:
            try:
                _train_mode(module, mode)
            except Exception as e:
                _failed(e)

    def left(module, mode=True):
        _add_depth("train", -1)

    torch.nn.Module.train = _wrapped(_bridge, torch.nn.Module.train,
                                     before=entering, after=trained,
                                     always=left)


def _train_mode(module, mode):
    key = id(module)
    with _state.lock:
        window = _state.eval_windows.get(key)
        if not mode and window is None:
            _state.eval_windows[key] = [_bridge.window_begin(), False]
            return
        if not mode or window is None:
            return
        del _state.eval_windows[key]
    if not window[1]:
        _bridge.evaluation(window[0], "model.eval()")


def close_windows():
    """At the program's end, or a trace() block's: the windows still open
    end there, and the step in progress with them: a later block's
    recording begins at step 0, which its first region begins rather
    than ends."""
    if _bridge is None:
        return
    _judge_regions()
    with _state.lock:
        windows = list(_state.eval_windows.values())
        _state.eval_windows.clear()
        _state.region_in_step = False
    for begin, dropped in windows:
        if not dropped:
            _bridge.evaluation(begin, "model.eval()")


def _forked():
    """A forked child (a DataLoader worker): the parent's regions under
    no_grad are the parent's to judge (window_flow.h forgets them), and
    its open model.eval() windows the parent's to end: a child that exits
    as a program does would write them into its own record, begun before
    it was.  (A child that evaluates the module it inherited in eval mode
    has those ops as its steps' rather than a window's.)  The lock may
    have been held by a thread the child does not have (window_flow.c's
    and trace()'s fork handlers make theirs anew too): the child's exit
    takes it."""
    _state.lock = threading.Lock()
    _state.regions_pending = []
    _state.eval_windows = {}


def install(torch, bridge):
    """Each part on its own, after _layer's wrappers (so these run
    around them)."""
    global _bridge
    _bridge = bridge
    os.register_at_fork(after_in_child=_forked)
    for part in (_wrap_optimizers, _wrap_scaler, _wrap_autocast,
                 _wrap_train_mode, _wrap_graph_capture):
        try:
            part(torch)
        except Exception as e:
            _failed(e)
