# The bridge's cast-cache rule of the torch release named in argv[2],
# forced on the installed torch: from 2.11 a cast cached under no_grad is
# made with grad on, so its reuse keeps grad (before, it did not).  Only
# the model's reading of the hits is checked, not what this torch did.
import sys
import torch
import amptrace_torch
from amptrace_torch import _bridge
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
with amptrace_torch.trace(sys.argv[1]):
    _bridge.policy_table(sys.argv[2])  # before any op is recorded
    with torch.autocast("cpu", torch.bfloat16):
        with torch.no_grad():
            layer(x)
        y = layer(x)
print("requires_grad", y.requires_grad)
