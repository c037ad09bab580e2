"""pytorch#181568, on the CPU: inductor fuses an explicit .to(bfloat16)
into the f32 add that follows it and skips the rounding eager does.
Prints whether eager and compiled sums are equal (the mean's may differ
in its last bit: the order of the additions is inductor's).  With the argument
`emulate`, inductor keeps the rounding (config.emulate_precision_casts).
"""
import sys

import torch
import torch._inductor.config

if sys.argv[1:] == ["emulate"]:
    torch._inductor.config.emulate_precision_casts = True

torch.manual_seed(119)


def f(x, w, b):
    y = (x @ w).to(torch.bfloat16) + b
    return y, y.mean(-1)


x, w, b = torch.randn(2, 15, 32), torch.randn(32, 17), torch.randn(17)
eager = f(x, w, b)
compiled = torch.compile(f, fullgraph=True)(x, w, b)
print("results equal:", torch.equal(eager[0], compiled[0]))
