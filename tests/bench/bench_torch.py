#!/usr/bin/env python3
"""The PyTorch bridge's cost, five ways: ms per training step of a 4-layer
bf16 MLP (CPU) at batch/hidden 8/32, 64/256, 256/1024, run
  plain      as is,
  traced     by `amptrace run`,
  profiler   under torch.profiler.profile(activities=[CPU],
             record_shapes=True), its exit included,
  debugmode  under torch.utils._debug_mode.DebugMode recording outputs
             (torch 2.x; "-" where the torch has none),
  floor      with a no-op RecordFunction callback asking for inputs and
             outputs (floor_observer.cpp, --floor): what torch spends
             handing any observer an op,
as ratios to plain.  Processes alternate (all five, round after round);
medians.  One intra-op thread (OMP_NUM_THREADS=1) in each.  Also the
observer's cost per recorded event ((traced - plain) per event) and the
bridge's own ((traced - floor) per event).  Exit 77 without torch or the
bridge.

usage: bench_torch.py AMPTRACE PYTHON [--floor LIB] [--rounds N]
                      [--before AMPTRACE_BEFORE]
AMPTRACE_BEFORE: another build's amptrace (e.g. of the last commit), run
in the same rounds, for a before/after comparison in one run.
Targets (issue 23): traced below the profiler and DebugMode at every size;
the bridge's share, traced - floor, at most 0.10x of plain at 64/256."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "torch"))
from tap import bridge_missing  # noqa: E402  (tests/torch/tap.py)

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "bench_torch_steps.py")
SIZES = {"8/32": 300, "64/256": 150, "256/1024": 40}  # steps, as the worker
SHARE_TARGET = 0.10
# One intra-op thread in every run: pip's torch 2.13 starts one per core,
# and on a busy 2-core machine their waits dominate (the 8/32 step's
# backward: 11 ms of CPU with two, 0.23 ms with one); Debian's 1.13 runs
# one anyway.  What is measured is the cost per op.
ONE_THREAD = dict(os.environ, OMP_NUM_THREADS="1")


def arguments():
    parser = argparse.ArgumentParser()
    parser.add_argument("amptrace")
    parser.add_argument("python")
    parser.add_argument("--floor")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before")
    return parser.parse_args()


def worker(args, mode, trace):
    cmd = [args.python, WORKER, "traced" if mode == "before" else mode]
    if mode == "floor":
        cmd.append(args.floor)
    if mode in ("traced", "before"):
        amptrace = args.before if mode == "before" else args.amptrace
        cmd = [amptrace, "run", "-q", "-o", trace, "--"] + cmd
    out = subprocess.run(cmd, capture_output=True, text=True, env=ONE_THREAD)
    if out.returncode != 0:
        raise SystemExit("bench_torch: %s failed: %s" % (mode, out.stderr))
    return json.loads(out.stdout.strip().splitlines()[-1])


def recorded_events(trace):
    """Events the traced run recorded (ops, casts, regions)."""
    with open(trace) as f:
        t = json.load(f)
    return sum(1 for e in t["traceEvents"]
               if e.get("cat") in ("amp.op", "amp.cast", "amp.scope"))


def has_debug_mode(python):
    return subprocess.run([python, "-c", "import torch.utils._debug_mode"],
                          capture_output=True).returncode == 0


def table(runs, key, version):
    """Median ms per step, and the ratios to plain, per size."""
    modes = list(runs)
    ratios = [m for m in modes if m != "plain"]
    print("%-10s %9s " % ("batch/hid", "plain ms") +
          " ".join("%9s" % m for m in ratios) + "   bridge share")
    shares = {}
    for size in SIZES:
        med = {m: statistics.median(pick(r, key)[size] for r in runs[m])
               for m in modes}
        cells = ["%8.2fx" % (med[m] / med["plain"]) for m in ratios]
        share = ((med["traced"] - med["floor"]) / med["plain"]
                 if "floor" in med else None)
        shares[size] = (med, share)
        print("%-10s %9.3f " % (size, med["plain"]) + " ".join(cells) +
              ("   %.2fx" % share if share is not None else "   -"))
    return shares


def pick(run, key):
    return run if key == "wall" else run["cpu"]


def targets(shares, version):
    """Says whether each target is met, from the CPU-time medians (on a
    shared machine the wall clock's waits swamp a 0.1x difference)."""
    for size, (med, share) in shares.items():
        for peer in ("profiler", "debugmode"):
            if peer in med:
                print("target: traced below %s at %s: %s (%.2fx vs %.2fx)"
                      % (peer, size, "met" if med["traced"] < med[peer]
                         else "NOT met", med["traced"] / med["plain"],
                         med[peer] / med["plain"]))
    med, share = shares["64/256"]
    if share is not None:
        print("target: bridge share (traced - floor) <= %.2fx of plain at "
              "64/256: %s (%.2fx)" % (SHARE_TARGET, "met" if share <=
                                      SHARE_TARGET else "NOT met", share))


def main():
    args = arguments()
    why = bridge_missing(args.amptrace, args.python)
    if why:
        print("SKIP: " + why)
        sys.exit(77)
    version = subprocess.run(
        [args.python, "-c", "import torch; print(torch.__version__)"],
        capture_output=True, text=True).stdout.strip()
    tmp = tempfile.mkdtemp(prefix="amptrace-bench-torch-")
    trace = os.path.join(tmp, "t.json")
    # In this order the last trace written is the current build's.
    modes = (["plain"] + (["before"] if args.before else []) +
             ["traced", "profiler"] +
             (["debugmode"] if has_debug_mode(args.python) else []) +
             (["floor"] if args.floor else []))
    runs = {mode: [] for mode in modes}
    for _ in range(args.rounds):
        for mode in modes:
            runs[mode].append(worker(args, mode, trace))
    print("torch %s: 4-layer bf16 MLP training step on the CPU, ms/step, "
          "median of %d interleaved rounds; ratios to plain" % (
              version, args.rounds))
    table(runs, "wall", version)
    print("the same, main thread CPU time (what a loaded machine's waits "
          "for a core leave out; the targets and costs below are judged "
          "by it):")
    shares = table(runs, "cpu", version)
    targets(shares, version)
    events = recorded_events(trace)
    steps = sum(5 + 3 * n for n in SIZES.values())  # warm-up + 3 repeats
    over = {m: sum((shares[s][0][m] - shares[s][0]["plain"]) *
                   (5 + 3 * n) for s, n in SIZES.items())
            for m in ("traced", "floor") if m in runs}
    print("events recorded per traced run: %d (%.1f per step); observer "
          "cost per event: %.0f ns" % (events, events / steps,
                                       over["traced"] * 1e6 / max(events, 1))
          + ("; the bridge's own (traced - floor): %.0f ns" % (
              (over["traced"] - over["floor"]) * 1e6 / max(events, 1))
             if "floor" in over else ""))
    os.remove(trace)
    os.rmdir(tmp)


main()
