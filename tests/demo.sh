#!/usr/bin/env bash
# ./run demo: what autocast does to a small model, shown three ways.
set -eu
build=${1:-build}
amptrace="$build/tracer/amptrace"
section() { printf '\n== %s\n' "$*"; }

section "amptrace explain: what CUDA autocast does to a few ops"
for op in "linear f32 f32:leaf f32:leaf" "softmax f16" "addcmul f16 f32 f16" \
	  "binary_cross_entropy f32 f32"; do
	echo "\$ amptrace explain --device cuda $op"
	# shellcheck disable=SC2086
	"$amptrace" explain --device cuda $op || true
done

section "infer on the cpu device (bf16 autocast)"
"$build/samples/infer" --device cpu --layers 2 --repeat 1

section "infer on the cuda device (f16 autocast; emulated without a GPU)"
"$build/samples/infer" --device cuda --layers 2 --repeat 2
