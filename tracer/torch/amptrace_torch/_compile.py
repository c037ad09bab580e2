"""torch.compile under amptrace: what the trace of a compiled program holds.

A compile is an op `compile:<f>`.  While it runs, the ops torch runs on
fake tensors are not recorded (they are none of the program's); the casts
of each graph it makes are, once, as compiled casts (origin `compiled`):
autocast's casts traced into the graph, autograd's casts of their
gradients and the program's own conversions, each with its source line,
module, the graph op it feeds and the autocast state it was traced under.
Each call of a compiled region is an op `compiled:<f>` with its graph id,
parent of the ops the call runs (inductor's kernels run no op; the calls
its code makes to aten do), and so is the backward of an AOTAutograd
graph.  Graph breaks and recompilations are notes; where a graph's casts
differ from what eager autocast does, a compile-divergence (_diverge.py).

Where torch 2.x shows it (checked on 2.13):
- Dynamo's install_callbacks (where its compile start and end callbacks
  run) bounds a compile, and the lazy compile of a backward, each
  thread's on its own;
- OutputGraph.call_user_compiler hands each graph to the backend, under
  the autocast state the graph was traced with, with its break reason;
- inductor runs config.post_grad_custom_pre_pass on its forward and
  backward graphs: ours is added to the program's own, without a uuid,
  so inductor neither takes a traced run's graphs from its caches (a
  cached graph's casts could not be seen) nor stores them there;
- other AOTAutograd backends (aot_eager) hand their graphs to compilers,
  which are wrapped;
- the eager backend runs its graph as Python: autocast casts as in eager,
  and the observer records those casts as it always does.
torch 1.x has no torch.compile: nothing is installed there.
"""
import contextlib
import functools
import itertools
import sys
import threading
import time
import warnings

from . import _diverge, _eager, _graph

_local = threading.local()
_graphs_by_compile = {}     # Dynamo's compile id "0/1" -> its graphs
_graph_ids = itertools.count(1)
_armed = []                 # one True once the hooks are in
_arm_lock = threading.Lock()
# seconds spent reading graphs and registering them (bench_compile.py)
_spent = {"graphs": 0.0, "casts": 0.0}


def spent():
    """Seconds the compile hooks spent: registering graphs ("graphs")
    and reading their casts ("casts")."""
    return dict(_spent)


def install(torch, bridge, failed, autocast_state, name_module=None,
            roots=None):
    """Arms the hooks at the first torch.compile: importing torch._dynamo
    costs seconds, which a program that never compiles should not pay.
    `failed(error)` says a recording failure once; `autocast_state(device)`
    reads (enabled, dtype name) on this thread; `name_module(m)` names a
    module's parameters, done when it is compiled, as its own hooks will
    not run under compile (_layer.py has both); `roots` (_roots.py) has
    the prefix of each top-level module's tree, which its graphs' casts
    carry too."""
    if not hasattr(torch, "compile"):
        return
    state = _State(torch, bridge, failed, autocast_state, roots)
    if "torch._dynamo" in sys.modules:
        _arm(state)
    original = torch.compile

    @functools.wraps(original)
    def compile(*args, **kwargs):
        _arm(state)
        target = args[0] if args else kwargs.get("model")
        if name_module is not None and target is not None:
            _name_compiled(torch, name_module, target, failed)
        compiled = original(*args, **kwargs)
        if target is not None:
            try:
                _eager.watch(state, compiled, target)
            except Exception as e:
                failed(e)
        return compiled

    torch.compile = compile


def _name_compiled(torch, name_module, target, failed):
    """torch.compile(model) and model.compile() (a bound _call_impl)."""
    module = target if isinstance(target, torch.nn.Module) \
        else getattr(target, "__self__", None)
    if isinstance(module, torch.nn.Module):
        try:
            name_module(module)
        except Exception as e:
            failed(e)


