#!/usr/bin/env bash
# amptrace check from the outside: --help, bad traces and bad rules
# (exit 2, where and why), rules that pass (0) and fail (1) with what,
# where and the first offending op, JUnit XML, an empty trace, findings
# rules, and "did you mean" for names the trace lacks.  Arguments:
# common.sh's.
. "$(dirname "$0")/common.sh"

# ------------------------------------------------------------------ help
help_checks check
option_checks check

# ------------------------------------------------------------ bad input
for entry in "${bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" check "$fx/$file" "$fx/pass.rules"
	check "check $file: exit 2" status_is 2
	check "check $file: says why" err_has "$message"
done
make_bad_traces
for entry in "${made_bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" check "$tmp/$file" "$fx/pass.rules"
	check "check $file: exit 2" status_is 2
	check "check $file: says why" err_has "$message"
done
capture "$amptrace" check "$fx" "$fx/pass.rules"
check "check of a directory: exit 2" status_is 2
check "check of a directory: says why" err_has "not a regular file"
full_device_checks check "$fx/good.json" "$fx/pass.rules"

# ------------------------------------------------------------ bad rules
capture "$amptrace" check "$fx/good.json" "$fx/bad-keyword.rules"
check "unknown rule keyword: exit 2" status_is 2
check "unknown rule keyword: line:col and what was expected" \
	err_has "bad-keyword.rules:2:1: expected a rule starting with one of: op module ops casts cache scaler no finding, got 'opp'"
capture "$amptrace" check "$fx/good.json" "$fx/bad-dtype.rules"
check "bad dtype: exit 2" status_is 2
check "bad dtype: line:col" err_has "bad-dtype.rules:1:19: expected a dtype (f64 f32 f16 bf16 i64 i32 bool), got 'fp8'"
capture "$amptrace" check "$fx/good.json" "$fx/empty.rules"
check "no rules: exit 2" status_is 2
capture "$amptrace" check "$fx/good.json" "$fx/garbage.bin"
check "binary rules: exit 2" status_is 2
check "binary rules: says why" err_has "binary data"
capture "$amptrace" check "$fx/good.json" "$fx/bad-keyword.rules" --junit "$tmp/bad.xml"
check "bad rules + --junit: exit 2" status_is 2
check "bad rules + --junit: an <error> for CI" grep -q '<error message=".*bad-keyword.rules:2:1: expected' "$tmp/bad.xml"
check "bad rules + --junit: the testcase names trace and rules" \
	grep -q "name=\"load $fx/good.json and $fx/bad-keyword.rules\"" "$tmp/bad.xml"
capture "$amptrace" check "$fx/good.json"
check "check without rules: exit 2" status_is 2
# rule : where and what the message says
syntax=(
	'op linear in scope "fwd: output f16|bad.rules:1:20: unterminated string'
	'op linear: count << 5|bad.rules:1:19: expected a number'
	'casts f32->f16 <= 5 per epoch|bad.rules:1:25: expected '"'"'step'"'"', got '"'"'epoch'"'"
	'casts total <= 5 junk|bad.rules:1:18: expected the end of the rule'
	'op linear on tpu: output f16|bad.rules:1:14: expected a device (cpu cuda)'
	'cache hitrate >= 1|bad.rules:1:7: expected a cache metric'
	'scaler skipped-steps|bad.rules:1:21: expected a comparison'
)
for entry in "${syntax[@]}"; do
	printf '%s\n' "${entry%%|*}" >"$tmp/bad.rules"
	capture "$amptrace" check "$fx/good.json" "$tmp/bad.rules"
	check "rule '${entry%%|*}': exit 2" status_is 2
	check "rule '${entry%%|*}': says where" err_has "${entry#*|}"
done
# dtypes in every spelling of lib's alias table
for spelling in f16 fp16 half float16 torch.float16 torch.half; do
	printf 'op linear: output %s\nno casts f32->bf16\ncasts f32->%s <= 3 per step\n' \
		"$spelling" "$spelling" >"$tmp/alias.rules"
	capture "$amptrace" check "$fx/good.json" "$tmp/alias.rules"
	check "rules accept dtype $spelling" status_is 0
