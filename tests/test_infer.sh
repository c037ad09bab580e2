#!/usr/bin/env bash
# The infer sample answers "where do the casts happen?": on cpu its linears
# run in bf16, on the (emulated) cuda device in f16 with softmax in f32, and
# the second forward pass in the same region reuses the cached weight casts.
set -u
infer=$1
. "$(dirname "$0")/tap.sh"

cpu=$("$infer" --device cpu --layers 2 --repeat 2) || { echo "not ok - infer cpu exited $?"; exit 1; }
cuda=$("$infer" --device cuda --layers 2 --repeat 2) || { echo "not ok - infer cuda exited $?"; exit 1; }

check "cpu linear runs in bf16" grep -Eq '^linear +lower_precision_fp .*-> bf16\[4,16\]' <<<"$cpu"
check "cpu softmax is not autocast" grep -Eq '^softmax +none .*bf16\[4,16\] -> bf16' <<<"$cpu"
check "cuda is marked emulated" grep -q 'emulated cuda device' <<<"$cuda"
check "cuda linear runs in f16" grep -Eq '^linear +lower_precision_fp .*-> f16\[4,16\]' <<<"$cuda"
check "cuda softmax gives f32" grep -Eq '^softmax +fp32_set_opt_dtype .*-> f32\[4,16\]' <<<"$cuda"
check "weight cast cached on first use" grep -Eq 'cast arg 1 f32\[16,16\]\(fc1.weight\): f32 -> f16, cache miss' <<<"$cuda"
check "weight cast hit on second forward" grep -Eq 'cast arg 1 f32\[16,16\]\(fc1.weight\): f32 -> f16, cache hit' <<<"$cuda"
check "input cast is uncacheable" grep -Eq 'cast arg 0 f32\[4,16\]\(input\): f32 -> f16, cache uncacheable' <<<"$cuda"
check "f16 dtype on cpu" bash -c "'$infer' --device cpu --dtype f16 --layers 1 --repeat 1 | grep -Eq '^linear .*-> f16'"
"$infer" --device tpu >/dev/null 2>&1; rc=$?
check "bad device exits 2" test "$rc" -eq 2
"$infer" --batch 0 >/dev/null 2>&1; rc=$?
check "bad count exits 2" test "$rc" -eq 2
check "--help exits 0" "$infer" --help >/dev/null
exit $fail
