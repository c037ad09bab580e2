#!/usr/bin/env bash
# Every reader and writer of amptrace and ampview on odd files, from the
# outside (issue 27):
#   - inputs that never end or never come: a device (/dev/zero) is
#     refused, a FIFO that no process writes is given up after 10 s, a
#     pipe is read;
#   - outputs never overwrite an input, by device and inode (ampview -o,
#     check --junit, merge -o, whatever name leads to the input);
#   - `-` is standard output for every output option (merge -o, report
#     -o, ampview -o, check --junit), and no file named "-" is made;
#   - an output FIFO that no process reads is given up after 10 s (merge
#     -o, report -o, ampview -o, check --junit, run -o), as an input one
#     is;
#   - report reads a pipe or a FIFO once, though ampview draws its graph
#     from the same trace;
#   - past `ulimit -f` a writer says "File too large" (no SIGXFSZ) and
#     leaves no temporary file;
#   - JSON text is UTF-8: a trace string that is not is refused with its
#     line and column, and a program's own bytes that are not (argv) are
#     written as U+FFFD, so the trace loads anywhere;
#   - rules numbers are decimals (0x10 and 1e99999 refused), and a rules
#     file of 200,000 rules is checked in bounded memory.
# No real /dev node is ever written: outputs go to our own FIFOs and links.
#   test_io_cli.sh AMPTRACE AMPVIEW TRACE_PROG FIXTURES
set -u
amptrace=$1
ampview=$2
trace_prog=$3
fx=$4
tmp=$(mktemp -d)
waiting=
unread=
cleanup() {
	[ -n "$waiting" ] && kill "$waiting" 2>/dev/null
	for pid in $unread; do kill "$pid" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
. "$(dirname "$0")/tap.sh"

# The FIFO nobody writes takes 10 s to give up on: it waits while the
# other checks run.
mkfifo "$tmp/nobody.fifo"
(timeout 30 "$amptrace" summary "$tmp/nobody.fifo" >/dev/null 2>"$tmp/fifo.err"
 echo $? >"$tmp/fifo.status") &
waiting=$!
# Each writer to a FIFO nobody reads waits its 10 s beside the others.
unread_fifo() { # name, then the command writing to $tmp/name.fifo
	local name=$1
	shift
	mkfifo "$tmp/$name.fifo"
	(timeout 30 "$@" >/dev/null 2>"$tmp/$name.err"; echo $? >"$tmp/$name.status") &
	unread="$unread $!"
}
unread_fifo merge "$amptrace" merge "$fx/good.json" -o "$tmp/merge.fifo"
unread_fifo report "$amptrace" report "$fx/good.json" --no-graph -o "$tmp/report.fifo"
unread_fifo ampview "$ampview" "$fx/good.json" --format dot -o "$tmp/ampview.fifo"
unread_fifo junit "$amptrace" check "$fx/good.json" "$fx/pass.rules" --junit "$tmp/junit.fifo"
unread_fifo run "$amptrace" run -q -o "$tmp/run.fifo" -- "$trace_prog" ops 2
# nothing is drawn from a trace that was not written (ampview waited its
# own 10 s for it, and run said 2)
unread_fifo runsvg "$amptrace" run -o "$tmp/runsvg.fifo" --svg "$tmp/runsvg.svg" -- "$trace_prog" ops 2

# ---------------------------------------------------------------- inputs
capture timeout 20 "$amptrace" summary /dev/zero
check "summary /dev/zero: exit 2 at once, a device named" eval \
	'status_is 2 && err_has "/dev/zero: not a regular file (a device)"'
capture timeout 20 "$amptrace" check "$fx/good.json" /dev/zero
check "check with rules /dev/zero: exit 2, a device named" eval \
	'status_is 2 && err_has "/dev/zero: not a regular file (a device)"'
capture timeout 20 "$ampview" /dev/zero -o "$tmp/zero.svg"
check "ampview /dev/zero: exit 2" status_is 2
capture "$amptrace" summary <(cat "$fx/good.json")
check "summary of a pipe (<(...)): read, exit 0" eval \
	'status_is 0 && out_has "amptrace trace format"'

# report's graph is drawn by ampview from the same trace: a stream is
# read once for both, else each reader gets part of it
capture "$amptrace" report <(cat "$fx/good.json") -o "$tmp/pipe.html"
check "report of a pipe (<(...)): exit 0, the graph drawn" eval \
	'status_is 0 && grep -q "<svg" "$tmp/pipe.html"'
mkfifo "$tmp/in.fifo"
(timeout 20 cat "$fx/good.json" >"$tmp/in.fifo") &
capture "$amptrace" report "$tmp/in.fifo" -o "$tmp/fifo.html"
wait $!
check "report of a FIFO: exit 0, the graph drawn" eval \
	'status_is 0 && grep -q "<svg" "$tmp/fifo.html"'
mkfifo "$tmp/bad.fifo"
(timeout 20 echo '{"traceEvents":[' >"$tmp/bad.fifo") &
capture "$amptrace" report "$tmp/bad.fifo" -o "$tmp/bad.html"
wait $!
check "report of a FIFO's broken trace: exit 2, the FIFO named" eval \
	'status_is 2 && err_has "$tmp/bad.fifo:2:1:"'

# --------------------------------------------------------------- outputs
# "-" is standard output for every writer, never a file named "-" (in
# $tmp, where they run: amptrace and the fixtures by absolute names)
fx_abs=$(realpath "$fx")
amptrace_abs=$(realpath "$amptrace")
(cd "$tmp" && "$amptrace_abs" report "$fx_abs/good.json" --no-graph -o - >"$tmp/dash.html" 2>"$tmp/err")
check "report -o -: the page on stdout, no 'wrote', no file '-'" eval \
	'grep -q "</html>" "$tmp/dash.html" && ! grep -q "^wrote" "$tmp/dash.html" && [ ! -e "$tmp/-" ]'
(cd "$tmp" && "$amptrace_abs" check "$fx_abs/good.json" "$fx_abs/pass.rules" --junit - >"$tmp/dash.xml" 2>"$tmp/err")
check "check --junit -: XML alone on stdout, the text on stderr, no file '-'" eval \
	'head -1 "$tmp/dash.xml" | grep -q "^<?xml" && grep -q "</testsuites>" "$tmp/dash.xml" && [ -s "$tmp/err" ] && [ ! -e "$tmp/-" ]'
echo "earlier line" >"$tmp/append.xml"
"$amptrace" check "$fx/good.json" "$fx/pass.rules" --junit - >>"$tmp/append.xml" 2>/dev/null
check "check --junit - >> FILE: written through its descriptor, what FILE held is kept" eval \
	'[ "$(head -1 "$tmp/append.xml")" = "earlier line" ] && grep -q "</testsuites>" "$tmp/append.xml"'
"$amptrace" merge "$fx/good.json" -o - >>"$tmp/append.xml" 2>/dev/null
check "merge -o - >> FILE: the same" eval \
	'[ "$(head -1 "$tmp/append.xml")" = "earlier line" ] && grep -q "traceEvents" "$tmp/append.xml"'
cp "$fx/good.json" "$tmp/t.json"
cp "$fx/pass.rules" "$tmp/r.rules"
ln -s t.json "$tmp/t-link.json"
capture "$ampview" "$tmp/t.json" -o "$tmp/t.json"
check "ampview -o the trace itself: exit 2, kept" eval \
	'status_is 2 && err_has "is $tmp/t.json, an input" && cmp -s "$fx/good.json" "$tmp/t.json"'
capture "$ampview" "$tmp/t.json" --format dot -o "$tmp/t-link.json"
check "ampview -o a link to the trace: exit 2, kept" eval \
	'status_is 2 && cmp -s "$fx/good.json" "$tmp/t.json"'
capture "$amptrace" check "$tmp/t.json" "$tmp/r.rules" --junit "$tmp/t.json"
check "check --junit the trace: exit 2, kept" eval \
	'status_is 2 && err_has "is $tmp/t.json, an input" && cmp -s "$fx/good.json" "$tmp/t.json"'
capture "$amptrace" check "$tmp/t.json" "$tmp/r.rules" --junit "$tmp/r.rules"
check "check --junit the rules: exit 2, kept" eval \
	'status_is 2 && cmp -s "$fx/pass.rules" "$tmp/r.rules"'
capture "$amptrace" merge "$tmp/t.json" "$fx/changed.json" -o "$tmp/t-link.json"
check "merge -o a link to an input: exit 2, kept" eval \
	'status_is 2 && err_has "is $tmp/t.json, an input" && cmp -s "$fx/good.json" "$tmp/t.json"'
capture "$amptrace" check "$tmp/t.json" "$tmp/r.rules" --junit "$tmp/j.xml"
check "check --junit elsewhere: written" eval \
	'status_is 0 && grep -q "<testsuites" "$tmp/j.xml"'
"$amptrace" merge "$fx/good.json" "$fx/changed.json" -o - >"$tmp/m.json" 2>/dev/null
status=$?
check "merge -o -: the merged trace on stdout, no file named -" eval \
	'[ "$status" -eq 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$tmp/m.json" && [ ! -e ./- ]'
if [ -w /dev/full ]; then
	"$amptrace" merge "$fx/good.json" "$fx/changed.json" -o - \
		>/dev/full 2>"$tmp/err"
	status=$?
	check "merge -o - >/dev/full: exit 1, says so" eval \
		'status_is 1 && err_has "error writing standard output"'
fi

# past `ulimit -f`: a write error said (EFBIG), never SIGXFSZ, and no
# temporary file left next to the output
(ulimit -f 1; "$ampview" "$fx/good.json" -o "$tmp/big.svg" 2>"$tmp/err")
status=$?
check "ampview under ulimit -f 1: exit 1, File too large, nothing left" eval \
	'[ "$status" -eq 1 ] && grep -q "cannot write $tmp/big.svg: File too large" "$tmp/err" && [ -z "$(ls "$tmp" | grep big.svg)" ]'
(ulimit -f 1; "$amptrace" report "$fx/good.json" --no-graph -o "$tmp/big.html" 2>"$tmp/err")
status=$?
check "report under ulimit -f 1: exit 1, File too large, nothing left" eval \
	'[ "$status" -eq 1 ] && grep -q "cannot write $tmp/big.html: File too large" "$tmp/err" && [ -z "$(ls "$tmp" | grep big.html)" ]'

# ------------------------------------------------------------ UTF-8 text
python3 - "$fx/good.json" "$tmp/latin1.json" <<'PY'
import sys
text = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(text.replace(b'"linear"', b'"lin\xe9ar"', 1))
PY
capture "$amptrace" summary --json "$tmp/latin1.json"
check "a trace string that is not UTF-8: exit 2, line and column" eval \
	'status_is 2 && err_has "latin1.json:" && err_has "invalid UTF-8 in a string"'
capture "$amptrace" merge "$tmp/latin1.json" "$fx/good.json" -o "$tmp/m8.json"
check "... merge refuses it too (its output would not be JSON)" status_is 2
capture "$amptrace" run --raw-dir "$tmp" -o "$tmp/argv.json" -- \
	"$trace_prog" ops 2 $'\xff'
check "a program's argv that is not UTF-8: the trace is JSON, with U+FFFD" eval \
	'python3 -c "import json,sys; d = json.load(open(sys.argv[1], encoding=\"utf-8\")); assert \"\\ufffd\" in d[\"amptrace\"][\"command\"][-1]" "$tmp/argv.json"'
"$amptrace" summary --json "$tmp/argv.json" >"$tmp/argv-summary.json"
check "... and its summary --json too" \
	python3 -c "import json,sys; json.load(open(sys.argv[1], encoding='utf-8'))" "$tmp/argv-summary.json"

# ----------------------------------------------------------------- rules
printf 'op linear: count == 0x4\n' >"$tmp/hex.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/hex.rules"
check "rules: 0x4 refused, exit 2 (a decimal)" eval \
	'status_is 2 && err_has "hex.rules:1:21: malformed number"'
printf 'op linear: count <= 1e99999\n' >"$tmp/inf.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/inf.rules"
check "rules: 1e99999 refused (infinity would pass any bound), exit 2" eval \
	'status_is 2 && err_has "inf.rules:1:21: number out of range"'
printf 'op linear: count <= 1e1, count >= 0.4e1\n' >"$tmp/dec.rules"
capture "$amptrace" check "$fx/good.json" "$tmp/dec.rules"
check "rules: 1e1 and 0.4e1 are numbers (exit 0)" status_is 0
python3 - "$tmp/many.rules" <<'PY'
import sys
rules = ["op linear: output f16, count >= 1", "casts f32->f16 <= 100",
         "no finding stale-cache", "op relu: count >= 1"]
with open(sys.argv[1], "w") as f:
    for i in range(200000):
        f.write(rules[i % 4] + "\n")
PY
peak=$(python3 - "$amptrace" "$fx/good.json" "$tmp/many.rules" "$tmp/many.xml" <<'PY'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "check", sys.argv[2], sys.argv[3], "--junit",
                sys.argv[4]], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PY
)
check "200,000 rules (with --junit) in at most 200 MiB ($peak MiB)" \
	[ "$peak" -le 200 ]

