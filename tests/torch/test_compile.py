#!/usr/bin/env python3
"""torch.compile under amptrace (issue 25), on torch 2.x CPU: the programs
of tests/torch/compile/ run plain, traced, and traced with Dynamo off
(TORCHDYNAMO_DISABLE=1: the same program run eagerly), each trace checked
for the compiled graphs' casts, calls, notes and divergences, and diffed
against the eager one.  The interpreter is $AMPTRACE_TEST_TORCH2_PYTHON
(meson: the torch2_python option);
TAP output; exit 77 (skip) without one.  Every run compiles afresh (an
inductor cache directory of its own): inductor's CPU compiles take tens
of seconds on a small machine, so the programs are tiny.

usage: test_compile.py AMPTRACE VALIDATE_TRACE
"""
import functools
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from tap import check, done, skip_unless_bridge, torch2_required

AMPTRACE, VALIDATE = sys.argv[1:3]
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile")
TMP = tempfile.mkdtemp(prefix="amptrace-compile-test-")
PYTHON = os.environ.get("AMPTRACE_TEST_TORCH2_PYTHON", "")


def skip(why):
    print("1..0 # SKIP %s" % why)
    sys.exit(77)


def environment(**extra):
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=tempfile.mkdtemp(dir=TMP))
    env.pop("TORCHDYNAMO_DISABLE", None)
    env.update(extra)
    return env


# Runs made once and asked for again (an untraced run, an eager twin):
# each costs seconds of compiling on a small machine.
_runs = {}


def run(script, *args, traced=True, out="t", **env):
    """The program's CompletedProcess and its trace's path."""
    key = (script, args, traced, out if traced else None,
           tuple(sorted(env.items())))
    if key not in _runs:
        _runs[key] = _run(script, *args, traced=traced, out=out, **env)
    return _runs[key]


def _run(script, *args, traced=True, out="t", **env):
    path = os.path.join(TMP, out + ".json")
    cmd = [PYTHON, os.path.join(HERE, script)] + list(args)
    if traced:
        cmd = [AMPTRACE, "run", "-q", "-o", path, "--"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True,
                       env=environment(**env), timeout=900)
    return p, path


def amptrace(*args):
    return subprocess.run([AMPTRACE] + list(args), capture_output=True,
                          text=True, timeout=120)


def load(path):
    with open(path) as f:
        return json.load(f)


def events(trace, cat):
    return [e["args"] for e in trace["traceEvents"] if e.get("cat") == cat]


def compiled_casts(trace):
    return [c for c in events(trace, "amp.cast")
            if c.get("origin") == "compiled"]


def calls(trace, phase=None):
    return [o for o in events(trace, "amp.op")
            if o["op"].startswith("compiled:") and
            (phase is None or o["phase"] == phase)]


def findings(path):
    p = amptrace("summary", "--json", path)
    return json.loads(p.stdout) if p.returncode == 0 else {}


def kinds(summary):
    return [f["kind"] for f in summary.get("findings", [])]


def valid(path):
    p = subprocess.run([VALIDATE, path], capture_output=True, text=True)
    return p.returncode == 0, p.stdout + p.stderr


def eager_twin(script, *args, out):
    """The program run eagerly (a backend argument, which Dynamo off
    ignores, is no part of it)."""
    return run(script, *args, out=out, TORCHDYNAMO_DISABLE="1")


# ------------------------------------------------------------ healthy

