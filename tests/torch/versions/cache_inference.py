# A layer used twice in one region under torch.inference_mode: does torch
# cache its weight's cast?  1.13 does (one cast, then a hit); 2.11+ caches
# nothing under inference_mode (pytorch#165068: two casts).  Prints the
# casts torch made, as its own witness counted them.
import torch
from casts_seen import CastsOf

layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
with torch.inference_mode(), torch.autocast("cpu", torch.bfloat16):
    with CastsOf(layer.weight) as witness:
        layer(x)
        layer(x)
print("weight casts", witness.count)
