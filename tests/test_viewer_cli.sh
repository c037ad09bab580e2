#!/bin/sh
# ampview from the outside (DESIGN.md's contract):
#   ampview trace.json -o graph.svg [--format svg|dot|png]
# exit 2 with a message for unreadable or malformed traces and bad command
# lines; SVG that parses as XML and shows the dtypes, casts and regions;
# PNG; DOT on standard output; the same bytes twice.
#
#   test_viewer_cli.sh AMPVIEW VIEWER_FIXTURES TRACE_FIXTURES FUZZ_REGRESSIONS
set -u
ampview=$1
fixtures=$2
trace_fixtures=$3
regressions=$4
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0

fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

# expect STATUS MESSAGE-PART ARGS...: exit status and a stderr message
expect() {
	want=$1
	message=$2
	shift 2
	"$ampview" "$@" >"$out/stdout" 2>"$out/stderr"
	got=$?
	if [ "$got" -ne "$want" ]; then
		fail "ampview $* exited $got, expected $want"
		cat "$out/stderr"
	elif ! grep -q -- "$message" "$out/stderr"; then
		fail "ampview $*: no '$message' in: $(cat "$out/stderr")"
	else
		echo "ok   exit $got: ampview $*"
	fi
}

printf '{"traceEvents": [ {"ph": "X", "cat": "amp.op"' >"$out/cut.json"
: >"$out/empty.json"
expect 2 "No such file" "$out/missing.json" -o "$out/x.svg"
expect 2 "empty file" "$out/empty.json" -o "$out/x.svg"
expect 2 "not JSON" "$trace_fixtures/garbage.bin" -o "$out/x.svg"
gzip -c "$fixtures/mlp.json" >"$out/mlp.json.gz"
expect 2 "mlp.json.gz: compressed with gzip, not JSON text: give it as <(zcat " \
	"$out/mlp.json.gz" -o "$out/x.svg"
expect 2 "truncated" "$out/cut.json" -o "$out/x.svg"
expect 2 "must be a number" "$trace_fixtures/wrong-types.json" -o "$out/x.svg"
expect 2 "not supported" "$trace_fixtures/future-version.json" -o "$out/x.svg"
expect 2 "which trace" -o "$out/x.svg"
expect 2 "unknown option" "$fixtures/mlp.json" --colour
# a value that is a typo of one is named; one that is none, nothing
expect 2 "unknown format 'jpg' (svg, dot or png)$" "$fixtures/mlp.json" --format jpg
expect 2 "unknown format 'dto' (svg, dot or png); did you mean 'dot'?" \
	"$fixtures/mlp.json" --format dto
expect 2 "wants forward, backward, optimizer or other, got 'sideways'$" \
	"$fixtures/mlp.json" --phase sideways
expect 2 "got 'backwrd'; did you mean 'backward'?" "$fixtures/mlp.json" \
	--phase backwrd
expect 2 "no step 9" "$fixtures/mlp.json" --step 9 -o "$out/x.svg"
expect 2 "named regions in this trace: 'forward'" "$fixtures/mlp.json" \
	--scope decoder -o "$out/x.svg"
expect 2 "'forwrd' (did you mean 'forward'?)" "$fixtures/mlp.json" \
	--scope forwrd -o "$out/x.svg"
expect 2 "did you mean '--step'" "$fixtures/mlp.json" --stpe 1
expect 2 "not_an_option'" "$fixtures/mlp.json" --not_an_option
expect 2 "empty output file name" "$fixtures/mlp.json" -o ''
expect 2 "--all-steps and --step 1 conflict" "$fixtures/mlp.json" \
	--all-steps --step 1 -o "$out/x.svg"
expect 2 "--all-steps and --step 1 conflict" "$fixtures/mlp.json" \
	--step 1 --all-steps -o "$out/x.svg"
expect 1 "cannot write" "$fixtures/infer.json" -o "$out/no/such/dir/x.svg"
[ ! -e "$out/x.svg" ] || fail "a failed run left $out/x.svg"

# SVG: XML, with the dtype labels, cast nodes and autocast clusters
if "$ampview" "$fixtures/mlp.json" -o "$out/mlp.svg"; then
	if python3 - "$out/mlp.svg" <<'PY'
