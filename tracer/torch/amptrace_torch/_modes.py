"""The pure-Python fallback: records through torch's Python modes when the
C++ observer is not there (no compiler, no torch headers) or when
AMPTRACE_TORCH_FALLBACK=1 asks for it.  Same events, same trace: what the
modes see goes to the observer's event logic (events.c) through
fallback.c.

    from amptrace_torch import _modes
    _modes.install(torch, _bridge, "no C++ observer: <why>")  # then attach

What each mode sees (torch 1.13; reference: torch-bridge.md):
  - TorchFunctionMode: each user-level call with its arguments as given
    (an op autocast may wrap, with f32 inputs).  Python functions in torch
    (torch.nn.functional, Tensor.backward) are run with the mode still on,
    so the ATen calls they make are seen one by one, as the observer sees
    them.
  - TorchDispatchMode, below autocast and autograd: autocast's casts
    (`_to_copy` of an argument before the op runs), the op's own kernels
    with the cast arguments (a cached cast consumed there is a cache hit),
    ops autocast wraps inside an unlisted one (native_layer_norm inside
    layer_norm), and the ops autograd runs in backward.

What the program sees of it: nothing, as far as a mode allows.  A tensor
subclass's own __torch_function__ runs only for the program's calls (the
recording reads its tensors with it off); a program's wrapper in place of
one of torch's Python functions (Tensor.backward = mine), which torch
hands to the mode when it checks for overrides, runs once, as untraced
(the mode runs torch's function); 1.13's Tensor.as_subclass, which no
dispatch mode lets work, runs with the modes off.

What the fallback cannot see that the observer sees:
  - under torch.func's vmap, the calls autocast wraps: the batching layer
    decomposes them below the function mode (linear into addmm of the
    weight transposed) and autocast casts tensors it made, no argument of
    a call the modes saw (under grad, a cast's source is the argument the
    layer unwrapped: seen);
  - threads it was not installed on: modes are per thread; threads started
    with threading.Thread after install() get them, threads that were
    already running or that C++ starts do not;
  - backward ops above autograd's composites: they are seen decomposed
    (`_reshape_alias` or `clone` + `_unsafe_view` for `reshape`), and the
    `detach` autograd makes of saved tensors goes through the mode;
  - TorchScript's autocast ops (seen as the `to.dtype` casts they make),
    what torch.jit.trace runs (paused: 1.13's trace checker fails under a
    dispatch mode), ops torch runs with Python dispatch excluded
    (nn.Parameter's detach, torch.tensor()'s internals), Python numbers
    given to ops (wrapped-number tensors for the observer);
  - a cast's own duration (casts are replayed when the op's kernel starts).
Backward ops link to their forward op as autograd's sequence numbers link
them for the observer: each autograd node an op makes gets a pre-hook that
opens it in the event logic (it ends where the next node begins;
node.metadata["amptrace"] marks a node hooked).
"""
import functools
import os
import sys
import threading
import types

from ._layer import _recording_failed

FORCE_VARIABLE = "AMPTRACE_TORCH_FALLBACK"

_DTYPES = (("float64", "f64"), ("float32", "f32"), ("float16", "f16"),
           ("bfloat16", "bf16"), ("int64", "i64"), ("int32", "i32"),
           ("bool", "bool"), ("complex64", "f64"), ("complex128", "f64"))

# Tensor methods whose ATen op has another name.
_RENAMED = {
    "__add__": "add", "__radd__": "add", "__iadd__": "add_",
    "__sub__": "sub", "__isub__": "sub_", "__mul__": "mul",
    "__rmul__": "mul", "__imul__": "mul_", "__truediv__": "div",
    "__itruediv__": "div_", "__div__": "div", "__matmul__": "matmul",
    "__neg__": "neg", "__abs__": "abs", "__pow__": "pow", "__ipow__": "pow_",
    "__eq__": "eq", "__ne__": "ne", "__lt__": "lt", "__le__": "le",
    "__gt__": "gt", "__ge__": "ge", "__invert__": "bitwise_not",
    "__floordiv__": "floor_divide", "__mod__": "remainder",
}
# x.float() is aten::to(x, float32): the dtype is implied.
_DTYPE_METHODS = {"float": "float32", "double": "float64", "half": "float16",
                  "bfloat16": "bfloat16", "long": "int64", "int": "int32",
                  "bool": "bool", "short": "int16", "char": "int8",
                  "byte": "uint8"}

