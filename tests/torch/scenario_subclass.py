# Tensor subclasses and a program's own wrappers of torch's Python
# functions, under autocast: the output must be the same traced (by the
# observer or the pure-Python fallback) as untraced.
import torch
import torch.nn.functional as F
from torch.utils._pytree import tree_map

report = []


class Plain(torch.Tensor):
    pass


class Counting(torch.Tensor):
    calls = 0

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        Counting.calls += 1
        return super().__torch_function__(func, types, args, kwargs or {})


class MyParameter(torch.nn.Parameter):
    pass


class Wrapped(torch.Tensor):
    """A wrapper subclass: its own __torch_dispatch__ unwraps."""
    dispatched = []

    @staticmethod
    def __new__(cls, elem):
        return torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), dtype=elem.dtype, device=elem.device)

    def __init__(self, elem):
        self.elem = elem

    __torch_function__ = torch._C._disabled_torch_function_impl

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        Wrapped.dispatched.append(func.__name__)
        unwrap = lambda t: t.elem if isinstance(t, Wrapped) else t
        out = func(*tree_map(unwrap, args), **tree_map(unwrap, kwargs or {}))
        return tree_map(
            lambda t: Wrapped(t) if isinstance(t, torch.Tensor) else t, out)


torch.manual_seed(0)
a = torch.randn(4, 8).as_subclass(Plain)
report.append(("as_subclass", type(a).__name__, type(a + 1).__name__))

layer = torch.nn.Linear(8, 8)
layer.weight = MyParameter(layer.weight.detach())
c = torch.randn(4, 8).as_subclass(Counting)
with torch.autocast("cpu", torch.bfloat16):
    y = layer(c)
report.append(("torch_function", type(y).__name__, str(y.dtype),
               Counting.calls, type(layer.weight).__name__))

w = Wrapped(torch.randn(4, 8))
z = (w * 2).sum()
report.append(("torch_dispatch", type(z).__name__, Wrapped.dispatched))

calls = {"backward": 0, "dropout": 0}
torch_backward, torch_dropout = torch.Tensor.backward, F.dropout


def backward(self, *args, **kwargs):
    calls["backward"] += 1
    return torch_backward(self, *args, **kwargs)


def dropout(*args, **kwargs):
    calls["dropout"] += 1
    return torch_dropout(*args, **kwargs)


torch.Tensor.backward, F.dropout = backward, dropout
x = torch.randn(3, requires_grad=True)
F.dropout(x * 2, 0.0).sum().backward()
report.append(("wrappers", calls, x.grad.tolist()))
for line in report:
    print(line)