import sys
import xml.etree.ElementTree as ET
ns = {"svg": "http://www.w3.org/2000/svg"}
root = ET.parse(sys.argv[1]).getroot()
texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
groups = [g.get("class") for g in root.iter("{http://www.w3.org/2000/svg}g")]
want = {
    "f16 edge label": any(t.startswith("f16[") for t in texts),
    "f32 edge label": any(t.startswith("f32[") for t in texts),
    "cast node": any(t.startswith("cast f32→f16") for t in texts),
    "cache result": any("cache miss" in t for t in texts),
    "named leaf": "fc1.weight" in texts,
    "autocast cluster": "cluster" in groups and
        any(t.startswith("autocast 'forward'") for t in texts),
    "backward op": any(t.startswith("backward of") for t in texts),
    "legend": "legend" in texts,
}
missing = [k for k, ok in want.items() if not ok]
if missing:
    print("missing in the SVG:", ", ".join(missing))
    sys.exit(1)
PY
	then
		echo "ok   SVG parses as XML and shows dtypes, casts, clusters"
	else
		fail "SVG check"
	fi
else
	fail "ampview mlp.json -o mlp.svg"
fi

# PNG, by extension and by --format
"$ampview" "$fixtures/infer.json" -o "$out/infer.png" &&
	[ "$(head -c 4 "$out/infer.png" | od -An -c | tr -d ' ')" = '211PNG' ] &&
	echo "ok   PNG from the .png extension" || fail "PNG output"
"$ampview" "$fixtures/infer.json" --format png -o "$out/infer.out" &&
	cmp -s "$out/infer.png" "$out/infer.out" &&
	echo "ok   --format png" || fail "--format png"

# DOT on standard output, identical twice and to -o
"$ampview" "$fixtures/nested.json" --format dot -o - >"$out/a.dot" &&
	"$ampview" "$fixtures/nested.json" -o "$out/b.dot" &&
	cmp -s "$out/a.dot" "$out/b.dot" &&
	head -1 "$out/a.dot" | grep -q '^digraph amptrace {$' &&
	echo "ok   DOT on stdout, same bytes as -o x.dot" || fail "DOT output"

# each cache hit points at the miss that filled its entry (same tensor,
# same dtype), an uncacheable cast at nothing
"$ampview" "$fixtures/infer.json" --format dot -o "$out/hits.dot" &&
	grep -q '"op8_cast1" -> "op1_cast1" \[style="dashed"' "$out/hits.dot" &&
	grep -q '"op12_cast2" -> "op5_cast2" \[style="dashed"' "$out/hits.dot" &&
	[ "$(grep -c 'reuses the cast of this miss' "$out/hits.dot")" -eq 6 ] &&
	! grep -q '"op8_cast0" -> "op1' "$out/hits.dot" &&
	echo "ok   cache hits linked to their misses" || fail "cache hit edges"

# a PyTorch step's optimizer ops: one box by default, drawn with
# --phase optimizer (and --help says so)
"$ampview" "$fixtures/torch_mlp.json" -o "$out/box.dot" -v 2>"$out/box.err" &&
	grep -q 'optimizer step 1, folded' "$out/box.dot" &&
	! grep -q 'label="mul_.Tensor' "$out/box.dot" &&
	grep -q '12 optimizer ops into 1 boxes' "$out/box.err" &&
	"$ampview" "$fixtures/torch_mlp.json" --phase optimizer -o "$out/opt.dot" &&
	grep -q 'label="mul_.Tensor' "$out/opt.dot" &&
	! grep -q 'optimizer step 1, folded' "$out/opt.dot" &&
	"$ampview" --help | grep -q -- '--phase optimizer draws them' &&
	"$ampview" "$fixtures/mlp.json" --phase optimizer -o "$out/none.dot" \
		2>"$out/none.err" &&
	grep -q 'no op \(of step [0-9]* \)\{0,1\}is of phase optimizer; the graph is empty' "$out/none.err" &&
	! grep -q 'warning: no op' "$out/box.err" &&
	echo "ok   the optimizer step is one box; --phase optimizer draws it" ||
	fail "optimizer box"

