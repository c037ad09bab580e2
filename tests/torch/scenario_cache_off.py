# cache_enabled=False: every weight cast is redone.
import torch
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
with torch.autocast("cpu", torch.bfloat16, cache_enabled=False):
    y = layer(layer(x))
print(y.dtype)
