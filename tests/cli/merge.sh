#!/usr/bin/env bash
# amptrace merge from the outside: --help, bad inputs (exit 2 and why),
# pids per rank, truncated inputs, numbers out of range, the output's
# place, the header's framework, inputs with many processes.  Arguments:
# common.sh's.
. "$(dirname "$0")/common.sh"

# ------------------------------------------------------------------ help
help_checks merge
option_checks merge

# ------------------------------------------------------------ bad input
for entry in "${bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" merge "$fx/good.json" "$fx/$file" -o "$tmp/merged.json"
	check "merge $file: exit 2" status_is 2
	check "merge $file: says why" err_has "$message"
done
make_bad_traces
for entry in "${made_bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" merge "$tmp/$file" -o "$tmp/merged.json"
	check "merge $file: exit 2" status_is 2
	check "merge $file: says why" err_has "$message"
done
capture "$amptrace" merge "$fx" -o "$tmp/merged.json"
check "merge of a directory: exit 2" status_is 2
check "merge of a directory: says why" err_has "not a regular file"

# --------------------------------------------------------------- merge
capture "$amptrace" merge "$fx/good.json" "$fx/changed.json" -o "$tmp/m.json"
check "merge: exit 0" status_is 0
check "merge: no ranks in the inputs is said" err_has "using the order of the arguments"
capture "$amptrace" summary "$tmp/m.json"
check "merged trace: two processes" out_has "2 processes"
# pids start at 1: Perfetto treats pid 0 as special (issue 13)
check "merged trace: rank 0 is pid 1, rank 1 pid 2" \
	/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
pids = {e["args"]["rank"]: e["pid"] for e in d["traceEvents"] if e["name"] == "process_name"}
inputs = [(i["rank"], i["pid"]) for i in d["amptraceEnd"]["inputs"]]
sys.exit(not (pids == {0: 1, 1: 2} and inputs == [(0, 1), (1, 2)]))' "$tmp/m.json"
capture "$amptrace" merge "$fx/good.json" "$fx/truncated.json" -o "$tmp/m2.json"
check "merge of a truncated input: exit 0" status_is 0
check "merge of a truncated input: warned" err_has "truncated.json is truncated"
# Numbers out of range: the reader names file and event; merge's own
# arithmetic (moving ts to the merged start) is range-checked too.
printf '{"traceEvents":[{"name":"x","ph":"i","ts":1,"pid":1e300,"tid":1}]}' >"$tmp/huge-pid.json"
capture "$amptrace" merge "$fx/good.json" "$tmp/huge-pid.json" -o "$tmp/m3.json"
check "merge of an out-of-range pid: exit 2" status_is 2
check "merge of an out-of-range pid: names file and event" \
	err_has "huge-pid.json:1: event 0 (ph i 'x'): pid must be an integer"
capture "$amptrace" summary "$tmp/huge-pid.json"
check "summary of an out-of-range pid: exit 2" status_is 2
printf '{"baseTimeNanoseconds":1,"traceEvents":[{"name":"x","ph":"i","ts":1,"pid":1,"tid":1}]}' >"$tmp/early.json"
printf '{"baseTimeNanoseconds":4000000000000000000,"traceEvents":[{"name":"x","ph":"i","ts":9000000000000000,"pid":2,"tid":1}]}' >"$tmp/late.json"
capture "$amptrace" merge "$tmp/early.json" "$tmp/late.json" -o "$tmp/m4.json"
check "merge moving a ts out of range: exit 2" status_is 2
check "merge moving a ts out of range: says which" \
	err_has "late.json:1: event 0: ts 9e+15 moved to the merged trace's start is out of range"
