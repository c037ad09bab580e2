# A custom autograd Function whose forward runs in f32 under autocast:
# torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
# (2.x) turns autocast off inside and casts the inputs; 1.13 has only
# torch.cuda.amp.custom_fwd, which does nothing on the CPU.  Prints the
# dtype the forward's mm gave.
import torch

if hasattr(torch.amp, "custom_fwd"):
    fwd = torch.amp.custom_fwd(device_type="cpu", cast_inputs=torch.float32)
    bwd = torch.amp.custom_bwd(device_type="cpu")
else:
    fwd = torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
    bwd = torch.cuda.amp.custom_bwd


class F32Product(torch.autograd.Function):
    @staticmethod
    @fwd
    def forward(ctx, a, b):
        ctx.save_for_backward(a, b)
        return torch.mm(a, b)

    @staticmethod
    @bwd
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        grad_a = grad.mm(b.t().to(grad.dtype))
        grad_b = a.t().to(grad.dtype).mm(grad)
        return grad_a.to(a.dtype), grad_b.to(b.dtype)


a = torch.randn(2, 8, requires_grad=True)
b = torch.randn(8, 8, requires_grad=True)
with torch.autocast("cpu", torch.bfloat16):
    out = F32Product.apply(a.to(torch.bfloat16), b)
out.float().sum().backward()
print("out", out.dtype)
