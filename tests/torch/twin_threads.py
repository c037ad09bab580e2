# PyTorch twin of samples/threads.c: the DataParallel pitfall.  Worker
# threads do not inherit the main thread's autocast; the fix enters
# autocast inside the forward.  usage: twin_threads.py [STEPS]
import sys
import threading

import torch
from twin_common import batch, mlp, scaler, sgd, train_step


def data_parallel(model, x, autocast_in_forward, n=2):
    outputs = [None] * n

    def replica(i, part):
        if autocast_in_forward:
            with torch.autocast("cpu", torch.bfloat16):
                outputs[i] = model(part)
        else:
            outputs[i] = model(part)

    rows = x.shape[0]
    threads = [threading.Thread(target=replica, args=(
        i, x[rows * i // n:rows * (i + 1) // n])) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return torch.cat(outputs, 0)


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 30
torch.manual_seed(9)
model = mlp(64, 3)
optimizer, grad_scaler = sgd(model.parameters()), scaler()
x, target = batch(32, 64)
with torch.autocast("cpu", torch.bfloat16):
    out = data_parallel(model, x, False)
print("autocast in the main thread only: the workers produced", out.dtype)
for step in range(1, steps + 1):
    x, target = batch(32, 64)
    optimizer.zero_grad()
    with torch.autocast("cpu", torch.bfloat16):
        out = data_parallel(model, x, True)
        loss = torch.nn.functional.cross_entropy(out, target)
    train_step(loss, optimizer, grad_scaler)
    print("step %d loss %.4f" % (step, loss.item()))
