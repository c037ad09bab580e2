"""pytorch#179804, on the CPU: with aot_eager, the backward of a compiled
function ignores the autocast(enabled=False) inside it, which eager
honours.  Prints whether the weight gradients of eager and compiled runs
are equal.  With the argument `off`, the backward is traced with autocast
off (torch._functorch.config.backward_pass_autocast), as eager runs it.
"""
import sys

import torch
import torch._functorch.config

if sys.argv[1:] == ["off"]:
    torch._functorch.config.backward_pass_autocast = "off"

torch.manual_seed(0)
w = torch.nn.Linear(64, 64)
h = torch.randn(4, 64, dtype=torch.bfloat16, requires_grad=True)


def inner(x):
    with torch.autocast("cpu", enabled=False):
        return x.float() @ w.weight.float().T


def grad(fn):
    w.weight.grad = None
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = fn(h)
    out.sum().backward()
    return w.weight.grad.clone()


eager = grad(inner)
compiled = grad(torch.compile(inner, backend="aot_eager"))
print("gradients equal:", torch.equal(eager, compiled))
