"""The one way the PyTorch tests run a program under `amptrace run` and
read its trace back (test_torch_bridge.py, test_torch_fallback.py,
test_torch_gpu.py): the command line, the output captured as text, the
trace as JSON, and the questions every test asks of it."""
import json
import os
import subprocess


def run(amptrace, command, trace, env=None, timeout=300, options=(),
        check=False):
    """`amptrace run -q -o TRACE OPTIONS... -- COMMAND...`; the
    CompletedProcess, its stdout and stderr captured as text (`check`:
    raise when it exits non-zero, as subprocess.run)."""
    return subprocess.run([amptrace, "run", "-q", "-o", trace, *options,
                           "--", *command],
                          capture_output=True, text=True, env=env,
                          timeout=timeout, check=check)


def keep(process, trace):
    """Writes `process`'s exit status, stdout and stderr beside `trace`
    (TRACE without .json, then .run), for kept() in another test that
    checks the same run of the same program."""
    with open(trace[:-len(".json")] + ".run", "w") as f:
        json.dump({"args": process.args, "returncode": process.returncode,
                   "stdout": process.stdout, "stderr": process.stderr}, f)


def kept(trace):
    """The process keep() wrote beside `trace`, as a CompletedProcess;
    None when there is none or no trace."""
    try:
        with open(trace[:-len(".json")] + ".run") as f:
            k = json.load(f)
    except OSError:
        return None
    if not os.path.isfile(trace):
        return None
    return subprocess.CompletedProcess(k["args"], k["returncode"],
                                       k["stdout"], k["stderr"])


def load(path):
    """The trace at `path` as JSON."""
    with open(path) as f:
        return json.load(f)


def events(trace, cat):
    """The events of category `cat` (`amp.op`, `amp.cast`, ...)."""
    return [e for e in trace["traceEvents"] if e.get("cat") == cat]


def ops(trace, name=None):
    """The args of every amp.op, or of those of op `name`."""
    return [e["args"] for e in events(trace, "amp.op")
            if name is None or e["args"]["op"] == name]


def casts(trace, op=None):
    """The args of every amp.cast, or of those made for op `op`."""
    return [e["args"] for e in events(trace, "amp.cast")
            if op is None or e["args"]["op"] == op]


def findings(trace):
    """The kinds of the trace's amp.diag events, in order."""
    return [e["args"]["kind"] for e in events(trace, "amp.diag")]
