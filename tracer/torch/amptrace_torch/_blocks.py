"""Which trace() block records this process, and the processes an ended
block leaves running (a DataLoader's persistent workers).

A child forked inside a block is recorded into that block's raw
directory (the producer's at-fork handler attaches it there, as `amptrace
run` records a forked child): while the block runs, the child's work is
in the parent's trace, so a trace() of its own is refused before
anything is made.  Once the block has ended (its raw directory is gone)
nothing records the child, and its own trace() records it.

A child knows no later block: it learns where to record only at fork(),
and a block's raw directory is told to no process already running.  So
the workers of an earlier block are not in a later block's trace, and
the later block says so (the finding workers-unrecorded) rather than
leave a reader to think they did nothing.  Following them would take a
channel shared from the first block on (as producer_steps.c shares its
step state) read on every event, and a re-attach in the child from
whichever of its threads sees the news first, while its other threads
write: the producer's raw paths are written unguarded at attach, safe
only because nothing else records then.
"""
import os

_block = None  # (raw directory, pid) of the running block
# (pid, start time) of processes this process's ended blocks left running,
# by the pid of the process whose blocks they were (a forked child
# inherits its parent's, not its own)
_left_running = {}


def refusal():
    """Why this process cannot open a trace() block, or None."""
    if os.environ.get("AMPTRACE_RAW_DIR"):
        return "already recorded by amptrace run"
    if _block is None:
        return None
    raw_dir, pid = _block
    if pid == os.getpid():
        return "a trace() block is recording this process already " \
               "(blocks do not nest)"
    if os.path.isdir(raw_dir):
        return "this process was forked inside a trace() block of " \
               "process %d, which records it: its work is in that " \
               "block's trace" % pid
    return None


def forked_from_ended_block():
    """A child forked inside a block that has ended since: its recording
    into the block's removed raw directory is to be let go of."""
    return _block is not None and _block[1] != os.getpid()


def begun(raw_dir):
    global _block
    _block = (raw_dir, os.getpid())


def ended():
    """Before the converter is told the end: the processes the block
    recorded that are still running (no exit mark), for later blocks."""
    global _block
    raw_dir, pid = _block
    _block = None
    if pid != os.getpid():  # a child leaving its parent's block
        return
    for name in _entries(raw_dir):
        pid = _pid_of(name)
        if pid and pid != os.getpid() and \
                not os.path.exists(os.path.join(raw_dir, name, "exit")):
            start = _start_time(pid)
            left = _left_running.setdefault(os.getpid(), [])
            if start is not None and (pid, start) not in left:
                left.append((pid, start))


def unrecorded():
    """The pids of processes earlier blocks left running that still run
    (the same process: its start time, not a later one that took its
    pid)."""
    left = [(pid, start) for pid, start in
            _left_running.get(os.getpid(), []) if _start_time(pid) == start]
    _left_running[os.getpid()] = left
    return [pid for pid, _ in left]


def _entries(raw_dir):
    try:
        return os.listdir(raw_dir)
    except OSError:
        return []


def _pid_of(name):
    """p1234 or p1234-2 (a second image of pid 1234): 1234."""
    digits = name[1:].split("-")[0]
    return int(digits) if name.startswith("p") and digits.isdigit() else 0


def _start_time(pid):
    """/proc/PID/stat's starttime, None when the process is gone or a
    zombie (it ended: its parent has not reaped it yet)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]
