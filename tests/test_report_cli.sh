#!/usr/bin/env bash
# `amptrace report` from the outside: --help, exit codes and messages for
# bad command lines and bad traces (exit 2, the file named, no page left
# behind), the page is one self-contained file (nothing fetched), and its
# data agrees with `amptrace summary --json` on the same trace (ops, casts,
# cache hits and findings summed over steps).  Also: truncated, crashed
# and merged traces, the header's framework field, --no-graph, and
# `amptrace run --report`.  The browser test (test_report_browser.sh)
# checks what the page draws.
#
#   test_report_cli.sh AMPTRACE TRACE_PROG FIXTURES WHOLE_LOOP
set -u
amptrace=$1
trace_prog=$2
fx=$3
whole_loop=$4
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"
# The page's data (the JSON in #r-data), checked by a Python expression
# over `d` (the data) and `s` (summary --json of the trace, when given).
data_ok() { # page, expression, [trace]
	python3 - "$@" <<'PY'
import json, re, subprocess, sys
page, expression = sys.argv[1], sys.argv[2]
html = open(page, encoding="utf-8").read()
m = re.search(r'<script id="r-data" type="application/json">(.*?)</script>', html, re.S)
d = json.loads(m.group(1))
s = None
if len(sys.argv) > 3:
    s = json.loads(subprocess.run([sys.argv[4], "summary", "--json", sys.argv[3]],
                                  capture_output=True, check=True).stdout)
ok = eval(expression)
if not ok:
    print("# false:", expression)
sys.exit(0 if ok else 1)
PY
}
data_is() { data_ok "$1" "$2" ${3:+"$3"} ${3:+"$amptrace"}; }

# ------------------------------------------------------------- usage
capture "$amptrace" report --help
check "report --help exits 0" status_is 0
check "report --help prints usage" out_has "usage: amptrace report"
capture "$amptrace" help report
check "help report" out_has "usage: amptrace report"
capture "$amptrace" --help
check "amptrace --help lists report" out_has "report"
capture "$amptrace" report
check "no trace: exit 2" status_is 2
check "no trace: says so" err_has "no trace given"
capture "$amptrace" report --bogus "$fx/good.json"
check "unknown option: exit 2" status_is 2
check "unknown option: named" err_has "unknown option '--bogus'"
capture "$amptrace" report "$fx/good.json" --no-grahp
check "mistyped option: did you mean" err_has "did you mean '--no-graph'?"
check "mistyped option: how to get help" err_has "Try 'amptrace report --help'."
capture "$amptrace" report "$fx/good.json" -o
check "-o without a file: exit 2" status_is 2
capture "$amptrace" report "$fx/good.json" "$fx/changed.json"
check "two traces: exit 2" status_is 2

# ------------------------------------------------------- bad traces
for entry in "missing.json:cannot open" "empty.json:empty file" \
	"garbage.bin:garbage.bin:1:1: expected a trace" \
	"wrong-types.json:wrong-types.json:14:" \
	"future-version.json:trace format 2.0 is not supported"; do
	file=${entry%%:*}
	capture "$amptrace" report "$fx/$file" -o "$tmp/bad.html"
	check "$file: exit 2" status_is 2
	check "$file: message names the problem" err_has "${entry#*:}"
	check "$file: no page written" no_file "$tmp/bad.html"
done
cp "$fx/good.json" "$tmp/keep.json"
capture "$amptrace" report "$tmp/keep.json" -o "$tmp/keep.json"
check "-o the trace itself: exit 2" status_is 2
check "-o the trace itself: the trace is kept" cmp -s "$fx/good.json" "$tmp/keep.json"
ln -s keep.json "$tmp/keep-link.json"
capture "$amptrace" report "$tmp/keep.json" -o "$tmp/keep-link.json"
check "-o a link to the trace: exit 2, named an input" eval \
	'status_is 2 && err_has "$tmp/keep-link.json is $tmp/keep.json, an input"'
