#!/usr/bin/env bash
# ThreadSanitizer on a TSan build: the threads sample (worker threads
# sharing the model's tensors: the refcount race of issue 15), alone and
# under amptrace run (the recorder's per-thread streams), and the
# recorder's stress program (8 threads emitting at full speed; again with
# their events folded into aggregates, counted in files).  Any TSan
# report fails it.
#   tsan.sh TSAN_BUILD
set -u
build=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
# halt at the first report, with a status of its own
export TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1
# OpenBLAS's own worker threads synchronise in ways TSan cannot see
export OPENBLAS_NUM_THREADS=1

tsan_run() { # description, command...
	local what=$1; shift
	"$@" >"$work/out" 2>"$work/err"
	local status=$?
	if [ "$status" -eq 0 ] && ! grep -q "ThreadSanitizer" "$work/err"; then
		echo "ok - TSan clean: $what"
	else
		echo "not ok - TSan: $what (exit $status)"
		grep -A30 "WARNING: ThreadSanitizer" "$work/err" | head -60
		fail=1
	fi
}

tsan_run "threads sample, 4 workers" \
	"$build/samples/threads" --threads 4 --steps 4
tsan_run "threads sample under amptrace run" \
	"$build/tracer/amptrace" run -q -o "$work/threads.json" -- \
	"$build/samples/threads" --threads 4 --steps 4
tsan_run "recorder stress: 8 threads x 5000 ops under amptrace run" \
	"$build/tracer/amptrace" run -q -o "$work/stress.json" -- \
	"$build/tests/trace_prog" threads 8 5000
tsan_run "recorder stress folded into aggregates (--steps none): 8 threads x 5000 ops" \
	"$build/tracer/amptrace" run -q --steps none -o "$work/folded.json" -- \
	"$build/tests/trace_prog" threads 8 5000
exit $fail
