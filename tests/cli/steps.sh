#!/usr/bin/env bash
# Bounded recording (FORMAT.md §8): amptrace run keeps the steps --steps
# selects in full detail (default the first 20) and every other step as
# per-step aggregates, which summary, check and the findings count as
# the events would be; --max-size stops full detail past a size.  On the
# mlp sample (libamp).  Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

# The detail flag of each step event of TRACE: "0:1 1:1 2:0 ...".
detail_of_steps() {
	$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
print(" ".join("%d:%d" % (e["args"]["step"], e["args"]["detail"])
	for e in t["traceEvents"] if e.get("cat") == "amp.step" and
	e["ph"] == "X" and "marker" in e["args"]))' "$1"
}

# Summary's counts (ops by phase, name and output dtype; casts by
# direction; the cache; GradScaler steps) without the times.
counts() {
	"$amptrace" summary --json "$1" | $python -c 'import json, sys
s = json.load(sys.stdin)
print(json.dumps({
	"ops": sorted((o["phase"], o["op"], o["count"], sorted(o["outputs"].items()))
		      for o in s["ops"]),
	"casts": sorted((c["from"], c["to"], c["casts"], c["hits"], c["bytes"])
			for c in s["casts"]),
	"cache": {k: v for k, v in s["cache"].items() if k != "uncacheable_reasons"},
	"steps": s["steps"]["count"]}, sort_keys=True))'
}

# ------------------------------------------- aggregates count as events
"$amptrace" run -q -o "$tmp/full.json" --steps all -- "$mlp" --steps 60 \
	>/dev/null 2>&1
capture "$amptrace" run -o "$tmp/bounded.json" -- "$mlp" --steps 60
check "default: the run says how many steps are in full detail" \
	err_has "20 of 60 steps in full detail (steps 0-19, the default; --steps to choose)"
check "default: steps 0-19 in full detail, 20-59 aggregated" \
	test "$(detail_of_steps "$tmp/bounded.json")" = \
	"$($python -c 'print(" ".join("%d:%d" % (k, k < 20) for k in range(60)))')"
check "default: summary's counts are the full trace's" \
	test "$(counts "$tmp/bounded.json")" = "$(counts "$tmp/full.json")"
check "--steps all: every step in full detail, nothing said" \
	test "$(detail_of_steps "$tmp/full.json" | tr ' ' '\n' | grep -c ':1$')" -eq 60
capture "$amptrace" summary "$tmp/bounded.json"
check "summary: the steps line says what is aggregated" \
	out_has "steps: 60 (marked by scaler update); 20 in full detail, 40 as per-step aggregates"
# The regions table names the regions of the steps in full detail; the
# aggregated steps' regions, which their rows count but do not name, are
# said under it, not left out: together, the full trace's.
regions_entered() {
	"$amptrace" summary --json "$1" | $python -c 'import json, sys
s = json.load(sys.stdin)
print(sum(r["entered"] for r in s["regions"]) + s["regions_aggregated"])'
}
check "summary: the aggregated steps' regions are said under the table" \
	out_has "(and 40 more entered, counted by the per-step aggregates, whose rows name no region)"
check "summary --json: the regions entered are the full trace's" \
	test "$(regions_entered "$tmp/bounded.json")" = "$(regions_entered "$tmp/full.json")"
# steps marked by autocast regions (trace_prog mlp: no optimizer, no
# GradScaler): the final one ends at no region, so it has no step event
# of its own; its rows still make it an aggregated step, not one in full
# detail
"$amptrace" run -q -o "$tmp/regions.json" -- "$trace_prog" mlp 30 >/dev/null 2>&1
capture "$amptrace" summary "$tmp/regions.json"
check "region-marked: the final step, with rows and no step event, is aggregated" \
	out_has "steps: 30 (marked by autocast region); 20 in full detail, 10 as per-step aggregates"
printf 'op linear: output bf16, count == 180\ncasts f32->bf16 <= 7 per step\ncasts f32->bf16 == 420\n' \
	>"$tmp/mlp.rules"
capture "$amptrace" check "$tmp/bounded.json" "$tmp/mlp.rules"
check "check: rules count the aggregated steps" status_is 0
printf 'casts f32->bf16 <= 6 per step\n' >"$tmp/tight.rules"
capture "$amptrace" check "$tmp/bounded.json" "$tmp/tight.rules"
check "check: a per-step rule fails in the aggregated steps too" \
	out_has "60 of 60 steps fail"
# A rule asking what aggregate rows do not say (a region, autocast,
# inputs) leaves those steps out and says so: a step's row is no step
# without casts in a scope.  A cast row is no cast of every module: in
# libamp's traces, which name no module, it is in none (check.sh has a
# PyTorch trace's).
printf '%s\n' 'casts total in module lm_head == 0' \
	'casts f32->bf16 in scope forward >= 7 per step' \
	'op linear under autocast: count == 60' >"$tmp/unsaid.rules"
capture "$amptrace" check "$tmp/bounded.json" "$tmp/unsaid.rules"
check "check: rules on what aggregates do not say hold on the detailed steps" \
	status_is 0
check "... a module, in a trace naming none: no aggregated cast is in it" \
	out_has "(0 casts; no op of this trace names its module (PyTorch traces do, from format 1.4))"
check "... a region, per step: the aggregated steps not judged, said" \
	out_has "(at most 7 per step over 20 steps, marked by scaler update; 40 steps recorded as aggregates (the first step 20), not judged: their rows do not say the region)"