# without -o: TRACE.svg next to the trace, named on stderr, nothing on stdout
cp "$fixtures/infer.json" "$out/default.json"
"$ampview" "$out/default.json" >"$out/default.stdout" 2>"$out/default.stderr" &&
	[ ! -s "$out/default.stdout" ] &&
	head -c 200 "$out/default.svg" | grep -q '<svg\|<?xml' &&
	grep -q "wrote $out/default.svg" "$out/default.stderr" &&
	echo "ok   no -o: writes TRACE.svg and says where" || fail "default output"
"$ampview" "$out/default.json" --format dot 2>/dev/null &&
	head -1 "$out/default.dot" | grep -q '^digraph' &&
	echo "ok   no -o, --format dot: TRACE.dot" || fail "default dot output"

# the bad-input traces of the tracer's fixtures that do load still draw
"$ampview" "$trace_fixtures/truncated.json" -o "$out/t.dot" &&
	grep -q 'truncated' "$out/t.dot" &&
	echo "ok   a truncated trace draws, and says so" ||
	fail "truncated trace"

# an op using a cast's result before the cast's own op (malformed): drawn
# as an input, not read from an undrawn op's node (that was a SEGV);
# malloc left dirty so uninitialised memory cannot pass as zeros
GLIBC_TUNABLES=glibc.malloc.tcache_count=0 MALLOC_PERTURB_=165 \
	"$ampview" "$regressions/trace/early-cast-use.json" --all-steps -o "$out/e.dot"
got=$?
[ "$got" -eq 0 ] && grep -q 'label="relu' "$out/e.dot" &&
	echo "ok   a cast used before its op draws (exit $got)" ||
	fail "early cast use: ampview exited $got"

# a trace's names are JSON: "\u001b]0;pwned\u0007" would set the title of
# the terminal `-o -` prints the DOT on, "\u009b" (C1's CSI) too.  The DOT
# holds no control byte (C1 and '&' as entities, C0 and DEL as spaces); the
# SVG Graphviz makes of it has the C1 name exact, '&...;' not read as an
# entity.  Messages quote the arguments through stderr's filter.
sed 's/"linear"/"lin\\u001b]0;pwned\\u0007\\u009b31m\\u007fear\&#27;x"/g' \
	"$trace_fixtures/good.json" >"$out/escape.json"
controls=$(printf '[\001-\010\013-\037\177]\\|\302[\200-\237]')
"$ampview" "$out/escape.json" --format dot -o - >"$out/escape.dot" &&
	! LC_ALL=C grep -q "$controls" "$out/escape.dot" &&
	grep -q 'label="lin ]0;pwned &#155;31m ear&amp;#27;x' "$out/escape.dot" &&
	echo "ok   DOT on stdout: a name's control characters as entities or spaces" ||
	fail "DOT of a name with control characters: $(grep -a -o 'label="lin[^\\]*' "$out/escape.dot" | head -1)"
"$ampview" "$out/escape.json" -o "$out/escape.svg" &&
	grep -q "$(printf '>lin ]0;pwned \302\23331m ear&amp;#27;x<')" "$out/escape.svg" &&
	echo "ok   SVG: the C1 control and '&' exact" ||
	fail "SVG of a name with control characters: $(grep -a -o '>lin[^<]*' "$out/escape.svg" | head -1)"
sed 's/"fwd"/"f\\u001b]0;pwned\\u0007wd"/g' "$trace_fixtures/good.json" \
	>"$out/escape-region.json"
"$ampview" "$out/escape-region.json" --scope "$(printf 'f\033]0;pwned\007wd')" \
	--phase optimizer -o "$out/escape.dot" 2>"$out/stderr"
LC_ALL=C grep -q 'in region f?]0;pwned?wd; the graph is empty' "$out/stderr" &&
	! LC_ALL=C grep -q "$controls" "$out/stderr" &&
	echo "ok   a warning quoting a region's name: its controls as '?'" ||
	fail "warning with control characters: $(cat -v "$out/stderr")"

[ "$failed" -eq 0 ] && echo "all ampview CLI checks passed"
[ "$failed" -eq 0 ]
