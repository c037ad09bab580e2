"""Which trace() block records this process.

A child forked inside a block is recorded into that block's raw
directory (the producer's at-fork handler attaches it there, as `amptrace
run` records a forked child): while the block runs, the child's work is
in the parent's trace, so a trace() of its own is refused before
anything is made.  Once the block has ended (its raw directory is gone)
nothing records the child, and its own trace() records it.
"""
import os

_block = None  # (raw directory, pid) of the running block


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
    global _block
    _block = None
