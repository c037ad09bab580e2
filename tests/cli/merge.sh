#!/usr/bin/env bash
# amptrace merge from the outside: --help, bad inputs (exit 2 and why),
# pids per rank, truncated inputs, numbers out of range, the output's
# place, the header's framework, inputs with many processes, and what
# merge renumbers: pids (ranks, other processes, GPUs and the pids their
# events name) and flow ids.  Arguments: common.sh's.
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
# a regular file is read twice, through the scanner's window (merge holds
# one event of each input at a time); a pipe can be read once: whole
capture "$amptrace" merge <(cat "$fx/good.json") "$fx/changed.json" \
	-o "$tmp/piped.json"
check "merge of a pipe: exit 0" status_is 0
check "merge of a pipe: the events of the file's merge" "$python" -c '
import json, sys
a, b = (json.load(open(p))["traceEvents"] for p in sys.argv[1:])
sys.exit(a != b)' "$tmp/m.json" "$tmp/piped.json"
# pids start at 1: Perfetto treats pid 0 as special (issue 13)
check "merged trace: rank 0 is pid 1, rank 1 pid 2" \
	"$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))
pids = {e["args"]["rank"]: e["pid"] for e in d["traceEvents"] if e["name"] == "process_name"}
inputs = [(i["rank"], i["pid"]) for i in d["amptraceEnd"]["inputs"]]
sys.exit(not (pids == {0: 1, 1: 2} and inputs == [(0, 1), (1, 2)]))' "$tmp/m.json"
capture "$amptrace" merge "$fx/good.json" "$fx/truncated.json" -o "$tmp/m2.json"
check "merge of a truncated input: exit 0" status_is 0
check "merge of a truncated input: warned" err_has "truncated.json is truncated"
summary_note() { # trace: summary's note (--json), else None
	"$amptrace" summary --json "$1" | "$python" -c 'import json, sys; print(json.load(sys.stdin)["note"])'
}
check "summary of a merge of a truncated input: says which" test \
	"$(summary_note "$tmp/m2.json")" = "rank 1's input ($fx/truncated.json) was truncated (its writer was stopped, or was still writing it): its events up to there are merged"
check "summary of a merge of whole inputs: no note" \
	test "$(summary_note "$tmp/m.json")" = None
# two of three truncated: the note names the first, counts the other,
# and says it of both
"$amptrace" merge "$fx/truncated.json" "$fx/good.json" "$fx/truncated.json" \
	-o "$tmp/m3.json" 2>/dev/null
check "summary of a merge of two truncated inputs: says which, in the plural" test \
	"$(summary_note "$tmp/m3.json")" = "rank 0's input ($fx/truncated.json) and 1 more input were truncated (their writers were stopped, or were still writing them): their events up to there are merged"
check "merge of a truncated input: the trailer counts each input's events" \
	"$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))
inputs = [(i["events"], i["truncated"]) for i in d["amptraceEnd"]["inputs"]]
sys.exit(inputs != [(52, False), (20, True)])' "$tmp/m2.json"
# A file is read twice: its outline, then its events.  A trace still
# being written (the file of a live `amptrace run`, readable at any
# moment) merges as the first read found it: the second stops where the
# first's last whole event ended.  One that changed otherwise in between
# (replaced, shrunk, rewritten; a whole trace changed at all) is refused,
# not merged half from each version.  merge_live OUT CHANGE merges
# live.json and a pipe, the pipe running the shell command CHANGE once
# merge has read live.json the first time and before its second read:
# the pipe's 1 MiB of blanks, more than its buffer, hold CHANGE until
# merge reads the pipe, after live.json; its last blank, written once
# CHANGE is done, keeps the pipe open until then.
merge_live() {
	capture "$amptrace" merge "$tmp/live.json" \
		<(cat "$fx/changed.json"; head -c 1048576 /dev/zero | tr '\0' ' '
		  eval "$2"; printf ' ') \
		-o "$tmp/$1"
}
cp "$fx/truncated.json" "$tmp/live.json"
merge_live live-as-is.json :
check "merge of a trace cut short: exit 0" status_is 0
# truncated.json is the start of good.json: its writer, had it run on,
# would have appended the rest
cp "$fx/truncated.json" "$tmp/live.json"
merge_live live-grown.json \
	'tail -c +$(($(wc -c <"$fx/truncated.json") + 1)) "$fx/good.json" >>"$tmp/live.json"'
