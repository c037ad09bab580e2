#!/usr/bin/env python3
"""Overflow and dtype-error forensics of PyTorch programs (issue 26),
end to end: `amptrace run` on scenario_overflow.py and scenario_dtype.py,
then what summary says.  Each finding is checked where it must fire and
where it must not (the program's fix, a healthy model, the checks off).
GradScaler and f16 autocast on the CPU need torch 2.x: under torch 1.13
the bf16 and dtype cases run.  TAP output; exit 77 (skip) without the
bridge or without torch.

usage: test_forensics.py AMPTRACE VALIDATE_TRACE PYTHON
(PYTHON empty: $AMPTRACE_TEST_TORCH2_PYTHON; none: skip)
"""
import json
import os
import re
import subprocess
import sys

from tap import check, done, scratch, skip_unless_bridge, torch2_required

AMPTRACE, VALIDATE, PYTHON = sys.argv[1:4]
PYTHON = PYTHON or os.environ.get("AMPTRACE_TEST_TORCH2_PYTHON", "")
HERE = os.path.dirname(os.path.abspath(__file__))
TMP = scratch("amptrace-forensics-")
if not PYTHON:
    why = "no torch 2.x interpreter (meson's torch2_python)"
    if torch2_required():
        check("torch 2.13 is required (AMPTRACE_REQUIRE_TORCH2=1)", False, why)
        sys.exit(done())
    print("1..0 # SKIP " + why)
    sys.exit(77)


def run(script, mode, *options, env=None, tag=""):
    """`amptrace run` of `script mode`: (process, trace).  A plain run (no
    options, env or tag) is made once: test_queued compares its device
    path against the host run another test already made (a seeded
    program, the same trace)."""
    plain = not options and env is None and not tag
    if plain and (script, mode) in _plain_runs:
        return _plain_runs[script, mode]
    path = os.path.join(TMP, "%s-%s%s.json" % (script, mode, tag))
    cmd = [AMPTRACE, "run", "-q", *options, "-o", path, "--", PYTHON,
           os.path.join(HERE, script + ".py"), mode]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                       env=env)
    if plain:
        _plain_runs[script, mode] = p, path
    return p, path


_plain_runs = {}


def summary(path):
    text = subprocess.run([AMPTRACE, "summary", path], capture_output=True,
                          text=True, env=dict(os.environ, COLUMNS="100"))
    js = subprocess.run([AMPTRACE, "summary", "--json", path],
                        capture_output=True, text=True)
    return text.stdout, json.loads(js.stdout)


def findings(js, kind=None):
    return [f for f in js["findings"] if kind is None or f["kind"] == kind]


def diags(path, kind):
    with open(path) as f:
        trace = json.load(f)
    return [e["args"] for e in trace["traceEvents"]
            if e.get("cat") == "amp.diag" and e["args"].get("kind") == kind]


def valid(path):
    p = subprocess.run([VALIDATE, path], capture_output=True, text=True)
    return p.returncode == 0, p.stdout + p.stderr


def torch_release():
    p = subprocess.run([PYTHON, "-c", "import torch; print(torch.__version__)"],
                       capture_output=True, text=True)
    return tuple(int(n) for n in p.stdout.split(".")[:2])


# the layer as the findings name it: its module's path (the trace's
# module key), its weight then left out as the path names it
BIG = "module 'big'"


