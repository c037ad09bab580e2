#!/bin/sh
# A real browser check: headless Chromium renders ampview's SVG of the
# transformer sample to a PNG, and the PNG is not blank.  Skipped (exit
# 77) when chromium is not installed: this test installs nothing.  On
# Debian: apt-get install chromium.
#
#   test_viewer_browser.sh AMPVIEW AMPTRACE TRANSFORMER [KEEP.png]
#
# KEEP.png keeps the screenshot (docs/transformer-graph.png is made so).
set -u
ampview=$1
amptrace=$2
transformer=$3
keep=${4:-}
chromium=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$chromium" ]; then
	echo "SKIP: chromium is not installed (Debian: apt-get install chromium)"
	exit 77
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$amptrace" run -o "$out/trace.json" -- "$transformer" --device cuda \
	--steps 2 --layers 4 >"$out/run.log" 2>&1 ||
	{ echo "FAIL: amptrace run transformer"; cat "$out/run.log"; exit 1; }
"$ampview" "$out/trace.json" -o "$out/graph.svg" -v ||
	{ echo "FAIL: ampview"; exit 1; }

# A fresh profile, no network, no GPU: what works in a container.
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
	--no-first-run --disable-background-networking \
	--disable-component-update --disable-sync \
	--user-data-dir="$out/profile" --hide-scrollbars \
	--window-size=1600,1200 --screenshot="$out/graph.png" \
	"file://$out/graph.svg" >"$out/chromium.log" 2>&1
status=$?
if [ ! -s "$out/graph.png" ]; then
	echo "FAIL: chromium wrote no PNG (exit $status):"
	tail -20 "$out/chromium.log"
	exit 1
fi

# width and height: big-endian in the IHDR chunk, bytes 16..23
set -- $(od -An -tu1 -j16 -N8 "$out/graph.png")
width=$(( ($1 << 24) + ($2 << 16) + ($3 << 8) + $4 ))
height=$(( ($5 << 24) + ($6 << 16) + ($7 << 8) + $8 ))
size=$(wc -c <"$out/graph.png")
echo "chromium rendered graph.svg ($(wc -c <"$out/graph.svg") bytes) to a" \
	"${width}x${height} PNG of $size bytes"
# A blank 1600x1200 page compresses to a few KB; the graph's text, boxes
# and coloured edges take far more.
if [ "$width" -ne 1600 ] || [ "$height" -ne 1200 ] || [ "$size" -lt 40000 ]; then
	echo "FAIL: the screenshot looks empty or has the wrong size"
	exit 1
fi
[ -z "$keep" ] || cp "$out/graph.png" "$keep"
echo "ok   the browser shows the graph"

# The legend's text fits its border as Chromium lays the text out (its
# font shaping is a little wider than the Pango metrics Graphviz sizes the
# box with): the SVG inline in a page whose script measures the right end
# of every legend line's visible glyphs against the legend's outer box.
python3 - "$out/graph.svg" "$out/legend.html" <<'PY'
import sys
svg = open(sys.argv[1], encoding="utf-8").read()
script = """<script>
var box = null, right = 0, worst = "";
document.querySelectorAll("g.node").forEach(function (g) {
  var title = g.querySelector("title");
  if (!title || title.textContent !== "legend") return;
  g.querySelectorAll("polygon").forEach(function (p) {
    var b = p.getBBox();
    if (!box || b.width * b.height > box.width * box.height) box = b;
  });
  g.querySelectorAll("text").forEach(function (t) {
    var n = t.textContent.replace(/[\\u00a0 ]+$/, "").length;
    if (!n) return;
    var r = t.getStartPositionOfChar(0).x + t.getSubStringLength(0, n);
    if (r > right) { right = r; worst = t.textContent.trim(); }
  });
});
document.body.setAttribute("data-legend", box
  ? (box.x + box.width).toFixed(1) + " " + right.toFixed(1) + " " + worst
  : "none");
</script>"""
page = "<!DOCTYPE html><html><body>" + svg[svg.index("<svg"):] + script + "</body></html>"
open(sys.argv[2], "w", encoding="utf-8").write(page)
PY
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
	--no-first-run --disable-background-networking \
	--disable-component-update --disable-sync \
	--user-data-dir="$out/profile" --dump-dom "file://$out/legend.html" \
	>"$out/legend.dom" 2>"$out/chromium-legend.log"
legend=$(sed -n 's/.*data-legend="\([^"]*\)".*/\1/p' "$out/legend.dom" | head -n1)
set -- $legend
if [ $# -lt 2 ] || [ "$1" = none ]; then
	echo "FAIL: could not measure the legend in Chromium ('$legend')"
	exit 1
fi
if ! awk -v box="$1" -v text="$2" 'BEGIN { exit !(text + 0 <= box + 0) }'; then
	echo "FAIL: legend text ends at x=$2, past its border at x=$1: $legend"
	exit 1
fi
echo "ok   the legend's text fits its box in Chromium (text ends at $2, box at $1)"
