#!/usr/bin/env python3
"""The model zoo: real library models (zoo_models.py) trained a few steps
under CPU bf16 autocast, each run plain and under `amptrace run`:

  - the losses traced equal the plain run's, bit for bit;
  - the trace validates (validate_trace);
  - casts by direction (autocast's in forward, autograd's in backward)
    and the output dtypes of the ops autocast decides equal those of an
    independent logger of torch's own Python modes (dtype_log.py) that the
    plain run keeps over a second, identical training;
  - no finding but the true ones TRUE_FINDINGS lists, info ones
    included: a finding on a healthy model is a false alarm;
  - summary, check, report and ampview read the trace;
  - the traced run leaves in its TMPDIR what the plain run leaves in its
    own and no more (the libraries' caches and empty temporary
    directories: each run has a TMPDIR of its own, under the test's,
    so none reaches the machine's).
Then DDP: `torchrun --nproc_per_node 2` (gloo) under `amptrace run`, one
trace per rank, merged.

The interpreters come from the environment: AMPTRACE_TEST_TORCH2_PYTHON
(torch 2.13 with transformers, peft, lightning, accelerate) and
AMPTRACE_TEST_VISION_PYTHON (a torch with torchvision and timm).  A model
whose interpreter is not there is skipped, said in a line; none: exit 77.

usage: test_zoo.py AMPTRACE VALIDATE_TRACE AMPVIEW [MODEL...]
"""
import collections
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from amptrace_run import GLOO_EXIT_RACE, run_again_on  # noqa: E402
from tap import bridge_missing, check, done, torch2_required  # noqa: E402

# absolute: meson gives them relative to the build directory
AMPTRACE, VALIDATE, AMPVIEW = (os.path.abspath(p) for p in sys.argv[1:4])
ONLY = sys.argv[4:]
TMP = tempfile.mkdtemp(prefix="amptrace-zoo-")
STEPS = "2"
TRANSFORMERS = ["gpt2", "gpt2_eval", "llama", "bert", "t5", "lora", "lightning",
                "accelerate", "hf_trainer"]
VISION = ["vit", "resnet", "convnext"]
# The ops whose output dtype autocast decides, as the logger's function
# mode names them (the trace's name where it differs).
DECIDED = {"linear", "addmm", "matmul", "mm", "bmm", "baddbmm", "conv2d",
           "layer_norm", "group_norm", "batch_norm", "softmax", "log_softmax",
           "embedding", "scaled_dot_product_attention", "cross_entropy",
           "mul", "add", "pow", "tanh", "gelu", "silu", "mean", "rsqrt",
           "sum"}
TRACE_NAMES = {"cross_entropy": "cross_entropy_loss"}
# Casts torch made that the trace lacks, by model: (torch release the
# trace's framework names, phase, direction, how many a step, why).  Each
# must be missing exactly so, or the check fails (the gap is fixed: drop
# the entry).
KNOWN_GAPS = {}
# The findings a model's healthy run has, each true: model -> {kind: why}.
# Any other finding fails, as does one listed that is no longer found (the
# model or amptrace changed: drop the entry).
TRUE_FINDINGS = {
    "t5": {"redundant-cast": "transformers' T5DenseActDense casts its "
           "activation to wo's weight dtype (f32 under autocast) before "
           "wo, whose autocast casts it back to bf16: two casts for none"},
}
# what the bridge says on stderr (even with -q) when it records through
# the Python modes (amptrace_torch/_modes.py install)
FALLBACK_NOTE = "amptrace: recording torch through Python modes"
ENV = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
           HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false",
           WANDB_DISABLED="true", PYTHONDONTWRITEBYTECODE="1")


def interpreter(model):
    variable = ("AMPTRACE_TEST_VISION_PYTHON" if model in VISION
                else "AMPTRACE_TEST_TORCH2_PYTHON")
    python = os.environ.get(variable, "")
    need = "import timm" if model in VISION else "import transformers"
    if not python or subprocess.run([python, "-c", need],
                                    capture_output=True).returncode != 0:
        return None, "%s=%r cannot `%s`" % (variable, python, need)
    return python, None


