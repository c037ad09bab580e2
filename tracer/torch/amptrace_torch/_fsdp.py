"""FSDP's mixed precision: the other way PyTorch trains in low precision,
without autocast.  FSDP keeps the parameters' own (f32) shards, casts
them to the policy's param_dtype as it gathers them for a module's
forward, and reduces the gradients in reduce_dtype: its ops run in bf16
in no autocast region.  Each policy the program sets is recorded, as an
fsdp-mixed-precision amp.diag (FORMAT.md §3.7), so that readers know the
precision was lowered on purpose and say by what.

- FSDP2, fully_shard(module, mp_policy=MixedPrecisionPolicy(...)): every
  call reaches FSDPState.init, whichever name the program calls it by
  (torch.distributed.fsdp, torch.distributed._composable.fsdp, an alias
  it imported before the bridge came): that method is wrapped, not the
  names.
- FSDP1, FullyShardedDataParallel(module, mixed_precision=
  MixedPrecision(...)): its __init__, which the nested instances an
  auto-wrap policy makes run too.

Neither module is imported with torch, and importing FSDP costs 0.7 s
that a program which does not shard must not pay: each class is wrapped
as its module is imported (a meta path finder, _AfterImport), or at once
if it is imported already.

A policy is recorded once its module has its name in the trace
(_layer.py's _ModuleNames: at its first forward, or at once if it ran
before), as torch applies it (_applied): None where FSDP casts nothing.
A module whose policy casts nothing is not recorded.
"""
import sys
import weakref
from _thread import get_ident

# The modules defining what is wrapped, and what to wrap in each.
_FSDP2_STATE = ("torch.distributed.fsdp._fully_shard._fsdp_state",
                "torch.distributed._composable.fsdp._fsdp_state")
_FSDP1 = "torch.distributed.fsdp.fully_sharded_data_parallel"


def install(torch, bridge, failed, wrapped, names):
    """`failed(error)` says a recording failure once; `wrapped(bridge, fn,
    after=...)` is _layer.py's wrapper maker; `names` (_ModuleNames) gives
    modules' trace names."""
    if not torch.distributed.is_available():
        return
    policies = _Policies(bridge, failed, names)
    names.listeners.append(policies.named)

    def fsdp2(module):
        _wrap_fsdp2(module, policies, wrapped)

    def fsdp1(module):
        _wrap_fsdp1(module, policies, wrapped)

    # FSDP2's state is in one module or the other, by torch's version:
    # one action for both, done once
    waiting = {}
    for modules, action in ((_FSDP2_STATE, fsdp2), ((_FSDP1,), fsdp1)):
        imported = [sys.modules[name] for name in modules
                    if sys.modules.get(name) is not None]
        if imported:
            action(imported[0])
        else:
            waiting.update(dict.fromkeys(modules, action))
    if waiting:
        sys.meta_path.insert(0, _AfterImport(waiting, failed))


def _wrap_fsdp2(module, policies, wrapped):
    cls = getattr(module, "FSDPState", None)
    if cls is None or getattr(cls.init, "_amptrace", False):
        return

    def initialized(result, state, *args, **kwargs):
        # init(modules, device, mp_policy, ...): torch 2.3's took one
        # module, later ones a tuple of them
        try:
            modules = args[0] if args else kwargs["modules"]
            policy = _fsdp2_policy(args[2] if len(args) > 2
                                   else kwargs["mp_policy"])
            group = modules if isinstance(modules, (tuple, list)) \
                else (modules,)
        except Exception as e:
            policies.failed(e)
            return
        for one in group:
            policies.set(one, policy)

    cls.init = wrapped(policies.bridge, cls.init, after=initialized)


def _wrap_fsdp1(module, policies, wrapped):
    cls = getattr(module, "FullyShardedDataParallel", None)
    if cls is None or getattr(cls.__init__, "_amptrace", False):
        return

    def initialized(result, fsdp, *args, **kwargs):
        try:
            mp = getattr(fsdp, "mixed_precision", None)
            policy = _fsdp1_policy(mp) if mp is not None else None
        except Exception as e:
            policies.failed(e)
            return
        policies.set(fsdp, policy)
        policies.enclose(fsdp)

    cls.__init__ = wrapped(policies.bridge, cls.__init__, after=initialized)


