#!/usr/bin/env python3
"""A PyTorch program SIGKILLed in a step recorded as aggregates
(FORMAT.md §3.12, §7): under `--steps none` in its first step, by default
in a later one.  The trace loads, has the process and its thread, a
process-died finding, the ops of the step in progress as aggregates cut
short (summary says so), and `amptrace run` says nothing untrue about it
(no "importing torch?", no "ran no torch op"); a Python that never
imports torch, killed, is still told so.  scenario_killed.py is the program.
TAP output; exit 77 (skip) without the bridge or without torch.

usage: test_killed.py AMPTRACE PYTHON
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import amptrace_run
from amptrace_run import events, findings, load
from tap import check, done, scratch, skip_unless_bridge

AMPTRACE = os.path.abspath(sys.argv[1])
PYTHON = shutil.which(sys.argv[2]) or sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
TMP = scratch("amptrace-killed-")


def killed(name, command, options=()):
    """`amptrace run OPTIONS -- COMMAND PIDFILE`, the program SIGKILLed
    once it wrote its pid there: (amptrace's status, its stderr, trace)."""
    path = os.path.join(TMP, name + ".json")
    pidfile = os.path.join(TMP, name + ".pid")
    amp = subprocess.Popen([AMPTRACE, "run", "-o", path, *options, "--",
                            *command, pidfile],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           text=True)
    deadline = time.monotonic() + 120
    while not os.path.exists(pidfile) and amp.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    if os.path.exists(pidfile):
        with open(pidfile) as f:
            os.kill(int(f.read()), signal.SIGKILL)
    else:
        amp.kill()
    err = amp.communicate(timeout=120)[1]
    return amp.returncode, err, path


def summary_json(path):
    p = subprocess.run([AMPTRACE, "summary", "--json", path],
                       capture_output=True, text=True)
    return json.loads(p.stdout) if p.returncode == 0 else {"error": p.stderr}


def aggregated(trace, op):
    """OP's count in the amp.aggregate rows cut short, and in all."""
    rows = [(e["args"].get("cut_short", False), r[6])
            for e in events(trace, "amp.aggregate")
            for r in e["args"]["ops"] if r[0] == op]
    return sum(n for cut, n in rows if cut), sum(n for cut, n in rows)


def summary_text(path):
    p = subprocess.run([AMPTRACE, "summary", path], capture_output=True,
                       text=True, env=dict(os.environ, COLUMNS="200"))
    return p.stdout


def metadata(trace, name):
    return [e for e in trace["traceEvents"] if e.get("ph") == "M" and
            e.get("name") == name]


def test_first_step():
    status, err, path = killed(
        "first", [PYTHON, os.path.join(HERE, "scenario_killed.py"), "0"],
        ["--steps", "none"])
    check("--steps none, killed in its first step: amptrace exits 137 (%d)"
          % status, status == 137, err)
    s = summary_json(path)
    check("... the trace loads", "error" not in s, s.get("error"))
    t = load(path)
    check("... and has the process and its thread",
          len(metadata(t, "process_name")) == 1 and
          metadata(t, "thread_name"), metadata(t, "process_name"))
    check("... and a process-died finding", "process-died" in findings(t),
          findings(t))
    check("... run does not ask whether it imports torch, nor says it ran "
          "no op", "no ops recorded" not in err, err)
    check("... the forward's ops are in it, cut short (linear, relu: %s, %s)"
          % (aggregated(t, "linear"), aggregated(t, "relu")),
          aggregated(t, "linear") == (2, 2) and
          aggregated(t, "relu") == (1, 1))
    text = summary_text(path)
    check("... and summary says step 0 was cut short (--json too)",
          "step 0 cut short (its process or its trace ended in it" in text and
          s.get("steps", {}).get("cut_short") == [0], (text, s.get("steps")))


def test_later_step():
    status, err, path = killed(
        "later", [PYTHON, os.path.join(HERE, "scenario_killed.py"), "25"])
    t = load(path)
    check("killed in step 25, recorded as aggregates: exit 137 (%d), "
          "process-died" % status,
          status == 137 and "process-died" in findings(t), err)
    check("... the step's forward is in the trace, cut short (linear: %s)"
          % (aggregated(t, "linear"),),
          aggregated(t, "linear") == (2, 12) and
          aggregated(t, "relu") == (1, 6))
    text = summary_text(path)
    check("... summary: 20 steps in full detail, 6 as aggregates, step 25 "
          "cut short", "steps: 26 (marked by optimizer step); 20 in full "
          "detail, 6 as per-step aggregates; step 25 cut short" in text,
          text)


def test_never_imported():
    status, err, path = killed(
        "plain", [PYTHON, "-c", "import os, signal, sys\n"
                  "open(sys.argv[1] + '.tmp', 'w').write(str(os.getpid()))\n"
                  "os.rename(sys.argv[1] + '.tmp', sys.argv[1])\n"
                  "signal.pause()"])
    check("a Python that never imports torch, killed: exit 137 (%d), no "
          "process in the trace" % status, status == 137 and
          not metadata(load(path), "process_name"), err)
    check("... and run says it never imported torch",
          "never imported torch" in err, err)


skip_unless_bridge(AMPTRACE, PYTHON)
for test in (test_first_step, test_later_step, test_never_imported):
    test()
sys.exit(done())