class _State:
    """What every hook needs: torch, the extension, the failure sink."""

    def __init__(self, torch, bridge, failed, autocast_state, roots):
        self.torch = torch
        self.bridge = bridge
        self.failed = failed
        self.autocast_state = autocast_state
        self.roots = roots

    def autocast(self, device):
        """(enabled, device, dtype name) of `device` on this thread."""
        enabled, dtype = self.autocast_state(device)
        return enabled, device, dtype

    def call_state(self):
        """The state a call records: CUDA's when on there, else CPU's."""
        cuda = self.autocast("cuda")
        return cuda if cuda[0] else self.autocast("cpu")

    def phase(self):
        return self.bridge.compiled_phase()


def _arm(state):
    with _arm_lock:
        if _armed:
            return
        _armed.append(True)
    for part in (_quiet_hook_warning, _hook_compiles, _hook_graphs,
                 _hook_recompiles, _hook_inductor, _hook_aot):
        try:
            part(state)
        except Exception as e:
            state.failed(e)


def _quiet_hook_warning(state):
    """torch warns at a compiled module's call when any global module hook
    exists: the bridge's module hooks (_layer.py) would have it say so to
    a program that has none.  Those hooks do nothing for the compiled
    module (_layer.py skips OptimizedModule), so the warning is filtered
    out: warnings.filters holds one more entry."""
    warnings.filterwarnings(
        "ignore", category=UserWarning,
        message=r"Using `torch\.compile\(module\)` when there are global "
                r"hooks on modules")


# ------------------------------------------------------------ compiles

def compiling():
    """Whether this thread is compiling a graph."""
    return bool(getattr(_local, "compiles", None))


def _compiles():
    """This thread's open compiles, innermost last."""
    stack = getattr(_local, "compiles", None)
    if stack is None:
        stack = _local.compiles = []
    return stack


class _Compile:
    """A compile on this thread: its op is opened at its first graph
    (many frames Dynamo looks at give none), or at its end when it
    fails, with the time it began."""

    def __init__(self, state, ignoring, trigger):
        self.state = state
        self.ignoring = ignoring
        # the exception the program is handling as it begins (a compile
        # inside an `except` block): the end callback sees it too, and
        # it is not the compile's
        self.handling = sys.exc_info()[1]
        self.lazy_backward = trigger == "LAZY_BACKWARD"
        self.phase = "backward" if self.lazy_backward else state.phase()
        self.autocast = state.call_state()
        self.begin_ns = state.bridge.compiled_now()
        self.op = 0
        self.graphs = []

    def op_for(self, graph):
        """The compile's op, opened for its first graph (a backward
        compiled lazily has only the graph its forward came from)."""
        if graph not in self.graphs:
            self.graphs.append(graph)
        if not self.op:
            self.op = self._open(_compile_name(self, graph), graph.id)
        return self.op

    def _open(self, name, graph):
        return self.state.bridge.compiled_begin(
            name, graph, self.phase, 0, [], self.autocast, False,
            self.begin_ns)

    def close(self, error, handled=None):
        if error:
            _eager.compile_failed(error)
        if not self.op and error:
            self.op = self._open("compile", 0)
        if self.op:
            self.state.bridge.compiled_end(self.op, [], error, None, 0,
                                           handled)


def _compile_name(c, graph):
    what = "compile backward:" if c.lazy_backward else "compile:"
    return what + graph.name


