#!/usr/bin/env python3
"""What differs between torch 1.13 and 2.x, recorded by the bridge and
asserted against the running torch itself: each scenario under
versions/ prints what torch did, as torch or an independent witness of
its own casts (a TorchDispatchMode, versions/casts_seen.py) saw it, and
the trace of the same run must say the same.  Each torch is held to its
own behaviour:

  - the cast cache under inference_mode (1.13 caches, 2.11+ does not),
  - the cache's scope (1.13 per thread, 2.x per process),
  - torch.amp.GradScaler("cpu") on a CPU f16 model that overflows: real
    scale, unscale, skip and update events (2.x; 1.13 has none),
  - scaled_dot_product_attention (2.x's CPU lower-precision list),
  - autocast as a decorator,
  - torch.amp.custom_fwd(device_type="cpu", cast_inputs=f32) (2.x; 1.13's
    torch.cuda.amp.custom_fwd does nothing on the CPU),
  - a tensor subclass through a layer, and as_subclass,
  - the trace's header naming the policy table of the running torch.

(The no_grad rule of the cache is test_torch_bridge.py's scenario_no_grad,
which also asserts each torch's own behaviour.)  TAP output; exit 77
(skip) when the bridge was not built or the interpreter has no torch.

usage: test_torch_versions.py AMPTRACE VALIDATE_TRACE PYTHON
"""
import json
import os
import re
import subprocess
import sys

from tap import check, done, scratch, skip_unless_bridge, torch_release

AMPTRACE, VALIDATE, PYTHON = sys.argv[1:4]
HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "versions")
TMP = scratch("amptrace-torch-versions-")


def run(script, traced=True):
    """(process, trace) of versions/SCRIPT, traced or plain."""
    path = os.path.join(TMP, script.replace(".py", ".json"))
    cmd = [PYTHON, "-W", "ignore", os.path.join(HERE, script)]
    if traced:
        cmd = [AMPTRACE, "run", "-q", "-o", path, "--"] + cmd
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    trace = None
    if traced and os.path.isfile(path):
        with open(path) as f:
            trace = json.load(f)
    return p, trace


def events(trace, cat):
    return [e for e in (trace or {}).get("traceEvents", [])
            if e.get("cat") == cat]


def ops(trace, name):
    return [e["args"] for e in events(trace, "amp.op")
            if e["args"]["op"] == name]


def weight_casts(trace):
    return [c["args"] for c in events(trace, "amp.cast")
            if c["args"].get("name") == "weight"]


def torch_facts():
    """The running torch's version, and what the tests expect of it."""
    global VERSION, TORCH2, NO_INFERENCE_CACHE, TABLE
    VERSION = subprocess.run(
        [PYTHON, "-c", "import torch; print(torch.__version__)"],
        capture_output=True, text=True).stdout.strip()
    release = torch_release(PYTHON)
    TORCH2 = release >= (2, 0)
    # pytorch#165068: nothing cached under inference_mode from 2.11
    # (Debian 13's 2.6 still caches there)
    NO_INFERENCE_CACHE = release >= (2, 11)
    TABLE = "2.13" if TORCH2 else "1.13"


def test_header():
    p, t = run("decorator.py")
    framework = (t or {}).get("amptrace", {}).get("framework", "")
    exact = VERSION.startswith(TABLE + ".")
    check("the header names torch %s and the %s table%s" % (
              VERSION, TABLE, "" if exact else " (not its own)"),
          framework == "torch %s (policy table: %s%s)" % (
              VERSION, TABLE, "" if exact else
              ", none for torch " + VERSION), framework)
    ok = subprocess.run([VALIDATE, os.path.join(TMP, "decorator.json")],
                        capture_output=True).returncode == 0
    check("... and the trace is valid", ok)


def test_cache_inference():
    p, t = run("cache_inference.py")
    said = re.match(r"weight casts (\d+)$", p.stdout.strip())
    made = int(said.group(1)) if said else None
    casts = [c["cache"] for c in weight_casts(t)]
    check("inference_mode: torch %s cast the weight %s (%s)" % (
              VERSION, made, "cached once, then a hit" if made == 1 else
              "nothing cached"),
          made == (2 if NO_INFERENCE_CACHE else 1),
          p.stdout + p.stderr[-300:])
    check("... and the trace says so: %s" % (
              "uncacheable twice" if NO_INFERENCE_CACHE
              else "a miss, then a hit"),
          casts == (["uncacheable"] * 2 if NO_INFERENCE_CACHE
                    else ["miss", "hit"]) and
          len([c for c in casts if c != "hit"]) == made, casts)


def test_cache_threads():
    p, t = run("cache_threads.py")
    said = re.match(r"worker weight casts (\d+)$", p.stdout.strip())
    made = int(said.group(1)) if said else None
    check("the cache's scope: the worker %s the main thread's weight cast "
          "(torch %s, %s)" % ("reuses" if TORCH2 else "casts again",
                              VERSION, "per process" if TORCH2
                              else "per thread"),
          made == (0 if TORCH2 else 1), p.stdout + p.stderr[-300:])
    casts = [c["cache"] for c in weight_casts(t)]
    check("... and the trace says so: %s" % (
              "a miss, then the worker's hit" if TORCH2 else "two misses"),
          casts == (["miss", "hit"] if TORCH2 else ["miss", "miss"]), casts)


