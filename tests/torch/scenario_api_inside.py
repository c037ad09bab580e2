# The Python API inside an autocast region opened before recording: ops
# run under autocast at the bridge's depth 0, with no region recorded;
# that is no policy-divergence.
import sys
import torch
import amptrace_torch
x, w = torch.randn(2, 8), torch.randn(8, 8)
with torch.autocast("cpu", torch.bfloat16):
    with amptrace_torch.trace(sys.argv[1]):
        y = torch.mm(x, w)
print(y.dtype)
