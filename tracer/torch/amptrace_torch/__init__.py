"""amptrace's PyTorch bridge: records an unmodified PyTorch program's
autocast decisions (ops and their dtypes, every cast autocast inserts and
why, cache hits, regions, GradScaler) into an amptrace trace.

`amptrace run -- python3 train.py` loads it through sitecustomize.py;
in a notebook or script: `with amptrace_torch.trace("t.json"): ...`, or
`%load_ext amptrace_torch` and a cell headed `%%amptrace`.
"""
import os
import sys
import threading

_started = False


def _framework(torch, bridge):
    return "torch %s (policy table: %s)" % (
        torch.__version__, bridge.policy_table(torch.__version__))


def _value_checks_wanted(value_checks=None):
    """The value checks (fp16-overflow, cast-underflow) are on unless
    AMP_VALUE_CHECKS=0 (`amptrace run --no-value-checks` sets it) or the
    trace() API's value_checks=False."""
    if value_checks is not None:
        return bool(value_checks)
    return os.environ.get("AMP_VALUE_CHECKS", "1") not in ("", "0")


def _start_from_run():
    """Called right after the program's `import torch` (sitecustomize)."""
    raw_dir = os.environ.get("AMPTRACE_RAW_DIR")
    if _started or not raw_dir:
        return
    import atexit
    import torch
    from . import _bridge, _layer, _steps

    _observe(torch, _bridge)
    _bridge.value_checks(_value_checks_wanted())
    _bridge.attach(raw_dir, _framework(torch, _bridge))
    _install_layer_once(torch, _bridge, _layer, modules_exist=False)
    atexit.register(_bridge.mark_exit)
    atexit.register(_steps.close_windows)  # runs first


def _find_amptrace():
    """amptrace next to this package in the build tree, installed in
    PREFIX/bin, $AMPTRACE, or on PATH."""
    import shutil
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [os.environ.get("AMPTRACE", ""),
                  os.path.join(here, "..", "..", "amptrace")]
    parts = here.split(os.sep)
    if "lib" in parts:  # PREFIX/lib[/multiarch]/amptrace/python/amptrace_torch
        prefix = os.sep.join(parts[:parts.index("lib")]) or os.sep
        candidates.append(os.path.join(prefix, "bin", "amptrace"))
    candidates.append(shutil.which("amptrace") or "")
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return os.path.abspath(c)
    raise RuntimeError("amptrace_torch.trace: the amptrace command was not "
                       "found (set AMPTRACE=/path/to/amptrace)")


# The write ends of the running trace() blocks' converter pipes (fd:
# the pipe's identity), and whether forked children let go of them (once
# per process).  A pipe is made and listed under _fork_lock, which every
# fork() of the process takes too: a fork in another thread between the
# pipe's making and its listing would keep an unlisted pipe, and the
# block's end would wait for that child.  (subprocess's own pipes are
# close-on-exec, which a fork without exec does not honour.)  Reentrant:
# a signal handler that forks may run while this thread holds it.
_converter_pipes = {}
_releasing_in_children = False
_fork_lock = threading.RLock()


def _pipe_identity(fd):
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _release_converter_pipes():
    """In a child forked inside a trace() block (a DataLoader worker):
    the converter's stdin is the block's, which closes it to end the
    trace; a child that outlived the block (persistent_workers) held it
    open, and the block's end waited for that child forever.  Pointed at
    /dev/null rather than closed, so the child's copy of the file object
    stays valid.  Only an fd that is still that pipe: a block whose start
    failed never ended, and its fd number may be the program's own file
    now."""
    if not _converter_pipes:
        return
    null = os.open(os.devnull, os.O_WRONLY)
    for fd, pipe in _converter_pipes.items():
        try:
            if _pipe_identity(fd) == pipe:
                os.dup2(null, fd, inheritable=False)
        except OSError:  # closed since
            pass
    os.close(null)
    _converter_pipes.clear()


def _before_fork():
    _fork_lock.acquire()