done
for spelling in fp32 float float32 torch.float32; do
	printf 'op softmax.int in scope "loss": output %s\n' "$spelling" >"$tmp/alias.rules"
	capture "$amptrace" check "$fx/good.json" "$tmp/alias.rules"
	check "rules accept dtype $spelling" status_is 0
done
printf 'op linear: output fp32\n' >"$tmp/alias.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/alias.rules"
check "rules: fp32 is f32, not f16" status_is 1
printf 'no casts %s->%s\n' bfloat16 fp32 >"$tmp/alias.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/alias.rules"
check "rules accept bfloat16->fp32" status_is 0
printf '\357\273\277op linear: output f16\n' >"$tmp/bom.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/bom.rules"
check "rules with a UTF-8 byte order mark: read" status_is 0
# module rules (issue 24 item 4) on good.json with module keys: a path
# glob matches the module and those inside it; each kind passes and fails
module_verdict() { # rule PASS|FAIL [what a pass counted]
	printf '%s\n' "$1" >"$tmp/module.rules"
	capture "$amptrace" check "$fx/modules.json" "$tmp/module.rules"
	check "'$1': $2" out_has "$2 $tmp/module.rules:1  $1${3:+  ($3)}"
}
module_verdict 'module h.*.attn: output f16' PASS "2 matching ops"
module_verdict 'module h.*.attn: output f32' FAIL
module_verdict 'module h.0: count == 2' PASS "2 matching ops"
module_verdict 'module h.0 in any: count == 3' PASS "3 matching ops"
module_verdict 'module h.0.mlp: count == 2' FAIL
module_verdict 'op linear in module h.1: count == 1' PASS "1 matching op"
module_verdict 'op linear in module h.1.mlp: count == 0' PASS \
	"0 matching ops; no module is named 'h.1.mlp' in this trace: did you mean 'h.0.mlp'?"
module_verdict 'casts total in module h.0 == 6' PASS "6 casts"
module_verdict 'casts total in module lm_head == 0' PASS "0 casts"
module_verdict 'casts total in module h.* == 0' FAIL
module_verdict 'casts total in module lm_head cache hit == 2' PASS "2 casts"
module_verdict 'module h.*.attn: output f32' FAIL
check "module rule failed: exit 1" status_is 1
printf 'module h.*: output f16\n' >"$tmp/module.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/module.rules"
check "module rule on a trace without modules: fails" out_has "no op matched '*' with these filters"
check "module rule on a trace without modules: exit 1" status_is 1
capture "$amptrace" check "$fx/good.json" "$fx/pass.rules" --junit /proc/no/such/dir.xml
check "--junit to an unwritable path: exit 2" status_is 2
check "--junit to an unwritable path: says so" err_has "amptrace check: cannot write /proc/no/such/dir.xml"
capture "$amptrace" check "$fx/good.json" "$fx/pass.rules" --junit
check "--junit without a file: exit 2" status_is 2
capture "$amptrace" check "$fx/good.json" "$fx/pass.rules" --junit ''
check "--junit '': exit 2, an empty name" eval \
	'status_is 2 && err_has "empty output file name"'
capture "$amptrace" check "$fx/good.json" /dev/null
check "rules /dev/null: exit 2, the rules named, not the trace" eval \
	'status_is 2 && err_has "/dev/null: not a regular file (a device): give the rules as a file"'


# ---------------------------------------------------------------- check
capture "$amptrace" check "$fx/good.json" "$fx/pass.rules"
check "passing rules: exit 0" status_is 0
check "passing rules: summary line" out_has "OK: 0 of 22 rules failed"
capture "$amptrace" check "$fx/good.json" "$fx/fail.rules" --junit "$tmp/fail.xml"
check "failing rules: exit 1" status_is 1
check "failure names rule and line" out_has "FAIL $fx/fail.rules:2  op linear: output bf16"
check "failure says expected" out_has "expected: every matching op outputs bf16"
check "failure says actual" out_has "actual:   4 of 4 matching ops do not"
check "failure names the first offending op" \
	out_has "first:    linear (op 4, forward, scope \"fwd\", autocast on cuda f16) at $fx/good.json:14; output tensor 101 f16 [4,8]"
