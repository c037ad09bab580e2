#!/usr/bin/env bash
# `amptrace report` in a real browser: headless Chromium opens the reports
# of two samples (whole_loop on the emulated cuda device: warnings;
# transformer: a healthy GradScaler run with many ops) and the test
# fails on any console message or script error, on a chart that drew no
# data, on a finding of `amptrace summary` missing from the page, or on a
# graph that is not there.  A copy of a page with a script error planted
# in it must be caught, so the checks are shown to bite.  Then
# report_interact.py clicks through a page (finding links to the table
# and the graph, sorting, filtering, the graph's command line, a merged
# trace's rank selector).  Skipped (exit 77) when chromium is not
# installed.
#
#   test_report_browser.sh AMPTRACE WHOLE_LOOP TRANSFORMER TRACE_PROG
#                          INTERACT.py [KEEP.png]
#
# KEEP.png keeps a screenshot of the whole_loop report (docs/report.png is
# made so).
set -u
amptrace=$1
whole_loop=$2
transformer=$3
trace_prog=$4
interact=$5
keep=${6:-}
. "$(dirname "$0")/chromium.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

# A fresh profile, no network, no GPU: what works in a container.
browse() { # page, extra chromium options...
	local page=$1; shift
	rm -rf "$tmp/profile"
	timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
		--disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
		--virtual-time-budget=10000 "$@" "file://$page"
}
# Renders `page`: its DOM after the scripts ran in $tmp/dom, Chromium's
# log (console messages included) in $tmp/log.
render() {
	browse "$1" --dump-dom >"$tmp/dom" 2>"$tmp/log"
}
console_quiet() {
	! grep -E 'CONSOLE|Uncaught' "$tmp/log" ||
		{ echo "# the page wrote to the console (above)"; return 1; }
}
dom_has() { grep -qF -- "$1" "$tmp/dom" || { echo "# DOM lacks: $1"; return 1; }; }
# Every chart drew at least one point or bar.
charts_drew() {
	python3 - "$tmp/dom" <<'PY'
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
charts = re.findall(r'<figure class="r-chart" data-chart="(\w+)"([^>]*)>', dom)
bad = [name for name, attrs in charts
       if not re.search(r'data-points="([1-9]\d*)"', attrs)]
print("# charts:", ", ".join(name + " " + (re.search(r'data-points="(\d+)"', a) or [None, "?"])[1]
                            for name, a in charts))
sys.exit(1 if len(charts) != 5 or bad else 0)
PY
}
findings_shown() { # trace [none: the run is healthy, no finding]
	python3 - "$tmp/dom" "$1" "$amptrace" "${2:-some}" <<'PY'
import json, re, subprocess, sys
dom = open(sys.argv[1], encoding="utf-8").read()
summary = json.loads(subprocess.run([sys.argv[3], "summary", "--json", sys.argv[2]],
                                    capture_output=True, check=True).stdout)
kinds = [f["kind"] for f in summary["findings"]]
shown = re.findall(r'<li class="\w+" data-kind="([\w-]+)"', dom)
print("# findings in summary:", kinds, "in the page:", shown)
sys.exit(0 if shown == kinds and bool(kinds) == (sys.argv[4] != "none") else 1)
PY
}

"$amptrace" run -q -o "$tmp/whole_loop.json" -- "$whole_loop" --device cuda \
	--steps 8 >/dev/null 2>&1
"$amptrace" run -q -o "$tmp/transformer.json" -- "$transformer" --device cuda \
	--steps 6 --layers 2 >/dev/null 2>&1
for sample in whole_loop transformer; do
	"$amptrace" report "$tmp/$sample.json" -o "$tmp/$sample.html" >/dev/null ||
		{ echo "not ok - $sample: amptrace report failed"; fail=1; continue; }
	render "$tmp/$sample.html"
	check "$sample: the scripts ran to the end" dom_has 'data-ready="1"'
	check "$sample: no script error" dom_has 'data-errors="0"'
	check "$sample: nothing on the console" console_quiet
	check "$sample: every chart drew data" charts_drew
	if [ "$sample" = transformer ]; then
		# a healthy run: no finding, the clean verdict
		check "$sample: no finding, as summary" \
			findings_shown "$tmp/$sample.json" none
		check "$sample: the clean verdict" \
			dom_has '<p id="r-verdict" class="r-verdict clean">No findings'
	else
		check "$sample: summary's findings, in order" \
			findings_shown "$tmp/$sample.json"
		check "$sample: a verdict" \
			dom_has '<p id="r-verdict" class="r-verdict"><span class="'
	fi
	check "$sample: the graph is drawn" dom_has 'data-graph="drawn"'
	check "$sample: tables filled" dom_has '<table id="r-ops"><thead>'
done
render "$tmp/whole_loop.html"
check "whole_loop: a finding links into the graph" dom_has '→ in the graph'
check "whole_loop: no module tree (its ops name no module)" \
	dom_has '<div id="r-modules-box" hidden'

# Two ranks of one program: each finding once, saying it is on both
"$amptrace" merge "$tmp/whole_loop.json" "$tmp/whole_loop.json" \
	-o "$tmp/two-ranks.json" >/dev/null 2>&1
"$amptrace" report "$tmp/two-ranks.json" -o "$tmp/two-ranks.html" >/dev/null
render "$tmp/two-ranks.html"
check "two ranks: summary's findings, each once" \
	findings_shown "$tmp/two-ranks.json"
