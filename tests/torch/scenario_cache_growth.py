# The twin of findings_prog's `growth`: one autocast region around the
# whole loop and a new weight every step (a layer rebuilt per batch), so
# every step's weight cast stays cached until the loop ends: cache-growth.
# With --fixed, a region around each step's forward: no growth.
import contextlib
import sys

import torch

torch.manual_seed(0)
fixed = "--fixed" in sys.argv


def region():
    return torch.autocast("cpu", torch.bfloat16)


x = torch.randn(8, 16)
with contextlib.nullcontext() if fixed else region():
    for step in range(6):
        weight = torch.randn(16, 16, requires_grad=True)
        optimizer = torch.optim.SGD([weight], lr=0.1)
        with region() if fixed else contextlib.nullcontext():
            loss = torch.mm(x, weight).sum()
        loss.backward()
        optimizer.step()
print("loss %.4f" % loss.item())
