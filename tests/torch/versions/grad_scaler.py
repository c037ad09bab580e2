# torch.amp.GradScaler("cpu") on a CPU f16 model whose scaled gradients
# overflow at first: prints, per step, the scale before, whether an inf
# was found, whether optimizer.step() ran, and the scale after, as the
# scaler itself reports them.  torch 1.13 has neither CPU f16 autocast
# nor a CPU GradScaler: it prints why and stops.
import torch
from casts_seen import TORCH2

if not TORCH2:
    print("no cpu GradScaler in torch", torch.__version__)
    raise SystemExit(0)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 16), torch.nn.ReLU(),
                            torch.nn.Linear(16, 1))
optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)
# f16's largest is 65504: gradients scaled by 2**20 overflow in f16, and
# the scale halves on each such step until they fit, then grows every
# second clean step
scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 20, growth_interval=2)
x, y = torch.randn(32, 16), torch.randn(32, 1)
for step in range(10):
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.float16):
        loss = torch.nn.functional.mse_loss(model(x).float(), y)
    before = scaler.get_scale()
    weight = model[0].weight.detach().clone()
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    found = sum(v.item() for v in scaler._found_inf_per_device(
        optimizer).values())
    stepped = not torch.equal(weight, model[0].weight)
    scaler.update()
    print("step %d scale %g found_inf %d stepped %d after %g" % (
        step, before, found > 0, stepped, scaler.get_scale()))
