"""libamp against PyTorch on the same training step, and what `amptrace
run` costs the whole process, in one run:
  1. samples/mlp (--layers 4, cpu bf16 autocast, GradScaler, SGD with
     momentum) against tests/bench/mlp_torch.py, the same model and step
     in PyTorch on one thread, at batch/hidden 8/32, 64/256, 256/1024 and
     512/2048: each side's median ms/step (after warm-up), ratio
     libamp / PyTorch per round, of wall time and (second, less disturbed
     by other processes on a busy machine) of the thread's CPU time;
  2. wall time of the mlp process run directly and under `amptrace run`
     (its defaults: value checks on) at 8/32 x 2000 steps and 64/256 x 200
     steps, ratio traced / plain per round;
  3. each side's losses in the last round: a benchmark must train stably
     (no loss over 1.5x the first, the last below the first), else it
     says which run did not and exits 1.
Runs alternate (libamp, PyTorch, traced, plain, ...) so load from other
processes falls on both sides; each ratio printed is the median of
--rounds rounds, with the per-round ratios after it.  Without a Python
that imports torch (python3-torch) it says so and exits 77 (skip)."""
import argparse
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

SIZES = [(8, 32, 2000), (64, 256, 200), (256, 1024, 30), (512, 2048, 10)]
TRACED = [(8, 32, 2000), (64, 256, 200)]
LAYERS = 4
# Both sides get the sample's learning rate: mlp_torch.py's own default
# (0.05) diverges at 8/32 (loss up to ~300), and a diverging run is not
# the work being compared (its momentum buffers decay through subnormals).
LR = "0.01"
MEDIAN = re.compile(r"^median ms/step ([0-9.]+) \(cpu ([0-9.]+);", re.M)
LOSS = re.compile(r"^step \d+ loss (\S+)$", re.M)
# A run "trains" when no step's loss rises above the first by more than
# this factor and the last loss is finite and below the first.
UNSTABLE_RISE = 1.5


def torch_python():
    """A Python that imports torch: AMP_BENCH_PYTHON, Debian's, ours."""
    candidates = [os.environ.get("AMP_BENCH_PYTHON"), "/usr/bin/python3",
                  sys.executable]
    for python in candidates:
        if not python or not os.path.exists(python):
            continue
        probe = subprocess.run([python, "-c", "import torch"],
                               capture_output=True)
        if probe.returncode == 0:
            return python
    return None


def median_ms(command):
    """(wall, cpu) median ms/step printed by the sample or mlp_torch.py,
    and the per-step losses it printed."""
    out = subprocess.run(command, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_mlp: {' '.join(command)} failed:\n{out.stderr}")
    found = MEDIAN.search(out.stdout)
    if not found:
        sys.exit(f"bench_mlp: no median line from {' '.join(command)}")
    losses = [float(v) for v in LOSS.findall(out.stdout)]
    return float(found.group(1)), float(found.group(2)), losses


def training(losses):
    """'first -> last (max M)', and whether that run trained stably."""
    if not losses:
        return "no losses printed", False
    first, last, top = losses[0], losses[-1], max(losses)
    stable = (math.isfinite(last) and last < first and
              top <= UNSTABLE_RISE * first)
    return f"{first:.4f} -> {last:.4f} (max {top:.4f})", stable


def wall_s(command):
    begin = time.perf_counter()
    out = subprocess.run(command, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - begin
    if out.returncode != 0:
        sys.exit(f"bench_mlp: {' '.join(command)} failed:\n{out.stderr}")
    return elapsed


def shape_flags(batch, hidden, steps):
    return ["--batch", str(batch), "--hidden", str(hidden), "--layers",
            str(LAYERS), "--steps", str(steps), "--lr", LR]


def describe(ratios):
    return f"{statistics.median(ratios):.2f}x (rounds: " + \
        ", ".join(f"{r:.2f}" for r in ratios) + ")"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--mlp", required=True)
    parser.add_argument("--amptrace", required=True)
    parser.add_argument("--torch-script", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    python = torch_python()
    if not python:
        print("SKIP: no Python here imports torch (install python3-torch); "
              "the libamp/PyTorch comparison needs it")
        return 77
    env_note = os.environ.get("AMP_NUM_THREADS", "1 (default)")
    print(f"mlp --layers {LAYERS} --lr {LR}, cpu bf16; PyTorch via {python}, "
          "1 thread; "
          f"libamp AMP_NUM_THREADS={env_note}")
    print(f"load average at start: {os.getloadavg()[0]:.2f}")

    ms = {size: ([], []) for size in SIZES}
    traced = {size: [] for size in TRACED}
    with tempfile.TemporaryDirectory() as scratch:
        trace = os.path.join(scratch, "trace.json")
        for _ in range(args.rounds):
            for size in SIZES:
                flags = shape_flags(*size)
                ms[size][0].append(median_ms([args.mlp] + flags))
                ms[size][1].append(median_ms(
                    [python, args.torch_script] + flags))
            for size in TRACED:
                flags = shape_flags(*size)
                traced_s = wall_s([args.amptrace, "run", "-q", "-o", trace,
                                   "--", args.mlp] + flags)
                plain_s = wall_s([args.mlp] + flags)
                traced[size].append(traced_s / plain_s)

    for clock, label in ((0, "wall"), (1, "thread CPU")):
        print(f"\nMLP training step, libamp / PyTorch ({label} time, median "
              "ms/step of each side)")
        for size in SIZES:
            ours = [m[clock] for m in ms[size][0]]
            theirs = [m[clock] for m in ms[size][1]]
            ratios = [a / b for a, b in zip(ours, theirs)]
            print(f"  {size[0]:>3}/{size[1]:<4}  libamp "
                  f"{statistics.median(ours):8.3f} ms  torch "
                  f"{statistics.median(theirs):8.3f} ms  ratio "
                  f"{describe(ratios)}")
    print("\nTraining (loss, last round): a benchmark must train stably")
    unstable = 0
    for size in SIZES:
        for side, label in ((0, "libamp"), (1, "torch")):
            text, stable = training(ms[size][side][-1][2])
            unstable += not stable
            print(f"  {size[0]:>3}/{size[1]:<4}  {label:<6} {text}"
                  f"{'' if stable else '  UNSTABLE'}")
    print("\n`amptrace run` whole process, traced / plain wall time")
    for size in TRACED:
        print(f"  {size[0]:>3}/{size[1]:<4} x {size[2]:>4} steps  "
              f"{describe(traced[size])}")
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    if unstable:
        print(f"bench_mlp: {unstable} run(s) did not train stably")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