# Python functions whose C part reports to the mode under their name and
# returns something else (1.13's Tensor._storage() reports as
# Tensor.storage and returns an UntypedStorage): run whole with the mode
# off, as a mode's handler runs them (torch.save went through storage()
# run with the mode on, and failed).  They run no op of the trace's.
_WHOLE = frozenset({"Tensor.storage", "Tensor._typed_storage"})
# Where torch's Python functions that call handle_torch_function live: a
# program's wrapper in their place (Tensor.backward = mine) is looked up
# by them at each call, and the mode must run torch's, not the wrapper.
_OVERRIDABLE = ("torch._tensor", "torch.nn.functional", "torch.functional")
# The files of the frames between such a function and the mode's handler
# (this one, torch.overrides' handle_torch_function): set by install().
_PASSING = set()


def forced():
    """AMPTRACE_TORCH_FALLBACK=1: use the fallback even where the observer
    is built (to test it, or to compare the two)."""
    return os.environ.get(FORCE_VARIABLE) == "1"


class _Op:
    """One ATen operator overload as fallback.c knows it."""
    __slots__ = ("handle", "listed", "listed_on", "names", "nargs")

    def __init__(self, bridge, schema):
        optional, dtype_index = 0, -1
        for i, a in enumerate(schema.arguments):
            if str(a.type) == "Optional[Tensor]" and i < 64:
                optional |= 1 << i
            if a.name == "dtype":
                dtype_index = i
        self.handle, cpu, cuda = bridge.fallback_op(
            schema.name.split("::")[-1], schema.overload_name, optional,
            dtype_index)
        self.listed = cpu or cuda
        self.listed_on = (cpu, cuda)
        self.names = {a.name: i for i, a in enumerate(schema.arguments)}
        self.nargs = len(schema.arguments)

    def values(self, args, kwargs):
        """The arguments in schema order (observer.cpp sees them so)."""
        if not kwargs and len(args) == self.nargs:
            return args
        values = list(args) + [None] * (self.nargs - len(args))
        for k, v in kwargs.items():
            i = self.names.get("self" if k == "input" else k)
            if i is not None:
                values[i] = v
        return values


def _fits(value, kind, torch):
    """Whether a Python argument can bind to a schema type (the Python
    binding's own rules, as far as overloads differ in them)."""
    if kind.startswith("Optional["):
        return value is None or _fits(value, kind[9:-1], torch)
    if kind == "Tensor":
        return isinstance(value, torch.Tensor)
    if kind.startswith("List[") or kind.endswith("[]"):
        # x.reshape(-1): an int stands for a one-element int list
        return isinstance(value, (list, tuple, torch.Size)) or (
            kind in ("List[int]", "List[SymInt]") and isinstance(value, int))
    if kind in ("int", "SymInt"):
        return isinstance(value, (int, torch.dtype, torch.memory_format,
                                  torch.layout)) and not isinstance(value, float)
    if kind in ("float", "Scalar", "number"):
        return isinstance(value, (int, float, complex, bool))
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "str":
        return isinstance(value, str)
    if kind == "Device":
        return isinstance(value, (str, torch.device, int))
    return True


def _pack(schema, args):
    """x.view(2, 3), torch.randn(2, 3): trailing ints fill a list
    argument."""
    positional = [a for a in schema.arguments if not a.kwarg_only]
    if len(args) <= len(positional):
        return args
    for i, a in enumerate(positional):
        kind = str(a.type)
        if kind.startswith("List[") and i == len(positional) - 1:
            return tuple(args[:i]) + (tuple(args[i:]),)
    return None


def _matches(schema, args, kwargs, torch):
    args = _pack(schema, args)
    if args is None:
        return None
    positional = [a for a in schema.arguments if not a.kwarg_only]
    for value, a in zip(args, positional):
        if not _fits(value, str(a.type), torch):
            return None
    names = {a.name for a in schema.arguments}
    for k in kwargs:
        if ("self" if k == "input" else k) not in names:
            return None
    for a in positional[len(args):]:
        if (a.name not in kwargs and a.default_value is None and
                not str(a.type).startswith("Optional[")):
            return None
    return args


class _Function:
    """A Python-level callable as the function mode sees it: an ATen op
    (by name; the overload is found when it runs), a Python function to
    run with the mode on, or neither (property getters, size(), ...)."""
    __slots__ = ("kind", "name", "schemas", "bypass", "dtype", "listed",
                 "foreign")

    ATEN, PYTHON, OPAQUE = range(3)


