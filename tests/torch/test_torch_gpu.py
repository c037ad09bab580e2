#!/usr/bin/env python3
"""The PyTorch bridge on a GPU: `amptrace run -- python3 gpu_train.py`
(CUDA f16 autocast, a real GradScaler, a small transformer) must record
the ops, casts and scaler of an unmodified program and link every GPU
kernel to the op that launched it (CUPTI external correlation ids).
TAP output; exit 77 (skip) without a CUDA device or without the bridge.

With --timing it instead runs the program plain, traced, traced without
value checks, traced without kernel timing and under torch.profiler,
interleaved ($AMPTRACE_TIMING_ROUNDS rounds, default 3;
$AMPTRACE_TIMING_ALSO adds traced runs with other settings,
"NAME:VAR=VALUE,...;...", and $AMPTRACE_TIMING_ONLY="plain,traced,..."
keeps those), on transformers' GPT-2 and Llama, and prints
each one's median ms/step and whole-loop time, with the median of each
round's ratio to plain, and traced's to torch.profiler (issue 29's target).

With --values it runs the value checks' scenarios alone.

usage: test_torch_gpu.py AMPTRACE PYTHON [--timing | --values] [--keep DIR]
"""
import os
import re
import statistics
import subprocess
import sys

import amptrace_run
from tap import check, done, scratch, skip_unless_bridge

AMPTRACE, PYTHON = sys.argv[1:3]
TIMING = "--timing" in sys.argv
VALUES_ONLY = "--values" in sys.argv
KEEP = sys.argv[sys.argv.index("--keep") + 1] if "--keep" in sys.argv else None
HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "gpu_train.py")
TMP = scratch("amptrace-torch-gpu-", KEEP)



def run(args, traced, out="t", env=None):
    """gpu_train.py ARGS, under amptrace run when `traced`: (process,
    trace)."""
    path = os.path.join(TMP, out + ".json")
    cmd = [PYTHON, PROGRAM] + args
    env = dict(os.environ, **(env or {}))
    env.pop("AMPTRACE_STEPS", None)  # the checks count on the default, 0:19
    if traced:
        return amptrace_run.run(AMPTRACE, cmd, path, env=env,
                                timeout=600), path
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600,
                          env=env), path


def loss_of(p):
    m = re.search(r"loss ([0-9.]+)", p.stdout)
    return float(m.group(1)) if m else None




