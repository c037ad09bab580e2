"""torch.compile'd callables that ran eagerly: a call of one in which no
compiled graph ran.  Dynamo made none for it (every frame it looked at
was skipped, a graph break at the first op left an empty graph, the
function's work is in a torch._dynamo.disable'd call, the recompile
limit was reached, a compile error was suppressed), so every op of the
call ran eagerly, as the trace shows, and no graph-break or recompile
note explains it: those are written for a graph.  The finding
no-compiled-graph says so, once per compiled callable, at its first such
call, with what Dynamo counted as the reasons during that call
(torch._dynamo.utils.counters' graph breaks and unimplemented features,
and the compile errors the compile side saw).

A call is seen through the enter/exit hooks of the callable's Dynamo
context (_TorchDynamoContext.enter_exit_hooks, run by each call of the
compiled function or module): ours is added, nothing else of the
context changes, nothing is compiled for it.  A call that raises is not
judged (its error is an op's or the compile's), nor one where the
program asked for eager (torch.compiler.set_stance, dynamo's disable).
torch 2.x only: install() finds no such context elsewhere.
"""
import os
import re
import sys
import threading

from ._places import place

_local = threading.local()
_CATEGORIES = ("graph_break", "unimplemented")
_MAX_REASONS = 3
_unseen = []               # one True once a graph's calls go unrecorded


def graph_ran():
    """A compiled graph was called on this thread (_graph.py): the
    compiled callables whose calls are open did not run eagerly."""
    _local.graphs = getattr(_local, "graphs", 0) + 1


def calls_unseen():
    """A graph's calls are not recorded (registering it or wrapping it
    failed, said as a recording failure): a call that runs it would look
    eager, so no call is judged from now on."""
    _unseen.append(True)


def compile_failed(error):
    """A compile on this thread failed with `error`'s text (Dynamo goes
    on eagerly when it suppresses the error)."""
    errors = getattr(_local, "errors", None)
    if errors is None:
        errors = _local.errors = []
    errors.append(error)


def watch(state, compiled, target):
    """Watches the calls of `compiled`, what torch.compile made of
    `target`; nothing when it is not a Dynamo context's (torch.compile
    disabled, TORCHDYNAMO_DISABLE=1)."""
    context = _context_of(compiled)
    hooks = getattr(context, "enter_exit_hooks", None)
    if not isinstance(hooks, list) or \
            type(context).__name__ == "DisableContext":
        return
    watched = _Watched(state, _describe(state.torch, target))
    # a plain function: deepcopy of a compiled module copies its context,
    # and a function is copied as itself
    hooks.append(lambda: watched.enter())


def _context_of(compiled):
    """The Dynamo context of a compiled module (dynamo_ctx) or of a
    compiled function (the `self` its wrapper closes over)."""
    context = getattr(compiled, "dynamo_ctx", None)
    if context is not None:
        return context
    code = getattr(compiled, "__code__", None)
    cells = getattr(compiled, "__closure__", None)
    if code is None or not cells or "self" not in code.co_freevars:
        return None
    return cells[code.co_freevars.index("self")].cell_contents


def _describe(torch, target):
    """"DistributedDataParallel (compiled at train.py:12)", "f
    (train.py:5, compiled at train.py:12)"."""
    at = _compile_site(torch)
    if getattr(target, "__func__", None) is torch.nn.Module._call_impl:
        target = target.__self__   # model.compile()
    if isinstance(target, torch.nn.Module):
        return "%s (compiled at %s)" % (type(target).__name__, at)
    name = getattr(target, "__qualname__", None) or \
        type(target).__name__
    code = getattr(target, "__code__", None)
    if code is None:
        return "%s (compiled at %s)" % (name, at)
    return "%s (%s, compiled at %s)" % (
        name, place(code.co_filename, code.co_firstlineno), at)


def _compile_site(torch):
    """The program's line that called torch.compile: the first frame
    outside torch's package and ours (a decorator's call is inside
    torch)."""
    inside = tuple(os.path.dirname(os.path.abspath(m.__file__)) + os.sep
                   for m in (torch, sys.modules[__name__]))
    frame = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(inside):
            return place(filename, frame.f_lineno)
        frame = frame.f_back
    return "an unknown line"