check "merge of a trace that grew between its reads: exit 0" status_is 0
check "... warned that it is truncated, or still being written" \
	err_has "live.json is truncated (its writer was stopped, or is still writing it); merging its 20 complete events"
check "... merged as the first read found it (the same bytes)" \
	cmp "$tmp/live-as-is.json" "$tmp/live-grown.json"
check "... the file had grown meanwhile" cmp "$fx/good.json" "$tmp/live.json"
refused_change() { # what changed, the shell command that changes it
	merge_live live-merged.json "$2"
	check "merge of a trace $1 between its reads: exit 2" status_is 2
	check "merge of a trace $1 between its reads: says which and why" \
		err_has "live.json changed while it was merged: it was replaced, shrunk or rewritten since merge first read it"
	check "merge of a trace $1 between its reads: no output" \
		test ! -e "$tmp/live-merged.json"
}
cp "$fx/truncated.json" "$tmp/live.json"
refused_change "cut short shrunk" \
	'head -c 3000 "$fx/truncated.json" >"$tmp/live.json"'
# the same bytes in a new file: another trace took its name
cp "$fx/truncated.json" "$tmp/live.json"
refused_change "cut short replaced" \
	'cp "$fx/truncated.json" "$tmp/new.json"; mv "$tmp/new.json" "$tmp/live.json"'
# the same file, grown, but what the first read found is not there
cp "$fx/truncated.json" "$tmp/live.json"
refused_change "cut short rewritten" \
	'sed "s/\"randn\"/\"rande\"/" "$fx/good.json" >"$tmp/live.json"'
cp "$fx/good.json" "$tmp/live.json"
refused_change "whole" 'cat "$fx/changed.json" >"$tmp/live.json"'
# A writer that finishes while merge's first read of its trace is under
# way leaves a whole trace, longer than it was when merge began: merged
# whole, not refused.  merge is stopped while it reads a 47 MB live
# trace (its file open, not read to the end), the trailer appended.
"$python" -c 'import sys
head = open(sys.argv[1]).read().split("\n")[:4]
with open(sys.argv[2], "w") as f:
    f.write("\n".join(head) + "\n" + ",\n".join(
        "{\"name\":\"x\",\"ph\":\"i\",\"ts\":%d,\"pid\":100,\"tid\":1,\"s\":\"t\"}" % i
        for i in range(800000)))' "$fx/good.json" "$tmp/live-big.json"
trailer='
],
"amptraceEnd":{"complete":true,"events":800002,"exit":{"status":"exited","code":0},"processes":[{"pid":100,"rank":null,"argv":["mlp"],"status":"exited","exit_code":0}]}
}'
# stops merge of "$tmp/live.json" in its first read; 0 when it did
stop_mid_read() {
	local fd position
	for _ in $(seq 2000); do
		fd=$(ls -l "/proc/$1/fd" 2>/dev/null | grep -m1 'live\.json$' |
			awk '{print $9}')
		[ -n "$fd" ] && break
		sleep 0.001
	done
	kill -STOP "$1" 2>/dev/null || return 1
	position=$(awk '/^pos:/ {print $2}' "/proc/$1/fdinfo/$fd" 2>/dev/null)
	test -n "$position" && test "$position" -lt "$(stat -c %s "$tmp/live.json")"
}
# merge_stopped CHANGE: merges live.json (live-big.json's copy) into
# stopped.json, running the shell command CHANGE while merge is stopped
# in its first read; $stopped says whether it was (5 tries)
merge_stopped() {
	for attempt in 1 2 3 4 5; do
		rm -f "$tmp/stopped.json"
		cp "$tmp/live-big.json" "$tmp/live.json"
		"$amptrace" merge "$tmp/live.json" -o "$tmp/stopped.json" \
			>"$tmp/out" 2>"$tmp/err" &
		local merging=$!
		stop_mid_read "$merging" && stopped=1 || stopped=
		eval "$1"
		kill -CONT "$merging" 2>/dev/null
		wait "$merging"
		status=$?
		[ -n "$stopped" ] && break
	done
}
merge_stopped 'printf "%s\n" "$trailer" >>"$tmp/live.json"'
check "merge stopped in its first read of a live trace (attempt $attempt)" \
	test -n "$stopped"