check "... autocast: the aggregated ops not counted, said" \
	out_has "(60 matching ops; up to 120 more ops in steps recorded as aggregates, not counted: their rows do not say whether autocast applied)"
capture "$amptrace" check "$tmp/full.json" "$tmp/unsaid.rules"
check "... the same rules on the run in full detail: the count is all of it" \
	out_has "actual:   180 matching ops"
printf 'casts f32->bf16 under autocast <= 6 per step\n' >"$tmp/unsaid-tight.rules"
capture "$amptrace" check "$tmp/bounded.json" "$tmp/unsaid-tight.rules"
check "... the detailed steps are still judged" \
	out_has "step 0 has 7; 20 of 20 steps fail"
# ... and where every step is an aggregate, such a per-step rule judged
# none: it fails, as the count of the same rule does.
"$amptrace" run -q -o "$tmp/no-detail.json" --steps 100:110 -- "$mlp" \
	--steps 10 >/dev/null
printf 'casts f32->bf16 in scope forward >= 1 per step\n' >"$tmp/none.rules"
capture "$amptrace" check "$tmp/no-detail.json" "$tmp/none.rules"
check "... every step an aggregate: a per-step rule judged none fails" \
	status_is 1
check "... and says so" out_has "actual:   no step judged; 10 steps recorded as aggregates (the first step 0), not judged: their rows do not say the region"
# ... one such step: named alone
"$amptrace" run -q -o "$tmp/one-aggregate.json" --steps 0:1 -- "$mlp" \
	--steps 3 >/dev/null
capture "$amptrace" check "$tmp/one-aggregate.json" "$tmp/none.rules"
check "... one step an aggregate: said as that step" \
	out_has "; 1 step recorded as aggregates (step 2), not judged: their rows do not say the region"

# -------------------------------------------------------- choosing steps
"$amptrace" run -q -o "$tmp/window.json" --steps 10:13 -- "$mlp" --steps 30 \
	>/dev/null 2>&1
check "--steps 10:13: those four in full detail" \
	test "$(detail_of_steps "$tmp/window.json" | tr ' ' '\n' | grep ':1$' | tr '\n' ' ')" = \
	"10:1 11:1 12:1 13:1 "
check "--steps 10:13: the trace is valid for ampview (default step 11)" \
	sh -c "'$ampview' '$tmp/window.json' -o '$tmp/window.svg' && grep -q 'step 11 of' '$tmp/window.svg'"
capture "$ampview" "$tmp/window.json" --step 3 -o "$tmp/w3.svg"
check "ampview --step 3 of aggregates: refused, saying why" \
	err_has "step 3 was recorded as per-step aggregates only"
capture "$amptrace" run -q -o "$tmp/every.json" --steps every:10,0:1 -- "$mlp" \
	--steps 30
check "--steps every:10,0:1: the run succeeds" status_is 0
check "--steps every:10,0:1: steps 0, 1, 10 and 20" \
	test "$(detail_of_steps "$tmp/every.json" | tr ' ' '\n' | grep ':1$' | tr '\n' ' ')" = \
	"0:1 1:1 10:1 20:1 "
capture "$amptrace" run -q -o "$tmp/none.json" --steps none -- "$mlp" --steps 30
check "--steps none: the run succeeds" status_is 0
check "--steps none: aggregates only" \
	eval '[ -n "$(detail_of_steps "$tmp/none.json")" ] &&
	      ! detail_of_steps "$tmp/none.json" | grep -q ":1"'
none_counts=$(counts "$tmp/none.json")
check "--steps none: the same counts (summary read both)" \
	eval '[ -n "$none_counts" ] && [ "$none_counts" = "$(counts "$tmp/every.json")" ]'
printf 'ops total >= 1\n' >"$tmp/ops.rules"
capture "$amptrace" check "$tmp/none.json" "$tmp/ops.rules"
check "--steps none: check counts the aggregated ops (ops total, no 'no ops recorded')" \
	status_is 0
printf 'casts f32->bf16 <= 7 per step\n' >"$tmp/per-step.rules"
capture "$amptrace" check "$tmp/none.json" "$tmp/per-step.rules"
check "--steps none: a trace of aggregates only is no empty trace to check" \
	eval 'status_is 0 && ! grep -q "no ops recorded" "$tmp/out"'
AMPTRACE_STEPS=5 "$amptrace" run -q -o "$tmp/env.json" -- "$mlp" --steps 10 \
	>/dev/null 2>&1
check "AMPTRACE_STEPS in the environment chooses too" \
	test "$(detail_of_steps "$tmp/env.json" | tr ' ' '\n' | grep ':1$')" = "5:1"

# --------------------------------------- diff of the aggregated steps
# A change only in steps recorded as aggregates is found (the default
# records the first 20 in full): aggregate rows edited by edit_aggregates.
"$amptrace" run -q -o "$tmp/agg_base.json" -- "$mlp" --steps 30 >/dev/null 2>&1
"$amptrace" run -q -o "$tmp/agg_same.json" -- "$mlp" --steps 30 >/dev/null 2>&1
"$amptrace" run -q -o "$tmp/agg_short.json" -- "$mlp" --steps 25 >/dev/null 2>&1
# edit_aggregates OUT PYTHON [IN]: IN (agg_base.json) with PYTHON run on
# each amp.aggregate event `e` (its list is `events`) into OUT.
edit_aggregates() {
	$python -c 'import json, sys
t = json.load(open(sys.argv[3]))
events = t["traceEvents"]
for e in [e for e in events if e.get("cat") == "amp.aggregate"]:
	exec(sys.argv[2])
json.dump(t, open(sys.argv[1], "w"))' "$1" "$2" "${3:-$tmp/agg_base.json}"
}
edit_aggregates "$tmp/agg_edited.json" '
if e["args"]["step"] == 25:
	for row in e["args"]["ops"]:
		if row[0] == "linear":
			row[4] = "f16"
	for row in e["args"]["casts"]:
		if row[0] == "linear" and row[4] == "miss":
			row[4] = "hit"'
