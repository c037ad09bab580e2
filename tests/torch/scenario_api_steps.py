# Two trace() blocks of a program without an optimizer: each block's two
# regions in training mode are two steps of its own trace (the first
# block's last step does not end as the second block's first region
# begins).  argv: first.json second.json
import sys
import torch
import amptrace_torch

layer = torch.nn.Linear(8, 8)
for path in sys.argv[1:3]:
    with amptrace_torch.trace(path):
        for _ in range(2):
            with torch.autocast("cpu", torch.bfloat16):
                y = layer(torch.randn(4, 8))
            y.float().sum().backward()
