# Region names (FORMAT.md §3.4): a `with` in a function, one the program
# names (amptrace_torch.region), a decorated forward in it, checkpoint's
# recompute in backward, a `with` at the top level, one contextlib's
# ExitStack enters.  Each line number is one test_torch_bridge.py checks.
import contextlib
import torch, amptrace_torch
from torch.utils.checkpoint import checkpoint
class Block(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.fc = torch.nn.Linear(8, 8)
    def forward(self, x):
        return torch.relu(self.fc(x))
class Att(torch.nn.Module):
    def __init__(self):
        super().__init__(); self.fc = torch.nn.Linear(8, 8)
    @torch.autocast("cpu", dtype=torch.bfloat16)
    def forward(self, x):
        return self.fc(x)
b, a = Block(), Att()
opt = torch.optim.SGD(list(b.parameters()) + list(a.parameters()), lr=0.1)
def train_step(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = checkpoint(b, x, use_reentrant=False)
    with amptrace_torch.region("loss"):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = (a(y) ** 2).mean()
    loss.backward()
    opt.step()
x = torch.randn(4, 8, requires_grad=True)
train_step(x)
with torch.autocast("cpu", dtype=torch.bfloat16):
    b(x)
def contexts():  # as the HF Trainer's compute_loss_context_manager
    stack = contextlib.ExitStack()
    stack.enter_context(torch.autocast("cpu", dtype=torch.bfloat16))
    return stack
with contexts():
    b(x)
print("ok")
