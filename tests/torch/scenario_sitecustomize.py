# The program's own sitecustomize (made by test_torch_bridge.py in a
# directory on PYTHONPATH) as the program sees it: imported as the module
# `sitecustomize`, its functions picklable by reference.
import pickle

try:
    import sitecustomize
except ValueError as e:  # a broken one raises again (not in sys.modules)
    print("sitecustomize raised:", e)
else:
    print(sitecustomize.__name__, getattr(sitecustomize, "MARK", None))
    print(pickle.loads(pickle.dumps(sitecustomize.hello))())
import torch
layer = torch.nn.Linear(4, 4)
with torch.autocast("cpu", torch.bfloat16):
    print(layer(torch.ones(2, 4)).dtype)
