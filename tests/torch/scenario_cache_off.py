# cache_enabled=False: every weight cast is redone, the layer used twice
# in one region.  --once: once per region, two regions (Lightning's
# MixedPrecision plugin runs every step so): each cast costs what a
# cache's miss would.
import sys
import torch
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
if "--once" in sys.argv:
    for _ in range(2):
        with torch.autocast("cpu", torch.bfloat16, cache_enabled=False):
            y = layer(x)
else:
    with torch.autocast("cpu", torch.bfloat16, cache_enabled=False):
        y = layer(layer(x))
print(y.dtype)
