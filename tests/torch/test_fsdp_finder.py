#!/usr/bin/env python3
"""_fsdp.py's meta path finder (_AfterImport), which waits for FSDP's
modules to be imported to wrap them, against import machinery a program
may use, without torch: made-up modules stand for FSDP's, served by one
loader for all (as a zipimporter serves an archive, or a custom loader).

- The action runs once, on the module waited for, though the loader
  executes another module (imported by it) while it runs, and one after.
- The loader is left as it was (no exec_module of ours on it), and the
  finder leaves sys.meta_path once nothing is left to wait for.
- A loader that is a class (BuiltinImporter's kind) is not patched: its
  method would be everyone's.
- The finder removed from sys.meta_path by the program meanwhile: the
  import still succeeds.

TAP output.  usage: test_fsdp_finder.py BRIDGE_DIR (tracer/torch)
"""
import importlib.util
import os
import sys

from tap import check, done

BRIDGE = os.path.join(os.path.abspath(sys.argv[1]), "amptrace_torch",
                      "_fsdp.py")
spec = importlib.util.spec_from_file_location("_fsdp_under_test", BRIDGE)
fsdp = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fsdp)

SOURCES = {
    "fakefsdp": "",
    # the module waited for imports another the same loader serves
    "fakefsdp.state": "from fakefsdp import helper\nclass FSDPState: pass\n",
    "fakefsdp.helper": "VALUE = 1\n",
    "fakefsdp.later": "VALUE = 2\n",
}


class SharedLoader:
    """One instance loads every fakefsdp module."""

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(SOURCES[module.__name__], module.__dict__)


class ClassLoader:
    """A loader that is a class, its methods class methods."""

    @classmethod
    def create_module(cls, spec):
        return None

    @classmethod
    def exec_module(cls, module):
        exec(SOURCES[module.__name__], module.__dict__)


class Finder:
    def __init__(self, loader):
        self.loader = loader

    def find_spec(self, name, path=None, target=None):
        if name not in SOURCES:
            return None
        return importlib.util.spec_from_loader(
            name, self.loader, is_package=name == "fakefsdp")


def forget():
    for name in SOURCES:
        sys.modules.pop(name, None)


def watching(loader):
    """sys.meta_path with the program's Finder last and _AfterImport
    first, as install() puts it; the modules each action ran on."""
    forget()
    acted = []
    finder = Finder(loader)
    sys.meta_path.append(finder)
    after = fsdp._AfterImport(
        {"fakefsdp.state": acted.append},
        lambda e: acted.append(("failed", e)))
    sys.meta_path.insert(0, after)
    return acted, after, finder


def test_shared_loader():
    loader = SharedLoader()
    acted, after, finder = watching(loader)
    import fakefsdp.state
    import fakefsdp.later
    check("a shared loader: the action ran once, on the module waited for",
          [getattr(m, "__name__", m) for m in acted] == ["fakefsdp.state"]
          and hasattr(acted[0], "FSDPState"), acted)
    check("a shared loader: left as it was (no exec_module of ours)",
          "exec_module" not in vars(loader), vars(loader))
    check("the finder left sys.meta_path, nothing left to wait for",
          after not in sys.meta_path, sys.meta_path)
    check("the modules imported as they would be",
          fakefsdp.state.helper.VALUE == 1 and fakefsdp.later.VALUE == 2)
    sys.meta_path.remove(finder)


def test_class_loader():
    acted, after, finder = watching(ClassLoader)
    method = ClassLoader.__dict__["exec_module"]
    import fakefsdp.state  # noqa: F401
    check("a loader that is a class: not patched",
          ClassLoader.__dict__["exec_module"] is method,
          ClassLoader.__dict__["exec_module"])
    sys.meta_path.remove(finder)
    if after in sys.meta_path:
        sys.meta_path.remove(after)


def test_removed_by_the_program():
    acted, after, finder = watching(SharedLoader())
    real_find = after.find_spec

    def find_then_leave(name, *args):
        spec = real_find(name, *args)
        if name == "fakefsdp.state" and after in sys.meta_path:
            sys.meta_path.remove(after)  # a program resetting meta_path
        return spec

    after.find_spec = find_then_leave
    try:
        import fakefsdp.state  # noqa: F401
        ok = True
    except Exception as e:
        ok = e
    check("the finder gone from sys.meta_path meanwhile: the import "
          "succeeds, the action ran", ok is True and len(acted) == 1,
          (ok, acted))
    sys.meta_path.remove(finder)


test_shared_loader()
test_class_loader()
test_removed_by_the_program()
sys.exit(done())