def test_trace(model):
    plain = run(["--model", model], False)[0]
    p, path = run(["--model", model], True, "gpu-" + model)
    check("%s: gpu_train.py runs unchanged under amptrace run" % model,
          p.returncode == 0 and "ms/step" in p.stdout, p.stderr[-2000:])
    if p.returncode != 0:
        return
    # Embedding backward sums with atomics: the loss may move in the last
    # digits from run to run, traced or not.
    a, b = loss_of(plain), loss_of(p)
    check("%s: same loss traced as plain (%s vs %s)" % (model, b, a),
          a is not None and b is not None and abs(a - b) <= 1e-3 * abs(a))
    own = [l for l in p.stderr.splitlines() if not l.startswith("amptrace")]
    check("%s: the program's stderr is unchanged" % model,
          own == plain.stderr.splitlines(), p.stderr[-2000:])
    t = amptrace_run.load(path)
    ev = t["traceEvents"]
    meta = [e for e in ev if e.get("name") == "process_name" and
            "framework" in e.get("args", {})]
    framework = meta[0]["args"]["framework"] if meta else ""
    check("%s: the process names torch and the policy table" % model,
          framework.startswith("torch ") and "policy table" in framework,
          framework)
    ops = [e["args"] for e in ev if e.get("cat") == "amp.op"]
    low = [a for a in ops if a.get("policy") == "lower_precision_fp"
           and a.get("device") == "cuda"]
    check("%s: lower_precision_fp ops on cuda run in f16" % model,
          low and all(o["dtype"] == "f16" for a in low
                      for o in a.get("outputs", [])[:1]),
          low[:1])
    phases = {a["phase"] for a in ops}
    check("%s: phases forward, backward and optimizer" % model,
          {"forward", "backward", "optimizer"} <= phases, phases)
    casts = [e["args"] for e in ev if e.get("cat") == "amp.cast"]
    named = [c for c in casts if c.get("name") and c["to"] == "f16"]
    check("%s: weight casts to f16, named after their parameters" % model,
          named and all(c["from"] == "f32" for c in named), casts[:2])
    scaler_ops = [a for a in ops if a["op"].startswith("_amp_")]
    check("%s: GradScaler's ops are in phase optimizer" % model,
          scaler_ops and all(a["phase"] == "optimizer" for a in scaler_ops),
          [(a["op"], a["phase"]) for a in scaler_ops][:4])
    scaler = [e["args"] for e in ev if e.get("cat") == "amp.scaler"]
    check("%s: GradScaler recorded (scale, found_inf per step)" % model,
          any(s.get("what") == "update" for s in scaler), scaler[:3])
    ids = {a["op_id"] for a in ops}
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    linked = [k for k in kernels if k["args"].get("External id") in ids]
    share = len(linked) / len(kernels) if kernels else 0.0
    check("%s: GPU kernels recorded and linked to their ops (%d of %d)"
          % (model, len(linked), len(kernels)),
          kernels and share >= 0.9, share)
    by_id = {a["op_id"]: a["op"] for a in ops}
    gemm_ops = {by_id[k["args"]["External id"]] for k in linked
                if re.search(r"gemm|sm90|cutlass|xmma", k["name"])}
    check("%s: matrix-multiply kernels link to linear/matmul ops" % model,
          gemm_ops & {"linear", "matmul", "mm", "addmm", "bmm", "baddbmm",
                      "_scaled_dot_product_efficient_attention",
                      "_scaled_dot_product_flash_attention"},
          gemm_ops)
    if model == "torch":
        _, unchecked = run(["--model", model], True, "gpu-unchecked",
                           {"AMP_VALUE_CHECKS": "0"})
        without = [e for e in amptrace_run.load(unchecked)["traceEvents"]
                   if e.get("cat") == "kernel"]
        check("%s: as many kernels with the value checks as without (%d, %d)"
              % (model, len(kernels), len(without)),
              abs(len(kernels) - len(without)) <= 0.01 * len(without))
    s = subprocess.run([AMPTRACE, "summary", path], capture_output=True,
                       text=True)
    check("%s: amptrace summary reads it" % model,
          s.returncode == 0 and "f32->f16" in s.stdout, s.stdout[-1500:])
    hits = sum(1 for c in casts if c.get("cache") == "hit")
    print("# metric %s: %d ops, %d casts (%d hits), %d scaler events, "
          "%d kernels, %.1f%% linked; %s" % (
              model, len(ops), len(casts), hits, len(scaler), len(kernels),
              100 * share, framework))
    if KEEP:
        with open(os.path.join(TMP, "summary-%s.txt" % model), "w") as f:
            f.write(s.stdout)


# What a GPU's check says of a result's inf and NaN: counted by the CUDA
# module (loaded for kernel timing; torch 2.5+ gives it the stream), else
# only whether there are any (torch's reductions).
COUNTED = r"\(\d+ inf, \d+ NaN of \d+ values\)"
UNCOUNTED = r"\((some inf, no NaN,|some NaN) of \d+ values\)"


def timed(path):
    """Whether the trace at `path` has kernels: the CUDA module loaded."""
    return os.path.exists(path) and any(
        e.get("cat") == "kernel"
        for e in amptrace_run.load(path)["traceEvents"])


def counts_said(path):
    """The form a GPU's overflow message takes in the trace at `path`:
    counted where the CUDA module was loaded under torch 2.5+."""
    probe = subprocess.run([PYTHON, "-c", "import torch; print(tuple(int(x) "
                            "for x in torch.__version__.split('.')[:2]) >= "
                            "(2, 5))"], capture_output=True, text=True)
    return (COUNTED if timed(path) and probe.stdout.strip() == "True"
            else UNCOUNTED)


