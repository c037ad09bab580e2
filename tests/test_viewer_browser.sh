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
