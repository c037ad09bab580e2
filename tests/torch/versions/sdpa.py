# scaled_dot_product_attention under CPU bf16 autocast (2.x: on the CPU
# lower-precision list; 1.13 has no such op).  Prints the output dtype.
import torch

q = k = v = None
if not hasattr(torch.nn.functional, "scaled_dot_product_attention"):
    print("no scaled_dot_product_attention in torch", torch.__version__)
    raise SystemExit(0)
q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
with torch.autocast("cpu", torch.bfloat16):
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
print("out", out.dtype)