def _after_fork_in_parent():
    _fork_lock.release()


def _after_fork_in_child():
    """The parent's lock is held here by the fork: the child, one thread
    now, starts with a free one."""
    global _fork_lock
    _fork_lock = threading.RLock()
    _release_converter_pipes()


def _converter_pipe():
    """A pipe for the converter's stdin: (read end, write end), the write
    end listed for forked children to let go of."""
    global _releasing_in_children
    if not _releasing_in_children:
        os.register_at_fork(before=_before_fork,
                            after_in_parent=_after_fork_in_parent,
                            after_in_child=_after_fork_in_child)
        _releasing_in_children = True
    with _fork_lock:
        read_end, write_end = os.pipe()
        _converter_pipes[write_end] = _pipe_identity(write_end)
    return read_end, write_end


class trace:
    """Records the torch work of this process inside the block into a
    trace file, the same format `amptrace run` writes:

        import amptrace_torch
        with amptrace_torch.trace("t.json"):
            train()

    The file is complete when the block ends.  `amptrace run` is the
    converter: it runs alongside (a waiting child) and converts this
    process's events as they come; so a crash inside the block still
    leaves a trace that loads.

    `steps` and `max_size` are `amptrace run`'s --steps and --max-size:
    the training steps recorded in full detail ("0:19" by default, "5",
    "10:13", "every:100", "all"), every other one as per-step
    aggregates, and the size past which full detail stops ("100M").
    `value_checks`: read the values of low-precision results and casts
    (fp16-overflow, cast-underflow); by default on unless
    AMP_VALUE_CHECKS=0."""

    def __init__(self, path="trace.json", quiet=True, graph=True, steps=None,
                 max_size=None, value_checks=None):
        self.path = path
        self.quiet = quiet
        self.graph = graph  # drawn in a notebook (_repr_html_)
        self.steps = steps
        self.max_size = max_size
        self.value_checks = _value_checks_wanted(value_checks)
        self._converter = None

    def _repr_html_(self):
        """In Jupyter: the findings, summary and graph (_notebook.py)."""
        from . import _notebook
        return _notebook.page(self.path, _find_amptrace(), self.graph)

    def __enter__(self):
        import subprocess
        import torch
        from . import _blocks, _bridge, _layer

        refusal = _blocks.refusal()
        if refusal:
            raise RuntimeError("amptrace_torch.trace: " + refusal)
        if _blocks.forked_from_ended_block():
            _bridge.detach()
        _observe(torch, _bridge)
        cmd = [_find_amptrace(), "run", "-o", self.path,
               "--block-of", _program_name()]
        if self.quiet:
            cmd.append("-q")
        if self.steps is not None:
            cmd += ["--steps", str(self.steps)]
        if self.max_size is not None:
            cmd += ["--max-size", str(self.max_size)]
        # The waiting child tells where the raw files go and what to
        # record (amptrace run checked --steps and --max-size), then waits
        # for the end of the block (its stdin closes).
        told = ("AMPTRACE_RAW_DIR", "AMPTRACE_PID", "AMPTRACE_STEPS",
                "AMPTRACE_MAX_SIZE")
        cmd += ["--", "/bin/sh", "-c",
                "".join('echo "$%s"; ' % name for name in told) +
                "cat >/dev/null"]
        made_before = _file_identity(self.path)
        read_end, write_end = _converter_pipe()
        try:
            self._converter = subprocess.Popen(
                cmd, stdin=read_end, stdout=subprocess.PIPE, text=True)
        except BaseException:
            with _fork_lock:
                _converter_pipes.pop(write_end, None)
                os.close(write_end)
            raise
        finally:
            os.close(read_end)
        self._converter.stdin = open(write_end, "w")
        try:
            raw_dir = self._attach(torch, _bridge, told)
        except BaseException:
            # the converter would write an empty trace at the process's
            # end: it ends now, and the file it made goes
            self._let_go_of_converter()
            self._converter.stdout.close()
            if _file_identity(self.path) not in (None, made_before):
                os.remove(self.path)
            raise
        _blocks.begun(raw_dir)
        _install_layer_once(torch, _bridge, _layer, modules_exist=True)
        _layer.tell_rank(torch, _bridge)
        _say_unrecorded(_bridge, _blocks.unrecorded())
        return self

    def _attach(self, torch, bridge, told):
        """Reads what the converter tells (`told`) and attaches this
        process to its raw directory, which it returns."""
        values = [self._converter.stdout.readline().strip() for _ in told]
        if not values[0]:
            raise RuntimeError("amptrace_torch.trace: amptrace run did not "
                               "start (status %s)" % self._converter.wait())
        # the bridge attaches in this process: it reads them here
        saved = {name: os.environ.get(name) for name in told[1:]}
        os.environ.update(zip(told[1:], values[1:]))
        bridge.value_checks(self.value_checks)
        try:
            bridge.attach(values[0], _framework(torch, bridge))
        finally:
            for name, value in saved.items():
                if value is None:
                    del os.environ[name]
                else:
                    os.environ[name] = value
        return values[0]

    def __exit__(self, *exc):
        from . import _blocks, _bridge, _steps
        _steps.close_windows()
        _bridge.mark_exit()
        _bridge.detach()
        _blocks.ended()
        self._let_go_of_converter()
        self._converter.stdout.close()
        return False

    def _let_go_of_converter(self):
        """Closes the converter's stdin (its end) and waits for it.  The
        pipe is unlisted and closed under _fork_lock: a fork in another
        thread between the two would keep it, unlisted, open."""
        with _fork_lock:
            _converter_pipes.pop(self._converter.stdin.fileno(), None)
            self._converter.stdin.close()
        self._converter.wait()


