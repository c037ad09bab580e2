# GradScaler forensics (torch 2.x: f16 autocast and GradScaler("cpu") run
# on the CPU; argv[2] "cuda" runs the same on a GPU).  A model whose layer
# `big` has weights so large that its f16 output overflows (argv[1]):
#   overflow          3 steps with a GradScaler: every step is skipped
#   collapse          12 steps: the scale collapses
#   scheduler         a StepLR stepped every step, skipped or not
#   scheduler-guarded stepped only when the scale did not drop
#   overflow-bf16     the same model in bf16 (no scaler): no overflow
#   healthy           ordinary weights, f16 and a GradScaler: no finding
#   unrelated         a large loss whose scaled gradients overflow in f16
#                     until the scale calibrates, beside a probe layer whose
#                     f16 output overflows but feeds nothing: the skips are
#                     the backward's, not the probe's
#   cast-overflow     an f32 input of 1e5 that autocast's cast to f16 makes
#                     inf (the cast, not the op, is the origin)
#   cast-underflow    an f32 input of 1e-9 that the f16 cast flushes to zero
#   split             an attention's qkv projection overflows; the inf goes
#                     on through q and k, views with gaps (split), into
#                     q @ k^T: only the projection is the origin
#   bf16-overflow     (torch 1.13 too) a bf16 layer whose output passes
#                     3.4e38
#   bf16-underflow    (torch 1.13 too) f32 subnormal inputs cast to bf16
#   written-later     (torch 1.13 too) a finite bf16 result that a later
#                     in-place op makes inf, read by the layer again: the
#                     layer is no origin, either time
#   overflow-written  (torch 1.13 too) a bf16 layer that overflows, its
#                     output then rewritten in place (relu_): still the
#                     layer's overflow
#   captured          a bf16 layer that overflows inside a CUDA graph's
#                     capture (faked on the CPU), then again after it
#   uninitialized     (torch 2.1+) deterministic algorithms fill empty
#                     tensors with NaN: a bf16 new_empty in forward and an
#                     empty_like in a Function's backward, each then
#                     written: no overflow, nothing computed made a NaN
import sys
import torch

torch.manual_seed(0)
mode = sys.argv[1]
# argv[2], optional: the device (cpu; cuda on a GPU, torch 2.x)
DEVICE = sys.argv[2] if len(sys.argv) > 2 else "cpu"
if DEVICE != "cpu":
    torch.set_default_device(DEVICE)


def model(scale_big):
    m = torch.nn.Sequential()
    m.add_module("fc1", torch.nn.Linear(16, 64))
    m.add_module("act", torch.nn.ReLU())
    m.add_module("big", torch.nn.Linear(64, 64))
    m.add_module("fc2", torch.nn.Linear(64, 1))
    with torch.no_grad():
        m.big.weight.mul_(scale_big)
    return m


def train(m, dtype, steps, scaler=None, scheduler=None, guarded=False,
          inputs=lambda: torch.randn(8, 16)):
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, 1) if scheduler else None
    for _ in range(steps):
        with torch.autocast(DEVICE, dtype=dtype):
            loss = m(inputs()).float().pow(2).mean()
        opt.zero_grad()
        if scaler is None:
            loss.backward()
            opt.step()
        else:
            scaler.scale(loss).backward()
            scaler.step(opt)
            before = scaler.get_scale()
            scaler.update()
            if sched and guarded and scaler.get_scale() < before:
                continue
        if sched:
            sched.step()
    print("loss", loss.item())


def scaler():
    return torch.amp.GradScaler(DEVICE)


def unrelated():
    m = model(1.0)
    probe = torch.nn.Linear(64, 64)
    with torch.no_grad():
        probe.weight.mul_(1e5)
    opt = torch.optim.SGD(m.parameters(), lr=1e-6)
    scale = scaler()
    for _ in range(3):
        x = torch.randn(8, 16)
        with torch.autocast(DEVICE, dtype=torch.float16):
            loss = (m(x).float() * 300).pow(2).mean()
            probe(torch.relu(m.fc1(x)))  # a metric nobody reads
        opt.zero_grad()
        scale.scale(loss).backward()
        scale.step(opt)
        scale.update()
    print("scale", scale.get_scale())


