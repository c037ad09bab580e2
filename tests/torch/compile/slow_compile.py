"""A backend that takes its time: the test kills the program while it
compiles."""
import os
import sys
import time

import torch


def slow(gm, example_inputs):
    print("compiling", os.getpid(), flush=True)
    time.sleep(60)
    return gm.forward


with torch.autocast("cpu", dtype=torch.bfloat16):
    torch.compile(lambda x: x @ x, backend=slow)(torch.randn(4, 4))
sys.exit(3)