capture "$amptrace" diff "$tmp/agg_base.json" "$tmp/agg_same.json"
check "diff of two default runs: the aggregated steps compared, no change" \
	eval 'status_is 0 && out_has "aggregated steps compared: 10 (20 to 29)"'
check "... the header's counts are of the steps in full detail, and say so" \
	out_has " casts in full detail)"
capture "$amptrace" diff "$tmp/agg_base.json" "$tmp/agg_edited.json"
check "diff: a change in an aggregated step only: exit 1" status_is 1
check "diff: the aggregated step's output dtype change" \
	out_has "output       linear (forward): bf16 -> f16  x3"
check "diff: the aggregated step's cache change" \
	out_has "cache        linear (forward): f32->bf16 cache miss -> f32->bf16 cache hit  x6"
check "diff: the step it is in, and where in each file" \
	out_has "first in the aggregated steps: step 25 ($tmp/agg_base.json:"
capture "$amptrace" diff --json "$tmp/agg_base.json" "$tmp/agg_edited.json"
check "diff --json: aggregated_steps, and each change's aggregated count and step" \
	$python -c 'import json, sys
d = json.load(open(sys.argv[1]))
got = [d["aggregated_steps"]["compared"],
       [(c["aggregated"]["count"], c["aggregated"]["first_step"])
	for c in d["changes"]]]
sys.exit(got != [10, [(3, 25), (6, 25)]] and print("# got", got) is None)' "$tmp/out"
capture "$amptrace" diff "$tmp/agg_base.json" "$tmp/agg_short.json"
check "diff of runs of 30 and 25 steps: the 5 more are not compared, no change" \
	eval 'status_is 0 && out_has "not compared, in one trace only: 5 in base, 0 in new"'

edit_aggregates "$tmp/agg_policy.json" '
if e["args"]["step"] == 22:
	for row in e["args"]["ops"]:
		if row[0] == "relu":
			row[3] = "fp32"'
capture "$amptrace" diff "$tmp/agg_base.json" "$tmp/agg_policy.json"
check "diff: an aggregated policy change, no output change" \
	eval 'out_has "policy       relu (forward): none -> fp32  x2" && out_lacks "output       relu"'
# Rows pair up by what stayed the same: base (lower_precision_fp, bf16)
# x2 and (fp32, f32) x1 against new (fp32, bf16) x1 and
# (lower_precision_fp, f16) x2 are two dtype changes, no policy change.
linear_rows() { # PYTHON list of (policy, dtype, count) for step 27
	echo '
if e["args"]["step"] == 27:
	row = next(r for r in e["args"]["ops"] if r[0] == "linear")
	e["args"]["ops"].remove(row)
	for policy, dtype, count in '"$1"':
		e["args"]["ops"].append(row[:3] + [policy, dtype] + row[5:6] + [count] + row[7:])'
}
edit_aggregates "$tmp/agg_pair_base.json" "$(linear_rows '[("lower_precision_fp", "bf16", 2), ("fp32", "f32", 1)]')"
edit_aggregates "$tmp/agg_pair_new.json" "$(linear_rows '[("fp32", "bf16", 1), ("lower_precision_fp", "f16", 2)]')"
capture "$amptrace" diff "$tmp/agg_pair_base.json" "$tmp/agg_pair_new.json"
check "diff: aggregated rows pair by the policy they keep" \
	eval 'out_has "output       linear (forward): bf16 -> f16  x2" && out_has "output       linear (forward): f32 -> bf16  x1" && out_lacks "policy "'
# Steps are compared one by one: step 23's relu rows moved to step 24
# are two changes (removed in 23, added in 24), not none.
edit_aggregates "$tmp/agg_moved.json" '
if e["args"]["step"] in (23, 24):
	relu = next(r for r in e["args"]["ops"] if r[0] == "relu")
	relu[6] = 0 if e["args"]["step"] == 23 else 2 * relu[6]'
capture "$amptrace" diff "$tmp/agg_base.json" "$tmp/agg_moved.json"
check "diff: ops moved from one aggregated step to the next: removed, then added" \
	eval 'status_is 1 && in_order "op-removed   relu (forward) x2" "first in the aggregated steps: step 23" && in_order "op-added     relu (forward) x2" "first in the aggregated steps: step 24"'
# A step written as two amp.aggregate events (past 2^20 folded events):
# the same step as one event in the other trace, no change.
edit_aggregates "$tmp/agg_split.json" '
if e["args"]["step"] == 26:
	half = dict(e, args=dict(e["args"], ops=e["args"]["ops"][:3], casts=[]))
	e["args"]["ops"] = e["args"]["ops"][3:]
	events.insert(events.index(e), half)'
capture "$amptrace" diff "$tmp/agg_base.json" "$tmp/agg_split.json"
check "diff: a step written as two events is one step, no change" \
	eval 'status_is 0 && out_has "aggregated steps compared: 10 (20 to 29)"'