class _Registry:
    """Per process: callables and operators, described once."""

    def __init__(self, torch, bridge):
        self.torch = torch
        self.bridge = bridge
        self.functions = {}
        self.ops = {}          # OpOverload or (name, overload) -> _Op
        self.to_copy = torch.ops.aten._to_copy.default
        self.unwrap = _functorch_unwrap(torch)
        self.to_dtype = torch.ops.aten.to.dtype
        self.to_device = torch.ops.aten.to.device
        self.to_dtype_layout = torch.ops.aten.to.dtype_layout
        self.flags = _Flags(torch)
        self.opaque = _Function()
        self.opaque.kind = _Function.OPAQUE
        self.torch_functions = _torch_functions(torch)

    def op(self, func):
        """The _Op of an OpOverload; None for other namespaces (prims),
        which the observer does not show either."""
        op = self.ops.get(func)
        if op is None and func not in self.ops:
            op = self.ops[func] = (_Op(self.bridge, func._schema)
                                   if func._schema.name.startswith("aten::")
                                   else None)
        return op

    def listed(self, f, state):
        """Whether autocast may wrap some overload of it in this state
        (on CPU or CUDA: the device autocast is on for)."""
        if f.listed is None:
            ops = [self.op_named(s) for s in f.schemas]
            f.listed = (any(op.listed_on[0] for op in ops),
                        any(op.listed_on[1] for op in ops))
        return (state[0] and f.listed[0]) or (state[2] and f.listed[1])

    def op_named(self, schema):
        key = (schema.name, schema.overload_name)
        op = self.ops.get(key)
        if op is None:
            op = self.ops[key] = _Op(self.bridge, schema)
        return op

    def function(self, func):
        try:
            f = self.functions.get(func)
        except TypeError:  # unhashable: not one of torch's
            return self.opaque
        if f is None:
            f = self.functions[func] = self._describe(func)
        return f

    def _describe(self, func):
        f = _Function()
        f.dtype = f.listed = None
        f.foreign = False
        if isinstance(func, types.FunctionType):
            if func.__qualname__ in _WHOLE:
                f.kind = _Function.OPAQUE
                return f
            f.kind = _Function.PYTHON
            f.bypass = _bypass(func)
            f.foreign = func.__code__ not in self.torch_functions
            return f
        torch = self.torch
        if isinstance(func, torch._ops.OpOverload):
            aten = func._schema.name.startswith("aten::")
            f.kind = _Function.ATEN if aten else _Function.OPAQUE
            f.name, f.schemas = None, [func._schema]
            return f
        name = getattr(func, "__name__", None) or ""
        if isinstance(func, torch._ops.OpOverloadPacket):
            name = func._qualified_op_name.split("::")[-1]
        if name in _DTYPE_METHODS:
            f.dtype = getattr(torch, _DTYPE_METHODS[name])
            name = "to"
        name = _RENAMED.get(name, name)
        # ATen operators only (not TorchScript's builtins such as
        # aten::tensor.float or aten::__getitem__.t), no out= variants
        has_kernel = torch._C._dispatch_has_kernel
        schemas = [s for s in torch._C._jit_get_schemas_for_operator(
            "aten::" + name) if not any(a.is_out for a in s.arguments) and
            has_kernel(s.name + ("." + s.overload_name
                                 if s.overload_name else ""))]
        if f.dtype is not None:
            schemas = [s for s in schemas if s.overload_name == "dtype"]
        f.kind = _Function.ATEN if schemas else _Function.OPAQUE
        f.name, f.schemas = name, schemas
        return f

    def standing_in(self, func, f):
        """(function, _Function) the mode runs for a call of a Python
        function that is not torch's: when torch's own function called the
        mode with it (a wrapper the program put in its place, looked up at
        each call), torch's; else the function itself."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename in _PASSING:
            frame = frame.f_back
        caller = frame.f_code if frame is not None else None
        original = self.torch_functions.get(caller)
        if caller is func.__code__ or original is None:
            return func, f
        return original, self.function(original)

    def resolve(self, f, args, kwargs, seen_op, seen_args=None):
        """(op, values) of a user-level call: its overload is the one that
        runs (seen_op, when it is this op and not a decomposition), else
        the first whose types fit.  None when no overload fits (not an op
        of the trace: x[0] and the like)."""
        if f.dtype is not None:
            return self.op_named(f.schemas[0]), [args[0], f.dtype]
        if seen_op is not None and seen_op._schema.name == "aten::" + str(
                f.name) and not seen_op._schema.overload_name.endswith("out"):
            op = self.op(seen_op)
            if seen_args is not None:
                # the op's own kernel: its arguments as the dispatcher
                # has them, keywords in their schema places
                return op, op.values(*seen_args)
            return op, op.values(args, kwargs)
        for schema in f.schemas:
            bound = (args if len(f.schemas) == 1 and f.name is None
                     else _matches(schema, args, kwargs, self.torch))
            if bound is not None:
                op = self.op_named(schema)
                return op, op.values(bound, kwargs)
        return None, None


def _code_file(function):
    return function.__code__.co_filename


def _torch_functions(torch):
    """code -> function, of torch's Python functions that may hand a
    program's wrapper of themselves to the mode (_OVERRIDABLE)."""
    found = {}
    for name in _OVERRIDABLE:
        module = sys.modules.get(name)
        spaces = [vars(module)] if module is not None else []
        if name == "torch._tensor":
            spaces.append(vars(torch.Tensor))
        for space in spaces:
            for value in list(space.values()):
                if (isinstance(value, types.FunctionType) and
                        (value.__module__ or "").startswith("torch")):
                    found[value.__code__] = value
    return found