def _nothing():
    pass


class _Watched:
    """A compiled callable: its calls, until one ran eagerly."""

    def __init__(self, state, name):
        from torch._dynamo.utils import counters
        self.state = state
        self.name = name
        self.counters = counters
        self.calls = 0
        self.compiled_calls = 0    # calls that ran a compiled graph
        self.reported = False

    def enter(self):
        """At a call's start: what it is judged against at its end."""
        if self.reported:
            return _nothing
        try:
            return _Call(self).leave
        except Exception as e:
            self.state.failed(e)
            return _nothing

    def counted(self):
        """Dynamo's counts of graph breaks and unimplemented features,
        by their text."""
        return {c: dict(self.counters[c]) for c in _CATEGORIES
                if c in self.counters}


class _Call:
    def __init__(self, watched):
        self.watched = watched
        self.graphs = getattr(_local, "graphs", 0)
        self.errors = len(getattr(_local, "errors", ()))
        self.counted = watched.counted()

    def leave(self):
        # called in the compiled wrapper's finally: an exception passing
        # through (or one the program is handling around the call) makes
        # the call unjudged
        watched = self.watched
        watched.calls += 1
        if sys.exc_info()[1] is not None or _unseen:
            return
        if getattr(_local, "graphs", 0) != self.graphs:
            watched.compiled_calls += 1
            return
        try:
            torch = watched.state.torch
            if _eager_asked(torch):
                return
            watched.reported = True
            reasons = _new_reasons(torch, watched.counted(),
                                   self.counted) + \
                getattr(_local, "errors", [])[self.errors:]
            watched.state.bridge.compiled_diag(
                "no-compiled-graph", _message(watched, reasons), 0)
        except Exception as e:
            watched.state.failed(e)


def _eager_asked(torch):
    """The program asked for eager: a stance other than the default
    (force_eager, eager_on_recompile, ...) or Dynamo disabled."""
    from torch._dynamo import config, eval_frame
    stance = getattr(getattr(eval_frame, "_stance", None), "stance",
                     "default")
    return stance != "default" or bool(getattr(config, "disable", False))


def _new_reasons(torch, now, before):
    """The texts whose counts rose, graph breaks first: each its first
    line and its explanation ("Unsupported method call: Dynamo does not
    know how to trace method `set_runtime_stats_and_log` of class
    `Logger`")."""
    reasons = []
    for category in _CATEGORIES:
        old = before.get(category, {})
        for text, count in now.get(category, {}).items():
            if count > old.get(text, 0):
                reasons.append(_reason(torch, text))
    return reasons


def _reason(torch, text):
    # an object's address ("<function work at 0x7f3f...>") differs from
    # run to run, and says nothing; torch's files are named from torch/,
    # as on every machine
    text = re.sub(r" at 0x[0-9a-f]+>", ">", str(text))
    text = text.replace(os.path.dirname(os.path.dirname(
        os.path.abspath(torch.__file__))) + os.sep, "")
    lines = [line.strip() for line in text.strip().split("\n")]
    why = lines[0]
    for line in lines[1:]:
        if line.startswith("Explanation:"):
            why += ": " + line[len("Explanation:"):].strip()
            break
    return why[:300]


def _message(watched, reasons):
    text = ("torch.compile'd %s ran eagerly in its call %d: no compiled "
            "graph ran in it, so every op of the call ran as in eager mode"
            % (watched.name, watched.calls))
    if watched.compiled_calls:
        text += " (%d earlier call%s ran compiled graphs)" % (
            watched.compiled_calls, "" if watched.compiled_calls == 1
            else "s")
    unique = list(dict.fromkeys(reasons))
    if not unique:
        return text + ("; Dynamo gave no reason (it skipped every frame: "
                       "TORCH_LOGS=graph_breaks shows more)")
    text += "; Dynamo's reasons: " + "; ".join(unique[:_MAX_REASONS])
    if len(unique) > _MAX_REASONS:
        text += "; and %d more" % (len(unique) - _MAX_REASONS)
    return text
