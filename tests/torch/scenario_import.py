# torch imported every way a program (or a library it uses) may import
# it; the bridge must arm however torch is found.  The argument picks
# the way; each runs one linear under CPU bf16 autocast.
#   find_spec     importlib.util.find_spec("torch") first, then import
#                 (transformers' and Lightning's is_torch_available)
#   import_module importlib.import_module("torch")
#   dunder        __import__("torch")
#   lazy          importlib.util.LazyLoader: loaded at the first attribute
#   spec          find_spec, then module_from_spec + exec_module by hand
#   submodule     `from torch.nn import Linear` first
import importlib
import importlib.util
import sys

way = sys.argv[1] if len(sys.argv) > 1 else "find_spec"
if way == "find_spec":
    assert importlib.util.find_spec("torch") is not None
    import torch
elif way == "import_module":
    torch = importlib.import_module("torch")
elif way == "dunder":
    torch = __import__("torch")
elif way in ("lazy", "spec"):
    spec = importlib.util.find_spec("torch")
    if way == "lazy":
        spec.loader = importlib.util.LazyLoader(spec.loader)
    torch = importlib.util.module_from_spec(spec)
    sys.modules["torch"] = torch
    spec.loader.exec_module(torch)
elif way == "submodule":
    from torch.nn import Linear
    import torch
layer = torch.nn.Linear(4, 4)
with torch.autocast("cpu", torch.bfloat16):
    y = layer(torch.ones(2, 4))
print(way, y.dtype)
