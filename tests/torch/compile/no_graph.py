"""Compiled callables that run eagerly, and one that compiles.  Modes:
  disabled  f's work is in a torch._dynamo.disable'd call: no graph
  ddp       torch.compile(DDP(model)) on gloo, one rank: Dynamo skips
            DDP's forward (torch 2.13), no graph
  limit     recompile_limit 1 and a new shape each call: call 2 hits the
            limit and runs eagerly
  suppressed  the backend fails and suppress_errors goes on eagerly
  two       a module by model.compile(), its forward disabled, and f: two
            callables, two findings
  compiled  g compiles (no finding)
  stance    g under set_stance("force_eager"): eager as asked (no finding)
Prints the results, for the traced run to match the untraced one."""
import sys

import torch
import torch._dynamo

torch.manual_seed(0)
mode = sys.argv[1]


@torch._dynamo.disable
def work(x, w):
    return (x @ w).relu()


def f(x, w):
    return work(x, w)


def g(x, w):
    return (x @ w).relu()


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 8)

    @torch._dynamo.disable
    def forward(self, x):
        return self.fc(x)


def broken(gm, example_inputs):
    raise RuntimeError("this backend fails")


def ddp():
    import torch.distributed as dist
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0,
                            world_size=1)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(),
                                torch.nn.Linear(8, 1))
    model = torch.compile(torch.nn.parallel.DistributedDataParallel(model),
                          backend="aot_eager")
    for _ in range(2):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(torch.randn(4, 8)).float().sum()
        loss.backward()
        print("loss", loss.item())
    dist.destroy_process_group()


w = torch.randn(8, 8)
if mode == "ddp":
    ddp()
elif mode == "two":
    net = Net()
    net.compile(backend="aot_eager")
    h = torch.compile(f, backend="aot_eager")
    print(net(torch.randn(4, 8)).sum().item(),
          h(torch.randn(4, 8), w).sum().item())
elif mode == "suppressed":
    torch._dynamo.config.suppress_errors = True
    h = torch.compile(g, backend=broken)
    print(h(torch.randn(4, 8), w).sum().item())
elif mode == "limit":
    torch._dynamo.config.recompile_limit = 1
    h = torch.compile(g, backend="aot_eager", dynamic=False)
    for n in (2, 3, 4):
        print(h(torch.randn(n, 8), w).sum().item())
else:
    if mode == "stance":
        torch.compiler.set_stance("force_eager")
    h = torch.compile(f if mode == "disabled" else g, backend="aot_eager")
    for _ in range(2):
        print(h(torch.randn(4, 8), w).sum().item())
