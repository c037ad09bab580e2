# PyTorch twin of samples/whole_loop.c: autocast around the whole loop
# for the first third of the steps (backward and optimizer step inside
# the region, so the cast cache hands out stale weights), then around
# forward + loss only.  usage: twin_whole_loop.py [STEPS]
import sys

import torch
from twin_common import batch, mlp, scaler, sgd, train_step

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
torch.manual_seed(10)
model = mlp(64, 3)
optimizer, grad_scaler = sgd(model.parameters()), scaler()
pitfall = max(steps // 3, 1)


def step(own_region):
    x, target = batch(32, 64)
    optimizer.zero_grad()
    if own_region:
        with torch.autocast("cpu", torch.bfloat16):
            loss = torch.nn.functional.cross_entropy(model(x), target)
    else:
        loss = torch.nn.functional.cross_entropy(model(x), target)
    train_step(loss, optimizer, grad_scaler)
    return loss.item()


print("# autocast around the whole loop (%d steps)" % pitfall)
with torch.autocast("cpu", torch.bfloat16):
    for i in range(1, pitfall + 1):
        print("step %d loss %.4f" % (i, step(False)))
print("# autocast around forward and loss only")
for i in range(pitfall + 1, steps + 1):
    print("step %d loss %.4f" % (i, step(True)))
