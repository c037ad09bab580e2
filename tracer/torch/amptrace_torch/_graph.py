"""One graph Dynamo compiled (_compile.py): the autocast state it was
traced under, the casts its forward and backward graphs make (read from
the FX graphs the backend compiles), and its calls.

A cast of a compiled graph is a node converting a floating tensor to
another floating dtype (`prims.convert_element_type`, `aten._to_copy`)
that stands for a conversion the program asked for at trace time
(node.meta["original_aten"] is a conversion, not an op a decomposition
upcasts inside).  Who made it: in the forward graph, the program when the
Dynamo-level op is a conversion (`x.to(...)`, `.float()`), else autocast,
for that op; in the backward, autocast (which ran during the backward's
tracing) when it was made for the op it feeds, else autograd: the
gradient of a forward cast, or the engine casting a gradient to its
input's dtype; but a forward cast the partitioner has recomputed in the
backward graph (for activation checkpointing, or on its own to save
memory) is autocast's or the program's, as in the forward.
"""
import functools
import os
import re

from . import _diverge, _eager
from ._places import place

_CONVERSIONS = frozenset(("convert_element_type", "_to_copy", "to"))
_PROGRAM_CONVERSIONS = frozenset((
    "to", "float", "half", "bfloat16", "double", "type", "type_as",
    "_to_copy", "convert_element_type"))
# Ops that pass their input through unchanged in value: a cast feeds
# the op behind them.
_PASS_THROUGH = frozenset(("reshape", "clone", "contiguous", "_unsafe_view",
                           "alias"))
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_RESUME = re.compile(r"^torch_dynamo_resume_in_(.+)_at_\d+$")


def dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def frame_name(code, frame_locals):
    """`f` or `M.forward`; a piece resumed after a graph break is named
    after the function it resumes; torch's own modules (Sequential) are
    compiled through Dynamo's wrap_inline, named after the module."""
    found = _RESUME.match(code.co_name)
    if found:
        return found.group(1)
    wrapped = frame_locals.get("fn") if code.co_name == "inner" and \
        code.co_filename.endswith("external_utils.py") else None
    if wrapped is not None:
        return type(wrapped).__name__ + ".forward"
    return getattr(code, "co_qualname", code.co_name)


def _backend_name(compiler):
    from torch._dynamo.eval_frame import innermost_backend
    inner = innermost_backend(compiler)
    return str(getattr(inner, "compiler_name", None) or
               getattr(inner, "__name__", type(inner).__name__))


def target_name(node):
    """A node's op as autocast's tables name it: `linear` for
    torch._C._nn.linear, `matmul` for operator.matmul and for
    aten.matmul.default, the method's name for x.float()."""
    target = node.target
    if node.op == "call_method":
        return target
    name = getattr(target, "_opname", None)
    if name:
        return name
    return getattr(target, "__name__", str(target))


