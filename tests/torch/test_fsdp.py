#!/usr/bin/env python3
"""FSDP's mixed precision, which lowers a model's precision without
autocast (scenario_fsdp.py: two ranks, mp.spawn, gloo on the CPU).

Positive: fully_shard with a bf16/f32 MixedPrecisionPolicy, by two of
its names: the program's losses are the same traced; each rank's three
modules have their fsdp-mixed-precision note (module path and class as
its ops name them, the dtypes FSDP applies: the root, whose layers hold
every parameter, casts only its inputs); no autocast-never-enabled; the
summary's line per policy on both ranks, and its JSON.  FSDP1
(FullyShardedDataParallel's mixed_precision) likewise, its root casting
its inputs by cast_root_forward_inputs.  Negatives:
fully_shard without mp_policy, and with param_dtype f32 (the parameters
not cast), are still named by autocast-never-enabled, the first with no
FSDP line; a plain program without autocast or FSDP is unchanged.  And
fully_shard imported before trace() installs the bridge is recorded.
TAP output; exit 77 (skip) without the bridge or without FSDP2 (torch
1.13's FSDP does not import on Python 3.11).

usage: test_fsdp.py AMPTRACE VALIDATE_TRACE PYTHON
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

from amptrace_run import GLOO_EXIT_RACE, events, load, run_again_on
from tap import check, done, scratch, skip_unless_bridge

AMPTRACE = os.path.abspath(sys.argv[1])
VALIDATE = os.path.abspath(sys.argv[2])
PYTHON = shutil.which(sys.argv[3]) or sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIO = os.path.join(HERE, "scenario_fsdp.py")
STEPS = 2
TIMEOUT = 240


def run(command, trace=None):
    """COMMAND, under `amptrace run -o TRACE` when TRACE is given, in the
    scratch directory: the CompletedProcess (text).  Past TIMEOUT its
    whole session is killed (the ranks with it)."""
    if trace:
        command = [AMPTRACE, "run", "-o", trace, "--", *command]
    p = subprocess.Popen(command, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, cwd=TMP,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += "\n(killed after %d s)" % TIMEOUT
    return subprocess.CompletedProcess(command, p.returncode, out, err)


def scenario(mode, trace=None):
    """The scenario's job, run again (at a new rendezvous file) when
    gloo's exit race ended it."""
    def attempt(k):
        store = os.path.join(TMP, "%s-%s-%d.store"
                             % (mode, "traced" if trace else "plain", k))
        return run([PYTHON, SCENARIO, mode, str(STEPS), store], trace)
    return run_again_on((GLOO_EXIT_RACE,), attempt)


def losses(text):
    """The `rank R step S loss X` lines, sorted (the ranks interleave)."""
    return sorted(line for line in text.splitlines()
                  if re.match(r"rank \d+ step \d+ loss ", line))


def summary(path):
    """(text, JSON) of `amptrace summary` on path, COLUMNS=20 LANG=C."""
    env = dict(os.environ, COLUMNS="20", LANG="C")
    text = subprocess.run([AMPTRACE, "summary", path], capture_output=True,
                          text=True, env=env)
    js = subprocess.run([AMPTRACE, "summary", "--json", path],
                        capture_output=True, text=True, env=env)
    try:
        data = json.loads(js.stdout)
    except ValueError:
        data = {"error": js.stdout + js.stderr}
    return text.stdout + text.stderr, data


def fsdp_lines(text):
    return [line for line in text.splitlines()
            if line.startswith("FSDP mixed precision:")]


def kinds(data):
    return sorted(f["kind"] for f in data.get("findings", []))


def notes(trace):
    """pid -> sorted (module, module_class, dtypes...) of its notes."""
    found = {}
    keys = ("param_dtype", "reduce_dtype", "input_dtype", "output_dtype",
            "buffer_dtype")
    for e in events(trace, "amp.diag"):
        a = e["args"]
        if a["kind"] == "fsdp-mixed-precision":
            found.setdefault(e["pid"], []).append(
                (a.get("module"), a.get("module_class"),
                 *(a.get(k) for k in keys)))
    return {pid: sorted(n) for pid, n in found.items()}


