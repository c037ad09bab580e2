# A worker thread started inside the main thread's autocast region runs
# the same module on an input made before the region: nothing passes
# between the threads, but the worker runs the region's parameters in f32
# (autocast state is per thread).  With "own", the worker runs a module
# of its own: no tie to the region.
import sys
import threading

import torch

layer, other = torch.nn.Linear(8, 8), torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
out = {}
worker_layer = other if "own" in sys.argv else layer
with torch.autocast("cpu", torch.bfloat16):
    main = layer(x)
    t = threading.Thread(target=lambda: out.update(worker=worker_layer(x)),
                         name="worker")
    t.start()
    t.join()
print(main.dtype, out["worker"].dtype)
