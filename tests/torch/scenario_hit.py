# The second use of a layer in one region reuses its cached weight casts.
import torch
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
with torch.autocast("cpu", torch.bfloat16):
    y = layer(layer(x))
print(y.dtype)
