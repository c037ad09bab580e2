# A fork() the moment the converter of a trace() block has started, as
# another thread of the program may make it: the child must not keep the
# converter's pipe, or the block's end waits for the child.  The fork is
# made here, in the one thread, right after subprocess.Popen returns.
import os
import subprocess
import sys
import time
import amptrace_torch

started = subprocess.Popen
children = []


def popen_then_fork(*args, **kwargs):
    converter = started(*args, **kwargs)
    pid = os.fork()
    if pid == 0:
        time.sleep(20)
        os._exit(0)
    children.append(pid)
    return converter


if __name__ == "__main__":
    subprocess.Popen = popen_then_fork
    with amptrace_torch.trace(sys.argv[1]):
        pass
    subprocess.Popen = started
    pid = children[0]
    ended_first = os.waitpid(pid, os.WNOHANG) == (0, 0)
    if ended_first:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    print("the block ended while the child ran" if ended_first else
          "the block waited for the child")
