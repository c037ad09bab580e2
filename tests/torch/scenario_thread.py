# A worker thread runs the model without autocast while the main thread
# is inside a region (autocast state is per thread).
import threading
import torch
layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
out = {}
def work():
    out["worker"] = layer(x)
with torch.autocast("cpu", torch.bfloat16):
    t = threading.Thread(target=work, name="worker")
    t.start()
    t.join()
    main = layer(x)
print(main.dtype, out["worker"].dtype)
