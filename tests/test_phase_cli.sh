#!/usr/bin/env bash
# Issue 13 items 3, 5 and 8 from the outside, on traces of real programs:
# libamp's optimizer and GradScaler ops are phase optimizer and summary
# lists forward ops first; `check` says "did you mean" for an op or region
# a rule names that the trace lacks, and knows `in optimizer`; the flow
# events `amptrace run` writes bind where a viewer binds them
# (flow_check.py), survive every reader, and stay consistent through
# `merge`.
set -u
amptrace=$(realpath "$1")
ampview=$2
trace_prog=$3
transformer=$4
mlp=$5
flow_check=$6
fx=$7
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"
same_file() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -6 | sed 's/^/# /'; return 1; }; }
rules() { printf '%s\n' "$@" >"$tmp/r.rules"; }

"$amptrace" run -q -o "$tmp/tf.json" -- "$transformer" >/dev/null 2>&1
"$amptrace" run -q -o "$tmp/mlp.json" -- "$mlp" --steps 3 >/dev/null 2>&1

# ------------------------------------------------- phase optimizer, summary
# The op rows of summary's text, "phase op" per line.
op_rows() {
	"$amptrace" summary "$1" | awk '/^Ops by phase/ {on = 1; next}
		on && /^ *phase / {next} on && NF == 0 {exit} on {print $1, $2}'
}
# The phases in order, each run of equal phases once.
phase_runs() { awk '{print $1}' | uniq | tr '\n' ' '; }

op_rows "$tmp/tf.json" >"$tmp/out"
check "transformer: forward, backward, optimizer rows in that order" \
	test "$(phase_runs <"$tmp/out")" = "forward backward optimizer "
check "transformer: Adam's lerp_ is an optimizer op" out_has "optimizer lerp_.Scalar"
check "transformer: GradScaler's update is an optimizer op" out_has "optimizer _amp_update_scale_"
check "transformer: GradScaler's unscale is an optimizer op" out_has "optimizer _amp_foreach_non_..."
check "transformer: no optimizer op among the forward rows" \
	test "$(grep -cE '^forward (lerp_|addcdiv_|addcmul_|_amp_)' "$tmp/out")" -eq 0
check "transformer: the model's linear is forward" out_has "forward linear"
check "transformer: GradScaler's scale (loss * scale) stays forward" out_has "forward mul.Tensor"
op_rows "$tmp/mlp.json" >"$tmp/out"
check "mlp (SGD): forward, backward, optimizer rows in that order" \
	test "$(phase_runs <"$tmp/out")" = "forward backward optimizer "

capture "$amptrace" summary --json "$tmp/tf.json"
check "summary --json: exit 0" status_is 0
check "summary --json: ops in phase order, optimizer ones last" $python -c '
import json, sys
ops = json.load(open(sys.argv[1]))["ops"]
order = {"forward": 0, "backward": 1, "optimizer": 2}
ranks = [order.get(o["phase"], 3) for o in ops]
print("# phases:", [o["phase"] for o in ops][:3], "...")
sys.exit(not (ranks == sorted(ranks) and 2 in ranks))' "$tmp/out"

# most optimizer rows outnumber the forward ones, and a phase the reader
# does not know comes after all three
$python - "$tmp/tf.json" "$tmp/odd.json" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
for e in trace["traceEvents"]:
    if e.get("cat") == "amp.op" and e["name"] == "mm":
        e["args"]["phase"] = "warmup"
json.dump(trace, open(sys.argv[2], "w"))
PY
op_rows "$tmp/odd.json" >"$tmp/out"
check "an unknown phase is listed after the optimizer ops" \
	test "$(phase_runs <"$tmp/out")" = "forward backward optimizer warmup "