class _Flags:
    """The autocast state of the calling thread, as fallback.c takes it."""

    def __init__(self, torch):
        self.cpu = torch.is_autocast_cpu_enabled
        self.cpu_dtype = torch.get_autocast_cpu_dtype
        self.cuda = torch.is_autocast_enabled
        self.cuda_dtype = torch.get_autocast_gpu_dtype
        self.cache = torch.is_autocast_cache_enabled
        self.grad = torch.is_grad_enabled

    def read(self):
        return (self.cpu(), self.cpu_dtype(), self.cuda(), self.cuda_dtype(),
                self.cache(), self.grad())


def _bypass(function):
    """The function with its own __torch_function__ check turned off, so
    that it runs with the mode on and its torch calls reach the mode one
    by one (the mode is off inside a handler otherwise).  Globals are read
    through from the function's module at each use."""

    class Globals(dict):
        def __missing__(self, key):
            return function.__globals__[key]

    def no(*args, **kwargs):
        return False

    overlay = Globals(has_torch_function=no, has_torch_function_unary=no,
                      has_torch_function_variadic=no)
    copy = types.FunctionType(function.__code__, overlay, function.__name__,
                              function.__defaults__, function.__closure__)
    copy.__kwdefaults__ = function.__kwdefaults__
    return copy


class _Frame:
    """A user-level ATen call in progress on this thread."""
    __slots__ = ("function", "args", "kwargs", "state", "any", "wraps",
                 "started", "op", "values", "want", "pending", "seen",
                 "candidates", "transparent", "seq", "made")

    def __init__(self, function, args, kwargs, state, wraps):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.state = state
        self.any = state[0] or state[2]
        # autocast may wrap it: leading casts of its arguments are
        # autocast's (events.c decides whether they are)
        self.wraps = wraps
        self.started = False
        self.transparent = False
        self.op = self.values = None
        self.want = 0
        self.seq = -1
        self.made = []         # what its kernels returned (their nodes)
        self.pending = []
        self.seen = []
        self.candidates = []


