#!/usr/bin/env bash
# The flow events amptrace run writes (FORMAT.md §3.10): they bind where
# a viewer binds them (../flow_check.py), every reader takes them and
# reads the same without them, and merge keeps them whole, other tools'
# flows too.  Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

record "$tmp/tf.json" "$transformer"
record "$tmp/mlp.json" "$mlp" --steps 3
rules() { printf '%s\n' "$@" >"$tmp/r.rules"; }
same_file() { cmp -s "$1" "$2" || { diff "$1" "$2" | head -6 | sed 's/^/# /'; return 1; }; }

# ------------------------------------------------------------------ flows
check "transformer: flows bind where a viewer binds them" \
	$python "$flow_check" "$tmp/tf.json" --expect-backward --expect-cast
check "mlp: flows bind where a viewer binds them" \
	$python "$flow_check" "$tmp/mlp.json" --expect-backward --expect-cast
check "the trace says format 1.4" grep -q '"amptrace":{"format":"1.4"' "$tmp/tf.json"
record "$tmp/fwd.json" "$trace_prog" ops 3
check "forward only: cast flows, no backward flow" \
	$python "$flow_check" "$tmp/fwd.json" --expect-no-backward --expect-cast
record "$tmp/plain.json" "$trace_prog" threads 2 3
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
# (each must succeed and say something: two failures' empty outputs are
# the same too)
for d in with without; do
	(cd "$tmp/$d" && "$amptrace" summary --json t.json >summary.json &&
	 grep -v '"events":' summary.json >summary &&
	 "$amptrace" check t.json "$tmp/r.rules" >check)
	check "$d flows: summary and check exit 0" test $? -eq 0
	"$ampview" "$tmp/$d/t.json" --format dot -o "$tmp/$d/graph.dot" 2>/dev/null
	check "$d flows: ampview exits 0" test $? -eq 0
done
for f in summary check graph.dot; do
	check "with flows: $f is not empty" test -s "$tmp/with/$f"
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

echo "1..$count"
exit $fail
