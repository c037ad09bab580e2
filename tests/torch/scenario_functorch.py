# Autocast inside functorch's transforms (torch.func): each op is
# re-dispatched by the transform's layer before autocast's kernel runs.
#   grad:       autocast's two casts of a matmul under torch.func.grad
#   explicit:   the program's own x.to(bf16) under grad and autocast
#   per_sample: vmap(grad(loss)) of a Linear through functional_call
import sys

import torch
from torch.func import functional_call, grad, vmap

torch.manual_seed(0)


def matmul_loss(w, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
    return y.float().sum()


def explicit_loss(w, x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x.to(torch.bfloat16) * w.to(torch.bfloat16)
    return y.float().sum()


def per_sample():
    model = torch.nn.Linear(16, 3)
    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(params, x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = functional_call(model, params, (x.unsqueeze(0),))
        return y.float().sum()
    return vmap(grad(loss), in_dims=(None, 0))(params, torch.randn(4, 16))


case = sys.argv[1]
if case == "grad":
    g = grad(matmul_loss)(torch.randn(16, 3), torch.randn(6, 16))
elif case == "explicit":
    g = grad(explicit_loss)(torch.randn(6, 16), torch.randn(6, 16))
else:
    g = per_sample()["weight"]
print(tuple(g.shape), g.dtype)
