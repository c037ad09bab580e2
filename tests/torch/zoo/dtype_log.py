"""An independent account of a model's mixed precision, for the zoo to
hold amptrace's traces to: torch's own Python modes, none of amptrace's
code.

    with DtypeLog() as log:
        train_steps()
    log.summary()  # {"casts": {...}, "outputs": {...}}

- casts: each aten `_to_copy` or `to` that changes a tensor's dtype,
  below autocast (a TorchDispatchMode sees autocast's casts as
  `_to_copy`, but as `to.dtype` under torch.inference_mode, where no
  autograd key decomposes `to` first: one call either way, the
  `_to_copy` inside a `to` running below the mode; a cache hit
  dispatches nothing), by phase and direction:
    forward   autocast's: not inside one of the program's own conversions
              (Tensor.to/float/half/... seen by a TorchFunctionMode),
    explicit  the program's own conversions, in forward,
    backward  inside Tensor.backward / torch.autograd.backward or .grad,
  and none inside an optimizer's step (a global step hook says when),
  but for its closure's (Lightning runs the passes inside the step), or
  inside torch.nn.utils.clip_grad_norm_ (the optimizer's side of a step,
  as amptrace counts it).
- outputs: the dtype of the first output of each call the function mode
  sees at its top, in forward, by function name (F.linear -> linear,
  x + y -> add): what the program asked for, as autocast answered it.
Only the thread that entered the log is seen (modes are per thread).
"""
import collections
import threading

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

SHORT = {torch.float64: "f64", torch.float32: "f32", torch.float16: "f16",
         torch.bfloat16: "bf16", torch.int64: "i64", torch.int32: "i32",
         torch.bool: "bool"}
CONVERSIONS = {"to", "float", "half", "bfloat16", "double", "type",
               "type_as"}
BACKWARD = {"backward", "grad"}
# The aten ops a cast reaches the dispatch mode as (see casts above).
CASTS = {torch.ops.aten._to_copy, torch.ops.aten.to}
# Python operators by the aten op whose output they return (torch's own
# Python for 2 ** x and 2 / x is pow and reciprocal() * 2).
OPERATORS = {"__add__": "add", "__radd__": "add", "__iadd__": "add_",
             "__sub__": "sub", "__rsub__": "rsub", "__mul__": "mul",
             "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
             "__matmul__": "matmul", "__neg__": "neg", "__pow__": "pow",
             "__rpow__": "pow", "__rtruediv__": "mul", "__rdiv__": "mul"}


def short(dtype):
    return SHORT.get(dtype, str(dtype).replace("torch.", ""))


def name_of(func):
    name = getattr(func, "__name__", "") or ""
    return OPERATORS.get(name, name)


class _Functions(TorchFunctionMode):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def __torch_function__(self, func, types, args=(), kwargs=None):
        log, name = self.log, name_of(func)
        if name in BACKWARD:
            log.phase.append("backward")
        elif name in CONVERSIONS:
            log.phase.append("explicit")
        try:
            result = func(*args, **(kwargs or {}))
        finally:
            if name in BACKWARD or name in CONVERSIONS:
                log.phase.pop()
        first = result[0] if isinstance(result, (tuple, list)) and result \
            else result
        if (isinstance(first, torch.Tensor) and not log.phase and
                not log.stepping and name and not name.startswith("__")):
            log.outputs[(name, short(first.dtype))] += 1
        return result


class _Kernels(TorchDispatchMode):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        log = self.log
        if (func.overloadpacket in CASTS and not log.stepping and
                isinstance(args[0], torch.Tensor) and
                result.dtype != args[0].dtype):
            phase = log.phase[-1] if log.phase else "forward"
            log.casts[(phase, "%s->%s" % (short(args[0].dtype),
                                         short(result.dtype)))] += 1
        return result


class DtypeLog:
    def __init__(self):
        self.casts = collections.Counter()
        self.outputs = collections.Counter()
        self.phase = []
        self.stepping = 0
        self.thread = threading.get_ident()

    def _step_begins(self, optimizer, args, kwargs):
        """A step begins; its closure, if any (Lightning's), runs the
        forward and backward passes: those are not the step's."""
        if threading.get_ident() != self.thread:
            return None
        self.stepping += 1
        keyword = "closure" in kwargs
        closure = kwargs["closure"] if keyword else (
            args[1] if len(args) > 1 else None)
        if not callable(closure):
            return None

        def outside_step(*a, **k):
            self.stepping -= 1
            try:
                return closure(*a, **k)
            finally:
                self.stepping += 1
        if keyword:
            return args, dict(kwargs, closure=outside_step)
        return (args[0], outside_step) + tuple(args[2:]), kwargs

    def _step_ends(self, *args):
        if threading.get_ident() == self.thread:
            self.stepping -= 1

    def _clipping(self, clip):
        def clip_grad_norm_(*args, **kwargs):
            self.stepping += threading.get_ident() == self.thread
            try:
                return clip(*args, **kwargs)
            finally:
                self.stepping -= threading.get_ident() == self.thread
        return clip_grad_norm_

    def __enter__(self):
        import torch.optim.optimizer as optim
        self._hooks = [optim.register_optimizer_step_pre_hook(
                           self._step_begins),
                       optim.register_optimizer_step_post_hook(
                           self._step_ends)]
        self._clip = torch.nn.utils.clip_grad_norm_
        torch.nn.utils.clip_grad_norm_ = self._clipping(self._clip)
        self._modes = [_Functions(self), _Kernels(self)]
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc):
        for mode in reversed(self._modes):
            mode.__exit__(*exc)
        for hook in self._hooks:
            hook.remove()
        torch.nn.utils.clip_grad_norm_ = self._clip
        return False

    def summary(self):
        casts = {}
        for (phase, direction), n in sorted(self.casts.items()):
            casts.setdefault(phase, {})[direction] = n
        outputs = {}
        for (name, dtype), n in sorted(self.outputs.items()):
            outputs.setdefault(name, {})[dtype] = n
        return {"casts": casts, "outputs": outputs}
