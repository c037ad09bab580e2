"""The mlp sample (samples/mlp.c) written in PyTorch, doing the same work:
--layers Linear layers (hidden -> hidden ... -> 10 classes) with ReLU
between, f32 master weights and bias initialised U(-1/sqrt(fan_in),
1/sqrt(fan_in)), cross entropy (mean), SGD(lr, momentum=0.9) under
autocast(cpu, bf16), and the GradScaler arithmetic the sample runs:
scale the loss by the scale (65536), backward, unscale every gradient
with a non-finite check, step only when all are finite, update the scale
(growth 2 every 2000 clean steps, backoff 0.5).  PyTorch 1.13's
GradScaler is CUDA-only, so that arithmetic is spelled out here with the
same tensor ops.  One thread, like libamp's default.

Prints `step N loss X` per step and `median ms/step X (cpu Y; ...)` over
the steps after a 3-step warm-up, wall clock and thread CPU time, timed
like the sample (the batch is drawn before the clocks start)."""
import argparse
import math
import statistics
import time

import torch

WARMUP = 3
CLASSES = 10


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--quiet", action="store_true",
                        help="only the median line")
    args = parser.parse_args()
    torch.set_num_threads(1)
    gen = torch.Generator().manual_seed(args.seed)

    layers = []
    for index in range(args.layers):
        fan_out = CLASSES if index == args.layers - 1 else args.hidden
        bound = 1.0 / math.sqrt(args.hidden)
        linear = torch.nn.Linear(args.hidden, fan_out)
        with torch.no_grad():
            linear.weight.uniform_(-bound, bound, generator=gen)
            linear.bias.uniform_(-bound, bound, generator=gen)
        layers.append(linear)
        if index + 1 < args.layers:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    params = list(model.parameters())
    optimizer = torch.optim.SGD(params, lr=args.lr, momentum=0.9)
    loss_fn = torch.nn.CrossEntropyLoss()
    centers = torch.randn(CLASSES, args.hidden, generator=gen)

    scale = torch.full((), 65536.0)
    growth_tracker = 0
    times, cpu_times = [], []
    for step in range(1, args.steps + 1):
        target = torch.randint(0, CLASSES, (args.batch,), generator=gen)
        data = centers[target] + 0.7 * torch.randn(
            args.batch, args.hidden, generator=gen)
        begin, cpu_begin = time.perf_counter(), time.thread_time()

        optimizer.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = loss_fn(model(data), target)
        (loss * scale).backward()
        inv_scale = scale.double().reciprocal().float()
        found_inf = torch.zeros(())
        for p in params:
            found_inf = torch.maximum(
                found_inf, (~torch.isfinite(p.grad)).any().float())
            p.grad.mul_(inv_scale)
        if found_inf.item() == 0:
            optimizer.step()
            growth_tracker += 1
            if growth_tracker == 2000:
                scale.mul_(2.0)
                growth_tracker = 0
        else:
            scale.mul_(0.5)
            growth_tracker = 0

        times.append((time.perf_counter() - begin) * 1e3)
        cpu_times.append((time.thread_time() - cpu_begin) * 1e3)
        if not args.quiet:
            print(f"step {step} loss {loss.item():.4f}")
    print(f"median ms/step {after_warmup_median(times):.3f} (cpu "
          f"{after_warmup_median(cpu_times):.3f}; torch {torch.__version__}, "
          f"{len(after_warmup(times))} steps after warm-up)")


def after_warmup(values):
    return values[WARMUP:] if len(values) > WARMUP else values


def after_warmup_median(values):
    return statistics.median(after_warmup(values))

if __name__ == "__main__":
    main()
