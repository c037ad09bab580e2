# A multiprocessing child (fork and spawn) records as a process of its own.
import multiprocessing as mp
import torch
def child():
    layer = torch.nn.Linear(4, 4)
    with torch.autocast("cpu", torch.bfloat16):
        layer(torch.randn(2, 4))
if __name__ == "__main__":
    for method in ("fork", "spawn"):
        p = mp.get_context(method).Process(target=child)
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
    child()
    print("done")