# Steps count once whatever threads ran them: step 21 aggregated on a
# second thread too, in both traces.
edit_aggregates "$tmp/agg_threads.json" '
if e["args"]["step"] == 21:
	events.append(dict(e, tid=e["tid"] + 1))'
capture "$amptrace" diff "$tmp/agg_threads.json" "$tmp/agg_threads.json"
check "diff: a step two threads aggregated counts once" \
	out_has "aggregated steps compared: 10 (20 to 29)"

bad_spec() { # SPEC MESSAGE
	capture "$amptrace" run --steps "$1" -- "$mlp"
	check "--steps $1: exit 2" status_is 2
	check "--steps $1: says why" err_has "$2"
}
bad_spec 10:3 "'10:3': the range ends before it begins"
bad_spec every:0 "'every:0': every:K needs a step count K of at least 1"
bad_spec x "'x': expected N, A:B, A:, every:K, all or none"
bad_spec 1,,2 "'': expected N, A:B, A:, every:K, all or none"
capture "$amptrace" run --max-size 12Q -- "$mlp"
check "--max-size 12Q: exit 2, says why" \
	sh -c "[ $status -eq 2 ] && grep -qF \"unknown unit 'Q'\" '$tmp/err'"

# ---------------------------------------------------------------- size
capture "$amptrace" run -o "$tmp/limited.json" --steps all --max-size 2M -- \
	"$mlp" --steps 600
check "--max-size 2M: said on stderr" err_has "passed 2 MB (--max-size)"
size=$(stat -c %s "$tmp/limited.json")
check "--max-size 2M: the trace stops growing in detail ($size bytes)" \
	test "$size" -lt 6000000
capture "$amptrace" summary "$tmp/limited.json"
check "--max-size 2M: summary's note says where full detail stopped" \
	out_has "note: full detail stopped at step"
check "--max-size 2M: every step is still counted" out_has "steps: 600 ("

# A 10,000-step run with no option gives a trace under 100 MB.
capture "$amptrace" run -o "$tmp/long.json" -- "$mlp" --steps 10000
size=$(stat -c %s "$tmp/long.json")
echo "# 10000 mlp steps, no option: $size bytes"
check "10,000 steps, no option: under 100 MB ($size bytes)" \
	test "$size" -lt 100000000
capture "$amptrace" summary "$tmp/long.json"
check "10,000 steps: summary counts them all" \
	out_has "steps: 10000 (marked by scaler update); 20 in full detail, 9980 as per-step aggregates"
check "10,000 steps: linear counted in every step" \
	out_has_wrapped "forward linear 30000"

# ------------------------------------------------- evaluation windows
# A program that only evaluated (three autocast regions under
# inference_mode) has evaluation windows and no training step: its
# regions are no steps, and a per-step rule counts none of its casts.
evaluated=$fx/evaluation-only.json
capture "$amptrace" summary "$evaluated"
check "evaluation windows only: no training step, the windows counted" \
	out_has "steps: 0 (no training step); 3 evaluation windows"
printf 'casts f32->bf16 <= 1 per step\n' >"$tmp/one.rules"
capture "$amptrace" check "$evaluated" "$tmp/one.rules"
check "evaluation windows only: a per-step rule counts no window's casts" \
	eval 'status_is 0 && out_has "no training step; 3 evaluation windows, not counted"'
capture "$ampview" "$evaluated" --format dot -o "$tmp/evaluated.dot"
check "evaluation windows only: ampview draws the whole trace, its 3 ops" \
	eval 'grep -qF "the whole trace (no training step; 3 evaluation windows)" "$tmp/evaluated.dot" &&
	      grep -qF "shown: 3 ops, 9 casts" "$tmp/evaluated.dot"'
# ... with training outside its windows: one step, said to be unmarked
$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"]
op = json.loads(json.dumps(next(e for e in events if e.get("cat") == "amp.op")))
op["ts"] = max(e.get("ts", 0) for e in events) + 100
op["args"]["op_id"] = 99
op["args"]["phase"] = "backward"  # training
events.append(op)
json.dump(t, open(sys.argv[2], "w"))' "$evaluated" "$tmp/evaluated-trained.json"
capture "$amptrace" summary "$tmp/evaluated-trained.json"
check "windows and training outside them: one step, not marked" \
	out_has "steps: 1 (not marked: the training outside the evaluation windows); 3 evaluation windows"
capture "$amptrace" check "$tmp/evaluated-trained.json" "$tmp/one.rules"
check "... and a per-step rule says so, not 'marked by none'" \
	eval 'out_has "not marked: the training outside" && ! out_has "marked by none"'
# Training steps with a window in step 1 are counted as before: one cast
# a step, the window's 3 not among them.
trained=$fx/steps-evaluation.json
capture "$amptrace" summary "$trained"
check "steps and a window: the steps counted as before" \
	out_has "steps: 2 (marked by optimizer step); 1 evaluation window"
capture "$amptrace" check "$trained" "$tmp/one.rules"
check "steps and a window: the window's casts are not the step's" \
	eval 'status_is 0 && out_has "at most 1 per step over 2 steps"'
printf 'casts f32->bf16 <= 0 per step\n' >"$tmp/none.rules"
capture "$amptrace" check "$trained" "$tmp/none.rules"
check "steps and a window: a per-step rule still fails in every step" \
	out_has "2 of 2 steps fail"
