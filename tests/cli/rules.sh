#!/usr/bin/env bash
# The rules language of amptrace check (tracer/RULES.md, rules.c) from the
# outside: every way a rule can be wrong says file:line:column, what was
# expected and what it got, and exits 2 before any rule is judged; the
# line and column are right in a file with comments, blank lines, tabs
# and CRLF line ends; what the grammar accepts parses (exit 0 or 1, never
# 2).  check.sh has the verdicts.  Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

# `RULES FILE` checked against the good fixture: exit 2 and MESSAGE on
# stderr, and no verdict on stdout.
refused() { # rules message
	printf '%s\n' "$1" >"$tmp/bad.rules"
	capture "$amptrace" check "$fx/good.json" "$tmp/bad.rules"
	check "'$1': exit 2" status_is 2
	check "'$1': $2" err_has "amptrace check: $tmp/bad.rules:$2"
	check "'$1': nothing judged" test ! -s "$tmp/out"
}
accepted() { # rules
	printf '%s\n' "$1" >"$tmp/good.rules"
	capture "$amptrace" check "$fx/good.json" "$tmp/good.rules"
	check "'$1': parses (exit 0 or 1)" test "$status" -lt 2
}

# ------------------------------------------------ one error per production
dtypes="a dtype (f64 f32 f16 bf16 i64 i32 bool)"
cmps="a comparison (<= < >= > == !=)"
refused 'opp linear: output f16' "1:1: expected a rule starting with one of: op module ops casts cache scaler no finding, got 'opp'"
refused 'op' "1:3: expected an op name (e.g. linear, softmax.int, mm*), got the end of the line"
refused 'op linear' "1:10: expected ':' (or a filter: in scope NAME, in module PATH, in phase PHASE, on DEVICE, under autocast, outside autocast), got the end of the line"
refused 'op linear:' "1:11: expected a check (output DTYPE, inputs DTYPE, policy POLICY, count CMP N), got the end of the line"
refused 'op linear: output' "1:18: expected $dtypes, got the end of the line"
refused 'op linear: output f16|' "1:23: expected $dtypes, got the end of the line"
refused 'op linear: output f16,' "1:23: expected a check"
refused 'op linear: inputs f16 | fp8' "1:25: expected $dtypes, got 'fp8'"
refused 'op linear: policy lower' "1:19: expected a policy (none lower_precision_fp fp32 fp32_set_opt_dtype fp32_append_dtype promote banned), got 'lower'"
refused 'op linear: count' "1:17: expected $cmps, got the end of the line"
refused 'op linear: count == x' "1:21: expected a number, got 'x'"
refused 'op linear: count == 1e' "1:21: malformed number"
refused 'op linear: output f16, output f32, output f16, output f16, output f16, output f16, output f16, output f16, output f16' \
	"1:108: expected at most 8 checks, got 'output'"
refused 'op linear in' "1:13: expected 'scope', 'module', 'phase', 'forward', 'backward', 'optimizer', 'other' or 'any' after 'in', got the end of the line"
refused 'op linear in module' "1:20: expected a module path (e.g. h.*.attn), got the end of the line"
refused 'op linear in module :' "1:21: expected a module path (e.g. h.*.attn), got ':'"
refused 'module' "1:7: expected a module path (e.g. h.*.attn, lm_head), got the end of the line"
refused 'module h.*.attn' "1:16: expected ':' (or a filter: in scope NAME, in module PATH, in phase PHASE, on DEVICE, under autocast, outside autocast), got the end of the line"
refused 'module h.*.attn: casts == 0' "1:18: expected a check (output DTYPE, inputs DTYPE, policy POLICY, count CMP N), got 'casts'"
refused 'module lm_head on tpu: output f16' "1:19: expected a device (cpu cuda), got 'tpu'"
refused 'casts total in module == 0' "1:23: expected a module path (e.g. h.*.attn), got '=='"
refused 'op linear in scope' "1:19: expected a scope name, got the end of the line"
refused 'op linear in phase sideways: output f16' "1:20: expected a phase (forward backward optimizer other any), got 'sideways'"
refused 'op linear under: output f16' "1:16: expected 'autocast', got ':'"
refused 'op @: output f16' "1:4: unexpected character '@'"
refused 'casts' "1:6: expected a cast direction (DTYPE->DTYPE, total, to DTYPE, from DTYPE), got the end of the line"
refused 'casts f32' "1:10: expected '->' (as in f32->f16), got the end of the line"
refused 'casts f32->' "1:12: expected $dtypes, got the end of the line"
refused 'casts f32->f16' "1:15: expected $cmps, got the end of the line"
refused 'casts f32->f16 <=' "1:18: expected a number, got the end of the line"
refused 'casts to' "1:9: expected $dtypes, got the end of the line"
refused 'casts from f32 <= 3 per' "1:24: expected 'step', got the end of the line"
refused 'casts total for op: <= 1' "1:19: expected an op name, got ':'"
refused 'casts total cache maybe <= 1' "1:19: expected a cache result (hit miss uncacheable disabled any), got 'maybe'"
refused 'casts total <= 1 per step extra' "1:27: expected the end of the rule (one rule per line), got 'extra'"
refused 'no casts f32->f16 per' "1:22: expected 'step', got the end of the line"
refused 'cache' "1:6: expected a cache metric (hit-rate hits misses uncacheable disabled clears), got the end of the line"
refused 'cache hit-rate >=' "1:18: expected a number, got the end of the line"
refused 'scaler' "1:7: expected a scaler metric (skipped-steps steps scale-min scale-max scale-final), got the end of the line"
refused 'scaler steps ==' "1:16: expected a number, got the end of the line"
refused 'ops count == 1' "1:5: expected an ops metric (total), got 'count'"
refused 'ops total' "1:10: expected $cmps, got the end of the line"
refused 'no' "1:3: expected 'finding', 'findings' or 'casts' after 'no', got the end of the line"
refused 'no findingz' "1:4: expected 'finding', 'findings' or 'casts' after 'no', got 'findingz'"
refused 'no finding' "1:11: expected a finding kind ("
refused 'finding stale-cache ==' "1:23: expected a number, got the end of the line"
refused 'op "linear: output f16' "1:4: unterminated string"

