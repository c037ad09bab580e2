# A nested enabled=False region runs its ops in f32, then bf16 again.
import torch
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
with torch.autocast("cpu", torch.bfloat16):
    a = layer(x)
    with torch.autocast("cpu", enabled=False):
        b = layer(x)
    c = layer(x)
print(a.dtype, b.dtype, c.dtype)
