# Multiprocessing children (fork and spawn) and a subprocess child record
# as processes of their own.
import multiprocessing as mp
import subprocess
import sys

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
    subprocess.run([sys.executable, "-c",
                    "import torch; torch.nn.Linear(4, 4)(torch.randn(2, 4))"],
                   check=True)
    child()
    print("done")
