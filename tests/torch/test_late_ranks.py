#!/usr/bin/env python3
"""Processes that learn their rank late, from init_process_group, not
from RANK in their environment (FORMAT.md §5): torch.multiprocessing.spawn
as PyTorch's DDP tutorial uses it, the same with init_device_mesh
(torch 2.2+) joining the job, and Lightning's DDP on the CPU (when the
Python has lightning).  Each rank's process is named by its rank
(process_name, process_sort_index, the trailer, the report), with its own
steps and bf16 ops, the ops it ran before it had a rank included, and so
is each rank's DataLoader worker; the program's output is the same
traced.  Two nodes of such a job, a trace.json each, merge into the
job's four ranks, each process keeping its own.  Negatives: workers that
never call init_process_group keep rank null; a RANK the environment
gave and torch's agreeing leave torchrun's path as it was (a file per
rank, merged, each process named once); torch's rank wins over a
disagreeing RANK.
TAP output; exit 77 (skip) without the bridge or without torch.

usage: test_late_ranks.py AMPTRACE VALIDATE_TRACE PYTHON [PART...]
  PART: spawn, spawn_mesh, spawn_loader, spawn_nodes, ... (the test_
        functions' names without test_): only those; tests/meson.build
        runs them in two halves
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from amptrace_run import GLOO_EXIT_RACE, events, load, run_again_on
from tap import check, done, scratch, skip_unless_bridge

AMPTRACE = os.path.abspath(sys.argv[1])
VALIDATE = os.path.abspath(sys.argv[2])
PYTHON = shutil.which(sys.argv[3]) or sys.argv[3]
HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 3
TIMEOUT = 300


def run(command, trace=None, env=None, options=()):
    """COMMAND, under `amptrace run -o TRACE OPTIONS` when TRACE is given,
    in the scratch directory: the CompletedProcess (text).  Past TIMEOUT
    its whole session is killed (the ranks with it), status -9."""
    return finish(start(command, trace, env, options))


def start(command, trace=None, env=None, options=()):
    """run's COMMAND started: its Popen, for finish()."""
    if trace:
        command = [AMPTRACE, "run", "-o", trace, *options, "--", *command]
    return subprocess.Popen(command, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=TMP,
                            env=dict(os.environ, **(env or {})),
                            start_new_session=True)


def finish(p, timeout=TIMEOUT):
    """run's CompletedProcess of a process start() started, killed (its
    session) past `timeout` seconds."""
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        err += "\n(killed after %d s)" % timeout
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def finish_together(processes):
    """finish() of processes that wait for each other (one job's nodes),
    each read as it runs (a full pipe would stop it): once one fails the
    others get 10 s to end, not TIMEOUT (gloo's rendezvous waits 30
    minutes for a rank that died), then their sessions are killed."""
    results = [None] * len(processes)

    def wait(k):
        results[k] = finish(processes[k])
    threads = [threading.Thread(target=wait, args=(k,))
               for k in range(len(processes))]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads) and not any(
            r is not None and r.returncode for r in results):
        time.sleep(0.2)
    for t in threads:
        t.join(10)
    for p in processes:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    for t in threads:
        t.join()
    return results


def store(name):
    """A rendezvous file for init_process_group, new."""
    return os.path.join(TMP, name + ".store")


def losses(text):
    """The `rank R step S loss X` lines the scenarios print, sorted: the
    ranks' lines interleave in any order."""
    return sorted(line for line in text.splitlines()
                  if re.match(r"rank \d+ step \d+ loss ", line))


def metadata(trace, name):
    """pid -> the args of its `name` M events, in file order."""
    found = {}
    for e in trace["traceEvents"]:
        if e.get("ph") == "M" and e.get("name") == name:
            found.setdefault(e["pid"], []).append(e["args"])
    return found


def ranked(trace):
    """pid -> the trailer's entry, for the processes that ran ops."""
    return {p["pid"]: p for p in trace["amptraceEnd"]["processes"]
            if p["ops"] > 0}


def ops_before_rank(trace, pid):
    """The ops of `pid` written before the process_name that names its
    rank: what it ran before init_process_group returned."""
    count = 0
    for e in trace["traceEvents"]:
        if e.get("pid") != pid:
            continue
        if e.get("name") == "process_name" and "rank" in e.get("args", {}):
            return count
        count += e.get("cat") == "amp.op"
    return None