def run(cmd, timeout=600, tmpdir=None):
    """cmd's result; with its own TMPDIR, made, when `tmpdir` is given."""
    env = ENV
    if tmpdir:
        shutil.rmtree(tmpdir, ignore_errors=True)  # a run again: afresh
        os.makedirs(tmpdir)
        env = dict(ENV, TMPDIR=tmpdir)
    return subprocess.run(cmd, capture_output=True, text=True, env=env,
                          cwd=HERE, timeout=timeout)


def left_behind(tmpdir):
    """The names a run left in its TMPDIR, their random parts masked
    (tempfile's tmpXXXXXXXX, torchrun's torchelastic_XXXXXXXX), each once:
    the plain run trains twice (the second under the logger)."""
    return sorted({re.sub(r"^(tmp|torchelastic_)[a-z0-9_]{6,}$", r"\1*", n)
                   for n in os.listdir(tmpdir)})


def run_torchrun(cmd, tmpdir):
    """A torchrun job, run again when gloo's exit race ended it
    (amptrace_run.GLOO_EXIT_RACE), twice at most."""
    return run_again_on((GLOO_EXIT_RACE,),
                        lambda k: run(cmd, tmpdir=tmpdir))


def losses(stdout):
    return [l for l in stdout.splitlines() if l.startswith("loss ")]


def trace_casts(t):
    """{phase: {direction: n}} of the trace's casts as the logger counts
    them: autocast's that did work (a hit dispatches nothing) in forward,
    autograd's in backward."""
    found = collections.Counter()
    for e in t["traceEvents"]:
        if e.get("cat") != "amp.cast" or e["args"]["cache"] == "hit":
            continue
        a = e["args"]
        phase = {"autograd": "backward", "custom_fwd": "custom_fwd"}.get(
            a.get("origin"), "forward")
        found[(phase, "%s->%s" % (a["from"], a["to"]))] += 1
    casts = {}
    for (phase, direction), n in sorted(found.items()):
        casts.setdefault(phase, {})[direction] = n
    return casts


def trace_outputs(t, names):
    """{name: {dtype: n}}: the first output dtype of the ops outside
    backward and the optimizer with no op around them, for the names the
    logger is compared on.  The logger takes every op autograd's engine
    does not run for forward; the trace tells apart `other` (weight
    initialisation, data: grad off and no autocast region, FORMAT.md)."""
    found = collections.Counter()
    for e in t["traceEvents"]:
        a = e.get("args", {})
        if (e.get("cat") == "amp.op" and
                a["phase"] in ("forward", "other") and
                not a.get("parent_op_id") and a["op"] in names and
                a["outputs"]):
            found[(a["op"], a["outputs"][0]["dtype"])] += 1
    outputs = {}
    for (name, dtype), n in sorted(found.items()):
        outputs.setdefault(name, {})[dtype] = n
    return outputs


def unexpected_findings(model, path):
    """The findings of the trace that TRUE_FINDINGS does not list for
    `model`, and those it lists that are not there."""
    s = run([AMPTRACE, "summary", "--json", path])
    if s.returncode != 0:
        return ["summary failed: " + s.stderr]
    expected = TRUE_FINDINGS.get(model, {})
    found = json.loads(s.stdout)["findings"]
    return (["%s %s: %s" % (f["severity"], f["kind"], f["message"])
             for f in found if f["kind"] not in expected] +
            ["%s listed, not found" % kind for kind in expected
             if kind not in {f["kind"] for f in found}])


def readers_run(name, path):
    """summary, check, report and ampview read the trace."""
    rules = os.path.join(TMP, name + ".rules")
    with open(rules, "w") as f:
        f.write("casts f32->bf16 >= 1\ncasts total origin autograd >= 1\n"
                "no finding dtype-mismatch\n")
    results = {
        "summary": run([AMPTRACE, "summary", path]),
        "check": run([AMPTRACE, "check", path, rules]),
        "report": run([AMPTRACE, "report", path, "-o",
                       os.path.join(TMP, name + ".html")]),
        "ampview": run([AMPVIEW, path, "-o",
                        os.path.join(TMP, name + ".svg")]),
    }
    failed = {k: (p.returncode, p.stdout[-300:] + p.stderr[-300:])
              for k, p in results.items() if p.returncode != 0}
    return failed, results["summary"].stdout