check "... whose writer then finished: exit 0" status_is 0
capture "$amptrace" summary "$tmp/stopped.json"
check "... merged whole" eval 'out_has "800002 events" && ! out_has truncated'
merge_stopped 'cp "$tmp/live-big.json" "$tmp/new.json"; mv "$tmp/new.json" "$tmp/live.json"'
check "merge stopped in its first read of a live trace (attempt $attempt)" \
	test -n "$stopped"
check "... which another file then replaced: exit 2" status_is 2
check "... says so" err_has "live.json was replaced while merge read it"
check "... no output" test ! -e "$tmp/stopped.json"
rm -f "$tmp/live-big.json" "$tmp/live.json" "$tmp/stopped.json"
# Each event is decoded once, as it is written: a bad one in a later
# input stops a merge onto standard output half-way, which leaves the
# output without its trailer (a reader says it is truncated), not a
# trace that looks whole.
"$amptrace" merge "$fx/good.json" "$fx/wrong-types.json" -o - \
	>"$tmp/half.json" 2>"$tmp/half.err"
check "merge -o - of a bad second input: exit 2" test $? -eq 2
check "... names the event" grep -q "wrong-types.json:14: event 11" "$tmp/half.err"
capture "$amptrace" summary "$tmp/half.json"
check "... what it wrote reads as truncated" out_has "truncated"
# ... and a file output is written next to its name, replacing what was
# there only once whole: a bad input found half-way leaves it as it was,
# and nothing beside it.
printf 'an earlier merge\n' >"$tmp/kept.json"
capture "$amptrace" merge "$fx/good.json" "$fx/wrong-types.json" -o "$tmp/kept.json"
check "merge of a bad second input onto a file: exit 2" status_is 2
check "... the file as it was" test "$(cat "$tmp/kept.json")" = "an earlier merge"
check "... nothing left beside it" test -z "$(ls "$tmp" | grep '^kept\.json.')"
# a symlink to a regular file: what it leads to is replaced the same
# way (written next to it), the link stays a link; a bad input leaves
# what it leads to as it was
printf 'an earlier merge\n' >"$tmp/led-to.json"
ln -s led-to.json "$tmp/link.json"
capture "$amptrace" merge "$fx/good.json" "$fx/wrong-types.json" -o "$tmp/link.json"
check "merge of a bad second input through a symlink: exit 2" status_is 2
check "... still a symlink" test -L "$tmp/link.json"
check "... what it leads to as it was" \
	test "$(cat "$tmp/led-to.json")" = "an earlier merge"
check "... nothing left beside it" test -z "$(ls "$tmp" | grep '^led-to\.json.')"
capture "$amptrace" merge "$fx/good.json" "$fx/good.json" -o "$tmp/link.json"
check "merge through a symlink: exit 0, still a symlink" \
	eval 'status_is 0 && test -L "$tmp/link.json"'
capture "$amptrace" summary "$tmp/led-to.json"
check "... what it leads to is the merged trace" out_has "2 processes"
chmod 600 "$tmp/led-to.json"
"$amptrace" merge "$fx/good.json" "$fx/good.json" -o "$tmp/link.json" 2>/dev/null
check "... and keeps its mode ($(stat -c %a "$tmp/led-to.json"))" \
	test "$(stat -c %a "$tmp/led-to.json")" = 600
# a second hard link is written through (renaming would part the names):
# a bad input leaves it without its trailer, and it reads as truncated
printf 'an earlier merge\n' >"$tmp/hard-a.json"
ln "$tmp/hard-a.json" "$tmp/hard-b.json"
capture "$amptrace" merge "$fx/good.json" "$fx/wrong-types.json" -o "$tmp/hard-b.json"
check "merge of a bad second input onto a second hard link: exit 2" status_is 2
capture "$amptrace" summary "$tmp/hard-a.json"
check "... both names read as truncated" out_has "truncated at line"
# a merge ended by a signal while it writes (Ctrl-C, kill) removes its
# temporary first: nothing half-made is left beside the output
python3 -c 'import sys
with open(sys.argv[1], "w") as f:
    f.write("{\"traceEvents\":[\n" + ",\n".join(
        "{\"name\":\"x\",\"ph\":\"i\",\"ts\":%d,\"pid\":1,\"tid\":1,\"s\":\"t\"}" % i
        for i in range(400000)) + "]}\n")' "$tmp/big.json"
"$amptrace" merge "$tmp/big.json" "$tmp/big.json" -o "$tmp/ended.json" \
	2>/dev/null &