def _hook_compiles(state):
    """Each thread's compiles are bounded (_bound_per_thread); the ops a
    compile runs are on fake tensors, and not recorded."""
    import torch._dynamo
    handler = torch._dynamo.callback_handler
    bridge = state.bridge

    def start(args):
        try:
            trigger = getattr(args.callback_trigger, "name", "")
            ignoring = bridge.compiled_ignore(True)
            _compiles().append(_Compile(state, ignoring, trigger))
        except Exception as e:
            state.failed(e)

    def end(args):
        # the guards' failures Dynamo read before this compile began are
        # its own: a compile that made no graph leaves none behind
        _local.recompile = None
        stack = _compiles()
        if not stack:
            return
        c = stack.pop()
        exc = sys.exc_info()[1]
        if exc is c.handling:
            exc = None
        try:
            error = _compile_error(exc)
            if not (error and _hold_failure(c, error, exc)):
                c.close(error)
        except Exception as e:
            state.failed(e)
        finally:
            bridge.compiled_ignore(c.ignoring)

    _bound_per_thread(handler, start, end)
    _hook_frame_converter(state)


def _bound_per_thread(handler, start, end):
    """start(args) and end(args) around each thread's outermost compile.
    Dynamo's own callbacks count the compiles in progress across threads:
    they start at the first of overlapping compiles and end at the last,
    on whichever thread that is (a thread's Dynamo compile and another's
    lazy backward compile overlap: compile_lock holds only the first),
    so one thread's compile went unseen, its fake tensors' ops recorded,
    or stayed open, that thread's ops unrecorded from then on.  Each call
    of install_callbacks is bounded here, counted per thread; the
    program's callbacks run as Dynamo runs them."""
    original = getattr(handler, "install_callbacks", None)
    if original is None:  # an older Dynamo: its callbacks as they are
        handler.register_start_callback(start)
        handler.register_end_callback(end)
        return

    @contextlib.contextmanager
    def install_callbacks(trigger, compile_id):
        depth = getattr(_local, "compile_depth", 0)
        args = _CallbackArgs(trigger)
        if not depth:
            start(args)
        _local.compile_depth = depth + 1
        try:
            with original(trigger, compile_id):
                yield
        finally:
            _local.compile_depth = depth
            if not depth:
                end(args)

    handler.install_callbacks = functools.update_wrapper(install_callbacks,
                                                         original)


class _CallbackArgs:
    """What start reads of Dynamo's CallbackArgs."""

    def __init__(self, trigger):
        self.callback_trigger = trigger


def _held():
    """This thread's failed compiles awaiting their frame converter's
    verdict, per ConvertFrame call open (innermost last): {"failed":
    [(compile, error, soft)], "returned": whether the call returned}."""
    held = getattr(_local, "held", None)
    if held is None:
        held = _local.held = []
    return held


def _hold_failure(c, error, exc):
    """Keeps failed compile `c` open until the frame converter around it
    returns or raises: whether the program sees `exc` is decided there.
    False when no converter is open on this thread (fullgraph=True's
    converter, a backward compiled lazily: the error reaches the
    program)."""
    held = _held()
    if not held:
        return False
    from torch._dynamo.exc import Unsupported, UserError
    held[-1]["failed"].append(
        (c, error, isinstance(exc, (Unsupported, UserError))))
    return True


def _hook_frame_converter(state):
    """torch.compile without fullgraph=True converts frames through
    ConvertFrame, which handles some failures itself: an Unsupported or
    UserError it cannot resume from (a soft failure: it skips the frame,
    logging at INFO) and, under config.suppress_errors, any other; the
    frame then runs eagerly and the program never sees the error.  A
    compile that failed inside it ends when it returns, `handled`
    ("skipped", "suppressed"), or raises (not handled: an error of the
    program's)."""
    from torch._dynamo import convert_frame
    cls = getattr(convert_frame, "ConvertFrame", None)
    if cls is None:
        return

    def before(*args, **kwargs):
        _held().append({"failed": [], "returned": False})

    def returned(result, *args, **kwargs):
        _held()[-1]["returned"] = True

    def ended(*args, **kwargs):
        # after a return or a raise: the program sees what it raised
        call = _held().pop()
        for c, error, soft in call["failed"]:
            try:
                c.close(error, ("skipped" if soft else "suppressed")
                        if call["returned"] else None)
            except Exception as e:
                state.failed(e)

    # a C wrapper, which leaves no frame: Dynamo's logged stacks skip a
    # count of its own frames (skip=)
    original = cls.__call__
    cls.__call__ = functools.update_wrapper(
        state.bridge.wrapper(original, before=before, after=returned,
                             always=ended), original)