def _program_name():
    """This process as the converter's messages name it (its waiter,
    /bin/sh, is nothing the user ran): its script and pid."""
    script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] \
        else "python"
    return "%s (process %d)" % (script, os.getpid())


def _file_identity(path):
    """(inode, modification time) of the file at `path`, None if none."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns


def _say_unrecorded(bridge, pids):
    """The finding workers-unrecorded (_blocks.py says why they are not
    recorded): an amp.diag event, as the compile side's notes are."""
    if pids:
        bridge.compiled_diag(
            "workers-unrecorded", "%d process%s forked in an earlier "
            "trace() block still run%s (pid %s): %s work is not in this "
            "trace" % (len(pids), "" if len(pids) == 1 else "es",
                       "s" if len(pids) == 1 else "",
                       ", ".join(map(str, sorted(pids))),
                       "its" if len(pids) == 1 else "their"), 0)


def _observe(torch, bridge):
    """How torch's ops are seen: the C++ observer built for the running
    torch (built on first use if need be), or, when it cannot be had (no
    compiler, no headers) or AMPTRACE_TORCH_FALLBACK=1 asks for it, the
    pure-Python modes (_modes.py), said in one line.  Where kernel timing
    comes from."""
    from . import _modes, _observer
    if _modes.forced():
        _modes.install(torch, bridge)
    else:
        try:
            _observer.load(torch, bridge)
        except _observer.Unavailable as e:
            _modes.install(torch, bridge, str(e).splitlines()[0])
    bridge.gpu_module(_observer.cuda_module())


def _install_layer_once(torch, bridge, layer, modules_exist):
    global _started
    if not _started:
        from . import _steps
        layer.install(torch, bridge, modules_exist)
        _steps.install(torch, bridge)
        _started = True


from ._regions import region  # noqa: E402 (no torch needed)


def step():
    """Marks the end of a training step (FORMAT.md §8), where the program
    knows better than its optimizer calls: from the first call on, only
    these calls end steps.  Nothing when the program is not traced."""
    if _started:
        from . import _steps
        _steps.step()


def load_ipython_extension(ipython):
    """`%load_ext amptrace_torch`: the %%amptrace cell magic."""
    from . import _notebook
    _notebook.load_ipython_extension(ipython)
