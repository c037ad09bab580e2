# Tensor subclasses under autocast, traced: a subclass through a layer,
# and as_subclass.  Prints what the plain run prints (dtype, type, sum).
import torch


class Tagged(torch.Tensor):
    pass


torch.manual_seed(0)
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8).as_subclass(Tagged)
with torch.autocast("cpu", torch.bfloat16):
    y = layer(x)
print(type(y).__name__, y.dtype, "%.4f" % y.float().sum().item())
