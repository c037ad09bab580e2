#!/usr/bin/env bash
# ./run sanitize: the whole test suite built with ASan + UBSan (Graphviz's
# and fontconfig's leaks suppressed in lsan.supp, nothing of ours), then
# the TSan check (tsan.sh) on a ThreadSanitizer build.  gcc's sanitizers:
# the tree's f16 reference tests use gcc's _Float16.
#   tests/sanitize/run.sh ASAN_BUILD TSAN_BUILD
set -uo pipefail
asan=$1
tsan=$2
here=$(cd "$(dirname "$0")" && pwd)
status=0

# werror off: gcc 12's flow warnings misfire on sanitizer-instrumented
# code (-Wformat-truncation "null destination pointer" on a stack buffer
# in run.c's find_ampview); the plain build keeps -Werror.
if [ ! -f "$asan/build.ninja" ]; then
	meson setup "$asan" -Db_sanitize=address,undefined -Db_lundef=false \
		-Dcuda=disabled -Dwerror=false >&2 || exit 1
fi
ninja -C "$asan" >&2 || exit 1
# verify_asan_link_order: amptrace run preloads its (instrumented)
# recorder ahead of libasan.  handle_segv/sigbus/sigfpe: the tests crash
# programs on purpose and check that they die of the signal.
export ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:strict_string_checks=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0
export LSAN_OPTIONS=suppressions=$here/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:suppressions=$here/ubsan.supp
# torch-bridge is left out: its instrumented extension loads into an
# uninstrumented CPython after libtorch, so ASan's operator delete meets
# strings libtorch allocated before the runtime was active ("free on
# address which was not malloc()-ed") and LeakSanitizer does not scan the
# module's dynamic TLS.  Running it needs libasan preloaded into python.
all=$(meson test -C "$asan" --list --no-rebuild 2>/dev/null |
	grep -vx -e trace_run -e torch-bridge)
# shellcheck disable=SC2086
meson test -C "$asan" --print-errorlogs --num-processes "$(nproc)" \
	--timeout-multiplier 4 $all || status=1
# trace_run crashes a program inside memcpy on purpose (segv-in-op) and
# wants it to die of SIGSEGV: ASan's checked memcpy would report it first
ASAN_OPTIONS=$ASAN_OPTIONS:replace_intrin=0 meson test -C "$asan" \
	--print-errorlogs --timeout-multiplier 4 trace_run || status=1
echo "sanitize: ASan+UBSan suite $([ $status -eq 0 ] && echo clean || echo FAILED)"

if [ ! -f "$tsan/build.ninja" ]; then
	# werror off: gcc warns that TSan does not model
	# atomic_thread_fence (hooks.c's seqlock, whose fields are all
	# atomics, so nothing goes unseen)
	meson setup "$tsan" -Db_sanitize=thread -Db_lundef=false \
		-Dcuda=disabled -Dwerror=false >&2 || exit 1
fi
ninja -C "$tsan" tracer/amptrace tracer/libamptrace-recorder.so \
	samples/threads tests/trace_prog >&2 || exit 1
"$here/tsan.sh" "$tsan" || status=1
exit $status