class Graph:
    def __init__(self, state, number, output, gm, compile_id):
        torch = state.torch
        self.state = state
        self.id = number
        self.compile_id = compile_id
        self.name = frame_name(output.root_tx.f_code,
                               getattr(output.root_tx, "f_locals", None) or {})
        self.backend = _backend_name(output.compiler_fn)
        self.outer = {d: state.autocast(d) for d in ("cpu", "cuda")}
        self.cache_enabled = torch.is_autocast_cache_enabled()
        self.dynamo_ops = _dynamo_ops(torch, gm, self.outer)
        self.prefixes = _root_prefixes(state, output.root_tx, gm)
        self.cast_seqs = {}         # forward casts: seq_nr -> op name
        self.seq_states = {}        # forward ops: seq_nr -> their state
        self.seq_ops = {}           # forward ops: seq_nr -> their name
        self.backward_casts = []    # autocast's, checked at the first call
        self.checked_backward = False
        self.compile_op = 0

    # --------------------------------------------------------- casts

    def record_casts(self, fx_graph, op, backend):
        self._note_forward_states(fx_graph)
        nodes = [n for n in fx_graph.nodes if _is_cast(n)]
        # forward casts first: their sequence numbers tell a backward
        # cast that is the gradient of one
        nodes.sort(key=_in_backward)
        casts = [c for c in (self._cast(n) for n in nodes) if c]
        for c in casts:
            self.state.bridge.compiled_cast(op, c.record(self.id))
        _diverge.check_graph(self.state, self, casts, backend, op)

    def _note_forward_states(self, fx_graph):
        """The state each forward op ran under, by its autograd
        sequence number, which its backward ops share."""
        for node in fx_graph.nodes:
            seq = node.meta.get("seq_nr")
            if seq is None or _in_backward(node):
                continue
            root = _root(node)
            state = self.dynamo_ops.get(root.name) if root else None
            if state is not None:
                self.seq_states.setdefault(seq, state)
                self.seq_ops.setdefault(seq, root.target_name)

    def _cast(self, node):
        source = node.args[0].meta.get("val")
        result = node.meta.get("val")
        cast = Cast(node, source, result, self.prefixes)
        root = _root(node)
        if not cast.backward or cast.recomputed:
            made_by = "program" if root and root.target_name in \
                _PROGRAM_CONVERSIONS else "autocast"
            cast.op = root.target_name if root else cast.feeds
            state = self.dynamo_ops.get(root.name) if root else None
            cast.state = (state or self.outer)[cast.device]
            if made_by == "autocast" and not self._listed(cast):
                return None  # a decomposition's, inside its op
            seq = node.meta.get("seq_nr")
            if seq is not None and not cast.recomputed:
                self.cast_seqs[seq] = cast.op
        else:
            seq = node.meta.get("seq_nr")
            made_by = "autocast" if _made_in(node, seq) and \
                seq not in self.cast_seqs else "autograd"
            # the backward op it feeds when autocast cast for it; else the
            # forward op whose gradient it casts
            cast.op = cast.feeds if made_by == "autocast" else \
                self.cast_seqs.get(seq) or self.seq_ops.get(seq, cast.feeds)
            cast.state = self.outer[cast.device]
        cast.made_by = made_by
        return cast

    def _listed(self, cast):
        """Whether autocast, in the state the cast was traced under, casts
        for its op or for the op it feeds (an op autocast lists inside a
        composite one): else the cast is a decomposition's."""
        enabled, device, dtype = cast.state
        if not enabled:
            return False
        plan = self.state.bridge.compiled_plan
        return any(plan(device, dtype, name, "", [], self.cache_enabled)
                   is not None for name in (cast.op, cast.feeds))

    # --------------------------------------------------------- calls

    def describe(self, values):
        """The tensors among a call's values (lists and tuples opened,
        parameters left out), as compiled_begin takes them."""
        torch = self.state.torch
        out = []
        for v in _flat(values):
            if isinstance(v, torch.Tensor) and \
                    not isinstance(v, torch.nn.Parameter):
                out.append((v, dtype_name(v.dtype), tuple(v.shape),
                            v.requires_grad, v.is_leaf))
        return out


class Cast:
    """One cast node of a compiled graph, as the trace records it."""

    def __init__(self, node, source, result, prefixes):
        self.node = node
        self.source = dtype_name(source.dtype)
        self.target = dtype_name(result.dtype)
        self.device = result.device.type \
            if result.device.type in ("cpu", "cuda") else "cpu"
        self.shape = tuple(_size(s) for s in result.shape)
        self.backward = _in_backward(node)
        self.recomputed = self.backward and _recomputed(node)
        self.phase = "backward" if self.backward else "forward"
        self.feeds_node, self.arg = _consumer(node)
        self.feeds = target_name(self.feeds_node) if self.feeds_node \
            else "output"
        self.where = _source(node)
        self.module, self.module_class = _module(node, prefixes)
        self.op = self.made_by = self.state = None

    def record(self, graph):
        return (graph, self.phase, self.made_by, self.op, self.feeds,
                self.where, self.module, self.module_class, self.source,
                self.target, self.arg, self.shape, self.reason(graph),
                self.state)

    def reason(self, graph):
        if self.recomputed:
            return "%s cast for %s, recomputed in the backward of compiled " \
                "graph %d (%s)" % (
                    "autocast's" if self.made_by == "autocast" else
                    "the program's", self.op, graph,
                    "activation checkpointing" if "recompute" in
                    self.node.meta else "by the partitioner")
        if self.made_by == "autocast":
            return "autocast's cast for %s, traced into compiled graph %d" \
                % (self.op, graph)
        if self.made_by == "autograd":
            return ("autograd's cast of a gradient back to %s (the "
                    "backward of a forward cast), in compiled graph %d"
                    % (self.target, graph))
        return "the program's conversion to %s, in compiled graph %d" % (
            self.target, graph)


# ------------------------------------------------------------ helpers

def _is_cast(node):
    if node.op != "call_function" or not node.args or \
            getattr(node.target, "_opname", None) not in _CONVERSIONS:
        return False
    source = getattr(node.args[0], "meta", {}).get("val")
    result = node.meta.get("val")
    if not _floating(source) or not _floating(result) or \
            source.dtype == result.dtype:
        return False
    original = node.meta.get("original_aten")
    return original is None or \
        getattr(original, "_opname", None) in _CONVERSIONS


def _made_in(node, seq):
    """Whether a backward node was made while the op it feeds ran (the
    same autograd sequence number): autocast's cast for that op.  The
    engine's cast of a gradient to its input's dtype is made between two
    nodes, under the sequence number of the one that made the gradient;
    the gradient of a forward cast carries that cast's."""
    users = [u for u in node.users if u.op != "output"]
    return seq is not None and bool(users) and \
        users[0].meta.get("seq_nr") == seq


