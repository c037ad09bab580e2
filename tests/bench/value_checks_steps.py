"""One traced training run for bench_value_checks.py: a 4-layer MLP
(Linear + ReLU, hidden -> hidden ... -> 10) under CPU autocast in DTYPE
(bf16, or f16 with a GradScaler("cpu"), torch 2.x), SGD, at BATCH/HIDDEN,
one intra-op thread.  Prints one JSON line: the median ms per step after a
3-step warm-up, by the main thread's CPU time (the machine's other load
moves the wall clock more than the checks cost).

usage: value_checks_steps.py BATCH HIDDEN STEPS bf16|f16"""
import json
import statistics
import sys
import time

import torch

WARMUP = 3


def main():
    batch, hidden, steps = (int(a) for a in sys.argv[1:4])
    dtype = {"bf16": torch.bfloat16, "f16": torch.float16}[sys.argv[4]]
    torch.set_num_threads(1)
    torch.manual_seed(0)
    layers = []
    for index in range(4):
        layers.append(torch.nn.Linear(hidden, 10 if index == 3 else hidden))
        if index < 3:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    scaler = torch.amp.GradScaler("cpu") if dtype == torch.float16 else None
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for _ in range(steps + WARMUP):
        data = torch.randn(batch, hidden)
        target = torch.randint(0, 10, (batch,))
        begin = time.thread_time()
        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=dtype):
            loss = loss_fn(model(data), target)
        if scaler:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        times.append((time.thread_time() - begin) * 1e3)
    print(json.dumps({"ms": statistics.median(times[WARMUP:])}))


if __name__ == "__main__":
    main()