check "per-step failure names the step" out_has "step 0 has 3; 2 of 2 steps fail"
# a trace's name is JSON: "\u001b]0;..." would set the terminal's title
sed 's/"fwd"/"f\\u001b]0;pwned\\u0007wd"/g' "$fx/good.json" >"$tmp/escape.json"
capture "$amptrace" check "$tmp/escape.json" "$fx/fail.rules"
check "first: a trace's control characters shown as '?'" \
	out_has 'scope "f?]0;pwned?wd", autocast'
check "first: no control character of the trace's" \
	sh -c "! grep -q \"$(printf '[\033\007]')\" '$tmp/out'"
check "junit: 5 failures" grep -q 'tests="5" failures="5"' "$tmp/fail.xml"
check "junit: one testcase per rule" test "$(grep -c '<testcase ' "$tmp/fail.xml")" -eq 5
check "junit: failure message" grep -q '<failure type="rule" message="expected every matching op outputs bf16' "$tmp/fail.xml"
# the suite is the trace (cpu and cuda checks of one rules file differ),
# with where, when and how long (issue 13)
check "junit: the testsuite is named after the trace" \
	grep -q "<testsuite name=\"$fx/good.json\" hostname=\"$(hostname)\" " "$tmp/fail.xml"
check "junit: an ISO 8601 timestamp and the seconds it took" \
	grep -Eq '<testsuite .* timestamp="[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}" time="[0-9]+\.[0-9]{6}">' "$tmp/fail.xml"
check "junit: testcases are classed under the trace" \
	test "$(grep -c "<testcase classname=\"$fx/good.json\" name=\"$fx/fail.rules:" "$tmp/fail.xml")" -eq 5
"$amptrace" check "$fx/changed.json" "$fx/fail.rules" --junit "$tmp/fail2.xml" >/dev/null
check "junit: another trace, another suite" \
	grep -q "<testsuite name=\"$fx/changed.json\" " "$tmp/fail2.xml"
# A trace without an op (the wrong program traced) is a failure, for run
# and for check, unless an `ops total` rule expects it (issue 13).
record "$tmp/none.json" /usr/bin/python3 -c "print(1)"
printf 'no finding stale-cache\ncasts total <= 200\nscaler skipped-steps <= 1\n' >"$tmp/vacuous.rules"
capture "$amptrace" check "$tmp/none.json" "$tmp/vacuous.rules" --junit "$tmp/none.xml"
check "check of an empty trace: exit 1" status_is 1
check "... names the reason" out_has "FAIL $tmp/none.json  no ops recorded: is /usr/bin/python3 importing torch?"
check "... in the summary line" out_has "FAILED: 0 of 3 rules failed; no ops recorded"
check "... and in the junit XML" grep -q '<failure type="empty-trace" message="no ops recorded' "$tmp/none.xml"
check "... counted as a failure" grep -q 'tests="4" failures="1"' "$tmp/none.xml"
check "... as a testcase of its own" test "$(grep -c '<testcase ' "$tmp/none.xml")" -eq 4
printf 'ops total == 0\nno findings\n' >"$tmp/expect-none.rules"
capture "$amptrace" check "$tmp/none.json" "$tmp/expect-none.rules"
check "'ops total == 0' expects an empty trace: exit 0" status_is 0
check "... and says so" out_has "PASS $tmp/expect-none.rules:1  ops total == 0  (total 0)"
printf 'ops total >= 1\n' >"$tmp/some.rules"
capture "$amptrace" check "$tmp/none.json" "$tmp/some.rules"
check "'ops total >= 1' on an empty trace: exit 1" status_is 1
capture "$amptrace" check "$fx/good.json" "$tmp/some.rules"
check "'ops total >= 1' on a healthy trace: exit 0" status_is 0
capture "$amptrace" check "$fx/good.json" "$tmp/expect-none.rules"
check "'ops total == 0' on a healthy trace: exit 1" status_is 1
capture "$amptrace" check "$fx/good.json" "$tmp/vacuous.rules"
check "the vacuous rules on a healthy trace: exit 0" status_is 0
check "... no empty-trace failure" eval '! grep -q "no ops recorded" "$tmp/out"'
printf 'ops count >= 1\n' >"$tmp/bad-ops.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/bad-ops.rules"
check "'ops count': exit 2 naming the metric" eval 'status_is 2 && err_has "expected an ops metric (total)"'