# --------------------------------------------------- check: did you mean
rules 'op lineer: output f16'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "op lineer: fails (exit 1)" status_is 1
check "op lineer: did you mean 'linear'" out_has "no op is named 'lineer' in this trace: did you mean 'linear'?"
rules 'op lineer: count == 0'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "op lineer: count == 0 still holds (a hint is no verdict)" status_is 0
check "... and says did you mean" out_has "did you mean 'linear'?"
rules 'op softmax.in: count == 0'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "an overload is suggested with its op" out_has "did you mean 'softmax.int'?"
rules 'op linear: output f16|bf16' 'op zzzzzzzz: count == 0' 'casts total in scope "forward" >= 1'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "names the trace has, or nothing close: exit 0" status_is 0
check "... and no hint" out_lacks "did you mean"
check "... nor a region note" out_lacks "no region is named"
rules 'casts f32->f16 in scope "forwrd" <= 0'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "a misspelt region in a casts rule: still passes" status_is 0
check "... but says so" out_has "no region is named 'forwrd' in this trace: did you mean 'forward'?"
rules 'op linear in scope "forwrd": output f16'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "a misspelt region in an op rule: fails" status_is 1
check "... with did you mean" out_has "did you mean 'forward'?"
rules 'casts f32->f16 in scope "qqqqqqqq" <= 0'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "a region name far from any: said, nothing suggested" out_has "no region is named 'qqqqqqqq' in this trace)"
rules 'casts to f16 for op lineer <= 0'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "casts for op lineer: did you mean" out_has "did you mean 'linear'?"

rules 'op lerp_: output f32'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "op lerp_ (an optimizer op) in the default forward phase: fails" status_is 1
check "... saying where it is" out_matches "no forward op matched 'lerp_'; [0-9]+ optimizer ones did \(op rules look at forward ops: add \`in optimizer\` or \`in any\`\)"
rules 'op lerp_ in optimizer: output f32' 'op lerp_ in phase optimizer: count >= 1' \
	'op linear in optimizer: count == 0' 'casts total in optimizer == 0'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "in optimizer selects the optimizer's ops (and only them)" status_is 0

# ------------------------------------------------------------------ flows
check "transformer: flows bind where a viewer binds them" \
	$python "$flow_check" "$tmp/tf.json" --expect-backward --expect-cast
check "mlp: flows bind where a viewer binds them" \
	$python "$flow_check" "$tmp/mlp.json" --expect-backward --expect-cast
check "the trace says format 1.4" grep -q '"amptrace":{"format":"1.4"' "$tmp/tf.json"
"$amptrace" run -q -o "$tmp/fwd.json" -- "$trace_prog" ops 3 >/dev/null 2>&1
check "forward only: cast flows, no backward flow" \
	$python "$flow_check" "$tmp/fwd.json" --expect-no-backward --expect-cast
"$amptrace" run -q -o "$tmp/plain.json" -- "$trace_prog" threads 2 3 >/dev/null 2>&1
check "no autocast, no backward: no flow at all" \
	$python "$flow_check" "$tmp/plain.json" --expect-no-backward --expect-no-cast
check "... and no amp.flow event" test "$(grep -c '"amp.flow"' "$tmp/plain.json")" -eq 0

# every reader takes a trace with flows
for cmd in "summary" "summary --json" "diff $tmp/tf.json"; do
	capture "$amptrace" $cmd "$tmp/tf.json"
	check "$cmd reads a trace with flows" status_is 0
done
rules 'op linear: output f16|bf16' 'ops total >= 1'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "check reads a trace with flows" status_is 0
capture "$amptrace" report "$tmp/tf.json" -o "$tmp/r.html"
check "report reads a trace with flows" status_is 0
capture "$ampview" "$tmp/tf.json" -o "$tmp/g.svg"
check "ampview reads a trace with flows" status_is 0