check "two ranks: a finding on both said so" dom_has ' on each of 2 ranks: '
# ... and of three, one healthy: on 2 of them
"$amptrace" merge "$tmp/whole_loop.json" "$tmp/whole_loop.json" \
	"$tmp/transformer.json" -o "$tmp/three-ranks.json" >/dev/null 2>&1
"$amptrace" report "$tmp/three-ranks.json" -o "$tmp/three-ranks.html" >/dev/null
render "$tmp/three-ranks.html"
check "three ranks: a finding two have, on 2 of 3" dom_has ' on each of 2 of 3 ranks: '

# 8 steps, 2 in full detail: the regions table says how many regions the
# other 6 entered
"$amptrace" run -q --steps 0:1 -o "$tmp/bounded.json" -- "$whole_loop" \
	--device cuda --steps 8 >/dev/null 2>&1
"$amptrace" report "$tmp/bounded.json" -o "$tmp/bounded.html" >/dev/null
render "$tmp/bounded.html"
check "bounded: the regions of the aggregated steps are said" dom_has \
	'<small id="r-regions-note">and 6 more entered in steps recorded as per-step aggregates'

# A trace whose ops name their modules (hand-made, no torch): the module
# tree is shown, one table row per module, indented under its parent.
python3 "$(dirname "$0")/viewer_module_trace.py" "$tmp/modules.json" 8
"$amptrace" report "$tmp/modules.json" -o "$tmp/modules.html" >/dev/null
render "$tmp/modules.html"
check "modules: no script error" dom_has 'data-errors="0"'
check "modules: the tree's 34 rows drawn" python3 - "$tmp/dom" <<'PY'
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
table = re.search(r'<table id="r-modules" data-rows="34">(.*?)</table>', dom, re.S)
rows = re.findall(r'<tr>(.*?)</tr>', table.group(1), re.S) if table else []
fc2 = [r for r in rows if 'title="blocks.3.fc2"' in r]
print("# module rows:", len(rows) - 1)
sys.exit(0 if len(rows) == 35 and fc2 and "padding-left:2.4em" in fc2[0] else 1)
PY
# a tree's order is its structure: its headers do not sort it; the op
# table's do
check "modules: the tree is not sortable, the op table is" python3 - "$tmp/dom" <<'PY'
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
def head(table):
    found = re.search(r'<table id="%s"[^>]*><thead>(.*?)</thead>' % table, dom, re.S)
    return found.group(1) if found else ""
sys.exit(0 if 'click to sort' in head("r-ops") and head("r-modules") and
         'click to sort' not in head("r-modules") else 1)
PY

# Steps recorded as aggregates, two of them cut short (a process ended in
# each): the page's Steps row says so as summary does
sed 's/"step":\([13]\),/"step":\1,"cut_short":true,/' \
	"$(dirname "$0")/fixtures/trace/aggregate-overflow-skips.json" >"$tmp/cut.json"
"$amptrace" report -o "$tmp/cut.html" "$tmp/cut.json" >/dev/null 2>&1
render "$tmp/cut.html"
check "cut short: no script error" dom_has 'data-errors="0"'
check "cut short: the Steps row names the aggregated steps and those cut short" \
	dom_has '0 in full detail, 4 as per-step aggregates; steps 1 and 3 cut short (a process or its trace ended in each: counted up to then)'


# The checks bite: a planted error shows on the console and in the DOM.
sed 's|</body>|<script>null.planted;</script></body>|' "$tmp/whole_loop.html" \
	>"$tmp/broken.html"
render "$tmp/broken.html"
check "a planted script error is seen on the console" \
	grep -qE 'CONSOLE|Uncaught' "$tmp/log"
check "a planted script error is counted" dom_has 'data-errors="1"'

# A user's clicks, on a sample and on a merged two-rank trace.
"$amptrace" run -q -o "$tmp/r.json" -- "$trace_prog" ranks 2 10 >/dev/null 2>&1
"$amptrace" merge "$tmp/r.rank0.json" "$tmp/r.rank1.json" -o "$tmp/merged.json" \
	>/dev/null 2>&1
"$amptrace" report "$tmp/merged.json" -o "$tmp/merged.html" >/dev/null
rm -rf "$tmp/profile"
python3 "$(dirname "$0")/add_process.py" "$tmp/merged.json" \
	"$tmp/parent.json" --first
"$amptrace" report --no-graph "$tmp/parent.json" -o "$tmp/parent.html" \
	>/dev/null
timeout 120 python3 "$interact" "$chromium" "$tmp/profile" \
	"$tmp/whole_loop.html" "$tmp/merged.html" "$tmp/parent.html" ||
	{ echo "not ok - interacting with the page (above)"; fail=1; }

browse "$tmp/whole_loop.html" --hide-scrollbars --window-size=1400,1500 \
	--screenshot="$tmp/report.png" >/dev/null 2>&1
size=$(wc -c <"$tmp/report.png" 2>/dev/null || echo 0)
echo "# screenshot: $size bytes"
# A blank page compresses to a few KB; charts, tables and text take far more.
check "screenshot taken and not blank" test "$size" -gt 60000
[ -z "$keep" ] || cp "$tmp/report.png" "$keep"
exit $fail
