# A thread that was already running when torch was imported (and the
# bridge installed), then runs a layer: the observer sees it, the
# fallback's modes (per thread, pushed on threads started later) do not.
import threading

go = threading.Event()
out = {}


def work():
    go.wait()
    out["early"] = layer(x)


early = threading.Thread(target=work, name="early")
early.start()
import torch  # noqa: E402  (the bridge arms here)

layer = torch.nn.Linear(8, 8)
x = torch.randn(2, 8)
go.set()
early.join()
late = threading.Thread(target=lambda: out.update(late=layer(x)), name="late")
late.start()
late.join()
print(out["early"].dtype, out["late"].dtype)
