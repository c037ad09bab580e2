# A trace() of its own in a process a trace() block already records:
# a child forked inside the block ("inside"), the same child once the
# block has ended ("after"), the block's own process ("nested").  The
# refused ones print why and make no file; the child inside the block is
# in the parent's trace.  argv: DIR MODE
import os
import sys
import torch
import amptrace_torch


def work():
    with torch.autocast("cpu", torch.bfloat16):
        torch.mm(torch.ones(2, 2), torch.ones(2, 2))


def own_trace(path):
    try:
        with amptrace_torch.trace(path):
            work()
        print("recorded")
    except RuntimeError as e:
        print("refused:", e)
    sys.stdout.flush()


if __name__ == "__main__":
    folder, mode = sys.argv[1:3]
    parent = os.path.join(folder, "parent.json")
    child = os.path.join(folder, "child.json")
    if mode == "nested":
        with amptrace_torch.trace(parent):
            own_trace(child)
            work()
        sys.exit(0)
    block_ended_r, block_ended_w = os.pipe()
    with amptrace_torch.trace(parent):
        work()
        pid = os.fork()
        if pid == 0:
            os.close(block_ended_w)
            if mode == "after":
                os.read(block_ended_r, 1)
            else:
                work()  # recorded in the parent's trace
            own_trace(child)
            os._exit(0)
        if mode == "inside":
            _, status = os.waitpid(pid, 0)
    os.close(block_ended_w)
    if mode == "after":
        _, status = os.waitpid(pid, 0)
    sys.exit(os.waitstatus_to_exitcode(status))