def test_models(backend):
    """An MLP and a transformer block under bf16 autocast: the graphs'
    casts with their lines and modules, their calls, the same losses as
    untraced, no finding, and no cast behaviour change from eager."""
    what = "models (%s)" % backend
    plain, _ = run("models.py", backend, traced=False)
    traced, path = run("models.py", backend, out="models-" + backend)
    check("%s: the traced run prints the plain run's losses" % what,
          traced.returncode == 0 and plain.returncode == 0 and
          traced.stdout == plain.stdout and "loss" in plain.stdout,
          plain.stdout + plain.stderr[-800:] + traced.stdout +
          traced.stderr[-800:])
    check("%s: torch's warning about global module hooks (the bridge's) "
          "is not the traced program's" % what,
          "global hooks" not in traced.stderr, traced.stderr[-800:])
    ok, why = valid(path)
    check("%s: the trace is valid" % what, ok, why)
    trace = load(path)
    casts = compiled_casts(trace)
    autocast = [c for c in casts if c["made_by"] == "autocast"]
    fc1 = [c for c in autocast if c.get("module") == "fc1"]
    check("%s: fc1's three f32->bf16 casts for linear, at their line, "
          "feeding addmm" % what,
          len(fc1) == 3 and all(
              c["graph_op"] == "linear" and c["from"] == "f32" and
              c["to"] == "bf16" and c["feeds"] == "addmm" and
              c["source"] == "models.py:20" and
              c["graph_phase"] == "forward" and
              c["module_class"] == "Linear" and
              c["traced_under"] == "autocast(cpu, bf16)" for c in fc1),
          fc1)
    block = {c.get("module") for c in autocast if c["graph"] == 2}
    # the MLP is freed before the block is made: one model at a time,
    # each is "" (_roots.py), as in builds before there were prefixes
    check("%s: the block's linear layers cast (qkv, proj, up, down), "
          "the MLP gone: no prefix (not Block.qkv)" % what,
          {"qkv", "proj", "up", "down"} <= block, block)
    graphs = {o["graph"] for o in calls(trace)}
    check("%s: two graphs, each called twice forward and twice backward"
          % what, graphs == {1, 2} and all(
              len([o for o in calls(trace, phase) if o["graph"] == g]) == 2
              for g in graphs for phase in ("forward", "backward")),
          [(o["op"], o["graph"], o["phase"]) for o in calls(trace)])
    summary = findings(path)
    check("%s: no finding" % what, summary and not kinds(summary),
          summary.get("findings"))
    rows = summary.get("compiled_graphs", [])
    check("%s: summary counts each graph's casts per call" % what,
          len(rows) == 2 and rows[0]["forward_casts"] == 5 and
          rows[0]["forward_calls"] == 2, rows)
    eager, eager_path = eager_twin("models.py", "eager", out="models-eager")
    d = amptrace("diff", eager_path, path)
    check("%s: diff against the eager run: no cast behaviour change" % what,
          eager.stdout == plain.stdout and d.returncode == 0 and
          "no cast behaviour change" in d.stdout, d.stdout + d.stderr)


# -------------------------------------------------------- divergences

def test_inner_disabled():
    """pytorch#179804: aot_eager's backward of an autocast(enabled=False)
    region casts to bf16, eager's does not."""
    traced, path = run("inner_disabled.py", out="inner")
    reproduces = "gradients equal: False" in traced.stdout
    check("#179804 still reproduces on this torch (gradients differ)",
          reproduces, traced.stdout + traced.stderr[-800:])
    summary = findings(path)
    found = [f for f in summary.get("findings", [])
             if f["kind"] == "compile-divergence"]
    check("#179804: compile-divergence names the backward's casts, the line "
          "and the issue", len(found) == 1 and
          "inner_disabled.py:22" in found[0]["message"] and
          "mm's input f32->bf16" in found[0]["message"] and
          "pytorch#179804" in found[0]["message"] and
          "autocast disabled" in found[0]["message"], found)
    _, eager_path = eager_twin("inner_disabled.py", out="inner-eager")
    d = amptrace("diff", eager_path, path)
    check("#179804: diff against eager: the backward's cast to bf16 is a "
          "cast behaviour change", d.returncode == 1 and
          "cast-added" in d.stdout and "mm (backward)" in d.stdout and
          "f32->bf16" in d.stdout, d.stdout + d.stderr)
    off, path = run("inner_disabled.py", "off", out="inner-off")
    check("#179804 with the backward traced without autocast: equal "
          "gradients, no finding", "gradients equal: True" in off.stdout
          and not kinds(findings(path)), off.stdout + off.stderr[-800:])


