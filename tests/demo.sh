#!/usr/bin/env bash
# ./run demo: what autocast does to a small transformer block, shown the
# ways amptrace answers it — explain, a traced run, its summary, CI rules,
# the computation graph, and the HTML report.
set -eu
build=${1:-build}
amptrace="$build/tracer/amptrace"
out=${AMPTRACE_DEMO_DIR:-demo}
mkdir -p "$out"
section() { printf '\n== %s\n' "$*"; }

section "amptrace explain: what CUDA autocast does to a few ops"
for op in "linear f32 f32:leaf f32:leaf" "softmax f16" "addcmul f16 f32 f16"; do
	echo "\$ amptrace explain --device cuda $op"
	# shellcheck disable=SC2086
	"$amptrace" explain --device cuda $op
	echo
done

section "where the casts happen: samples/infer on the (emulated) cuda device"
"$build/samples/infer" --device cuda --layers 2 --repeat 2

section "amptrace run: trace the transformer sample"
"$amptrace" run -o "$out/transformer.json" -- \
	"$build/samples/transformer" --device cuda --steps 6

section "amptrace summary"
"$amptrace" summary "$out/transformer.json"

section "amptrace check: cast assertions for CI"
cat > "$out/amp.rules" <<'RULES'
op linear: output f16
op softmax: output f32
casts total <= 2000
no finding stale-cache
no finding backward-under-autocast
scaler skipped-steps <= 1
RULES
cat "$out/amp.rules"
status=0
"$amptrace" check "$out/transformer.json" "$out/amp.rules" || status=$?
echo "(check exited $status)"

if [ -x "$build/viewer/ampview" ]; then
	section "ampview: the computation graph"
	"$build/viewer/ampview" "$out/transformer.json" -o "$out/transformer.svg"
	echo "wrote $out/transformer.svg (open it in a browser);" \
	     "the trace opens at https://ui.perfetto.dev"
fi

section "amptrace report: one HTML page (findings, charts, tables, graph)"
"$amptrace" report "$out/transformer.json" -o "$out/report.html" >/dev/null
echo "wrote $out/report.html (open it in a browser; it loads nothing from the network)"