class _Thread:
    """One thread's modes and its call in progress."""

    def __init__(self, registry):
        import torch
        from torch.overrides import TorchFunctionMode
        from torch.utils._python_dispatch import TorchDispatchMode

        self.registry = registry
        self.frame = None
        self.state = registry.flags.read()
        self.bypassing = set()
        self.next_seq = 0      # stands for autograd's sequence numbers
        self.open_nodes = 0    # autograd nodes running backward
        self.node_floor = 0    # ... those of the backward running now
        self.unhooked = []     # (seq, outputs) whose nodes come later
        self.tensor_type = torch.Tensor
        self.plain_types = (torch.Tensor, torch.nn.Parameter)
        self.quiet = _quiet_type(torch)
        self.grad_enabled = torch.is_grad_enabled
        thread = self

        compiling = getattr(getattr(torch, "compiler", None),
                            "is_compiling", lambda: False)

        class FunctionMode(TorchFunctionMode):
            def __torch_function__(self, func, types, args=(), kwargs=None):
                # Dynamo traces the function modes on the stack: under
                # compile this one is nothing (its calls into the
                # extension would break the graph)
                if compiling():
                    return func(*args, **(kwargs or {}))
                return thread.function(self, func, args, kwargs or {})

        class DispatchMode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                return thread.dispatch(func, args, kwargs or {})

            # torch.compile (2.x) compiles nothing under a dispatch mode
            # unless it asks to be off while compiling and back on for
            # the compiled code: the ops a compiled graph runs are seen
            @classmethod
            def ignore_compile_internals(cls):
                return True

        self.function_mode = FunctionMode()
        self.dispatch_mode = DispatchMode()
        self.function_stack_length = torch._C._len_torch_function_stack
        self.dispatch_stack_length = torch._C._len_torch_dispatch_stack
        self.pop_function_mode = torch.overrides._pop_mode
        self.push_function_mode = torch.overrides._push_mode

    def enter(self):
        self.function_mode.__enter__()
        self.dispatch_mode.__enter__()

    # -------------------------------------------------- function mode
    def function(self, mode, func, args, kwargs):
        f = self.registry.function(func)
        if f.kind == _Function.PYTHON and f.foreign:
            func, f = self.registry.standing_in(func, f)
        if f.kind == _Function.PYTHON:
            if func in self.bypassing:  # its module checks some other way
                return func(*args, **kwargs)
            self.bypassing.add(func)
            try:
                with mode:
                    return f.bypass(*args, **kwargs)
            finally:
                self.bypassing.discard(func)
        if f.kind == _Function.OPAQUE or self.frame is not None:
            return func(*args, **kwargs)
        if self.unhooked:
            _guarded(self.hook_unhooked)
        frame = _guarded(self.open_frame, f, args, kwargs)
        if frame is None:
            return func(*args, **kwargs)
        result, failed = None, True
        try:
            result = func(*args, **kwargs)
            failed = False
            return result
        finally:
            self.frame = None
            if not frame.started and frame.pending:
                _guarded(self.start, frame, None)
            if frame.started and not frame.transparent:
                _guarded(self.finish, frame, result, failed)

    def open_frame(self, f, args, kwargs):
        if self.dispatch_stack_length():
            state = self.state = self.registry.flags.read()
        else:
            # called from inside a dispatch handler (autograd detaching a
            # saved tensor through the mode): autocast reads off there
            state = self.below_autocast()
        frame = self.frame = _Frame(f, args, kwargs, state,
                                    self.registry.listed(f, state))
        return frame

    def below_autocast(self):
        """The state for an op seen below autocast: autocast's as last
        read above it (it reads off in a dispatch handler), grad mode as
        it is now.  Grad mode does not read off there, and an earlier
        reading would be stale: nn.init's uniform_ runs under a no_grad
        that no call the function mode saw was inside."""
        return self.state[:5] + (self.grad_enabled(),)

    def start(self, frame, func, seen=None):
        """The call's first kernel: the op begins (its overload known
        now), then the casts autocast made before it."""
        registry = self.registry
        bridge = registry.bridge
        frame.started = True
        frame.transparent = True   # until it has begun
        op, values = registry.resolve(
            frame.function, frame.args, frame.kwargs, func,
            None if frame.pending or func is None else seen)
        if op is None:
            return
        frame.op, frame.values = op, values
        frame.seq = self.next_seq
        self.next_seq += 1
        frame.want = bridge.fallback_begin(op.handle, values, frame.state,
                                           frame.any, frame.seq)
        frame.transparent = False
        for source, result in frame.pending:
            bridge.fallback_cast(source, result)
            if frame.state[5]:
                frame.made.append(result)
        frame.wraps = frame.wraps and ((frame.state[0] and op.listed_on[0]) or
                                       (frame.state[2] and op.listed_on[1]))

    def finish(self, frame, result, failed):
        bridge = self.registry.bridge
        try:
            if frame.wraps:
                frame.seen.append([r for _, r in frame.pending])
                bridge.fallback_inner(frame.op.handle, frame.values,
                                      frame.seen)
        finally:
            bridge.fallback_end(result if frame.want & 2 else None, failed)
            if not failed and frame.state[5]:
                self.hook_nodes(frame.seq, frame.made)
                self.hook_nodes(frame.seq, result)

    def hook_unhooked(self):
        """Ops seen with no user-level call around (x[0:2]'s slice):
        their nodes, made since, are hooked at the next op."""
        unhooked, self.unhooked = self.unhooked, []
        for seq, result in unhooked:
            self.hook_nodes(seq, result)

    def hook_nodes(self, seq, result):
        """The autograd nodes an op made announce themselves when they run
        backward, so that backward's ops link to the op, as autograd's
        sequence numbers link them for the observer.  A pre-hook only: a
        node ends where the next begins (the gradient accumulators of
        leaves are hooked too, unlinked); a post-hook would hold the
        gradients and make AccumulateGrad copy them.  node.metadata marks
        a node hooked (a node passed through, x.float() of a float, is not
        the op's)."""
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        for t in outputs:
            if isinstance(t, (tuple, list)):
                self.hook_nodes(seq, t)
                continue
            node = self.grad_fn(t) if isinstance(t, self.tensor_type) \
                else None
            if node is None or "amptrace" in node.metadata:
                continue
            node.metadata["amptrace"] = seq
            node.register_prehook(functools.partial(
                _node_begins, seq, type(node).__name__))
            for following, _ in node.next_functions:
                if (following is not None and
                        type(following).__name__ == "AccumulateGrad" and
                        "amptrace" not in following.metadata):
                    following.metadata["amptrace"] = -1
                    following.register_prehook(
                        functools.partial(_node_begins, -1,
                                          "AccumulateGrad"))

    def grad_fn(self, t):
        """t.grad_fn, without running a subclass's __torch_function__."""
        if type(t) in self.plain_types:
            return t.grad_fn
        with self.quiet():
            return t.grad_fn

    # -------------------------------------------------- dispatch mode
    def dispatch(self, func, args, kwargs):
        frame = self.frame
        if frame is None or frame.transparent:
            return self.top_level(func, args, kwargs)
        if not frame.started:
            source = (_holder(frame.args, args[0], self.registry.unwrap)
                      if frame.wraps and func is self.registry.to_copy
                      else None)
            if source is not None:
                result = func(*args, **kwargs)
                frame.pending.append((source, result))
                return result
            _guarded(self.start, frame, func, (args, kwargs))
            if frame.transparent:
                return self.top_level(func, args, kwargs)
        if frame.wraps:
            frame.seen.append(args)
        elif frame.any:
            return self.nested(frame, func, args, kwargs)
        result = func(*args, **kwargs)
        if frame.state[5]:
            # its implementation's nodes are the op's (autograd numbers
            # them inside the op's call); below autograd they are not
            # made yet: hooked when the op ends
            frame.made.append(result)
        return result

    def nested(self, frame, func, args, kwargs):
        """Inside an op autocast does not wrap: a listed op autocast wraps
        in its turn shows here below autocast, after its casts."""
        if func is self.registry.to_copy:
            result = func(*args, **kwargs)
            frame.candidates.append((args[0], result))
            return result
        op = _guarded(self.registry.op, func)
        if op is None or not op.listed:
            frame.candidates = []
            return func(*args, **kwargs)
        return self.run(op, func, args, kwargs, frame.state, frame.any,
                        frame)

    def top_level(self, func, args, kwargs):
        """An op no user-level call is around (backward, TorchScript, or
        inside x[i] and the like): an op of its own."""
        registry = self.registry
        if func is registry.to_copy and kwargs.get("dtype") is not None:
            # autograd's casts (the backward of a cast: _to_copy_backward's
            # Tensor::to(TensorOptions)) and torch.tensor()'s are `to`
            # calls, composite: below autograd they are `_to_copy`, whose
            # arguments say which overload passed them on (to.dtype sets
            # the dtype only, to.device the device too, to.dtype_layout
            # the layout as well).
            dtype = kwargs.get("dtype")
            if "layout" in kwargs:
                to, values = registry.to_dtype_layout, (args[0], dtype)
            elif "device" in kwargs:
                to = registry.to_device
                values = (args[0], kwargs["device"], dtype)
            else:
                to, values = registry.to_dtype, (args[0], dtype)
            op = _guarded(registry.op, to)
        else:
            op = _guarded(registry.op, func)
            values = None
        if op is None:
            return func(*args, **kwargs)
        state = self.below_autocast()
        return self.run(op, func, args, kwargs, state, state[0] or state[2],
                        None, values)

    def run(self, op, func, args, kwargs, state, any_, frame, values=None):
        """An op seen only here: begins with its arguments as called (the
        casts autocast made for it undone), its casts, its inner call;
        ends when it returns."""
        if self.unhooked:
            self.quietly(self.hook_unhooked)
        seq = self.next_seq
        self.next_seq += 1
        want = self.quietly(self.begin, op, values or op.values(args, kwargs),
                            state, any_, frame, seq)
        result, failed = None, True
        try:
            result = func(*args, **kwargs)
            failed = False
            return result
        finally:
            if want is not None:
                self.quietly(self.registry.bridge.fallback_end,
                             result if want & 2 else None, failed)
                # below autograd its nodes are not made yet; none are
                # with grad off (backward: holding a gradient would make
                # AccumulateGrad copy it)
                if not failed and self.grad_enabled():
                    if frame is not None:
                        frame.made.append(result)
                    else:
                        self.unhooked.append((seq, result))

    def quietly(self, fn, *args):
        """Runs a recording step with the function mode off: reading a
        tensor's dtype or shape goes through the mode otherwise (where
        backward runs, the function mode is on around the dispatch
        mode)."""
        if not self.function_stack_length():
            return _guarded(fn, *args)
        mode = self.pop_function_mode()
        try:
            return _guarded(fn, *args)
        finally:
            self.push_function_mode(mode)

    def begin(self, op, executed, state, any_, frame, seq):
        bridge = self.registry.bridge
        casts = frame.candidates if frame is not None else ()
        if not casts and not (any_ and op.listed):
            return bridge.fallback_begin(op.handle, executed, state, any_,
                                         seq)
        called = bridge.fallback_sources(executed)
        want = bridge.fallback_begin(op.handle, called, state, any_, seq)
        try:
            for source, result in casts:
                if any(result is v for v in executed):
                    bridge.fallback_cast(source, result)
            bridge.fallback_inner(op.handle, called, [executed])
        finally:
            if frame is not None:
                frame.candidates = []
        return want


