"""The one way the PyTorch tests run a program under `amptrace run` and
read its trace back (test_torch_bridge.py, test_torch_fallback.py,
test_torch_gpu.py): the command line, the output captured as text, the
trace as JSON, and the questions every test asks of it."""
import json
import os
import subprocess


def command_line(amptrace, command, trace, options=()):
    """`amptrace run -q -o TRACE OPTIONS... -- COMMAND...` as a list."""
    return [amptrace, "run", "-q", "-o", trace, *options, "--", *command]


def run(amptrace, command, trace, env=None, timeout=300, options=(),
        check=False):
    """`amptrace run -q -o TRACE OPTIONS... -- COMMAND...`; the
    CompletedProcess, its stdout and stderr captured as text (`check`:
    raise when it exits non-zero, as subprocess.run)."""
    return subprocess.run(command_line(amptrace, command, trace, options),
                          capture_output=True, text=True, env=env,
                          timeout=timeout, check=check)


# torch 2.13's gloo aborts a rank at exit now and then, plain or traced,
# torchrun's ranks and mp.spawn's alike: a gloo worker drops its last
# work, whose thread state holds a Python object, after finalization
# began (4 of 18 plain torchrun runs on a loaded 2-core machine).
GLOO_EXIT_RACE = "terminate called without an active exception"


def run_again_on(causes, attempt, tries=3):
    """attempt(k), k = 0, 1, ...: a CompletedProcess; run again while it
    failed of exactly one of `causes` (words of its stderr), `tries` runs
    at most, each said; the last one's result."""
    for k in range(tries):
        result = attempt(k)
        if result.returncode == 0 or \
                not any(cause in result.stderr for cause in causes):
            return result
        print("# failed of %s (try %d of %d)" %
              ([c for c in causes if c in result.stderr][0], k + 1, tries))
    return result


def keep(process, trace, env=None):
    """Writes `process`'s exit status, stdout and stderr beside `trace`
    (TRACE without .json, then .run), for kept() in another test that
    checks the same run of the same program: with the variables `env`
    set or unset against this process's environment, and the trace's
    size and time (a trace the run did not write is not its)."""
    env = os.environ if env is None else env
    changed = sorted(set(k for k in env if os.environ.get(k) != env[k]) |
                     set(k for k in os.environ if k not in env))
    try:
        written = _stamp(trace)
    except OSError:
        written = None
    with open(_kept_path(trace), "w") as f:
        json.dump({"args": process.args, "returncode": process.returncode,
                   "stdout": process.stdout, "stderr": process.stderr,
                   "env_changed": changed, "trace": written}, f)


def forget(trace):
    """Removes `trace` and what keep() wrote beside it, before another
    run writes it: neither may be taken for the new run's."""
    for path in (trace, _kept_path(trace)):
        try:
            os.remove(path)
        except FileNotFoundError:
            pass


def kept(trace):
    """The process keep() wrote beside `trace`, as a CompletedProcess
    (its env_changed: the variables its run set or unset); None when
    there is none, or the trace is not the one that run wrote."""
    try:
        with open(_kept_path(trace)) as f:
            k = json.load(f)
        if k["trace"] is None or _stamp(trace) != k["trace"]:
            return None
    except OSError:
        return None
    p = subprocess.CompletedProcess(k["args"], k["returncode"],
                                    k["stdout"], k["stderr"])
    p.env_changed = k["env_changed"]
    return p


def _kept_path(trace):
    return trace[:-len(".json")] + ".run"


def _stamp(path):
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


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