def traced(what, mode):
    """Traces `mode`: (the trace, None when there is none; its path; the
    run), the run and the trace's validity checked."""
    path = os.path.join(TMP, mode + ".json")
    result = scenario(mode, path)
    check("%s: traced, exit 0, %d loss lines" % (what, 2 * STEPS),
          result.returncode == 0 and len(losses(result.stdout)) == 2 * STEPS,
          (result.returncode, result.stderr[-2000:]))
    if not os.path.isfile(path):
        return None, path, result
    v = subprocess.run([VALIDATE, path], capture_output=True, text=True)
    check("%s: the trace validates" % what, v.returncode == 0,
          v.stdout + v.stderr)
    return load(path), path, result


def test_fsdp2_bf16():
    begin = time.monotonic()
    plain = scenario("bf16")
    trace, path, result = traced("fully_shard bf16", "bf16")
    check("fully_shard bf16: the same losses traced as plain",
          losses(plain.stdout) and
          losses(plain.stdout) == losses(result.stdout),
          (losses(plain.stdout), losses(result.stdout),
           plain.stderr[-1000:]))
    if trace is None:
        return
    # the root holds no parameters (each Linear is sharded itself): its
    # policy casts its inputs only, as torch applies it
    policy = ("bf16", "f32", "bf16", None, None)
    want = sorted([("", "FSDPSequential", None, None, "bf16", None, None),
                   ("0", "FSDPLinear") + policy,
                   ("2", "FSDPLinear") + policy])
    found = notes(trace)
    check("fully_shard bf16: each rank's 3 modules have their note, named "
          "as their ops are, with the dtypes FSDP applies (the root's "
          "inputs only)",
          len(found) == 2 and all(n == want for n in found.values()), found)
    op_modules = {(e["args"].get("module"), e["args"].get("module_class"))
                  for e in events(trace, "amp.op")}
    check("fully_shard bf16: the notes' modules are those the ops name",
          {n[:2] for n in want} <= op_modules, op_modules)
    text, data = summary(path)
    check("fully_shard bf16: no autocast-never-enabled (and no finding)",
          kinds(data) == [], data.get("findings"))
    check("fully_shard bf16: the summary's line per policy, both ranks "
          "folded",
          fsdp_lines(text) == ["FSDP mixed precision: param not cast, "
                               "input bf16 (1 module, on each of 2 ranks)",
                               "FSDP mixed precision: param bf16, reduce "
                               "f32, input bf16 (2 modules, on each of 2 "
                               "ranks)"], text[:1500])
    check("fully_shard bf16: summary --json's fsdp_mixed_precision",
          data.get("fsdp_mixed_precision") == [{
              "param_dtype": None, "reduce_dtype": None,
              "input_dtype": "bf16", "output_dtype": None,
              "buffer_dtype": None, "modules": 2, "processes": 2,
              "ranks": 2, "each": 1}, {
              "param_dtype": "bf16", "reduce_dtype": "f32",
              "input_dtype": "bf16", "output_dtype": None,
              "buffer_dtype": None, "modules": 4, "processes": 2,
              "ranks": 2, "each": 2}], data.get("fsdp_mixed_precision"))
    print("# fully_shard bf16: %.1f s" % (time.monotonic() - begin))


