"""What an autocast region is called in the trace (its `scope`): the name
the program gave it with `amptrace_torch.region("name")`, else where the
program's own code opened it, found by walking the stack past torch's
frames and the bridge's:

  - `with torch.autocast(...)` in a function: "train_step (train.py:23)";
    at a module's top level: "train.py:23"; entered through contextlib's
    ExitStack: the function that called it;
  - a function decorated with autocast, or with custom_fwd or custom_bwd:
    the function, at its definition: "Attention.forward (model.py:40)",
    "MyFunction.backward (model.py:52)";
  - the regions activation checkpointing enters again while backward
    recomputes a checkpointed function: "checkpoint recompute:
    Block.forward (model.py:12)", not the line of torch's checkpoint.py
    or of the bridge that happens to be on the stack.

Names are made once per place (they are interned on the C side too).
"""
import contextlib
import functools
import os
import sys
import threading

from ._places import place

_THIS_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# contextlib enters a context for its caller (ExitStack.enter_context,
# as the HF Trainer's compute_loss_context_manager does): passed over
_CONTEXTLIB = contextlib.__file__
_names = {}          # (code, line) -> name, made once per place
_given = threading.local()


def _nesting():
    """Autocast regions open on this thread (0 without torch loaded)."""
    torch = sys.modules.get("torch")
    if torch is None or not hasattr(torch, "_C"):
        return 0
    from ._layer import _nesting as nesting
    return nesting(torch)


class region:
    """Names the autocast regions entered directly inside it, on this
    thread (not those nested in them, which keep their own names):

        with amptrace_torch.region("encoder"):
            with torch.autocast("cuda"):
                ...

    or as a decorator, @amptrace_torch.region("encoder").  Outside
    amptrace it does nothing but run the code."""

    def __init__(self, name):
        self.name = str(name)

    def __enter__(self):
        stack = getattr(_given, "names", None)
        if stack is None:
            stack = _given.names = []
        stack.append((self.name, _nesting()))
        return self

    def __exit__(self, *exc):
        _given.names.pop()
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)
        return wrapper


def _function_label(fn):
    """"Block.forward (model.py:12)" for a function, a method or a module
    (its forward); None when it has no code."""
    target = getattr(fn, "forward", fn)
    target = getattr(target, "__func__", target)
    code = getattr(target, "__code__", None)
    if code is None:
        return None
    name = getattr(target, "__qualname__", code.co_name)
    return "%s (%s)" % (name, place(code.co_filename, code.co_firstlineno))


def _checkpointed(frame):
    """The function activation checkpointing recomputes, from its frames
    in torch/utils/checkpoint.py: the reentrant version's
    ctx.run_function, the others' closure (`function`, `fn`)."""
    names = frame.f_code.co_varnames + frame.f_code.co_freevars
    values = frame.f_locals
    ctx = values.get("ctx") if "ctx" in names else None
    fn = getattr(ctx, "run_function", None)
    for name in ("function", "fn", "run_function"):
        if fn is None and name in names:
            fn = values.get(name)
    return fn


def _decorated(frame):
    """The function an autocast, custom_fwd or custom_bwd decorator of
    torch's wraps (its wrapper's closure: `func`, `fwd`, `bwd`), or
    None: custom_bwd enters the forward's autocast state again around
    the backward."""
    if frame.f_code.co_name not in ("decorate_autocast", "decorate_fwd",
                                    "decorate_bwd"):
        return None
    values = frame.f_locals
    return values.get("func") or values.get("fwd") or values.get("bwd")


def _from_torch(frames):
    """A name from torch's frames between the region and the program's
    code: a checkpoint's recompute, a decorated function; else None."""
    for frame in frames:
        if frame.f_code.co_filename.endswith(
                os.sep + os.path.join("utils", "checkpoint.py")):
            label = _function_label(_checkpointed(frame))
            return "checkpoint recompute: %s" % (label or "?")
    for frame in frames:
        fn = _decorated(frame)
        if fn is not None:
            return _function_label(fn)
    return None


def name(torch_dir, nesting, depth=2):
    """The name of the region being entered (the `nesting`-th open on its
    thread) by the caller `depth` frames up: the innermost
    amptrace_torch.region()'s name when it holds the region directly,
    else where the program opened it."""
    given = getattr(_given, "names", None)
    if given and given[-1][1] + 1 == nesting:
        return given[-1][0]
    frame = sys._getframe(depth)
    skipped = []
    while frame and (frame.f_code.co_filename.startswith(torch_dir) or
                     frame.f_code.co_filename.startswith(_THIS_DIR) or
                     frame.f_code.co_filename == _CONTEXTLIB):
        if frame.f_code.co_filename.startswith(torch_dir):
            skipped.append(frame)
        frame = frame.f_back
    if skipped:
        found = _from_torch(skipped)
        if found:
            return found
    if frame is None:
        return None
    key = (frame.f_code, frame.f_lineno)
    where = _names.get(key)
    if where is None:
        code = frame.f_code
        line = place(code.co_filename, frame.f_lineno)
        where = _names[key] = line if code.co_name == "<module>" else \
            "%s (%s)" % (getattr(code, "co_qualname", code.co_name), line)
    return where