# A step recorded as aggregates writes its rows when its thread moves on:
# after a training loop, often inside the evaluation window that follows
# (model.eval(), then the window's first op).  The rows are the whole
# step's, not the window's: step 0 made here an aggregate of its one
# cast, written at 45, inside step 1's window (40-50).
$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
events = [e for e in t["traceEvents"] if not 0 < e.get("ts", 0) <= 10]
for e in events:
	if e.get("cat") == "amp.step" and e["args"].get("step") == 0:
		e["args"]["detail"] = False
events.append({"name": "step 0 aggregates", "cat": "amp.aggregate", "ph": "i",
	"ts": 45, "pid": 100, "tid": 1, "s": "t", "args": {"step": 0, "begin": 1,
	"events": 4, "ops": [["linear", "", "forward", "lower_precision_fp",
	"bf16", "cpu", 1, 0, 8]], "casts": [["linear", "forward", "f32", "bf16",
	"uncacheable", 1, 8, 0, 0.5, None]], "diags": [], "regions": 1,
	"cache": {"clears": 1, "entries": 0, "bytes": 0, "max_entries": 0,
	"max_bytes": 0}}})
t["traceEvents"] = events
json.dump(t, open(sys.argv[2], "w"))' "$trained" "$tmp/aggregate-in-window.json"
printf 'casts f32->bf16 == 1 per step\n' >"$tmp/each.rules"
capture "$amptrace" check "$tmp/aggregate-in-window.json" "$tmp/each.rules"
check "an aggregate written inside the next step's window: its step's casts counted" \
	eval 'status_is 0 && out_has "over 2 steps"'
# Step 1 recorded as aggregates, its window (40-50) among them: the
# producer ends a thread's aggregates at a window's edges, so the window
# has rows of its own, their events' span (begin to end) inside it: not
# the step's training.  Rows whose span crosses an edge, or that say no
# end (older traces), are the step's.
window_rows() { # END OUT: step 1 as two aggregates, the window's ending at END
	$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
events = [e for e in t["traceEvents"] if e.get("cat") == "amp.step" or
	  not 20 < e.get("ts", 0) <= 50]
for e in events:
	if e.get("cat") == "amp.step" and e["args"].get("step") == 1:
		e["args"]["detail"] = False
def rows(ts, begin, end, casts):
	args = {"step": 1, "begin": begin, "events": 2 + casts + 1,
		"ops": [["linear", "", "forward", "lower_precision_fp", "bf16",
			 "cpu", 1, 0, 8]],
		"casts": [["linear", "forward", "f32", "bf16", "uncacheable",
			   casts, 8 * casts, 0, 0.5 * casts, None]],
		"diags": [], "regions": 1, "cache": {"clears": 1, "entries": 0,
		"bytes": 0, "max_entries": 0, "max_bytes": 0}}
	if end != "none":
		args["end"] = float(end)
	return {"name": "step 1 aggregates", "cat": "amp.aggregate", "ph": "i",
		"ts": ts, "pid": 100, "tid": 1, "s": "t", "args": args}
events += [rows(41, 21, "30", 1), rows(55, 41, sys.argv[3], 3)]
t["traceEvents"] = events
json.dump(t, open(sys.argv[2], "w"))' "$trained" "$2" "$1"
}
window_rows 50 "$tmp/window-rows.json"
capture "$amptrace" check "$tmp/window-rows.json" "$tmp/each.rules"
check "a window's own rows in a step recorded as aggregates: not its training" \
	eval 'status_is 0 && out_has "over 2 steps"'
window_rows 51 "$tmp/window-rows-across.json"
capture "$amptrace" check "$tmp/window-rows-across.json" "$tmp/each.rules"
check "... rows whose events run past the window's end: the step's" \
	eval 'status_is 1 && out_has "step 1 has 4"'
window_rows none "$tmp/window-rows-no-end.json"
capture "$amptrace" check "$tmp/window-rows-no-end.json" "$tmp/each.rules"
check "... rows that say no end (older traces): the step's" \
	eval 'status_is 1 && out_has "step 1 has 4"'
# An evaluation after the last step (a no_grad region), not in full
# detail: one aggregate after the last end, its region the window's.  No
# step of its own, and its casts are no step's training; with a backward
# row, or a region beside the window's, it trained: a final step.
eval_tail() {
	$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
ops = [["linear", "", "forward", "lower_precision_fp", "bf16", "cpu", 1, 0, 8]]
if sys.argv[3].endswith("backward"):
	ops.append(["mm", "", "backward", "none", "bf16", "cpu", 1, 0, 8])
module = sys.argv[3].startswith("module")
if sys.argv[3] == "module-regions":
	for e in t["traceEvents"]:
		if e.get("cat") == "amp.step" and "marker" in e["args"]:
			e["args"]["marker"] = "autocast region"
t["traceEvents"][-1:-1] = [
	{"name": "evaluation", "cat": "amp.step", "ph": "X", "ts": 60, "dur": 10,
	 "pid": 100, "tid": 0, "args": {"step": 2, "evaluation":
	 "model.eval()" if module else "autocast region under no_grad"}},
	{"name": "step 2 aggregates", "cat": "amp.aggregate", "ph": "i",
	 "ts": 75, "pid": 100, "tid": 1, "s": "t", "args": {"step": 2,
	 "begin": 60, "events": 6, "ops": ops, "casts": [["linear", "forward",
	 "f32", "bf16", "miss", 3, 24, 0, 1.5, None]], "diags": [],
	 "regions": 2 if sys.argv[3] == "regions" else 1,
	 "cache": {"clears": 1, "entries": 0, "bytes": 0, "max_entries": 3,
	 "max_bytes": 24}}}]
if sys.argv[3] == "thread":
	t["traceEvents"][-1:-1] = [{"name": "step 2 aggregates",
	 "cat": "amp.aggregate", "ph": "i", "ts": 76, "pid": 100, "tid": 2,
	 "s": "t", "args": {"step": 2, "begin": 61, "events": 1, "ops": [["mm",
	 "", "backward", "none", "f32", "cuda", 1, 0, 8]], "casts": [],
	 "diags": [], "regions": 0, "cache": {"clears": 0, "entries": 0,
	 "bytes": 0, "max_entries": 0, "max_bytes": 0}}}]
json.dump(t, open(sys.argv[2], "w"))' "$trained" "$tmp/eval-tail-$1.json" "$1"
}
eval_tail window
capture "$amptrace" summary "$tmp/eval-tail-window.json"
check "an aggregated evaluation after the last step: no step of its own" \
	out_has "steps: 2 (marked by optimizer step); 2 evaluation windows"
