#!/usr/bin/env bash
# The raw directory fills up while the program records (Docker's 64 MiB
# /dev/shm, here a 3 MiB tmpfs): the program runs on untouched (its output
# and exit status), never dies of SIGBUS; amptrace finishes the trace,
# which says where recording stopped (recording-stopped), and says why on
# stderr.  SKIP (77) where no tmpfs can be mounted (not root, no mount).
#   test_raw_full.sh AMPTRACE TRACE_PROG
set -u
amptrace=$1
prog=$2
work=$(mktemp -d)
mkdir "$work/raw"
cleanup() {
	mountpoint -q "$work/raw" && umount "$work/raw"
	rm -rf "$work"
}
trap cleanup EXIT
if ! mount -t tmpfs -o size=3m tmpfs "$work/raw" 2>/dev/null; then
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
exit $fail