def test_value_checks():
    """The value checks on a GPU (the device's tensors reduced where their
    op ends, read once per step): the forensics scenarios find there what they
    find on the CPU (test_forensics.py)."""
    scenario = os.path.join(HERE, "scenario_overflow.py")
    found = {}
    for mode in ("scheduler", "split", "cast-overflow", "healthy"):
        path = os.path.join(TMP, "overflow-%s.json" % mode)
        p = amptrace_run.run(AMPTRACE, [PYTHON, scenario, mode, "cuda"],
                             path, timeout=600)
        found[mode] = [] if p.returncode else [
            e["args"]["message"] for e in amptrace_run.load(path)["traceEvents"]
            if e.get("cat") == "amp.diag" and
            e["args"].get("kind") == "fp16-overflow"]
    big = found["scheduler"]
    scheduler = os.path.join(TMP, "overflow-scheduler.json")
    check("value checks on cuda: kernels timed (the CUDA module, which "
          "counts, loaded)", timed(scheduler))
    counts = counts_said(scheduler)
    check("value checks on cuda: one fp16-overflow per step, the linear of "
          "'big', in the forward, its inf and NaN %s" % (
              "counted" if counts == COUNTED else "flagged"),
          len(big) == 4 and all(
              m.startswith("linear (op") and "module 'big'" in m and
              "forward" in m and re.search(counts, m) for m in big), big[:2])
    check("value checks on cuda: the inf through q and k (views with gaps) "
          "is the projection's only", len(found["split"]) == 1 and
          found["split"][0].startswith("linear (op"), found["split"])
    check("value checks on cuda: the f32->f16 cast is the origin, not the "
          "linear", len(found["cast-overflow"]) == 1 and
          found["cast-overflow"][0].startswith("the f32->f16 cast of"),
          found["cast-overflow"])
    check("value checks on cuda: a healthy model, no fp16-overflow",
          not found["healthy"], found["healthy"][:2])


