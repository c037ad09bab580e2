#!/usr/bin/env bash
# amptrace run from the outside: --help, its arguments, the program's
# output and exit status passing through, the trace written (again, through
# a link, with its mode and owner), programs that cannot run or die, the
# findings appended to the trace, and a program that records no op.
# (Kills and full disks: ../test_faults.sh, ../test_raw_full.sh.)
# Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

# ------------------------------------------------------------------ help
help_checks run
option_checks run

# ----------------------------------------------------------------- run
capture "$amptrace" run
check "run without a program: exit 2" status_is 2
capture "$amptrace" run -o
check "run -o without a file: exit 2" status_is 2
capture "$amptrace" run -q -o "$tmp/t.json" -- "$trace_prog" ops 3 5
check "run: program status passes through" status_is 5
check "run: program stdout passes through" out_has "trace_prog: stdout line"
check "run: the trace reads" loads "$tmp/t.json"
# a trace written again is made anew (not truncated), with the old mode
chmod 0640 "$tmp/t.json"
ln -s t.json "$tmp/link.json"
record "$tmp/t.json" "$trace_prog" ops 3 0
check "run: a trace written again keeps its mode ($(stat -c %a "$tmp/t.json"))" \
	[ "$(stat -c %a "$tmp/t.json")" = 640 ]
# ... and its owner, where amptrace may give it (root: sudo amptrace run)
if [ "$(id -u)" = 0 ]; then
	chown 4321:4321 "$tmp/t.json"
	record "$tmp/t.json" "$trace_prog" ops 3 0
	check "run (root): a trace written again keeps its owner ($(stat -c %u:%g "$tmp/t.json"))" \
		[ "$(stat -c %u:%g "$tmp/t.json")" = 4321:4321 ]
else
	count=$((count + 1))
	echo "ok - run: a trace written again keeps its owner # SKIP not root"
fi
record "$tmp/link.json" "$trace_prog" ops 3 0
check "run: -o through a symbolic link writes its target, the link stays" \
	eval '[ -L "$tmp/link.json" ] && "$amptrace" summary "$tmp/t.json" >/dev/null'
capture "$amptrace" run -o "$tmp/t.json" -- "$tmp/no-such-program"
check "run of a missing program: exit 127, as a shell" status_is 127
check "run of a missing program: says so" err_has "cannot run $tmp/no-such-program: No such file"
capture "$amptrace" run -o "$tmp/t.json" -- "$fx/good.json"
check "run of a file that is not executable: exit 126" status_is 126
capture "$amptrace" run -o "$tmp/t.json" -- sh -c 'kill -SEGV $$'
check "run of a program killed by SIGSEGV: exit 139" status_is 139
check "run of a program killed by SIGSEGV: says so" err_has "killed by SIGSEGV"
capture "$amptrace" run -o /proc/no/such/dir.json -- "$trace_prog" ops 3 0
check "run -o to an unwritable path: exit 2" status_is 2
check "run -o to an unwritable path: says so" err_has "cannot write /proc/no/such/dir.json"
# the graph and the page are written after PROG ends: a path that
# cannot be written is refused before a long run, not after it
capture "$amptrace" run -q -o "$tmp/t.json" --svg /proc/no/such/g.svg -- "$trace_prog" ops 3 0
check "run --svg into a missing directory: exit 2, PROG not run, says which" eval \
	'status_is 2 && ! out_has "trace_prog: stdout line" &&
	 err_has "cannot write /proc/no/such/g.svg (--svg): its directory /proc/no/such does not exist"'
capture "$amptrace" run -q -o "$tmp/t.json" --report "$tmp" -- "$trace_prog" ops 3 0
check "run --report naming a directory: exit 2, PROG not run, says so" eval \
	'status_is 2 && ! out_has "trace_prog: stdout line" && err_has "(--report): it is a directory"'
