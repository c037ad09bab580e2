#!/usr/bin/env bash
# amptrace diff from the outside: --help, bad traces on either side
# (exit 2 and why), equal traces or timing alone changed (0), and each
# kind of change (1), text and --json (its keys and values).  Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

# ------------------------------------------------------------------ help
help_checks diff
option_checks diff

# ------------------------------------------------------------ bad input
for entry in "${bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" diff "$fx/good.json" "$fx/$file"
	check "diff good $file: exit 2" status_is 2
	check "diff good $file: says why" err_has "$message"
	capture "$amptrace" diff "$fx/$file" "$fx/good.json"
	check "diff $file good: exit 2" status_is 2
done
make_bad_traces
for entry in "${made_bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" diff "$tmp/$file" "$fx/good.json"
	check "diff $file: exit 2" status_is 2
	check "diff $file: says why" err_has "$message"
done
capture "$amptrace" diff "$fx" "$fx/good.json"
check "diff of a directory: exit 2" status_is 2
check "diff of a directory: says why" err_has "not a regular file"
full_device_checks diff "$fx/good.json" "$fx/changed.json"

# ---------------------------------------------------------------- diff
capture "$amptrace" diff "$fx/good.json" "$fx/good.json"
check "diff of equal traces: exit 0" status_is 0
check "diff of equal traces: says so" out_has "no change in cast behaviour"
check "diff of traces without aggregated steps: the header counts them all" \
	eval 'out_has "good.json (" && out_lacks "in full detail"'
capture "$amptrace" diff "$fx/good.json" "$fx/changed.json"
check "diff: exit 1 on change" status_is 1
check "diff: output dtype change" out_has "output       linear (forward): f16 -> f32  x2"
check "diff: policy change" out_has "policy       linear (forward): lower_precision_fp -> fp32  x2"
check "diff: cast removed" out_has "cast-removed softmax.int (forward): arg 0 f16->f32 cache uncacheable, only in base  x2"
check "diff: cast added" out_has "cast-added   linear (forward): arg 0 f16->f32 cache uncacheable, only in new  x2"
# the note on how a trace ended quotes the trace (its signal's name):
# stderr's filter shows its control characters as '?'
sed 's/"exit":{"status":"exited","code":0}/"exit":{"status":"signaled","signal":9,"signal_name":"SIG\\u001b]0;pwned\\u0007KILL"}/' \
	"$fx/good.json" >"$tmp/killed.json"
capture "$amptrace" diff "$fx/good.json" "$tmp/killed.json"
check "diff: notes how a trace ended, its name's controls as '?'" \
	err_has "the program was killed by SIG?]0;pwned?KILL"
check "diff: no control character of the trace's on stderr" \
	sh -c "! grep -q '[$(printf '\033\007')]' '$tmp/err'"
capture "$amptrace" diff --json "$fx/good.json" "$fx/changed.json"
check "diff --json: exit 1" status_is 1
check "diff --json: changed" out_has '"changed":	true'
capture "$amptrace" diff "$fx/good.json"
check "diff with one trace: exit 2" status_is 2
capture "$amptrace" diff "$fx/good.json" "$fx/good.json" "$fx/changed.json"
check "diff with three traces: exit 2" status_is 2
check "diff with three traces: says which is one too many" \
	err_has "unexpected argument '$fx/changed.json'"
capture "$amptrace" diff "$fx/good.json" "$fx/changed.json" --json
check "diff: --json after the traces is --json" status_is 1
check "... and prints JSON" out_has '"changed":	true'

