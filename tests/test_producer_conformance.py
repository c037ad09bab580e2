#!/usr/bin/env python3
"""The producer contract (tracer/PRODUCERS.md) on both producers: libamp's
samples and the PyTorch twins (tests/torch/twin_*.py) recorded by
`amptrace run`, under torch 1.13 (PYTHON), under torch 2 when
AMPTRACE_TEST_TORCH2_PYTHON names its interpreter, and through the
bridge's pure-Python fallback; each trace checked for every invariant a
trace shows (validate_trace: FORMAT.md's, and the contract's: a cache
counter after every miss, parents and forward ops, ids, nesting, tensors
made before they are used), and for any rule a checking producer saw
broken (a `producer-contract` diag, -Dproducer_checks: a SKIP line where
the build has none).  TAP output; the torch runs are skipped (a comment
line saying why, not a check) where torch or the bridge is missing, but
the torch 2 ones fail instead under AMPTRACE_REQUIRE_TORCH2=1.

usage: test_producer_conformance.py AMPTRACE VALIDATE_TRACE SAMPLES_DIR PYTHON
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "torch"))
from tap import (bridge_missing, check, done, scratch,  # noqa: E402
                 torch2_required)

# absolute: the twins run from tests/torch
AMPTRACE, VALIDATE, SAMPLES = (os.path.abspath(a) for a in sys.argv[1:4])
PYTHON = sys.argv[4]
TORCH2 = os.environ.get("AMPTRACE_TEST_TORCH2_PYTHON")
# Whether the producers check the contract as they go (-Dproducer_checks;
# tests/meson.build says): without it no producer-contract diag can come.
PRODUCER_CHECKS = os.environ.get("AMPTRACE_TEST_PRODUCER_CHECKS") == "1"
TMP = scratch("amptrace-conformance-")

# libamp's samples, each a few steps: every recipe the dispatcher has
# (nested regions, threads, custom ops, accumulation, clipping, several
# optimizers, the whole-loop pitfall, inference, a transformer).
SAMPLES_RUN = {
    "mlp": ["mlp", "--steps", "3"],
    "mlp on cuda (emulated)": ["mlp", "--device", "cuda", "--steps", "2"],
    "nested": ["nested", "--steps", "2"],
    "whole_loop": ["whole_loop", "--steps", "6"],
    "threads": ["threads", "--steps", "2"],
    "transformer": ["transformer", "--steps", "2"],
    "accumulate": ["accumulate", "--steps", "2"],
    "clip": ["clip", "--steps", "2"], "custom": ["custom", "--steps", "2"],
    "multi": ["multi", "--steps", "2"],
    "penalty": ["penalty", "--steps", "2"],
    "roipool": ["roipool", "--steps", "2"], "infer": ["infer"],
}
TWINS = {"mlp": "2", "nested": "2", "whole_loop": "6", "threads": "2",
         "transformer": "2"}


def record(name, command, env=None):
    path = os.path.join(TMP, name + ".json")
    p = subprocess.run([AMPTRACE, "run", "-q", "-o", path, "--"] + command,
                       capture_output=True, text=True, env=env, timeout=300,
                       cwd=os.path.join(HERE, "torch"))
    return p, path


def follows_contract(what, p, path):
    """One check: the program ran, its trace holds every invariant."""
    if p.returncode != 0 or not os.path.exists(path):
        check("%s: records" % what, False, p.stderr[-800:])
        return
    v = subprocess.run([VALIDATE, path], capture_output=True, text=True)
    with open(path) as f:
        trace = json.load(f)
    broken = [e["args"]["message"] for e in trace["traceEvents"]
              if e.get("cat") == "amp.diag" and
              e["args"].get("kind") == "producer-contract"]
    ops = sum(1 for e in trace["traceEvents"] if e.get("cat") == "amp.op")
    check("%s: %d ops, every invariant its trace shows holds" % (what, ops),
          ops > 0 and v.returncode == 0, (v.stdout + v.stderr)[-1500:])
    if PRODUCER_CHECKS:
        check("%s: no rule of the contract the producer saw broken" % what,
              not broken, "\n".join(broken))


def libamp_producer():
    for label, (name, *args) in SAMPLES_RUN.items():
        program = os.path.join(SAMPLES, name)
        p, path = record("libamp_" + label.replace(" ", "_"),
                         [program] + args)
        follows_contract("libamp %s" % label, p, path)


def torch_producer(python, label, fallback=False, required=False):
    why = bridge_missing(AMPTRACE, python) if python else \
        "AMPTRACE_TEST_TORCH2_PYTHON is not set"
    env = dict(os.environ)
    if fallback:
        env["AMPTRACE_TORCH_FALLBACK"] = "1"
    for name, steps in TWINS.items():
        what = "%s twin_%s" % (label, name)
        if why and required:
            check("%s: torch 2.13 is there (AMPTRACE_REQUIRE_TORCH2=1)"
                  % what, False, why)
            continue
        if why:
            print("# skipped: %s: %s" % (what, why))
            continue
        p, path = record("%s_%s" % (label.replace(" ", "_"), name),
                         [python, "twin_%s.py" % name, steps], env)
        follows_contract(what, p, path)


if not PRODUCER_CHECKS:
    print("# SKIP no rule a producer saw broken: this build has the "
          "producers' checks compiled out (-Dproducer_checks)")
libamp_producer()
torch_producer(PYTHON, "torch 1.13")
torch_producer(PYTHON, "torch 1.13 fallback", fallback=True)
torch_producer(TORCH2, "torch 2", required=torch2_required())
torch_producer(TORCH2, "torch 2 fallback", fallback=True,
               required=torch2_required())
sys.exit(done())
