# PyTorch twin of samples/mlp.c: the typical loop (autocast around
# forward + loss, scaler.scale(loss).backward(), scaler.step, update);
# 3 linear layers of width 64, cross entropy.
# usage: twin_mlp.py [STEPS] [--cache-off]  (--cache-off: a real change in
# cast behaviour, which `amptrace diff` against the sample must report)
import sys

import torch
from twin_common import batch, mlp, scaler, sgd, train_step

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
torch.manual_seed(1)
model = mlp(64, 3)
optimizer, grad_scaler = sgd(model.parameters()), scaler()
for step in range(1, steps + 1):
    x, target = batch(32, 64)
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.bfloat16,
                        cache_enabled="--cache-off" not in sys.argv):
        loss = torch.nn.functional.cross_entropy(model(x), target)
    train_step(loss, optimizer, grad_scaler)
    print("step %d loss %.4f" % (step, loss.item()))