merging=$!
for _ in $(seq 3000); do # its temporary there: it writes (30 s at most)
	ls "$tmp" | grep -q '^ended\.json\.' && break
	sleep 0.01
done
temporary=$(ls "$tmp" | grep '^ended\.json\.')
kill -TERM "$merging"
wait "$merging"
status=$?
check "merge ended by SIGTERM while writing $temporary: killed by it ($status)" \
	test "$status" -eq 143 -a -n "$temporary"
check "... its temporary removed, no output" \
	test -z "$(ls "$tmp" | grep '^ended\.json')"
rm -f "$tmp/big.json"
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
# The merged duration runs from the merged ts 0 (the earliest input's) to
# the end of the input that ends last: b starts 2 ms after a and runs
# 4 ms, so 6 ms; without duration_us a reader would take the events' span.
printf '{"baseTimeNanoseconds":1000000000,"traceEvents":[{"name":"x","ph":"X","ts":10,"dur":1,"pid":1,"tid":1}],"amptraceEnd":{"complete":true,"events":1,"duration_us":5000}}' >"$tmp/span-a.json"
printf '{"baseTimeNanoseconds":1002000000,"traceEvents":[{"name":"x","ph":"X","ts":10,"dur":1,"pid":2,"tid":1}],"amptraceEnd":{"complete":true,"events":1,"duration_us":4000}}' >"$tmp/span-b.json"
capture "$amptrace" merge "$tmp/span-a.json" "$tmp/span-b.json" -o "$tmp/span.json"
check "merge: duration_us spans every input (6000 us)" \
	"$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit(abs(d["amptraceEnd"].get("duration_us", 0) - 6000) > 0.001)' "$tmp/span.json"
# Another tool's trace starts at its first event, not at its
# baseTimeNanoseconds: Kineto's (torch.profiler's) is a round time weeks
# before its events (absolute time = base + ts), which merged from there
# spanned 58 days; its metadata moves with its events.
printf '%s\n' '{"baseTimeNanoseconds":1790857026000000000,"traceEvents":[' \
	'{"ph":"M","name":"process_name","ts":5016165389548,"pid":7,"tid":0,"args":{"name":"python"}},' \
	'{"name":"aten::mm","ph":"X","ts":5016165389548,"dur":50,"pid":7,"tid":1},' \
	'{"name":"aten::add","ph":"X","ts":5016165389648,"dur":50,"pid":7,"tid":1}]}' \
	>"$tmp/kineto.json"
capture "$amptrace" merge "$tmp/kineto.json" "$tmp/kineto.json" -o "$tmp/kineto2.json"
check "merge of torch.profiler's traces: its events' span (150 us), every ts from 0" \
	"$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))
ts = [e["ts"] for e in d["traceEvents"]]
sys.exit(abs(d["amptraceEnd"]["duration_us"] - 150) > 0.001 or min(ts) != 0)' \
	"$tmp/kineto2.json"
# A metadata event is no time: one at ts 0 (as Chrome's are written)
# neither starts the trace weeks before its events nor goes before 0.
sed 's/"ts":5016165389548,"pid":7,"tid":0/"ts":0,"pid":7,"tid":0/' \
	"$tmp/kineto.json" >"$tmp/kineto-meta0.json"
capture "$amptrace" merge "$tmp/kineto-meta0.json" "$tmp/kineto-meta0.json" \
	-o "$tmp/kineto-meta0-2.json"
check "merge: a metadata event at ts 0 is no start (150 us, no ts below 0)" \
	"$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))
ts = [e["ts"] for e in d["traceEvents"]]
sys.exit(abs(d["amptraceEnd"]["duration_us"] - 150) > 0.001 or min(ts) != 0)' \
	"$tmp/kineto-meta0-2.json"
capture "$amptrace" merge "$tmp/span-a.json" "$tmp/span-a.json" -o "$tmp/twice.json"
check "merge of a trace with itself: summary says the input's duration" \
	"$python" -c 'import json, subprocess, sys
duration = lambda f: json.loads(subprocess.run([sys.argv[1], "summary", "--json", f],
                                               capture_output=True).stdout)["duration_us"]
sys.exit(abs(duration(sys.argv[2]) - duration(sys.argv[3])) > 0.001)' \
	"$amptrace" "$tmp/twice.json" "$tmp/span-a.json"
