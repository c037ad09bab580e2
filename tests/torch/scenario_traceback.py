# Tracebacks through backward, an optimizer's step, a module's __init__,
# Module.train and autocast's __enter__ and __exit__, printed: they must
# read the same traced as untraced (the bridge's wrappers leave no frame
# in them).
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


class FailingAutocast(torch.autocast):
    """Fails inside autocast's own __enter__ (reading fast_dtype) or
    __exit__ (reading prev): through torch's methods, which the bridge
    wraps."""
    fail_in = None

    def __init__(self, fail_in):
        super().__init__("cpu", dtype=torch.bfloat16)
        self.fail_in = fail_in

    def __getattribute__(self, name):
        if name == object.__getattribute__(self, "fail_in"):
            raise ValueError(name + " failed")
        return object.__getattribute__(self, name)


def enter_fails():
    with FailingAutocast("fast_dtype"):
        pass


def exit_fails():
    region = FailingAutocast("nothing")
    with region:
        region.fail_in = "prev"


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
show(enter_fails)
show(exit_fails)
