# A trace() block whose process cannot attach once its converter has
# started (the producer refuses the raw directory): the block raises, and
# leaves no converter running and no file; a later block records.
# argv: DIR
import os
import sys
import torch
import amptrace_torch
from amptrace_torch import _bridge


def refuse(raw_dir, framework):
    raise RuntimeError("cannot record into " + raw_dir)


if __name__ == "__main__":
    folder = sys.argv[1]
    attach, _bridge.attach = _bridge.attach, refuse
    try:
        with amptrace_torch.trace(os.path.join(folder, "first.json")):
            print("entered")
    except RuntimeError as e:
        print("raised:", str(e).split(" into ")[0])
    _bridge.attach = attach
    with amptrace_torch.trace(os.path.join(folder, "second.json")):
        with torch.autocast("cpu", torch.bfloat16):
            torch.mm(torch.ones(2, 2), torch.ones(2, 2))
    print("recorded")