capture "$amptrace" check "$tmp/eval-tail-window.json" "$tmp/each.rules"
check "... and its casts are no step's: a per-step rule holds" \
	eval 'status_is 0 && out_has "over 2 steps"'
eval_tail backward
capture "$amptrace" summary "$tmp/eval-tail-backward.json"
check "... with a backward row: it trained, a final step" \
	out_has "steps: 3 (marked by optimizer step); 2 evaluation windows"
eval_tail regions
capture "$amptrace" summary "$tmp/eval-tail-regions.json"
check "... with a region beside the window's: it trained, a final step" \
	out_has "steps: 3 (marked by optimizer step); 2 evaluation windows"
# The usual evaluation: model.eval(), then a no_grad region in it (no
# window of its own, so its region cannot be counted against one); after
# the last optimizer step nothing trains without a backward.  A
# region-marked run's final step is its last training step, which a
# model.eval() window does not make an evaluation.
eval_tail module
capture "$amptrace" summary "$tmp/eval-tail-module.json"
check "an aggregated model.eval() evaluation after the last step: no step of its own" \
	out_has "steps: 2 (marked by optimizer step); 2 evaluation windows"
capture "$amptrace" check "$tmp/eval-tail-module.json" "$tmp/each.rules"
check "... and its casts are no step's: a per-step rule holds" \
	eval 'status_is 0 && out_has "over 2 steps"'
eval_tail module-backward
capture "$amptrace" summary "$tmp/eval-tail-module-backward.json"
check "... with a backward row: it trained, a final step" \
	out_has "steps: 3 (marked by optimizer step); 2 evaluation windows"
eval_tail module-regions
capture "$amptrace" summary "$tmp/eval-tail-module-regions.json"
check "... in a region-marked run: its final step, trained" \
	out_has "steps: 3 (marked by autocast region); 2 evaluation windows"
# The backward on a thread of its own (autograd's, on CUDA): the step
# trained, and the forward thread's rows are its training, not an
# evaluation's: decided for the step, not for each thread's aggregate.
eval_tail thread
printf 'casts f32->bf16 >= 1 per step\n' >"$tmp/some.rules"
capture "$amptrace" check "$tmp/eval-tail-thread.json" "$tmp/some.rules"
check "... with a backward on another thread: its forward's casts are the step's" \
	eval 'status_is 0 && out_has "over 3 steps"'

# A long run's step numbers can be large: the steps are looked up by
# number, not held in a table as long as the largest.
$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
	if e.get("cat") == "amp.step":
		e["args"]["step"] += 9000000000
json.dump(t, open(sys.argv[2], "w"))' "$trained" "$tmp/huge-numbers.json"
capture "$amptrace" summary "$tmp/huge-numbers.json"
check "step numbers from 9,000,000,000: summary counts the steps" \
	eval 'status_is 0 && out_has "steps: 2 (marked by optimizer step); 1 evaluation window"'
capture "$amptrace" check "$tmp/huge-numbers.json" "$tmp/one.rules"
check "step numbers from 9,000,000,000: check counts each step" \
	eval 'status_is 0 && out_has "at most 1 per step over 2 steps"'
capture "$amptrace" report "$tmp/huge-numbers.json" -o "$tmp/huge-numbers.html"
check "step numbers from 9,000,000,000: report writes its page" status_is 0
capture "$ampview" "$tmp/huge-numbers.json" -o "$tmp/huge-numbers.svg"
check "step numbers from 9,000,000,000: ampview draws step 1" \
	eval 'status_is 0 && grep -qF "step 1 of 0..1" "$tmp/huge-numbers.svg"'

# ------------------------------------------------------- a job's ranks
# A distributed job's ranks each run the step (FORMAT.md §8): a per-step
# rule holds in every step of every rank, as for one process, not for
# the ranks' sum; each rank is judged in the steps it trained in, and a
# rank's step is cut short only where its own record ended.  merge makes
# a file's process its rank (position on the command line).
"$amptrace" run -q -o "$tmp/rank-a.json" --steps all -- "$mlp" --steps 6 \
	>/dev/null 2>&1
"$amptrace" run -q -o "$tmp/rank-b.json" --steps all -- "$mlp" --steps 6 \
	--layers 4 >/dev/null 2>&1