capture "$amptrace" run -q -o "$tmp/t.json" --report "$tmp/t.json/r.html" -- "$trace_prog" ops 3 0
check "run --report under a file: exit 2, says the file is not a directory" eval \
	'status_is 2 && err_has "$tmp/t.json is not a directory"'
capture "$amptrace" run -o "$tmp/t.json" --bogus -- "$trace_prog" ops 3 0
check "run: unknown option exits 2" status_is 2
# run's options end at PROG: PROG's own options are its, with or
# without `--`
capture "$amptrace" run -q -o "$tmp/prog-opts.json" "$trace_prog" ops 3 0 -o x
check "options after PROG are PROG's: run is not refused" test "$status" -ne 2
check "... and -o is run's own" loads "$tmp/prog-opts.json"
# an output never goes over the program's own files, nor over another
printf 'print(1)\n' >"$tmp/train.py"
capture "$amptrace" run -q -o "$tmp/train.py" -- /usr/bin/python3 "$tmp/train.py"
check "run -o naming the program's script: exit 2, the script kept" eval \
	'status_is 2 && err_has "is $tmp/train.py, an input" && [ "$(cat "$tmp/train.py")" = "print(1)" ]'
capture "$amptrace" run -q -o "$tmp/t.json" --report "$tmp/./train.py" -- /usr/bin/python3 "$tmp/train.py"
check "run --report naming the script another way: exit 2" status_is 2
capture "$amptrace" run -q -o "$tmp/new.json" --svg "$tmp/./out.svg" --report "$tmp/out.svg" -- "$trace_prog" ops 3 0
check "run --svg and --report naming one new file: exit 2, says so" eval \
	'status_is 2 && err_has "are one file" && [ ! -e "$tmp/new.json" ]'
echo old >"$tmp/out.html"
"$amptrace" run -q -o "$tmp/new.json" --svg - --report "$tmp/out.html" -- "$trace_prog" ops 3 0 >"$tmp/out.html" 2>"$tmp/err"
status=$?
check "run --svg - into the file --report names: exit 2" eval 'status_is 2 && grep -q "are one file" "$tmp/err"'
"$amptrace" run -q -o /dev/stdout --svg - -- "$trace_prog" ops 3 0 2>"$tmp/err" | cat >/dev/null
status=${PIPESTATUS[0]}
check "run -o /dev/stdout --svg - into one pipe: exit 2" eval 'status_is 2 && grep -q "are one file" "$tmp/err"'
capture "$amptrace" run -q -o "$tmp/null.json" --svg /dev/null -- "$trace_prog" ops 3 0 /dev/null
check "run --svg /dev/null with /dev/null among the program's arguments: not refused" \
	eval 'status_is 0 && loads "$tmp/null.json"'
capture "$amptrace" run -q -o "$tmp/t.json"
check "run with no PROG: exit 2, says so" eval 'status_is 2 && err_has "amptrace run: no program given"'
capture "$amptrace" run -q --raw-dir "$tmp" --raw-dir "$tmp" --raw-dir "$tmp" -- "$trace_prog" ops 3 0
check "run with --raw-dir three times: exit 2, says why" \
	eval 'status_is 2 && err_has "--raw-dir given 3 times"'

# ranks that attach out of order (rank 1 first) are named in rank order
capture "$amptrace" run -o "$tmp/order.json" -- sh -c \
	"RANK=1 '$trace_prog' ops 3 0; RANK=0 '$trace_prog' ops 3 0"
check "run's line names the ranks' files in rank order, not as they attached" \
	err_has "threads -> $tmp/order.rank0.json, $tmp/order.rank1.json"

# beside a process without a rank the ranks stay apart, and the merge
# command said is one to paste: a path with a space is one quoted word
capture "$amptrace" run -o "$tmp/my run.json" -- sh -c \
	"'$trace_prog' ops 3 0 && RANK=0 '$trace_prog' ops 3 0"
check "run: the merge command it suggests quotes a path with a space" \
	err_has "(amptrace merge '$tmp/my run.rank0.json' -o ranks.json merges them)"