SCALER_LINE = re.compile(r"step (\d+) scale (\S+) found_inf (\d) "
                         r"stepped (\d) after (\S+)$")


def test_grad_scaler():
    p, t = run("grad_scaler.py")
    if not TORCH2:
        check("torch 1.13: no CPU GradScaler, and no scaler event",
              p.stdout.startswith("no cpu GradScaler") and
              not events(t, "amp.scaler"), p.stdout)
        return
    steps = [SCALER_LINE.match(line) for line in p.stdout.splitlines()]
    steps = [(float(m.group(2)), m.group(3) == "1", m.group(4) == "1",
              float(m.group(5))) for m in steps if m]
    check("GradScaler('cpu'), f16: overflowing steps skipped, then clean "
          "steps, growth and overflow again (as torch reports it)",
          len(steps) == 10 and steps[0][1] and not steps[0][2] and
          any(not inf for _, inf, _, _ in steps) and
          any(after > before for before, _, _, after in steps),
          p.stdout + p.stderr[-500:])
    scaler = [e["args"] for e in events(t, "amp.scaler") if e["ph"] == "i"]
    updates = [a for a in scaler if a["what"] == "update"]
    check("... the trace has scale, unscale, step and update events",
          {"scale", "unscale", "step", "update"} <= {a["what"]
                                                     for a in scaler},
          sorted({a["what"] for a in scaler}))
    stepped = [a for a in scaler if a["what"] == "step"]
    check("... each step's found_inf and skip, and each update's "
          "found_inf, are torch's",
          [(a["found_inf"], a["step_skipped"]) for a in stepped] ==
          [(inf, not ran) for _, inf, ran, _ in steps] and
          [a["found_inf"] for a in updates] == [s[1] for s in steps],
          (stepped[:3], updates[:3], steps[:3]))
    check("... and each update's new scale is torch's",
          [a["scale"] for a in updates] == [after for *_, after in steps],
          ([a["scale"] for a in updates], [s[3] for s in steps]))
    skipped = [e["args"]["skipped"] for e in events(t, "amp.scaler")
               if e["ph"] == "C" and e["name"] == "skipped steps"]
    check("... and the skipped-steps counter ends at torch's count",
          skipped and skipped[-1] == sum(not s for _, _, s, _ in steps),
          skipped)


def test_sdpa():
    p, t = run("sdpa.py")
    if not TORCH2:
        check("torch 1.13: no scaled_dot_product_attention",
              p.stdout.startswith("no scaled_dot_product_attention"))
        return
    sdpa = ops(t, "scaled_dot_product_attention")
    check("scaled_dot_product_attention: lower_precision_fp, q, k, v cast "
          "to bf16, bf16 out, as torch gave",
          p.stdout.strip() == "out torch.bfloat16" and len(sdpa) == 1 and
          sdpa[0]["policy"] == "lower_precision_fp" and
          sdpa[0]["outputs"][0]["dtype"] == "bf16" and
          sorted(c["args"]["arg"] for c in events(t, "amp.cast")
                 if c["args"]["op_id"] == sdpa[0]["op_id"]) == [0, 1, 2],
          (p.stdout, sdpa))


def test_decorator():
    p, t = run("decorator.py")
    regions = [e for e in events(t, "amp.scope") if e["ph"] == "B"]
    mm = ops(t, "mm")
    check("autocast as a decorator: a region per call, mm bf16 inside, "
          "f32 outside",
          p.stdout.startswith("out torch.bfloat16 torch.bfloat16") and
          len(regions) == 2 and
          [(a["outputs"][0]["dtype"], a["autocast"]["enabled"])
           for a in mm] == [("bf16", True)] * 2 + [("f32", False)],
          (regions, mm))


def test_custom_fwd():
    p, t = run("custom_fwd.py")
    mm = [a for a in ops(t, "mm") if a["phase"] == "forward"]
    want = ("f32", False) if TORCH2 else ("bf16", True)
    check("custom_fwd(cast_inputs=f32): the forward's mm %s (torch %s)" % (
              "runs in f32, autocast off inside" if TORCH2 else
              "stays bf16 (1.13's custom_fwd does nothing on the CPU)",
              VERSION),
          p.stdout.strip() == "out torch.%s" % (
              "float32" if TORCH2 else "bfloat16") and mm and
          (mm[0]["outputs"][0]["dtype"], mm[0]["autocast"]["enabled"]) ==
          want, (p.stdout, p.stderr[-300:], mm[:1]))


def test_subclass():
    plain, _ = run("subclass.py", traced=False)
    p, t = run("subclass.py")
    linear = ops(t, "linear")
    check("a tensor subclass under autocast: the program's output is the "
          "plain run's, linear recorded in bf16",
          p.returncode == plain.returncode == 0 and p.stdout == plain.stdout
          and p.stdout.startswith("Tagged torch.bfloat16") and
          [a["outputs"][0]["dtype"] for a in linear] == ["bf16"],
          (plain.stdout, p.stdout, p.stderr[-300:], linear))


skip_unless_bridge(AMPTRACE, PYTHON)
torch_facts()
print("# torch %s" % VERSION)
test_header()
test_cache_inference()
test_cache_threads()
test_grad_scaler()
test_sdpa()
test_decorator()
test_custom_fwd()
test_subclass()
sys.exit(done())
