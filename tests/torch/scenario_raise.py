# A failed op whose exception ends the program (argv[1] "main"), a worker
# thread ("thread"), or is caught and followed by another uncaught error:
# after another op ("later"), or right after it but of a kind torch does
# not raise for ops ("other"), or of a kind it does, raised by the program
# ("raised").
import sys
import threading
import torch

a, b = torch.randn(2, 3), torch.randn(4, 5)
mode = sys.argv[1]
if mode == "main":
    torch.mm(a, b)
elif mode == "thread":
    worker = threading.Thread(target=torch.mm, args=(a, b), name="worker")
    worker.start()
    worker.join()
    print("main goes on")
else:
    try:
        torch.mm(a, b)
    except RuntimeError:
        pass
    if mode == "later":
        torch.relu(a)
        raise RuntimeError("the program's own error")
    if mode == "raised":
        raise ValueError("the program's own error")
    raise KeyError("the program's own error")