def test_dropped_rounding():
    """pytorch#181568: inductor drops an explicit .to(bfloat16) before an
    f32 add."""
    traced, path = run("dropped_rounding.py", out="rounding")
    check("#181568 still reproduces on this torch (results differ)",
          "results equal: False" in traced.stdout,
          traced.stdout + traced.stderr[-800:])
    found = [f for f in findings(path).get("findings", [])
             if f["kind"] == "compile-divergence"]
    check("#181568: compile-divergence names the cast, its line, the add "
          "and the issue", len(found) == 1 and
          "dropped_rounding.py:19" in found[0]["message"] and
          "feeds add" in found[0]["message"] and
          "pytorch#181568" in found[0]["message"], found)
    emulated, path = run("dropped_rounding.py", "emulate", out="rounding-ok")
    # the program uses no autocast at all: main's autocast-never-enabled
    # (info) says so, rightly; no other finding
    check("#181568 with emulate_precision_casts: equal results, no "
          "finding", "results equal: True" in emulated.stdout and
          kinds(findings(path)) == ["autocast-never-enabled"],
          emulated.stdout + emulated.stderr[-800:])


def test_checkpointed():
    """Activation checkpointing in a compiled function: the forward casts
    its backward graph recomputes are autocast's, as in eager's
    recompute, not gradients' (and no divergence: eager makes them too,
    under the forward's state)."""
    traced, path = run("checkpointed.py", out="checkpointed")
    plain, _ = run("checkpointed.py", traced=False)
    check("checkpointed: the program's output as untraced",
          traced.stdout == plain.stdout and traced.returncode == 0,
          traced.stdout + traced.stderr[-800:])
    backward = [(c["made_by"], c["from"], c["to"], "recomputed" in
                 c["reason"] and "(activation checkpointing)" in
                 c["reason"]) for c in compiled_casts(load(path))
                if c["phase"] == "backward"]
    check("checkpointed: the backward graph's 5 recomputed forward casts "
          "are autocast's, for activation checkpointing, its 5 gradient "
          "casts autograd's",
          sorted(backward) == [("autocast", "f32", "bf16", True)] * 5 +
          [("autograd", "bf16", "f32", False)] * 5, backward)
    check("checkpointed: no finding", not kinds(findings(path)),
          kinds(findings(path)))
    _, eager_path = eager_twin("checkpointed.py", out="checkpointed-eager")
    d = amptrace("diff", eager_path, path)
    check("checkpointed: diff against eager: the same casts, forward and "
          "recomputed", d.returncode == 0 and
          "no cast behaviour change" in d.stdout, d.stdout + d.stderr)


def test_rematerialized():
    """A forward cast the min-cut partitioner recomputes in the backward
    graph on its own (no checkpoint) is the program's again, said to be
    the partitioner's recompute, not a gradient's cast."""
    traced, path = run("rematerialized.py", out="rematerialized")
    plain, _ = run("rematerialized.py", traced=False)
    check("rematerialized: the program's output as untraced",
          traced.stdout == plain.stdout and traced.returncode == 0,
          traced.stdout + traced.stderr[-800:])
    backward = [(c["made_by"], c["from"], c["to"], c["reason"])
                for c in compiled_casts(load(path))
                if c["phase"] == "backward"]
    recomputed = [c for c in backward if "recomputed" in c[3]]
    check("rematerialized: the backward graph's .float() again is the "
          "program's, recomputed by the partitioner; its 4 gradient casts "
          "autograd's", [c[:3] for c in recomputed] ==
          [("program", "bf16", "f32")] and
          "(by the partitioner)" in recomputed[0][3] and
          sorted(c[:3] for c in backward if c not in recomputed) ==
          [("autograd", "bf16", "f32")] * 3 +
          [("autograd", "f32", "bf16")], backward)
    check("rematerialized: no finding", not kinds(findings(path)),
          kinds(findings(path)))


# -------------------------------------------------------------- notes

