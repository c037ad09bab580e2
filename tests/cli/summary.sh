#!/usr/bin/env bash
# amptrace summary from the outside: --help, bad traces (exit 2 and why),
# output that cannot be written, the text and --json on the fixtures and
# on real runs (findings first, phases in a step's order, 100 columns,
# colour), truncated and foreign traces.  Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

# ------------------------------------------------------------------ help
help_checks summary
option_checks summary
capture "$amptrace" help summary
check "help summary" out_has "usage: amptrace summary"

# ------------------------------------------------------------ bad input
for entry in "${bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" summary "$fx/$file"
	check "summary $file: exit 2" status_is 2
	check "summary $file: says why" err_has "$message"
	capture "$amptrace" summary --json "$fx/$file"
	check "summary --json $file: exit 2" status_is 2
done
capture "$amptrace" summary "$fx"
check "summary of a directory: exit 2" status_is 2
check "summary of a directory: says why" err_has "not a regular file"
make_bad_traces
for entry in "${made_bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" summary "$tmp/$file"
	check "summary $file: exit 2" status_is 2
	check "summary $file: says why" err_has "$message"
done
# The pipe a compressed trace is refused with runs as given, whatever
# its path (TMPDIR's with them): a space or a quote stays in one word.
cp "$tmp/good.json.gz" "$tmp/it's a trace.gz"
capture "$amptrace" summary "$tmp/it's a trace.gz"
pipe=$(sed -n 's/.*: give it as //p' "$tmp/err")
capture bash -c "\"\$1\" summary $pipe" bash "$amptrace"
check "summary of a compressed trace: the pipe it says reads it" \
	out_has "steps: 2"
full_device_checks summary --json "$fx/good.json"

# ------------------------------------------------------------- summary
capture "$amptrace" summary "$fx/good.json"
check "summary: exit 0" status_is 0
check "summary: ops table" out_has "forward   linear                     4   -   4"
check "summary: casts by direction" out_has "f32->f16             6       4"
check "summary: cache" out_has "hits 4, misses 4, uncacheable 4, disabled 0; hit rate 0.50"
check "summary: uncacheable reasons" out_has "4  not a leaf that requires grad"
check "summary: regions" out_has "loss                     cuda   f16           2"
check "summary: scaler" out_has "optimizer steps 2, skipped 1 (first in step 1)"
check "summary: scale history" out_has "65536 (step 0) -> 32768 (step 1, inf found)"
# A job's ranks each have a GradScaler (good.json twice, merged: ranks 0
# and 1): the history follows one, rank 0's, not the ranks' interleaved
# scales; its skips are its own; check's scaler counts are a rank's
"$amptrace" merge -o "$tmp/two-ranks.json" "$fx/good.json" "$fx/good.json" \
	2>/dev/null
capture "$amptrace" summary "$tmp/two-ranks.json"
check "two ranks' GradScalers: steps and skips in all" \
	out_has "optimizer steps 4, skipped 2 (first in step 1)"
check "... which one the history follows, and that the other agrees" \
	out_has "2 GradScalers (a rank's at most 2 steps, 1 skipped): the scale and the skips below are rank 0's;"
check "... its scale history, once" \
	eval 'out_has "  scale: 65536 (step 0) -> 32768 (step 1, inf found)
" && ! out_has "inf found) -> 65536"'
check "... its skip, once" out_has "    step 1 (scale 65536): a gradient held inf/NaN"
printf 'scaler skipped-steps == 1\nscaler steps == 2\n' >"$tmp/rank-scaler.rules"
capture "$amptrace" check "$tmp/two-ranks.json" "$tmp/rank-scaler.rules"
check "check: scaler skipped-steps and steps are a rank's, not the sum" \
	eval 'status_is 0 && out_has "(skipped-steps 1)" && out_has "(steps 2)"'
