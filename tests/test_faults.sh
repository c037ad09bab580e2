#!/usr/bin/env bash
# Faults around `amptrace run`, each with its exit status and message:
# the program SIGKILLed at random points (the trace loads, says
# process-died, keeps every event before the kill), amptrace SIGKILLed or
# SIGTERMed (no raw files left behind; after SIGKILL the program runs on),
# the trace going to /dev/full, a read-only or a missing directory.
# The raw directory filling up is test_raw_full.sh (it needs a mount).
#   test_faults.sh AMPTRACE TRACE_PROG
set -u
amptrace=$(realpath "$1")
prog=$(realpath "$2")
work=$(mktemp -d)
raw=$work/raw
mkdir "$raw"
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	mountpoint -q "$work/ro" 2>/dev/null && umount "$work/ro"
	rm -rf "$work"
}
trap cleanup EXIT

. "$(dirname "$0")/tap.sh"

# waits up to 10 s for a file to hold a whole line
wait_line() {
	for _ in $(seq 200); do
		grep -q . "$1" 2>/dev/null && [ "$(tail -c1 "$1" | od -An -c)" = '  \n' ] &&
			return 0
		sleep 0.05
	done
	return 1
}

# count of relu ops that `amptrace summary` reports
relu_count() {
	"$amptrace" summary "$1" 2>/dev/null |
		awk '$2 == "relu" { n += $3 } END { print n + 0 }'
}

raw_empty() { [ -z "$(ls -A "$raw")" ]; }

# waits up to 10 s for background job PID to end (a signal it swallowed
# must fail the check, not hang the test), then SIGKILLs it; its exit
# status in $status
wait_status() {
	for _ in $(seq 200); do
		[ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ] && break
		sleep 0.05
	done
	kill -9 "$1" 2>/dev/null
	wait "$1"
	status=$?
}

# waits up to 5 s for the raw directory to be emptied (by the guard)
raw_emptied() {
	for _ in $(seq 100); do raw_empty && return 0; sleep 0.05; done
	return 1
}

# --- the program SIGKILLed after a known number of ops: all of them kept
for n in 1 777 $((RANDOM * 2 + 1)); do
	rm -f "$work/pid"
	"$amptrace" run -q --raw-dir "$raw" -o "$work/k.json" -- \
		"$prog" hang "$n" "$work/pid" 2>"$work/err" &
	amp=$!
	pids+=("$amp")
	if wait_line "$work/pid"; then
		kill -9 "$(cat "$work/pid")"
	fi
	wait "$amp"
	status=$?
	check "program killed after $n ops: amptrace exits 137 ($status)" \
		[ "$status" -eq 137 ]
	check "... and says it was killed by SIGKILL" \
		grep -q "was killed by SIGKILL" "$work/err"
	check "... the trace keeps all $n relu ops ($(relu_count "$work/k.json"))" \
		[ "$(relu_count "$work/k.json")" -eq "$n" ]
	check "... and has a process-died finding" \
		grep -q '"kind":"process-died"' "$work/k.json"
	check "... and no raw files are left" raw_empty
done

# --- the program SIGKILLed in a step recorded as aggregates (--steps
# none: its first; by default a later one): the trace has the process,
# its process-died finding and the ops of the step cut short, and run
# says nothing about libamp, which the program is linked to
process_count() { grep -c '"name":"process_name"' "$1"; }
# OP's count in amp.aggregate rows cut short, and in all of them
aggregated() { # TRACE OP
	python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
rows = [(e["args"].get("cut_short", False), r[6])
        for e in t["traceEvents"] if e.get("cat") == "amp.aggregate"
        for r in e["args"]["ops"] if r[0] == sys.argv[2]]
print(sum(n for cut, n in rows if cut), sum(n for cut, n in rows))' "$1" "$2"
}
killed_in() { # NAME, trace_prog's arguments (its pid file last)...
	local name=$1
	shift
	rm -f "$work/pid"
	"$amptrace" run --raw-dir "$raw" -o "$work/$name.json" "$@" \
		2>"$work/$name.err" &
	local amp=$!
	pids+=("$amp")
	wait_line "$work/pid" && kill -9 "$(cat "$work/pid")"
	wait "$amp"
	status=$?
}
killed_in none --steps none -- "$prog" hang 50 "$work/pid"
check "--steps none, killed in its first step: amptrace exits 137 ($status)" \
	[ "$status" -eq 137 ]
check "... the trace has the process ($(process_count "$work/none.json"))" \
	[ "$(process_count "$work/none.json")" -eq 1 ]
check "... its thread" grep -q '"name":"thread_name"' "$work/none.json"
check "... and its process-died finding" \
	grep -q '"kind":"process-died"' "$work/none.json"
check "... run does not ask whether it is linked to libamp" \
	eval '! grep -q "linked to libamp (dynamically)?" "$work/none.err"'
check "... nor says it ran no op" eval '! grep -q "no ops recorded" "$work/none.err"'
check "... the step's 50 relu ops are in it, cut short ($(aggregated "$work/none.json" relu))" \
	[ "$(aggregated "$work/none.json" relu)" = "50 50" ]
"$amptrace" summary "$work/none.json" >"$work/none.summary" 2>&1
check "... summary says step 0 was cut short" \
	eval 'tr "\n" " " <"$work/none.summary" | tr -s " " |
	      grep -q "step 0 cut short (its process or its trace ended in it"'
killed_in blocked --steps none -- "$prog" threads-hang 4 1000 "$work/pid"
check "4 threads blocked on a lock after 1000 relu each, killed: all 4000 in the trace ($(aggregated "$work/blocked.json" relu))" \
	[ "$(aggregated "$work/blocked.json" relu)" = "4000 4000" ]
# a clean exit is not a kill: threads still counting when the program
# exits end their step as the exiting thread does, whole
"$amptrace" run -q --raw-dir "$raw" --steps none -o "$work/live.json" -- \
	"$prog" threads-exit 3 100 2>"$work/live.err"