def test_graph_break():
    traced, path = run("graph_break.py", out="break")
    plain, _ = run("graph_break.py", traced=False)
    check("graph break: the program's output as untraced",
          traced.stdout == plain.stdout and traced.returncode == 0,
          traced.stdout + traced.stderr[-800:])
    notes = [f["message"] for f in findings(path).get("findings", [])
             if f["kind"] == "graph-break"]
    check("graph break: a note at its line, inside the autocast region",
          len(notes) == 1 and "graph_break.py:11" in notes[0] and
          "inside autocast(cpu, bf16)" in notes[0], notes)
    trace = load(path)
    check("graph break: both graphs' matmuls cast, each in its graph",
          sorted({c["graph"] for c in compiled_casts(trace)
                  if c["graph_op"] == "matmul"}) == [1, 2],
          compiled_casts(trace))


def test_recompile():
    traced, path = run("recompile.py", out="recompile")
    notes = [f["message"] for f in findings(path).get("findings", [])
             if f["kind"] == "recompile"]
    check("recompile: a note naming the autocast-state guard failure and "
          "both states", len(notes) == 1 and
          "autocast-state guard failure" in notes[0] and
          "autocast(cpu, bf16)" in notes[0] and
          "autocast(cpu, f16)" in notes[0], notes + [traced.stderr[-800:]])
    trace = load(path)
    check("recompile: the second graph's casts are to f16",
          {c["to"] for c in compiled_casts(trace)
           if c["graph"] == 2 and c["made_by"] == "autocast"} == {"f16"},
          compiled_casts(trace))


def test_recompile_healthy():
    """An evaluation under no_grad and a smaller last batch make torch
    compile again, as they do in every healthy program: no note; an
    input's dtype changing is AMP's, and is."""
    traced, path = run("recompile_healthy.py", out="recompile_healthy")
    notes = [f["message"] for f in findings(path).get("findings", [])
             if f["kind"] == "recompile"]
    graphs = [a for a in events(load(path), "amp.op")
              if a["op"].startswith("compile:")]
    check("recompiles for grad mode and a shape: no note (%d compiles); "
          "for a dtype: one" % len(graphs),
          traced.returncode == 0 and len(graphs) >= 4 and
          len(notes) == 1 and "dtype mismatch" in notes[0],
          notes + [traced.stderr[-800:]])


def test_no_graph():
    """A compiled callable that runs eagerly (no compiled graph in a
    call) is said, with Dynamo's reasons, each callable apart; one that
    compiles, or runs eagerly as the program asked, is not."""
    expected = {  # mode: the words of each finding, in order
        "disabled": [["torch.compile'd f (no_graph.py:27, compiled at "
                      "no_graph.py:86) ran eagerly in its call 1:",
                      "`torch.compiler.disable()`d function",
                      "`<function work>`"]],
        "ddp": [["torch.compile'd DistributedDataParallel (compiled at "
                 "no_graph.py:55) ran eagerly in its call 1:",
                 "`set_runtime_stats_and_log` of class `Logger`",
                 "`DistributedDataParallel._inside_ddp_forward` in file "
                 "`torch/_compile.py`"]],
        "limit": [["torch.compile'd g (no_graph.py:31, compiled at "
                   "no_graph.py:80) ran eagerly in its call 2:",
                   "(1 earlier call ran compiled graphs)",
                   "Dynamo recompile limit exceeded"]],
        "suppressed": [["torch.compile'd g (no_graph.py:31, compiled at "
                        "no_graph.py:76) ran eagerly in its call 1:",
                        "BackendCompilerFailed: backend='broken' raised: "
                        "RuntimeError: this backend fails"]],
        "two": [["torch.compile'd Net (compiled at no_graph.py:70) ran "
                 "eagerly in its call 1:"],
                ["torch.compile'd f (no_graph.py:27, compiled at "
                 "no_graph.py:71) ran eagerly in its call 1:"]],
        "compiled": [], "stance": [],
    }
    for mode, wanted in expected.items():
        plain, _ = run("no_graph.py", mode, traced=False)
        traced, path = run("no_graph.py", mode, out="no-graph-" + mode)
        check("no graph, %s: the program's output as untraced" % mode,
              traced.returncode == plain.returncode == 0 and
              traced.stdout == plain.stdout and plain.stdout,
              plain.stdout + traced.stdout + traced.stderr[-800:])
        found = [f for f in findings(path).get("findings", [])
                 if f["kind"] == "no-compiled-graph"]
        if not wanted:
            check("no graph, %s: no finding no-compiled-graph, graphs "
                  "called" % mode, not found and
                  (mode == "stance" or calls(load(path))), found)
            continue
        check("no graph, %s: %d warning(s) naming the callable, the call "
              "and Dynamo's reason" % (mode, len(wanted)),
              len(found) == len(wanted) and all(
                  f["severity"] == "warning" and f["count"] == 1 and
                  all(w in f["message"] for w in words)
                  for f, words in zip(found, wanted)),
              found or traced.stderr[-800:])
    _, path = eager_twin("no_graph.py", "disabled", out="no-graph-twin")
    check("no graph: Dynamo off (TORCHDYNAMO_DISABLE=1): no finding "
          "no-compiled-graph", "no-compiled-graph" not in
          kinds(findings(path)), kinds(findings(path)))