def test_overflow_and_scheduler():
    p, path = run("scenario_overflow", "scheduler")
    check("an overflowing f16 model runs unchanged (exit 0, its own output)",
          p.returncode == 0 and p.stdout.startswith("loss "), p.stderr)
    ok, why = valid(path)
    check("its trace follows FORMAT.md", ok, why)
    text, js = summary(path)
    over = findings(js, "fp16-overflow")
    check("fp16-overflow names the first layer that overflowed: linear of "
          "'big' in the forward, with the input's range",
          len(over) == 1 and over[0]["severity"] == "error" and
          "linear (op" in over[0]["message"] and BIG in over[0]["message"]
          and "forward" in over[0]["message"] and
          "max |input|" in over[0]["message"], over)
    events = diags(path, "fp16-overflow")
    check("one fp16-overflow per step, the step's first offending op: "
          "the later layers that carry the inf on are not reported",
          len(events) == 4 and all(BIG in d["message"] for d in events),
          [d["message"][:120] for d in events])
    skips = findings(js, "scaler-skipped-step")
    check("each skipped step names the first non-finite gradient, the "
          "backward op that made it and the forward op that overflowed",
          len(skips) == 1 and skips[0]["count"] == 4 and
          skips[0]["severity"] == "warning" and
          ".grad'" in skips[0]["message"] and
          "made by mm (op" in skips[0]["message"] and
          BIG in skips[0]["message"] and
          "no scale helps" in skips[0]["message"], skips)
    causes = js["scaler"]["skipped"]
    check("summary --json: why each step was skipped, step by step",
          [c["step"] for c in causes] == [0, 1, 2, 3] and
          all(BIG in c["cause"] for c in causes) and
          [c["scale"] for c in causes] == [65536, 32768, 16384, 8192], causes)
    check("summary's GradScaler section says why the steps were skipped",
          "skipped steps, and why:" in text and
          "steps 0-3 (4 skips" in text, text[-1500:])
    lr = findings(js, "lr-scheduler-skipped-step")
    check("an LR scheduler stepped on each skipped step: "
          "lr-scheduler-skipped-step, with the skip's cause",
          len(lr) == 1 and lr[0]["count"] == 4 and
          lr[0]["severity"] == "warning" and BIG in lr[0]["message"], lr)

    plain = subprocess.run([PYTHON, os.path.join(HERE, "scenario_overflow.py"),
                            "scheduler"], capture_output=True, text=True)
    check("the program's stderr is as untraced: torch's warning about the "
          "scheduler stepping before the optimizer names the program's line",
          p.stderr == plain.stderr and "scenario_overflow.py:" in p.stderr,
          (p.stderr, plain.stderr))

    p, path = run("scenario_overflow", "scheduler-guarded")
    _, js = summary(path)
    check("the scheduler stepped only when the scale did not drop: no "
          "lr-scheduler-skipped-step", p.returncode == 0 and
          not findings(js, "lr-scheduler-skipped-step") and
          findings(js, "scaler-skipped-step"), findings(js))

    p, path = run("scenario_overflow", "scheduler", "--no-value-checks",
                  tag="-no-value-checks")
    _, js = summary(path)
    skips = findings(js, "scaler-skipped-step")
    check("--no-value-checks: no fp16-overflow; the skips name the "
          "gradient and its backward op only",
          not diags(path, "fp16-overflow") and
          not findings(js, "fp16-overflow") and skips and
          ".grad'" in skips[0]["message"] and
          BIG not in skips[0]["message"], findings(js))
    p, path = run("scenario_overflow", "scheduler",
                  env=dict(os.environ, AMP_VALUE_CHECKS="0"),
                  tag="-checks-off")
    check("AMP_VALUE_CHECKS=0: no value checks either",
          p.returncode == 0 and not diags(path, "fp16-overflow"),
          diags(path, "fp16-overflow")[:1])


def test_collapse():
    p, path = run("scenario_overflow", "collapse")
    text, js = summary(path)
    collapse = findings(js, "scaler-collapse")
    check("a collapsing loss scale: scaler-collapse names the cause (the "
          "forward layer whose f16 output overflows)",
          p.returncode == 0 and len(collapse) == 1 and
          "consecutive reductions" in collapse[0]["message"] and
          BIG in collapse[0]["message"], collapse)
    check("summary names the first layer that overflowed and why each "
          "step was skipped", "steps 0-11 (12 skips" in text and
          BIG in text.split("skipped steps, and why:")[-1],
          text[-1200:])


def test_views_with_gaps():
    p, path = run("scenario_overflow", "split")
    events = diags(path, "fp16-overflow")
    check("an inf that goes on through views with gaps (q, k of a split "
          "qkv) is not reported again: the projection is the only origin",
          p.returncode == 0 and len(events) == 1 and
          "weight 'weight'" in events[0]["message"] and
          events[0]["message"].startswith("linear (op"),
          [d["message"][:100] for d in events])


