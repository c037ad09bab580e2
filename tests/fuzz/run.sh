#!/usr/bin/env bash
# ./run fuzz [SECONDS]: builds the harnesses (clang, libFuzzer, ASan +
# UBSan) in BUILD and runs each for SECONDS (default 60) on a corpus kept
# in BUILD/fuzz-corpus, seeded from real traces (the fixtures, a fresh
# `amptrace run`), the rules files and RULES.md's examples, and raw thread
# files a real recorder wrote.  Crash inputs land in BUILD/fuzz-crashes:
# copy each into tests/fuzz/regressions/HARNESS/ once fixed.
#   tests/fuzz/run.sh BUILD SECONDS
set -euo pipefail
build=$1
seconds=${2:-60}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=true -Dcuda=disabled \
		-Db_sanitize=address,undefined -Db_lundef=false \
		-Dwerror=false >&2
fi
# only what fuzzing needs: some tests rely on gcc (_Float16)
ninja -C "$build" tests/fuzz/fuzz_trace tests/fuzz/fuzz_rules \
	tests/fuzz/fuzz_merge tests/fuzz/fuzz_raw tracer/amptrace \
	tracer/libamptrace-recorder.so tests/trace_prog >&2

seeds=$build/fuzz-seeds
rm -rf "$seeds"
mkdir -p "$seeds"/{trace,rules,merge,raw} "$build/fuzz-crashes"
traces=("$root"/tests/fixtures/trace/*.json "$root"/tests/fixtures/viewer/*.json)
cp "${traces[@]}" "$seeds/trace/"
cp "$root"/tests/fixtures/trace/*.rules "$seeds/rules/"
awk -v dir="$seeds/rules" '/^```/ { if (open) { close(f); open = 0 }
	else { n++; f = dir "/RULES.md-" n ".rules"; open = 1 }; next }
	open { print > f }' "$root/tracer/RULES.md"
for i in "${!traces[@]}"; do
	next=${traces[$(((i + 1) % ${#traces[@]}))]}
	{ cat "${traces[$i]}"; printf '\n--8<--\n'; cat "$next"; } \
		>"$seeds/merge/pair-$i.json"
done
# raw thread files as the recorder writes them (no converter attached),
# cut after their last record
rawdir=$(mktemp -d)
# the harnesses' scratch directory: memory where there is some
scratch=$(mktemp -d -p /dev/shm 2>/dev/null || mktemp -d)
trap 'rm -rf "$rawdir" "$scratch"' EXIT
for mode in "ops 30" "mlp 2" "threads 2 40"; do
	# shellcheck disable=SC2086
	AMPTRACE_RAW_DIR=$rawdir LD_PRELOAD=$build/tracer/libamptrace-recorder.so \
		"$build/tests/trace_prog" $mode >/dev/null 2>&1 || true
done
n=0
for f in "$rawdir"/p*/t*.raw; do
	n=$((n + 1))
	python3 - "$f" "$seeds/raw/recorded-$n.raw" <<'PY'
import sys
data = open(sys.argv[1], "rb").read().rstrip(b"\0")
open(sys.argv[2], "wb").write(data + b"\0" * (16 - len(data) % 8))
PY
done
"$build/tracer/amptrace" run -q -o "$seeds/trace/fresh-mlp.json" -- \
	"$build/tests/trace_prog" mlp 3 >/dev/null 2>&1 || true

# every UBSan report is a crash (libFuzzer keeps the input), but for the
# deliberate ones listed in tests/sanitize/ubsan.supp
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$root/tests/sanitize/ubsan.supp
status=0
for name in trace rules merge raw; do
	corpus=$build/fuzz-corpus/$name
	mkdir -p "$corpus"
	log=$build/fuzz-$name.log
	touch "$rawdir/start"
	regressions=("$here/regressions/$name")
	[ -d "${regressions[0]}" ] || regressions=()
	# the grammar's words: JSON and FORMAT.md's keys, or the rules'
	case $name in
	trace | merge) dict=(-dict="$here/json.dict") ;;
	rules) dict=(-dict="$here/rules.dict") ;;
	*) dict=() ;;
	esac
	# the harness's scratch directory: libFuzzer ends with _Exit, so
	# its atexit cleanup does not run
	TMPDIR=$scratch "$build/tests/fuzz/fuzz_$name" -max_total_time="$seconds" \
		-print_final_stats=1 -close_fd_mask=3 -timeout=20 \
		-rss_limit_mb=2048 -max_len=262144 "${dict[@]}" \
		-artifact_prefix="$build/fuzz-crashes/$name-" \
		"$corpus" "$seeds/$name" "${regressions[@]}" >"$log" 2>&1 ||
		status=1
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
	units=$(find "$corpus" -type f | wc -l)
	crashes=$(find "$build/fuzz-crashes" -name "$name-*" -type f \
		-newer "$rawdir/start" | wc -l)
	echo "fuzz_$name: ${runs:-?} executions in ${seconds}s" \
		"($(( ${runs:-0} / seconds )) a second), corpus $units," \
		"new crash inputs $crashes (log: $log)"
done
[ "$status" -eq 0 ] || echo "fuzzing found a crash: see the logs and $build/fuzz-crashes" >&2
exit $status
