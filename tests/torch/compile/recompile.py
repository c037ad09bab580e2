"""The same compiled function under autocast bf16, then f16: autocast's
state is guarded, so Dynamo compiles it again."""
import torch

torch.manual_seed(0)


def f(x, w):
    return (x @ w).float().sum()


x, w = torch.randn(4, 8), torch.randn(8, 8)
compiled = torch.compile(f, backend="aot_eager")
for dtype in (torch.bfloat16, torch.float16):
    with torch.autocast("cpu", dtype=dtype):
        print(dtype, compiled(x, w).item())