# ------------------------------------------------- exit codes and --json
# A variant of the good fixture per kind of change, made here: each
# exits 1 with that one change, in text and in JSON; timing alone
# changed exits 0.
sed '15s/"cache":"hit"/"cache":"miss"/' "$fx/good.json" >"$tmp/cache.json"
sed '48d' "$fx/good.json" >"$tmp/removed.json"
sed '7{p;s/"op_id":3,/"op_id":99,/}' "$fx/good.json" >"$tmp/added.json"
sed 's/"dur":1.5,/"dur":9.5,/g; s/"ts":30.125,/"ts":31.5,/' "$fx/good.json" >"$tmp/slower.json"
# diff --json BASE NEW, then the changes as "kind op phase base new count"
json_changes() { # base new
	"$amptrace" diff --json "$1" "$2" >"$tmp/diff.json"
	echo "status $?"
	"$python" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print("changed", d["changed"], "ops", d["ops"]["base"], d["ops"]["new"], d["ops"]["aligned"])
for c in d["changes"]:
    print(c["kind"], c["op"], c["phase"], c["base"], c["new"], c["count"], sorted(c["first"]))' "$tmp/diff.json"
}
expect_json() { # base new expected-lines
	local got
	got=$(json_changes "$1" "$2" 2>&1)
	[ "$got" = "$3" ] || { echo "# got:"; echo "$got" | sed 's/^/#   /'; return 1; }
}
check "--json, equal traces: exit 0, changed false, no change" \
	expect_json "$fx/good.json" "$fx/good.json" "status 0
changed False ops 11 11 11"
check "--json, timing alone changed: exit 0, no change" \
	expect_json "$fx/good.json" "$tmp/slower.json" "status 0
changed False ops 11 11 11"
capture "$amptrace" diff "$fx/good.json" "$tmp/slower.json"
check "timing alone changed: exit 0" status_is 0
check "--json, a cache result changed: exit 1, one cache change" \
	expect_json "$fx/good.json" "$tmp/cache.json" "status 1
changed True ops 11 11 11
cache linear forward arg 1 f32->f16 cache hit arg 1 f32->f16 cache miss 1 ['base_line', 'base_op_id', 'new_line', 'new_op_id']"
check "--json, an op removed: exit 1, op-removed, first names the base op" \
	expect_json "$fx/good.json" "$tmp/removed.json" "status 1
changed True ops 11 10 10
op-removed softmax_backward_data backward present absent 1 ['base_line', 'base_op_id']"
check "--json, an op added: exit 1, op-added, first names the new op" \
	expect_json "$fx/good.json" "$tmp/added.json" "status 1
changed True ops 11 12 11
op-added zeros forward absent present 1 ['new_line', 'new_op_id']"
capture "$amptrace" diff "$fx/good.json" "$tmp/cache.json"
check "a cache result changed: exit 1" status_is 1
check "... said with the cast" \
	out_has "cache        linear (forward): arg 1 f32->f16 cache hit -> arg 1 f32->f16 cache miss  x1"
check "... and the direction's count" out_has "f32->f16 6 -> 7  (changed)"
capture "$amptrace" diff "$fx/good.json" "$tmp/removed.json"
check "an op removed: said, with where it was" \
	out_has "op-removed   softmax_backward_data (backward) x1"
check "... the base op's line" out_has "first: base op 11 ($fx/good.json:48)"
capture "$amptrace" diff "$tmp/removed.json" "$fx/good.json"
check "the other way round: an op added" out_has "op-added     softmax_backward_data (backward) x1"
# by module (issue 24 item 4): the linear ops' outputs f16 -> bf16 in
# modules.json (good.json with module keys: h.0, h.1, lm_head)
sed 's/"dtype":"f16","shape":\[4,8\]}\],"Input type"/"dtype":"bf16","shape":[4,8]}],"Input type"/' \
	"$fx/modules.json" >"$tmp/modules-bf16.json"
capture "$amptrace" diff "$fx/modules.json" "$tmp/modules-bf16.json"
check "diff by module: exit 1" status_is 1
check "diff by module: the first op's module" \
	out_has "new op 4 ($tmp/modules-bf16.json:14) in h.0.attn.c_attn"
check "diff by module: h.0's changes" in_order "changes by module (paths cut to 2 parts):" \
	"  h.0                              2"
check "diff by module: lm_head's" out_has "  lm_head                          1"
capture "$amptrace" diff --json "$fx/modules.json" "$tmp/modules-bf16.json"
check "diff --json by module" "$python" -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["changes_by_module"] == [{"module": "h.0", "count": 2},
    {"module": "h.1", "count": 1}, {"module": "lm_head", "count": 1}], d