"$amptrace" merge -o "$tmp/ranks-same.json" "$tmp/rank-a.json" \
	"$tmp/rank-a.json" 2>/dev/null
printf 'casts f32->bf16 == 7 per step\n' >"$tmp/seven.rules"
capture "$amptrace" check "$tmp/ranks-same.json" "$tmp/seven.rules"
check "two ranks of 7 casts a step: == 7 per step holds, each rank's step judged" \
	eval 'status_is 0 && out_has "at most 7 per step over 12 steps of 2 ranks"'
"$amptrace" merge -o "$tmp/ranks-apart.json" "$tmp/rank-a.json" \
	"$tmp/rank-b.json" 2>/dev/null
capture "$amptrace" check "$tmp/ranks-apart.json" "$tmp/seven.rules"
check "a rank of 9 casts a step beside one of 7: the rule fails on rank 1's steps" \
	eval 'status_is 1 && out_has "rank 1'"'"'s step 0 has 9; 6 of 12 steps of 2 ranks fail"'
# rank 1's record stops inside its step 3 (merge reads its file
# truncated): that step is cut short for rank 1 alone, rank 0's step 3
# is whole and judged
# merge_cut_rank STEP OUT: rank-a.json as rank 0 beside rank 1, its
# copy cut 30 lines past step STEP's end (inside step STEP+1)
merge_cut_rank() {
	local end
	end=$(grep -n "\"name\":\"step $1\"" "$tmp/rank-a.json" | cut -d: -f1)
	head -n $((end + 30)) "$tmp/rank-a.json" >"$tmp/rank-a-cut.json"
	"$amptrace" merge -o "$2" "$tmp/rank-a.json" "$tmp/rank-a-cut.json" \
		2>/dev/null
}
merge_cut_rank 2 "$tmp/ranks-cut.json"
capture "$amptrace" check "$tmp/ranks-cut.json" "$tmp/seven.rules"
check "rank 1's record cut inside a step: that step alone is not judged" \
	eval 'status_is 0 && out_has "over 9 steps of 2 ranks" &&
	      out_has "; rank 1'"'"'s step 3 cut short (its process or its trace ended in it)"'
# rank 1's record stops inside its last step, 5, which rank 0 ran whole:
# rank 0's step 5 is judged, its record did not end there
merge_cut_rank 4 "$tmp/ranks-cut-last.json"
capture "$amptrace" check "$tmp/ranks-cut-last.json" "$tmp/seven.rules"
check "rank 1's record cut in its last step: rank 0's whole last step is judged" \
	eval 'status_is 0 && out_has "over 11 steps of 2 ranks" &&
	      out_has "; rank 1'"'"'s step 5 cut short (its process or its trace ended in it)"'
# Processes without a rank that each train (Hogwild's workers, DDP
# workers that never call init_process_group) each run their own steps:
# judged apart as ranks are, not in their sum (each a group, ranks.h).
# The merged traces above, their processes' ranks taken away.
unranked() { # merged trace, the trace without its processes' ranks
	sed '/"name":"process_name"/{s/"name":"rank [0-9]*: /"name":"/;s/,"rank":[0-9]*//}' "$1"
}
unranked "$tmp/ranks-same.json" >"$tmp/unranked-same.json"
capture "$amptrace" check "$tmp/unranked-same.json" "$tmp/seven.rules"
check "two processes without a rank, 7 casts a step each: == 7 per step holds" \
	eval 'status_is 0 && out_has "at most 7 per step over 12 steps of 2 processes"'
unranked "$tmp/ranks-apart.json" >"$tmp/unranked-apart.json"
capture "$amptrace" check "$tmp/unranked-apart.json" "$tmp/seven.rules"
check "... one of 9 casts a step beside one of 7: the rule names its process" \
	eval 'status_is 1 && out_has "process 2'"'"'s step 0 has 9; 6 of 12 steps of 2 processes fail"'
check "... ampview: the first process's step, as its own trace" \
	test "$("$ampview" "$tmp/unranked-apart.json" -v -o "$tmp/rank.svg" 2>&1 |
		sed -n 's/^ampview: \([0-9]*\) ops selected.*/\1/p')" = \
	"$("$ampview" "$tmp/rank-a.json" -v -o "$tmp/rank.svg" 2>&1 |
		sed -n 's/^ampview: \([0-9]*\) ops selected.*/\1/p')"
"$ampview" "$tmp/unranked-apart.json" -o "$tmp/rank.svg"
check "... its title says which process of how many" \
	grep -qF "process 1, of 2 processes that train (&#45;&#45;rank all shows them all)" "$tmp/rank.svg"
# ampview draws one rank's step (the first that trains by default), not
# the ranks' ops together: the ops a rank's graph selects are its own
# trace's
selected() { # TRACE [OPTIONS]: the ops ampview -v says it selected
	"$ampview" "$@" -v -o "$tmp/rank.svg" 2>&1 | sed -n 's/^ampview: \([0-9]*\) ops selected.*/\1/p'
}
check "ampview: rank 0's step by default, the same ops as its own trace" \
	test "$(selected "$tmp/ranks-apart.json")" = "$(selected "$tmp/rank-a.json")"
"$ampview" "$tmp/ranks-apart.json" -o "$tmp/rank.svg"
check "... its title says which rank of how many" \
	grep -qF "rank 0, of 2 ranks that train (&#45;&#45;rank N shows another)" "$tmp/rank.svg"
