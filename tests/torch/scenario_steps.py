# Training loops of the shapes real programs have, for the step count
# (FORMAT.md §8): `python3 scenario_steps.py MODE` trains a small model
# and prints "steps N windows W": the training steps it took and the
# evaluation windows it ran, which the trace must show.
#   accumulate  4 micro-batches per optimizer step (gradient accumulation)
#   checkpoint  activation checkpointing (its recompute enters autocast
#               again, in backward)
#   eval        an evaluation every 2 steps (model.eval(), no_grad)
#   nograd      the same without model.eval(): its regions under no_grad
#   nanogpt     nanoGPT's loop: accumulation, a GradScaler disabled for
#               bf16, gradient clipping, estimate_loss under
#               @torch.no_grad() with model.eval()
#   timm        timm's: checkpointed blocks, an EMA copy kept in eval
#               mode, validation every 2 epochs
#   marker      amptrace_torch.step() every 2 optimizer steps
#   noopt       no optimizer: the weights updated by hand (checkpointed
#               blocks: regions recomputed in backward are no step)
#   scaler      GradScaler on the CPU (torch 2.x; 1.13's disables itself)
#   wrappers    accelerate's and Lightning's shapes: an Optimizer subclass
#               that wraps another (no super().__init__), a step(closure)
import copy
import sys

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
MODE = sys.argv[1]
BF16 = dict(device_type="cpu", dtype=torch.bfloat16)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        return torch.relu(self.fc(x))


class Net(torch.nn.Module):
    def __init__(self, checkpointed=False):
        super().__init__()
        self.blocks = torch.nn.ModuleList([Block(), Block()])
        self.head = torch.nn.Linear(16, 4)
        self.checkpointed = checkpointed

    def forward(self, x):
        for block in self.blocks:
            if self.checkpointed and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(x)


def batch():
    return torch.randn(8, 16), torch.randint(0, 4, (8,))


def loss_of(model, x, y):
    with torch.autocast(**BF16):
        return F.cross_entropy(model(x), y)


def train(model, opt, steps, micro=1, evaluate_every=0, scaler=None,
          evaluate=None):
    evaluate = evaluate or evaluate_in_eval_mode
    windows = 0
    for it in range(steps):
        if evaluate_every and it % evaluate_every == 0:
            evaluate(model)
            windows += 1
        for _ in range(micro):
            x, y = batch()
            loss = loss_of(model, x, y) / micro
            (scaler.scale(loss) if scaler else loss).backward()
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
    return steps, windows


def evaluate_in_eval_mode(model):
    model.eval()
    evaluate_no_grad(model)
    model.train()


def evaluate_no_grad(model):
    with torch.no_grad():
        x, y = batch()
        loss_of(model, x, y)


def nanogpt():
    model = Net()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scaler_cls = getattr(torch.amp, "GradScaler", None) or \
        torch.cuda.amp.GradScaler
    scaler = scaler_cls(enabled=False)  # dtype bfloat16: no scaling
    ctx = torch.autocast(**BF16)

    @torch.no_grad()
    def estimate_loss():
        model.eval()
        for _ in range(2):        # the splits
            for _ in range(2):    # eval_iters
                x, y = batch()
                with ctx:
                    F.cross_entropy(model(x), y)
        model.train()

    x, y = batch()
    windows, it = 0, 0
    while True:
        if it % 3 == 0:
            estimate_loss()
            windows += 1
        for _ in range(4):
            with ctx:
                loss = F.cross_entropy(model(x), y) / 4
            x, y = batch()        # prefetch the next batch
            scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        opt.zero_grad(set_to_none=True)
        it += 1
        if it > 5:
            break
    return it, windows


def timm():
    model = Net(checkpointed=True)
    ema = copy.deepcopy(model).eval()     # ModelEmaV2
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    windows = 0
    for epoch in range(4):
        model.train()
        for _ in range(2):
            x, y = batch()
            loss = loss_of(model, x, y)
            loss.backward()
            opt.step()
            opt.zero_grad()
            with torch.no_grad():
                for e, p in zip(ema.parameters(), model.parameters()):
                    e.mul_(0.9).add_(p, alpha=0.1)
        if epoch % 2 == 1:
            evaluate_in_eval_mode(model)
            windows += 1
    return 8, windows


def marker():
    import amptrace_torch
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for it in range(6):
        x, y = batch()
        loss_of(model, x, y).backward()
        opt.step()
        opt.zero_grad()
        if it % 2 == 1:
            amptrace_torch.step()
    return 3, 0


def noopt():
    model = Net(checkpointed=True)   # its recompute enters regions too
    for it in range(4):
        x, y = batch()
        loss_of(model, x, y).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
                p.grad = None
        if it == 1:
            with torch.no_grad():
                loss_of(model, *batch())
    return 4, 1


class AcceleratedOptimizer(torch.optim.Optimizer):
    """accelerate's shape: an Optimizer that holds one (no
    super().__init__) and steps it only when gradients are in sync."""

    def __init__(self, optimizer):
        self.optimizer = optimizer
        self.sync = False

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    def zero_grad(self, set_to_none=True):
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def step(self, closure=None):
        if self.sync:
            self.optimizer.step(closure)


class LightningOptimizer:
    """Lightning's shape: not an Optimizer; its step runs the training
    step inside the optimizer's step, as a closure."""

    def __init__(self, optimizer):
        self.optimizer = optimizer

    def step(self, closure):
        return self.optimizer.step(closure=closure)


def wrappers():
    model = Net()
    opt = AcceleratedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1))
    for it in range(8):                   # 2 micro-batches per step
        opt.sync = it % 2 == 1
        x, y = batch()
        (loss_of(model, x, y) / 2).backward()
        opt.step()
        if opt.sync:
            opt.zero_grad()
    lightning = LightningOptimizer(torch.optim.SGD(model.parameters(),
                                                   lr=0.1))
    for _ in range(3):
        x, y = batch()

        def closure():
            lightning.optimizer.zero_grad()
            loss = loss_of(model, x, y)
            loss.backward()
            return loss
        lightning.step(closure)
    return 4 + 3, 0


def run():
    if MODE == "accumulate":
        model = Net()
        return train(model, torch.optim.SGD(model.parameters(), lr=0.1), 3,
                     micro=4)
    if MODE == "checkpoint":
        model = Net(checkpointed=True)
        return train(model, torch.optim.SGD(model.parameters(), lr=0.1), 3)
    if MODE == "eval":
        model = Net()
        return train(model, torch.optim.SGD(model.parameters(), lr=0.1), 6,
                     evaluate_every=2)
    if MODE == "nograd":
        model = Net()
        return train(model, torch.optim.SGD(model.parameters(), lr=0.1), 6,
                     evaluate_every=2, evaluate=evaluate_no_grad)
    if MODE == "scaler":
        model = Net()
        scaler = torch.amp.GradScaler("cpu") if hasattr(torch.amp,
                                                        "GradScaler") else None
        return train(model, torch.optim.SGD(model.parameters(), lr=0.1), 3,
                     scaler=scaler)
    return {"nanogpt": nanogpt, "timm": timm, "marker": marker,
            "noopt": noopt, "wrappers": wrappers}[MODE]()


steps, windows = run()
print("steps %d windows %d" % (steps, windows))
