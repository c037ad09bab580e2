# The three dtype errors of PyTorch programs, each ending the program (the
# bridge then has torch's text), and each with its fix (argv[1] ends in
# "-fixed": the program runs through):
#   outside     a bf16 activation from an autocast region meets an f32
#               Linear outside it: "mat1 and mat2 must have the same dtype"
#   half-model  model.half() meets an f32 input: "expected scalar type
#               Float but found Half"
#   explicit    the program's .to(torch.bfloat16) meets an f32 conv:
#               "Input type (...) and weight type (...) should be the same"
#   uncovered   under autocast, torch.mv (on no CPU autocast list) gets a
#               bf16 matrix and an f32 vector
#   gradient    a custom Function's backward multiplies its gradient,
#               which autograd cast back to bf16 (the backward of the
#               program's .float() of its output), by an f32 tensor:
#               custom_fwd(cast_inputs=float32) casts only under CUDA
#               autocast, so on the CPU the forward ran in bf16
import sys
import torch

torch.manual_seed(0)
mode = sys.argv[1]
fixed = mode.endswith("-fixed")
mode = mode.replace("-fixed", "")
if mode == "outside":
    encoder, head = torch.nn.Linear(8, 8), torch.nn.Linear(8, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = encoder(torch.randn(2, 8))
    if fixed:
        h = h.float()
    print(head(h).shape)
elif mode == "half-model":
    conv = torch.nn.Conv2d(3, 4, 3, bias=False)
    if not fixed:
        conv.half()
    print(conv(torch.randn(1, 3, 8, 8)).shape)
elif mode == "explicit":
    conv = torch.nn.Conv2d(3, 4, 3, bias=False)
    x = torch.randn(1, 3, 8, 8)
    if not fixed:
        x = x.to(torch.bfloat16)
    print(conv(x).shape)
elif mode == "uncovered":
    proj = torch.nn.Linear(8, 8)
    v = torch.randn(8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        m = proj(torch.randn(3, 8))
        print(torch.mv(m.float() if fixed else m, v).shape)
elif mode == "gradient":
    if hasattr(torch.amp, "custom_fwd"):  # torch 2.4+: torch.cuda.amp's
        forward_f32 = torch.amp.custom_fwd(device_type="cuda",
                                           cast_inputs=torch.float32)
        backward_as_forward = torch.amp.custom_bwd(device_type="cuda")
    else:
        forward_f32 = torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)
        backward_as_forward = torch.cuda.amp.custom_bwd

    class Project(torch.autograd.Function):
        @staticmethod
        @forward_f32
        def forward(ctx, a, b):
            ctx.save_for_backward(b)
            return a.mm(b)

        @staticmethod
        @backward_as_forward
        def backward(ctx, grad):
            b, = ctx.saved_tensors
            return (grad.float() if fixed else grad).mm(b.t()), None

    layer, b = torch.nn.Linear(8, 8), torch.randn(8, 8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = Project.apply(layer(torch.randn(4, 8)), b)
        loss = y.float().sum()
    loss.backward()
    print(layer.weight.grad.shape)