# --------------------------------------------------------- robustness

def test_modes():
    traced, path = run("modes.py", out="modes")
    plain, _ = run("modes.py", traced=False)
    check("reduce-overhead and fullgraph: the results as untraced",
          traced.returncode == 0 and traced.stdout == plain.stdout and
          "fullgraph" in plain.stdout, plain.stdout + traced.stdout +
          traced.stderr[-800:])
    check("reduce-overhead and fullgraph: both graphs' calls recorded",
          len({o["graph"] for o in calls(load(path))}) == 2,
          calls(load(path)))
    check("reduce-overhead and fullgraph: neither ran eagerly (no "
          "no-compiled-graph)", "no-compiled-graph" not in
          kinds(findings(path)), findings(path).get("findings"))


def test_fallback():
    traced, path = run("models.py", "aot_eager", out="fallback",
                       AMPTRACE_TORCH_FALLBACK="1")
    plain, _ = run("models.py", "aot_eager", traced=False)
    check("fallback: the traced run prints the plain run's losses",
          traced.returncode == 0 and traced.stdout == plain.stdout,
          traced.stdout + traced.stderr[-800:])
    trace = load(path)
    check("fallback: the graphs' casts and calls recorded",
          len([c for c in compiled_casts(trace)
               if c["made_by"] == "autocast"]) == 15 and
          len(calls(trace)) == 8,
          "%d casts, %d calls" % (len(compiled_casts(trace)),
                                  len(calls(trace))))
    check("fallback: no finding", not kinds(findings(path)),
          findings(path).get("findings"))


def cache_files(cache):
    """Every file under an inductor cache directory, by its path there."""
    return {os.path.relpath(os.path.join(d, f), cache)
            for d, _, files in os.walk(cache) for f in files}


def test_cache_reuse():
    """An untraced run, then two traced runs, over one inductor cache:
    the traced runs see their graphs' casts although the untraced run
    stored those graphs (a traced run compiles afresh), the second adds
    nothing to the cache (nor is it stored), and both print the untraced
    run's bits."""
    cache = tempfile.mkdtemp(dir=TMP)
    plain, _ = run("cache_reuse.py", traced=False,
                   TORCHINDUCTOR_CACHE_DIR=cache)
    seen = []
    for out in ("cache-first", "cache-second"):
        traced, path = run("cache_reuse.py", out=out,
                           TORCHINDUCTOR_CACHE_DIR=cache)
        check("cache reuse, %s run: the untraced run's bits" % out[6:],
              traced.returncode == 0 and plain.returncode == 0 and
              traced.stdout == plain.stdout and "bfloat16" in plain.stdout,
              plain.stdout + traced.stdout + traced.stderr[-800:])
        check("cache reuse, %s run: the graph's casts recorded" % out[6:],
              len(compiled_casts(load(path))) > 0,
              compiled_casts(load(path)))
        seen.append(cache_files(cache))
    check("cache reuse: the second traced run adds no file to inductor's "
          "cache", bool(seen[0]) and seen[1] <= seen[0],
          sorted(seen[1] - seen[0]))


