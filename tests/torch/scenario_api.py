# The Python API: only the block is recorded, into the same format.
import sys
import torch
import amptrace_torch
layer = torch.nn.Linear(8, 8)
layer(torch.randn(2, 8))  # before: not recorded
with amptrace_torch.trace(sys.argv[1]):
    with torch.autocast("cpu", torch.bfloat16):
        layer(layer(torch.randn(2, 8)))
layer(torch.randn(2, 8))  # after: not recorded
print("done")
