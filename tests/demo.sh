#!/usr/bin/env bash
# ./run demo: the main job first — a PyTorch training program traced, its
# summary, graph and report — then what autocast does to a libamp
# program, shown the ways amptrace answers it: explain, a traced run, its
# summary, CI rules, the computation graph, and the HTML report.
#
# The PyTorch program is transformers' GPT-2 built from a config
# (samples/torch/train_gpt2.py) where transformers is installed, else the
# project's own torch twin of the transformer sample.  The Python is
# $AMPTRACE_DEMO_PYTHON, else ./run's torch 2.13 environment
# (tests/torch/venv.sh, where this checkout has it), else Debian's.
set -eu
build=${1:-build}
amptrace="$build/tracer/amptrace"
out=${AMPTRACE_DEMO_DIR:-demo}
mkdir -p "$out"
section() { printf '\n== %s\n' "$*"; }

demo_python() {
	if [ -n "${AMPTRACE_DEMO_PYTHON:-}" ]; then
		echo "$AMPTRACE_DEMO_PYTHON"
	elif [ -x tests/torch/venv.sh ] && tests/torch/venv.sh main 2>/dev/null; then
		:
	else
		echo /usr/bin/python3
	fi
}

python=$(demo_python)
if ! "$python" -c 'import torch' 2>/dev/null; then
	section "PyTorch: skipped ($python has no torch; set AMPTRACE_DEMO_PYTHON)"
elif "$python" -c 'import transformers' 2>/dev/null; then
	program=(samples/torch/train_gpt2.py 4)
	what="transformers' GPT-2 from a config, 4 steps of CPU bf16 autocast"
else
	program=(tests/torch/twin_transformer.py 6)
	what="the torch twin of the transformer sample (no transformers here), 6 steps"
fi
if [ -n "${program:-}" ]; then
	section "amptrace run: a PyTorch training program — $what"
	echo "\$ amptrace run -o $out/torch.json -- $python ${program[*]}"
	"$amptrace" run -o "$out/torch.json" --svg "$out/torch.svg" \
		--report "$out/torch.html" -- "$python" "${program[@]}"
	section "amptrace summary $out/torch.json"
	"$amptrace" summary "$out/torch.json" | tee "$out/torch-summary.txt"
fi

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

section "where everything is"
if [ -n "${program:-}" ]; then
	echo "PyTorch ($what):"
	echo "  trace    $out/torch.json   (opens at https://ui.perfetto.dev)"
	echo "  summary  $out/torch-summary.txt"
	echo "  graph    $out/torch.svg"
	echo "  report   $out/torch.html"
fi
echo "libamp transformer sample:"
echo "  trace    $out/transformer.json"
echo "  graph    $out/transformer.svg"
echo "  report   $out/report.html"
