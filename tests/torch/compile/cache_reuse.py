"""One small function compiled by inductor under bf16 autocast, run
twice over one inductor cache by test_compile's cache case.  Prints the
result's bits, exactly."""
import torch

torch.manual_seed(0)
f = torch.compile(lambda x, w: torch.relu(x @ w))
x, w = torch.randn(4, 4), torch.randn(4, 4)
with torch.autocast("cpu", dtype=torch.bfloat16):
    y = f(x, w)
print(y.dtype, y.view(torch.int16).flatten().tolist())