# ... and ignores them: the same trace without its flow events reads the
# same (summary but its event count, check, ampview's graph)
mkdir "$tmp/with" "$tmp/without"
cp "$tmp/tf.json" "$tmp/with/t.json"
$python - "$tmp/tf.json" "$tmp/without/t.json" <<'PY'
import sys
lines = [l for l in open(sys.argv[1]).read().split("\n") if '"cat":"amp.flow"' not in l]
end = lines.index("],")
lines[end - 1] = lines[end - 1].rstrip(",")
open(sys.argv[2], "w").write("\n".join(lines))
PY
for d in with without; do
	(cd "$tmp/$d" && "$amptrace" summary --json t.json | grep -v '"events":' >summary
	 "$amptrace" check t.json "$tmp/r.rules" >check)
	"$ampview" "$tmp/$d/t.json" --format dot -o "$tmp/$d/graph.dot" 2>/dev/null
done
for f in summary check graph.dot; do
	check "with or without flows: the same $f" same_file "$tmp/with/$f" "$tmp/without/$f"
done

# merge: ids renumbered per input, ends kept together
capture "$amptrace" merge "$tmp/tf.json" "$tmp/mlp.json" -o "$tmp/merged.json"
check "merge of two traces with flows: exit 0" status_is 0
check "merged flows are whole, unique and still bind" \
	$python "$flow_check" "$tmp/merged.json" --expect-backward --expect-cast
check "merged: as many flow events as both inputs" test \
	"$(grep -c '"amp.flow"' "$tmp/merged.json")" -eq \
	"$(( $(grep -c '"amp.flow"' "$tmp/tf.json") + $(grep -c '"amp.flow"' "$tmp/mlp.json") ))"

# other tools' flows (a hex id with a step, a number that collides with
# amp.flow's) keep their ends together through a merge of two copies
$python - "$fx/good.json" "$tmp/foreign.json" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
at = next(i for i, l in enumerate(lines) if '"name":"linear","cat":"amp.op"' in l)
extra = [
    '{"name":"io","cat":"other.flow","ph":"s","id":"0x1f","ts":7.1,"pid":100,"tid":1},',
    '{"name":"io","cat":"other.flow","ph":"t","id":"0x1f","ts":7.2,"pid":100,"tid":1},',
    '{"name":"io","cat":"other.flow","ph":"f","id":"0x1f","bp":"e","ts":7.3,"pid":100,"tid":1},',
    '{"name":"backward","cat":"amp.flow","ph":"s","id":31,"ts":7.1,"pid":100,"tid":1,"args":{"op_id":4}},',
    '{"name":"backward","cat":"amp.flow","ph":"f","id":31,"bp":"e","ts":9.0,"pid":100,"tid":1,"args":{"op_id":4}},',
]
open(sys.argv[2], "w").write("\n".join(lines[:at + 1] + extra + lines[at + 1:]) + "\n")
PY
for cmd in "summary" "diff $fx/good.json"; do
	capture "$amptrace" $cmd "$tmp/foreign.json"
	check "$cmd reads other tools' flow events" status_is 0
done
capture "$ampview" "$tmp/foreign.json" -o "$tmp/f.svg"
check "ampview reads other tools' flow events" status_is 0
capture "$amptrace" merge "$tmp/foreign.json" "$tmp/foreign.json" -o "$tmp/ff.json"
check "merge of two copies: exit 0" status_is 0
check "merge: each copy's flows get ids of their own, ends kept together" $python -c '
import json, sys
from collections import defaultdict
events = json.load(open(sys.argv[1]))["traceEvents"]
ends = defaultdict(list)
for e in events:
    if e.get("ph") in ("s", "t", "f"):
        ends[(e["cat"], e["id"])].append((e["pid"], e["ph"]))
shapes = sorted(tuple(v) for v in ends.values())
print("# flows:", dict(ends))
sys.exit(not (len(ends) == 4 and all(len({p for p, _ in v}) == 1 for v in ends.values())
              and sorted(len(v) for v in ends.values()) == [2, 2, 3, 3]))' "$tmp/ff.json"

exit $fail