def test_compile_error():
    traced, path = run("compile_error.py", out="error")
    plain, _ = run("compile_error.py", traced=False)
    check("a failing compile: the program's exit status and stderr as "
          "untraced", traced.returncode == plain.returncode != 0 and
          traced.stderr == plain.stderr, traced.stderr[-800:])
    ok, why = valid(path)
    failed = [o for o in events(load(path), "amp.op")
              if o["op"].startswith("compile") and o.get("status")]
    check("a failing compile: the trace is valid and holds the failed "
          "compile with torch's error", ok and len(failed) == 1 and
          "Unsupported" in failed[0]["error"], why + str(failed))


def test_overlapping_compiles():
    """A thread's compile overlapping another's (a Dynamo compile and a
    lazy backward compile, which compile_lock does not serialize), in
    either order: each is its thread's op, closed, and the ops the
    thread runs after it are recorded."""
    for mode in ("a-first", "b-first"):
        plain, _ = run("overlapping.py", mode, traced=False)
        traced, path = run("overlapping.py", mode, out="overlap-" + mode)
        check("overlapping compiles, %s: the program's output as "
              "untraced" % mode, traced.returncode == plain.returncode == 0
              and traced.stdout == plain.stdout and plain.stdout,
              plain.stdout + traced.stdout + traced.stderr[-800:])
        if not os.path.isfile(path):
            continue
        trace = load(path)
        names = {e["tid"]: e["args"]["name"].split()[0]
                 for e in trace["traceEvents"]
                 if e.get("ph") == "M" and e.get("name") == "thread_name"}
        ops = [(names.get(e["tid"]), e["args"]) for e in trace["traceEvents"]
               if e.get("cat") == "amp.op"]
        ok, why = valid(path)
        compiles = sorted((thread, o["op"]) for thread, o in ops
                          if thread in ("A", "B") and
                          o["op"].startswith(("compile:",
                                              "compile backward:")))
        check("overlapping compiles, %s: A's compile and B's backward "
              "compile, each on its thread" % mode, ok and compiles == [
                  ("A", "compile:<lambda>"),
                  ("B", "compile backward:<lambda>")], why + str(compiles))
        check("overlapping compiles, %s: none left open" % mode,
              not [o for _, o in ops if o.get("incomplete")],
              [o for _, o in ops if o.get("incomplete")])
        check("overlapping compiles, %s: A's 5 matmuls after its compile "
              "recorded" % mode,
              sum(1 for t, o in ops if t == "A" and o["op"] == "mm") == 5,
              [(t, o["op"]) for t, o in ops if t == "A"])


def log_text(stderr):
    """stderr without the time and pid torch's log lines begin with
    ("W1129 06:10:12.345000 4242 torch/...")."""
    return re.sub(r"(?m)^([DIWE])\d{4} [\d:.]+ \d+ ", r"\1 ", stderr)


def test_handled_errors():
    """A compile's error is the program's (op-error) only when it reaches
    the program: one Dynamo handles (a frame it skips, suppress_errors)
    is said by how it was handled, the frame having run eagerly."""
    expected = {  # mode: (the compile's `handled`, the findings' kinds)
        "suppressed": ("suppressed", ["compile-error-suppressed",
                                      "no-compiled-graph"]),
        "skipped": ("skipped", ["no-compiled-graph"]),
        "raised": (None, ["op-error"]),
        "fullgraph": (None, ["op-error"]),
        # a compile inside the program's `except` block: the exception
        # it handles is none of the compile's
        "handling": (None, []),
        "raised-handling": (None, ["op-error"]),
    }
    for mode, (handled, wanted) in expected.items():
        plain, _ = run("errors.py", mode, traced=False)
        traced, path = run("errors.py", mode, out="errors-" + mode)
        check("compile errors, %s: the program's output as untraced"
              % mode, traced.returncode == plain.returncode == 0 and
              traced.stdout == plain.stdout and plain.stdout,
              plain.stdout + traced.stdout + traced.stderr[-800:])
        # Dynamo's log of the error, traceback and all (suppressed)
        check("compile errors, %s: stderr as untraced, but for the log "
              "lines' times and pids" % mode,
              log_text(traced.stderr) == log_text(plain.stderr),
              traced.stderr[-1500:])
        failed = [o for o in events(load(path), "amp.op")
                  if o["op"].startswith("compile") and o.get("status")]
        ok, why = valid(path)
        if mode == "handling":
            check("compile errors, handling: no failed compile", ok and
                  not failed, why + str(failed))
        else:
            check("compile errors, %s: the failed compile, handled %s" %
                  (mode, handled), ok and len(failed) == 1 and
                  failed[0].get("handled") == handled, why + str(failed))
        summary = findings(path)
        check("compile errors, %s: findings %s" % (mode, wanted),
              kinds(summary) == wanted, summary.get("findings"))
        if mode == "suppressed":
            f = summary["findings"][0]
            check("compile errors, suppressed: a warning with torch's "
                  "error", f["severity"] == "warning" and
                  "BackendCompilerFailed: backend='broken' raised" in
                  f["message"], f)


