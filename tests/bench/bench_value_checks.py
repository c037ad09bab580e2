#!/usr/bin/env python3
"""The cost of the bridge's value checks (issue 26): ms per training step
of a 4-layer MLP under CPU autocast, traced by `amptrace run` with value
checks on (the default) and off (--no-value-checks), at batch/hidden
4/16 (dispatch-bound), 64/256 and 256/1024, bf16 and (torch 2.x) f16
with a GradScaler.  Two more modes send the host tensors down the path a
GPU's take (AMPTRACE_TEST_QUEUED_VALUES): "torch", reduced by torch's ops
where the op ends and read once per step (on the CPU that costs torch's
dispatch per op, the stand-in for a GPU's launches, plus its element
loops), and "module", the CUDA module's one pass per check, computed on
the host.  The columns say how few ops the checks take where tensors are
small, not what a GPU pays for large ones (no target).  The runs
alternate between the modes within each round, for every size and dtype;
medians of the rounds, ratios to off.  Target: on at most 1.10x at
64/256.  Exit 77 without torch or the bridge.

usage: bench_value_checks.py AMPTRACE PYTHON [ROUNDS]"""
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
WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                      "value_checks_steps.py")
# steps per run (f16 GEMMs on a CPU without f16 arithmetic are slow)
STEPS = {("4/16", "bf16"): 200, ("4/16", "f16"): 100,
         ("64/256", "bf16"): 60, ("64/256", "f16"): 60,
         ("256/1024", "bf16"): 20, ("256/1024", "f16"): 4}
SIZES = ("4/16", "64/256", "256/1024")
TARGET = {"64/256": 1.10}


MODES = ("off", "on", "torch", "module")
QUEUED = {"torch": "torch", "module": "1"}


def run(size, dtype, mode, trace):
    batch, hidden = size.split("/")
    cmd = [AMPTRACE, "run", "-q", "-o", trace] + \
        (["--no-value-checks"] if mode == "off" else []) + \
        ["--", PYTHON, WORKER, batch, hidden, str(STEPS[(size, dtype)]), dtype]
    env = dict(os.environ, OMP_NUM_THREADS="1",
               AMPTRACE_TEST_QUEUED_VALUES=QUEUED.get(mode, "0"))
    out = subprocess.run(cmd, capture_output=True, text=True, check=True,
                         env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])["ms"]


def main():
    why = bridge_missing(AMPTRACE, PYTHON)
    if why:
        print("SKIP: " + why)
        sys.exit(77)
    major = subprocess.run([PYTHON, "-c", "import torch; print(torch."
                            "__version__.split('.')[0])"],
                           capture_output=True, text=True).stdout.strip()
    dtypes = ["bf16"] + (["f16"] if major != "1" else [])
    ms = {}
    with tempfile.TemporaryDirectory(prefix="amptrace-bench-vc-") as tmp:
        trace = os.path.join(tmp, "t.json")
        for _ in range(ROUNDS):
            for size in SIZES:
                for dtype in dtypes:
                    for mode in MODES:
                        ms.setdefault((size, dtype, mode), []).append(
                            run(size, dtype, mode, trace))
    print("value checks of the PyTorch bridge: ms per training step (main "
          "thread CPU time), median of %d interleaved rounds, %s" % (
              ROUNDS, PYTHON))
    print("%-10s %-5s %10s %10s %7s %7s %10s %7s %10s %7s" % (
        "batch/hid", "dtype", "checks off", "checks on", "ratio", "target",
        "torch", "ratio", "module", "ratio"))
    failed = False
    for size in SIZES:
        for dtype in dtypes:
            off, on, torch_ops, module = (
                statistics.median(ms[(size, dtype, mode)]) for mode in MODES)
            target = TARGET.get(size)
            failed |= bool(target) and on / off > target
            print("%-10s %-5s %10.3f %10.3f %6.2fx %7s %10.3f %6.2fx "
                  "%10.3f %6.2fx" % (
                      size, dtype, off, on, on / off,
                      "%.2fx" % target if target else "-", torch_ops,
                      torch_ops / off, module, module / off))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
