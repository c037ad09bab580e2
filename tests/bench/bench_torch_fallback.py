#!/usr/bin/env python3
"""The pure-Python fallback's cost (tracer/torch/amptrace_torch/_modes.py):
ms per training step of the 4-layer bf16 MLP of bench_torch_steps.py at
batch/hidden 8/32, 64/256, 256/1024, run plain, traced by the C++
observer and traced by the fallback (AMPTRACE_TORCH_FALLBACK=1), as
ratios to plain and fallback/observer.  Processes alternate (plain,
observer, fallback) several rounds; medians.  Exit 77 without torch or
bridge.

usage: bench_torch_fallback.py AMPTRACE PYTHON [ROUNDS]"""
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "torch"))
from tap import bridge_missing  # noqa: E402  (tests/torch/tap.py)

AMPTRACE, PYTHON = sys.argv[1:3]
ROUNDS = int(sys.argv[3]) if len(sys.argv) > 3 else 3
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "bench_torch_steps.py")
MODES = ("plain", "observer", "fallback")


def worker(mode, trace):
    cmd = [PYTHON, WORKER, "plain" if mode == "plain" else "traced"]
    env = dict(os.environ)
    env.pop("AMPTRACE_TORCH_FALLBACK", None)
    if mode != "plain":
        cmd = [AMPTRACE, "run", "-q", "-o", trace, "--"] + cmd
    if mode == "fallback":
        env["AMPTRACE_TORCH_FALLBACK"] = "1"
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    why = bridge_missing(AMPTRACE, PYTHON)
    if why:
        print("SKIP: " + why)
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="amptrace-bench-fallback-")
    trace = os.path.join(tmp, "t.json")
    runs = {m: [] for m in MODES}
    for _ in range(ROUNDS):
        for mode in MODES:
            runs[mode].append(worker(mode, trace))
    print("4-layer bf16 MLP training step on the CPU, ms/step (median of "
          "%d rounds)" % ROUNDS)
    print("%-10s %9s %9s %9s %9s %9s %9s" % (
        "batch/hid", "plain", "observer", "fallback", "obs/plain",
        "fb/plain", "fb/obs"))
    for size in (k for k in runs["plain"][0] if k != "cpu"):
        med = {m: statistics.median(r[size] for r in runs[m]) for m in MODES}
        print("%-10s %9.3f %9.3f %9.3f %8.2fx %8.2fx %8.2fx" % (
            size, med["plain"], med["observer"], med["fallback"],
            med["observer"] / med["plain"], med["fallback"] / med["plain"],
            med["fallback"] / med["observer"]))
    os.remove(trace)
    os.rmdir(tmp)


main()