def _compile_error(exc):
    """The text of an exception that ends a compile, or None: the
    program sees the exception itself, untouched.  Dynamo skipping a
    frame (it then runs eagerly) is no error."""
    if exc is None or type(exc).__name__ in ("SkipFrame",
                                             "SkipCodeRecursiveException"):
        return None
    lines = [line.strip() for line in str(exc).split("\n") if line.strip()]
    # "backend='broken' raised:" says what follows: the backend's error
    text = " ".join(lines[:2]) if lines and lines[0].endswith(":") \
        else (lines[0] if lines else "")
    return "%s: %s" % (type(exc).__name__, text[:500])


# -------------------------------------------------------------- graphs

def _hook_graphs(state):
    """Each graph Dynamo hands its backend: registered (id, name, the
    autocast state it was traced under, its autocast regions), noted
    (graph break, recompilation), and its calls recorded."""
    from torch._dynamo import output_graph
    cls = output_graph.OutputGraph
    original = cls.call_user_compiler
    # the graphs being compiled on this thread, innermost last
    compiling_graphs = threading.local()

    def before(self, gm, example_inputs):
        stack = getattr(compiling_graphs, "stack", None)
        if stack is None:
            stack = compiling_graphs.stack = []
        stack.append(None)
        began = time.perf_counter()
        try:
            stack[-1] = _register(state, self, gm)
        except Exception as e:
            state.failed(e)
        _spent["graphs"] += time.perf_counter() - began
        _local.graph = stack[-1]

    def compiled_by(compiled, self, gm, example_inputs):
        graph = compiling_graphs.stack[-1]
        if graph is None:
            _eager.calls_unseen()
            return compiled
        try:
            return _graph.recorded_calls(state, graph, compiled)
        except Exception as e:
            state.failed(e)
            _eager.calls_unseen()
            return compiled

    def ended(self, gm, example_inputs):
        stack = compiling_graphs.stack
        stack.pop()
        _local.graph = stack[-1] if stack else None

    # a C wrapper, which leaves no frame in the traceback of a backend's
    # error (Dynamo logs it whole under suppress_errors)
    cls.call_user_compiler = functools.update_wrapper(
        state.bridge.wrapper(original, before=before, after=compiled_by,
                             always=ended, returns=True), original)


def _register(state, output, gm):
    compile_id = str(output.dynamo_compile_id)
    graph = _graph.Graph(state, next(_graph_ids), output, gm, compile_id)
    _graphs_by_compile.setdefault(compile_id, []).append(graph)
    stack = _compiles()
    op = stack[-1].op_for(graph) if stack else 0
    graph.compile_op = op
    _diverge.note_break(state, graph, output, op)
    reasons = getattr(_local, "recompile", None)
    _local.recompile = None
    if reasons and output.dynamo_compile_id.frame_compile_id:
        _diverge.note_recompile(state, graph, reasons, op,
                                _graphs_by_compile)
    return graph


def _hook_recompiles(state):
    """Why Dynamo compiles a frame again: the guards that failed."""
    from torch._dynamo import convert_frame
    original = convert_frame.get_and_maybe_log_recompilation_reasons

    @functools.wraps(original)
    def reasons(*args, **kwargs):
        found = original(*args, **kwargs)
        _local.recompile = list(found or ())
        return found

    convert_frame.get_and_maybe_log_recompilation_reasons = reasons


def current_graph(torch):
    """The graph being compiled on this thread: the one Dynamo handed
    its backend, or for a backward compiled lazily, the one of its
    compile id."""
    graph = getattr(_local, "graph", None)
    if graph is not None:
        return graph
    context = torch._guards.CompileContext.try_get()
    compile_id = str(context.compile_id) if context else None
    graphs = _graphs_by_compile.get(compile_id)
    return graphs[-1] if graphs else None