def test_slow_compile_killed():
    """A compile in progress when the program is killed: the trace holds
    it, as an op the process's death ended."""
    path = os.path.join(TMP, "slow.json")
    p = subprocess.Popen([AMPTRACE, "run", "-q", "-o", path, "--", PYTHON,
                          os.path.join(HERE, "slow_compile.py")],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=environment())
    line = p.stdout.readline()
    if line.startswith("compiling "):
        os.kill(int(line.split()[1]), signal.SIGKILL)
    try:
        p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
    ok, why = valid(path)
    incomplete = [o for o in events(load(path), "amp.op")
                  if o["op"] == "compile:<lambda>" and o.get("incomplete")]
    check("a compile killed in progress: amptrace exits 137 and the trace "
          "holds the compile, ended by the process's death",
          p.returncode == 137 and ok and len(incomplete) == 1 and
          incomplete[0]["closed_by"] == "process died",
          "%s %s %s" % (p.returncode, why, incomplete))


def test_live_models():
    """Two models alive at once, each compiled at top level: the second's
    graph casts are under its top-level name, as its eager ops are
    (FORMAT.md §3.13, _roots.py)."""
    traced, path = run("models.py", "aot_eager", "both", out="live-models")
    casts = [c for c in compiled_casts(load(path))
             if c["made_by"] == "autocast"]
    modules = {c.get("module") for c in casts}
    check("two live models compiled: the MLP's casts in fc1, the block's "
          "under its name (Block.qkv, Block.proj, Block.up, Block.down)",
          traced.returncode == 0 and "fc1" in modules and
          {"Block.qkv", "Block.proj", "Block.up", "Block.down"} <= modules
          and not modules & {"qkv", "proj", "up", "down"},
          (traced.returncode, traced.stderr[-500:], modules))


TESTS = [functools.partial(test_models, "aot_eager"),
         functools.partial(test_models, "inductor"), test_live_models,
         test_inner_disabled, test_dropped_rounding, test_checkpointed,
         test_rematerialized,
         test_graph_break,
         test_recompile, test_recompile_healthy, test_no_graph,
         test_modes, test_fallback,
         test_compile_error, test_handled_errors,
         test_overlapping_compiles,
         test_slow_compile_killed, test_cache_reuse]
# AMPTRACE_COMPILE_TESTS=cache_reuse,modes runs those alone (while
# iterating)
ONLY = os.environ.get("AMPTRACE_COMPILE_TESTS")


def selected(test):
    name = getattr(test, "func", test).__name__[len("test_"):]
    return not ONLY or name in ONLY.split(",")


def main():
    if not PYTHON:
        why = "no torch 2.x interpreter: meson's torch2_python option"
        if torch2_required():
            check("torch 2.13 is required (AMPTRACE_REQUIRE_TORCH2=1)",
                  False, why)
            sys.exit(done())
        skip(why)
    skip_unless_bridge(AMPTRACE, PYTHON,
                       "import torch, sys; sys.exit(not hasattr(torch, "
                       "'compile'))")
    started = time.time()
    try:
        for test in TESTS:
            if selected(test):
                test()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print("# %.0f s" % (time.time() - started))
    return done()


if __name__ == "__main__":
    sys.exit(main())
