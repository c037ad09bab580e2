# A fork() by another thread of the program the moment a trace() block's
# converter pipe is made or let go of: the child must not keep the pipe,
# or the block's end waits for the child.  "start": the fork is made here,
# in the one thread, right after subprocess.Popen returns.  "end": a
# second thread forks the moment the block's end unlists the pipe (that
# thread's fork waits for the block, up to a second, when it must).
# argv: TRACE MODE
import os
import subprocess
import sys
import threading
import time
import amptrace_torch

children = []


def fork_a_sleeper():
    pid = os.fork()
    if pid == 0:
        time.sleep(20)
        os._exit(0)
    children.append(pid)


def fork_after_popen():
    started = subprocess.Popen

    def popen_then_fork(*args, **kwargs):
        converter = started(*args, **kwargs)
        fork_a_sleeper()
        return converter
    subprocess.Popen = popen_then_fork
    return lambda: setattr(subprocess, "Popen", started)


class ForkOnUnlisting(dict):
    """The block's pipes: unlisting one has another thread fork."""
    def __init__(self):
        super().__init__()
        self.asked, self.forked = threading.Event(), threading.Event()

    def pop(self, *args):
        value = super().pop(*args)
        self.asked.set()
        self.forked.wait(1)
        return value


def fork_at_unlisting():
    pipes = amptrace_torch._converter_pipes = ForkOnUnlisting()

    def forker():
        pipes.asked.wait()
        fork_a_sleeper()
        pipes.forked.set()
    thread = threading.Thread(target=forker)
    thread.start()
    return thread.join


if __name__ == "__main__":
    path, mode = sys.argv[1:3]
    done = fork_after_popen() if mode == "start" else fork_at_unlisting()
    with amptrace_torch.trace(path):
        pass
    done()
    pid = children[0]
    ended_first = os.waitpid(pid, os.WNOHANG) == (0, 0)
    if ended_first:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    print("the block ended while the child ran" if ended_first else
          "the block waited for the child")
