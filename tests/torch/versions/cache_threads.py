# A weight cast cached by the main thread's region, then used in another
# thread's region while the first is still open: 1.13's cache is per
# thread (the worker casts again), 2.x's per process (the worker hits).
# Prints the worker's casts, as its own witness counted them.
import threading
import torch
from casts_seen import CastsOf

layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
seen = {}


def worker():
    with torch.autocast("cpu", torch.bfloat16):
        with CastsOf(layer.weight) as witness:
            layer(x)
    seen["casts"] = witness.count


with torch.autocast("cpu", torch.bfloat16):
    layer(x)
    thread = threading.Thread(target=worker, name="cache-worker")
    thread.start()
    thread.join()
print("worker weight casts", seen["casts"])
