"""What the version scenarios share: an independent witness of the casts
torch makes, a TorchDispatchMode (below autocast: it sees each
aten._to_copy autocast makes, and nothing for a cache hit), and the
running torch's series."""
import torch
from torch.utils._python_dispatch import TorchDispatchMode

TORCH2 = not torch.__version__.startswith("1.")


CONVERSIONS = (torch.ops.aten._to_copy.default, torch.ops.aten.to.dtype)


class CastsOf(TorchDispatchMode):
    """Counts the dtype conversions of `tensor` made while active (modes
    are per thread: enter it in the thread that casts).  Under
    inference_mode a cast reaches the mode as to.dtype, else as
    _to_copy (to.dtype decomposes above it)."""

    def __init__(self, tensor):
        super().__init__()
        self.tensor = tensor
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in CONVERSIONS and args[0] is self.tensor:
            self.count += 1
        return func(*args, **(kwargs or {}))
