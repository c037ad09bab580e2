#!/usr/bin/env python3
"""The PyTorch bridge's cost: ms per training step of a 4-layer bf16 MLP
(CPU) at batch/hidden 8/32, 64/256, 256/1024, run plain, traced by
`amptrace run`, and under torch.profiler.profile(activities=[CPU],
record_shapes=True) including the profiler's exit, as ratios to plain.
Processes alternate (plain, traced, profiler) several rounds; medians.
Also the observer's cost per recorded event: (traced - plain) time per
step over the trace's events per step.  Exit 77 without torch or bridge.

usage: bench_torch.py AMPTRACE PYTHON [ROUNDS [AMPTRACE_BEFORE]]
AMPTRACE_BEFORE: another build's amptrace (e.g. of the last commit), run
in the same rounds, for a before/after comparison in one run.
Targets (issue 11): traced <= 1.5x, 1.15x, 1.05x and below the profiler."""
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
BEFORE = sys.argv[4] if len(sys.argv) > 4 else None
HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "bench_torch_steps.py")
TARGETS = {"8/32": 1.5, "64/256": 1.15, "256/1024": 1.05}


def worker(mode, trace):
    cmd = [PYTHON, WORKER, "traced" if mode == "before" else mode]
    if mode in ("traced", "before"):
        amptrace = BEFORE if mode == "before" else AMPTRACE
        cmd = [amptrace, "run", "-q", "-o", trace, "--"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def events_per_step(trace):
    """Recorded events (ops, casts, regions) per step, from a trace of
    the same program with one known step count per size."""
    with open(trace) as f:
        t = json.load(f)
    return sum(1 for e in t["traceEvents"]
               if e.get("cat") in ("amp.op", "amp.cast", "amp.scope"))


def main():
    why = bridge_missing(AMPTRACE, PYTHON)
    if why:
        print("SKIP: " + why)
        sys.exit(77)
    tmp = tempfile.mkdtemp(prefix="amptrace-bench-torch-")
    trace = os.path.join(tmp, "t.json")
    # In this order the last trace written is the current build's.
    modes = ["plain"] + (["before"] if BEFORE else []) + ["traced",
                                                          "profiler"]
    runs = {mode: [] for mode in modes}
    for _ in range(ROUNDS):
        for mode in modes:
            runs[mode].append(worker(mode, trace))
    total_events = events_per_step(trace)
    # steps per traced process: (5 warm-up + 3 x n) per size
    total_steps = sum(5 + 3 * n for n in (300, 150, 40))
    print("4-layer bf16 MLP training step on the CPU, ms/step (median of "
          "%d rounds)" % ROUNDS)
    print("%-10s %9s %9s %9s %8s %8s %7s" % ("batch/hid", "plain", "traced",
          "profiler", "traced", "profiler", "target"))
    overhead_ms = 0.0
    for size, target in TARGETS.items():
        med = {m: statistics.median(r[size] for r in runs[m]) for m in runs}
        n = {"8/32": 300, "64/256": 150, "256/1024": 40}[size]
        overhead_ms += (med["traced"] - med["plain"]) * (5 + 3 * n)
        print("%-10s %9.3f %9.3f %9.3f %7.2fx %7.2fx %6.2fx" % (
            size, med["plain"], med["traced"], med["profiler"],
            med["traced"] / med["plain"], med["profiler"] / med["plain"],
            target) + ("   before: %.3f ms, %.2fx" % (
                med["before"], med["before"] / med["plain"])
                       if BEFORE else ""))
    print("the same, main thread CPU time (what a loaded machine's waits "
          "for a core leave out):")
    for size, target in TARGETS.items():
        cpu = {m: statistics.median(r["cpu"][size] for r in runs[m])
               for m in runs}
        print("%-10s %9.3f %9.3f %9.3f %7.2fx %7.2fx %6.2fx" % (
            size, cpu["plain"], cpu["traced"], cpu["profiler"],
            cpu["traced"] / cpu["plain"], cpu["profiler"] / cpu["plain"],
            target) + ("   before: %.3f ms, %.2fx" % (
                cpu["before"], cpu["before"] / cpu["plain"])
                       if BEFORE else ""))
    print("events recorded per traced run: %d (%.1f per step); observer "
          "cost per event: %.0f ns" % (
              total_events, total_events / total_steps,
              overhead_ms * 1e6 / max(total_events, 1)))
    os.remove(trace)
    os.rmdir(tmp)


main()
