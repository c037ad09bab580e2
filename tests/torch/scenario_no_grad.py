# A cast made under no_grad inside a region is cached and reused after
# grad mode returns: the output then does not require grad (1.13).
import torch
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
with torch.autocast("cpu", torch.bfloat16):
    with torch.no_grad():
        layer(x)
    y = layer(x)
print("requires_grad", y.requires_grad)