capture "$amptrace" check "$fx/good.json" "$tmp/rank-scaler.rules"
check "check: ... as for the one process" status_is 0
# A GAN's two GradScalers in one process, the first never skipping: the
# process's skips are listed all, as for any one process (following one
# GradScaler is for a job's ranks, whose GradScalers are replicas)
$python -c 'import json, sys
lines = open(sys.argv[1]).read().split("\n")
out = []
for line in lines:
	if "\"amp.scaler\"" in line and "\"what\":\"update\"" not in line \
	   and "\"scaler_id\"" in line:
		e = json.loads(line.rstrip(","))
		e["ts"] -= 0.1
		e["args"].update(scaler_id=2, scale=1024.0, found_inf=False,
				 step_skipped=False)
		out.append(json.dumps(e) + ",")
	out.append(line)
open(sys.argv[2], "w").write("\n".join(out))' "$fx/good.json" "$tmp/gan.json"
capture "$amptrace" summary "$tmp/gan.json"
check "a GAN's two GradScalers: the skip of the second is listed" \
	eval 'status_is 0 && out_has "    step 1 (scale 65536): a gradient held inf/NaN"'
check "... and no GradScaler is said to be followed" \
	eval '! out_has "GradScalers"'
capture "$amptrace" summary --json "$tmp/gan.json"
check "... summary --json: 2 GradScalers, the process's history followed" \
	eval 'out_has "\"scalers\":	2" && out_has "\"pid\":	100"'
capture "$amptrace" summary --json "$fx/good.json"
check "summary --json: exit 0" status_is 0
check "summary --json: hit rate" out_has '"hit_rate":	0.5'
# by module (issue 24 item 4): modules.json is good.json with module keys
# (h.0.attn.c_attn, h.0.mlp.c_fc, h.1.attn.c_attn, lm_head, the outermost)
capture "$amptrace" summary "$fx/modules.json"
check "summary by module: exit 0" status_is 0
check "summary by module: h.0 at depth 2 (2 modules, a backward op)" \
	out_has "  h.0                3      1      2       6       0   6.750 us  f32->f16 6"
check "summary by module: cache hits" \
	out_has "  lm_head            1      -      1       0       2   1.750 us  -"
check "summary by module: the outermost module" \
	out_has "  (outermost)        2      2      -       1       0   3.375 us  f16->f32 1"
check "summary by module: ops of no module, last" in_order \
	"  lm_head " "  (no module)        4      4      -       1       0   6.375 us"
check "summary by module: no step left out" out_lacks "left out: their rows name no module"
# the steps recorded as aggregates name no module: the table says it
# leaves them out
capture "$amptrace" summary "$fx/aggregate-torch-autocast.json"
check "summary by module: the aggregated steps said to be left out" \
	out_has "  (the 2 steps recorded as per-step aggregates left out: their rows name no module)"
capture "$amptrace" summary --depth 3 "$fx/modules.json"
check "summary --depth 3: h.0 split" out_has "  h.0.mlp            1      -      1       3"
check "summary --depth 3: no h.0 row" out_lacks "  h.0      "
capture "$amptrace" summary --depth 1 "$fx/modules.json"
check "summary --depth 1: the h blocks in one row" \
	out_has "  h                  4      1      3       6       2   8.500 us"
capture "$amptrace" summary --json --depth 3 "$fx/modules.json"
check "summary --json: modules" /usr/bin/python3 -c 'import json, sys
m = json.load(open(sys.argv[1]))["modules"]
rows = {r["module"]: r for r in m["rows"]}
assert m["depth"] == 3, m
assert rows["h.0.attn"] == {"module": "h.0.attn", "ops": 2,
    "outputs": {"f32": 1, "f16": 1}, "casts": {"f32->f16": 3},
    "cache_hits": 0, "time_us": 4.125}, rows["h.0.attn"]
assert rows[""]["ops"] == 2 and rows[None]["ops"] == 4, rows' "$tmp/out"
# module names and a region's file in CJK (a Python identifier or file name
# may be; a file name may hold an emoji): a wide character takes two
# columns, so the numbers line up under the header's; a name past the
# column's 32 is cut between characters, never inside one
sed -e 's/"h\.0\./"编码器.层0./g' -e 's/"fwd"/"前向🚀"/g' \
	-e 's/"lm_head"/"很长的输出层名字很长的输出层名字很长的输出层名字"/g' \
	"$fx/modules.json" >"$tmp/wide.json"