# A trace without an op (the wrong program traced) is a failure (125);
# for check, see check.sh.
capture "$amptrace" run -o "$tmp/none.json" -- /usr/bin/python3 -c "print(1)"
check "run of python without torch ops: exit 125" status_is 125
check "... says why, for python: it never imported torch" \
	err_has "no ops recorded: /usr/bin/python3 never imported torch (the program ran without it)"
check "... and the program's output passes through" out_has "1"
# -E keeps the bridge out (said before PROG starts): the end says that
# again, not that the program never imported torch
capture "$amptrace" run -o "$tmp/none.json" -- /usr/bin/python3 -E -c "import sys"
check "run of python -E: the end says -E kept the bridge out" eval \
	'status_is 125 && err_has "no ops recorded: python -E ignores PYTHONPATH, so the PyTorch bridge was not injected"'
capture "$amptrace" run -o "$tmp/none.json" -- /usr/bin/python3 -c "import sys" -E
check "... not an -E among the program's own arguments" \
	err_has "no ops recorded: /usr/bin/python3 never imported torch"
capture "$amptrace" run -o "$tmp/none.json" -- /usr/bin/python3 "$tmp/missing.py"
check "run of a missing script: python's status (2), says so" eval \
	'status_is 2 && err_has "no ops recorded: /usr/bin/python3 found no script $tmp/missing.py (no such file)"'
# ... with -E too: dropping -E would not run it either
capture "$amptrace" run -o "$tmp/none.json" -- /usr/bin/python3 -E "$tmp/missing.py"
check "run of a missing script under python -E: says the script is missing" \
	err_has "no ops recorded: /usr/bin/python3 found no script $tmp/missing.py (no such file)"
# A Python without torch, named once, at the end, with the interpreter it
# really is (a shim's or a bare name's sys.executable); a `#!` script (a
# launcher) names its Python.  The fake python answers run's probe (-c)
# as one without torch would (find_spec's answer in its status).
mkdir -p "$tmp/notorch"
cat >"$tmp/notorch/python3" <<'FAKE'
#!/bin/sh
[ "$1" = -c ] || exit 0
printf /opt/elsewhere/bin/python3.11
exit "${FAKE_TORCH_MISSING:-1}"
FAKE
printf '#!%s\nprint(1)\n' "$tmp/notorch/python3" >"$tmp/notorch/launch"
chmod +x "$tmp/notorch/python3" "$tmp/notorch/launch"
capture "$amptrace" run -o "$tmp/none.json" -- "$tmp/notorch/python3" "$tmp/notorch/launch"
check "run of a python without torch: exit 125, names the python it is" eval \
	'status_is 125 && err_has "no ops recorded: $tmp/notorch/python3 (/opt/elsewhere/bin/python3.11) has no torch (the python on PATH is not the one with torch?"'
capture "$amptrace" run -o "$tmp/none.json" -- "$tmp/notorch/launch"
check "run of a #! script whose python has no torch: names that python" \
	err_has "no ops recorded: $tmp/notorch/launch's python (/opt/elsewhere/bin/python3.11) has no torch"
capture env FAKE_TORCH_MISSING=0 "$amptrace" run -o "$tmp/none.json" -- "$tmp/notorch/launch"
check "... one whose python has torch: asks whether it imports it" \
	eval 'err_has "no ops recorded: is $tmp/notorch/launch importing torch?" && ! grep -q "has no torch" "$tmp/err"'