def _functorch_unwrap(torch):
    """A function giving the tensor a torch.func wrapper (grad's, vmap's
    batched one) holds, or None for a tensor that is none (and for every
    tensor where torch has no torch.func)."""
    functorch = getattr(torch._C, "_functorch", None)
    if not all(hasattr(functorch, name) for name in (
            "get_unwrapped", "is_functorch_wrapped_tensor",
            "is_batchedtensor")):
        return lambda t: None
    wrapped = functorch.is_functorch_wrapped_tensor
    batched = functorch.is_batchedtensor

    def unwrap(t):
        if isinstance(t, torch.Tensor) and (wrapped(t) or batched(t)):
            return functorch.get_unwrapped(t)
        return None
    return unwrap


def _holder(args, tensor, unwrap):
    """The call's argument that holds `tensor`: itself, an element of a
    list argument (cat, stack: autocast casts those too), or else a
    torch.func wrapper around it (under grad the dispatch mode sees the
    tensors the transform's layer unwrapped, the function mode the
    wrappers); None when none does."""
    flat = [x for a in args
            for x in (a if isinstance(a, (list, tuple)) else (a,))]
    for x in flat:
        if x is tensor:
            return x
    for x in flat:
        inner = unwrap(x)
        while inner is not None:
            if inner is tensor:
                return x
            inner = unwrap(inner)
    return None