capture "$amptrace" summary "$tmp/wide.json"
check "summary by module: wide names keep the columns" /usr/bin/python3 -c '
import re, sys, unicodedata
def columns(s):
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in s)
text = open(sys.argv[1], encoding="utf-8").read()   # valid UTF-8, or this raises
lines = text.split("\n")
head = next(l for l in lines if l.startswith("  module "))
rows = [l for l in lines if l.startswith("  编码器") or l.startswith("  很长")]
assert len(rows) == 2, rows
region_head = next(l for l in lines if l.startswith("  region "))
region = next(l for l in lines if l.startswith("  前向🚀 "))
assert columns(region[:region.index("cuda")]) == region_head.index("device"), region
assert rows[1].startswith("  很长的输出层名字很长的输出层...  "), rows[1]
end = columns(head[:head.index("ops") + 3])
for r in rows:
    number = re.match(r"  \S+ +\d+", r)
    assert columns(number.group(0)) == end, (r, end)
' "$tmp/out"
capture "$amptrace" summary "$fx/good.json"
check "summary of a trace without modules: says why no table" \
	out_has "(no op of the run names its nn.Module: the PyTorch bridge's do, from format 1.4;"
capture "$amptrace" summary --json "$fx/good.json"
check "summary --json of a trace without modules: no rows" \
	/usr/bin/python3 -c 'import json, sys
assert json.load(open(sys.argv[1]))["modules"]["rows"] == []' "$tmp/out"
for depth in 0 -1 x 2x 65; do
	capture "$amptrace" summary --depth "$depth" "$fx/modules.json"
	check "summary --depth $depth: exit 2" status_is 2
	check "summary --depth $depth: says why" \
		err_has "--depth must be a number from 1 to 64, not '$depth'"
done
capture "$amptrace" summary "$fx/changed.json"
check "summary: findings listed" out_has "backward-under-autocast (x2)"
check "summary: libamp diagnostics listed" out_has "stale-cache: cached cast of fc1.weight"
# 100 columns, colour, a fix once per kind (issue 13 item 7)
record "$tmp/tf.json" "$transformer"
capture "$amptrace" summary "$tmp/tf.json"
check "summary of the transformer sample: exit 0" status_is 0
check "summary of the transformer sample: every line fits 100 columns" \
	/usr/bin/python3 -c 'import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
long = [l for l in lines if len(l) > 100]
print("".join("# %d: %s\n" % (len(l), l) for l in long), end="")
sys.exit(not lines or bool(long))' "$tmp/out"
check "summary: a long op name is whole, on a line of its own" \
	out_has "optimizer _amp_foreach_non_finite_check_and_unscale_
  "
check "summary: nothing is cut short" sh -c "! grep -q '\.\.\.' '$tmp/out'"
capture "$amptrace" summary --json "$tmp/tf.json"
check "summary --json: the op name in full" out_has '"_amp_foreach_non_finite_check_and_unscale_"'
"$amptrace" merge "$fx/changed.json" "$fx/changed.json" -o "$tmp/cc.json" 2>/dev/null
# A job's ranks find the same mistakes: each listed once, the lowest
# rank's, said on how many ranks (their GradScalers' Python ids differ:
# rank 1's renumbered here)
sed '/"pid":2,/s/"scaler_id":1,/"scaler_id":140086992679888,/' "$tmp/cc.json" >"$tmp/cc-ids.json"
capture "$amptrace" summary "$tmp/cc-ids.json"
check "summary of two ranks: each finding once" \
	test "$(grep -c 'warning stale-cache' "$tmp/out")" -eq 1
check "summary of two ranks: on each, the lowest rank's" \
	out_has "warning stale-cache (on each of 2 ranks; rank 0's): cached cast of fc1.weight"
check "summary of two ranks: counted on each" \
	out_has "backward-under-autocast (x2 on each of 2 ranks; rank 0's)"
check "summary of two ranks: a skip of GradScalers of other ids once" \
	out_has "info    scaler-skipped-step (on each of 2 ranks; rank 0's): GradScaler 1 skipped"
