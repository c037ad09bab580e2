"""The observer library for the running torch: the one built with amptrace
(for the torch found at build time), or one built on first use from the
sources this package ships, into a cache per torch version.

The observer is C++ against torch's own headers and C++ ABI, so it must
match the torch it runs in exactly; everything else of the bridge is C
and does not depend on torch.  A first-use build takes ~10-40 s once and
says so in one line; later runs load the cached library.
"""
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCES = ("observer.cpp", "observer.h", "producer_event.h",
            "producer_keys.h", "amp.h", "amp_autograd.h", "amp_train.h",
            "amp_value_stats.h")


class Unavailable(Exception):
    """No observer can be had for this torch (the message says why)."""


def tag(torch):
    """torch1.13.1-abi1: what the observer is built for."""
    version = re.sub(r"[^A-Za-z0-9._]", "_", torch.__version__)
    return "torch%s-abi%d" % (version, int(torch._C._GLIBCXX_USE_CXX11_ABI))


def _cache_root():
    root = os.environ.get("AMPTRACE_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "amptrace")
    return os.path.join(root, "observer")


def _source_digest(src):
    h = hashlib.sha256()
    for name in _SOURCES:
        with open(os.path.join(src, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    return h.hexdigest()[:12]


def _compiler():
    for c in (os.environ.get("CXX"), "c++", "g++", "clang++"):
        if c and shutil.which(c):
            return shutil.which(c)
    raise Unavailable("no C++ compiler (set CXX, or install g++)")


def cxx_standard(include):
    """The C++ standard the torch whose headers are under `include`
    requires, as its ATen.h says (`__cplusplus < 202002L`: C++20 from
    torch 2.14 on); C++17 where it says none (1.13) or cannot be read."""
    try:
        with open(os.path.join(include, "ATen", "ATen.h")) as f:
            found = re.search(r"__cplusplus\s*<\s*(\d{6})L", f.read())
    except OSError:
        found = None
    return "c++20" if found and int(found.group(1)) >= 202002 else "c++17"


def _command(torch, compiler, src, out):
    d = os.path.dirname(torch.__file__)
    inc, lib = os.path.join(d, "include"), os.path.join(d, "lib")
    if not os.path.isfile(os.path.join(inc, "ATen", "record_function.h")):
        raise Unavailable("torch %s ships no C++ headers (%s)"
                          % (torch.__version__, inc))
    return [compiler, "-std=" + cxx_standard(inc),
            "-O2", "-shared", "-fPIC", "-fvisibility=hidden", "-DNDEBUG",
            "-D_GLIBCXX_USE_CXX11_ABI=%d"
            % int(torch._C._GLIBCXX_USE_CXX11_ABI),
            "-w", "-I", src, "-isystem", inc, "-isystem",
            os.path.join(inc, "torch", "csrc", "api", "include"),
            os.path.join(src, "observer.cpp"), "-o", out,
            "-L", lib, "-ltorch_cpu", "-lc10", "-Wl,-rpath," + lib]


def _build(torch, src, target):
    """Builds into `target`: under a lock (a DataLoader's workers may all
    start at once), in a directory of its own renamed into place, so a
    half-written library is never loaded."""
    try:
        _build_locked(torch, src, target)
    except OSError as e:  # an unwritable cache, a full disk
        raise Unavailable("cannot build the observer in %s: %s"
                          % (os.path.dirname(target), e)) from None


# The compiler runs in a process group of its own under this shell, which
# ends the whole group (the driver, cc1plus, as, ld) when the process that
# builds dies, even by SIGKILL: the watcher reads a pipe whose only writer
# is that process, so its end is the pipe's end.
_GUARDED = ('"$@" & compiler=$!; '
            '(read _ <&%d; kill -TERM -$$) & watcher=$!; '
            'wait $compiler; status=$?; kill $watcher 2>/dev/null; '
            'exit $status')


def _run_guarded(cmd):
    read_end, write_end = os.pipe()
    try:
        return subprocess.run(["/bin/sh", "-c", _GUARDED % read_end, "sh"]
                              + cmd, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True,
                              stdin=subprocess.DEVNULL, pass_fds=(read_end,),
                              start_new_session=True)
    finally:
        os.close(read_end)
        os.close(write_end)


def _sweep(directory):
    """Leftovers of builds that died (the lock is held: none runs now):
    their build directories, and the temporary libraries of earlier
    amptrace versions."""
    for name in os.listdir(directory):
        path = os.path.join(directory, name)
        if name.startswith("build-") and os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)
        elif name.startswith("tmp") and name.endswith(".so"):
            try:
                os.unlink(path)
            except OSError:
                pass


def _build_locked(torch, src, target):
    import fcntl
    directory = os.path.dirname(target)
    os.makedirs(directory, exist_ok=True)
    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(target):
            return
        _sweep(directory)
        compiler = _compiler()
        work = tempfile.mkdtemp(prefix="build-", dir=directory)
        built = os.path.join(work, "_observer.so")
        cmd = _command(torch, compiler, src, built)
        sys.stderr.write("amptrace: building the PyTorch observer for torch "
                         "%s (once; cached in %s)\n"
                         % (torch.__version__, directory))
        sys.stderr.flush()
        try:
            done = _run_guarded(cmd)
            if done.returncode != 0:
                log = target + ".log"
                with open(log, "w") as f:
                    f.write(" ".join(cmd) + "\n" + done.stdout)
                first = next((l for l in done.stdout.splitlines()
                              if "error" in l), "exit %d" % done.returncode)
                raise Unavailable("building the observer for torch %s failed "
                                  "(%s; the whole log: %s)"
                                  % (torch.__version__, first.strip(), log))
            os.replace(built, target)
            try:  # an earlier build's failure, now mended
                os.unlink(target + ".log")
            except OSError:
                pass
        finally:
            shutil.rmtree(work, ignore_errors=True)


def path(torch):
    """The observer library for this torch, built if need be."""
    t = tag(torch)
    if os.environ.get("AMPTRACE_OBSERVER_FROM_CACHE") != "1":
        built = os.path.join(_HERE, "_observer-%s.so" % t)
        if os.path.isfile(built):
            return built
    src = os.path.join(_HERE, "observer_src")
    if not os.path.isdir(src):
        raise Unavailable("this amptrace ships no observer sources (%s)" % src)
    target = os.path.join(_cache_root(), "%s-%s" % (t, _source_digest(src)),
                          "_observer.so")
    if not os.path.isfile(target):
        _build(torch, src, target)
    return target


def load(torch, bridge):
    """Binds the observer for the running torch into the extension."""
    bridge.load_observer(path(torch))


def cuda_module():
    """libamp's CUDA module (kernel timing), next to this package in the
    build tree (build/kernels), installed (PREFIX/lib), or in the package
    (pip: _run/); "" if none."""
    env = os.environ.get("AMP_CUDA_MODULE")
    if env:
        return env
    top = os.path.normpath(os.path.join(_HERE, "..", "..", ".."))
    for candidate in (os.path.join(top, "kernels", "libamp_cuda.so"),
                      os.path.join(top, "libamp_cuda.so"),
                      os.path.join(_HERE, "_run", "libamp_cuda.so")):
        if os.path.isfile(candidate):
            return candidate
    return ""