def _fsdp2_policy(mp):
    """(param, reduce, input, output, buffer) dtypes as the policy states
    them: FSDP2 casts a forward's inputs to param_dtype when
    cast_forward_inputs, and has no buffer_dtype."""
    inputs = mp.param_dtype if mp.cast_forward_inputs else None
    return (mp.param_dtype, mp.reduce_dtype, inputs, mp.output_dtype, None)


def _fsdp1_policy(mp):
    """The same of FSDP1's MixedPrecision, and a sixth: the root's inputs'
    (_Policies.record tells the root apart).  It has no output_dtype."""
    def when(flag):
        return mp.param_dtype if getattr(mp, flag, False) else None
    return (mp.param_dtype, mp.reduce_dtype, when("cast_forward_inputs"),
            None, getattr(mp, "buffer_dtype", None),
            when("cast_root_forward_inputs"))


def _fsdp1_inputs(policy, root, has_params):
    """What FSDP1 casts a module's inputs to (_runtime_utils: the root
    by cast_root_forward_inputs, any module by cast_forward_inputs once
    it holds parameters), and the rest of its policy."""
    param, reduce, inputs, output, buffer, root_inputs = policy
    if not has_params:
        inputs = None
    if root:
        inputs = inputs or root_inputs
    return (param, reduce, inputs, output, buffer)


def _applied(policy, param_dtype_of, buffer_dtypes):
    """The policy as torch applies it to a module whose parameters are of
    `param_dtype_of` (None: it has none) and whose floating buffers are
    of `buffer_dtypes`: FSDPParam.init_dtype_attrs (FSDP1's FlatParamHandle
    alike) drops a reduce_dtype equal to param_dtype (the gradients are in
    it already) and a param_dtype equal to the parameters' own; what it
    drops casts nothing, as a reduce in the gradients' own dtype does and
    a buffer_dtype every buffer has.  None: nothing is cast."""
    param, reduce, inputs, output, buffer = policy
    if param_dtype_of is None:  # no parameters to gather or reduce
        param = reduce = None
    if reduce == param:
        reduce = None
    if param == param_dtype_of:
        param = None
    if reduce is not None and reduce == (param or param_dtype_of):
        reduce = None
    if buffer is not None and all(d == buffer for d in buffer_dtypes):
        buffer = None
    return (param, reduce, inputs, output, buffer)