check "summary of two ranks: the steps of each" \
	out_has "steps: 2 on each of 2 ranks (marked by scaler update)"
capture "$amptrace" summary --json "$tmp/cc-ids.json"
check "summary --json of two ranks: a finding's count on all, its ranks, each's" \
	"$python" -c 'import json, sys
f = [f for f in json.load(open(sys.argv[1]))["findings"]
     if f["kind"] == "backward-under-autocast"]
sys.exit([(x["count"], x["ranks"], x["each"]) for x in f] != [(4, 2, 2)])' "$tmp/out"
check "summary --json of two ranks: each skip's process and rank" \
	"$python" -c 'import json, sys
k = json.load(open(sys.argv[1]))["scaler"]["skipped"]
sys.exit(sorted((x["pid"], x["rank"]) for x in k) != [(1, 0), (2, 1)])' "$tmp/out"
check "summary --json of two ranks: the ranks that train, each's steps" \
	"$python" -c 'import json, sys
s = json.load(open(sys.argv[1]))["steps"]
sys.exit((s["ranks"], s["rank_steps"]) != (2, [2, 2]))' "$tmp/out"
# rank 1 one step short (its record ends after its first step's update,
# at 24 us): its findings fewer
"$python" -c 'import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"]
                    if e.get("pid") != 2 or e.get("ph") == "M" or e.get("ts", 0) <= 24]
json.dump(t, open(sys.argv[2], "w"))' "$tmp/cc.json" "$tmp/cc-short.json"
capture "$amptrace" summary "$tmp/cc-short.json"
check "summary of ranks of other counts: the count on all" \
	out_has "backward-under-autocast (x3 on 2 ranks; rank 0's)"
check "summary of ranks of other step counts: the least and the most" \
	out_has "steps: 1 to 2 on each of 2 ranks"
# 40 ranks, a GradScaler each: every rank's skips are judged (the
# findings once kept 32 GradScalers' states)
"$amptrace" merge $(for i in $(seq 40); do echo "$fx/changed.json"; done) \
	-o "$tmp/forty.json" 2>/dev/null
capture "$amptrace" summary "$tmp/forty.json"
check "summary of 40 ranks: each rank's GradScaler skipped a step" \
	out_has "info    scaler-skipped-step (on each of 40 ranks; rank 0's)"
# ampview draws one rank: its findings noted once, not again as the other
# rank's "not drawn"; a finding only another rank has says which draws it
"$ampview" "$tmp/cc-ids.json" -o "$tmp/ranks.svg"
check "ampview of two ranks: rank 1's stale-cache not listed beside rank 0's" \
	test "$(grep -o -m1 'findings[^<]*' "$tmp/ranks.svg" | grep -o 'stale&#45;cache ×' | wc -l)" -eq 1
"$amptrace" merge "$fx/good.json" "$fx/changed.json" -o "$tmp/gc.json" 2>/dev/null
"$ampview" "$tmp/gc.json" -o "$tmp/ranks.svg"
check "ampview of rank 0: rank 1's own finding named, and how to draw it" \
	grep -qF "stale&#45;cache ×1 (rank 1&#39;s: &#45;&#45;rank 1 draws it)" "$tmp/ranks.svg"
# rank 1 without the finding ranks 0 and 2 have: named once, rank 0's
"$amptrace" merge "$fx/changed.json" "$fx/good.json" "$fx/changed.json" \
	-o "$tmp/cgc.json" 2>/dev/null
"$ampview" "$tmp/cgc.json" --rank 1 -o "$tmp/ranks.svg"
check "ampview of rank 1: the finding of ranks 0 and 2 named once" \
	test "$(grep -o -m1 'findings[^<]*' "$tmp/ranks.svg" | grep -o 'stale&#45;cache ×' | wc -l)" -eq 1
check "ampview of rank 1: the lowest rank's, on how many ranks" \
	grep -qF "stale&#45;cache ×1 (rank 0&#39;s, on 2 ranks: &#45;&#45;rank 0 draws it)" "$tmp/ranks.svg"