check "... the trace and the link are kept" eval \
	'cmp -s "$fx/good.json" "$tmp/keep.json" && [ -L "$tmp/keep-link.json" ]'

# --- outputs that are not a regular file of their own are written
# through, never replaced: a FIFO stays a FIFO, a symlink a symlink (as
# /dev/null, /dev/stdout would stay what they are)
mkfifo "$tmp/page.fifo"
timeout 10 cat "$tmp/page.fifo" >"$tmp/from-fifo.html" &
capture "$amptrace" report "$fx/good.json" --no-graph -o "$tmp/page.fifo"
wait
check "-o a FIFO: exit 0, the page went through it, the FIFO stays" eval \
	'status_is 0 && grep -q "</html>" "$tmp/from-fifo.html" && [ -p "$tmp/page.fifo" ]'
touch "$tmp/real.html"
ln -s real.html "$tmp/link.html"
capture "$amptrace" report "$fx/good.json" --no-graph -o "$tmp/link.html"
check "-o a symlink: exit 0, the page is in its target, the link stays" eval \
	'status_is 0 && grep -q "</html>" "$tmp/real.html" && [ -L "$tmp/link.html" ]'
ln -s /proc/self/fd/1 "$tmp/stdout"
"$amptrace" report "$fx/good.json" --no-graph -o "$tmp/stdout" >"$tmp/out.html" 2>"$tmp/err"
status=$?
check "-o a link to standard output: exit 0, the page on stdout, the link stays" eval \
	'[ "$status" -eq 0 ] && grep -q "</html>" "$tmp/out.html" && [ -L "$tmp/stdout" ]'
capture "$amptrace" run --raw-dir "$tmp" -o "$tmp/rl.json" --report "$tmp/link.html" -- \
	"$trace_prog" ops 3
check "run --report a symlink: the link stays" eval \
	'status_is 0 && [ -L "$tmp/link.html" ] && grep -q "</html>" "$tmp/real.html"'

capture "$amptrace" report "$fx/good.json" -o "$tmp/no/such/dir/r.html"
check "unwritable output: exit 1" status_is 1
check "unwritable output: named" err_has "cannot write $tmp/no/such/dir/r.html"

# ------------------------------------------------ a page, self-contained
# 6 steps: the first third under the whole-loop region gives a stale hit,
# so the page has two findings to order
"$amptrace" run -q -o "$tmp/wl.json" -- "$whole_loop" --device cuda --steps 6 \
	>/dev/null 2>&1
capture "$amptrace" report "$tmp/wl.json"
check "default output: TRACE.html" status_is 0
check "default output: reported" out_has "wrote $tmp/wl.html"
page=$tmp/wl.html
check "page written" test -s "$page"
check "nothing fetched: no src/href to a URL, no <link>" \
	sh -c "! grep -Eiq '(src|href)=\"?(https?:)?//|<link|@import' '$page'"
check "Chart.js embedded" grep -q "Chart.js v" "$page"
check "no unfilled marker" sh -c "! grep -Eq '@@(TITLE|DATA|GRAPH|STYLE|SCRIPT|CHARTJS)@@' '$page'"
check "graph embedded (ampview's SVG)" data_is "$page" 'd["graph"]["drawn"]'
check "graph: the SVG element inline, no XML prolog" \
	sh -c "grep -q '<svg' '$page' && ! grep -q '<?xml' '$page'"
check "framework defaults to libamp" data_is "$page" 'd["framework"].startswith("libamp")'
check "exit status from the trailer" data_is "$page" 'd["exit"] == "exited with 0"'
check "not truncated" data_is "$page" 'not d["truncated"] and d["note"] is None'
check "steps as summary counts them" data_is "$page" \
	'd["steps"]["count"] == s["steps"]["count"] == 6' "$tmp/wl.json"