class _Policies:
    """The policies set, each recorded once its module is named."""

    def __init__(self, bridge, failed, names):
        self.bridge = bridge
        self.failed = failed
        self.names = names
        self.waiting = {}  # id(module) -> (weak module, policy)
        self.sharded = {}  # id(module) -> weak module: each FSDP shards
        self.inner = {}    # the same of the FSDP1 ones inside another

    def set(self, module, policy):
        """`policy`: None where the module is sharded without one (FSDP1
        without mixed_precision): it still owns its parameters."""
        try:
            self.sharded[id(module)] = weakref.ref(module)
            if policy is None:
                return
            name = self.names.of(module)
            if name is not None:
                self.record(module, policy, *name)
            else:
                self.waiting[id(module)] = (weakref.ref(module), policy)
        except Exception as e:
            self.failed(e)

    def named(self, module, path, class_name):
        """_ModuleNames' listener: a module got its trace name."""
        if not self.waiting:
            return
        entry = self.waiting.get(id(module))
        if entry is None or entry[0]() is not module:
            return
        del self.waiting[id(module)]
        try:
            self.record(module, entry[1], path, class_name)
        except Exception as e:
            self.failed(e)

    @staticmethod
    def is_sharded(module, ids):
        """Whether `module` is one of `ids` (sharded, inner)."""
        ref = ids.get(id(module))
        return ref is not None and ref() is module

    def enclose(self, fsdp):
        """An FSDP1 module is made after those it wraps (auto-wrap makes
        them inside its __init__): each one in its tree is not the root."""
        try:
            seen, stack = set(), [fsdp]
            while stack:
                m = stack.pop()
                if id(m) in seen:
                    continue
                seen.add(id(m))
                if m is not fsdp and self.is_sharded(m, self.sharded):
                    self.inner[id(m)] = weakref.ref(m)
                stack.extend(c for c in m.__dict__.get("_modules",
                                                       {}).values()
                             if c is not None)
        except Exception as e:
            self.failed(e)

    def owned(self, module):
        """The modules of `module`'s tree whose parameters its FSDP group
        holds: not those under another module FSDP shards (each holds
        its own: a root whose layers are each sharded holds none)."""
        found, seen, stack = [], set(), [module]
        while stack:
            m = stack.pop()
            if id(m) in seen:
                continue
            seen.add(id(m))
            found.append(m)
            stack.extend(c for c in m.__dict__.get("_modules", {}).values()
                         if c is not None and
                         not self.is_sharded(c, self.sharded))
        return found

    def record(self, module, policy, path, class_name):
        modules = self.owned(module)
        param_dtype = next((p.dtype for m in modules
                            for p in m.__dict__.get("_parameters",
                                                    {}).values()
                            if p is not None and p.dtype.is_floating_point),
                           None)
        buffers = [b.dtype for m in modules
                   for b in m.__dict__.get("_buffers", {}).values()
                   if b is not None and b.dtype.is_floating_point]
        if len(policy) == 6:
            policy = _fsdp1_inputs(
                policy, not self.is_sharded(module, self.inner),
                param_dtype is not None)
        applied = _applied(policy, param_dtype, buffers)
        if any(d is not None for d in applied):
            self.bridge.fsdp_policy(path, class_name,
                                    *(None if d is None else str(d)
                                      for d in applied))


class _AfterImport:
    """A meta path finder that watches for a few modules only: it lets
    the other finders find each and runs its action once the module has
    run (sitecustomize.py arms the bridge after torch the same way), then
    leaves sys.meta_path when none is left to wait for."""

    def __init__(self, actions, failed):
        self.actions = actions  # module name -> action(module)
        self.failed = failed
        self.finding = set()    # threads inside find_spec

    def find_spec(self, name, path=None, target=None):
        action = self.actions.get(name)
        if action is None:
            return None
        thread = get_ident()
        if thread in self.finding:
            return None
        self.finding.add(thread)
        try:
            spec = self.others_spec(name, path, target)
        finally:
            self.finding.discard(thread)
        loader = getattr(spec, "loader", None)
        exec_module = getattr(loader, "exec_module", None)
        if exec_module is None or isinstance(loader, type):
            return spec  # a class's (BuiltinImporter) would be everyone's
        finder = self

        def exec_then_wrap(module):
            # a loader may load other modules too (one zipimporter for a
            # whole archive, a custom one), some while this one runs: only
            # this one is acted on, and the loader is given back its own
            # method as it runs, leaving it as it was
            if getattr(module, "__name__", None) != name:
                return exec_module(module)
            if vars(loader).get("exec_module") is exec_then_wrap:
                del loader.exec_module
            exec_module(module)
            finder.loaded(name, module)

        try:
            loader.exec_module = exec_then_wrap
        except (AttributeError, TypeError):  # a loader with __slots__
            pass
        return spec

    def others_spec(self, name, path, target):
        """The spec the finders after this one give."""
        finders = list(sys.meta_path)
        if self in finders:
            finders = finders[finders.index(self) + 1:]
        for finder in finders:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                return spec
        return None

    def loaded(self, name, module):
        action = self.actions.pop(name, None)
        # list(): another thread may be importing the other module
        for other, a in list(self.actions.items()):
            if a is action:
                self.actions.pop(other, None)
        if not self.actions:
            try:
                sys.meta_path.remove(self)
            except ValueError:  # gone already (the program, or a thread)
                pass
        if action is not None:
            try:
                action(module)
            except Exception as e:
                self.failed(e)
