"""A cast the partitioner recomputes in the backward on its own, with no
checkpoint: a backend of AOTAutograd's with the min-cut partitioner
saves the bf16 output of linear rather than its f32 conversion, which
sin's backward needs, and converts it again there.  Prints the output's
dtype and the weight's gradient."""
import torch
from functorch.compile import make_boxed_func, \
    min_cut_rematerialization_partition
from torch._dynamo.backends.common import aot_autograd

torch.manual_seed(0)
lin = torch.nn.Linear(8, 8)
min_cut = aot_autograd(fw_compiler=lambda gm, _: make_boxed_func(gm),
                       bw_compiler=lambda gm, _: make_boxed_func(gm),
                       partition_fn=min_cut_rematerialization_partition)


@torch.compile(backend=min_cut)
def f(x):
    return lin(x).float().sin()


x = torch.randn(4, 8, requires_grad=True)
with torch.autocast("cpu", dtype=torch.bfloat16):
    y = f(x)
y.sum().backward()
print(y.dtype, lin.weight.grad.double().sum().item())