status=$?
check "3 threads alive (blocked) at a clean exit: exit 0 ($status), their 300 relu in the trace, none cut short ($(aggregated "$work/live.json" relu))" \
	eval '[ "$status" -eq 0 ] &&
	      [ "$(aggregated "$work/live.json" relu)" = "0 300" ]'
"$amptrace" summary "$work/live.json" >"$work/live.summary" 2>&1
check "... summary says no step was cut short, nor a process died" \
	eval '! tr "\n" " " <"$work/live.summary" | tr -s " " |
	      grep -q "cut short\|process-died"'
check "... and no aggregates file is left" raw_empty
# fork() in a step counted as aggregates: the child counts its own in its
# own file, the parent's file is neither counted into nor removed by it;
# the child killed, then the parent: each its step cut short
rm -f "$work/pid" "$work/pid.parent"
"$amptrace" run -q --raw-dir "$raw" --steps none -o "$work/fork.json" -- \
	"$prog" fork-hang 1000 "$work/pid" 2>"$work/fork.err" &
amp=$!
pids+=("$amp")
wait_line "$work/pid" && kill -9 "$(cat "$work/pid")"
wait_line "$work/pid.parent" && kill -9 "$(cat "$work/pid.parent")"
wait "$amp"
status=$?
# relu counted cut short, per process (most first)
relu_per_process() {
	python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
n = {}
for e in t["traceEvents"]:
    if e.get("cat") == "amp.aggregate" and e["args"].get("cut_short"):
        n[e["pid"]] = n.get(e["pid"], 0) + sum(r[6] for r in e["args"]["ops"] if r[0] == "relu")
print(*sorted(n.values(), reverse=True))' "$1"
}
check "fork in a folded step, child then parent killed: exit 137 ($status), the parent's 2000 relu and the child's 1000 cut short ($(relu_per_process "$work/fork.json"))" \
	eval '[ "$status" -eq 137 ] &&
	      [ "$(relu_per_process "$work/fork.json")" = "2000 1000" ]'
check "... and no aggregates file is left" raw_empty
# exec() in a step counted as aggregates: the image it replaces ended
# there, whole, neither killed nor exited with the last image's status;
# the last one killed (or exiting 3) ends as it did
image_ends() { # TRACE: each image's relu (/cut: cut short), each image's
	# first argument and how it ended, process-died findings
	python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
events = t["traceEvents"]
print(*sorted("%d%s" % (sum(r[6] for r in e["args"]["ops"] if r[0] == "relu"),
                        "/cut" if e["args"].get("cut_short") else "")
              for e in events if e.get("cat") == "amp.aggregate"),
      *sorted("%s:%s%s" % (p["argv"][1], p["status"],
                           p.get("exit_code", p.get("signal_name", "")))
              for p in t["amptraceEnd"]["processes"]),
      sum(e.get("args", {}).get("kind") == "process-died" for e in events))' "$1"
}
killed_in exec --steps none -- "$prog" exec 100 hang 30 "$work/pid"
check "exec() in a folded step, the new image killed: exit 137 ($status); the first image's 100 relu whole, its status exec; the second's 30 cut short, killed; one process-died ($(image_ends "$work/exec.json"))" \
	eval '[ "$status" -eq 137 ] &&
	      [ "$(image_ends "$work/exec.json")" = "100 30/cut exec:exec hang:signaledSIGKILL 1" ]'
"$amptrace" run -q --raw-dir "$raw" --steps none -o "$work/exec-exit.json" -- \
	"$prog" exec 100 ops 30 3 >/dev/null 2>&1
status=$?
check "... the new image exits 3: exit 3 ($status); the first image's status exec, not exit 3, none cut short, no process-died ($(image_ends "$work/exec-exit.json"))" \
	eval '[ "$status" -eq 3 ] &&
	      [ "$(image_ends "$work/exec-exit.json")" = "100 30 exec:exec ops:exited3 0" ]'
check "... and no aggregates file is left" raw_empty
killed_in later -- "$prog" mlp-hang 25 "$work/pid"
check "killed in step 25, recorded as aggregates: its linear and relu are in the trace ($(aggregated "$work/later.json" relu))" \
	eval '[ "$(aggregated "$work/later.json" linear)" = "1 11" ] &&
	      [ "$(aggregated "$work/later.json" relu)" = "1 6" ]'
"$amptrace" summary "$work/later.json" >"$work/later.summary" 2>&1
check "... summary: 20 steps in full detail, 6 as aggregates, step 25 cut short" \
	eval 'tr "\n" " " <"$work/later.summary" | tr -s " " |
	      grep -q "steps: 26 (marked by autocast region); 20 in full detail, 6 as per-step aggregates; step 25 cut short"'
# check's per-step rules and the step cut short: each whole step has 5
# f32->bf16 casts, step 25 had 3 when it was killed, which says nothing of
# a lower bound (not judged, and said); a whole step still fails one
joined() { tr "\n" " " <"$1" | tr -s " "; }
# `amptrace check TRACE` of the one rule RULE: its exit status in $status,
# its text, lines joined, in $checked
check_rule() {
	printf '%s\n' "$2" >"$work/rule"
	COLUMNS=20 "$amptrace" check "$1" "$work/rule" >"$work/rule.out" 2>&1
	status=$?
	checked=$(joined "$work/rule.out")
}
# `amptrace summary` of $work/NAME.json, its lines joined, in $summarized
summarize() {
	"$amptrace" summary "$work/$1.json" >"$work/$1.summary" 2>&1
	summarized=$(joined "$work/$1.summary")
}
check_rule "$work/later.json" 'casts f32->bf16 >= 5 per step'
check "... check: 'casts f32->bf16 >= 5 per step' holds ($status): step 25, cut short with 3, is not judged, and check says so" \
	eval '[ "$status" -eq 0 ] && echo "$checked" |
	      grep -q "over 25 steps, marked by autocast region; step 25 cut short (its process or its trace ended in it): 3 so far, not judged"'