assert d["changes"][0]["first"]["module"] == "h.0.attn.c_attn", d' "$tmp/out"
capture "$amptrace" diff --depth 3 "$fx/modules.json" "$tmp/modules-bf16.json"
check "diff --depth 3: module paths cut to 3 parts" \
	in_order "changes by module (paths cut to 3 parts):" \
	"  h.0.attn                         1"
check "diff --depth 3: h.0's two changes apart (attn, mlp)" \
	out_has "  h.0.mlp                          1"
for depth in 0 65 x; do
	capture "$amptrace" diff --depth "$depth" "$fx/modules.json" "$fx/modules.json"
	check "diff --depth $depth: exit 2, says why" \
		eval 'status_is 2 && err_has "--depth must be a number from 1 to 64, not '"'$depth'"'"'
done
# A change in an aggregated step (whose rows name no module) is no
# module's: the table counts the detailed ops' only.
with_aggregate() { # IN OUT DTYPE: IN with a step 5 of two linear ops of DTYPE
	"$python" -c 'import json, sys
t = json.load(open(sys.argv[1]))
pid, tid = next((e["pid"], e["tid"]) for e in t["traceEvents"]
		if e.get("cat") == "amp.op")
t["traceEvents"].append({"name": "step 5 aggregates", "cat": "amp.aggregate",
	"ph": "i", "s": "t", "ts": 1.0, "pid": pid, "tid": tid, "args": {
	"step": 5, "begin": 0.5, "events": 2, "casts": [], "diags": [],
	"ops": [["linear", "", "forward", "lower_precision_fp", sys.argv[3],
		 "cpu", 2, 0, 1.0]], "regions": 1, "cache": {"clears": 0,
	"entries": 0, "bytes": 0, "max_entries": 0, "max_bytes": 0}}})
json.dump(t, open(sys.argv[2], "w"))' "$@"
}
with_aggregate "$fx/modules.json" "$tmp/modules-agg.json" f16
with_aggregate "$tmp/modules-bf16.json" "$tmp/modules-bf16-agg.json" bf16
capture "$amptrace" diff "$tmp/modules-agg.json" "$tmp/modules-bf16-agg.json"
check "diff: an aggregated step's change counts in the group, not by module" \
	eval 'out_has "(2 in aggregated steps)" && out_has "  h.0                              2" && out_lacks "(no module)"'
capture "$amptrace" diff "$fx/good.json" "$fx/changed.json"
check "diff of traces without modules: no module table" out_lacks "changes by module"
capture "$amptrace" diff --json "$fx/good.json" "$fx/missing.json"
check "--json with an unreadable trace: exit 2" status_is 2
check "... no JSON on stdout" test ! -s "$tmp/out"

# ------------------------------------------------------ a job's ranks
# One process against a job of two (a run on one GPU, then DDP on two):
# processes pair by rank; the one new has no counterpart for is said so,
# once, as what its ops are counted as (added), rather than left for its
# hundreds of op-added changes and the doubled casts to read as a change
# of the program.
"$amptrace" merge "$fx/good.json" "$fx/good.json" -o "$tmp/two-ranks.json" \
	2>/dev/null