check "ops per step add up to summary's" data_is "$page" \
	'sum(sum(v) for p in d["processes"] for v in p["ops"].values()) == sum(o["count"] for o in s["ops"])' \
	"$tmp/wl.json"
# 8 steps, 2 in full detail: the regions of the other 6 are counted, as
# summary counts them, and the page says so under its regions table
"$amptrace" run -q --steps 0:1 -o "$tmp/bounded.json" -- "$whole_loop" \
	--device cuda --steps 8 >/dev/null 2>&1
"$amptrace" report "$tmp/bounded.json" -o "$tmp/bounded.html" >/dev/null
check "regions of aggregated steps: counted as summary counts them" data_is \
	"$tmp/bounded.html" \
	'sum(p["regions_aggregated"] for p in d["processes"]) == s["regions_aggregated"] > 0' \
	"$tmp/bounded.json"
check "op table adds up to summary's" data_is "$page" \
	'sum(r["count"] for p in d["processes"] for r in p["op_table"]) == sum(o["count"] for o in s["ops"])' \
	"$tmp/wl.json"
check "casts per step add up to summary's" data_is "$page" \
	'sum(sum(v) for p in d["processes"] for v in p["casts"].values()) == sum(c["casts"] for c in s["casts"])' \
	"$tmp/wl.json"
check "casts per op group add up to summary's" data_is "$page" \
	'sum(r["casts"] for p in d["processes"] for r in p["op_table"]) == sum(c["casts"] for c in s["casts"])' \
	"$tmp/wl.json"
check "cache hits and misses per step add up" data_is "$page" \
	'sum(d["processes"][0]["hits"]) == s["cache"]["hits"] and sum(d["processes"][0]["misses"]) == s["cache"]["misses"]' \
	"$tmp/wl.json"
check "findings as summary's, in its order" data_is "$page" \
	'[f["kind"] for f in d["findings"]] == [f["kind"] for f in s["findings"]] and len(s["findings"]) >= 2' \
	"$tmp/wl.json"
check "a finding's op links to an op-table row" data_is "$page" \
	'any(f["group"] in {r["id"] for r in d["processes"][0]["op_table"]} for f in d["findings"])'
check "scale per step from the GradScaler" data_is "$page" \
	'len(d["processes"][0]["scale"]) == 6 and all(x["scale"] > 0 for x in d["processes"][0]["scale"])'
check "regions with depth and device" data_is "$page" \
	'all(r["depth"] >= 1 and r["device"] == "cuda" for r in d["processes"][0]["regions"])'

capture "$amptrace" report --no-graph "$tmp/wl.json" -o "$tmp/ng.html"
check "--no-graph: exit 0" status_is 0
check "--no-graph: no graph, says why" data_is "$tmp/ng.html" \
	'not d["graph"]["drawn"] and "--no-graph" in d["graph"]["why"]'

# ----------------------------------------- how a trace ended, framework
capture "$amptrace" report "$fx/truncated.json" -o "$tmp/t.html"
check "truncated trace: exit 0" status_is 0
check "truncated trace: warned on stderr" err_has "truncated at line"
check "truncated trace: said in the page" data_is "$tmp/t.html" \
	'd["truncated"] and "truncated" in d["note"]'
"$amptrace" run -q -o "$tmp/segv.json" -- "$trace_prog" segv-in-op 20 >/dev/null 2>&1
capture "$amptrace" report "$tmp/segv.json" -o "$tmp/segv.html"
check "crashed program: exit 0" status_is 0
check "crashed program: the page says how it died" data_is "$tmp/segv.html" \
	'd["truncated"] and "SIGSEGV" in d["note"] and "process-died" in [f["kind"] for f in d["findings"]]'
