# PyTorch twin of samples/mlp.c: the typical loop (autocast around
# forward + loss, scaler.scale(loss).backward(), scaler.step, update);
# 3 linear layers of width 64 with ReLU between, 10 classes, cross
# entropy, SGD with momentum.  usage: twin_mlp.py [STEPS]
import sys
import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 40
hidden, classes, layers, batch = 64, 10, 3, 32
torch.manual_seed(1)
modules = []
for i in range(layers):
    modules.append(torch.nn.Linear(hidden, classes if i == layers - 1 else hidden))
    if i + 1 < layers:
        modules.append(torch.nn.ReLU())
model = torch.nn.Sequential(*modules)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
# 1.13's GradScaler disables itself without CUDA (with a warning).
import warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    scaler = torch.cuda.amp.GradScaler()
for step in range(1, steps + 1):
    x = torch.randn(batch, hidden)
    target = torch.randint(0, classes, (batch,))
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(model(x), target)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()
    print("step %d loss %.4f" % (step, loss.item()))
