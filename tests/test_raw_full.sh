#!/usr/bin/env bash
# The raw directory fills up while the program records (Docker's 64 MiB
# /dev/shm, here a 3 MiB tmpfs): the program runs on untouched (its output
# and exit status), never dies of SIGBUS; amptrace finishes the trace,
# which says where recording stopped (recording-stopped), and says why on
# stderr.  With a second raw directory the raw files go on there and
# nothing is lost; a directory too small for even the first chunk says so
# in the trace; a TMPDIR that small is passed over, and said so.
# SKIP (77) where no tmpfs can be mounted (not root, no mount).
#   test_raw_full.sh AMPTRACE TRACE_PROG
set -u
amptrace=$1
prog=$2
work=$(mktemp -d)
mkdir "$work/raw" "$work/tiny" "$work/spill"
cleanup() {
	for m in raw tiny; do
		mountpoint -q "$work/$m" && umount "$work/$m"
	done
	rm -rf "$work"
}
trap cleanup EXIT
if ! mount -t tmpfs -o size=3m tmpfs "$work/raw" 2>/dev/null ||
   ! mount -t tmpfs -o size=64k tmpfs "$work/tiny" 2>/dev/null; then
	echo "# cannot mount a small tmpfs here: skipped"
	exit 77
fi
. "$(dirname "$0")/tap.sh"

# 8 threads x 20000 ops need ~20 MiB of raw files at full speed
"$amptrace" run --raw-dir "$work/raw" -o "$work/t.json" -- \
	"$prog" threads 8 20000 >"$work/out" 2>"$work/err"
status=$?
check "the program's exit status passes through: 0 ($status)" [ "$status" -eq 0 ]
check "the program ran to its end (its stdout line)" \
	grep -q "threads done" "$work/out"
check "amptrace says the raw directory ran out of space" \
	grep -q "the raw directory $work/raw/amptrace-.* ran out of space: recording stopped early" "$work/err"
"$amptrace" summary "$work/t.json" >"$work/summary" 2>&1
status=$?
check "the trace loads (summary exit $status)" [ "$status" -eq 0 ]
# summary wraps long messages at 100 columns: read them joined
check "... with a recording-stopped finding naming the reason" \
	sh -c "tr '\n' ' ' <'$work/summary' | tr -s ' ' | grep -q 'recording-stopped.*no room for more raw events in $work/raw.*No space left on device'"
check "... and the events recorded before it" \
	grep -q "forward   relu" "$work/summary"
check "no raw files are left in the full directory" [ -z "$(ls -A "$work/raw")" ]

# --- steps as aggregates: each thread holds a chunk from its first op, so
# most of the 8 cannot begin one; the trace says so though no stream can
"$amptrace" run --steps none --raw-dir "$work/raw" -o "$work/n.json" -- \
	"$prog" threads 8 20000 >"$work/out" 2>"$work/err"
status=$?
check "threads that cannot begin: the program's exit status 0 ($status)" \
	[ "$status" -eq 0 ]
"$amptrace" summary "$work/n.json" >"$work/summary" 2>&1
check "... the trace's recording-stopped finding says threads could not begin" \
	sh -c "tr '\n' ' ' <'$work/summary' | tr -s ' ' | grep -q 'recording-stopped.*no room for a thread.s first raw events in $work/raw.*the threads that could not begin are not in the trace'"
check "... and no raw files are left" [ -z "$(ls -A "$work/raw")" ]

# --- a second raw directory: the streams go on there, nothing is lost
"$amptrace" run --raw-dir "$work/raw" --raw-dir "$work/spill" -o "$work/s.json" -- \
	"$prog" threads 8 20000 >"$work/out" 2>"$work/err"
status=$?
check "spilled: the program's exit status 0 ($status)" [ "$status" -eq 0 ]
check "... amptrace says where the raw files went on" \
	grep -q "the raw directory $work/raw/amptrace-.* filled up; the raw files went on in $work/spill/amptrace-" "$work/err"
"$amptrace" summary "$work/s.json" >"$work/summary" 2>&1
check "... every op of the 8 threads is in the trace, no recording-stopped" \
	eval 'grep -qE "forward +relu +160000 " "$work/summary" && ! grep -q recording-stopped "$work/summary"'
check "... and no raw files are left in either" \
	[ -z "$(ls -A "$work/raw" "$work/spill" | grep -v :)" ]

# --- a raw directory too small for the first chunk: the trace says so
"$amptrace" run --raw-dir "$work/tiny" -o "$work/t.json" -- "$prog" ops 10 \
	>"$work/out" 2>"$work/err"
status=$?
check "first chunk without room: exit 125, no ops recorded ($status)" [ "$status" -eq 125 ]
check "... amptrace says the raw directory ran out of space, not 'linked to libamp?'" \
	eval 'grep -q "the raw directory $work/tiny/amptrace-.* ran out of space" "$work/err" && ! grep -q "linked to libamp" "$work/err"'
"$amptrace" summary "$work/t.json" >"$work/summary" 2>&1
check "... and the trace has a recording-stopped finding at the start" \
	sh -c "tr '\n' ' ' <'$work/summary' | tr -s ' ' | grep -q 'recording-stopped: recording stopped at the start: no room for the first raw events in $work/tiny'"

# --- TMPDIR that small is passed over (and said), the run recorded whole
TMPDIR=$work/tiny "$amptrace" run -o "$work/d.json" -- "$prog" ops 10 \
	>"$work/out" 2>"$work/err"
status=$?
check "TMPDIR too small: exit 0 ($status), every op recorded" eval \
	'[ "$status" -eq 0 ] && "$amptrace" summary "$work/d.json" | grep -qE "forward +relu +10 "'
check "... and amptrace says TMPDIR was passed over" \
	grep -q "TMPDIR=$work/tiny has too little room: the raw files go to" "$work/err"
check "no raw files are left in the small directory" [ -z "$(ls -A "$work/tiny")" ]
exit $fail
