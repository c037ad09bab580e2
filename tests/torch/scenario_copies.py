# Modules made without __init__: a deep copy (an EMA or "best" model) and
# an unpickled whole model (torch.save/torch.load), each run after the
# original ran, under autocast.
import copy
import io
import torch

model = torch.nn.Sequential()
model.add_module("fc1", torch.nn.Linear(4, 4))
model.add_module("fc2", torch.nn.Linear(4, 2))
x = torch.randn(3, 4)
with torch.autocast("cpu", dtype=torch.bfloat16):
    model(x)
ema = copy.deepcopy(model)
buffer = io.BytesIO()
torch.save(model, buffer)
buffer.seek(0)
# a whole model is no plain tensor data: 2.6+ loads only that by default
whole = {} if torch.__version__.startswith("1.") else {"weights_only": False}
loaded = torch.load(buffer, **whole)
with torch.autocast("cpu", dtype=torch.bfloat16):
    ema(x)
    loaded(x)
print("ok")