python3 - "$fx/good.json" "$tmp/torch.json" <<'PY'
import sys
text = open(sys.argv[1]).read()
open(sys.argv[2], "w").write(text.replace('"amptrace":{', '"amptrace":{"framework":"torch 1.13.1 (policy table: 1.13)",', 1))
PY
capture "$amptrace" report "$tmp/torch.json" -o "$tmp/torch.html"
check "framework from the header" data_is "$tmp/torch.html" 'd["framework"] == "torch 1.13.1 (policy table: 1.13)"'

# ------------------------------------------------------- merged ranks
"$amptrace" run -q -o "$tmp/r.json" -- "$trace_prog" ranks 2 10 >/dev/null 2>&1
"$amptrace" merge "$tmp/r.rank0.json" "$tmp/r.rank1.json" -o "$tmp/all.json" \
	>/dev/null 2>&1
capture "$amptrace" report "$tmp/all.json" -o "$tmp/all.html"
check "merged trace: exit 0" status_is 0
check "merged trace: one entry per rank" data_is "$tmp/all.html" \
	'sorted(p["rank"] for p in d["processes"]) == [0, 1]'
# a finding of both ranks: once, rank 0's, on how many ranks
"$amptrace" merge "$fx/changed.json" "$fx/changed.json" -o "$tmp/cc.json" \
	>/dev/null 2>&1
capture "$amptrace" report "$tmp/cc.json" -o "$tmp/cc.html"
check "two ranks' findings: each once, rank 0's, on both" data_is "$tmp/cc.html" \
	'[(f["kind"], f["count"], f["ranks"], f["each"], f["pid"]) for f in d["findings"]][:2] == [("stale-cache", 2, 2, 1, 1), ("backward-under-autocast", 4, 2, 2, 1)]'
# a process that trains not (a Hogwild job's parent, mp.spawn's, a
# launcher: it made tensors, then started the ones that train) listed
# first: the page opens on the first that trains
python3 "$(dirname "$0")/add_process.py" "$tmp/all.json" "$tmp/parent.json" \
	--first
capture "$amptrace" report --no-graph "$tmp/parent.json" -o "$tmp/parent.html"
check "a parent that trains not, listed first: the page opens on rank 0" \
	data_is "$tmp/parent.html" \
	'[p["pid"] for p in d["processes"]] == [9, 1, 2] and d["opens"] == 1'
# mp.spawn's parent that ran the model once before spawning its ranks
# trains too, but is no rank: the page opens on rank 0, ampview's graph's
python3 "$(dirname "$0")/add_process.py" "$tmp/all.json" \
	"$tmp/parent_trains.json" --first --phase backward
capture "$amptrace" report --no-graph "$tmp/parent_trains.json" \
	-o "$tmp/parent_trains.html"
check "a parent that trains once, no rank: the page opens on rank 0" \
	data_is "$tmp/parent_trains.html" \
	'd["processes"][0]["rank"] is None and d["processes"][1]["rank"] == 0 and d["opens"] == 1'

# the page's mode follows the umask, as any file the user creates
check "umask 077: the page is 600" bash -c "umask 077 && '$amptrace' report --no-graph '$fx/good.json' -o '$tmp/private.html' >/dev/null 2>&1 && test \$(stat -c %a '$tmp/private.html') = 600"
check "umask 022: the page is 644" bash -c "umask 022 && '$amptrace' report --no-graph '$fx/good.json' -o '$tmp/shared.html' >/dev/null 2>&1 && test \$(stat -c %a '$tmp/shared.html') = 644"

# ampview found next to amptrace, writing 256 KiB of warnings before its
# SVG: the report reads both pipes at once (reading stdout to its end
# first waited forever on an ampview blocked on a full stderr pipe)
mkdir "$tmp/bin"
cp "$amptrace" "$tmp/bin/amptrace"
cat >"$tmp/bin/ampview" <<'SH'
#!/bin/sh
head -c 262144 /dev/zero | tr '\0' w >&2
echo '<svg id="fake"></svg>'
SH
chmod +x "$tmp/bin/ampview"
capture timeout 60 "$tmp/bin/amptrace" report "$fx/good.json" -o "$tmp/noisy.html"
check "ampview noisy on stderr: the report finishes" status_is 0
check "ampview noisy on stderr: its SVG embedded" grep -q '<svg id="fake">' "$tmp/noisy.html"

