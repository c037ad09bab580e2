"""What amptrace says about compiled graphs (_graph.py): notes (graph
breaks, recompilations) and compile-divergence, where a compiled graph's
casts differ from what eager autocast does with the same ops under the
same state.  Two differences change results and are said:

- a backward that casts: AOTAutograd traces the backward under the
  forward's autocast state (torch._functorch.config.backward_pass_autocast
  "same_as_forward"), so autocast's casts are in the backward graph; a
  backward() run outside autocast, as eager autograd does it, makes no
  such cast: it runs each op in the dtypes of its forward (pytorch#179804:
  an inner autocast(enabled=False) is ignored in the compiled backward).
  Said at the graph's first backward, from the state it runs under.
- a rounding inductor drops: a cast to f16/bf16 (the program's or
  autocast's) that feeds a pointwise op computing in f32 is fused into
  that op's kernel, which keeps the f32 value; eager rounds first
  (pytorch#181568).  Not when config.emulate_precision_casts is on.

Differences that leave the result as eager makes it are not said: casts
a decomposition makes inside an op (their node's original op is the op,
not a conversion), casts merged or moved by the partitioner, a
gradient's cast back to its forward dtype.
"""
from ._places import place

_SHORT = {"float64": "f64", "float32": "f32", "float16": "f16",
          "bfloat16": "bf16"}
_WIDE = ("float32", "float64")
_LOW = ("float16", "bfloat16")


def short(dtype):
    return _SHORT.get(dtype, dtype)


def _at(cast):
    where = cast.where or "an unknown line"
    if cast.module:
        where += " (%s, %s)" % (cast.module, cast.module_class)
    return where


# --------------------------------------------------------------- notes

def note_break(state, graph, output, op):
    """A graph that ends at a graph break, inside an autocast region or
    not."""
    reason = getattr(output, "compile_subgraph_reason", None)
    if reason is None or not getattr(reason, "graph_break", False):
        return
    stack = getattr(reason, "user_stack", None) or []
    where = place(stack[-1].filename, stack[-1].lineno) \
        if stack else "an unknown line"
    text = "compiled graph %d (%s) ends at a graph break at %s: %s" % (
        graph.id, graph.name, where, _first_line(reason.reason))
    regions = _open_regions(output)
    if regions:
        text += ("; inside %s: the region is split, what follows runs "
                 "eagerly under it, then in the next graph" %
                 " and ".join(regions))
    state.bridge.compiled_diag("graph-break", text, op)


def _open_regions(output):
    regions = []
    for entry in getattr(output.root_tx, "block_stack", ()):
        context = getattr(entry, "with_context", None)
        values = getattr(context, "target_values", None)
        if type(context).__name__ != "AutocastModeVariable" or not values:
            continue
        device = values[0]
        dtype = values[1] if len(values) > 1 and values[1] is not None \
            else None
        enabled = values[2] if len(values) > 2 else True
        regions.append("autocast(%s, %s)" % (
            device, short(str(dtype).replace("torch.", ""))
            if enabled and dtype is not None else
            "on" if enabled else "off"))
    return regions


def note_recompile(state, graph, reasons, op, by_compile):
    """A frame compiled again because of AMP (an autocast-state guard or
    an input's dtype guard failed): the guard, and when it is autocast's
    state, the states of the two graphs.  A recompile for anything else
    (an evaluation under no_grad changes grad_mode, model.eval() a
    module's training flag, the last batch a shape) happens to healthy
    programs and is torch.compile's business: not reported."""
    amp = [line for line in map(_first_line, reasons) if _amp_guard(line)]
    if not amp:
        return
    reason = amp[0]
    text = "%s compiled again as graph %d: a guard failed: %s" % (
        graph.name, graph.id, reason)
    if "autocast" in reason:
        before = _previous(graph, by_compile)
        text += ("; an autocast-state guard failure: each autocast state "
                 "gets a graph of its own")
        if before is not None:
            text += ", graph %d traced under %s, graph %d under %s" % (
                before.id, _state_text(before), graph.id,
                _state_text(graph))
    state.bridge.compiled_diag("recompile", text, op)


def _amp_guard(reason):
    return "autocast" in reason or "dtype mismatch" in reason


def _previous(graph, by_compile):
    frame = graph.compile_id.split("/")[0]
    found = None
    for compile_id, graphs in by_compile.items():
        if compile_id.split("/")[0] == frame and graphs and \
                graphs[-1] is not graph and graphs[-1].id < graph.id:
            if found is None or graphs[-1].id > found.id:
                found = graphs[-1]
    return found