ops=$("$python" -c 'import json, sys
print(sum(e.get("cat") == "amp.op" for e in json.load(open(sys.argv[1]))["traceEvents"]))' "$fx/good.json")
capture "$amptrace" diff "$fx/good.json" "$tmp/two-ranks.json"
check "one process against two ranks: exit 1, the process only in new said" \
	eval 'status_is 1 && out_has "processes: 1 in base, 2 in new (paired in order: the traces share no rank); only in new: rank 1 (pid 2, $ops ops): its ops and casts are counted as added"'
capture "$amptrace" diff "$tmp/two-ranks.json" "$fx/good.json"
check "... the other way round: only in base, counted as removed" \
	eval 'out_has "processes: 2 in base, 1 in new (paired in order: the traces share no rank); only in base: rank 1 (pid 2, $ops ops): its ops and casts are counted as removed"'
capture "$amptrace" diff --json "$fx/good.json" "$tmp/two-ranks.json"
check "... --json: processes, and the one only in new" "$python" -c 'import json, sys
p = json.loads(sys.stdin.read())["processes"]
sys.exit(p != {"base": 1, "new": 2, "only_in_one": [
    {"trace": "new", "pid": 2, "rank": 1, "ops": int(sys.argv[1])}]})' "$ops" <"$tmp/out"
capture "$amptrace" diff "$tmp/two-ranks.json" "$tmp/two-ranks.json"
check "two ranks against two: no change, no processes line" \
	eval 'status_is 0 && out_lacks "processes:"'
# a GPU's track (FORMAT.md §3.8: kernels, timed) is no process diff
# compares: a run with kernel timing against one without is no process
# only in new, "(0 ops)"
"$python" -c 'import json, sys
t = json.load(open(sys.argv[1]))
pid = next(e["pid"] for e in t["traceEvents"] if e.get("cat") == "amp.op")
gpu = 2**30 + pid
t["traceEvents"] += [
    {"name": "process_name", "ph": "M", "pid": gpu, "tid": 0,
     "args": {"name": "GPU 0 (pid %d)" % pid, "device": 0, "host_pid": pid}},
    {"name": "gemm", "cat": "kernel", "ph": "X", "ts": 5.0, "dur": 1.0,
     "pid": gpu, "tid": 7, "args": {"amp.pid": pid, "correlation": 1,
                                    "device": 0, "stream": 7}}]
json.dump(t, open(sys.argv[2], "w"))' "$fx/good.json" "$tmp/gpu-track.json"
capture "$amptrace" diff "$fx/good.json" "$tmp/gpu-track.json"
check "a GPU's track only in new: no change, no processes line" \
	eval 'status_is 0 && out_lacks "processes:"'
capture "$amptrace" diff --json "$fx/good.json" "$tmp/gpu-track.json"
check "... --json: one process each, none only in one" "$python" -c 'import json, sys
sys.exit(json.loads(sys.stdin.read())["processes"] !=
         {"base": 1, "new": 1, "only_in_one": []})' <"$tmp/out"
# rank 0's file against rank 1's (trace.rank0.json, trace.rank1.json of
# one job): the traces share no rank, so the process pairs with the
# process, as one process with one; by rank neither had a pair and each
# op read as removed and added
"$python" -c 'import json, sys
t = json.load(open(sys.argv[1]))
t["traceEvents"] = [e for e in t["traceEvents"] if e.get("pid") != 1]
json.dump(t, open(sys.argv[2], "w"))' "$tmp/two-ranks.json" "$tmp/rank1.json"
"$amptrace" merge "$fx/good.json" -o "$tmp/rank0.json" 2>/dev/null
capture "$amptrace" diff "$tmp/rank0.json" "$tmp/rank1.json"
check "rank 0's file against rank 1's: paired, no change, no processes line" \
	eval 'status_is 0 && out_has "aligned ops: $ops" && out_lacks "processes:"'
# rank 0 with a DataLoader worker of its own (named by its rank, FORMAT.md
# §5; started after it), against the same job without: each rank pairs
# with its own rank, the worker is the process only in one (not rank 1
# paired with rank 0's worker, and rank 1 left over)
"$python" "$(dirname "$0")/../add_process.py" "$tmp/two-ranks.json" \
	"$tmp/worker.json" --pid 3 --rank 0 --ts 1e6
capture "$amptrace" diff "$tmp/two-ranks.json" "$tmp/worker.json"
check "a rank's worker only in new: ranks paired with their own, the worker's op the one change" \
	eval 'status_is 1 && out_has "only in new: rank 0 (pid 3, 1 ops): its ops and casts are counted as added" &&
	      out_has "1 change in 1 group:" && out_has "op-added     randn (forward) x1"'

echo "1..$count"
exit $fail
