"""torch.compile's other ways of being called: mode="reduce-overhead"
and fullgraph=True.  Prints the results, exactly."""
import torch

torch.manual_seed(0)


def f(x, w):
    return torch.relu(x @ w).sum(-1)


x, w = torch.randn(4, 8), torch.randn(8, 8)
with torch.autocast("cpu", dtype=torch.bfloat16):
    for options in ({"mode": "reduce-overhead"}, {"fullgraph": True}):
        out = torch.compile(f, **options)(x, w)
        print(options, out.dtype, out.float().tolist())
