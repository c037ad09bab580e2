"""Small models for the torch.compile tests: an MLP and a transformer
block, trained a few steps under CPU bf16 autocast.

usage: models.py BACKEND [both]   (inductor, aot_eager, eager; eager
under TORCHDYNAMO_DISABLE=1; `both`: the MLP lives on while the block
trains).  Prints one line per step and model: its loss, exactly."""
import sys

import torch
import torch.nn.functional as F


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(16, 32)
        self.fc2 = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Block(torch.nn.Module):
    """Pre-norm attention and MLP, one head."""

    def __init__(self, dim=16):
        super().__init__()
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 2 * dim)
        self.down = torch.nn.Linear(2 * dim, dim)

    def forward(self, x):
        q, k, v = self.qkv(self.norm1(x)).chunk(3, dim=-1)
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        x = x + self.proj(torch.softmax(scores, dim=-1) @ v)
        return x + self.down(F.gelu(self.up(self.norm2(x))))


def train(model, x, backend, steps=2):
    torch.manual_seed(0)
    run = torch.compile(model, backend=backend)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(steps):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = run(x).float().pow(2).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        print("%s step %d loss %r" % (type(model).__name__, step,
                                      loss.item()))


if __name__ == "__main__":
    backend = sys.argv[1]
    torch.manual_seed(0)
    mlp = MLP() if sys.argv[2:] == ["both"] else None
    train(mlp or MLP(), torch.randn(8, 16), backend)
    torch.manual_seed(0)
    train(Block(), torch.randn(2, 5, 16), backend)
