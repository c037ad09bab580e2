#!/usr/bin/env python3
"""Checks the flow events of a trace (FORMAT.md §3.9) as a viewer would
read them, independently of amptrace's C code.

usage: flow_check.py TRACE.json [--expect-backward|--expect-no-backward]
                                [--expect-cast|--expect-no-cast]

Every amp.flow id has one `s` and one `f` (same name, pid), the `f` later
and bound to its enclosing slice ("bp":"e"); each end's time lies strictly
inside the slice it names and inside none of that slice's children, which
is the slice Perfetto binds it to; a `backward` flow goes from an op to a
backward op whose forward_op_id is that op, a `cast` flow from a cast to
an op that read its result; and every such pair of the trace has its
flow (ops nested in a backward op of the same node excepted).  Prints
"flows: N backward, M cast" and exits 1 on the first problem."""
import bisect
import json
import sys
from collections import defaultdict


def ns(us):
    return round(us * 1000)


def fail(message):
    print("flow_check: " + message)
    sys.exit(1)


def main():
    path = sys.argv[1]
    expect = set(sys.argv[2:])
    with open(path, encoding="utf-8") as f:
        trace = json.load(f)
    events = trace["traceEvents"]
    slices = defaultdict(list)  # (pid, tid) -> [(begin, end, event)]
    ops, casts = {}, {}
    for e in events:
        if e.get("ph") != "X":
            continue
        begin = ns(e["ts"])
        slices[(e["pid"], e["tid"])].append((begin, begin + ns(e.get("dur", 0)), e))
        if e.get("cat") == "amp.op":
            ops[(e["pid"], e["args"]["op_id"])] = e
        elif e.get("cat") == "amp.cast" and e["args"]["cache"] != "hit":
            casts[(e["pid"], e["args"]["result"])] = e

    begins = {}
    for key, items in slices.items():
        items.sort(key=lambda x: (x[0], -x[1]))
        begins[key] = [x[0] for x in items]

    def innermost(pid, tid, at):
        """The slice a viewer binds a flow event at `at` to: the deepest
        one open then (slices nest, so it is the latest begun that has
        not ended; the bounds of a child count as open)."""
        items = slices[(pid, tid)]
        k = bisect.bisect_right(begins.get((pid, tid), []), at)
        while k > 0:
            k -= 1
            begin, end, e = items[k]
            if end >= at:
                return e if begin < at < end else None
        return None

    ends = defaultdict(dict)
    for e in events:
        if e.get("cat") != "amp.flow":
            continue
        if e["ph"] not in ("s", "f") or e["ph"] in ends[e["id"]]:
            fail("flow id %s: unexpected or repeated ph %s" % (e["id"], e["ph"]))
        ends[e["id"]][e["ph"]] = e
    seen = {"backward": set(), "cast": set()}
    for fid, pair in ends.items():
        if set(pair) != {"s", "f"}:
            fail("flow id %s has only %s" % (fid, list(pair)))
        s, f = pair["s"], pair["f"]
        if s["name"] != f["name"] or s["pid"] != f["pid"]:
            fail("flow id %s: its ends differ in name or pid" % fid)
        if f.get("bp") != "e" or not ns(f["ts"]) > ns(s["ts"]):
            fail("flow id %s: the f end must be later, with bp e" % fid)
        source = innermost(s["pid"], s["tid"], ns(s["ts"]))
        target = innermost(f["pid"], f["tid"], ns(f["ts"]))
        if target is None or target.get("cat") != "amp.op" or \
                target["args"]["op_id"] != f["args"]["op_id"]:
            fail("flow id %s: f binds to %s, not op %s" %
                 (fid, target and target["name"], f["args"]["op_id"]))
        if s["name"] == "backward":
            if source is None or source.get("cat") != "amp.op" or \
                    source["args"]["op_id"] != s["args"]["op_id"]:
                fail("flow id %s: s binds to %s, not op %s" %
                     (fid, source and source["name"], s["args"]["op_id"]))
            if target["args"]["phase"] != "backward" or \
                    target["args"].get("forward_op_id") != s["args"]["op_id"]:
                fail("flow id %s: op %s is not a backward op of op %s" %
                     (fid, f["args"]["op_id"], s["args"]["op_id"]))
            seen["backward"].add((f["pid"], f["args"]["op_id"]))
        elif s["name"] == "cast":
            tensor = s["args"]["tensor"]
            if source is None or source.get("cat") != "amp.cast" or \
                    source["args"]["result"] != tensor:
                fail("flow id %s: s binds to %s, not the cast making %s" %
                     (fid, source and source["name"], tensor))
            if tensor not in [t["tensor"] for t in target["args"]["inputs"]]:
                fail("flow id %s: op %s does not read tensor %s" %
                     (fid, f["args"]["op_id"], tensor))
            seen["cast"].add((f["pid"], f["args"]["op_id"], tensor))
        else:
            fail("flow id %s: unknown name %s" % (fid, s["name"]))

    # every pair has its flow
    for (pid, op_id), op in ops.items():
        a = op["args"]
        if a.get("incomplete"):
            continue
        forward = a.get("forward_op_id")
        parent = ops.get((pid, a.get("parent_op_id")))
        nested = parent is not None and \
            parent["args"].get("forward_op_id") == forward and \
            parent["args"]["phase"] == "backward"
        if a["phase"] == "backward" and forward and not nested and \
                (pid, forward) in ops and (pid, op_id) not in seen["backward"]:
            fail("backward op %s (of op %s) has no flow" % (op_id, forward))
        for t in a["inputs"]:
            if (pid, t["tensor"]) in casts and \
                    (pid, op_id, t["tensor"]) not in seen["cast"]:
                fail("op %s reads cast result %s without a flow" %
                     (op_id, t["tensor"]))
    counts = {k: len(v) for k, v in seen.items()}
    print("flows: %d backward, %d cast" % (counts["backward"], counts["cast"]))
    for kind in ("backward", "cast"):
        if "--expect-" + kind in expect and not counts[kind]:
            fail("expected %s flows, found none" % kind)
        if "--expect-no-" + kind in expect and counts[kind]:
            fail("expected no %s flow, found %d" % (kind, counts[kind]))


if __name__ == "__main__":
    main()