# ------------------------------------------------------- module tree
# A torch-style trace whose ops name their modules (made by hand, no
# torch): the page's module tree has each module under the one holding
# it, as deep as keeps it to 60 rows, each row as summary --depth N
# counts it; the graph is ampview's module view.
python3 "$(dirname "$0")/viewer_module_trace.py" "$tmp/modules.json" 8
capture "$amptrace" report "$tmp/modules.json" -o "$tmp/modules.html"
check "module tree: the page is written" status_is 0
check "module tree: 3 levels, 34 rows, blocks.3.fc2 under blocks.3" data_is \
	"$tmp/modules.html" '[(r["depth"], r["name"], r["class"]) for r in d["modules"]["rows"]][:6] == [(1, "blocks", None), (2, "0", "Block"), (3, "fc1", "Linear"), (3, "act", "ReLU"), (3, "fc2", "Linear"), (2, "1", "Block")] and d["modules"]["depth"] == 3 and len(d["modules"]["rows"]) == 34 and d["modules"]["rows"][-1]["module"] == "head"'
check "module tree: every row as summary --depth counts it" python3 - \
	"$tmp/modules.html" "$tmp/modules.json" "$amptrace" <<'PY'
import json, re, subprocess, sys
html = open(sys.argv[1], encoding="utf-8").read()
d = json.loads(re.search(r'<script id="r-data" type="application/json">(.*?)</script>',
                         html, re.S).group(1))
keys = ("ops", "outputs", "casts", "cache_hits", "time_us")
for depth in (1, 2, 3):
    s = json.loads(subprocess.run([sys.argv[3], "summary", "--json", "--depth",
                                   str(depth), sys.argv[2]],
                                  capture_output=True, check=True).stdout)
    want = {r["module"]: r for r in s["modules"]["rows"]}
    for r in d["modules"]["rows"]:
        if r["depth"] == depth and r["module"] is not None:
            got = {k: r[k] for k in keys}
            if got != {k: want[r["module"]][k] for k in keys}:
                sys.exit("row %s: %s, summary: %s" % (r["module"], got,
                                                      want[r["module"]]))
PY
check "module tree: the graph is ampview's module view" \
	grep -q 'modules [0-9]* levels\{0,1\} deep' "$tmp/modules.html"
check "no module tree for a trace whose ops name none" data_is "$page" \
	'd["modules"] is None'

# ------------------------------------------------------ run --report
capture "$amptrace" run -q -o "$tmp/run.json" --report "$tmp/run.html" -- \
	"$trace_prog" ops 5 3
check "run --report: the program's exit status" status_is 3
check "run --report: page written" data_is "$tmp/run.html" \
	'd["exit"] == "exited with 3" and d["counts"]["ops"] >= 5'
capture "$amptrace" run -q -o "$tmp/rr.json" --report "$tmp/rr.html" -- \
	"$trace_prog" ranks 2 5
check "run --report with ranks: one page, of their merge" \
	test -s "$tmp/rr.html" -a ! -e "$tmp/rr.rank0.html"
check "run --report with ranks: the page has both ranks' ops" \
	data_is "$tmp/rr.html" 'd["counts"]["ops"] >= 10'
capture "$amptrace" run -q --no-merge -o "$tmp/ra.json" --report "$tmp/ra.html" -- \
	"$trace_prog" ranks 2 5
check "run --report --no-merge: a page per rank" \
	test -s "$tmp/ra.rank0.html" -a -s "$tmp/ra.rank1.html"
capture "$amptrace" run --report
check "run --report without a file: exit 2" status_is 2

exit $fail
