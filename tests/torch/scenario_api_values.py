# The Python API's value checks: a bf16 layer whose output passes 3.4e38,
# recorded with amptrace_torch.trace(PATH, value_checks=VALUE) (argv[2]:
# "on", "off" or "default").
import sys
import torch
import amptrace_torch

layer = torch.nn.Linear(16, 16)
with torch.no_grad():
    layer.weight.mul_(1e30)
option = {"on": True, "off": False, "default": None}[sys.argv[2]]
with amptrace_torch.trace(sys.argv[1], value_checks=option):
    with torch.autocast("cpu", torch.bfloat16):
        layer(torch.full((2, 16), 1e9))
print("done")