def test_unrelated_overflow():
    p, path = run("scenario_overflow", "unrelated")
    _, js = summary(path)
    skips = findings(js, "scaler-skipped-step")
    probe = findings(js, "fp16-overflow")
    check("skips while the scale calibrates are traced, from the gradient, "
          "to the backward op whose scaled gradient overflowed, not to an "
          "earlier overflow the loss does not depend on",
          p.returncode == 0 and len(skips) == 1 and
          skips[0]["severity"] == "info" and
          "fc1.weight.grad" in skips[0]["message"] and
          "a backward op (the scaled gradients overflowed)" in
          skips[0]["message"] and "'big" not in skips[0]["message"],
          skips)
    check("... and the probe's own overflow is an fp16-overflow of its own",
          len(probe) == 1 and "forward" in probe[0]["message"] and
          "fc1" not in probe[0]["message"], probe)


def test_healthy():
    p, path = run("scenario_overflow", "healthy")
    _, js = summary(path)
    check("a healthy f16 model with a GradScaler and a guarded scheduler: "
          "no finding at all", p.returncode == 0 and not findings(js),
          findings(js))
    p, path = run("scenario_overflow", "overflow-bf16")
    _, js = summary(path)
    check("the same large layer in bf16: no value finding (bf16 has f32's "
          "range)", p.returncode == 0 and not findings(js), findings(js))


def test_casts():
    p, path = run("scenario_overflow", "cast-overflow")
    _, js = summary(path)
    over = findings(js, "fp16-overflow")
    check("an f32 input past 65504: the autocast cast to f16 is the origin, "
          "not the linear that got inf", len(over) == 1 and
          over[0]["message"].startswith("the f32->f16 cast of tensor") and
          "for linear (op" in over[0]["message"] and
          "module 'fc1'" in over[0]["message"] and
          len(diags(path, "fp16-overflow")) == 1, over)
    p, path = run("scenario_overflow", "cast-underflow")
    _, js = summary(path)
    under = findings(js, "cast-underflow")
    check("an f32 input of 1e-9 cast to f16: cast-underflow (libamp's rule)",
          len(under) == 1 and "flushed 100.0%" in under[0]["message"] and
          not findings(js, "fp16-overflow"), findings(js))


def test_bf16():
    p, path = run("scenario_overflow", "bf16-overflow")
    _, js = summary(path)
    over = findings(js, "fp16-overflow")
    check("a bf16 layer past 3.4e38: fp16-overflow names it",
          len(over) == 1 and BIG in over[0]["message"] and
          "bf16 output" in over[0]["message"], findings(js))
    p, path = run("scenario_overflow", "bf16-underflow")
    _, js = summary(path)
    under = findings(js, "cast-underflow")
    check("f32 subnormal inputs cast to bf16: cast-underflow",
          len(under) == 1 and "f32->bf16 cast" in under[0]["message"],
          findings(js))


def test_uninitialized():
    p, path = run("scenario_overflow", "uninitialized")
    _, js = summary(path)
    check("tensors made empty, filled with NaN by deterministic algorithms "
          "and then written, in forward and backward: no fp16-overflow",
          p.returncode == 0 and
          p.stdout.endswith("empty holds NaN True gradient finite True\n")
          and not findings(js), (p.stdout, findings(js)))


def test_api():
    env = dict(os.environ, PYTHONPATH=os.path.join(
        os.path.dirname(AMPTRACE), "torch"))
    env.pop("AMP_VALUE_CHECKS", None)
    seen = {}
    for option, variable in (("default", None), ("off", None),
                             ("default", "0"), ("on", "0")):
        path = os.path.join(TMP, "api-%s-%s.json" % (option, variable))
        if variable:
            env["AMP_VALUE_CHECKS"] = variable
        p = subprocess.run([PYTHON, os.path.join(HERE, "scenario_api_values.py"),
                            path, option], capture_output=True, text=True,
                           env=env, timeout=300)
        seen[(option, variable)] = p.returncode == 0 and \
            len(diags(path, "fp16-overflow"))
    check("trace(): value checks on by default, off with value_checks=False "
          "or AMP_VALUE_CHECKS=0, and value_checks=True wins over it",
          seen == {("default", None): 1, ("off", None): 0,
                   ("default", "0"): 0, ("on", "0"): 1}, seen)