def per_model(p, key):
    """{model: value of `key`} from each of gpu_train.py's model lines."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r"model (\S+) .*?%s ([0-9.]+)" % key, p.stdout)}


def link_share(path):
    """(kernels linked to an op, kernels, steps ended, kernels and copies
    of the steps without full detail) in a trace."""
    trace = amptrace_run.load(path)
    ev = trace["traceEvents"]
    ids = {e["args"]["op_id"] for e in ev if e.get("cat") == "amp.op"}
    kernels = [e for e in ev if e.get("cat") == "kernel"]
    linked = sum(1 for k in kernels if k["args"].get("External id") in ids)
    process = trace["amptraceEnd"]["processes"][0]
    return (linked, len(kernels), process.get("steps", {}).get("ended", 0),
            process.get("gpu", {}).get("aggregated", 0))


# name: (traced, environment, extra program arguments)
TIMING_RUNS = {
    "plain": (False, {}, []),
    "traced": (True, {}, []),
    "unchecked": (True, {"AMP_VALUE_CHECKS": "0"}, []),
    # without kernel timing (no CUDA module to load)
    "untimed": (True, {"AMP_CUDA_MODULE": "/none"}, []),
    "profiler": (False, {}, ["--profile"]),
}


ROUNDS = int(os.environ.get("AMPTRACE_TIMING_ROUNDS", "3"))


def also_timed(spec):
    """More traced runs to time, for comparing builds or settings:
    "NAME:VAR=VALUE[,VAR=VALUE...][;NAME:...]"."""
    runs = {}
    for item in filter(None, spec.split(";")):
        name, _, assignments = item.partition(":")
        env = dict(a.split("=", 1) for a in assignments.split(",") if a)
        runs[name] = (True, env, [])
    return runs


TIMING_RUNS.update(also_timed(os.environ.get("AMPTRACE_TIMING_ALSO", "")))
if os.environ.get("AMPTRACE_TIMING_ONLY"):  # "traced,...": these and plain
    TIMING_RUNS = {name: run for name, run in TIMING_RUNS.items()
                   if name == "plain" or
                   name in os.environ["AMPTRACE_TIMING_ONLY"].split(",")}


def paired_ratio(values, bases):
    """The median of the rounds' own ratios: runs of one round ran side by
    side, so a GPU's drift between rounds (plain moved 25-55% between
    rounds on an H200) cancels out."""
    return statistics.median(v / b for v, b in zip(values, bases))


def test_timing():
    """Every run of TIMING_RUNS, interleaved, ROUNDS times, on transformers'
    GPT-2 and Llama (both in each process) or, without transformers, the
    GPT-style model at two sizes."""
    probe = subprocess.run([PYTHON, "-c", "import transformers"],
                           capture_output=True)
    sizes = [("gpt2+llama", ["--model", "hf,llama", "--width", "256",
                             "--layers", "4", "--batch", "8", "--seq", "256",
                             "--steps", "14"])]
    if probe.returncode != 0:
        sizes = [("small", []),
                 ("medium", ["--width", "512", "--layers", "4", "--batch",
                             "16", "--seq", "256", "--steps", "12"])]
    for size, args in sizes:
        runs = {name: [] for name in TIMING_RUNS}
        for round_ in range(ROUNDS):
            for name, (traced, env, extra) in TIMING_RUNS.items():
                p, path = run(args + extra, traced, "timing-%s-%d" % (name, round_),
                              env)
                if p.returncode != 0:
                    print("# %s failed: %s" % (name, p.stderr[-1500:]))
                print("# run %s %d: %s" % (name, round_, per_model(p, "ms/step")),
                      flush=True)
                runs[name].append((p, path))
        for name in runs:
            ok = all(per_model(p, "ms/step") for p, _ in runs[name])
            check("timing %s: every %s run reports ms/step" % (size, name),
                  ok, [p.stderr[-300:] for p, _ in runs[name]])
        models = sorted(per_model(runs["plain"][0][0], "ms/step"))
        for model in models:
            for key, what in (("ms/step", "median ms/step"),
                              ("whole", "whole loop incl. warm-up and profiler exit")):
                values = {name: [per_model(p, key).get(model) for p, _ in v]
                          for name, v in runs.items()}
                if any(None in v for v in values.values()):
                    continue
                print("# metric timing %s %s (%s of %d; ratio to plain): %s" % (
                    size, model, what, ROUNDS, ", ".join(
                        "%s %.3f (%.2fx)" % (k, statistics.median(v),
                                             paired_ratio(v, values["plain"]))
                        for k, v in values.items())))
                if "traced" in values and "profiler" in values:
                    print("# metric timing %s %s (%s): traced/profiler %.2fx" % (
                        size, model, what,
                        paired_ratio(values["traced"], values["profiler"])))
        p, path = runs.get("traced", [(None, "")])[0]
        if p and p.returncode == 0 and os.path.exists(path):
            linked, kernels, steps, aggregated = link_share(path)
            print("# metric timing %s traced: %d of %d kernels linked; %d "
                  "steps, their kernels and copies past the first 20 "
                  "counted: %d" % (size, linked, kernels, steps, aggregated))
            check("timing %s traced: every kernel written is linked to an "
                  "op, those of the steps past the first 20 counted instead"
                  % size, kernels > 0 and linked == kernels and
                  (aggregated > 0) == (steps > 20),
                  (linked, kernels, steps, aggregated))


def main():
    skip_unless_bridge(AMPTRACE, PYTHON,
                       "import torch; assert torch.cuda.is_available()")
    if TIMING:
        test_timing()
    elif VALUES_ONLY:
        test_value_checks()
    else:
        test_trace("torch")
        test_value_checks()
        probe = subprocess.run([PYTHON, "-c", "import transformers"],
                               capture_output=True)
        if probe.returncode == 0:
            test_trace("hf")
            test_trace("llama")
    return done()


if __name__ == "__main__":
    sys.exit(main())