def test_model(name):
    python, why = interpreter(name)
    # the timm environment is a skip wherever ./run cannot make it (said
    # there); only torch 2.13's is required
    if python is None and torch2_required() and name not in VISION:
        check("%s: its interpreter is there (AMPTRACE_REQUIRE_TORCH2=1)"
              % name, False, why)
        return True
    if python is None:
        print("# SKIP %s: %s" % (name, why))
        return False
    log = os.path.join(TMP, name + ".log.json")
    path = os.path.join(TMP, name + ".json")
    tmpdirs = [os.path.join(TMP, name + how) for how in (".tmp", ".traced-tmp")]
    plain = run([python, "zoo_run.py", name, STEPS, "--log", log],
                tmpdir=tmpdirs[0])
    traced = run([AMPTRACE, "run", "-q", "-o", path, "--", python,
                  "zoo_run.py", name, STEPS], tmpdir=tmpdirs[1])
    check("%s: trains (%s steps) plain and traced, losses bit for bit "
          "equal" % (name, STEPS),
          plain.returncode == traced.returncode == 0 and
          len(losses(plain.stdout)) == int(STEPS) and
          losses(plain.stdout) == losses(traced.stdout),
          (plain.returncode, plain.stderr[-800:], traced.returncode,
           traced.stderr[-800:], losses(plain.stdout),
           losses(traced.stdout)))
    if plain.returncode != 0 or traced.returncode != 0:
        return True
    # the observer builds for every torch the zoo runs (torch 2.14's
    # headers want C++20: the build said so and the bridge fell back to
    # the Python modes, which see no cache hit)
    check("%s: recorded through the observer, not the Python modes"
          % name, FALLBACK_NOTE not in traced.stderr or
          ENV.get("AMPTRACE_TORCH_FALLBACK") == "1", traced.stderr[-600:])
    left = [left_behind(d) for d in tmpdirs]
    check("%s: traced, it leaves in TMPDIR what it leaves plain (%s)"
          % (name, ", ".join(left[0]) or "nothing"), left[0] == left[1], left)
    v = run([VALIDATE, path])
    check("%s: the trace validates" % name, v.returncode == 0,
          v.stdout + v.stderr)
    with open(path) as f:
        t = json.load(f)
    with open(log) as f:
        logged = json.load(f)
    expected = {k: dict(v) for k, v in logged["casts"].items()
                if k in ("forward", "backward")}
    gap = KNOWN_GAPS.get(name)
    if gap and t["amptrace"].get("framework", "").startswith(gap[0]):
        release, phase, direction, per_step, why = gap
        expected[phase][direction] -= per_step * int(STEPS)
        print("# %s: %d %s %s cast(s) a step missing: %s"
              % (name, per_step, phase, direction, why))
    check("%s: casts by direction as the logger saw them (%s)"
          % (name, expected), trace_casts(t) == expected,
          (trace_casts(t), logged["casts"]))
    decided = {TRACE_NAMES.get(k, k): v
               for k, v in logged["outputs"].items() if k in DECIDED}
    got = trace_outputs(t, set(decided) | {TRACE_NAMES.get(n, n)
                                           for n in DECIDED})
    check("%s: the output dtypes of the ops autocast decides as the logger "
          "saw them (%d ops)" % (name, sum(sum(d.values())
                                          for d in decided.values())),
          got == decided and decided,
          {k: (got.get(k), decided.get(k)) for k in set(got) | set(decided)
           if got.get(k) != decided.get(k)})
    unexpected = unexpected_findings(name, path)
    check("%s: no finding but the true ones listed (%s)" % (
        name, ", ".join(TRUE_FINDINGS.get(name, {})) or "none"),
        not unexpected, unexpected)
    failed, summary = readers_run(name, path)
    check("%s: summary, check, report and ampview read the trace" % name,
          not failed, failed)
    return True


