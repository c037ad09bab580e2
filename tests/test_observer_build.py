#!/usr/bin/env python3
"""The PyTorch observer's first-use build (tracer/torch/amptrace_torch/
_observer.py) killed half-way: its compiler, and the compiler's own
children (cc1plus, as, ld), end with it, even when it was SIGKILLed; the
next build removes what it left in the cache.  A fake compiler stands in
for g++ (a driver that starts a long-running child, as g++ starts
cc1plus), so no torch and no real compile are needed.

    test_observer_build.py OBSERVER_PY
"""
import importlib.util
import os
import signal
import subprocess
import sys
import tempfile
import time

OBSERVER_PY = sys.argv[1]

FAKE_COMPILER = r"""#!/bin/sh
# fake g++: OUT PIDFILE MODE; a child like cc1plus, then the output
out=$1; pidfile=$2; mode=$3
if [ "$mode" = slow ]; then
	sleep 300 &
	echo "$$ $!" >"$pidfile.tmp" && mv "$pidfile.tmp" "$pidfile"
	wait
fi
echo library >"$out"
"""

# The build, in a process of its own (the one the test kills).
BUILDER = r"""
import importlib.util, sys
spec = importlib.util.spec_from_file_location("_observer", sys.argv[1])
observer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(observer)
fake, pidfile, mode, target = sys.argv[2:6]
observer._compiler = lambda: fake
observer._command = lambda torch, compiler, src, out: [compiler, out, pidfile, mode]
class Torch:
    __version__ = "0.0-test"
observer._build(Torch, "unused", target)
"""

failures = 0


def check(what, ok):
    global failures
    print("%s - %s" % ("ok" if ok else "not ok", what))
    failures += not ok


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    return not any(alive(p) for p in pids)


def build(work, mode, target):
    pidfile = os.path.join(work, "compiler.pid")
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    return pidfile, subprocess.Popen(
        [sys.executable, "-c", BUILDER, OBSERVER_PY,
         os.path.join(work, "g++"), pidfile, mode, target],
        stderr=subprocess.DEVNULL)


with tempfile.TemporaryDirectory() as work:
    fake = os.path.join(work, "g++")
    with open(fake, "w") as f:
        f.write(FAKE_COMPILER)
    os.chmod(fake, 0o755)
    cache = os.path.join(work, "cache")
    target = os.path.join(cache, "_observer.so")

    # --- the build SIGKILLed while its compiler runs
    pidfile, builder = build(work, "slow", target)
    deadline = time.time() + 20
    while not os.path.exists(pidfile) and time.time() < deadline:
        time.sleep(0.05)
    compiler_pids = [int(p) for p in open(pidfile).read().split()] \
        if os.path.exists(pidfile) else []
    check("the fake compiler started", len(compiler_pids) == 2)
    builder.send_signal(signal.SIGKILL)
    builder.wait()
    gone = wait_gone(compiler_pids, 10)
    check("the build SIGKILLed: its compiler and the compiler's child end "
          "with it", gone)
    for pid in compiler_pids:  # never leave them running, whatever failed
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    left = os.listdir(cache)
    check("... its build directory is left in the cache (%s)" % left,
          any(n.startswith("build-") for n in left))
    open(os.path.join(cache, "tmpk2j4x.so"), "w").close()  # an older one's

    # --- the next build removes what the killed ones left
    pidfile, builder = build(work, "fast", target)
    status = builder.wait(timeout=60)
    left = sorted(os.listdir(cache))
    check("the next build succeeds (%d)" % status, status == 0)
    check("... and leaves only the library and its lock (%s)" % left,
          left == ["_observer.so", "_observer.so.lock"])

sys.exit(1 if failures else 0)
