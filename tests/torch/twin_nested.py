# PyTorch twin of samples/nested.c: a function written for f32 called
# inside an autocast forward, in a nested autocast(enabled=False) region
# with an explicit .float().  usage: twin_nested.py [STEPS]
import sys

import torch
from twin_common import batch, mlp, scaler, sgd, train_step


def rms_norm(x):
    return x * (x.pow(2.0).mean(-1, keepdim=True) + 1e-6).pow(-0.5)


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
torch.manual_seed(8)
head = mlp(64, 2)
layer1 = torch.nn.Linear(64, 64)
optimizer = sgd(list(head.parameters()) + list(layer1.parameters()))
grad_scaler = scaler()
for step in range(1, steps + 1):
    x, target = batch(32, 64)
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.bfloat16):
        h = layer1(x)
        with torch.autocast("cpu", enabled=False):
            z = rms_norm(h.float())
        loss = torch.nn.functional.cross_entropy(head(z), target)
    train_step(loss, optimizer, grad_scaler)
    print("step %d loss %.4f" % (step, loss.item()))
