#!/usr/bin/env bash
# The readers on a trace of torch.compile'd graphs (FORMAT.md §3.13),
# written by hand: compiled.json (a compile holding its graph's casts,
# three calls, a compile-divergence note) and compiled-eager.json (the
# same program's eager casts).  Hermetic: no torch needed; the torch 2.x
# suite 'compile' records the real ones.  Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

compiled=$fx/compiled.json
eager=$fx/compiled-eager.json

# --------------------------------------------------------------- summary
capture "$amptrace" summary "$compiled"
check "summary: exit 0" status_is 0
check "summary: the graph, its calls and the casts each call runs" \
	out_has "      1  M.forward                  2/1       4/1        4       1        0"
sed 's/M\.forward/模型.前向传播很长很长的名字/g' "$compiled" >"$tmp/wide.json"
capture "$amptrace" summary "$tmp/wide.json"
check "summary: a long graph name is cut to its 20 columns, between characters" \
	out_has "      1  模型.前向传播很长...       2/1       4/1        4"
check "summary: the graph's casts are no run's casts by direction" \
	out_has "  (no autocast casts)"
check "summary: nor the cache's" \
	out_has "hits 0, misses 0, uncacheable 0, disabled 0"
check "summary: the bridge's compile-divergence is a warning finding" \
	out_has "warning compile-divergence: the backward of compiled graph 1"
capture "$amptrace" summary --json "$compiled"
check "summary --json: compiled_graphs" out_has '"backward_casts":	1'
capture "$amptrace" summary --json "$eager"
check "summary --json of an eager trace: no compiled graph" \
	out_has '"compiled_graphs":	[]'

# Calls in steps recorded as aggregates (run's default past step 19):
# their rows name the region, not the graph; they count for the region's
# one graph, and a region of two graphs says it cannot tell them apart.
aggregated() { # TRACE OUT: TRACE with a step of two forward calls aggregated
	$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
row = ["compiled:M.forward", "", "forward", "none", "bf16", "cpu", 2, 0, 5.0]
t["traceEvents"].append({"name": "step 1 aggregates", "cat": "amp.aggregate",
	"ph": "i", "s": "t", "ts": 90.0, "pid": 7, "tid": 1, "args": {
	"step": 1, "begin": 80.0, "events": 4, "ops": [row], "casts": [],
	"diags": [], "regions": 1, "cache": {"clears": 0, "entries": 0,
	"bytes": 0, "max_entries": 0, "max_bytes": 0}}})
json.dump(t, open(sys.argv[2], "w"))' "$1" "$2"
}
aggregated "$compiled" "$tmp/aggregated.json"
capture "$amptrace" summary "$tmp/aggregated.json"
check "summary: calls in an aggregated step count for the region's graph" \
	out_has "      1  M.forward                  4/1       4/1"
$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
second = [dict(e, args=dict(e["args"], graph=2)) for e in t["traceEvents"]
	  if e.get("args", {}).get("graph") == 1 and e["ph"] == "X"
	  and e["args"].get("op", "").startswith("compile:")]
t["traceEvents"] += second
json.dump(t, open(sys.argv[2], "w"))' "$compiled" "$tmp/recompiled.json"
aggregated "$tmp/recompiled.json" "$tmp/recompiled-aggregated.json"
capture "$amptrace" summary "$tmp/recompiled-aggregated.json"
check "summary: a region of two graphs: its aggregated calls said apart" \
	out_has "and 2 calls in steps recorded as aggregates, of regions compiled to several graphs"
capture "$amptrace" summary --json "$tmp/recompiled-aggregated.json"
check "summary --json: compiled_calls_unattributed" \
	out_has '"compiled_calls_unattributed":	2'

# ----------------------------------------------------------------- check
printf 'casts f32->bf16 <= 0 per step\nfinding compile-divergence == 1\n' \
	>"$tmp/compiled.rules"
capture "$amptrace" check "$compiled" "$tmp/compiled.rules"
check "check: a graph's casts are not counted per step; the finding is" \
	status_is 0

# ------------------------------------------------------------------ diff
capture "$amptrace" diff "$eager" "$compiled"
check "diff eager compiled: exit 1" status_is 1
check "diff eager compiled: casts compared, not ops" \
	out_has "casts compared by module, source line and op"
check "diff eager compiled: the same place casting otherwise" \
	out_has "cast-changed  matmul (forward) at m.py:7: f32->bf16 -> f32->f16"
check "diff eager compiled: a cast only the compiled graph makes" \
	out_has "cast-added    mm (backward) at m.py:7: f32->bf16, only in new"
check "diff eager compiled: linear's casts match (module and line only on one side)" \
	out_lacks "linear"
check "diff eager compiled: the program's own conversion is no autocast cast" \
	out_lacks "float"
capture "$amptrace" diff --json "$compiled" "$eager"
check "diff --json compiled eager: the added cast is removed the other way" \
	out_has '"kind":	"cast-removed"'
capture "$amptrace" diff "$compiled" "$compiled"
check "diff of a compiled trace with itself: exit 0" status_is 0
check "diff of a compiled trace with itself: says so" \
	out_has "no cast behaviour change"

echo "1..$count"
exit $fail
