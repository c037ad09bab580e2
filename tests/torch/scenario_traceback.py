# Tracebacks through backward, an optimizer's step, a module's __init__
# and Module.train, printed: they must read the same traced as untraced
# (the bridge's wrappers leave no frame in them).  autocast's __enter__
# and __exit__ keep Python wrappers, for TorchScript (_layer.py).
import traceback
import torch


class Fails(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise ValueError("backward failed")


class FailingSGD(torch.optim.SGD):
    def step(self, closure=None):
        raise ValueError("step failed")


class FailingModule(torch.nn.Module):
    def __init__(self):
        super().__init__()
        raise ValueError("__init__ failed")


class FailingTrain(torch.nn.Module):
    def train(self, mode=True):
        raise ValueError("train failed")


def show(what):
    try:
        what()
    except ValueError:
        print(traceback.format_exc())


x = torch.ones(3, requires_grad=True)
show(lambda: Fails.apply(x).sum().backward())
show(lambda: torch.autograd.grad(Fails.apply(x).sum(), x))
show(lambda: FailingSGD([x], lr=0.1).step())
show(FailingModule)
show(lambda: torch.nn.Sequential(FailingTrain()).eval())
