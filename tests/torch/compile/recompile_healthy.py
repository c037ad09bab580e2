"""Recompiles that healthy programs have: a compiled model trained under
autocast, then evaluated under no_grad (grad_mode's guard), then given a
last, smaller batch (a shape's); and last, AMP's own: a function called
with f32 and then bf16 inputs (a dtype guard)."""
import torch

torch.manual_seed(0)
model = torch.nn.Linear(8, 8)
compiled = torch.compile(model, backend="aot_eager")
with torch.autocast("cpu", dtype=torch.bfloat16):
    compiled(torch.randn(4, 8)).float().sum().backward()
with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
    compiled(torch.randn(4, 8))
with torch.autocast("cpu", dtype=torch.bfloat16):
    compiled(torch.randn(3, 8)).float().sum().backward()
double = torch.compile(lambda x: x * 2, backend="aot_eager")
print(double(torch.ones(2)).sum().item(),
      double(torch.ones(2, dtype=torch.bfloat16)).sum().item())
