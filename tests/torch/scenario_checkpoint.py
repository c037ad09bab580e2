# Activation checkpointing under bf16 autocast (test_torch_bridge.py's
# test_checkpoint): blocks checkpointed the reentrant way, the
# non-reentrant way (which torch 2.1+ stops as soon as backward has the
# tensors it needs, by an exception it raises through an op and catches)
# and by checkpoint_sequential, trained for two steps; then an op that
# really fails, caught by the program, right after a stopped recompute;
# then a Function's backward, open while its saved tensors' recompute
# ran and stopped, that really fails right after it.
import torch
from torch.utils.checkpoint import checkpoint, checkpoint_sequential

# torch 1.x's checkpoint_sequential takes no use_reentrant (and is
# reentrant); torch 2's warns unless it is given.
SEQUENTIAL = {} if torch.__version__.startswith("1.") else {
    "use_reentrant": False}
torch.manual_seed(0)
blocks = torch.nn.Sequential(*[torch.nn.Sequential(
    torch.nn.Linear(8, 8), torch.nn.GELU(), torch.nn.Tanh())
    for _ in range(4)])
head = torch.nn.Linear(8, 2)
opt = torch.optim.SGD(list(blocks.parameters()) + list(head.parameters()),
                      lr=0.1)
x = torch.randn(4, 8, requires_grad=True)
for step in range(2):
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = checkpoint(blocks[0], x, use_reentrant=True)
        h = checkpoint(blocks[1], h, use_reentrant=False)
        h = checkpoint_sequential(blocks[2:], 2, h, **SEQUENTIAL)
        loss = head(h).float().pow(2).mean()
    loss.backward()
    opt.step()
    print("loss %.17g" % loss.item())
try:
    torch.mm(torch.ones(2, 3), torch.ones(2, 3))
except RuntimeError:
    print("caught")


class Unpacks(torch.autograd.Function):
    @staticmethod
    def forward(ctx, h):
        ctx.save_for_backward(h)
        return h * 2

    @staticmethod
    def backward(ctx, grad):
        ctx.saved_tensors  # recomputes the block, stopped once saved
        raise ValueError("the backward fails")


with torch.autocast("cpu", dtype=torch.bfloat16):
    y = checkpoint(lambda h: Unpacks.apply(blocks[0](h)), x,
                   use_reentrant=False)
try:
    y.float().sum().backward()
except ValueError:
    print("caught in backward")