capture "$amptrace" summary "$tmp/cgc.json"
check "summary of three ranks: a finding rank 1 lacks on 2 of them" \
	out_has "warning stale-cache (on each of 2 of 3 ranks; rank 0's): cached"
# --rank: one rank's processes, as if it ran alone
capture "$amptrace" summary --rank 1 "$tmp/cgc.json"
check "summary --rank 1: exit 0" status_is 0
check "summary --rank 1: said, with the job's ranks" \
	out_has "rank 1 only (--rank), of 3 ranks"
check "summary --rank 1: its one process" out_has_wrapped "; 1 process, "
check "summary --rank 1: not the other ranks' findings" \
	sh -c "! grep -q 'stale-cache' '$tmp/out'"
check "summary --rank 1: its steps alone" out_has "steps: 2 (marked by"
capture "$amptrace" summary --rank 2 "$tmp/cgc.json"
check "summary --rank 2: its finding, no other rank's said" \
	out_has "warning stale-cache: cached cast of fc1.weight"
capture "$amptrace" summary --json --rank 2 "$tmp/cgc.json"
check "summary --json --rank 2: the rank, one process" "$python" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit((d["rank"], d["processes"]) != (2, 1))' "$tmp/out"
capture "$amptrace" summary --json "$tmp/cgc.json"
check "summary --json: rank null without --rank" \
	"$python" -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["rank"] is not None)' "$tmp/out"
capture "$amptrace" summary --rank 5 "$tmp/cgc.json"
check "summary --rank 5 of ranks 0-2: exit 2" status_is 2
check "summary --rank 5 of ranks 0-2: which ranks there are" \
	err_has "cgc.json: no rank 5: the trace's ranks are 0, 1, 2"
capture "$ampview" "$tmp/cgc.json" --rank 5 -o "$tmp/ranks.svg"
check "ampview --rank 5 of ranks 0-2: the same words" \
	err_has "cgc.json: no rank 5: the trace's ranks are 0, 1, 2"
capture "$amptrace" summary --rank 0 "$fx/good.json"
check "summary --rank 0 of a trace without ranks: exit 2" status_is 2
check "summary --rank 0 of a trace without ranks: said" \
	err_has "no rank 0: the trace's processes have no rank"
capture "$amptrace" summary --rank -1 "$tmp/cgc.json"
check "summary --rank -1: a bad number, exit 2" status_is 2
# --rank's header counts the rank's events alone, the flows it does not
# read too (only rank 1's file has two); a truncated input is its rank's
sed '/^"traceEvents":\[/a\
{"name":"cast","cat":"amp.flow","ph":"s","ts":1.0,"pid":100,"tid":1,"id":1,"args":{"op_id":2,"tensor":1}},\
{"name":"cast","cat":"amp.flow","ph":"f","ts":2.0,"pid":100,"tid":1,"bp":"e","id":1,"args":{"op_id":2,"tensor":1}},' \
	"$fx/changed.json" >"$tmp/flows.json"
"$amptrace" merge "$fx/good.json" "$tmp/flows.json" -o "$tmp/gf.json" 2>/dev/null
capture "$amptrace" summary "$tmp/gf.json"
check "summary of two ranks, one with flows: every event" \
	out_has_wrapped "2 processes, 2 threads, 107 events,"
capture "$amptrace" summary --rank 0 "$tmp/gf.json"
check "summary --rank 0: its 52 events, not rank 1's flows" \
	out_has_wrapped "1 process, 1 thread, 52 events,"
capture "$amptrace" summary --json --rank 1 "$tmp/gf.json"
check "summary --json --rank 1: its 53 events and 2 flows" "$python" -c '
import json, sys; sys.exit(json.load(open(sys.argv[1]))["events"] != 55)' "$tmp/out"
"$amptrace" merge "$fx/truncated.json" "$fx/good.json" -o "$tmp/tg.json" \
	2>/dev/null
capture "$amptrace" summary --rank 0 "$tmp/tg.json"
check "summary --rank 0: its input's truncation noted" \
	out_has "note: rank 0's input"