def _node_begins(seq, name, grad_outputs):
    """An autograd node runs: the one before it on this thread ended."""
    thread = getattr(_local, "thread", None)
    if thread is not None:
        _nodes_end(thread, thread.node_floor)
        if _guarded(_registry.bridge.fallback_node, seq, name) is not None:
            thread.open_nodes += 1


def _nodes_end(thread, level):
    while thread.open_nodes > level:
        thread.open_nodes -= 1
        _guarded(_registry.bridge.fallback_node, None)


def _guarded(fn, *args):
    """Recording never breaks the program: a failure is said once and
    that call goes unrecorded (None)."""
    try:
        return fn(*args)
    except Exception as e:
        _recording_failed(e)
        return None


_registry = None
_local = threading.local()


def _enter_thread():
    if getattr(_local, "thread", None) is None:
        _local.thread = _Thread(_registry)
        _local.thread.enter()


def _leave_thread():
    """Takes this thread's modes off while Python runs: torch keeps them
    in C++ thread-locals, whose destructors would otherwise release them
    when the OS thread ends, possibly while the interpreter finalizes
    (taking the GIL then ends the thread from inside a destructor:
    std::terminate)."""
    import torch.overrides as function_modes
    import torch.utils._python_dispatch as dispatch_modes

    thread = getattr(_local, "thread", None)
    if thread is None:
        return
    _local.thread = None
    if dispatch_modes._get_current_dispatch_mode() is thread.dispatch_mode:
        dispatch_modes._pop_mode()
    if function_modes._get_current_function_mode() is thread.function_mode:
        function_modes._pop_mode()


def _wrap_threads():
    """Modes are per thread: each thread started from now on gets them,
    and leaves them when its run ends."""
    bootstrap = threading.Thread._bootstrap_inner

    @functools.wraps(bootstrap)
    def _bootstrap_inner(self):
        try:
            _enter_thread()
        except Exception as e:
            _recording_failed(e)
        try:
            return bootstrap(self)
        finally:
            _guarded(_leave_thread)

    threading.Thread._bootstrap_inner = _bootstrap_inner


