"""A compile that fails: fullgraph=True on a function that breaks the
graph.  The program's exception and exit status are its own."""
import torch


def f(x):
    print("breaks the graph")
    return x * 2


torch.compile(f, fullgraph=True, backend="aot_eager")(torch.randn(3))