capture "$amptrace" summary --rank 1 "$tmp/tg.json"
check "summary --rank 1: rank 0's truncated input not said" \
	sh -c "! grep -q 'truncated' '$tmp/out'"
capture "$amptrace" summary "$tmp/gc.json"
check "summary of two ranks: a finding of one names its rank" \
	out_has "warning stale-cache (rank 1's): cached cast of fc1.weight"
# a finding of the processes no process_name names, beside rank 0
"$python" "$(dirname "$0")/../add_process.py" "$fx/changed.json" \
	"$tmp/named.json" --pid 5 --rank 0 --phase backward
"$python" -c 'import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"]
                    if e.get("name") != "process_name" or e["pid"] != 100]
json.dump(t, open(sys.argv[2], "w"))' "$tmp/named.json" "$tmp/unnamed.json"
"$ampview" "$tmp/unnamed.json" --rank 0 -o "$tmp/ranks.svg"
check "ampview of rank 0: a finding of the unnamed processes, how to draw it" \
	grep -qF "stale&#45;cache ×1 (of the processes without a rank: &#45;&#45;rank all draws it)" "$tmp/ranks.svg"
# the same processes named without ranks (Hogwild's workers): each its own
sed 's/"rank":[01],*//; s/"name":"rank [01]: /"name":"/' "$tmp/cc.json" >"$tmp/cc-unranked.json"
capture "$amptrace" summary "$tmp/cc-unranked.json"
check "summary: two processes without ranks, two stale-cache findings" \
	test "$(grep -c 'warning stale-cache:' "$tmp/out")" -eq 2
check "summary: their fix said once" test "$(grep -c 'fix: enter autocast per iteration' "$tmp/out")" -eq 1
check "summary: processes without ranks, no steps of each" out_lacks "on each of"
capture "$amptrace" summary "$tmp/cc.json"
check "summary: no ANSI codes into a file" sh -c "! grep -q \"$(printf '\033')\" '$tmp/out'"
# a trace's name is JSON: "\u001b[31m" would colour the terminal; the
# --json output writes it back as it is
sed 's/"fwd"/"f\\u001b]0;pwned\\u0007\\u001b[31mwd"/g' "$fx/good.json" >"$tmp/escape.json"
capture "$amptrace" summary --color=always "$tmp/escape.json"
check "summary: a trace's control characters shown as '?'" out_has "f?]0;pwned??[31mwd"
check "summary: no control character of the trace's" \
	sh -c "! grep -q \"$(printf '[\007]')\" '$tmp/out' && ! grep -q \"$(printf '\033')\\[31mwd\" '$tmp/out'"
capture "$amptrace" summary --json "$tmp/escape.json"
check "summary --json: the name as the trace has it" \
	out_has '"f\u001b]0;pwned\u0007\u001b[31mwd"'
# a bidi control (U+202E, right-to-left override) would print the rest
# of the line backwards: '?' too; the name's other characters as they are
sed 's/"fwd"/"f\\u202ewd\\u2014"/g' "$fx/good.json" >"$tmp/bidi.json"
capture "$amptrace" summary "$tmp/bidi.json"
check "summary: a trace's bidi control shown as '?', an em dash kept" \
	out_has "$(printf 'f?wd\342\200\224')"
check "summary: no bidi control of the trace's" \
	sh -c "! grep -q \"$(printf '\342\200\256')\" '$tmp/out'"
capture "$amptrace" summary --color=always "$tmp/cc.json"
check "summary --color=always: severity coloured" out_has "$(printf '\033[33mwarning\033[0m stale-cache')"
capture "$amptrace" summary --color "$tmp/cc.json"
check "summary --color: always" out_has "$(printf '\033[33mwarning')"
capture "$amptrace" summary --color=never "$tmp/cc.json"
check "summary --color=never: no ANSI codes" sh -c "! grep -q \"$(printf '\033')\" '$tmp/out'"
# a path is an argument and may hold amptrace's palette bytes: no colour
# of its own, with colours on or off, and nothing of it on other commands
palette="$tmp/"$'cc\xff1;31m.json'
cp "$tmp/cc.json" "$palette"
capture "$amptrace" summary --color=always "$palette"
check "summary --color=always: a path's palette bytes are no colour" \
	sh -c "! grep -q \"$(printf '\033')\\[1;31m\" '$tmp/out' && grep -q 'cc?1;31m.json' '$tmp/out'"
