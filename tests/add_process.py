#!/usr/bin/env python3
"""Writes TRACE with one more process: a process_name and one op of
its, a randn with no autocast (for the tests of readers of jobs of
several processes: report_cli's, report_browser's, cli/diff.sh's).

    add_process.py TRACE.json OUT.json [--pid N] [--rank R] [--ts T]
                   [--phase P] [--first]

  --pid N    its pid (default 9)
  --rank R   its rank, named so ("rank R: python (pid N)"); default none
  --ts T     its op's time, µs (default 0)
  --phase P  its op's phase (default forward; backward: it trains, as an
             mp.spawn parent that ran the model once before spawning)
  --first    listed before the trace's processes (a Hogwild job's
             parent, mp.spawn's, a launcher), not after them
"""
import argparse
import json

parser = argparse.ArgumentParser()
parser.add_argument("trace")
parser.add_argument("out")
parser.add_argument("--pid", type=int, default=9)
parser.add_argument("--rank", type=int)
parser.add_argument("--ts", type=float, default=0)
parser.add_argument("--phase", default="forward")
parser.add_argument("--first", action="store_true")
args = parser.parse_args()

name = {"name": "python (pid %d)" % args.pid}
if args.rank is not None:
    name = {"name": "rank %d: python (pid %d)" % (args.rank, args.pid),
            "rank": args.rank}
events = [
    {"name": "process_name", "ph": "M", "pid": args.pid, "tid": 0,
     "args": name},
    {"name": "randn", "cat": "amp.op", "ph": "X", "ts": args.ts, "dur": 1,
     "pid": args.pid, "tid": 1, "args": {
         "op_id": 1, "op": "randn", "overload": "", "phase": args.phase,
         "policy": "none", "device": "cpu", "emulated": False,
         "autocast": {"enabled": False, "device": "cpu", "dtype": "bf16",
                      "cache_enabled": True, "depth": 0, "scope": None},
         "inputs": [], "outputs": [{"tensor": 1, "dtype": "f32",
                                    "shape": [2]}],
         "Input type": [], "Input Dims": []}}]
with open(args.trace) as f:
    trace = json.load(f)
if args.first:
    trace["traceEvents"][:0] = events
else:
    trace["traceEvents"] += events
with open(args.out, "w") as f:
    json.dump(trace, f)
