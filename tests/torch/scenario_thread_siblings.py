# Two sibling threads, no region in the main thread: the first autocasts
# and stays in its region while the second, started then, runs a linear
# in f32 on tensors of its own.  Nothing passes between them, so the
# second does no work for the first's region: no autocast-off-in-thread.
import threading
import torch
inside, release = threading.Event(), threading.Event()
out = {}
def autocasting():
    layer, x = torch.nn.Linear(8, 8), torch.randn(2, 8)
    with torch.autocast("cpu", torch.bfloat16):
        out["a"] = layer(x)
        inside.set()
        release.wait()
def f32():
    layer, x = torch.nn.Linear(8, 8), torch.randn(2, 8)
    out["b"] = layer(x)
a = threading.Thread(target=autocasting, name="a")
a.start()
inside.wait()
b = threading.Thread(target=f32, name="b")
b.start()
b.join()
release.set()
a.join()
print(out["a"].dtype, out["b"].dtype)