capture "$amptrace" check "$fx/good.json" "$fx/issue.rules"
check "the issue's rules: only 'op mm' fails (good.json has no mm)" status_is 1
check "the issue's rules: 7 pass" test "$(grep -c '^PASS' "$tmp/out")" -eq 7
capture "$amptrace" check "$fx/changed.json" "$fx/issue.rules"
check "changed.json: backward under autocast is caught" \
	out_has "FAIL $fx/issue.rules:9  no finding backward-under-autocast"

capture "$amptrace" check "$fx/truncated.json" "$fx/issue.rules"
check "check on a truncated trace: says so" out_has "note: "

# ------------------------------------------------------------ findings
printf 'no finding stale-cache\n' >"$tmp/stale.rules"
record "$tmp/pitfall.json" "$findings_prog" backward-inside
capture "$amptrace" check "$tmp/pitfall.json" "$tmp/stale.rules"
check "check no finding stale-cache: the pitfall fails" status_is 1
check "check: the failure names the op and tensor" \
	out_has "first:    stale-cache in mm (op"
record "$tmp/fixed.json" "$findings_prog" backward-outside
capture "$amptrace" check "$tmp/fixed.json" "$tmp/stale.rules"
check "check no finding stale-cache: the fix passes" status_is 0
# computed from the events alone: good.json has no amp.diag events
printf 'no finding scaler-skipped-step\n' >"$tmp/skip.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/skip.rules"
check "check: counts findings the file has no amp.diag for" status_is 1
printf 'no finding autocast-off-in-thread\nno finding cache-growth\nno finding redundant-cast\n' >"$tmp/kinds.rules"
capture "$amptrace" check "$tmp/fixed.json" "$tmp/kinds.rules"
check "check: every engine kind parses unquoted" status_is 0
printf 'no finding stale-cach\n' >"$tmp/typo.rules"
capture "$amptrace" check "$tmp/fixed.json" "$tmp/typo.rules"
check "check: unknown kind exits 2" status_is 2
check "check: unknown kind suggests the close one" err_has "did you mean 'stale-cache'?"

record "$tmp/mlp.json" "$mlp" --steps 4
printf 'no findings\n' >"$tmp/none.rules"
capture "$amptrace" check "$tmp/mlp.json" "$tmp/none.rules"
check "sample mlp: no findings" status_is 0
check "sample mlp: no amp.diag events" no_diag "$tmp/mlp.json" ""
record "$tmp/whole.json" "$whole_loop" --steps 6
capture "$amptrace" check "$tmp/whole.json" "$tmp/stale.rules"
check "sample whole_loop: no finding stale-cache fails" status_is 1

record "$tmp/tf.json" "$transformer"
rules() { printf '%s\n' "$@" >"$tmp/r.rules"; }
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

# A module path: the closest module, or a module around one ('enc' of
# 'enc.fc'); the steps recorded as aggregates, whose rows name no module,
# are left out of a module's rules and said to be.  The PyTorch trace
# with two of its four steps as aggregates, its ops and casts in 'enc.fc'.
python3 - "$fx/aggregate-torch-autocast.json" "$tmp/modules-agg.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
    if e.get("cat") in ("amp.op", "amp.cast"):
        e["args"]["module"] = "enc.fc"
json.dump(t, open(sys.argv[2], "w"))
PY
rules 'module enc.fcc: count == 0' 'module ecn: count == 0' \
	'casts f32->bf16 in module enc == 0' \
	'casts f32->bf16 in module enc >= 0 per step' 'module enc: count == 6'
capture "$amptrace" check "$tmp/modules-agg.json" "$tmp/r.rules"
check "module rules: exit 0" status_is 0
check "a misspelt module: did you mean" \
	out_has "no module is named 'enc.fcc' in this trace: did you mean 'enc.fc'?"
check "... or the module around one" \
	out_has "no module is named 'ecn' in this trace: did you mean 'enc'?"
check "a module's casts: the aggregated steps' left out, said" \
	out_has "(0 f32->bf16 casts; up to 6 more casts in steps recorded as aggregates, not counted: their rows do not say the module)"
check "... per step: those steps not judged, said" \
	out_has "2 steps recorded as aggregates (the first step 2), not judged: their rows do not say the module"
