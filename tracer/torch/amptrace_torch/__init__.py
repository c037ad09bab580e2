"""amptrace's PyTorch bridge: records an unmodified PyTorch program's
autocast decisions (ops and their dtypes, every cast autocast inserts and
why, cache hits, regions, GradScaler) into an amptrace trace.

`amptrace run -- python3 train.py` loads it through sitecustomize.py.
"""
import os
import sys

_started = False


def _framework(torch, bridge):
    return "torch %s (policy table: %s)" % (
        torch.__version__, bridge.policy_table(torch.__version__))


def _start_from_run():
    """Called right after the program's `import torch` (sitecustomize)."""
    global _started
    raw_dir = os.environ.get("AMPTRACE_RAW_DIR")
    if _started or not raw_dir:
        return
    import atexit
    import torch
    from . import _bridge, _layer

    _bridge.attach(raw_dir, _framework(torch, _bridge))
    _started = True
    _layer.install(torch, _bridge)
    atexit.register(_bridge.mark_exit)
