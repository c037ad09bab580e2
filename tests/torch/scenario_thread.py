# A worker thread runs the model without autocast for the main thread,
# which is inside a region (autocast state is per thread).
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
    # gathered inside the region, as DataParallel gathers its replicas'
    # outputs: what ties the worker's work to the main thread's region
    both = torch.cat([main, out["worker"]])
print(main.dtype, out["worker"].dtype)
