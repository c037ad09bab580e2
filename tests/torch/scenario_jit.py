# A scripted function with autocast inside: the JIT applies it.
import torch
@torch.jit.script
def f(x, w):
    with torch.autocast("cpu", torch.bfloat16):
        return torch.mm(x, w)
x, w = torch.randn(2, 8), torch.randn(8, 8)
for _ in range(3):
    y = f(x, w)
print(y.dtype)
