# Custom autograd Functions under CPU bf16 autocast, and the casts
# autograd makes in backward.
#   Plain    a Function with no decorator: its matmul is autocast's
#   Cast     custom_fwd(cast_inputs=float32) and custom_bwd: torch.amp's
#            (device_type="cpu") where torch has it, else torch.cuda.amp's,
#            which does nothing on the CPU (1.13)
# Prints the dtypes each Function returned.
import torch

if hasattr(torch.amp, "custom_fwd"):
    custom_fwd = torch.amp.custom_fwd(device_type="cpu",
                                      cast_inputs=torch.float32)
    custom_bwd = torch.amp.custom_bwd(device_type="cpu")
else:
    custom_fwd = torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
    custom_bwd = torch.cuda.amp.custom_bwd


class Plain(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        grad = grad.to(x.dtype)  # the program's own conversion
        return grad @ w.t().to(x.dtype), x.t() @ grad


class Cast(torch.autograd.Function):
    @staticmethod
    @custom_fwd
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x @ w

    @staticmethod
    @custom_bwd
    def backward(ctx, grad):
        x, w = ctx.saved_tensors
        return grad @ w.t().to(grad.dtype), x.t() @ grad


torch.manual_seed(0)
layer = torch.nn.Linear(8, 8)
w = torch.randn(8, 8, requires_grad=True)
x = torch.randn(4, 8)
with torch.autocast("cpu", torch.bfloat16):
    h = layer(x)                 # bf16
    a = Plain.apply(h, w)        # autocast's matmul: bf16
    b = Cast.apply(h, w)         # f32 where custom_fwd casts on the CPU
print(a.dtype, b.dtype)
(a.float().sum() + b.float().sum()).backward()
