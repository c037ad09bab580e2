# Autocast as a decorator: each call of the function is a region.
import torch


@torch.autocast("cpu", dtype=torch.bfloat16)
def project(x, w):
    return torch.mm(x, w)


x, w = torch.randn(2, 8), torch.randn(8, 8)
print("out", project(x, w).dtype, project(x, w).dtype)
print("outside", torch.mm(x, w).dtype)