def bf16_ops(trace, pid):
    return [e for e in events(trace, "amp.op") if e["pid"] == pid and
            e["args"]["policy"] == "lower_precision_fp" and
            e["args"]["outputs"][0]["dtype"] == "bf16"]


def report_ranks(path):
    """The ranks the report's page gives its processes (its rank
    selector's), by pid."""
    page = os.path.join(TMP, os.path.basename(path) + ".html")
    p = subprocess.run([AMPTRACE, "report", path, "-o", page],
                       capture_output=True, text=True)
    if p.returncode != 0:
        return {"error": p.stderr}
    with open(page) as f:
        text = f.read()
    return {int(pid): int(rank) for pid, rank in
            re.findall(r'"pid":(\d+),"rank":(-?\d+),"name":', text)}


def check_ranks(what, trace_path, result, plain):
    """What every late-ranked run must show: one process per rank, named
    and ordered by it, its steps and bf16 ops, the same output."""
    check("%s: traced, exit 0 and the same losses as plain" % what,
          result.returncode == 0 and plain.returncode == 0 and
          losses(result.stdout) == losses(plain.stdout) and
          len(losses(plain.stdout)) == 2 * STEPS,
          (result.returncode, result.stderr[-2000:], losses(result.stdout),
           plain.returncode, plain.stderr[-2000:], losses(plain.stdout)))
    if not os.path.isfile(trace_path):
        check("%s: a trace" % what, False, result.stderr[-2000:])
        return
    v = subprocess.run([VALIDATE, trace_path], capture_output=True, text=True)
    check("%s: the trace validates" % what, v.returncode == 0,
          v.stdout + v.stderr)
    trace = load(trace_path)
    processes = ranked(trace)
    ranks = sorted((p["rank"] for p in processes.values()), key=str)
    check("%s: two processes ran ops, rank 0 and rank 1 in the trailer"
          % what, ranks == [0, 1], processes)
    names = metadata(trace, "process_name")
    orders = metadata(trace, "process_sort_index")
    for pid, end in sorted(processes.items()):
        rank = end["rank"]
        last = names.get(pid, [{}])[-1]
        check("%s: rank %s's process is named without a rank, then by it "
              "(%s), not by its parent's" % (what, rank, last.get("name")),
              [n.get("rank") for n in names.get(pid, [])] == [None, rank] and
              last.get("name", "").startswith("rank %s: " % rank) and
              orders.get(pid, [{}])[-1].get("sort_index") == rank,
              (names.get(pid), orders.get(pid)))
        check("%s: rank %s ended its %d steps" % (what, rank, STEPS),
              (end.get("steps") or {}).get("ended") == STEPS, end)
        check("%s: rank %s's autocast ops in bf16" % (what, rank),
              bf16_ops(trace, pid), pid)
        before = ops_before_rank(trace, pid)
        check("%s: rank %s's ops before init_process_group (the model's "
              "making) are its process's: %s" % (what, rank, before),
              before, names.get(pid))
    check("%s: the report tells the ranks apart" % what,
          report_ranks(trace_path) ==
          {pid: p["rank"] for pid, p in processes.items()},
          report_ranks(trace_path))
    check_per_step_rule(what, trace_path, trace, min(processes))