check "summary --color=always: the findings still coloured" out_has "$(printf '\033[33mwarning')"
capture "$amptrace" summary --color=never "$palette"
check "summary --color=never: a path's palette bytes are no colour" \
	sh -c "! grep -q \"$(printf '\033')\" '$tmp/out'"
capture "$amptrace" diff "$palette" "$palette"
check "diff: a path's palette bytes are no colour" \
	sh -c "! grep -q \"$(printf '\033')\" '$tmp/out'"
rm -f "$palette"
capture "$amptrace" summary --color=sometimes "$tmp/cc.json"
check "summary --color=sometimes: exit 2" status_is 2
check "summary --color=sometimes: says what is allowed" err_has "--color must be auto, always or never, not 'sometimes'"
check "summary --color=sometimes: no suggestion" err_lacks "did you mean"
capture "$amptrace" summary --color=alwyas "$tmp/cc.json"
check "summary --color=alwyas: the value meant" err_has "not 'alwyas'; did you mean 'always'?"
# auto: colour on a terminal (script(1) gives one), none under NO_COLOR
capture script -qec "'$amptrace' summary '$tmp/cc.json'" /dev/null
check "summary on a terminal: coloured" out_has "$(printf '\033[33mwarning')"
capture env NO_COLOR=1 script -qec "'$amptrace' summary '$tmp/cc.json'" /dev/null
check "summary on a terminal with NO_COLOR: no colour" sh -c "! grep -q \"$(printf '\033')\\[33m\" '$tmp/out'"
check "... but the summary" out_has "warning stale-cache"
capture "$amptrace" summary "$fx/truncated.json"
check "truncated amptrace trace: read (exit 0)" status_is 0
check "truncated amptrace trace: said on stdout" out_has "note: truncated at line 23"
check "truncated amptrace trace: a writer still at work is a cause too" \
	out_has_wrapped "(its writer was stopped, or is still writing it)"
check "truncated amptrace trace: warned on stderr" err_has "truncated"
capture "$amptrace" summary "$fx/array-form.json"
check "torch.profiler's legacy array form: read" status_is 0
check "foreign trace: labelled" out_has_wrapped "not written by amptrace"

# ------------------------------------------------------------ findings
record "$tmp/pitfall.json" "$findings_prog" backward-inside
capture "$amptrace" summary "$tmp/pitfall.json"
check "summary: findings first" in_order "Findings" "Ops by phase"
check "summary: most severe first, with its fix" \
	out_has "warning stale-cache (x2): mm (op"
check "summary: one-line fix" out_has "fix: enter autocast per iteration around forward + loss only"
capture "$amptrace" summary --json "$tmp/pitfall.json"
check "summary --json: findings before ops" in_order '"findings":' '"ops":'
check "summary --json: fix" out_has '"fix":	"enter autocast per iteration'
check "summary --json: severity" out_has '"severity":	"warning"'
# A job of more ranks than a fixed table holds: every rank's finding
record "$tmp/growth.json" "$findings_prog" growth
"$amptrace" merge $(for r in $(seq 70); do echo "$tmp/growth.json"; done) \
	-o "$tmp/growth70.json" 2>/dev/null
capture "$amptrace" summary --json "$tmp/growth70.json"
check "summary --json: a job of 70 ranks, cache-growth in each" $python -c '
import json, sys
found = [(f["kind"], f["ranks"], f["count"])
         for f in json.load(open(sys.argv[1]))["findings"]]
print("# findings:", found)
sys.exit(("cache-growth", 70, 70) not in found)' "$tmp/out"
record "$tmp/mlp.json" "$mlp" --steps 4
capture "$amptrace" summary "$tmp/mlp.json"
check "summary: the header's framework and the policy table it selects" \
	out_has "framework: libamp 0.1.0 (policy table: 2.14)"