def test_ddp():
    python, why = interpreter("gpt2")
    if python is None:
        print("# SKIP ddp: %s" % why)
        return False
    torchrun = os.path.join(os.path.dirname(python), "torchrun")
    out = os.path.join(TMP, "ddp.json")
    tmpdirs = [os.path.join(TMP, "ddp" + how) for how in (".tmp", ".traced-tmp")]
    p = run_torchrun([AMPTRACE, "run", "-q", "-o", out, "--", torchrun,
                      "--nproc_per_node", "2", "--standalone", "zoo_ddp.py",
                      STEPS], tmpdirs[1])
    plain = run_torchrun([torchrun, "--nproc_per_node", "2", "--standalone",
                          "zoo_ddp.py", STEPS], tmpdirs[0])
    ranks = [os.path.join(TMP, "ddp.rank%d.json" % r) for r in (0, 1)]
    check("ddp: torchrun --nproc_per_node 2 (gloo) under amptrace run: the "
          "same losses, one trace per rank",
          p.returncode == plain.returncode == 0 and
          sorted(losses(p.stdout)) == sorted(losses(plain.stdout)) and
          len(losses(plain.stdout)) == 2 * int(STEPS) and
          all(os.path.isfile(r) for r in ranks),
          (p.returncode, plain.returncode, sorted(losses(p.stdout)),
           sorted(losses(plain.stdout)), p.stderr[-600:],
           plain.stderr[-600:]))
    if not all(os.path.isfile(r) for r in ranks):
        return True
    left = [left_behind(d) for d in tmpdirs]
    check("ddp: traced, torchrun leaves in TMPDIR what it leaves plain (%s)"
          % (", ".join(left[0]) or "nothing"), left[0] == left[1], left)
    merged = os.path.join(TMP, "ddp-merged.json")
    m = run([AMPTRACE, "merge"] + ranks + ["-o", merged])
    v = run([VALIDATE, merged]) if m.returncode == 0 else m
    check("ddp: amptrace merge joins the ranks; the merged trace validates",
          m.returncode == 0 and v.returncode == 0,
          m.stderr + v.stdout + v.stderr)
    if m.returncode == 0:
        with open(merged) as f:
            t = json.load(f)
        ranks_seen = {e["pid"] for e in t["traceEvents"]
                      if e.get("cat") == "amp.op"}
        linear = [e["args"] for e in t["traceEvents"]
                  if e.get("cat") == "amp.op" and
                  e["args"]["op"] == "addmm" and
                  e["args"]["phase"] == "forward"]
        check("ddp: both ranks' autocast ops, in bf16",
              len(ranks_seen) == 2 and linear and
              all(a["outputs"][0]["dtype"] == "bf16" for a in linear),
              (ranks_seen, linear[:1]))
        unexpected = unexpected_findings("ddp", merged)
        check("ddp: no finding", not unexpected, unexpected)
        s = run([AMPTRACE, "summary", merged])
        check("ddp: summary counts each rank's steps",
              "steps: %s on each of 2 ranks (marked by optimizer step)"
              % STEPS in s.stdout, s.stdout[:400] + s.stderr[-400:])
    return True


if bridge_missing(AMPTRACE, sys.executable, "pass"):
    print("1..0 # SKIP %s" % bridge_missing(AMPTRACE, sys.executable, "pass"))
    sys.exit(77)
ran = False
for model in TRANSFORMERS + VISION:
    if not ONLY or model in ONLY:
        ran |= test_model(model)
if not ONLY or "ddp" in ONLY:
    ran |= test_ddp()
shutil.rmtree(TMP, ignore_errors=True)
if not ran:
    print("1..0 # SKIP no interpreter for the zoo (AMPTRACE_TEST_TORCH2_"
          "PYTHON, AMPTRACE_TEST_VISION_PYTHON)")
    sys.exit(77)
sys.exit(done())
