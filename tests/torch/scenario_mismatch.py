# A bf16 activation from an autocast region meets an f32 weight outside
# it: torch raises "expected scalar type", the program catches it.
import torch
layer, head = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)
with torch.autocast("cpu", torch.bfloat16):
    h = layer(torch.randn(2, 8))
try:
    head(h)
except RuntimeError as e:
    print("caught:", str(e).splitlines()[0])