# one input is rank 0 (its header's rank null): no rank to be distinct from
capture "$amptrace" merge "$fx/good.json" -o "$tmp/one.json"
check "merge of one input: exit 0" status_is 0
check "merge of one input: no note on distinct ranks" err_lacks "distinct rank"
capture "$amptrace" merge "$fx/good.json"
check "merge without -o: exit 2" status_is 2
capture "$amptrace" merge "$fx/good.json" -o ''
check "merge -o '': bad usage (exit 2), an empty name" eval \
	'status_is 2 && err_has "empty output file name"'
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
	"$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))
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
	"$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))
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

# ------------------------------------------------------------ renumbering
# Two ranks whose files use the same numbers: a host process, a second
# process, its GPU (pid 2^30 + host), a kernel naming its host, and two
# flows in each: amptrace's (amp.flow, a numeric id: FORMAT.md §3.10) and
# another tool's with a hex-string id (Perfetto reads those).
ranked_trace() { # rank host-pid other-pid
	local gpu=$((1073741824 + $2))
	printf '{"amptrace":{"format":"1.2","rank":%s},"traceEvents":[\n' "$1"
	printf '{"name":"process_name","ph":"M","pid":%s,"tid":0,"args":{"name":"p (pid %s)"}},\n' "$2" "$2"
	printf '{"name":"process_sort_index","ph":"M","pid":%s,"tid":0,"args":{"sort_index":0}},\n' "$2"
	printf '{"name":"x","cat":"other","ph":"X","ts":1,"dur":1,"pid":%s,"tid":1},\n' "$2"
	printf '{"name":"y","cat":"other","ph":"X","ts":2,"dur":1,"pid":%s,"tid":1},\n' "$3"
	printf '{"name":"process_name","ph":"M","pid":%s,"tid":0,"args":{"name":"GPU 0 (pid %s)","device":0,"host_pid":%s}},\n' "$gpu" "$2" "$2"
	printf '{"name":"k","cat":"kernel","ph":"X","ts":3,"dur":1,"pid":%s,"tid":7,"args":{"amp.pid":%s,"device":0}},\n' "$gpu" "$2"
	for flow in amp.flow:1 flow:'"a"'; do
		printf '{"name":"f","cat":"%s","ph":"s","ts":1,"pid":%s,"tid":1,"id":%s,"args":{"op_id":1}},\n' "${flow%%:*}" "$2" "${flow#*:}"
		printf '{"name":"f","cat":"%s","ph":"f","bp":"e","ts":2,"pid":%s,"tid":1,"id":%s,"args":{"op_id":1}},\n' "${flow%%:*}" "$2" "${flow#*:}"
	done
	printf '{"name":"z","cat":"other","ph":"X","ts":4,"dur":1,"pid":%s,"tid":1}\n],"amptraceEnd":{"complete":true}}\n' "$2"
}
ranked_trace 1 500 600 >"$tmp/r1.json"
ranked_trace 0 700 800 >"$tmp/r0.json"
capture "$amptrace" merge "$tmp/r1.json" "$tmp/r0.json" -o "$tmp/mr.json"
check "merge of ranks 1 and 0: exit 0" status_is 0
merged_pids() { # merged file, then "name pid [args]" per event of interest
	"$python" -c 'import json, sys
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    a = e.get("args", {})
    if e["ph"] == "M":
        print(e["name"], e["pid"], a.get("name"), a.get("rank"), a.get("host_pid"), a.get("sort_index"))
    elif e["cat"] == "kernel":
        print("kernel", e["pid"], a["amp.pid"])
    elif e["cat"] == "other":
        print(e["name"], e["pid"])' "$1"
}
merged_pids "$tmp/mr.json" >"$tmp/pids"
has_line() { grep -qxF -- "$1" "$tmp/pids" || { echo "# no line '$1' in:"; sed 's/^/#   /' "$tmp/pids"; return 1; }; }
check "rank 1's host process is pid 2, named and ranked" \
	has_line "process_name 2 rank 1: p (pid 500) 1 None None"
check "rank 0's host process is pid 1" has_line "process_name 1 rank 0: p (pid 700) 0 None None"
check "a rank's process sorts by its rank" has_line "process_sort_index 2 None None None 1"
check "the events follow their process" has_line "x 2"
check "each file's other process gets a pid of its own, above the ranks" \
	eval 'has_line "y 3" && has_line "y 4"'