capture "$amptrace" merge "$fx/good.json"
check "merge without -o: exit 2" status_is 2
capture "$amptrace" merge "$fx/good.json" -o "$fx/good.json"
check "merge onto an input: exit 2" status_is 2
capture "$amptrace" merge "$fx/good.json" -o /proc/no/such/dir.json
check "merge to an unwritable path: exit 1 (documented)" status_is 1
check "merge to an unwritable path: says so" err_has "cannot write /proc/no/such/dir.json"
# The header's framework (FORMAT.md §6): the inputs' when they agree;
# else rank 0's, with a note; each process keeps its own in process_name;
# a 1.0 input names it in amptraceEnd.processes only.
framework_trace() { # rank framework: one process, one event
	printf '{"amptrace":{"format":"1.1","rank":%s,"framework":"%s"},"traceEvents":[\n' "$1" "$2"
	printf '{"name":"process_name","ph":"M","pid":7,"tid":0,"args":{"name":"p (pid 7)","framework":"%s"}},\n' "$2"
	printf '{"name":"x","cat":"other","ph":"X","ts":1,"dur":1,"pid":7,"tid":1}\n],"amptraceEnd":{"complete":true}}\n'
}
torch="torch 1.13.0a0 (policy table: 1.13)"
framework_trace 0 "$torch" >"$tmp/f0.json"
framework_trace 1 "$torch" >"$tmp/f1.json"
framework_trace 1 "libamp 0.1.0" >"$tmp/f1-libamp.json"
header_framework() { # merged file, the framework its header must name
	/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
got = d["amptrace"].get("framework")
if got != (sys.argv[2] or None):
    sys.exit("# header framework: %r" % got)' "$1" "$2"
}
capture "$amptrace" merge "$tmp/f0.json" "$tmp/f1.json" -o "$tmp/mf.json"
check "merge of two torch traces: exit 0" status_is 0
check "merge of two torch traces: the header keeps their framework" \
	header_framework "$tmp/mf.json" "$torch"
check "merge of two torch traces: no note about frameworks" \
	err_lacks "different frameworks"
capture "$amptrace" summary "$tmp/mf.json"
check "merged torch traces: summary names the framework" \
	out_has "framework: $torch"
capture "$amptrace" merge "$tmp/f1-libamp.json" "$tmp/f0.json" -o "$tmp/mf2.json"
check "merge of libamp and torch traces: exit 0" status_is 0
check "merge of libamp and torch traces: the header names rank 0's" \
	header_framework "$tmp/mf2.json" "$torch"
check "merge of libamp and torch traces: a note says so" \
	err_has "the inputs come from different frameworks (rank 1: libamp 0.1.0; rank 0: $torch); the header names rank 0's"
check "merge of libamp and torch traces: each process keeps its own" \
	/usr/bin/python3 -c 'import json, sys; d = json.load(open(sys.argv[1]))
got = {e["args"]["rank"]: e["args"]["framework"] for e in d["traceEvents"] if e["name"] == "process_name"}
if got != {0: sys.argv[2], 1: "libamp 0.1.0"}:
    sys.exit("# %r" % got)' "$tmp/mf2.json" "$torch"
printf '{"amptrace":{"format":"1.0"},"traceEvents":[\n{"name":"x","cat":"other","ph":"X","ts":1,"dur":1,"pid":3,"tid":1}\n],"amptraceEnd":{"complete":true,"processes":[{"pid":3,"framework":"libamp 0.1.0"}]}}\n' >"$tmp/f-1.0.json"
capture "$amptrace" merge "$tmp/f-1.0.json" "$fx/good.json" -o "$tmp/mf3.json"
check "merge of a 1.0 trace naming its framework per process: carried" \
	header_framework "$tmp/mf3.json" "libamp 0.1.0"
capture "$amptrace" merge "$fx/good.json" "$fx/changed.json" -o "$tmp/mf4.json"
check "merge of inputs that name no framework: none in the header" \
	header_framework "$tmp/mf4.json" ""
# an input with 20 processes: each keeps a pid of its own
{
	printf '{"amptrace":{"format":"1.0"},"traceEvents":[\n'
	for p in $(seq 1 20); do
		printf '{"name":"process_name","ph":"M","pid":%d,"tid":0,"args":{"name":"p%d"}},\n' "$p" "$p"
		printf '{"name":"x","cat":"other","ph":"X","ts":%d,"dur":1,"pid":%d,"tid":1},\n' "$p" "$p"
	done
	printf '{"name":"x","cat":"other","ph":"X","ts":30,"dur":1,"pid":20,"tid":1}\n],"amptraceEnd":{"complete":true}}\n'
} >"$tmp/many.json"
capture "$amptrace" merge "$tmp/many.json" "$fx/good.json" -o "$tmp/m3.json"
check "merge of 20 processes + 1: exit 0" status_is 0
capture "$amptrace" summary "$tmp/m3.json"
check "merge of 20 processes + 1: 21 processes" out_has "21 processes"

echo "1..$count"
exit $fail
