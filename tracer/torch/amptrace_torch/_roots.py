"""The name each top-level module's tree goes under (FORMAT.md §3.2:
module; §3.3: a cast's name).

Module tracking (the `module` of ops), parameter naming (`fc1.weight`)
and compiled graphs (their casts' `module`) each meet a module whose tree
nobody has named yet; they all ask this one object, so an op's module
and its weight's name agree, and two models never share a name.  The
first top-level module with parameters that runs keeps "" (a one-model
program's names are its paths, `fc1`); each other one, a GAN's
discriminator, an EMA copy, a loss module called at top level, goes
under its class name (`D`, `D.fc1`, `D.fc1.weight`), made unique
(`Net-2`): `-` is a word of a rules file (`#` starts a comment there)
and no Python class name holds one.  A top-level module without
parameters does not take "": torchvision's transforms are modules, run
on each batch before the model.  A name is taken while its module
lives: a model made again (cross-validation's next fold, a notebook cell
run again) once the last is gone is "" again, and a loss made on each
step stays `CrossEntropyLoss`, not one more name a step.  A module that
runs inside others without being their submodule is named by its class
alone, as before there were prefixes: one made on each call
(`nn.ReLU()(x)`) is `ReLU` every time.
"""
import threading
import weakref


class Roots:
    """The prefixes given, by module identity: a module may define
    __eq__ without __hash__, and a bare id() comes back on a new one."""

    def __init__(self):
        self._prefixes = {}     # id(module) -> (weak reference, prefix)
        self._taken = set()     # prefixes given; the first's class, parts
        self._first_given = False
        self._lock = threading.Lock()   # threads run modules at once

    def known(self, module):
        """The prefix given to `module`, or None."""
        item = self._prefixes.get(id(module))
        return item[1] if item is not None and item[0]() is module else None

    def prefix(self, module, outermost):
        """The prefix of `module`'s tree, given now if it has none:
        `outermost`, whether it runs outside every module."""
        with self._lock:
            found = self.known(module)
            if found is not None:
                return found
            name = type(module).__name__
            if not outermost:
                found, taken = name, ()
            elif not self._first_given and _holds_parameters(module):
                self._first_given = True
                # a copy of the first (an EMA model) is Net-2, not Net,
                # read as the first; a later model named like one of the
                # first's parts would share its rows
                found, taken = "", {name, *_children(module)} - self._taken
            else:
                found = self._unique(name)
                taken = (found,)
            self._taken.update(taken)
            self._remember(module, found, taken)
            return found

    def _unique(self, name):
        found, number = name, 1
        while found in self._taken:
            number += 1
            found = "%s-%d" % (name, number)
        return found

    def _remember(self, module, prefix, taken):
        key = id(module)

        def gone(_):
            # runs where the module is freed, maybe inside prefix() on
            # this thread: no lock, each step one atomic dict/set change
            self._prefixes.pop(key, None)
            self._taken.difference_update(taken)
            if prefix == "":
                self._first_given = False
        self._prefixes[key] = (weakref.ref(module, gone), prefix)


def _holds_parameters(module):
    """Whether a module's tree holds a parameter, read from torch's own
    dicts, as _layer.py's walk does."""
    seen, stack = set(), [module]
    while stack:
        m = stack.pop()
        if id(m) in seen:
            continue
        seen.add(id(m))
        own = getattr(m, "__dict__", {})
        if any(p is not None for p in own.get("_parameters", {}).values()):
            return True
        stack.extend(c for c in own.get("_modules", {}).values()
                     if c is not None)
    return False


def _children(module):
    """The names of a module's direct submodules, read from torch's own
    dict (no method of the program's is called)."""
    return list(getattr(module, "__dict__", {}).get("_modules", {}))
