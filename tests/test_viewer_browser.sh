#!/bin/sh
# A real browser check: headless Chromium renders ampview's SVG of the
# transformer sample to a PNG, and the PNG is not blank; the text of the
# legend and the notes fits their borders as Chromium lays it out.  The
# whole_loop trace of tests/fixtures/viewer (next to this script) gives
# the notes of the findings of other steps.  Skipped (exit
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
. "$(dirname "$0")/chromium.sh"
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

# The text of the legend and of the findings' notes fits their borders
# as Chromium lays it out (its font shaping is a little wider than the
# Pango metrics Graphviz sizes the boxes with): the SVG inline in a page
# whose script measures both ends of every line's visible glyphs against
# the node's outer box.  Twice: the transformer's graph (the legend, its
# notes) and the whole_loop fixture's step 0 (notes, and the note about
# the findings of other steps).
fits() { # SVG WANTED-NODE: prints "worst-overflow nodes node text"
	python3 - "$1" "$out/fits.html" <<'PY'
import sys
svg = open(sys.argv[1], encoding="utf-8").read()
script = """<script>
var worst = -1e9, names = [], where = "";
document.querySelectorAll("g.node").forEach(function (g) {
  var title = g.querySelector("title"), name = title ? title.textContent : "";
  if (name !== "legend" && name !== "elsewhere" && !/^finding[0-9]+$/.test(name))
    return;
  var box = null;
  g.querySelectorAll("polygon").forEach(function (p) {
    var b = p.getBBox();
    if (!box || b.width * b.height > box.width * box.height) box = b;
  });
  if (!box) return;
  names.push(name);
  g.querySelectorAll("text").forEach(function (t) {
    var text = t.textContent.replace(/[\u00a0 ]+$/, "");
    if (!text.trim().length) return;
    var left = t.getStartPositionOfChar(0).x;
    var right = left + t.getSubStringLength(0, text.length);
    var over = Math.max(right - box.x - box.width, box.x - left);
    if (over > worst) { worst = over; where = name + ": " + text.trim(); }
  });
});
document.body.setAttribute("data-fits", worst.toFixed(1) + " " + names.join(",")
  + " " + where);
</script>"""
page = "<!DOCTYPE html><html><body>" + svg[svg.index("<svg"):] + script + "</body></html>"
open(sys.argv[2], "w", encoding="utf-8").write(page)
PY
	timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-quic \
		--no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--user-data-dir="$out/profile" --dump-dom "file://$out/fits.html" \
		>"$out/fits.dom" 2>"$out/chromium-fits.log"
	sed -n 's/.*data-fits="\([^"]*\)".*/\1/p' "$out/fits.dom" | head -n1
}

failed=0
# check SVG WANTED: every box's text fits, and WANTED is among the boxes
check() {
	result=$(fits "$1")
	over=${result%% *}
	rest=${result#* }
	names=${rest%% *}
	where=${rest#* }
	case ",$names," in
	*",$2,"*) ;;
	*) echo "FAIL: no '$2' measured in Chromium ('$result')"; failed=1; return ;;
	esac
	if ! awk -v over="$over" 'BEGIN { exit !(over + 0 <= 0) }'; then
		echo "FAIL: text runs $over px past its border: $where"
		failed=1
		return
	fi
	echo "ok   text fits its box in Chromium: $names (closest: $over px, $where)"
}
check "$out/graph.svg" legend
fixtures=$(dirname "$0")/fixtures/viewer
"$ampview" "$fixtures/whole_loop.json" --step 0 -o "$out/notes.svg" ||
	{ echo "FAIL: ampview whole_loop.json --step 0"; exit 1; }
check "$out/notes.svg" elsewhere
exit $failed