capture "$amptrace" summary "$fx/good.json"
check "summary of a trace without a framework: exit 0" status_is 0
check "summary: no framework line for a trace without one" \
	sh -c "! grep -q '^framework:' '$tmp/out'"
capture "$amptrace" summary --json "$fx/good.json"
check "summary --json: framework null, the newest (2.14) table" \
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(not (d["framework"] is None and d["policy_table"] == "2.14"))' "$tmp/out"

# ------------------------------------------------- phase optimizer, summary
record "$tmp/mlp3.json" "$mlp" --steps 3
# The op rows of summary's text, "phase op" per line (the numbers of an
# op too long for its column are on a line of their own: skipped).
op_rows() {
	"$amptrace" summary "$1" | awk '/^Ops by phase/ {on = 1; next}
		on && /^ *phase / {next} on && NF == 0 {exit}
		on && $1 ~ /^[0-9]/ {next} on {print $1, $2}'
}
# The phases in order, each run of equal phases once.
phase_runs() { awk '{print $1}' | uniq | tr '\n' ' '; }

op_rows "$tmp/tf.json" >"$tmp/out"
check "transformer: forward, backward, optimizer rows in that order" \
	test "$(phase_runs <"$tmp/out")" = "forward backward optimizer "
check "transformer: Adam's lerp_ is an optimizer op" out_has "optimizer lerp_.Scalar"
check "transformer: GradScaler's update is an optimizer op" out_has "optimizer _amp_update_scale_"
check "transformer: GradScaler's unscale is an optimizer op" out_has "optimizer _amp_foreach_non_finite_check_and_unscale_"
check "transformer: no optimizer op among the forward rows" \
	test "$(grep -cE '^forward (lerp_|addcdiv_|addcmul_|_amp_)' "$tmp/out")" -eq 0
check "transformer: the model's linear is forward" out_has "forward linear"
check "transformer: GradScaler's scale (loss * scale) stays forward" out_has "forward mul.Tensor"
op_rows "$tmp/mlp3.json" >"$tmp/out"
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

# ------------------------------------------------- GPU kernel timing
# the trailer's gpu entries (FORMAT.md section 3.8): why timing was
# unavailable (cuda emulated, even on a GPU), or the counts of a timed run
AMP_CUDA_DISABLE=1 record "$tmp/tfcuda.json" "$transformer" --device cuda --steps 2
capture "$amptrace" summary "$tmp/tfcuda.json"
check "summary, cuda emulated: why kernels were not timed" \
	out_has_wrapped "GPU kernel timing: unavailable (emulated on the CPU: disabled by AMP_CUDA_DISABLE)"
capture "$amptrace" summary "$tmp/mlp.json"
check "summary, device cpu: no GPU line" out_lacks "GPU kernel timing"
capture "$amptrace" summary --json "$tmp/mlp.json"
check "summary --json, device cpu: gpu null" $python -c 'import json, sys
sys.exit(json.load(open(sys.argv[1]))["gpu"] is not None)' "$tmp/out"
$python - "$tmp/tfcuda.json" "$tmp/timed.json" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
process = trace["amptraceEnd"]["processes"][0]
process["gpu"] = {"timing": True, "kernels": 1200, "memcpys": 30,
                  "complete": True, "unlinked": 0, "untimed": 0,
                  "dropped": 2, "buffers": 3, "aggregated": 400}
json.dump(trace, open(sys.argv[2], "w"))
PY
capture "$amptrace" summary "$tmp/timed.json"
check "summary, kernels timed: their counts, the folded steps' and the lost" \
	out_has_wrapped "GPU kernel timing: 1200 kernels, 30 copies; 400 more in the steps without full detail, counted; 2 lost (CUPTI's buffers or the raw stream full)"
capture "$amptrace" summary --json "$tmp/timed.json"
check "summary --json, kernels timed: the counts" $python -c 'import json, sys
g = json.load(open(sys.argv[1]))["gpu"]
assert g == {"processes": 1, "timed": 1, "kernels": 1200, "memcpys": 30,
             "aggregated": 400, "dropped": 2, "complete": True,
             "reason": None}, g' "$tmp/out"

echo "1..$count"
exit $fail
