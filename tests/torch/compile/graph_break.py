"""A graph break inside an autocast region: Dynamo splits the region in
two graphs and runs what breaks it eagerly, under autocast."""
import torch

torch.manual_seed(0)


def f(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
        print("breaks the graph")
        z = y @ w
    return z.float().sum()


x, w = torch.randn(4, 8), torch.randn(8, 8, requires_grad=True)
print("loss", torch.compile(f, backend="aot_eager")(x, w).item())
