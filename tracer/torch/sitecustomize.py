"""amptrace's injector for `amptrace run -- python3 PROG`.

`amptrace run` puts this file's directory first on PYTHONPATH, so Python
runs it at start-up in place of the sitecustomize it shadows (which it
imports in turn, as Python would have).  It imports nothing heavy: a
program that never imports torch pays a few hundred microseconds.  Right
after the program's own `import torch` it arms the bridge
(amptrace_torch), which records into the raw directory `amptrace run`
gave (AMPTRACE_RAW_DIR).
"""
import os
import sys
from _thread import get_ident

_HERE = os.path.dirname(os.path.abspath(__file__))


def _import_shadowed():
    """Imports the sitecustomize this one hides (Debian ships one; a
    program may have its own: a module, a package, a .pyc, one inside a
    zip on PYTHONPATH) as the module `sitecustomize`, the way site.py
    would have: it replaces this module in sys.modules, and an error in
    it reaches site.py, which reports it as it would have."""
    import importlib.machinery
    from importlib._bootstrap import module_from_spec  # importlib.util costs ms

    path = [p for p in sys.path if os.path.abspath(p or ".") != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        if sys.modules.get("sitecustomize") is module:
            del sys.modules["sitecustomize"]
        raise


class _ArmAfterTorch:
    """A meta path finder that only watches for `torch`: it lets the
    other finders find it and arms the bridge once torch has loaded.  It
    stays in place until then, whatever asked: a lookup alone
    (importlib.util.find_spec, as transformers and Lightning do first) is
    no import, and the spec it returns may be the one that loads torch
    later (a LazyLoader, module_from_spec + exec_module)."""

    def __init__(self):
        self.finding = set()  # threads inside find_spec (a finder after
        # this one may look torch up through sys.meta_path again)

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        thread = get_ident()
        if thread in self.finding:
            return None
        self.finding.add(thread)
        try:
            spec = self.others_spec(name, path, target)
        finally:
            self.finding.discard(thread)
        if spec is None:
            return None
        exec_module = getattr(spec.loader, "exec_module", None)
        if exec_module is None:
            return spec
        finder = self

        def exec_then_arm(module):
            exec_module(module)
            finder.torch_loaded()

        try:
            spec.loader.exec_module = exec_then_arm
        except (AttributeError, TypeError):  # a loader with __slots__
            pass
        return spec

    def others_spec(self, name, path, target):
        """The spec the finders after this one give (those before it
        have said no already)."""
        finders = list(sys.meta_path)
        if self in finders:
            finders = finders[finders.index(self) + 1:]
        for finder in finders:
            find = getattr(finder, "find_spec", None)
            spec = find(name, path, target) if find else None
            if spec is not None:
                return spec
        return None

    def torch_loaded(self):
        """torch has run its __init__ (an import that failed leaves the
        finder watching for the next try)."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
            _arm()


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


# Armed before the shadowed sitecustomize runs: it may import torch.
if os.environ.get("AMPTRACE_RAW_DIR"):
    sys.meta_path.insert(0, _ArmAfterTorch())
_import_shadowed()
