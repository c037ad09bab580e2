#!/usr/bin/env python3
"""amptrace run's progress line, on a real terminal (a pty) and off it:
drawn on a terminal while the program runs (events, trace size, step),
rewritten in place and cleared before the closing line; never in a pipe
unless AMPTRACE_PROGRESS=1 asks; never with -q.

The program is trace_prog hang: it records its ops, then waits to be
killed, so it runs as long as the test needs on any machine.

Then summary and ampview reading a trace of over 100 MB: a line on a
terminal (how far through the file), none in a pipe.

usage: test_progress.py AMPTRACE TRACE_PROG AMPVIEW   (TAP lines)
"""
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time

AMPTRACE, TRACE_PROG, AMPVIEW = sys.argv[1:4]
LINE = b"\ramptrace run: "
failed = 0


def check(ok, what, detail=b""):
    global failed
    print("%s - %s" % ("ok" if ok else "not ok", what))
    if not ok:
        failed = 1
        print("# output: %r" % detail[-600:])


def wait_for_pid(pidfile, deadline):
    while time.monotonic() < deadline:
        try:
            with open(pidfile) as f:
                return int(f.read())
        except (OSError, ValueError):
            time.sleep(0.05)
    return None


def run(work, args, terminal, env_extra=None, seconds=2.5, stdout_too=False):
    """amptrace run ARGS -- trace_prog hang, its stderr a pty or a pipe
    (and its stdout that pty too when `stdout_too`); the program is
    killed after `seconds`; returns what the pty or stderr got."""
    pidfile = os.path.join(work, "pid")
    if os.path.exists(pidfile):
        os.unlink(pidfile)
    command = [AMPTRACE, "run", "-o", os.path.join(work, "t.json")] + args + [
        "--", TRACE_PROG, "hang", "1000", pidfile]
    env = dict(os.environ, TERM="xterm", COLUMNS="120")
    env.pop("AMPTRACE_PROGRESS", None)
    env.update(env_extra or {})
    if terminal:
        master, slave = pty.openpty()
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                stdout=slave if stdout_too
                                else subprocess.DEVNULL, stderr=slave,
                                env=env)
        os.close(slave)
    else:
        master = None
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, env=env)
    deadline = time.monotonic() + 60
    pid = wait_for_pid(pidfile, deadline)
    time.sleep(seconds)
    if pid:
        os.kill(pid, signal.SIGTERM)
    if not terminal:
        out = proc.communicate(timeout=60)[1]
        return out
    out = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the other side closed
            break
        if not chunk:
            break
        out += chunk
    proc.wait(timeout=60)
    os.close(master)
    return out


def read_pty(command):
    """What `command` writes with stdout and stderr on one terminal."""
    pid, master = pty.fork()
    if pid == 0:
        os.environ.update(TERM="xterm")
        os.environ.pop("AMPTRACE_PROGRESS", None)
        os.execv(command[0], command)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    os.close(master)
    return out


with tempfile.TemporaryDirectory() as work:
    out = run(work, [], terminal=True)
    check(LINE in out and b" events, " in out and b" MB, step " in out,
          "on a terminal: the progress line (events, size, step)", out)
    check(b"\x1b[K" in out, "on a terminal: rewritten in place (erase to "
          "the end of the line)", out)
    closing = out.rfind(b"amptrace run: " + TRACE_PROG.encode())
    check(closing > 0 and out[:closing].endswith(b"\r\x1b[K"),
          "on a terminal: cleared before the closing line", out)
    check(out.count(b"\n") <= 2, "on a terminal: one line, not a scroll "
          "of them", out)

    out = run(work, ["-q"], terminal=True)
    check(LINE not in out, "-q: no progress line on a terminal", out)

    # the program's output on that terminal too: its lines would be
    # written over the progress line and keep its tail on the screen
    out = run(work, [], terminal=True, stdout_too=True)
    check(LINE not in out and b"was killed by SIGTERM" in out,
          "the program's stdout on the same terminal: no progress line",
          out)

    out = run(work, [], terminal=False)
    check(b"\r" not in out and b"\x1b" not in out,
          "in a pipe: no progress line", out)
    check(b"was killed by SIGTERM" in out, "in a pipe: the closing line "
          "as before", out)

    out = run(work, [], terminal=False, env_extra={"AMPTRACE_PROGRESS": "1"})
    check(LINE in out, "in a pipe with AMPTRACE_PROGRESS=1: the progress "
          "line", out)

    out = run(work, [], terminal=True, env_extra={"TERM": "dumb"})
    check(LINE not in out, "TERM=dumb: no progress line", out)

    # Reading a big trace (over 100 MB): summary and ampview show a line.
    big = os.path.join(work, "big.json")
    subprocess.run([AMPTRACE, "run", "-q", "-o", big, "--steps", "all",
                    "--", TRACE_PROG, "mlp", "5000"],
                   stdout=subprocess.DEVNULL, check=True)
    size = os.path.getsize(big)
    check(size > 100e6, "a trace of %.0f MB to read" % (size / 1e6))
    for who, command in (
            ("amptrace summary", [AMPTRACE, "summary", big]),
            ("ampview", [AMPVIEW, big, "-o", os.path.join(work, "big.svg")])):
        out = read_pty(command)
        check(b"\r" + who.encode() + b": reading " in out and b"% of " in out,
              "%s on a terminal: reading ..., N%% of the file" % who, out)
        done = subprocess.run(command, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
        check(b"reading" not in done.stderr and b"\r" not in done.stderr,
              "%s in a pipe: no progress line" % who, done.stderr)
    out = read_pty([AMPTRACE, "summary", big])
    table = out.find(big.encode() + b": amptrace trace format")
    check(table > 0 and out[:table].endswith(b"\r\x1b[K"),
          "summary: the line is cleared before the table", out)
sys.exit(failed)