check "ampview --rank 1: rank 1's" \
	test "$(selected "$tmp/ranks-apart.json" --rank 1)" = "$(selected "$tmp/rank-b.json")"
check "ampview --rank all: both ranks' ops" \
	test "$(selected "$tmp/ranks-apart.json" --rank all)" = \
	"$(( $(selected "$tmp/rank-a.json") + $(selected "$tmp/rank-b.json") ))"
capture "$ampview" "$tmp/ranks-apart.json" --rank 7 -o "$tmp/rank.svg"
check "ampview --rank 7 of ranks 0 and 1: exit 2, the ranks named" \
	eval 'status_is 2 && err_has "no rank 7: the trace'"'"'s ranks are 0, 1"'
capture "$ampview" "$tmp/rank-a.json" --rank 0 -o "$tmp/rank.svg"
check "ampview --rank 0 of a trace without ranks: exit 2, said" \
	eval 'status_is 2 && err_has "no rank 0: the trace'"'"'s processes have no rank"'
# a process without a rank beside the ranks (a launcher that runs ops):
# judged apart, but not counted as a rank, nor drawn before rank 0
"$amptrace" merge -o "$tmp/ranks-launcher.json" "$tmp/rank-a.json" \
	"$tmp/rank-a.json" "$tmp/rank-b.json" 2>/dev/null
$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
	if e.get("name") == "process_name" and e["pid"] == 3:
		del e["args"]["rank"]
json.dump(t, open(sys.argv[1], "w"))' "$tmp/ranks-launcher.json"
capture "$amptrace" check "$tmp/ranks-launcher.json" "$tmp/seven.rules"
check "a process without a rank beside 2 ranks: judged apart, not called a rank" \
	eval 'status_is 1 && out_has "process 3'"'"'s step 0 has 9; 6 of 18 steps of 2 ranks and the processes without a rank fail"'
check "ampview: rank 0's step by default, not the process without a rank" \
	test "$(selected "$tmp/ranks-launcher.json")" = "$(selected "$tmp/rank-a.json")"
"$ampview" "$tmp/ranks-launcher.json" -o "$tmp/rank.svg"
check "... its title counts the ranks alone" \
	grep -qF "rank 0, of 2 ranks that train (&#45;&#45;rank N shows another)" "$tmp/rank.svg"
# a rank as large as a trace may say (an int): ampview --rank shows it
$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
	if e.get("name") == "process_name" and e["pid"] == 2:
		e["args"]["rank"] = 2147483647
json.dump(t, open(sys.argv[2], "w"))' "$tmp/ranks-apart.json" "$tmp/ranks-huge.json"
check "ampview --rank 2147483647: that rank's" \
	test "$(selected "$tmp/ranks-huge.json" --rank 2147483647)" = "$(selected "$tmp/rank-b.json")"
# a negative rank is no rank: its process is judged as one without a
# rank, apart from the other (each its own group), named by its pid
$python -c 'import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
	if e.get("name") == "process_name" and e["pid"] == 3:
		e["args"]["rank"] = -3
	if e.get("name") == "process_name" and e["pid"] == 1:
		del e["args"]["rank"]
json.dump(t, open(sys.argv[2], "w"))' "$tmp/ranks-launcher.json" "$tmp/ranks-negative.json"
capture "$amptrace" check "$tmp/ranks-negative.json" "$tmp/seven.rules"
check "a process of rank -3 beside one without a rank: no rank, each named by its pid" \
	eval 'status_is 1 && out_has "process 3'"'"'s step 0 has 9; 6 of 18 steps of 1 rank and the processes without a rank fail"'
# --rank 0 of a trace of one rank: its title names the rank alone
"$amptrace" merge -o "$tmp/rank-one.json" "$tmp/rank-a.json" 2>/dev/null
"$ampview" "$tmp/rank-one.json" --rank 0 -o "$tmp/rank.svg"
check "ampview --rank 0 of one rank: 'rank 0', no 'of 1 ranks', no other to show" \
	eval 'grep -qE "· rank 0( ·|<)" "$tmp/rank.svg" && ! grep -qF "of 1 rank" "$tmp/rank.svg"'
# a job's ranks recorded by run (RANK set, a file each, merged), steps
# past the default's 20 as aggregates: run says the steps in full detail
# of each rank, not the ranks' sum; a per-step rule holds in each
# rank's steps, aggregated ones too
capture "$amptrace" run -o "$tmp/ranks-run.json" -- "$trace_prog" ranks-mlp 2 30
check "run: the steps in full detail of each of a job's ranks" \
	err_has "20 of 29 steps in each of 2 processes in full detail (steps 0-19, the default"
printf 'casts f32->bf16 <= 5 per step\ncasts f32->bf16 >= 5 per step\n' \
	>"$tmp/five.rules"
capture "$amptrace" check "$tmp/ranks-run.json" "$tmp/five.rules"
check "... each rank's 30 steps hold 5 casts each, aggregated ones too" \
	eval 'status_is 0 && out_has "at most 5 per step over 60 steps of 2 ranks"'
# one process with DataLoader-like workers and no rank: one group, the
# trace's steps, as before
capture "$amptrace" check "$tmp/rank-a.json" "$tmp/seven.rules"
check "one process: its steps, no ranks named" \
	eval 'status_is 0 && out_has "at most 7 per step over 6 steps, marked"'

echo "1..$count"
exit $fail