def _recomputed(node):
    """Whether a backward node is a forward one the partitioner copied
    into the backward graph to recompute it there: autocast's or the
    program's forward cast again, not a gradient's.  Activation
    checkpointing's region says so ("recompute"); the min-cut
    partitioner also recomputes cheap ops on its own, rather than save
    their results, and they keep only their forward tag."""
    return node.meta.get("partitioner_tag") == "is_forward"


def _floating(value):
    return getattr(getattr(value, "dtype", None), "is_floating_point", False)


def _in_backward(node):
    return bool(node.meta.get("autograd_backward") or
                node.meta.get("partitioner_tag") == "is_backward")


def _size(size):
    """A dimension, its hint when symbolic: asking a SymInt for its int
    would add a guard to the program's compile."""
    if isinstance(size, int):
        return size
    hint = getattr(getattr(size, "node", None), "hint", None)
    return hint if isinstance(hint, int) else 0


_CALLABLE = re.compile(r"^<(?:built-in )?(?:function|method) ([\w.]+)")


class _Root:
    """A Dynamo graph node, as node.meta["from_node"] keeps it: its name,
    and its target as text ("<built-in function linear>", "float")."""

    def __init__(self, source):
        self.name = source.name
        target = str(source.target)
        found = _CALLABLE.match(target)
        self.target_name = (found.group(1) if found else target) \
            .rsplit(".", 1)[-1]


def _root(node):
    """The Dynamo-level op the node comes from (node.meta["from_node"],
    followed to its first source), or None."""
    sources = node.meta.get("from_node")
    source = None
    while sources:
        source = sources[0]
        sources = getattr(source, "from_node", None)
    return _Root(source) if source is not None else None


def _consumer(node):
    """The op the node's value feeds, through ops that pass it on, and
    its index among that op's tensor arguments; (None, 0) for a graph
    output."""
    seen = 0
    current = node
    while seen < 16:
        users = [u for u in current.users if u.op != "output"]
        if not users:
            return None, 0
        user = users[0]
        overload = user.target
        if getattr(overload, "is_view", False) or \
                getattr(overload, "_opname", None) in _PASS_THROUGH:
            current = user
            seen += 1
            continue
        tensors = [a for a in _flat(user.args) if hasattr(a, "meta")]
        index = next((i for i, a in enumerate(tensors) if a is current), 0)
        return user, index
    return None, 0


_TORCH_DIR = None


def _source(node):
    """file:line of the program's code the node was traced from: the
    innermost frame of its stack trace outside torch."""
    global _TORCH_DIR
    if _TORCH_DIR is None:
        import torch
        _TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
    trace = node.meta.get("stack_trace") or ""
    for path, line in reversed(_FRAME.findall(trace)):
        if not path.startswith(_TORCH_DIR):
            return place(path, line)
    return None


_ROOT = re.compile(r"^([LG])\['([^']*)'\]")
_ITEM = re.compile(r"\._modules\['([^']*)'\]|\['([^']*)'\]|\[(\d+)\]")


def module_path(path):
    """Dynamo's "L['self'].h._modules['0'].attn" -> "h.0.attn", relative
    to the compiled module ("" for itself)."""
    path = _ROOT.sub("", path)
    path = _ITEM.sub(lambda m: "." + next(g for g in m.groups() if g), path)
    return path.lstrip(".")


def _innermost_module(node):
    """(Dynamo's path, class) of the innermost module a node was traced
    in, or None."""
    stack = node.meta.get("nn_module_stack") or \
        node.meta.get("fwd_nn_module_stack")
    return list(stack.values())[-1] if stack else None


def _module(node, prefixes):
    """(path, class name) of the module a node belongs to: its path from
    the module the frame holds (`L['self']`), under that one's prefix
    when it is a top-level module (`prefixes`: _root_prefixes)."""
    found = _innermost_module(node)
    if found is None:
        return None, None
    path, cls = found
    name = getattr(cls, "__name__", None) or str(cls).rsplit(".", 1)[-1]
    root = _ROOT.match(path)
    prefix = prefixes.get(root.group(0)) if root else None
    relative = module_path(path)
    if prefix:
        relative = prefix + "." + relative if relative else prefix
    return relative or None, name


