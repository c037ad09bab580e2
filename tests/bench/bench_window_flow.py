#!/usr/bin/env python3
"""What following a region under no_grad costs (window_flow.c): the same
training loop, each step evaluating one batch first, run under `amptrace
run` in two ways that record the same ops:

  eval-mode  model.eval() around the evaluation: a model.eval() window,
             nothing followed
  no-grad    the evaluation under no_grad alone: its region is undecided
             until the step ends, so every op of the step (backward and
             the optimizer's too) passes its tensor ids through the table

and untraced (the anchor).  Printed: the medians of --rounds interleaved
rounds of the main thread's CPU time per step (waiting for a core is not
in it), and the ratios: each traced way against untraced, and no-grad
against eval-mode (the following's own cost).

    bench_window_flow.py AMPTRACE PYTHON [--rounds 5] [--steps 150]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

PROGRAM = r'''
import json, sys, time
import torch
torch.manual_seed(0)
torch.set_num_threads(1)
way, steps = sys.argv[1], int(sys.argv[2])
layers = []
for _ in range(4):
    layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
model = torch.nn.Sequential(*layers[:-1])
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, target = torch.randn(64, 256), torch.randn(64, 256)

def step():
    if way == "eval-mode":
        model.eval()
    with torch.no_grad(), torch.autocast("cpu", torch.bfloat16):
        model(x).float().mean().item()
    if way == "eval-mode":
        model.train()
    opt.zero_grad()
    with torch.autocast("cpu", torch.bfloat16):
        loss = torch.nn.functional.mse_loss(model(x).float(), target)
    loss.backward()
    opt.step()

for _ in range(10):
    step()
start = time.process_time()
for _ in range(steps):
    step()
print(json.dumps({"ms": (time.process_time() - start) * 1e3 / steps}))
'''

WAYS = ("untraced", "eval-mode", "no-grad")


def one(amptrace, python, program, way, steps, scratch):
    argv = [python, program, "eval-mode" if way == "untraced" else way,
            str(steps)]
    if way != "untraced":
        argv = [amptrace, "run", "-q", "-o",
                os.path.join(scratch, way + ".json"), "--"] + argv
    env = dict(os.environ, OMP_NUM_THREADS="1")
    p = subprocess.run(argv, capture_output=True, text=True, env=env,
                       timeout=900)
    if p.returncode != 0:
        sys.exit("bench_window_flow: %s failed (%d): %s"
                 % (way, p.returncode, p.stderr[-500:]))
    return json.loads(p.stdout.strip().splitlines()[-1])["ms"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("amptrace")
    parser.add_argument("python")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=150)
    args = parser.parse_args()
    times = {way: [] for way in WAYS}
    with tempfile.TemporaryDirectory(prefix="bench-window-flow-") as scratch:
        program = os.path.join(scratch, "loop.py")
        with open(program, "w") as f:
            f.write(PROGRAM)
        for _ in range(args.rounds):
            for way in WAYS:
                times[way].append(one(args.amptrace, args.python, program,
                                      way, args.steps, scratch))
    median = {way: statistics.median(t) for way, t in times.items()}
    print("main-thread CPU per step, median of %d interleaved rounds "
          "(%d steps, 4 bf16 Linear 256, batch 64):" % (args.rounds,
                                                       args.steps))
    for way in WAYS:
        print("  %-10s %7.3f ms  %5.2fx untraced" % (
            way, median[way], median[way] / median["untraced"]))
    print("  no-grad / eval-mode (following a region's results): %.3fx"
          % (median["no-grad"] / median["eval-mode"]))


if __name__ == "__main__":
    main()