# A misspelt finding kind is an error with the close matches (a rule
# that can never fail would pass in silence); every kind of the table is
# listed; a quoted kind is anybody's.
refused 'no finding stale-cach' "1:12: expected a finding kind"
check "a misspelt kind: did you mean" err_has "got 'stale-cach'; did you mean 'stale-cache'?"
cp "$tmp/err" "$tmp/kinds.err"
for kind in process-died dtype-mismatch banned-op fp16-overflow scaler-collapse \
	op-error recording-stopped producer-contract stale-cache cache-other-dtype \
	backward-under-autocast \
	autocast-off-in-thread policy-divergence cache-growth scaler-skipped-step \
	cast-underflow redundant-cast cache-disabled; do
	check "the kinds listed name $kind" grep -qE "[ (]$kind[ ;]" "$tmp/kinds.err"
	accepted "no finding $kind"
done
accepted 'no finding "stale-cach"'
# A note (fsdp-mixed-precision: FSDP's policy) is never a finding, so a
# rule on it would never fail, or always: refused, quoted or not, and
# not listed among the kinds.
check "the kinds listed leave the note out" \
	test -z "$(grep -o fsdp-mixed-precision "$tmp/kinds.err")"
refused 'no finding fsdp-mixed-precision' "1:12: expected a finding kind (that one is a note the PyTorch bridge writes, never a finding), got 'fsdp-mixed-precision'"
refused 'finding "fsdp-mixed-precision" >= 1' "1:9: expected a finding kind (that one is a note"
capture "$amptrace" help rules
check "help rules: the note is no finding kind" out_lacks fsdp-mixed-precision

# A word one or two typos from one that may stand there is named: each
# production's word, a dtype, a comparison written backwards.  Only
# then: 'gpux' is two from 'cpu', one too many for a short word, and
# where one word is expected the message names it already.
typo() { # rules column word
	refused "$1" "1:$2: expected"
	check "'$1': did you mean '$3'" err_has "; did you mean '$3'?"
}
typo 'csts total <= 5' 1 casts
typo 'op linear: outptu bf16' 12 output
typo 'op linear: output bf61' 19 bf16
typo 'op linear: policy lower_precison_fp' 19 lower_precision_fp
typo 'op linear in scop "x": output bf16' 14 scope
typo 'op linear on cdua: output bf16' 14 cuda
typo 'casts totl <= 3' 7 total
typo 'casts f32->bf61 <= 5' 12 bf16
typo 'casts total in phase backwrd <= 5' 22 backward
typo 'casts total cache hitt <= 3' 19 hit
typo 'casts total origin autocats <= 3' 20 autocast
typo 'cache hit-rat >= 0.5' 7 hit-rate
typo 'scaler skiped-steps <= 1' 8 skipped-steps
typo 'ops totl == 3' 5 total
typo 'ops total => 3' 11 '>='
typo 'no fidnings' 4 findings
refused 'op linear on gpux: output f16' "1:14: expected a device"
check "'gpux': no suggestion" err_lacks "did you mean"
refused 'casts total for ip linear <= 2' "1:17: expected 'op', got 'ip'"
check "one word expected: no suggestion" err_lacks "did you mean"

# ----------------------------------------- where, in a file of several lines
printf '# a comment\n\n  op linear: output f16   # trailing comment\r\n\tcasts f32->f17 <= 1\nop softmax: output f32\n' >"$tmp/lines.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/lines.rules"
check "an error on line 4, after a comment, a blank line and a CRLF line: exit 2" status_is 2
check "... its line and column (a tab is one column)" \
	err_has "lines.rules:4:13: expected $dtypes, got 'f17'"
printf 'op linear: output f16\nop x\0y: output f16\n' >"$tmp/nul.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/nul.rules"
check "a NUL byte: exit 2" status_is 2
check "... says so" err_has "nul.rules: binary data (a NUL byte) in a rules file"
printf 'op linear: output f16' >"$tmp/no-newline.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/no-newline.rules"
check "no newline at the end: read" status_is 0

# ------------------------------------------------------ what the grammar takes
accepted 'op linear in forward under autocast on cuda outside autocast: output f16'
accepted 'op soft*.int in any under autocast: output f32|f16, count >= 1, policy fp32|none'
accepted 'op aten::linear: count == 4'
accepted 'op "a\"b": count == 0'
accepted 'casts total in scope "f*" on cuda for op lin* cache any < 100 per step'
accepted 'module h.*.attn in backward on cuda: output f16|f32, count >= 1'
accepted 'module "h.0.attn.c_attn": policy lower_precision_fp'
accepted 'op linear in module lm_head under autocast: output f16'
accepted 'casts f32->f16 in module h.* cache any <= 10 per step'
accepted 'casts to f16 in backward cache hit != 3'
accepted 'finding "x y" != 2'
accepted 'no findings'
accepted 'ops total > 0'
for cmp in '<=' '<' '>=' '>' '==' '=' '!='; do
	accepted "casts total $cmp 1e3"
done

echo "1..$count"
exit $fail