def test_fsdp2_without_low_param_dtype():
    begin = time.monotonic()
    for mode, line in (("no_policy", []),
                       ("f32", ["FSDP mixed precision: param not cast, "
                                "input f32 (1 module, on each of 2 ranks)",
                                "FSDP mixed precision: param not cast, "
                                "reduce bf16, input f32 (2 modules, on each "
                                "of 2 ranks)"])):
        trace, path, _ = traced("fully_shard %s" % mode, mode)
        if trace is None:
            continue
        text, data = summary(path)
        never = [f for f in data.get("findings", [])
                 if f["kind"] == "autocast-never-enabled"]
        check("fully_shard %s: autocast-never-enabled, on each of 2 ranks"
              % mode, kinds(data) == ["autocast-never-enabled"] and
              never[0].get("ranks") == 2, data.get("findings"))
        check("fully_shard %s: its FSDP line: %s" % (mode, line or "none"),
              fsdp_lines(text) == line and
              len(data.get("fsdp_mixed_precision", [None])) == len(line),
              (fsdp_lines(text), data.get("fsdp_mixed_precision")))
    print("# fully_shard without a low param_dtype: %.1f s"
          % (time.monotonic() - begin))


def test_fsdp1():
    begin = time.monotonic()
    trace, path, _ = traced("FSDP1 bf16", "fsdp1")
    if trace is None:
        return
    # the root holds no parameters and casts its inputs
    # (cast_root_forward_inputs); the Linears' inputs are not cast
    policy = ("bf16", "f32", None, None, None)
    want = sorted([("", "FullyShardedDataParallel", None, None, "bf16",
                    None, None),
                   ("_fsdp_wrapped_module.0", "FullyShardedDataParallel")
                   + policy,
                   ("_fsdp_wrapped_module.2", "FullyShardedDataParallel")
                   + policy])
    found = notes(trace)
    check("FSDP1 bf16: the root's and each auto-wrapped Linear's notes",
          len(found) == 2 and all(n == want for n in found.values()), found)
    text, data = summary(path)
    check("FSDP1 bf16: no autocast-never-enabled, the summary's lines",
          kinds(data) == [] and fsdp_lines(text) ==
          ["FSDP mixed precision: param not cast, input bf16 (1 module, on "
           "each of 2 ranks)",
           "FSDP mixed precision: param bf16, reduce f32 (2 modules, on "
           "each of 2 ranks)"], (data.get("findings"), fsdp_lines(text)))
    print("# FSDP1: %.1f s" % (time.monotonic() - begin))


def test_imported_before_the_bridge():
    """fully_shard taken by its name before trace() installs the bridge
    (an alias made before the wrapping): its policy is still recorded,
    FSDP's class being wrapped, not its names."""
    path = os.path.join(TMP, "api.json")
    env = dict(os.environ, PYTHONPATH=os.path.join(
        os.path.dirname(AMPTRACE), "torch"))
    p = subprocess.run([PYTHON, os.path.join(HERE, "scenario_api_fsdp.py"),
                        path, os.path.join(TMP, "api.store")],
                       capture_output=True, text=True, env=env,
                       timeout=TIMEOUT)
    found = notes(load(path)) if os.path.isfile(path) else {}
    check("FSDP imported before trace(): the policy recorded",
          p.returncode == 0 and p.stdout == "torch.bfloat16\n" and
          list(found.values()) == [[("", "FSDPSequential", "bf16", None,
                                     "bf16", None, None)]],
          (p.returncode, p.stdout, p.stderr[-1500:], found))


def test_plain_program_unchanged():
    """No FSDP, no autocast: named as before, no FSDP line or note."""
    path = os.path.join(TMP, "no_autocast.json")
    result = run([PYTHON, os.path.join(HERE, "scenario_no_autocast.py")],
                 path)
    text, data = summary(path)
    check("no FSDP, no autocast: autocast-never-enabled, no FSDP line",
          result.returncode == 0 and
          kinds(data) == ["autocast-never-enabled"] and
          not fsdp_lines(text) and data.get("fsdp_mixed_precision") == [],
          (result.stderr[-1000:], data.get("findings"), text[:1000]))


skip_unless_bridge(AMPTRACE, PYTHON,
                   "import torch.distributed as d; assert d.is_available(); "
                   "from torch.distributed.fsdp import fully_shard")
TMP = scratch("amptrace-fsdp-")
test_fsdp2_bf16()
test_fsdp2_without_low_param_dtype()
test_fsdp1()
test_imported_before_the_bridge()
test_plain_program_unchanged()
sys.exit(done())
