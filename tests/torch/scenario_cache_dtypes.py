# A bf16 region nested in an f16 one (CPU autocast has f16 from torch
# 2.x): torch's cast cache is keyed by the source tensor alone, so the
# weights the f16 region cast come back in f16 (test_torch_bridge.py's
# test_cache_dtypes); and to a later bf16 region too, after an f16 one
# has exited, both within one bf16 region (the cache is cleared only when
# the outermost region exits).  Under a torch without f16 on CPU: "no
# f16".
import warnings

import torch
torch.manual_seed(0)
layer = torch.nn.Linear(8, 8)
other = torch.nn.Parameter(torch.randn(8, 8))
x = torch.randn(2, 8)
try:  # torch 1.x: a warning, then an error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with torch.autocast("cpu", dtype=torch.float16):
            f16 = True
except RuntimeError:
    f16 = False
if not f16:
    print("no f16")
    raise SystemExit(0)
with torch.autocast("cpu", dtype=torch.float16):
    layer(x)
    torch.mm(layer.weight, other)
    with torch.autocast("cpu", dtype=torch.float16):
        print("f16 in f16:", layer(x).dtype)
    with torch.autocast("cpu", dtype=torch.bfloat16, cache_enabled=False):
        print("bf16 uncached:", layer(x).dtype)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        print("bf16 mm:", torch.mm(layer.weight, other).dtype)
        try:
            layer(x)
        except RuntimeError:
            print("bf16 linear raised")
with torch.autocast("cpu", dtype=torch.bfloat16):
    with torch.autocast("cpu", dtype=torch.float16):
        layer(x)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        try:  # the f16 weight and the bf16 other
            torch.mm(layer.weight, other)
        except RuntimeError:
            print("bf16 mm after an f16 sibling raised")
