"""TAP output for the PyTorch bridge's test scripts: one line per check,
the reason under a failed one, the plan and the exit status at the end."""
import functools
import sys

results = []


def check(what, ok, detail=""):
    results.append(bool(ok))
    print("%s - %s" % ("ok" if ok else "not ok", what))
    if not ok and detail:
        for line in str(detail).splitlines()[:20]:
            print("# " + line)


def scratch(prefix, keep=None):
    """A directory for the script's files, removed at exit when every
    check passed (or none ran: a skip) and kept, its path printed, when one
    failed or the script died of an exception, to look into; `keep` (a
    --keep DIR) is made and always kept."""
    import atexit
    import os
    import shutil
    import tempfile
    if keep:
        os.makedirs(keep, exist_ok=True)
        return keep
    path = tempfile.mkdtemp(prefix=prefix)

    def clean():
        # an uncaught exception is in sys.last_value by the time atexit runs
        if all(results) and not hasattr(sys, "last_value"):
            shutil.rmtree(path, ignore_errors=True)
        else:
            print("# kept for the failures: %s" % path)
    atexit.register(clean)
    return path


def done():
    """Prints the plan; the exit status says whether all passed."""
    print("1..%d" % len(results))
    return 0 if all(results) else 1


def bridge_missing(amptrace, python, need="import torch"):
    """Why the bridge cannot be tested here (None when it can): `python`
    cannot run `need` (no torch, or no CUDA device), or `amptrace` was
    built without the bridge."""
    import os
    import subprocess
    if not python:
        return ("no torch 2.13 environment was configured (meson "
                "-Dtorch2_python=PYTHON; ./run makes one: "
                "tests/torch/venv.sh main)")
    try:
        ran = subprocess.run([python, "-c", need], capture_output=True)
    except OSError as e:  # a configured venv since removed
        return "%s cannot be run: %s" % (python, e.strerror)
    if ran.returncode != 0:
        return "%s cannot run `%s`" % (python, need)
    if not os.path.isfile(os.path.join(os.path.dirname(amptrace), "torch",
                                       "sitecustomize.py")):
        return "amptrace was built without the PyTorch bridge"
    return None


@functools.lru_cache(maxsize=None)
def torch_release(python):
    """(major, minor) of the torch `python` runs (asked once per python:
    each asking imports torch, seconds)."""
    import subprocess
    p = subprocess.run([python, "-c",
                        "import torch; print(torch.__version__)"],
                       capture_output=True, text=True)
    return tuple(int(n) for n in p.stdout.split(".")[:2])


def torch2_required():
    """This is a torch 2.13 run (tests/meson.build sets AMPTRACE_TEST_TORCH)
    and a skip of it must fail (AMPTRACE_REQUIRE_TORCH2=1: .ci/run)."""
    import os
    return (os.environ.get("AMPTRACE_TEST_TORCH") == "2.13" and
            os.environ.get("AMPTRACE_REQUIRE_TORCH2") == "1")


def skip_unless_bridge(amptrace, python, need="import torch"):
    """TAP's skip (exit 77) when the bridge cannot be tested here; a
    failure instead when torch 2.13 is required and cannot be had (a
    missing GPU stays a skip)."""
    why = bridge_missing(amptrace, python)
    if why and torch2_required():
        check("torch 2.13 is required (AMPTRACE_REQUIRE_TORCH2=1)", False, why)
        sys.exit(done())
    why = why or bridge_missing(amptrace, python, need)
    if why:
        print("1..0 # SKIP %s" % why)
        sys.exit(77)