check "a module the trace has: no hint" \
	out_has "PASS $tmp/r.rules:5  module enc: count == 6  (6 matching ops; up to 8 more ops in steps recorded as aggregates, not counted: their rows do not say the module)"

rules 'op lerp_: output f32'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "op lerp_ (an optimizer op) in the default forward phase: fails" status_is 1
check "... saying where it is" out_matches "no forward op matched 'lerp_'; [0-9]+ optimizer ones did \(op rules look at forward ops: add \`in optimizer\` or \`in any\`\)"
rules 'op lerp_ in optimizer: output f32' 'op lerp_ in phase optimizer: count >= 1' \
	'op linear in optimizer: count == 0' 'casts total in optimizer == 0'
capture "$amptrace" check "$tmp/tf.json" "$tmp/r.rules"
check "in optimizer selects the optimizer's ops (and only them)" status_is 0
# --rank N: one rank's processes alone (rank 0 good.json, rank 1
# changed.json, which has a stale-cache finding)
"$amptrace" merge "$fx/good.json" "$fx/changed.json" -o "$tmp/gc.json" 2>/dev/null
rules 'no finding stale-cache'
capture "$amptrace" check "$tmp/gc.json" "$tmp/r.rules"
check "check of a job: rank 1's finding fails it" status_is 1
capture "$amptrace" check "$tmp/gc.json" "$tmp/r.rules" --rank 0
check "check --rank 0: rank 1's finding is not rank 0's" status_is 0
check "check --rank 0: said in the last line" \
	out_has "OK: 0 of 1 rule failed ($tmp/gc.json, rank 0 only)"
capture "$amptrace" check --rank 1 "$tmp/gc.json" "$tmp/r.rules"
check "check --rank 1: its finding fails it" status_is 1
whole=$("$amptrace" summary --json "$fx/good.json" | python3 -c '
import json, sys; print(sum(o["count"] for o in json.load(sys.stdin)["ops"]))')
rules "ops total == $whole"
capture "$amptrace" check "$tmp/gc.json" "$tmp/r.rules" --rank 0
check "check --rank 0: ops total is the rank's alone ($whole)" status_is 0
capture "$amptrace" check "$tmp/gc.json" "$tmp/r.rules"
check "check without --rank: ops total is the job's" status_is 1
capture "$amptrace" check "$tmp/gc.json" "$tmp/r.rules" --rank 2 --junit "$tmp/rank.xml"
check "check --rank 2 of ranks 0, 1: exit 2" status_is 2
check "check --rank 2 of ranks 0, 1: which ranks there are" \
	err_has "gc.json: no rank 2: the trace's ranks are 0, 1"
check "check --rank 2: the JUnit file says it too" \
	grep -q "no rank 2" "$tmp/rank.xml"
capture "$amptrace" check "$tmp/gc.json" "$tmp/r.rules" --rank one
check "check --rank one: exit 2, said" eval \
	'status_is 2 && err_has "--rank must be a number"'

# A message cut inside a character (a key path's "%.40s") or quoting a
# path that is not UTF-8 still makes UTF-8 text: JUnit's XML must parse.
python3 - "$tmp/cut.json" <<'PY'
import sys
key = "K" * 39 + "\u00e9"
with open(sys.argv[1], "w") as f:
    f.write('{"traceEvents":[\n{"ph":"X","name":"linear","ts":0,"dur":1,'
            '"pid":1,"tid":1,"args":{"%s":{"k":1,"k":2}}}\n]}' % key)
PY
cp "$tmp/cut.json" "$tmp/"$'cut\xff.json'
for trace in "$tmp/cut.json" "$tmp/"$'cut\xff.json'; do
	capture "$amptrace" check "$trace" "$fx/pass.rules" --junit "$tmp/cut.xml"
	check "a cut message in --junit: exit 2, the key named" eval \
		'status_is 2 && err_has "is given twice in an event'"'"'s args.KKK"'
	check "a cut message in --junit: the XML parses" python3 -c '
import sys, xml.dom.minidom
xml.dom.minidom.parse(sys.argv[1])' "$tmp/cut.xml"
	check "a cut message on stderr: UTF-8" python3 -c '
import sys
open(sys.argv[1], "rb").read().decode("utf-8")' "$tmp/err"
done

echo "1..$count"
exit $fail