check "a GPU follows its host: 2^30 + host pid, host_pid too" \
	has_line "process_name 1073741826 GPU 0 (pid 500) None 2 None"
check "... for each rank" has_line "process_name 1073741825 GPU 0 (pid 700) None 1 None"
check "a kernel's amp.pid follows its host" eval 'has_line "kernel 1073741826 2" && has_line "kernel 1073741825 1"'
# flows: ids unique in the merged file, both ends of a flow the same
flow_ids() { # merged file: "pid id" per flow end, in order
	"$python" -c 'import json, sys
for e in json.load(open(sys.argv[1]))["traceEvents"]:
    if e.get("cat") in ("amp.flow", "flow"):
        print(e["ph"], e["pid"], e["id"])' "$1"
}
flow_ids "$tmp/mr.json" >"$tmp/flows"
check "four flows of the same two ids in two files: four ids, each on both its ends" \
	test "$(cat "$tmp/flows")" = "s 2 1
f 2 1
s 2 2
f 2 2
s 1 3
f 1 3
s 1 4
f 1 4"
cp "$tmp/r1.json" "$tmp/r1-again.json"
capture "$amptrace" merge "$tmp/r1.json" "$tmp/r1-again.json" -o "$tmp/mr2.json"
check "merge of one file twice: ranks from the argument order" \
	err_has "not every input has a distinct rank; using the order of the arguments"
check "... and its flows still four distinct ids" \
	test "$(flow_ids "$tmp/mr2.json" | awk '{ print $3 }' | sort -u | wc -l)" -eq 4
capture "$amptrace" summary "$tmp/mr.json"
check "the merged trace loads" status_is 0
sed 's/"cat":"flow"/"cat":"amp.flow"/' "$tmp/r1.json" >"$tmp/r1-hex.json"
capture "$amptrace" merge "$tmp/r1-hex.json" "$tmp/r0.json" -o "$tmp/mr3.json"
check "an amp.flow id that is no number: exit 2" status_is 2
check "... said where" err_has "r1-hex.json:10: event 8 (amp.flow s 'f'): id must be a number, got a string"

