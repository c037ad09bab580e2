# nanoGPT's context on a CPU: `ctx = nullcontext() if device_type == 'cpu'
# else torch.amp.autocast(...)`: with dtype 'bfloat16' asked for, nothing
# is autocast.  With "gpu-like", the autocast context nanoGPT uses on a
# GPU, on the CPU: autocast enabled.
import sys
from contextlib import nullcontext

import torch

dtype = "bfloat16"
ptdtype = {"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype]
device_type = "cuda" if "gpu-like" in sys.argv else "cpu"
ctx = nullcontext() if device_type == "cpu" else \
    torch.autocast(device_type="cpu", dtype=ptdtype)
model = torch.nn.Linear(8, 4)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    with ctx:
        loss = model(torch.randn(2, 8)).square().mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
print(loss.dtype)
