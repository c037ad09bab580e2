"""amptrace's injector for `amptrace run -- python3 PROG`.

`amptrace run` puts this file's directory first on PYTHONPATH, so Python
runs it at start-up in place of the sitecustomize it shadows (which it
runs in turn).  It imports nothing heavy: a program that never imports
torch pays a few hundred microseconds.  Right after the program's own
`import torch` it arms the bridge (amptrace_torch), which records into
the raw directory `amptrace run` gave (AMPTRACE_RAW_DIR).
"""
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _chain_shadowed():
    """Runs the sitecustomize.py this one hides (Debian ships one)."""
    for entry in sys.path:
        if os.path.abspath(entry or ".") == _HERE:
            continue
        path = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(path):
            with open(path, "rb") as f:
                code = compile(f.read(), path, "exec")
            exec(code, {"__name__": "sitecustomize", "__file__": path})
            return


class _ArmAfterTorch:
    """A meta path finder that only watches for `torch`: it lets the
    other finders find it and runs the bridge once torch has loaded."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        exec_module = spec.loader.exec_module

        def exec_then_arm(module):
            exec_module(module)
            _arm()

        spec.loader.exec_module = exec_then_arm
        return spec


def _import_bridge():
    """The amptrace_torch package that came with this file, whichever
    Python runs: beside it (the build tree, meson install) or above it
    (pip: site-packages/amptrace_torch/_run/python).  Loaded from there
    without putting that directory on sys.path, which for pip is a whole
    environment's site-packages, maybe of another Python."""
    if "amptrace_torch" in sys.modules:
        return sys.modules["amptrace_torch"]
    import importlib.util
    here = _HERE
    while not os.path.isfile(os.path.join(here, "amptrace_torch",
                                          "__init__.py")):
        parent = os.path.dirname(here)
        if parent == here:
            raise ImportError("no amptrace_torch package above %s" % _HERE)
        here = parent
    package = os.path.join(here, "amptrace_torch")
    spec = importlib.util.spec_from_file_location(
        "amptrace_torch", os.path.join(package, "__init__.py"),
        submodule_search_locations=[package])
    module = importlib.util.module_from_spec(spec)
    sys.modules["amptrace_torch"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules["amptrace_torch"]
        raise
    return module


def _arm():
    try:
        amptrace_torch = _import_bridge()
        amptrace_torch._start_from_run()
    except Exception as e:  # never harm the traced program
        sys.stderr.write("amptrace: the PyTorch bridge could not start, "
                         "nothing is recorded from this process: %s\n" % e)


def _no_torch_note():
    if "torch" in sys.modules:
        return
    import importlib.machinery
    if importlib.machinery.PathFinder.find_spec("torch") is None:
        sys.stderr.write(
            "amptrace: %s has no torch, so nothing was recorded from it "
            "(the python on PATH is not the one with torch: activate the "
            "environment that has it, name its python, or "
            "pip install torch there)\n" % sys.executable)


_chain_shadowed()
if os.environ.get("AMPTRACE_RAW_DIR"):
    sys.meta_path.insert(0, _ArmAfterTorch())
    if os.environ.get("AMPTRACE_TORCH_NOTE") == "1":
        # Said once, by the process amptrace started, not by its children.
        os.environ["AMPTRACE_TORCH_NOTE"] = "0"
        import atexit
        atexit.register(_no_torch_note)
