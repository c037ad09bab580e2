#!/bin/sh
# `amptrace report` on a trace of about 100,000 ops (the mlp sample,
# 1,450 steps): the page's time and size.  Targets: at most 2 s and under
# about 5 MB.  The anchor is `amptrace summary --json` on the same trace
# (the same reader and analysis, no page), timed interleaved with the
# report; medians of 5 runs.  The report runs ampview (the graph) in a
# second process while it reads the trace itself: ampview alone and the
# report without the graph are timed too, the larger of the two being
# the report's time when two cores are free.
#
#   bench_report.sh AMPTRACE AMPVIEW MLP
set -eu
amptrace=$1
ampview=$2
mlp=$3
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$amptrace" run -q -o "$out/trace.json" -- "$mlp" --steps 1450 >/dev/null
ops=$("$amptrace" summary --json "$out/trace.json" |
	python3 -c 'import json, sys; print(sum(o["count"] for o in json.load(sys.stdin)["ops"]))')

seconds() { # command... -> elapsed seconds on stdout
	start=$(date +%s%N)
	"$@" >/dev/null
	end=$(date +%s%N)
	awk -v a="$start" -v b="$end" 'BEGIN { printf "%.4f\n", (b - a) / 1e9 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: >"$out/summary.t"
: >"$out/report.t"
: >"$out/nograph.t"
: >"$out/ampview.t"
for _ in 1 2 3 4 5; do
	seconds "$amptrace" summary --json "$out/trace.json" >>"$out/summary.t"
	seconds "$amptrace" report "$out/trace.json" -o "$out/r.html" >>"$out/report.t"
	seconds "$amptrace" report --no-graph "$out/trace.json" \
		-o "$out/n.html" >>"$out/nograph.t"
	seconds "$ampview" "$out/trace.json" -o "$out/g.svg" >>"$out/ampview.t"
done
awk -v ops="$ops" -v trace="$(wc -c <"$out/trace.json")" \
    -v page="$(wc -c <"$out/r.html")" -v summary="$(median <"$out/summary.t")" \
    -v report="$(median <"$out/report.t")" \
    -v nograph="$(median <"$out/nograph.t")" \
    -v ampview="$(median <"$out/ampview.t")" 'BEGIN {
	printf "trace: %d ops, %.1f MB of JSON\n", ops, trace / 1e6
	printf "summary --json (anchor)  %6.3f s\n", summary
	printf "report                   %6.3f s = %.2f x summary (target <= 2 s: %s)\n",
		report, report / summary, report <= 2 ? "met" : "MISSED"
	printf "report --no-graph        %6.3f s = %.2f x summary\n",
		nograph, nograph / summary
	printf "ampview alone            %6.3f s = %.2f x summary\n",
		ampview, ampview / summary
	both = nograph > ampview ? nograph : ampview
	printf "report, two free cores   %6.3f s = %.2f x summary (the larger of the two above)\n",
		both, both / summary
	printf "page                     %6.2f MB = %.4f x the trace (target < 5 MB: %s)\n",
		page / 1e6, page / trace, page < 5e6 ? "met" : "MISSED"
}'
