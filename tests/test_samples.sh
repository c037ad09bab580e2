#!/usr/bin/env bash
# The training samples (every recipe of PyTorch's AMP examples page and of
# the forum thread) run, learn (the last `step N loss X` below the first),
# print what their recipe is about, answer --help with 0 and bad flags
# with 2.  Arguments: the sample executables.
set -u
declare -A exe
for path in "$@"; do exe[$(basename "$path")]=$path; done

. "$(dirname "$0")/tap.sh"

# the loss after "loss" on the first and the last `step N loss X` line
learns() { # output
	awk '$1 == "step" && $3 == "loss" { if (first == "") first = $4; last = $4 }
	     END { exit !(first != "" && last + 0 < first + 0) }' <<<"$1"
}

# name, flags...: runs the sample, checks it learns, leaves its output in $out
run() {
	local name=$1; shift
	if ! out=$("${exe[$name]}" "$@" 2>&1); then
		echo "not ok - $name $* exited non-zero"; echo "$out" | tail -5; fail=1
		return
	fi
	check "$name $* learns" learns "$out"
}

for name in mlp clip accumulate penalty multi custom roipool nested threads \
	    whole_loop transformer; do
	[[ -n ${exe[$name]:-} ]] || { echo "not ok - $name was not given"; fail=1; continue; }
	run "$name"
	"${exe[$name]}" --help >/dev/null; rc=$?
	check "$name --help exits 0" test $rc -eq 0
	for bad in "--bogus" "--steps 0" "--device tpu" "--dtype f32" "extra"; do
		# shellcheck disable=SC2086
		"${exe[$name]}" $bad >/dev/null 2>&1; rc=$?
		check "$name $bad exits 2" test $rc -eq 2
	done
done

# the emulated cuda device (f16) learns too
for name in mlp clip penalty custom threads; do
	run "$name" --device cuda --steps 25
done
run mlp --dtype f16 --layers 4 --hidden 32

# --dtype takes every spelling of lib's alias table; the same run as the
# canonical name, timings aside (f16 and bf16 runs differ, so this can fail)
mlp_as() { # dtype
	"${exe[mlp]}" --dtype "$1" --layers 2 --hidden 16 --steps 3 2>&1 |
		sed -E 's/^median ms\/step [0-9.]+ \(cpu [0-9.]+;/median (cpu;/'
}
for pair in f16:fp16 f16:float16 f16:half f16:torch.float16 \
	    bf16:bfloat16 bf16:torch.bfloat16; do
	want=$(mlp_as "${pair%%:*}")
	check "mlp --dtype ${pair#*:} is --dtype ${pair%%:*}" \
		test "$(mlp_as "${pair#*:}")" = "$want"
done
check "mlp --dtype bf16 is not --dtype f16" test "$(mlp_as bf16)" != "$(mlp_as f16)"
"${exe[mlp]}" --dtype fp32 >/dev/null 2>&1; rc=$?
check "mlp --dtype fp32 exits 2 (autocast wants f16 or bf16)" test $rc -eq 2

# mlp: default flags well under 5 s, ends with the timing line
start=$(date +%s%N)
run mlp
elapsed=$(( ($(date +%s%N) - start) / 1000000 ))
check "mlp default run under 5 s (${elapsed} ms)" test "$elapsed" -lt 5000
check "mlp prints the median ms/step last" \
	grep -Eq '^median ms/step [0-9.]+ ' <<<"$(tail -1 <<<"$out")"

# a flag another sample accepts is refused
"${exe[mlp]}" --accumulate 2 >/dev/null 2>&1; rc=$?
check "mlp --accumulate exits 2" test $rc -eq 2
# the refusal names the flag, not its value or the program
check "mlp --accumulate 2 names --accumulate" \
	grep -q "unknown option '--accumulate'" <<<"$("${exe[mlp]}" --accumulate 2 2>&1)"
check "mlp -xh names -x" \
	grep -q "option '-x'" <<<"$("${exe[mlp]}" -xh 2>&1)"

# each recipe's point
run accumulate --accumulate 4 --steps 32
check "accumulate steps the optimizer every 4th micro-batch" \
	test "$(grep -c 'optimizer-step' <<<"$out")" -eq 8
run clip --max-norm 0.5
check "clip reports the unscaled gradient norm" grep -q 'grad_norm ' <<<"$out"
run custom
check "custom: MyMM in bf16, MyFloat32Func in f32" \
	grep -q 'MyMM output bf16, MyFloat32Func output f32' <<<"$out"
run roipool --seq 300
check "roipool: the bare call fails under autocast" \
	grep -q 'bare roi_pool inside autocast: failed' <<<"$out"
check "roipool: rois beyond 256 need f32" \
	grep -q 'position 297 would be 296 in bf16' <<<"$out"
run nested
check "nested: the disabled region ran in f32" \
	grep -q 'layer1 output bf16; inside autocast(enabled=False) the norm ran in f32' <<<"$out"
run threads --threads 2
check "threads: workers miss the main thread's autocast" \
	grep -q 'main thread only: the 2 workers produced f32' <<<"$out"
check "threads: autocast inside the forward reaches them" \
	grep -q 'inside the forward: the workers produce bf16' <<<"$out"
run whole_loop
check "whole_loop: stale cache hits across optimizer steps" \
	grep -Eq '^# stale cast-cache hits: [1-9]' <<<"$out"
run transformer --steps 30
check "transformer: shared weights hit the cast cache" \
	grep -Eq 'cache hits in one forward: [1-9]' <<<"$out"
check "transformer: logits in bf16, loss in f32" \
	grep -q 'logits bf16, loss f32' <<<"$out"

# OPENBLAS_CORETYPE is the user's (or the machine's) choice: libamp
# honours it without a word on stderr, which would otherwise depend on
# where the program runs; AMP_VERBOSE=1 says which kernels run.
err=$(OPENBLAS_CORETYPE=Haswell "${exe[mlp]}" --steps 2 2>&1 >/dev/null)
check "OPENBLAS_CORETYPE=Haswell: nothing on stderr" test -z "$err"
err=$(OPENBLAS_CORETYPE=Haswell AMP_VERBOSE=1 "${exe[mlp]}" --steps 2 2>&1 >/dev/null)
check "OPENBLAS_CORETYPE=Haswell AMP_VERBOSE=1: the kernels are named" \
	grep -q "OpenBLAS, Haswell kernels" <<<"$err"
if grep -qw avx512dq /proc/cpuinfo && grep -qw avx512vl /proc/cpuinfo; then
	check "... and that OPENBLAS_CORETYPE asked for them on this AVX-512 CPU" \
		grep -q "(OPENBLAS_CORETYPE asks for them)" <<<"$err"
fi
exit $fail