def _record(state, fx_graph, backend):
    began = time.perf_counter()
    try:
        _record_graph(state, fx_graph, backend)
    finally:
        _spent["casts"] += time.perf_counter() - began


def _record_graph(state, fx_graph, backend):
    graph = current_graph(state.torch)
    if graph is None:
        return
    stack = _compiles()
    op = stack[-1].op_for(graph) if stack else graph.compile_op
    graph.record_casts(fx_graph, op, backend)


# ------------------------------------------------------------ backends

_inductor_pass = []         # (inductor's config, our pass) once armed


def _hook_inductor(state):
    """Ours among inductor's post-grad pre passes, after the program's
    own: it reads the graph and changes nothing."""
    from torch._inductor import config
    from torch._inductor.custom_graph_pass import CustomGraphPass

    class RecordCasts(CustomGraphPass):
        def __call__(self, fx_graph):
            try:
                _record(state, fx_graph, "inductor")
            except Exception as e:
                state.failed(e)

        def uuid(self):
            # None: inductor bypasses its FX graph and AOTAutograd
            # caches for the graph.  A uuid of ours would be a cache key:
            # a stable one, and the next traced run takes the graph
            # compiled, its casts unseen; a new one each process, and
            # each traced run stores entries no run reads again (the
            # user's cache grew by ~1 MB a run).
            return None

    ours = RecordCasts()
    _inductor_pass.append((config, ours))
    _add_pass(config, ours)


def _add_pass(config, ours):
    """Puts ours last in the pre passes, keeping the program's."""
    passes = config.post_grad_custom_pre_pass
    if passes is None:
        config.post_grad_custom_pre_pass = [ours]
    elif isinstance(passes, (list, tuple)):
        if not any(p is ours for p in passes):
            config.post_grad_custom_pre_pass = list(passes) + [ours]
    elif passes is not ours:
        config.post_grad_custom_pre_pass = [passes, ours]


def _ensure_inductor_pass():
    """The program may have set its own passes since, or patch them for
    one compile (torch.compile's options): ours is added back before
    AOTAutograd runs, inside any such patch."""
    for config, ours in _inductor_pass:
        _add_pass(config, ours)


def _hook_aot(state):
    """AOTAutograd backends other than inductor (aot_eager, custom
    aot_autograd backends): their compilers see the forward, backward and
    inference graphs; inductor's are left to its pass."""
    from torch._dynamo.backends import common
    original = common.aot_module_simplified

    @functools.wraps(original)
    def aot_module_simplified(module, args, **kwargs):
        _ensure_inductor_pass()
        if not _is_inductor(kwargs.get("fw_compiler")):
            for key in ("fw_compiler", "bw_compiler", "inference_compiler"):
                if kwargs.get(key) is not None:
                    kwargs[key] = _recording_compiler(state, kwargs[key])
        return original(module, args, **kwargs)

    common.aot_module_simplified = aot_module_simplified


def _is_inductor(compiler):
    """Whether inductor's code is inside the compiler's wrappers
    (SerializableAOTDispatchCompiler, functools.partial)."""
    for _ in range(8):
        if compiler is None:
            return False
        module = getattr(compiler, "__module__", "") or ""
        if module.startswith("torch._inductor"):
            return True
        compiler = getattr(compiler, "compiler_fn", None) or \
            getattr(compiler, "func", None)
    return False


def _recording_compiler(state, compiler):
    if getattr(compiler, "_amptrace", False):
        return compiler

    @functools.wraps(compiler)
    def recording(gm, example_inputs, *args, **kwargs):
        try:
            _record(state, gm.graph, "aot")
        except Exception as e:
            state.failed(e)
        return compiler(gm, example_inputs, *args, **kwargs)

    recording._amptrace = True
    return recording