check_rule "$work/later.json" 'casts f32->bf16 >= 6 per step'
check "... '>= 6 per step' fails ($status) on the whole steps, step 25 still not judged" \
	eval '[ "$status" -eq 1 ] && echo "$checked" |
	      grep -q "step 0 has 5; 25 of 25 steps fail (steps marked by autocast region); step 25 cut short (its process or its trace ended in it): 3 so far, not judged"'
# '!= 2 per step': step 25, with 3 so far, can never have 2: judged, and
# holds; '!= 4 per step' could still fail there: not judged
check_rule "$work/later.json" 'casts f32->bf16 != 2 per step'
check "... '!= 2 per step' holds ($status), step 25 judged (3 so far, past 2)" \
	eval '[ "$status" -eq 0 ] && ! echo "$checked" | grep -q "not judged"'
check_rule "$work/later.json" 'casts f32->bf16 != 4 per step'
check "... '!= 4 per step' holds ($status), step 25 not judged" \
	eval '[ "$status" -eq 0 ] && echo "$checked" |
	      grep -q "step 25 cut short (its process or its trace ended in it): 3 so far, not judged"'
# the same in a step recorded in full detail: step 5 is cut short too
killed_in early -- "$prog" mlp-hang 5 "$work/pid"
"$amptrace" summary "$work/early.json" >"$work/early.summary" 2>&1
check "killed in step 5, in full detail: summary says step 5 was cut short" \
	eval 'joined "$work/early.summary" |
	      grep -q "steps: 6 (marked by autocast region); step 5 cut short (its process or its trace ended in it"'
check_rule "$work/early.json" 'casts f32->bf16 >= 5 per step'
check "... check: '>= 5 per step' holds ($status), step 5 not judged" \
	eval '[ "$status" -eq 0 ] && echo "$checked" |
	      grep -q "step 5 cut short (its process or its trace ended in it): 3 so far, not judged"'
"$amptrace" merge "$work/none.json" "$work/later.json" -o "$work/both.json" 2>/dev/null
"$amptrace" summary "$work/both.json" >"$work/both.summary" 2>&1
"$amptrace" summary --json "$work/both.json" >"$work/both.sjson" 2>&1
check "... merged with the run killed in step 0: summary names both steps cut short (--json too)" \
	eval 'tr "\n" " " <"$work/both.summary" | tr -s " " |
	      grep -q "steps 0 and 25 cut short (a process or its trace ended in each" &&
	      python3 -c "import json, sys