if mode == "overflow":
    train(model(1e5), torch.float16, 3, scaler())
elif mode == "collapse":
    train(model(1e5), torch.float16, 12, scaler())
elif mode in ("scheduler", "scheduler-guarded"):
    train(model(1e5), torch.float16, 4, scaler(), scheduler=True,
          guarded=mode == "scheduler-guarded")
elif mode == "overflow-bf16":
    train(model(1e5), torch.bfloat16, 1)
elif mode == "healthy":
    train(model(1.0), torch.float16, 6, scaler(), scheduler=True,
          guarded=True)
elif mode == "unrelated":
    unrelated()
elif mode == "split":
    qkv = torch.nn.Linear(32, 96)
    with torch.no_grad():
        qkv.weight.mul_(1e5)
    with torch.autocast(DEVICE, dtype=torch.float16):
        q, k, v = qkv(torch.randn(4, 32)).split(32, dim=-1)
        print("non-finite scores", (~torch.isfinite(q @ k.t())).sum().item())
elif mode == "cast-overflow":
    train(model(1.0), torch.float16, 1, inputs=lambda: torch.full((8, 16), 1e5))
elif mode == "cast-underflow":
    train(model(1.0), torch.float16, 1, inputs=lambda: torch.full((8, 16), 1e-9))
elif mode == "bf16-overflow":
    train(model(1e30), torch.bfloat16, 1, inputs=lambda: torch.full((8, 16), 1e9))
elif mode == "bf16-underflow":
    train(model(1.0), torch.bfloat16, 1, inputs=lambda: torch.full((8, 16), 1e-40))
elif mode == "written-later":
    layer = torch.nn.Linear(16, 16)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        y = layer(torch.randn(4, 16))
        y.mul_(float("inf"))
        z = layer(y)  # inf in, inf out: no origin either
        print("non-finite", (~torch.isfinite(z)).sum().item())
elif mode == "overflow-written":
    layer = torch.nn.Linear(16, 16)
    with torch.no_grad():
        layer.weight.mul_(1e30)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        y = layer(torch.full((4, 16), 1e9))
        y.relu_()
        print("non-finite", (~torch.isfinite(y)).sum().item())
elif mode == "uninitialized":
    torch.use_deterministic_algorithms(True)

    class Copy(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.new_empty(x.shape).copy_(x)

        @staticmethod
        def backward(ctx, grad):
            return torch.empty_like(grad).copy_(grad)

    layer = torch.nn.Linear(16, 16)
    with torch.autocast(DEVICE, dtype=torch.bfloat16):
        y = Copy.apply(layer(torch.randn(4, 16)))
    y.float().sum().backward()
    print("empty holds NaN",
          torch.isnan(torch.empty(4, dtype=torch.bfloat16)).all().item(),
          "gradient finite", torch.isfinite(layer.weight.grad).all().item())
elif mode == "captured":
    # A CPU build's CUDAGraph stands on a dummy base: give it a capture
    # that does nothing, so the program's calls run as on a GPU.
    base = torch.cuda.CUDAGraph.__mro__[1]
    base.__new__ = lambda cls, *args, **kwargs: object.__new__(cls)
    base.__init__ = lambda self, *args, **kwargs: None
    base.capture_begin = lambda self, *args, **kwargs: None
    base.capture_end = lambda self: None
    layer = torch.nn.Linear(16, 16)
    with torch.no_grad():
        layer.weight.mul_(1e30)
    graph = torch.cuda.CUDAGraph()
    for captured in (True, False):
        if captured:
            graph.capture_begin()
        with torch.autocast(DEVICE, dtype=torch.bfloat16):
            y = layer(torch.full((4, 16), 1e9))
        if captured:
            graph.capture_end()
        print("non-finite", (~torch.isfinite(y)).sum().item())