# A file whose processes name ranks of their own (learned from
# init_process_group, FORMAT.md §5: every rank's processes in one file,
# its header's rank null) keeps them: each process's pid is its own
# rank + 1, its names its own, one node's file beside another's.
# late_job HEADER-RANK whole|truncated PID:RANK... writes such a file:
# RANK - a process without one (the launching parent), R! one that
# named R from its start (a DataLoader worker the rank started later;
# it names R after its rank's process does).
late_job() {
	local header=$1 end=$2 spec pid rank lines=()
	shift 2
	for spec; do
		pid=${spec%%:*} rank=${spec#*:}
		[ "${rank%!}" = "$rank" ] &&
			lines+=("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":$pid,\"tid\":0,\"args\":{\"name\":\"python (pid $pid)\"}}")
		lines+=("{\"name\":\"x$pid\",\"cat\":\"other\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":$pid,\"tid\":1}")
	done
	for spec; do
		pid=${spec%%:*} rank=${spec#*:}
		rank=${rank%!}
		[ "$rank" = - ] && continue
		lines+=("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":$pid,\"tid\":0,\"args\":{\"name\":\"rank $rank: python (pid $pid)\",\"rank\":$rank}}")
		lines+=("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":$pid,\"tid\":0,\"args\":{\"sort_index\":$rank}}")
	done
	printf '{"amptrace":{"format":"1.4","rank":%s},"traceEvents":[\n' "$header"
	printf '%s\n' "${lines[@]}" | sed '$!s/$/,/'
	if [ "$end" = whole ]; then
		printf '],"amptraceEnd":{"complete":true}}\n'
	else # cut after its last whole event, as a killed writer leaves it
		printf ',\n{"name":"cut'
	fi
}
late_job null whole 77:1 >"$tmp/late-a.json"
late_job null whole 88:0 >"$tmp/late-b.json"
capture "$amptrace" merge "$tmp/late-a.json" "$tmp/late-b.json" -o "$tmp/ml.json"
check "merge of processes named by their own ranks: exit 0, no note of positions" \
	eval 'status_is 0 && err_lacks "order of the arguments"'
merged_pids "$tmp/ml.json" >"$tmp/pids"
names_of() { grep "^process_name $1 " "$tmp/pids"; }
check "a process named by its own rank 1 keeps it: pid 2, its names its own" \
	test "$(names_of 2)" = "process_name 2 python (pid 77) None None None
process_name 2 rank 1: python (pid 77) 1 None None"
check "... and the other's own rank 0: pid 1" \
	test "$(names_of 1)" = "process_name 1 python (pid 88) None None None
process_name 1 rank 0: python (pid 88) 0 None None"

# Two nodes of one job, each one file: node 0's parent without a rank,
# its ranks 1 and 0 (1 named first), rank 0's worker; node 1's ranks 2
# and 3, its file cut short (no trailer: the ranks come from the
# process_name events, not amptraceEnd.processes).
late_job null whole 100:- 101:1 102:0 103:0! >"$tmp/node0.json"
late_job null truncated 200:2 201:3 >"$tmp/node1.json"
capture "$amptrace" merge "$tmp/node0.json" "$tmp/node1.json" -o "$tmp/job.json"
check "merge of two nodes' files of late ranks: exit 0, node 1's said truncated" \
	eval 'status_is 0 && err_has "node1.json is truncated"'
merged_pids "$tmp/job.json" >"$tmp/pids"
last_name() { names_of "$1" | tail -n 1; }
check "each rank is pid rank + 1, named by its own rank, whatever order its file names them in" \
	test "$(for p in 1 2 3 4; do last_name $p; done)" = "process_name 1 rank 0: python (pid 102) 0 None None
process_name 2 rank 1: python (pid 101) 1 None None
process_name 3 rank 2: python (pid 200) 2 None None
process_name 4 rank 3: python (pid 201) 3 None None"
check "... and its events follow it" \
	eval 'has_line "x102 1" && has_line "x101 2" && has_line "x200 3" && has_line "x201 4"'
check "the worker of rank 0 gets a pid above the ranks, named by rank 0" \
	eval 'has_line "x103 6" && test "$(names_of 6)" = "process_name 6 rank 0: python (pid 103) 0 None None"'
check "the parent without a rank gets a pid above the ranks, named without one" \
	eval 'has_line "x100 5" && test "$(names_of 5)" = "process_name 5 python (pid 100) None None None"'
check "the trailer names each input by its lowest rank and its pid" \
	"$python" -c 'import json, sys; d = json.load(open(sys.argv[1]))
sys.exit([(i["rank"], i["pid"]) for i in d["amptraceEnd"]["inputs"]] != [(0, 1), (2, 3)])' "$tmp/job.json"
capture "$amptrace" summary "$tmp/job.json"
check "summary reads the merged job: 6 processes" out_has "6 processes"
# The worker's name may come first (the writer appends each process's
# events as it reads them): the rank's own process is the one that
# began without a rank and learned it, not the one that had it from its
# start.
late_job null whole 100:- 103:0! 102:0 101:1 >"$tmp/worker-first.json"
capture "$amptrace" merge "$tmp/worker-first.json" "$tmp/node1.json" \
	-o "$tmp/worker-first-job.json"
merged_pids "$tmp/worker-first-job.json" >"$tmp/pids"
check "a rank's worker named before it: the rank's process is pid 1, the worker above the ranks" \
	eval 'status_is 0 && has_line "x102 1" && has_line "x103 6" &&
	test "$(last_name 1)" = "process_name 1 rank 0: python (pid 102) 0 None None"'

# A rank two inputs hold: refused, both named (pid rank + 1 is one
# process's).  So is a file without any rank beside late ranks (by its
# position it would take one of theirs), and a per-rank file's rank
# that a late file's process names.
late_job null whole 300:1 >"$tmp/node-again.json"
capture "$amptrace" merge "$tmp/node0.json" "$tmp/node1.json" \
	"$tmp/node-again.json" -o "$tmp/rank-twice.json"
check "merge of two inputs of rank 1: exit 2, no output" \
	eval 'status_is 2 && test ! -e "$tmp/rank-twice.json"'
check "... says which rank and which inputs" \
	err_has "rank 1 is in both $tmp/node0.json and $tmp/node-again.json: each rank must come from one input"
late_job 2 whole 400:2 >"$tmp/rank2.json"
capture "$amptrace" merge "$tmp/rank2.json" "$tmp/node1.json" -o "$tmp/rank-twice.json"
check "a rank's file (its header's) and a late rank of the same: exit 2, said" \
	eval 'status_is 2 && err_has "rank 2 is in both $tmp/rank2.json and $tmp/node1.json"'
capture "$amptrace" merge "$tmp/node0.json" "$fx/good.json" -o "$tmp/unranked.json"
check "a file of no rank beside late ranks: exit 2, said" \
	eval 'status_is 2 && err_has "$fx/good.json names no rank (nor do its processes) while the processes of another input name theirs"'

# A rank's file (its header's rank) whose process names another rank
# (torch's given to init_process_group where RANK said another): merged
# as its file's rank, as before, and said; beside a late file too.
late_job 1 whole 500:0 >"$tmp/disagree.json"
late_job 0 whole 600:0 >"$tmp/agree.json"
for other in agree node1; do
	capture "$amptrace" merge "$tmp/disagree.json" "$tmp/$other.json" -o "$tmp/dis.json"
	merged_pids "$tmp/dis.json" >"$tmp/pids"
	check "a rank 1 file's process naming rank 0 (beside $other.json): merged as rank 1, said" \
		eval 'status_is 0 && test "$(last_name 2)" = "process_name 2 rank 1: python (pid 500) 1 None None" &&
		err_has "note: process 500 of $tmp/disagree.json names rank 0, its file rank 1: merged as rank 1'"'"'s, as its file is"'
done

# A merged trace given to merge again: its ranks are its processes'
# (rank 1's is pid 2, named so), not its file's, and merge gives one rank
# per file: re-merged, rank 0's process became the file's rank and every
# other kept the rank it had, so one rank held several processes (two
# merged copies of ranks 0 and 1 made ranks 0, 1, 1, 1, and check's
# `per step` rules summed rank 1's three).  Refused, the ranks named.
capture "$amptrace" merge "$tmp/mr.json" "$tmp/mr.json" -o "$tmp/remerged.json"
check "merge of a merged trace: exit 2, no output" \
	eval 'status_is 2 && test ! -e "$tmp/remerged.json"'
check "... says which input and its ranks" \
	err_has "$tmp/mr.json is a merged trace already (rank 1 from $tmp/r1.json, rank 0 from $tmp/r0.json): a merged trace lists the files it was made of, and those lists do not nest; merge the traces it was made of"

# A merged trace of one rank is a rank's file as any other: `amptrace
# run` writes a rank's trace.json so (merged of its trace.rankN.json),
# and two nodes' such files merge into the job's ranks 0 and 1.
"$amptrace" merge "$fx/good.json" -o "$tmp/one-rank-a.json" 2>/dev/null
"$amptrace" merge "$fx/good.json" -o "$tmp/one-rank-b.json" 2>/dev/null
capture "$amptrace" merge "$tmp/one-rank-a.json" "$tmp/one-rank-b.json" \
	-o "$tmp/one-rank-ab.json"
check "merge of two merged traces of one rank each: exit 0, ranks 0 and 1" \
	eval 'status_is 0 && "$python" -c "import json, sys
t = json.load(open(sys.argv[1]))
sys.exit(sorted(e[\"args\"][\"rank\"] for e in t[\"traceEvents\"]
                if e.get(\"name\") == \"process_name\") != [0, 1])" "$tmp/one-rank-ab.json"'

# ------------------------------------------------------------- the bytes
# What merge writes for whole inputs, byte for byte: the fixtures of
# every kind (libamp's, torch's, aggregates, compiled graphs, modules,
# another tool's, a truncated one) and the two ranks above (GPUs, flows),
# merged from a directory of their own (the header names the files as
# given) against merged.golden, main's output before merge decoded each
# event once (the generator's version aside).
mkdir "$tmp/golden"
golden_inputs="good.json changed.json truncated.json array-form.json
compiled.json steps-evaluation.json aggregate-overflow-skips.json
modules.json evaluation-only.json lookahead-conversions.json"
for f in $golden_inputs; do cp "$fx/$f" "$tmp/golden/"; done
cp "$tmp/r1.json" "$tmp/r0.json" "$tmp/golden/"
(cd "$tmp/golden" && "$amptrace" merge $golden_inputs r1.json r0.json \
	-o merged.json 2>/dev/null)
sed 's/"generator":"amptrace [^"]* merge"/"generator":"amptrace VERSION merge"/' \
	"$tmp/golden/merged.json" >"$tmp/golden/merged.normal"
check "merge of the fixtures: the same bytes as merged.golden" \
	cmp "$fx/merged.golden" "$tmp/golden/merged.normal"

echo "1..$count"
exit $fail
