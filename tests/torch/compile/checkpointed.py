"""Activation checkpointing inside a compiled function, under bf16
autocast: the partitioner recomputes the checkpointed region's forward,
autocast's casts included, in the backward graph.  Prints the output's
dtype and the first layer's weight gradient."""
import torch
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
block = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU(),
                            torch.nn.Linear(8, 8), torch.nn.Tanh())


@torch.compile
def f(x):
    return checkpoint(block, x, use_reentrant=False)


x = torch.randn(4, 8, requires_grad=True)
with torch.autocast("cpu", dtype=torch.bfloat16):
    y = f(x)
y.float().sum().backward()
print(y.dtype, block[0].weight.grad.double().sum().item())