# run's probe of that python never hangs run: one that leaves a child
# holding its stdout is answered when it exits; one that hangs is given
# up after a few seconds, killed with what it started.  The fakes wait
# for "release", made after each run, so that nothing of theirs outlives
# the test.
cat >"$tmp/notorch/python3.11" <<'FAKE'
#!/bin/sh
[ "$1" = -c ] || exit 0
wait_release() { while [ ! -e "$RELEASE" ]; do sleep 0.1; done; }
[ "$FAKE_PROBE" = hang ] && { wait_release & echo $! >"$RELEASE.pid"; wait; }
wait_release &
printf /opt/elsewhere/bin/python3.11
exit 1
FAKE
chmod +x "$tmp/notorch/python3.11"
# gone, or a zombie that no init reaps (a container's)
process_gone() {
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		[ -e "/proc/$1" ] && ! grep -q '^[0-9]* (.*) Z' "/proc/$1/stat" \
			2>/dev/null || return 0
		sleep 0.2
	done
	return 1
}
for probe in orphan hang; do
	rm -f "$tmp/release"
	capture env RELEASE="$tmp/release" FAKE_PROBE=$probe timeout 30 \
		"$amptrace" run -o "$tmp/none.json" -- "$tmp/notorch/python3.11" "$tmp/notorch/launch"
	probe_gone=yes
	[ $probe = orphan ] || process_gone "$(cat "$tmp/release.pid")" || probe_gone=no
	touch "$tmp/release"
	cp "$tmp/err" "$tmp/probe-$probe.err"
	echo "$status" >"$tmp/probe-$probe.status"
done
check "run's probe of a python that leaves a child holding its stdout: answered" \
	eval '[ "$(cat "$tmp/probe-orphan.status")" = 125 ] &&
	      grep -qF "$tmp/notorch/python3.11 (/opt/elsewhere/bin/python3.11) has no torch" "$tmp/probe-orphan.err"'
check "run's probe of a python that hangs: given up, run ends, nothing of it left" \
	eval '[ $probe_gone = yes ] && [ "$(cat "$tmp/probe-hang.status")" = 125 ] &&
	      grep -qF "no ops recorded: $tmp/notorch/python3.11 never imported torch" "$tmp/probe-hang.err"'
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	capture "$amptrace" run -o "$tmp/none.json" -- /usr/bin/python3 -c "import torch"
	check "run of python importing torch, running no op: says so (not that its process, absent, was recorded)" \
		eval 'err_has "0 processes" && err_has "no ops recorded: /usr/bin/python3 imported torch but ran no torch op before it ended"'
fi

# ------------------------------------------------------------ findings
record "$tmp/pitfall.json" "$findings_prog" backward-inside
check "run: stale-cache appended with message and fix" \
	diag_has "$tmp/pitfall.json" stale-cache '"fix":"enter autocast per iteration'
check "run: the finding names its op and tensor" \
	diag_has "$tmp/pitfall.json" stale-cache '"op_id":'
check "run: severity" diag_has "$tmp/pitfall.json" backward-under-autocast '"severity":"warning"'
check "run: the trailer counts the appended events" \
	grep -q "\"events\":$(grep -c '^{"name"' "$tmp/pitfall.json")," "$tmp/pitfall.json"
record "$tmp/thread.json" "$findings_prog" thread-pitfall
check "run: autocast-off-in-thread appended" \
	diag_has "$tmp/thread.json" autocast-off-in-thread '"other_thread":1'
record "$tmp/overflow.json" "$findings_prog" overflow
check "run: value checks on by default" diag_has "$tmp/overflow.json" fp16-overflow '"message":'
capture env AMP_VALUE_CHECKS=1 "$amptrace" run -q --no-value-checks \
	-o "$tmp/nochecks.json" -- "$findings_prog" overflow
check "run --no-value-checks: exit 0" status_is 0
check "run --no-value-checks: the trace loads" loads "$tmp/nochecks.json"
check "run --no-value-checks: no fp16-overflow" no_diag "$tmp/nochecks.json" fp16-overflow
capture "$amptrace" run --help
check "run --help: --no-value-checks" out_has "--no-value-checks"
record "$tmp/whole.json" "$whole_loop" --steps 6
check "sample whole_loop: stale-cache in the trace" \
	diag_has "$tmp/whole.json" stale-cache "fc1.weight"
echo "1..$count"
exit $fail
