# Threads with names of any str (a lone surrogate, a NUL, long multibyte
# text): each starts, runs an op and reports its OS thread name, which
# must stay the program's (the bridge names threads in the trace only).
import faulthandler
import os
import threading
import torch

faulthandler.dump_traceback_later(30, exit=True)  # a hang fails, not waits
NAMES = ["w\udc80", "a\0b", "\u00fc" * 20, "worker-1"]
seen = {}


def work(name):
    torch.ones(2) + 1
    with open("/proc/self/task/%d/comm" % threading.get_native_id()) as f:
        seen[name] = f.read().strip()


threads = [threading.Thread(target=work, args=(n,), name=n) for n in NAMES]
for t in threads:
    t.start()
for t in threads:
    t.join()
print([seen[n] for n in NAMES])
