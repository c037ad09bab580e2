# os.abort() in the middle of a run: the trace still loads.
import os
import torch
layer = torch.nn.Linear(8, 8)
with torch.autocast("cpu", torch.bfloat16):
    layer(torch.randn(2, 8))
    os.abort()