sys.exit(json.load(open(sys.argv[1]))[\"steps\"][\"cut_short\"] != [0, 25])" "$work/both.sjson"'
"$amptrace" run -q --raw-dir "$raw" -o "$work/whole.json" -- "$prog" mlp 30
"$amptrace" diff "$work/whole.json" "$work/later.json" >"$work/diff" 2>&1
check "... diff against a whole run leaves step 25 out, cut short" \
	grep -q "aggregated steps compared: 5 (20 to 24); not compared, in one trace only: 4 in base, 0 in new; not compared, cut short (its process or its trace ended in it): 1" \
	"$work/diff"
check "... and no aggregates file is left" raw_empty
# --- a trace that stops mid-step, with no process-died: amptrace itself
# SIGKILLed, or a trace read while it is still written.  Its last step is
# cut short as a dead process's is: a whole trace of 8 steps (5 f32->bf16
# casts each) cut, bytes, half-way through step 7's fifth cast (4 so far,
# no trailer); and cut just after step 6's end, before step 7's training
"$amptrace" run -q --raw-dir "$raw" -o "$work/eight.json" -- "$prog" mlp 8
cut_trace() { # TRACE OUT mid|first|between|ended
	python3 -c 'import sys
source, out, where = sys.argv[1:4]
lines = open(source, "rb").read().split(b"\n")
last_end = max(i for i, l in enumerate(lines) if b"\"cat\":\"amp.step\"" in l)
if where == "first":  # in step 0, before any amp.step
    last_end = 0
if where == "between":
    keep = last_end + 1
    partial = lines[keep][:10]
elif where == "ended":
    keep = max(i for i, l in enumerate(lines) if b"\"process_labels\"" in l) + 1
    partial = lines[keep][:10]
else:
    casts = [i for i in range(last_end + 1, len(lines))
             if lines[i].startswith(b"{\"name\":\"cast f32->bf16\"")]
    keep = casts[4]
    partial = lines[keep][:len(lines[keep]) // 2]
open(out, "wb").write(b"\n".join(lines[:keep]) + b"\n" + partial)' "$@"
}
cut_trace "$work/eight.json" "$work/mid.json" mid
cut_trace "$work/eight.json" "$work/between.json" between
cut_trace "$work/eight.json" "$work/first.json" first
summarize mid
check "a trace cut mid step 7 (no trailer, no process-died): summary says step 7 was cut short" \
	eval 'echo "$summarized" |
	      grep -q "steps: 8 (marked by autocast region); step 7 cut short (its process or its trace ended in it: counted up to then)"'
check_rule "$work/mid.json" 'casts f32->bf16 >= 5 per step'
check "... check: '>= 5 per step' holds ($status), step 7 (4 so far) not judged, and said" \
	eval '[ "$status" -eq 0 ] && echo "$checked" |
	      grep -q "over 7 steps, marked by autocast region; step 7 cut short (its process or its trace ended in it): 4 so far, not judged"'
# ... in step 0, before the trace has any amp.step: the same (the steps
# are counted by regions then); its one step not judged, the rule judged
# no step, which is no pass (as when every step is aggregated and silent)
summarize first
check_rule "$work/first.json" 'casts f32->bf16 >= 5 per step'
check "a trace cut mid step 0, before any amp.step: step 0 cut short, '>= 5 per step' fails ($status): no step judged, step 0 not judged, said" \
	eval 'echo "$summarized" |
	      grep -q "steps: 1 (marked by autocast region); step 0 cut short (its process or its trace ended in it" &&
	      [ "$status" -eq 1 ] && echo "$checked" |
	      grep -q "no step judged; step 0 cut short (its process or its trace ended in it): 4 so far, not judged"'
check_rule "$work/first.json" 'casts f32->bf16 <= 3 per step'
check "... '<= 3 per step' fails ($status) there, judged: 4 so far is past 3" \
	eval '[ "$status" -eq 1 ] && echo "$checked" | grep -q "step 0 (cut short" &&
	      ! echo "$checked" | grep -q "not judged"'
check_rule "$work/mid.json" 'casts f32->bf16 <= 3 per step'
check "... '<= 3 per step' fails ($status), step 7 judged: 4 so far is past 3" \
	eval '[ "$status" -eq 1 ] && echo "$checked" |
	      grep -q "step 0 has 5; 8 of 8 steps fail" &&
	      ! echo "$checked" | grep -q "not judged"'
summarize between
check_rule "$work/between.json" 'casts f32->bf16 >= 5 per step'
check "a trace cut between steps 6 and 7: 7 steps, none cut short; '>= 5 per step' holds over 7 ($status)" \
	eval 'echo "$summarized" |
	      grep -q "steps: 7 (marked by autocast region)" &&
	      ! echo "$summarized" | grep -q "cut short" &&
	      [ "$status" -eq 0 ] && echo "$checked" | grep -q "over 7 steps" &&
	      ! echo "$checked" | grep -q "cut short"'
summarize eight
check_rule "$work/eight.json" 'casts f32->bf16 >= 5 per step'
check "... the whole trace: 8 steps, none cut short, '>= 5 per step' holds over 8 ($status)" \
	eval 'echo "$summarized" |
	      grep -q "steps: 8 (marked by autocast region)" &&
	      ! echo "$summarized" | grep -q "cut short" &&
	      [ "$status" -eq 0 ] && echo "$checked" | grep -q "over 8 steps"'
# the same cut after step 22's end in a run of 24 steps, 20 to 23 counted
# as aggregates: step 22's rows come after its end and the trace stops
# before them, so step 22 is cut short with 0 counted (before: read whole,
# and '>= 5 per step' failed there with 0)
"$amptrace" run -q --raw-dir "$raw" -o "$work/folded.json" -- "$prog" mlp 24
cut_trace "$work/folded.json" "$work/folded-cut.json" between
summarize folded-cut
check_rule "$work/folded-cut.json" 'casts f32->bf16 >= 5 per step'
check "a trace of aggregated steps cut after step 22's end, before its rows: step 22 cut short, '>= 5 per step' holds ($status), step 22 not judged" \
	eval 'echo "$summarized" |
	      grep -q "20 in full detail, 3 as per-step aggregates; step 22 cut short" &&
	      [ "$status" -eq 0 ] && echo "$checked" |
	      grep -q "step 22 cut short (its process or its trace ended in it): 0 so far, not judged"'
# the same run cut after its process's end label, its record whole (amptrace
# killed before the trailer): no step cut short, '>= 6 per step' judged in
# all 24 (before: step 22's rows were taken as lost, it cut short); its
# final step 23, with rows and no step event, is aggregated as run kept it
cut_trace "$work/folded.json" "$work/folded-ended.json" ended
summarize folded-ended
check_rule "$work/folded-ended.json" 'casts f32->bf16 >= 6 per step'
check "... cut after its process ended (its label there, no trailer): no step cut short, '>= 6 per step' fails in all 24 ($status)" \
	eval 'echo "$summarized" |
	      grep -q "20 in full detail, 4 as per-step aggregates" &&
	      ! echo "$summarized" | grep -q "cut short" &&
	      [ "$status" -eq 1 ] && echo "$checked" | grep -q "24 of 24 steps fail" &&
	      ! echo "$checked" | grep -q "cut short"'
# merged with a whole run of 6 steps: the truncated input's process ends
# in its step 7, cut short; the whole one's final step, 5, is whole
"$amptrace" run -q --raw-dir "$raw" -o "$work/six.json" -- "$prog" mlp 6
"$amptrace" merge "$work/six.json" "$work/mid.json" -o "$work/merged-mid.json" 2>/dev/null
"$amptrace" summary --json "$work/merged-mid.json" >"$work/merged-mid.sjson" 2>&1
check_rule "$work/merged-mid.json" 'casts f32->bf16 >= 5 per step'
check "merged with a whole run of 6 steps: step 7 (the truncated input's) cut short, not step 5 (the whole one's); '>= 5 per step' holds ($status)" \
	eval 'python3 -c "import json, sys
sys.exit(json.load(open(sys.argv[1]))[\"steps\"][\"cut_short\"] != [7])" "$work/merged-mid.sjson" &&
	      [ "$status" -eq 0 ] && echo "$checked" |
	      grep -q "step 7 cut short (its process or its trace ended in it): 4 so far, not judged"'
# diff reads the same steps cut short: a step either trace ended in is
# not compared, in full detail (its ops and casts) or aggregated (before:
# step 7's missing ops were 29 changes, and the aggregated step 22 whose
# rows were lost was 'in one trace only')
# `amptrace diff [--json] BASE NEW`: its exit status in $status, its text
# (lines joined) in $diffed
diff_traces() {
	"$amptrace" diff "$@" >"$work/diffed" 2>/dev/null
	status=$?
	diffed=$(joined "$work/diffed")
}
# a key of diff --json's output, as JSON, keys sorted
diffed_key() { # KEY...
	python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v[k]
print(json.dumps(v, sort_keys=True))' "$work/diffed" "$@"
}
diff_traces "$work/eight.json" "$work/mid.json"
check "diff of the whole 8 steps and the trace cut mid step 7: no change ($status), step 7 not compared, and said" \
	eval '[ "$status" -eq 0 ] && echo "$diffed" |
	      grep -q "ops not compared, cut short (its process or its trace ended in it): 28 in base, 2 in new (step 7)" &&
	      echo "$diffed" | grep -q "no change in cast behaviour"'
diff_traces "$work/mid.json" "$work/eight.json"
check "... the cut trace as base: no change ($status), 2 in base, 28 in new" \
	eval '[ "$status" -eq 0 ] && echo "$diffed" |
	      grep -q "cut short (its process or its trace ended in it): 2 in base, 28 in new (step 7)"'
diff_traces --json "$work/eight.json" "$work/mid.json"
check "... --json: steps.cut_short [7], ops.cut_short 28 and 2, unchanged ($status)" \
	eval '[ "$status" -eq 0 ] && [ "$(diffed_key steps cut_short)" = "[7]" ] &&
	      [ "$(diffed_key ops cut_short)" = "{\"base\": 28, \"new\": 2}" ] &&
	      [ "$(diffed_key changed)" = false ]'
diff_traces "$work/first.json" "$work/mid.json"
check "... cut mid step 0 against cut mid step 7: both steps not compared, worded as summary words several ($status)" \
	eval 'echo "$diffed" |
	      grep -q "ops not compared, cut short (a process or its trace ended in each): [0-9]* in base, [0-9]* in new (steps 0 and 7)"'
"$amptrace" merge "$work/six.json" "$work/eight.json" -o "$work/merged-eight.json" 2>/dev/null
diff_traces "$work/merged-eight.json" "$work/merged-mid.json"
check "... merged, the truncated input's step 7 (amptraceEnd's inputs): no change ($status), step 7 not compared" \
	eval '[ "$status" -eq 0 ] && echo "$diffed" |
	      grep -q "ops not compared, cut short (its process or its trace ended in it): 28 in base, 2 in new (step 7)"'
diff_traces --json "$work/folded.json" "$work/folded-cut.json"
check "... the aggregated step 22 whose rows were lost: not compared, cut short (steps.cut_short [22]); 23 in base only; 20 and 21 compared ($status)" \
	eval '[ "$status" -eq 0 ] && [ "$(diffed_key steps cut_short)" = "[22]" ] &&
	      [ "$(diffed_key aggregated_steps)" = "{\"base_only\": 1, \"compared\": 2, \"cut_short\": 1, \"first\": 20, \"last\": 21, \"new_only\": 0}" ]'
# diff streams its inputs and summary reads them whole: one steps model
# (trace_steps_find_more), so every trace above, killed, truncated or
# merged, diffed against itself leaves out the steps summary says were
# cut short, no more, no fewer
same_cut_short() {
	for trace in "$work"/*.json; do
		"$amptrace" summary --json "$trace" >"$work/cut.sjson" 2>/dev/null ||
			continue
		"$amptrace" diff --json "$trace" "$trace" >"$work/cut.djson" 2>/dev/null
		python3 -c 'import json, sys
summary = json.load(open(sys.argv[1])).get("steps", {}).get("cut_short", [])
diffed = json.load(open(sys.argv[2]))["steps"]["cut_short"]
print(len(summary))
sys.exit(summary != diffed)' "$work/cut.sjson" "$work/cut.djson" \
			>"$work/cut.count" || {
			echo "# $(basename "$trace"): summary and diff cut short differ"
			return 1
		}
		[ "$(cat "$work/cut.count")" -eq 0 ] || cut=$((cut + 1))
	done
	echo "# $cut traces with a step cut short"
	[ "$cut" -ge 3 ]
}
cut=0
check "each trace diffed against itself leaves out the steps summary says were cut short" \
	same_cut_short
check "... and no aggregates file is left" raw_empty
killed_in nothing --steps none -- "$prog" hang 0 "$work/pid"
check "killed before its first op: the trace has the process, process-died" \
	eval '[ "$(process_count "$work/nothing.json")" -eq 1 ] &&
	      grep -q "\"kind\":\"process-died\"" "$work/nothing.json"'
check "... run says it is linked to libamp but ran no op" \
	grep -q "trace_prog is linked to libamp (its process was recorded) but ran no op before it ended" \
	"$work/nothing.err"
summarize nothing
check_rule "$work/nothing.json" 'casts total <= 3 per step'
check "... it ran no step: summary says 0, a per-step rule judges none" \
	eval 'echo "$summarized" | grep -qF "steps: 0 (no op ran)" &&
	      echo "$checked" | grep -qF "(no step: no op ran)"'
rm -f "$work/pid"
"$amptrace" run --raw-dir "$raw" -o "$work/sh.json" -- /bin/sh -c \
	'echo $$ >"$1.tmp"; mv "$1.tmp" "$1"; kill -9 $$' sh "$work/pid" \
	2>"$work/sh.err"
status=$?
check "a program not linked to libamp, killed: exit 137 ($status), no process" \
	eval '[ "$status" -eq 137 ] && [ "$(process_count "$work/sh.json")" -eq 0 ]'
check "... and run asks whether it is linked to libamp" \
	grep -q "no ops recorded: is /bin/sh linked to libamp (dynamically)?" \
	"$work/sh.err"
check "... and no raw files are left" raw_empty

# --- the program SIGKILLed at random moments while it records
for i in 1 2 3 4; do
	"$amptrace" run -q --raw-dir "$raw" -o "$work/r.json" -- \
		"$prog" threads 2 2000000 >/dev/null 2>"$work/err" &
	amp=$!
	pids+=("$amp")
	sleep "$(printf 0.%02d $((RANDOM % 20 + 5)))"
	kill -9 "$(pgrep -P "$amp" -x trace_prog)" 2>/dev/null
	wait "$amp"
	status=$?
	"$amptrace" summary "$work/r.json" >"$work/summary" 2>&1
	loaded=$?
	check "random kill $i: amptrace exits 137 ($status)" [ "$status" -eq 137 ]
	check "... the trace loads (summary exit $loaded)" [ "$loaded" -eq 0 ]
	check "... with events ($(relu_count "$work/r.json") relu) and process-died" \
		grep -q "process-died" "$work/summary"
	check "... and no raw files are left" raw_empty
done

# --- amptrace SIGKILLed: the guard removes the raw directory, the program
# runs on, the trace is cut but loads
rm -f "$work/pid"
"$amptrace" run -q --raw-dir "$raw" -o "$work/a.json" -- \
	"$prog" hang 500 "$work/pid" 2>/dev/null &
amp=$!
pids+=("$amp")
wait_line "$work/pid"
child=$(cat "$work/pid")
pids+=("$child")
# amptrace makes the trace when its converter first sees the process (the
# file's name depends on the process's rank): killed before that, there
# is no trace to load
made=1
for _ in $(seq 200); do
	grep -q '"process_name"' "$work/a.json" 2>/dev/null && made=0 && break
	sleep 0.05
done
check "amptrace made the trace within 10 s" [ "$made" -eq 0 ]
kill -9 "$amp"
wait "$amp" 2>/dev/null
check "amptrace SIGKILLed: its raw directory goes away" raw_emptied
check "... the program runs on" kill -0 "$child"
"$amptrace" summary "$work/a.json" >"$work/summary" 2>&1
status=$?
check "... the cut trace loads (summary exit $status) and says so" \
	eval '[ "$status" -eq 0 ] && grep -q truncated "$work/summary"'
kill -9 "$child"

# --- amptrace SIGTERMed: passed on to the program, the trace is finished
rm -f "$work/pid"
"$amptrace" run -q --raw-dir "$raw" -o "$work/t.json" -- \
	"$prog" hang 300 "$work/pid" 2>"$work/err" &
amp=$!
pids+=("$amp")
wait_line "$work/pid"
kill -TERM "$amp"
wait "$amp"
status=$?
check "amptrace SIGTERMed: exits 143 ($status)" [ "$status" -eq 143 ]
check "... the program was killed by SIGTERM" \
	grep -q "was killed by SIGTERM" "$work/err"
check "... the trace is whole (300 relu ops, a trailer)" eval \
	'[ "$(relu_count "$work/t.json")" -eq 300 ] && grep -q "\"complete\":true" "$work/t.json"'
check "... and no raw files are left" raw_empty

# --- a program that closes every descriptor it did not open (closefrom,
# os.closerange, daemons) and opens a file of its own: the recorder keeps
# no descriptor the file could get, so it is never extended or mapped
"$amptrace" run -q --raw-dir "$raw" -o "$work/fd.json" -- \
	"$prog" closefds 60000 "$work/own.txt" >"$work/out" 2>"$work/err"
status=$?
check "closefds: the program exits 0, as untraced ($status)" [ "$status" -eq 0 ]
check "... its own file holds its 2 bytes ($(stat -c %s "$work/own.txt"))" \
	[ "$(stat -c %s "$work/own.txt")" -eq 2 ]
check "... and the trace has every op after the close ($(relu_count "$work/fd.json"))" \
	[ "$(relu_count "$work/fd.json")" -eq 60001 ]
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	(cd "$work" && "$amptrace" run -q --raw-dir "$raw" -o py.json -- \
		/usr/bin/python3 -c 'import os, torch
torch.ones(1) + 1
os.closerange(3, 1024)
f = open("d.txt", "w"); f.write("hi"); f.flush()
[torch.ones(64) + 1 for _ in range(20000)]
f.close(); print(os.path.getsize("d.txt"))' >"$work/out" 2>"$work/err")
	status=$?
	check "os.closerange under torch: exit 0 ($status), the file's size 2 ($(cat "$work/out"))" \
		eval '[ "$status" -eq 0 ] && [ "$(cat "$work/out")" = 2 ]'
else
	echo "# skipped: /usr/bin/python3 has no torch (the closerange repro)"
fi

# with_signals 'IGNORED' 'BLOCKED' CMD...: execs CMD (in a subshell: `( )` or `&`) with exactly these
# signals ignored and blocked (a script's background job inherits SIGINT
# and SIGQUIT ignored, and its shell cannot reset them)
with_signals() {
	exec /usr/bin/python3 -c 'import os, signal, sys
ignored, blocked = ([getattr(signal, "SIG" + n) for n in l.split()] for l in sys.argv[1:3])
for s in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP}:
    try:
        signal.signal(s, signal.SIG_IGN if s in ignored else signal.SIG_DFL)
    except (OSError, ValueError):
        pass
signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
os.execvp(sys.argv[3], sys.argv[3:])' "$@"
}

# --- signals sent to amptrace alone (kill, Popen.send_signal, a container's
# stop signal) are passed on to the program, which decides; the trace is
# finished all the same
for sig in INT QUIT HUP; do
	rm -f "$work/pid"
	with_signals '' '' "$amptrace" run -q --raw-dir "$raw" -o "$work/s.json" -- \
		"$prog" hang 20 "$work/pid" 2>"$work/err" &
	amp=$!
	pids+=("$amp")
	wait_line "$work/pid"
	pids+=("$(cat "$work/pid")")
	kill -"$sig" "$amp"
	wait_status "$amp"
	check "SIG$sig sent to amptrace reaches the program: exit $((128 + $(kill -l "$sig"))) ($status)" \
		[ "$status" -eq $((128 + $(kill -l "$sig"))) ]
	check "... and the trace is whole (20 relu ops, a trailer)" eval \
		'[ "$(relu_count "$work/s.json")" -eq 20 ] && grep -q "\"complete\":true" "$work/s.json"'
done

# --- `timeout` (without --foreground) signals amptrace and then its whole
# process group, the program with it, then sends both SIGCONT: the
# program gets SIGTERM once, as untraced (it got two, and a handler's
# cleanup was cut by the second); with --foreground only amptrace is
# signalled, and passes it on
sigterms() { cut -d' ' -f1 "$work/count" 2>/dev/null; }
for mode in "" --foreground; do
	rm -f "$work/count"
	timeout $mode -s TERM 2 "$amptrace" run -q --raw-dir "$raw" -o "$work/c.json" -- \
		"$prog" sigterms 3 "$work/count" >/dev/null 2>&1
	check "timeout${mode:+ $mode}: the program gets SIGTERM once ($(sigterms))" \
		[ "$(sigterms)" = 1 ]
done
# timeout's order, with time between the signals so that each is taken
# before the next (with none, two may merge and hide a second)
cat >"$work/timeout.py" <<'PY'
import os, signal, subprocess, sys, time
open("/proc/self/comm", "w").write("timeout")  # amptrace trusts timeout alone
try:
    os.setpgid(0, 0)  # a group of its own, as timeout leads
except PermissionError:
    pass  # a session leader leads its group already
child = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE)
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # its group's signal
child.stdout.readline()  # ready
os.kill(child.pid, signal.SIGTERM)
time.sleep(0.05)
os.killpg(0, signal.SIGTERM)
os.kill(child.pid, signal.SIGCONT)
os.killpg(0, signal.SIGCONT)
sys.exit(child.wait())
PY
rm -f "$work/count"
/usr/bin/python3 "$work/timeout.py" "$amptrace" run -q --raw-dir "$raw" -o "$work/c.json" -- \
	"$prog" sigterms 3 "$work/count" 2>/dev/null
check "timeout's signals 50 ms apart: the program gets SIGTERM once ($(sigterms))" \
	[ "$(sigterms)" = 1 ]

# --- nohup: amptrace inherited SIGHUP ignored, so does the program, and
# amptrace passes on nothing it would not have received
rm -f "$work/pid"
with_signals HUP '' "$amptrace" run -q --raw-dir "$raw" -o "$work/h.json" -- \
	"$prog" hang 5 "$work/pid" 2>/dev/null &
amp=$!
pids+=("$amp")
wait_line "$work/pid"
pids+=("$(cat "$work/pid")")
kill -HUP "$amp"
sleep 0.3
check "under nohup, SIGHUP to amptrace leaves the program running" \
	kill -0 "$(cat "$work/pid")"
kill -TERM "$amp"
wait_status "$amp"
check "... which SIGTERM then ends: exit 143 ($status)" [ "$status" -eq 143 ]

# --- the program inherits amptrace's signal mask and dispositions exactly
# (a blocked SIGUSR1, an ignored SIGHUP and SIGCHLD), and amptrace keeps
# the exit status although it inherited SIGCHLD ignored
launch() { (with_signals 'HUP CHLD' USR1 "$@"); }
launch grep -E '^Sig(Blk|Ign)' /proc/self/status >"$work/plain.sig"
launch "$amptrace" run -q --raw-dir "$raw" -o "$work/g.json" -- \
	grep -E '^Sig(Blk|Ign)' /proc/self/status >"$work/traced.sig" 2>/dev/null
check "the program's signal mask and ignored set are amptrace's own" \
	cmp -s "$work/plain.sig" "$work/traced.sig"
launch "$amptrace" run -q --raw-dir "$raw" -o "$work/g.json" -- \
	"$prog" ops 3 9 >/dev/null 2>&1
status=$?
check "SIGCHLD inherited ignored: the program's exit status 9 passes ($status)" \
	[ "$status" -eq 9 ]

# --- closed stdin, stdout or stderr: amptrace's own pipes and files never
# take their numbers (the guard kept the raw directory, the program found
# its stdin replaced); the program still finds them closed
for redirect in '<&-' '>&-' '2>&-'; do
	eval '"$amptrace" run -q --raw-dir "$raw" -o "$work/c.json" -- \
		"$prog" ops 30 >/dev/null '"$redirect"' 2>"$work/err"' 2>/dev/null
	status=$?
	check "$redirect: exit 0 ($status), all 30 relu ops recorded ($(relu_count "$work/c.json"))" \
		eval '[ "$status" -eq 0 ] && [ "$(relu_count "$work/c.json")" -eq 30 ]'
	eval 'sh -c "[ -e /proc/\$\$/fd/0 ] && [ -e /proc/\$\$/fd/1 ] && [ -e /proc/\$\$/fd/2 ]; echo \$?" '"$redirect"' >"$work/plain.fds" 2>/dev/null'
	eval '"$amptrace" run -q --raw-dir "$raw" -o "$work/c.json" -- sh -c "[ -e /proc/\$\$/fd/0 ] && [ -e /proc/\$\$/fd/1 ] && [ -e /proc/\$\$/fd/2 ]; echo \$?" '"$redirect"' >"$work/traced.fds" 2>/dev/null'
	check "... and the program finds it closed, as untraced" \
		cmp -s "$work/plain.fds" "$work/traced.fds"
done
check "... and no raw files are left" raw_empty

# --- children that end with _exit (fork + _exit, os.fork + os._exit), the
# normal end of a forked child, exited: no process-died; one that aborts
# still died
"$amptrace" run -q --raw-dir "$raw" -o "$work/x.json" -- \
	"$prog" fork-exit 5 4 >/dev/null 2>&1
status=$?
"$amptrace" summary "$work/x.json" >"$work/summary" 2>&1
check "4 children ending with _exit: exit 0 ($status), 5 processes, no process-died" \
	eval '[ "$status" -eq 0 ] && grep -q "5 processes" "$work/summary" && ! grep -q process-died "$work/summary"'
"$amptrace" run -q --raw-dir "$raw" -o "$work/x.json" -- \
	sh -c '"$1" abort 5; exit 0' sh "$prog" >/dev/null 2>&1
"$amptrace" summary "$work/x.json" >"$work/summary" 2>&1
check "... a child that aborts still has its process-died" \
	grep -q "process-died" "$work/summary"
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	"$amptrace" run -q --raw-dir "$raw" -o "$work/x.json" -- \
		/usr/bin/python3 -c 'import os, torch
torch.ones(2) + 1
for _ in range(3):
    if os.fork() == 0:
        torch.ones(2) * 2
        os._exit(0)
    os.wait()' >/dev/null 2>&1
	"$amptrace" summary "$work/x.json" >"$work/summary" 2>&1
	check "os.fork + os._exit under torch: 4 processes, no process-died" \
		eval 'grep -q "4 processes" "$work/summary" && ! grep -q process-died "$work/summary"'
fi

# --- amptrace and its guard killed together (a process-tree or cgroup
# kill): the raw directory stays, and the next run removes it; the guard
# is told apart by its name
rm -f "$work/pid"
"$amptrace" run -q --raw-dir "$raw" -o "$work/g.json" -- \
	"$prog" hang 5 "$work/pid" 2>/dev/null &
amp=$!
pids+=("$amp")
wait_line "$work/pid"
pids+=("$(cat "$work/pid")")
guard=$(pgrep -P "$amp" -x amptrace-guard)
check "the guard is named amptrace-guard (comm and argv[0])" eval \
	'[ -n "$guard" ] && tr "\0" "\n" <"/proc/$guard/cmdline" | head -1 | grep -qx amptrace-guard'
# the guard first: amptrace's end closes the guard's pipe, and a guard
# still alive for a moment after it removes the directory at once
kill -9 $guard "$amp"
wait "$amp" 2>/dev/null
# gone, or a zombie init has not reaped yet (dead all the same)
for _ in $(seq 200); do
	grep -q '^[^)]*) [ZX]' "/proc/$guard/stat" 2>/dev/null ||
		[ ! -e "/proc/$guard" ] && break
	sleep 0.05
done
check "... amptrace and its guard SIGKILLed together leave the raw directory" \
	eval '! raw_empty'
"$amptrace" run -q --raw-dir "$raw" -o "$work/g.json" -- "$prog" ops 1 \
	>/dev/null 2>&1
check "... which the next run removes" raw_empty
kill -9 "$(cat "$work/pid")"

# --- ulimit -f: the recorder's files stop growing (recording-stopped, not
# SIGXFSZ), the program runs on; amptrace's own trace says why it is cut
(ulimit -f 2048
 "$amptrace" run --raw-dir "$raw" -o "$work/u.json" -- "$prog" threads 1 200000 \
	>"$work/out" 2>"$work/err")
status=$?
check "ulimit -f: the program ran to its end" grep -q "threads done" "$work/out"
check "... amptrace exits 1 ($status): error writing the trace: File too large (ulimit -f)" \
	eval '[ "$status" -eq 1 ] && grep -q "error writing $work/u.json: File too large (the file size limit: ulimit -f)" "$work/err"'
check "... and says recording stopped at the file size limit" \
	grep -q "the raw files reached the file size limit (ulimit -f): recording stopped early" "$work/err"
check "... and no raw files are left" raw_empty

# --- where the trace cannot go
"$amptrace" run --raw-dir "$raw" -o /dev/full -- "$prog" ops 10 \
	>/dev/null 2>"$work/err"
status=$?
check "-o /dev/full: exit 1 ($status)" [ "$status" -eq 1 ]
check "... error writing /dev/full: No space left on device" \
	grep -q "error writing /dev/full: No space left on device" "$work/err"
check "... and the summary line says the trace was cut short" \
	grep -q -- "-> /dev/full (cut short: error writing it)" "$work/err"
"$amptrace" run --raw-dir "$raw" -o "$work/missing/x.json" -- "$prog" ops 10 \
	>/dev/null 2>"$work/err"
status=$?
check "-o into a missing directory: exit 2 ($status), nothing run" eval \
	'[ "$status" -eq 2 ] && grep -q "cannot write $work/missing/x.json" "$work/err"'
mkdir "$work/ro"
if [ "$(id -u)" -ne 0 ]; then
	chmod 555 "$work/ro"
	ro_ready=1
else # root writes through permissions: a read-only mount
	mount -t tmpfs -o ro,size=64k tmpfs "$work/ro" 2>/dev/null && ro_ready=1
fi
if [ "${ro_ready:-0}" -eq 1 ]; then
	"$amptrace" run --raw-dir "$raw" -o "$work/ro/x.json" -- "$prog" ops 10 \
		>/dev/null 2>"$work/err"
	status=$?
	check "-o into a read-only directory: exit 2 ($status)" eval \
		'[ "$status" -eq 2 ] && grep -q "cannot write $work/ro/x.json" "$work/err"'
else
	echo "# skipped: no read-only directory here (root without mount)"
fi
"$amptrace" run --raw-dir "$work/nowhere" -o "$work/x.json" -- "$prog" ops 10 \
	>/dev/null 2>"$work/err"
status=$?
check "--raw-dir missing: exit 2 ($status) naming it" eval \
	'[ "$status" -eq 2 ] && grep -q "raw directory $work/nowhere (--raw-dir) is not a writable directory" "$work/err"'
# --- priorities: the converter yields to the program, never the reverse
# (it lowers its priority just after the fork: the program looks later)
"$amptrace" run -q -o "$work/nice.json" -- /bin/sh -c \
	'sleep 0.5; echo "$(cut -d" " -f19 /proc/$PPID/stat) $(nice)"' \
	>"$work/nice" 2>/dev/null
read -r converter_nice program_nice <"$work/nice"
own_nice=$(nice)
wanted_nice=$((own_nice + 10 > 19 ? 19 : own_nice + 10))  # 19 is the floor
check "the converter runs 10 nicer than the program ($converter_nice)" \
	[ "${converter_nice:-x}" = "$wanted_nice" ]
check "... and the program at amptrace's own priority ($program_nice)" \
	[ "${program_nice:-x}" = "$own_nice" ]
check "no raw files are left by any run" raw_empty

exit $fail