DTYPE_CASES = [
    # mode, torch's words, where the odd dtype came from, the fix
    ("outside", "mat1 and mat2 must have the same dtype",
     "came from autocast: linear", "outside the autocast region"),
    ("half-model", "expected scalar type Float but found Half",
     "a parameter of a converted module", "model.half()"),
    ("explicit", "should be the same", "the program's own cast f32->bf16",
     "program's own cast"),
    ("uncovered", "", "came from autocast: linear", "does not cover"),
]


def test_dtype_errors():
    for mode, words, origin, fix in DTYPE_CASES:
        p, path = run("scenario_dtype", mode)
        _, js = summary(path)
        m = findings(js, "dtype-mismatch")
        check("%s: the dtype error is traced to its origin (%s) with its fix"
              % (mode, origin), p.returncode == 1 and len(m) == 1 and
              origin in m[0]["message"] and fix in m[0]["fix"] and
              words in m[0]["message"] and not findings(js, "op-error"),
              (p.stderr[-300:], findings(js)))
        p, path = run("scenario_dtype", mode + "-fixed")
        _, js = summary(path)
        # the fixes of half-model and explicit use no autocast at all:
        # autocast-never-enabled's info says so, rightly
        rest = [f for f in findings(js)
                if f["kind"] != "autocast-never-enabled"]
        check("%s, fixed: no finding (but autocast-never-enabled's)" % mode,
              p.returncode == 0 and not rest, rest)


def test_gradient_cast():
    """A custom Function's backward that meets the gradient autograd cast
    back to bf16 (the backward of the program's .float()): the odd dtype
    is autograd's cast, not the program's, and the fix is the backward's
    (scenario_dtype.py gradient)."""
    p, path = run("scenario_dtype", "gradient")
    _, js = summary(path)
    m = findings(js, "dtype-mismatch")
    check("gradient: the dtype error is traced to autograd's cast of the "
          "gradient (ToCopyBackward0), the fix to the Function's backward",
          p.returncode == 1 and len(m) == 1 and
          "came from autograd's cast of the gradient f32->bf16" in
          m[0]["message"] and "ToCopyBackward0" in m[0]["message"] and
          "program's own cast" not in m[0]["message"] and
          "custom Function's backward" in m[0]["fix"],
          (p.stderr[-300:], findings(js)))
    # torch's text is the exception the Function's backward raised: the
    # mm's, which failed inside it (the program's last line of stderr)
    raised = p.stderr.strip().splitlines()[-1].split(": ", 1)[-1]
    check("gradient: one finding, dtype-mismatch on the mm with torch's "
          "text, not an op-error of the Function's backward that raised it",
          len(m) == 1 and not findings(js, "op-error") and
          raised.startswith("expected ") and raised in m[0]["message"],
          (raised, findings(js)))
    p, path = run("scenario_dtype", "gradient-fixed")
    _, js = summary(path)
    check("gradient, fixed (grad.float()): no dtype-mismatch, no op-error",
          p.returncode == 0 and not findings(js, "dtype-mismatch") and
          not findings(js, "op-error"), findings(js))


def uncounted(match):
    """The host's counts of inf and NaN, as a GPU's check says them: only
    whether there are any."""
    inf, nan, n = (int(g) for g in match.groups())
    return "(some %s of %d values)" % ("NaN" if nan else "inf, no NaN,", n)


def normalized_diags(path):
    """(kind, message) of each value finding, as the device's reductions
    can say it: whether a result holds inf or NaN, not how many, and not
    which input was the largest."""
    with open(path) as f:
        trace = json.load(f)
    return [(e["args"]["kind"],
             re.sub(r"\((\d+) inf, (\d+) NaN of (\d+) values\)", uncounted,
                    re.sub(r", in tensor \d+( '[^']*')?", "",
                           e["args"]["message"])))
            for e in trace["traceEvents"] if e.get("cat") == "amp.diag"
            and e["args"].get("kind") in ("fp16-overflow", "cast-underflow")]


