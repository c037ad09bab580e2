# Programs that run more than one top-level module under autocast, and
# the one-model program beside them: each model's modules and weights
# must be named apart (the first model's paths as they are, a later
# one's under its class name), an op's module agreeing with its weight's
# name.
#
# usage: scenario_roots.py gan|ema|loss|transform|fresh|one
import copy
import sys

import torch

mode = sys.argv[1]
torch.manual_seed(0)


class Pair(torch.nn.Module):
    """Two layers and an op of its own (relu) between them."""

    def __init__(self, out=8):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 8)
        self.fc2 = torch.nn.Linear(8, out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class G(Pair):
    pass


class D(Pair):
    def __init__(self):
        super().__init__(out=1)


class Normalize(torch.nn.Module):
    """A transform without parameters, as torchvision's are modules."""

    def forward(self, x):
        return (x - x.mean()) / (x.std() + 1e-6)


def steps(models, forward, n=2):
    params = [p for m in models for p in m.parameters()]
    optimizer = torch.optim.SGD(params, lr=1e-3)
    for _ in range(n):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = forward(torch.randn(4, 8))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return loss


if mode == "gan":
    g, d = G(), D()
    loss = steps([g, d], lambda x: d(g(x)).float().mean())
elif mode == "ema":
    model = Pair()
    ema = copy.deepcopy(model)

    def forward(x):
        with torch.no_grad():
            ema(x)  # what an EMA model is run for: evaluation
        return model(x).float().mean()
    loss = steps([model], forward)
elif mode == "loss":
    model = Pair(out=3)
    loss_fn = torch.nn.CrossEntropyLoss()
    loss = steps([model], lambda x: loss_fn(model(x),
                                            torch.tensor([0, 1, 2, 0])))
elif mode == "transform":
    model = Pair()
    normalize = Normalize()
    loss = steps([model], lambda x: model(normalize(x)).float().mean())
elif mode == "fresh":
    # one model at a time (cross-validation's folds, a notebook's cell
    # run again), a loss and an activation made afresh on each call
    class Fresh(Pair):
        def forward(self, x):
            return self.fc2(torch.nn.ReLU()(self.fc1(x)))

    for fold in range(3):
        model = Fresh(out=3)
        loss = steps([model], lambda x: torch.nn.CrossEntropyLoss()(
            model(x), torch.tensor([0, 1, 2, 0])))
else:
    model = Pair()
    loss = steps([model], lambda x: model(x).float().mean())
print(mode, "%.6f" % loss.item())
