# An in-place weight update inside a region: the next use reads the stale
# cached cast (torch does not notice).
import torch
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
with torch.autocast("cpu", torch.bfloat16):
    a = layer(x)
    with torch.no_grad():
        layer.weight.mul_(2.0)
    b = layer(x)
print(a.dtype, b.dtype)