# How AMPTRACE_TEST_QUEUED_VALUES sends host tensors down a GPU's path:
# (value, what reduces them, whether its findings count inf and NaN, the
# scenarios run that way: None for all).  torch's ops are the fallback
# (no module, another layout): a few scenarios, a positive and a negative
# of each kind, keep the suite's time.
QUEUED_PATHS = (("1", "as the CUDA module does", True, None),
                ("torch", "by torch's ops", False,
                 ("collapse", "cast-underflow", "healthy", "bf16-overflow",
                  "written-later")))


def test_queued(modes):
    """The checks of tensors the host cannot read (a GPU's) are reduced on
    the device where the op ends (by the CUDA module, else by torch's ops)
    and read once per step; AMPTRACE_TEST_QUEUED_VALUES sends host tensors
    either way, so each scenario (mode: how many value findings) must find
    what the host checks find, op by op."""
    for how, what, counted, only in QUEUED_PATHS:
        queued = dict(os.environ, AMPTRACE_TEST_QUEUED_VALUES=how)
        chosen = {m: n for m, n in modes.items() if not only or m in only}
        for mode, found in chosen.items():
            _, host = run("scenario_overflow", mode)
            p, path = run("scenario_overflow", mode, env=queued,
                          tag="-queued-" + how)
            same = normalized_diags(path) == normalized_diags(host)
            check("%s, reduced on the device %s: the same value findings "
                  "as the host checks (%d)" % (mode, what, found),
                  p.returncode == 0 and same and
                  len(normalized_diags(host)) == found,
                  (p.stderr[-500:], normalized_diags(path)[:3],
                   normalized_diags(host)[:3]))
        path = os.path.join(TMP, "scenario_overflow-%s-queued-%s.json" %
                            (next(iter(chosen)), how))
        with open(path) as f:
            messages = [e["args"]["message"]
                        for e in json.load(f)["traceEvents"]
                        if e.get("cat") == "amp.diag"]
        says_counts = [" inf, " in m and " NaN of " in m for m in messages]
        check("... and the device's path ran %s: its findings do not name "
              "the largest input, which only the host checks do, and %s "
              "inf and NaN" % (what, "count" if counted else "do not count"),
              messages and not any(", in tensor" in m for m in messages) and
              any(says_counts) == counted,
              messages[:2])


def test_capture():
    """A CUDA graph's capture (faked on the CPU) pauses the device's
    checks: their reductions would be captured with the graph and read
    before it ran.  The host's checks read host tensors throughout."""
    cuda = subprocess.run([PYTHON, "-c", "import torch; print(torch.version."
                           "cuda is not None)"], capture_output=True, text=True)
    if cuda.stdout.strip() != "False":
        # only a CPU build's dummy CUDAGraph base can be given a capture
        print("# capture: not faked under a CUDA build of torch (%s)" %
              (cuda.stdout.strip() or cuda.stderr[-200:]))
        return
    queued = dict(os.environ, AMPTRACE_TEST_QUEUED_VALUES="1")
    _, host = run("scenario_overflow", "captured")
    p, path = run("scenario_overflow", "captured", env=queued, tag="-queued")
    both, after = normalized_diags(host), normalized_diags(path)
    check("a CUDA graph's capture pauses the device's value checks: the "
          "overflow after it is found, not the one inside it",
          p.returncode == 0 and len(both) == 2 and after == both[1:],
          (p.stderr[-500:], after, both))


skip_unless_bridge(AMPTRACE, PYTHON)
if torch_release() >= (2, 0):
    test_overflow_and_scheduler()
    test_collapse()
    test_unrelated_overflow()
    test_views_with_gaps()
    test_healthy()
    test_casts()
    test_uninitialized()
    test_queued({"scheduler": 4, "collapse": 12, "unrelated": 6, "split": 1,
                 "healthy": 0, "cast-overflow": 1, "cast-underflow": 1,
                 "uninitialized": 0})
    test_capture()
test_bf16()
test_queued({"bf16-overflow": 1, "bf16-underflow": 1, "written-later": 0,
             "overflow-written": 1})
test_api()
test_dtype_errors()
test_gradient_cast()
sys.exit(done())
