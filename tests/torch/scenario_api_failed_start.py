# A trace() whose start failed (amptrace run refused its --steps) never
# ends; a child the program forks later keeps every file of its own: the
# fd the failed block's pipe had is the program's now.
import gc
import os
import sys
import amptrace_torch

if __name__ == "__main__":
    try:
        with amptrace_torch.trace(sys.argv[1], steps="bogus"):
            pass
    except RuntimeError:
        pass
    gc.collect()  # the failed block's pipe closes: its fd is free
    files = [open(__file__) for _ in range(8)]
    text = files[0].read()
    pid = os.fork()
    if pid == 0:
        try:
            kept = sum(f.seek(0) == 0 and f.read() == text for f in files)
        except OSError:
            kept = 0
        os._exit(0 if kept == len(files) else 1)
    _, status = os.waitpid(pid, 0)
    print("child kept its files" if status == 0 else "child lost a file")
