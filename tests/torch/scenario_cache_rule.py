# The bridge's cast-cache rule of the torch release named in argv[2],
# forced on the installed torch, around a cast made under argv[3]
# ("no_grad" or "inference_mode"; "inference_mode_first": the trace begins
# inside it) inside a region and a second use of the
# layer after it.  From 2.11 a cast cached under no_grad is made with grad
# on, so its reuse keeps grad, and nothing is cached under inference_mode.
# Only the model's reading of the casts is checked, not what this torch did.
import sys
import torch
import amptrace_torch
from amptrace_torch import _bridge
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
inside = torch.no_grad if sys.argv[3] == "no_grad" else torch.inference_mode
if sys.argv[3] == "inference_mode_first":
    # the trace begins inside inference_mode: the bridge reads the state
    with torch.inference_mode():
        with amptrace_torch.trace(sys.argv[1]):
            _bridge.policy_table(sys.argv[2])
            with torch.autocast("cpu", torch.bfloat16):
                layer(x)
    sys.exit(0)
with amptrace_torch.trace(sys.argv[1]):
    _bridge.policy_table(sys.argv[2])  # before any op is recorded
    with torch.autocast("cpu", torch.bfloat16):
        with inside():
            layer(x)
        if sys.argv[3] == "no_grad":
            y = layer(x)
print("done")
