# The policy-divergence cases of the JIT/autocast seed document, one per
# argument; with --healthy, the twin that does the same eagerly.
#   script      autocast inside torch.jit.script (casts as explicit ops)
#   traced      a traced function whose autocast(enabled=False) tracing
#               stripped, called under eager autocast (traced outside
#               autocast: tracing under it fails in 1.13)
#   eager       eager autocast on, a scripted autocast(enabled=False)
#   custom_fwd  custom_fwd(cast_inputs=torch.float32) on CPU
#   set_enabled torch.set_autocast_cpu_enabled(True), no region
import sys
import torch
from torch.cuda.amp import custom_fwd

case, healthy = sys.argv[1], "--healthy" in sys.argv
x, w = torch.randn(4, 8), torch.randn(8, 8)
region = lambda: torch.autocast("cpu", torch.bfloat16)


def mm_in_script(a, b):
    with torch.autocast("cpu", torch.bfloat16):
        return torch.mm(a, b)


def mm_off(a, b):
    with torch.autocast("cpu", torch.bfloat16, enabled=False):
        return torch.mm(a, b) * 2.0


class Mm(torch.autograd.Function):
    @staticmethod
    @custom_fwd(cast_inputs=torch.float32)
    def forward(ctx, a, b):
        return torch.mm(a, b)

    @staticmethod
    def backward(ctx, g):
        return g, g


if case == "script":
    f = mm_in_script if healthy else torch.jit.script(mm_in_script)
    for _ in range(3):
        y = f(x, w)
elif case == "traced":
    f = mm_off if healthy else torch.jit.trace(mm_off, (x, w))
    with region():
        for _ in range(3):
            y = f(x, w)
elif case == "eager":
    f = mm_off if healthy else torch.jit.script(mm_off)
    with region():
        y = f(x, w)
elif case == "custom_fwd":
    with region():
        y = Mm.apply(x, w) if healthy else Mm.apply(x.bfloat16(), w)
elif case == "set_enabled":
    if healthy:
        with region():
            y = torch.mm(x, w)
    else:
        torch.set_autocast_cpu_dtype(torch.bfloat16)
        torch.set_autocast_cpu_enabled(True)
        y = torch.mm(x, w)
        torch.set_autocast_cpu_enabled(False)
print(y.dtype)