def _root_prefixes(state, frame, gm):
    """Dynamo's root of each module path in the graph (`L['self']`,
    `G['model']`) -> the prefix _roots.py gave that module's tree, or
    None: the frame's module, compiled at top level, gets one now (its
    tree's other names come from the same object); one compiled inside
    a module that runs eagerly keeps paths from itself (FORMAT.md
    §3.13)."""
    roots = state.roots
    if roots is None:
        return {}
    scopes = {"L": getattr(frame, "f_locals", None) or {},
              "G": getattr(frame, "f_globals", None) or {}}
    outermost = state.bridge.module_depth() == 0
    prefixes = {}
    for node in gm.graph.nodes:
        found = _innermost_module(node)
        root = _ROOT.match(found[0]) if found else None
        if root is None or root.group(0) in prefixes:
            continue
        module = scopes[root.group(1)].get(root.group(2))
        prefix = None
        if isinstance(module, state.torch.nn.Module):
            prefix = roots.known(module)
            if prefix is None and outermost:
                prefix = roots.prefix(module, True)
        prefixes[root.group(0)] = prefix
    return prefixes


def _flat(values):
    if isinstance(values, (list, tuple)):
        for v in values:
            yield from _flat(v)
    else:
        yield values


def _dynamo_ops(torch, gm, outer):
    """Dynamo node name -> the autocast state per device it runs under:
    the graph's, changed between _enter_autocast and _exit_autocast."""
    from torch.amp import autocast_mode
    enter, leave = autocast_mode._enter_autocast, autocast_mode._exit_autocast
    current, stack, states = dict(outer), [], {}
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target is enter:
            stack.append(current)
            current = _entered(dict(current), node.args)
        elif node.op == "call_function" and node.target is leave:
            current = stack.pop() if stack else current
        states[node.name] = current
    return states


def _entered(state, args):
    device = args[0] if args else "cpu"
    if device not in state:
        return state
    old = state[device]
    dtype = args[1] if len(args) > 1 and args[1] is not None else None
    enabled = args[2] if len(args) > 2 and args[2] is not None else True
    state[device] = (bool(enabled), device,
                     dtype_name(dtype) if dtype is not None else old[2])
    return state


# --------------------------------------------------------------- calls

def _unlazy(compiled):
    """The eager backend's graph module compiles its code on first call,
    which Dynamo forces before the call if it sees it: done here, as the
    wrapper hides it."""
    from torch.fx._lazy_graph_module import _LazyGraphModule
    owner = getattr(compiled, "__self__", None)
    if isinstance(owner, _LazyGraphModule) and \
            getattr(compiled, "__name__", "") == "_lazy_forward":
        _LazyGraphModule.force_recompile(owner)
        return owner.forward
    if isinstance(compiled, _LazyGraphModule):
        _LazyGraphModule.force_recompile(compiled)
    return compiled


def _error_text(exc):
    return "%s: %s" % (type(exc).__name__, str(exc).split("\n")[0][:500])


def recorded_calls(state, graph, compiled):
    """compiled, its calls recorded: each an op `compiled:<f>` of the
    graph; an AOTAutograd graph's backward too."""
    compiled = _unlazy(compiled)
    bridge = state.bridge
    name = "compiled:" + graph.name

    def begin(args):
        try:
            return bridge.compiled_begin(
                name, graph.id, state.phase(), 0, graph.describe(args),
                state.call_state(), True, 0)
        except Exception as e:
            state.failed(e)
            return 0

    def end(op, out, exc):
        if not op:
            return
        try:
            bridge.compiled_end(op, graph.describe(out) if out is not None
                                else [], _error_text(exc) if exc else None,
                                None, 0)
            if out is not None:
                _hook_backward(state, graph, name, op, out)
        except Exception as e:
            state.failed(e)

    # its name and doc, not its attributes: a _boxed_call flag would
    # change how the wrapper is called
    @functools.wraps(compiled, updated=())
    def call(*args, **kwargs):
        _eager.graph_ran()
        op = begin(args)
        try:
            out = compiled(*args, **kwargs)
        except BaseException as exc:
            end(op, None, exc)
            raise
        end(op, out, None)
        return out

    call._amptrace = True
    return call


def _hook_backward(state, graph, name, forward_op, out):
    """The backward of an AOTAutograd graph is one autograd node for
    all its outputs: an op of its own, from its pre-hook to its hook."""
    torch = state.torch
    node = next((v.grad_fn for v in _flat(out)
                 if isinstance(v, torch.Tensor) and v.grad_fn is not None),
                None)
    if node is None or type(node).__name__ != "CompiledFunctionBackward":
        return
    bridge = state.bridge
    bridge.compiled_link(node._sequence_nr(), forward_op)
    opened = []

    def pre(grad_outputs):
        try:
            opened.append(bridge.compiled_begin(
                name, graph.id, "backward", forward_op,
                graph.describe(grad_outputs), state.call_state(), True, 0))
        except Exception as e:
            state.failed(e)

    def post(grad_inputs, grad_outputs):
        try:
            if opened:
                bridge.compiled_end(opened.pop(), graph.describe(grad_inputs),
                                    None, None, 0)
            _diverge.check_backward(state, graph)
        except Exception as e:
            state.failed(e)

    node.register_prehook(pre)
    node.register_hook(post)
