#!/bin/sh
# The default graphs of real models stay readable: a 12-layer GPT-2
# (transformers, under the torch 2.13 python) and a ResNet-50 (timm, under
# the vision python), two bf16 training steps each, drawn by ampview's
# default view, rendered by headless Chromium at 100%: the SVG is at most
# 2000x2000 CSS px and its smallest text is at least 8 px tall.  SKIP
# (77) without chromium or without the pythons, naming which.
#
#   test_viewer_models.sh AMPTRACE AMPVIEW TORCH2_PYTHON VISION_PYTHON
set -u
amptrace=$1
ampview=$2
torch2_python=$3
vision_python=$4
here=$(cd "$(dirname "$0")" && pwd)
. "$here/chromium.sh"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
ran=0

# measure SVG: prints "WIDTH HEIGHT MIN-TEXT-HEIGHT TEXTS" in CSS px as
# Chromium lays the page out
measure() {
	python3 - "$1" "$out/page.html" <<'PY'
import sys
svg = open(sys.argv[1], encoding="utf-8").read()
svg = svg[svg.index("<svg"):]
script = """<script>
var s = document.querySelector("svg").getBoundingClientRect(), min = 1e9, n = 0;
document.querySelectorAll("svg text").forEach(function (t) {
  var h = t.getBoundingClientRect().height;
  if (t.textContent.trim()) { n++; if (h < min) min = h; }
});
document.body.setAttribute("data-size", s.width.toFixed(1) + " " +
  s.height.toFixed(1) + " " + min.toFixed(2) + " " + n);
</script>"""
open(sys.argv[2], "w", encoding="utf-8").write(
    "<!DOCTYPE html><html><body style='margin:0'>" + svg + script +
    "</body></html>")
PY
	timeout 120 "$chromium" --headless --no-sandbox --disable-gpu \
		--disable-quic --no-first-run --disable-background-networking \
		--disable-component-update --disable-sync \
		--user-data-dir="$out/profile" --force-device-scale-factor=1 \
		--dump-dom "file://$out/page.html" 2>"$out/chromium.log" |
		sed -n 's/.*data-size="\([^"]*\)".*/\1/p'
}

check() { # NAME PYTHON
	name=$1
	python=$2
	if [ -z "$python" ] || ! "$python" -c 'import torch' 2>/dev/null; then
		echo "skip $name: no python with torch for it ('$python')"
		return
	fi
	OMP_NUM_THREADS=1 "$amptrace" run -o "$out/$name.json" -- "$python" \
		"$here/torch/view_models.py" "$name" >"$out/$name.log" 2>&1 ||
		{ fail_run "$name"; return; }
	"$ampview" "$out/$name.json" -o "$out/$name.svg" -v 2>"$out/$name.err" ||
		{ echo "FAIL: ampview $name"; cat "$out/$name.err"; failed=1; return; }
	ran=$((ran + 1))
	set -- $(measure "$out/$name.svg")
	echo "$name: $(tail -1 "$out/$name.err")"
	echo "$name: Chromium lays the SVG out at ${1:-?}x${2:-?} px, smallest of ${4:-?} texts ${3:-?} px tall"
	if [ $# -ne 4 ] || ! awk -v w="$1" -v h="$2" -v t="$3" \
		'BEGIN { exit !(w <= 2000 && h <= 2000 && t >= 8) }'; then
		echo "FAIL: $name's default graph is not within 2000x2000 px with text >= 8 px"
		failed=1
	else
		echo "ok   $name's default graph fits and reads"
	fi
}

fail_run() {
	echo "FAIL: amptrace run $1"
	tail -20 "$out/$1.log"
	failed=1
}

check gpt2 "$torch2_python"
check resnet50 "$vision_python"
[ "$failed" -eq 0 ] || exit 1
if [ "$ran" -eq 0 ]; then
	echo "SKIP: neither the torch 2.13 python nor the vision python is set up"
	exit 77
fi