def check_per_step_rule(what, trace_path, trace, pid, groups="ranks"):
    """A per-step rule holds per rank (or per process without a rank:
    `groups` "processes"), as for one process: a rank's casts a step, not
    the ranks' sum (FORMAT.md §8)."""
    casts = [e for e in events(trace, "amp.cast") if e["pid"] == pid and
             e["args"].get("cache") != "hit" and
             not e["args"].get("origin")]
    rules = os.path.join(TMP, "per-step.rules")
    with open(rules, "w") as f:
        f.write("casts total == %d per step\n" % (len(casts) // STEPS))
    p = subprocess.run([AMPTRACE, "check", trace_path, rules],
                       capture_output=True, text=True)
    check("%s: `casts total == %d per step` holds in each of the %s' %d "
          "steps" % (what, len(casts) // STEPS, groups, STEPS),
          casts and len(casts) % STEPS == 0 and p.returncode == 0 and
          "over %d steps of 2 %s" % (2 * STEPS, groups) in p.stdout,
          p.stdout + p.stderr)


def test_spawn():
    script = os.path.join(HERE, "scenario_spawn_ddp.py")
    plain = spawn_job(script, "plain")
    path = os.path.join(TMP, "spawn.json")
    traced = spawn_job(script, "spawn", trace=path)
    check_ranks("mp.spawn", path, traced, plain)
    check("mp.spawn: the ranks' processes are in the one trace, whose "
          "header names no rank (their events began without one)",
          os.path.isfile(path) and load(path)["amptrace"]["rank"] is None and
          not glob.glob(os.path.join(TMP, "spawn.rank*")),
          sorted(os.listdir(TMP)))


def test_spawn_mesh():
    """init_device_mesh (torch 2.2+) calls init_process_group itself,
    through device_mesh's own name for it, when the program did not."""
    script = os.path.join(HERE, "scenario_spawn_ddp.py")
    probe = run([PYTHON, "-c", "import torch.distributed.device_mesh as m; "
                 "m.init_device_mesh"])
    if probe.returncode != 0:
        print("# %s has no init_device_mesh: its part skipped" % PYTHON)
        return
    plain = spawn_job(script, "mesh-plain", "--mesh")
    path = os.path.join(TMP, "mesh.json")
    traced = spawn_job(script, "mesh", "--mesh", trace=path)
    check_ranks("mp.spawn with init_device_mesh", path, traced, plain)


def spawn_job(script, name, *options, trace=None):
    """scenario_spawn_ddp.py's job (`name` its rendezvous file's), run
    again, at a new rendezvous file (or port: --mesh finds one free), when
    torch 2.13's gloo exit race ended it or, with --mesh, another job on
    the machine took its port before rank 0 listened on it."""
    return run_again_on(
        ("EADDRINUSE", GLOO_EXIT_RACE),
        lambda k: run([PYTHON, script, str(STEPS), store("%s-%d" % (name, k)),
                       *options], trace))


def test_spawn_loader():
    """Each rank's DataLoader worker, started (spawned: mp.spawn's
    workers' start method) after init_process_group, is its rank's, as
    with RANK in the environment it would inherit."""
    script = os.path.join(HERE, "scenario_spawn_ddp.py")
    path = os.path.join(TMP, "loader.json")
    traced = spawn_job(script, "loader", "--loader", trace=path)
    if not os.path.isfile(path):
        check("mp.spawn with DataLoader workers: a trace", False,
              traced.stderr[-2000:])
        return
    trace = load(path)
    processes = ranked(trace)
    names = metadata(trace, "process_name")
    workers = {pid: p for pid, p in processes.items() if not p.get("steps")}
    check("mp.spawn with DataLoader workers: each rank's worker is named "
          "by its rank, once (as with the rank in its environment)",
          traced.returncode == 0 and len(processes) == 4 and
          sorted((p["rank"] for p in workers.values()), key=str) == [0, 1]
          and all([n.get("rank") for n in names[pid]] == [p["rank"]] and
                  names[pid][0]["name"].startswith("rank %s: " % p["rank"])
                  for pid, p in workers.items()),
          (traced.returncode, processes, names))


def test_spawn_nodes():
    """A job of two nodes, each one `amptrace run` of its own writing one
    trace.json of its two late ranks (FORMAT.md §5): node 0's ranks 0
    and 1, node 1's 2 and 3, merged into the job's (§6).  The nodes are
    two runs of scenario_spawn_ddp.py --node K/2 on this machine, side
    by side, meeting at one file store: one job of world size 4, as two
    hosts' would be.  Node 1's ranks read their batches through a
    DataLoader worker each, named by its rank in node1.json: merged, it
    gets a pid above the ranks, still named by its rank."""
    script = os.path.join(HERE, "scenario_spawn_ddp.py")
    nodes = [os.path.join(TMP, "node%d.json" % k) for k in (0, 1)]
    runs = [start([PYTHON, script, str(STEPS), store("nodes"), "--node",
                   "%d/2" % k] + ["--loader"] * k, path)
            for k, path in enumerate(nodes)]
    runs = finish_together(runs)
    check("two nodes: each run exits 0, its two ranks' losses printed",
          all(r.returncode == 0 and len(losses(r.stdout)) == 2 * STEPS
              for r in runs),
          [(r.returncode, r.stderr[-2000:]) for r in runs])
    if not all(map(os.path.isfile, nodes)):
        return
    job = os.path.join(TMP, "job.json")
    merged = subprocess.run([AMPTRACE, "merge", *nodes, "-o", job],
                            capture_output=True, text=True, cwd=TMP)
    check("two nodes: merged, exit 0, without taking ranks by position",
          merged.returncode == 0 and "order of the arguments" not in
          merged.stderr, merged.stderr)
    if merged.returncode != 0:
        return
    v = subprocess.run([VALIDATE, job], capture_output=True, text=True)
    check("two nodes: the merged trace validates", v.returncode == 0,
          v.stdout + v.stderr)
    summary = subprocess.run([AMPTRACE, "summary", job],
                             capture_output=True, text=True)
    check("two nodes: summary counts 3 steps on each of 4 ranks",
          "steps: %d on each of 4 ranks" % STEPS in summary.stdout,
          summary.stdout[:2000] + summary.stderr)
    trace = load(job)
    names = metadata(trace, "process_name")
    ops = {e["pid"] for e in events(trace, "amp.op")}
    # each rank's own pid in its node's file (the process that marked
    # steps, not its worker): the merged name keeps it
    own = {p["rank"]: p["pid"] for path in nodes
           for p in ranked(load(path)).values() if p.get("steps")}
    for rank in range(4):
        pid = rank + 1
        last = names.get(pid, [{}])[-1]
        check("two nodes: rank %d is pid %d, the process that named rank %d "
              "in its node's file, named so (%s)"
              % (rank, pid, rank, last.get("name")),
              last.get("rank") == rank and pid in ops and
              re.fullmatch(r"rank %d: .* \(pid %s\)"
                           % (rank, own.get(rank)), last.get("name", "")),
              (names.get(pid), own))
    workers = {pid: names[pid][-1].get("rank") for pid in ops if pid > 4}
    check("two nodes: node 1's DataLoader workers, one of rank 2 and one "
          "of rank 3, are pids above the ranks, named by their rank",
          sorted(workers.values()) == [2, 3] and
          all(names[pid][-1]["name"].startswith("rank %d: " % rank)
              for pid, rank in workers.items()) and
          ops - set(workers) == {1, 2, 3, 4},
          (sorted(ops), workers))
    check("two nodes: the report's rank selector has ranks 0-3 as pids 1-4 "
          "(and the workers by their ranks)",
          report_ranks(job) == {1: 0, 2: 1, 3: 2, 4: 3, **workers},
          report_ranks(job))
    check("two nodes: the inputs are named by their lowest ranks",
          [(i["rank"], i["pid"]) for i in trace["amptraceEnd"]["inputs"]]
          == [(0, 1), (2, 3)], trace["amptraceEnd"]["inputs"])


def test_spawn_without_init():
    script = os.path.join(HERE, "scenario_spawn_ddp.py")
    path = os.path.join(TMP, "alone.json")
    traced = spawn_job(script, "alone", "--no-init", trace=path)
    if not os.path.isfile(path):
        check("mp.spawn without init_process_group: a trace", False,
              traced.stderr[-2000:])
        return
    trace = load(path)
    processes = ranked(trace)
    names = metadata(trace, "process_name")
    check("mp.spawn without init_process_group: two processes, rank null, "
          "each named once, without a rank",
          traced.returncode == 0 and len(processes) == 2 and
          all(p["rank"] is None for p in processes.values()) and
          all(len(names[pid]) == 1 and "rank" not in names[pid][0] and
              not names[pid][0]["name"].startswith("rank")
              for pid in processes),
          (traced.returncode, processes, names))
    # each trains alone: its steps are its own, as a rank's are
    check_per_step_rule("mp.spawn without init_process_group", path, trace,
                        min(processes), "processes")


TRAIN = """import os, torch
import torch.distributed as dist
dist.init_process_group("gloo", init_method=os.environ.get("INIT", "env://"),
                        rank=int(os.environ.get("TORCH_RANK", "-1")),
                        world_size=int(os.environ.get("WORLD_SIZE", "1")))
layer = torch.nn.Linear(8, 8)
with torch.autocast("cpu", torch.bfloat16):
    layer(torch.randn(2, 8)).float().sum().backward()
dist.destroy_process_group()
print("trained")
"""


def test_rank_disagrees():
    """RANK=1 in the environment, rank 0 given to torch: the file is the
    environment's (chosen before torch said), the name torch's."""
    train = os.path.join(TMP, "train.py")
    with open(train, "w") as f:
        f.write(TRAIN)
    path = os.path.join(TMP, "disagree.json")
    traced = run([PYTHON, train], path, options=["--no-merge"],
                 env={"RANK": "1", "TORCH_RANK": "0", "WORLD_SIZE": "1",
                      "INIT": "file://" + store("disagree")})
    rank_file = os.path.join(TMP, "disagree.rank1.json")
    if not os.path.isfile(rank_file):
        check("RANK=1, torch's rank 0: the environment's file", False,
              (traced.returncode, traced.stderr[-2000:]))
        return
    trace = load(rank_file)
    processes = ranked(trace)
    names = metadata(trace, "process_name")
    check("RANK=1, torch's rank 0: in the environment's file, named rank 0 "
          "from init_process_group on",
          traced.returncode == 0 and
          [p["rank"] for p in processes.values()] == [0] and
          [n.get("rank") for pid in processes for n in names[pid]] == [1, 0],
          (traced.returncode, processes, names))


def test_torchrun_unchanged():
    """torchrun's RANK and torch's rank agree: a file per rank, merged, as
    before, each process named once."""
    train = os.path.join(TMP, "train.py")
    with open(train, "w") as f:
        f.write(TRAIN)
    launch = [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", "2",
              "--standalone", train]
    plain = run(launch)
    if plain.returncode != 0:
        # Debian's torch 1.13 cannot run its own launcher (test_launchers.sh)
        print("# torchrun fails without amptrace too: its part skipped (%s)"
              % plain.stderr.strip().splitlines()[-1:])
        return
    path = os.path.join(TMP, "torchrun.json")
    traced = run(launch, path)
    files = [os.path.join(TMP, "torchrun.rank%d.json" % r) for r in (0, 1)]
    check("torchrun: a file per rank, merged, as before",
          traced.returncode == 0 and all(map(os.path.isfile, files)) and
          "ranks 0, 1 merged into %s (" % path in traced.stderr,
          (traced.returncode, traced.stderr[-2000:]))
    for r, rank_file in enumerate(files):
        if not os.path.isfile(rank_file):
            continue
        trace = load(rank_file)
        names = metadata(trace, "process_name")
        check("torchrun: rank %d's process named once, by its RANK" % r,
              [[n.get("rank") for n in names[pid]]
               for pid in ranked(trace)] == [[r]], names)


def test_lightning():
    if subprocess.run([PYTHON, "-c", "import lightning"],
                      capture_output=True).returncode != 0:
        print("# %s has no lightning: its DDP part skipped" % PYTHON)
        return
    script = os.path.join(HERE, "scenario_lightning_ddp.py")
    env = {"OMP_NUM_THREADS": "1"}
    plain = run([PYTHON, script, str(STEPS), os.path.join(TMP, "plain")],
                env=env)
    path = os.path.join(TMP, "lightning.json")
    traced = run([PYTHON, script, str(STEPS), os.path.join(TMP, "traced")],
                 path, env=env)
    check_ranks("Lightning DDP", path, traced, plain)


skip_unless_bridge(AMPTRACE, PYTHON, "import torch.distributed as d; "
                   "assert d.is_available()")
TMP = scratch("amptrace-late-ranks-")
TESTS = {t.__name__[5:]: t for t in (
    test_spawn, test_spawn_mesh, test_spawn_loader, test_spawn_nodes,
    test_spawn_without_init,
    test_rank_disagrees, test_torchrun_unchanged, test_lightning)}
ONLY = sys.argv[4:]
unknown = sorted(set(ONLY) - set(TESTS))
if unknown:  # a misspelt part would otherwise pass, having run nothing
    sys.exit("test_late_ranks.py: no part named %s (parts: %s)"
             % (", ".join(unknown), ", ".join(TESTS)))
for name, test in TESTS.items():
    if not ONLY or name in ONLY:
        test()
sys.exit(done())