def _state_text(graph):
    parts = []
    for device in ("cpu", "cuda"):
        enabled, _, dtype = graph.outer[device]
        if enabled:
            parts.append("autocast(%s, %s)" % (device, short(dtype)))
    return " and ".join(parts) or "no autocast"


def _first_line(text):
    return str(text).strip().split("\n")[0][:300]


# ----------------------------------------------------------- divergence

def check_graph(state, graph, casts, backend, op):
    """At compile: the roundings inductor drops; the backward's casts are
    kept for its first run."""
    graph.backward_casts.extend(
        c for c in casts if c.backward and c.made_by == "autocast" and
        not c.recomputed)  # as eager's checkpoint does, in its state
    if backend != "inductor" or _emulates_casts():
        return
    for cast in casts:
        consumer = _widening_consumer(state.torch, cast)
        if consumer is not None:
            _dropped_rounding(state, graph, cast, consumer, op)


def _emulates_casts():
    from torch._inductor import config
    return bool(getattr(config, "emulate_precision_casts", False))


def _widening_consumer(torch, cast):
    """The pointwise op computing in f32/f64 that the cast to f16/bf16
    feeds directly, or None."""
    if cast.made_by == "autograd" or cast.recomputed or \
            cast.target not in _LOW or cast.source not in _WIDE:
        return None
    pointwise = torch.Tag.pointwise
    for user in cast.node.users:
        tags = getattr(user.target, "tags", ())
        value = user.meta.get("val")
        if pointwise in tags and \
                str(getattr(value, "dtype", "")).replace("torch.", "") \
                in _WIDE:
            return user
    return None


def _dropped_rounding(state, graph, cast, consumer, op):
    from ._graph import target_name
    name = target_name(consumer)
    wide = short(str(consumer.meta["val"].dtype).replace("torch.", ""))
    who = "the program's" if cast.made_by == "program" else "autocast's"
    text = ("compiled graph %d (%s, inductor): %s cast %s->%s at %s feeds "
            "%s, which computes in %s: inductor fuses the two into one "
            "kernel that keeps the unrounded %s value, where eager rounds "
            "to %s first, so the results differ (pytorch#181568); set "
            "torch._inductor.config.emulate_precision_casts = True to keep "
            "the rounding, or compute %s in %s" % (
                graph.id, graph.name, who, short(cast.source),
                short(cast.target), _at(cast), name, wide,
                short(cast.source), short(cast.target), name,
                short(cast.target)))
    state.bridge.compiled_diag("compile-divergence", text, op)


def check_backward(state, graph):
    """At the graph's first backward: autocast's casts in a backward that
    runs with autocast off, where eager makes none.  One note per graph,
    the casts grouped by the op they feed."""
    if graph.checked_backward:
        return
    graph.checked_backward = True
    extra = [c for c in graph.backward_casts
             if not state.autocast(c.device)[0]]
    if not extra:
        return
    groups = {}
    for cast in extra:
        key = (cast.feeds, cast.source, cast.target)
        groups[key] = groups.get(key, 0) + 1
    # what each cast feeds, the casts that feed ops first
    ordered = sorted(groups.items(), key=lambda g: (g[0][0] in ("output",
                                                               "_to_copy"),
                                                    -g[1]))
    listed = ", ".join(
        "%s %s->%s%s" % ("a graph output" if feeds == "output"
                         else feeds + "'s input", short(source),
                         short(target), " (x%d)" % n if n > 1 else "")
        for (feeds, source, target), n in ordered[:4])
    first = next((c for c in extra if c.feeds not in ("output", "_to_copy")),
                 extra[0])
    forward = graph.seq_states.get(first.node.meta.get("seq_nr"))
    inner = forward is not None and not forward[first.device][0]
    traced = graph.outer[first.device]
    text = ("the backward of compiled graph %d (%s, %s) was traced under "
            "the forward's autocast(%s, %s) "
            "(torch._functorch.config.backward_pass_autocast "
            "'same_as_forward') and makes %d cast%s eager autograd does not "
            "make here, as this backward() runs with autocast off: %s; for "
            "%s at %s%s (pytorch#179804); set "
            "torch._functorch.config.backward_pass_autocast = 'off', or run "
            "backward() under the same autocast" % (
                graph.id, graph.name, graph.backend, traced[1],
                short(traced[2]), len(extra), "s" if len(extra) > 1 else "",
                listed, first.op, _at(first),
                ", whose forward ran with autocast disabled" if inner
                else ""))
    state.bridge.compiled_diag("compile-divergence", text, graph.compile_op)
