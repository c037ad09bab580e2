"""One process of bench_torch.py: a 4-layer bf16 autocast MLP training
step (CPU) at each size, timed; prints one JSON line
{"batch/hidden": ms per step, ..., "cpu": {"batch/hidden": ms, ...}}:
wall clock, and the main thread's CPU time (less noisy on a loaded
machine: time spent waiting for a core is not in it).

usage: bench_torch_steps.py plain|traced|profiler|debugmode|floor [FLOOR]
  traced     run under `amptrace run`, which records it
  profiler   inside torch.profiler.profile(CPU, record_shapes), its exit
             (the trace's collection) included in the time
  debugmode  inside torch.utils._debug_mode.DebugMode (2.x), which records
             each op's inputs and outputs
  floor      with FLOOR's no-op RecordFunction callback (inputs and
             outputs asked for) installed: what any such observer costs"""
import contextlib
import ctypes
import json
import sys
import time

import torch

SIZES = [(8, 32, 300), (64, 256, 150), (256, 1024, 40)]
REPEATS = 3


def model_for(hidden):
    layers = []
    for i in range(4):
        layers += [torch.nn.Linear(hidden, hidden), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers[:-1])


def steps(model, optimizer, x, target, n):
    for _ in range(n):
        optimizer.zero_grad()
        with torch.autocast("cpu", torch.bfloat16):
            loss = torch.nn.functional.mse_loss(model(x).float(), target)
        loss.backward()
        optimizer.step()


def around(mode):
    """What the timed steps run inside."""
    if mode == "profiler":
        return torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU],
            record_shapes=True)
    if mode == "debugmode":
        from torch.utils._debug_mode import DebugMode
        return DebugMode(record_output=True)
    return contextlib.nullcontext()


def main(mode, floor=None):
    if mode == "floor":
        ctypes.CDLL(floor).floor_install()
    torch.manual_seed(0)
    result, cpu = {}, {}
    for batch, hidden, n in SIZES:
        model = model_for(hidden)
        optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
        x, target = torch.randn(batch, hidden), torch.randn(batch, hidden)
        steps(model, optimizer, x, target, 5)
        times, cpu_times = [], []
        for _ in range(REPEATS):
            begin, cpu_begin = time.perf_counter(), time.thread_time()
            with around(mode):
                steps(model, optimizer, x, target, n)
            times.append((time.perf_counter() - begin) * 1e3 / n)
            cpu_times.append((time.thread_time() - cpu_begin) * 1e3 / n)
        result["%d/%d" % (batch, hidden)] = sorted(times)[REPEATS // 2]
        cpu["%d/%d" % (batch, hidden)] = sorted(cpu_times)[REPEATS // 2]
    result["cpu"] = cpu
    print(json.dumps(result))


main(*sys.argv[1:3])