def _without_modes(fn, dispatch_too):
    """fn with this thread's function mode (and its dispatch mode when
    dispatch_too) off for the call, where they are on top."""
    import torch.overrides as function_modes
    import torch.utils._python_dispatch as dispatch_modes

    stacks = [(function_modes, function_modes._get_current_function_mode,
               "function_mode")]
    if dispatch_too:
        stacks.insert(0, (dispatch_modes,
                          dispatch_modes._get_current_dispatch_mode,
                          "dispatch_mode"))

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        thread = getattr(_local, "thread", None)
        paused = []
        if thread is not None:
            for stack, top, which in stacks:
                mode = getattr(thread, which)
                if top() is mode:
                    stack._pop_mode()
                    paused.append((stack, mode))
        try:
            return fn(*args, **kwargs)
        finally:
            for stack, mode in reversed(paused):
                stack._push_mode(mode)
    return wrapper


def _wrap_backward(torch):
    """backward runs autograd's ops on this thread below the function
    mode: they are seen in dispatch mode, with the autocast state at the
    call (inside a dispatch handler autocast reads off).  The function
    mode is off meanwhile: it would see only tensor attribute reads."""
    autograd = torch.autograd

    def wrap(fn):
        run = _without_modes(fn, False)

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            thread = getattr(_local, "thread", None)
            if thread is None:
                return run(*args, **kwargs)
            thread.state = _registry.flags.read()
            # a backward inside a node (double backward) leaves that
            # node open
            floor, thread.node_floor = thread.node_floor, thread.open_nodes
            try:
                return run(*args, **kwargs)
            finally:
                _nodes_end(thread, thread.node_floor)  # the last node ran
                thread.node_floor = floor
        return wrapper

    autograd.backward = wrap(autograd.backward)
    autograd.grad = wrap(autograd.grad)


def _quiet_type(torch):
    """The context under which reading a tensor subclass's attributes runs
    none of its __torch_function__ (2.x; 1.13 has only the one that turns
    every override off)."""
    return getattr(torch._C, "DisableTorchFunctionSubclass", None) or \
        torch._C.DisableTorchFunction


def _wrap_as_subclass(torch):
    """torch 1.13's Tensor.as_subclass fails under any dispatch mode (its
    alias comes back with a Python object already: "the raw Tensor object
    is already associated to a python object of type Tensor"): where it
    does, it runs with the modes off, as it would untraced."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    class Probe(torch.Tensor):
        pass

    try:
        with Passing():
            torch.empty(0).as_subclass(Probe)
    except RuntimeError:
        torch.Tensor.as_subclass = _without_modes(torch.Tensor.as_subclass,
                                                  True)


def _wrap_jit_trace(torch):
    """torch 1.13's trace checker fails under a dispatch mode (it hands a
    traced constant to aten::view): what torch.jit.trace runs is not
    seen."""
    torch.jit.trace = _without_modes(torch.jit.trace, True)
    torch.jit.trace_module = _without_modes(torch.jit.trace_module, True)


def install(torch=None, bridge=None, reason=None):
    """Records this process through Python modes instead of the C++
    observer.  Call before `_bridge.attach` (attach then leaves the
    observer out); says so in one line on stderr, with `reason`.  Installs
    the modes on the calling thread and on every thread started later.
    Idempotent."""
    global _registry
    if torch is None:
        import torch
    if bridge is None:
        from . import _bridge as bridge
    if _registry is not None:
        return
    import torch.overrides
    _PASSING.update({_code_file(_Thread.function), torch.overrides.__file__})
    bridge.fallback_init(torch._C._TensorBase,
                         [(getattr(torch, t), name) for t, name in _DTYPES],
                         (torch.Tensor, torch.nn.Parameter),
                         torch._C._disabled_torch_function_impl,
                         _quiet_type(torch))
    _registry = _Registry(torch, bridge)
    if reason is None:
        reason = ("%s=1" % FORCE_VARIABLE if forced()
                  else "no C++ observer for torch %s" % torch.__version__)
    sys.stderr.write("amptrace: recording torch through Python modes (%s): "
                     "slower, same trace; threads already running are not "
                     "seen\n" % reason)
    import atexit
    atexit.register(_guarded, _leave_thread)  # the main thread's
    _wrap_threads()
    _wrap_backward(torch)
    _wrap_jit_trace(torch)
    _wrap_as_subclass(torch)
    _enter_thread()