# ----------------------------------------------------- the waiting FIFO
wait "$waiting"
waiting=
for pid in $unread; do wait "$pid"; done
unread=
check "summary of a FIFO nobody writes: given up, exit 2 ($(cat "$tmp/fifo.status"))" eval \
	'[ "$(cat "$tmp/fifo.status")" = 2 ] && grep -q "nobody.fifo: nothing to read after 10 s" "$tmp/fifo.err"'
check "run to a FIFO nobody reads, with --svg: exit 1, nothing drawn ($(cat "$tmp/runsvg.status" 2>/dev/null))" eval \
	'[ "$(cat "$tmp/runsvg.status")" = 1 ] && grep -q "runsvg.fifo (not written)" "$tmp/runsvg.err" &&
	 ! grep -q ampview "$tmp/runsvg.err" && [ ! -e "$tmp/runsvg.svg" ]'
for name in merge report ampview junit run runsvg; do
	check "$name to a FIFO nobody reads: given up, exit non-zero ($(cat "$tmp/$name.status" 2>/dev/null))" eval \
		'[ -s "$tmp/$name.status" ] && [ "$(cat "$tmp/$name.status")" != 0 ] && [ "$(cat "$tmp/$name.status")" != 124 ] &&
		 grep -q "$name.fifo: no process reads it" "$tmp/$name.err"'
done
exit $fail
