#!/usr/bin/env python3
"""Writes TRACE with a process that trains not listed first (a Hogwild
job's parent, mp.spawn's, a launcher: it made a tensor with no autocast,
pid 9), for the report tests: the page opens on the first that trains.
With --trains the parent trains too (mp.spawn's parent that ran the
model once before spawning: a backward op): the page opens on rank 0,
as ampview's graph does.

    report_parent.py TRACE.json OUT.json [--trains]
"""
import json
import sys

trace = json.load(open(sys.argv[1]))
trace["traceEvents"][:0] = [
    {"name": "process_name", "ph": "M", "pid": 9, "tid": 0,
     "args": {"name": "python (pid 9)"}},
    {"name": "randn", "cat": "amp.op", "ph": "X", "ts": 0, "dur": 1,
     "pid": 9, "tid": 1, "args": {
         "op_id": 1, "op": "randn", "overload": "",
         "phase": "backward" if "--trains" in sys.argv else "forward",
         "policy": "none", "device": "cpu", "emulated": False,
         "autocast": {"enabled": False, "device": "cpu", "dtype": "bf16",
                      "cache_enabled": True, "depth": 0, "scope": None},
         "inputs": [], "outputs": [{"tensor": 1, "dtype": "f32",
                                    "shape": [2]}],
         "Input type": [], "Input Dims": []}}]
json.dump(trace, open(sys.argv[2], "w"))
