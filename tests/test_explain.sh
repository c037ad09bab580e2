#!/usr/bin/env bash
# `amptrace explain`: its text and JSON answers on both devices, its errors
# (PyTorch's exact messages, usage errors with exit 2), an answer for every
# row of the policy table, and every entry of PyTorch's own conformance
# lists (torch/testing/_internal/autocast_test_lists.py @ 01e19096).
set -u
set -f # ARGs such as [f16,f32] must not glob
amptrace=$1
op_list=${2:-} # lib/op_list.h: every op libamp executes must resolve
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"
# A top-level string field of explain's JSON (cJSON_Print indents it by
# one tab); "null" for null.
field() { # json, key
	sed -n "s/^	\"$2\":	\"\{0,1\}\([^\"]*\)\"\{0,1\},\{0,1\}\$/\1/p" <<<"$1"
}

# ---------------------------------------------------------------- text
out=$("$amptrace" explain mm f32:leaf f32)
check "mm: lower_precision_fp" grep -q '^policy   lower_precision_fp' <<<"$out"
check "mm: parameter cast is cached" \
	grep -Eq '^arg 0 +f32 leaf +-> f16, cached .*leaf f32 weight requiring grad' <<<"$out"
check "mm: plain input is not cached" \
	grep -Eq '^arg 1 +f32 +-> f16, not cached: does not require grad' <<<"$out"
check "mm: output f16" grep -q '^output   f16$' <<<"$out"

out=$("$amptrace" explain --no-cache mm f32:leaf f32)
check "--no-cache: cacheable but disabled" grep -q 'not cached (cache disabled): cache disabled' <<<"$out"
out=$("$amptrace" explain mm f32:grad:view f32:leaf:view)
check "activation: not a leaf" grep -Eq '^arg 0 .*not cached: not a leaf' <<<"$out"
check "leaf view: is a view" grep -Eq '^arg 1 .*not cached: is a view' <<<"$out"

out=$("$amptrace" explain --device cpu mm f32 f16 i64)
check "cpu mm casts to bf16" grep -Eq '^arg 0 +f32 +-> bf16' <<<"$out"
check "cpu mm: f16 source is not f32" grep -Eq '^arg 1 +f16 +-> bf16, not cached: source is not f32' <<<"$out"
check "integers are never cast" grep -Eq '^arg 2 +i64 +unchanged: not floating point' <<<"$out"

out=$("$amptrace" explain softmax f16)
check "softmax resolves to softmax.int" grep -q '^op       softmax.int$' <<<"$out"
check "softmax: dtype None becomes f32" grep -q '^dtype    None -> f32$' <<<"$out"
check "softmax: f32 output" grep -q '^output   f32$' <<<"$out"
out=$("$amptrace" explain softmax f16 dtype=f16)
check "softmax dtype=f16 kept" grep -q '^output   f16$' <<<"$out"
out=$("$amptrace" explain sum f64)
check "sum(f64): dtype left alone" grep -q '^output   f64$' <<<"$out"
out=$("$amptrace" explain sum i32)
check "sum(i32): native i64" grep -q '^output   i64$' <<<"$out"
out=$("$amptrace" explain --device cpu softmax bf16)
check "cpu softmax is not autocast" grep -q '^policy   none: not on the cpu autocast lists (on cuda it is fp32_set_opt_dtype)' <<<"$out"
check "cpu softmax stays bf16" grep -q '^output   bf16$' <<<"$out"
out=$("$amptrace" explain cross_entropy_loss f16 i64)
check "cuda cross_entropy_loss: inner ops autocast" grep -q '^inner    log_softmax.int: fp32_set_opt_dtype' <<<"$out"
check "cuda cross_entropy_loss: f32" grep -q '^output   f32$' <<<"$out"
out=$("$amptrace" explain --device cpu linalg_lstsq bf16 bf16)
check "tuple outputs listed" grep -q '^output   f32  (outputs: f32, f32, i64, f32)' <<<"$out"
out=$("$amptrace" explain --device cpu fft_rfft bf16)
check "complex output" grep -q '^output   c64$' <<<"$out"
out=$("$amptrace" explain addmm_ f16 f32 f32)
check "in-place ops are never autocast" grep -q '^policy   none: in-place' <<<"$out"
out=$("$amptrace" explain softmax)
check "no ARGs: rows on both devices" grep -q 'cuda  softmax.int' <<<"$out"
out=$("$amptrace" explain mm f32 f32 --device cpu --json)
check "options may follow OP" grep -q '"autocast_dtype":	"bf16"' <<<"$out"

# -------------------------------------------------------------- errors
bce='torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.
Many models use a sigmoid layer right before the binary cross entropy layer.
In this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits
or torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are
safe to autocast.'
out=$("$amptrace" explain binary_cross_entropy f32 f32); rc=$?
check "banned: exit 0 with the answer" test "$rc" -eq 0
check "banned: PyTorch's exact text" test "$(sed -n '/^raises   RuntimeError$/,$p' <<<"$out" | tail -n +2)" = "$bce"
json=$("$amptrace" explain --json binary_cross_entropy f32 f32)
check "banned: JSON error" grep -Fq '"error":	"torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\nMany models' <<<"$json"
out=$("$amptrace" explain --device cpu binary_cross_entropy bf16 bf16)
check "cpu binary_cross_entropy is fp32, not banned" grep -q '^output   f32$' <<<"$out"
out=$("$amptrace" explain --device cpu stack bf16 f16 f32)
check "promote: unexpected floating type" grep -qx 'Unexpected floating ScalarType in at::autocast::prioritize' <<<"$out"
out=$("$amptrace" explain --device cpu stack f32 f16)
check "promote: order matters" grep -q '^output   f32$' <<<"$out"

err=$("$amptrace" explain sofmax f16 2>&1 >/dev/null); rc=$?
check "unknown op exits 2" test "$rc" -eq 2
check "unknown op suggests softmax" grep -q "unknown op 'sofmax'.*did you mean: softmax" <<<"$err"
# Swapped neighbours are one typo, not two (optimal string alignment), and
# a name of six bytes or more may hold two typos, as every "did you mean"
# allows: both stay typos, never "autocast never touches linaer".
for typo in linaer:linear layer_nrom:layer_norm lyaer_nrom:layer_norm; do
	err=$("$amptrace" explain "${typo%%:*}" 2>&1 >/dev/null); rc=$?
	check "typo ${typo%%:*}: exit 2, did you mean ${typo#*:}" eval \
		'[ "$rc" -eq 2 ] && grep -q "unknown op .${typo%%:*}.*did you mean: ${typo#*:}" <<<"$err"'
done
err=$("$amptrace" SUMMARY 2>&1 >/dev/null)
check "command in capitals: did you mean" grep -q "did you mean 'summary'?" <<<"$err"
out=$("$amptrace" help help); rc=$?
check "help help: the usage, exit 0" eval '[ "$rc" -eq 0 ] && grep -q "^usage: amptrace COMMAND" <<<"$out"'
err=$("$amptrace" smumray 2>&1 >/dev/null)
check "two swaps in a command (smumray): did you mean" grep -q "did you mean 'summary'?" <<<"$err"
# An op of a trace on no list amptrace knows (lstm, native_dropout): an
# answer, not "unknown op" (issue 24); a name one edit from a known one
# stays a typo.
out=$("$amptrace" explain lstm.input f32 f32); rc=$?
check "lstm.input (a real op on no list): answered, exit 0" test "$rc" -eq 0
check "lstm.input: policy none" grep -q '^policy   none' <<<"$out"
check "lstm.input: no autocast rule, its inputs' dtypes" \
	grep -q "no autocast rule: .* it runs in its inputs' dtypes" <<<"$out"
json=$("$amptrace" explain --json native_dropout bf16)
check "native_dropout --json: policy none, output bf16" \
	python3 -c 'import json, sys; d = json.load(sys.stdin)
sys.exit(not (d["policy"] == "none" and d["output"] == "bf16" and not d["casts"]))' <<<"$json"
err=$("$amptrace" explain 'Lstm!' f32 2>&1 >/dev/null); rc=$?
check "a name that is no ATen name: unknown op (exit 2)" test "$rc" -eq 2
err=$("$amptrace" explain softmax.intt f16 2>&1 >/dev/null); rc=$?
check "unknown overload exits 2" test "$rc" -eq 2
check "unknown overload lists overloads" grep -q 'known overloads: softmax.int$' <<<"$err"
err=$("$amptrace" explain mm f32 f99 2>&1 >/dev/null); rc=$?
check "bad dtype exits 2" test "$rc" -eq 2
check "bad dtype: no suggestion two typos from a short name, the dtypes listed" \
	eval '! grep -q "did you mean" <<<"$err" && grep -q "^dtypes: f64 f32" <<<"$err"'
err=$("$amptrace" explain mm f32 bf61 2>&1 >/dev/null); rc=$?
check "a dtype a typo away: did you mean it, alone" \
	grep -qx "amptrace explain: unknown dtype 'bf61' in argument 'bf61'; did you mean 'bf16'?" <<<"$err"
"$amptrace" explain mm f32:leef >/dev/null 2>&1; rc=$?
check "bad modifier exits 2" test "$rc" -eq 2
"$amptrace" explain --device tpu mm f32 >/dev/null 2>&1; rc=$?
check "bad device exits 2" test "$rc" -eq 2
"$amptrace" explain --dtype f32 mm f32 >/dev/null 2>&1; rc=$?
check "autocast dtype must be f16 or bf16" test "$rc" -eq 2
# a value that is a typo of one is named; one that is none, nothing
err=$("$amptrace" explain --device cdua mm f32 2>&1 >/dev/null)
check "--device cdua: did you mean" grep -qF "unknown device 'cdua' (cuda or cpu); did you mean 'cuda'?" <<<"$err"
err=$("$amptrace" explain --device xla mm f32 2>&1 >/dev/null)
check "--device xla: no suggestion" grep -qxF "amptrace explain: unknown device 'xla' (cuda or cpu)" <<<"$err"
err=$("$amptrace" explain --dtype bf61 mm f32 2>&1 >/dev/null)
check "--dtype bf61: did you mean" grep -qF "'bf61' (f16 or bf16); did you mean 'bf16'?" <<<"$err"
"$amptrace" explain mm f32 dtype=f16 >/dev/null 2>&1; rc=$?
check "dtype= on an op without one exits 2" test "$rc" -eq 2
"$amptrace" explain >/dev/null 2>&1; rc=$?
check "no OP exits 2" test "$rc" -eq 2
check "explain --help exits 0" bash -c "'$amptrace' explain --help >/dev/null"
check "amptrace --help exits 0" bash -c "'$amptrace' --help >/dev/null"
check "amptrace help explain" bash -c "'$amptrace' help explain | grep -q 'usage: amptrace explain'"
err=$("$amptrace" frobnicate 2>&1 >/dev/null); rc=$?
check "unknown command exits 2" test "$rc" -eq 2
check "unknown command lists commands" grep -q 'explain' <<<"$err"
err=$("$amptrace" summry 2>&1 >/dev/null); rc=$?
check "typo'd command exits 2" test "$rc" -eq 2
check "typo'd command: did you mean" grep -q "did you mean 'summary'?" <<<"$err"
check "far-off command: no suggestion" bash -c "! '$amptrace' frobnicate 2>&1 | grep -q 'did you mean'"
err=$("$amptrace" explain --dtpye f16 mm f32 f32 2>&1 >/dev/null); rc=$?
check "typo'd explain option exits 2" test "$rc" -eq 2
check "typo'd explain option: did you mean" grep -q "did you mean '--dtype'?" <<<"$err"
err=$("$amptrace" explain --zzzzzz mm f32 f32 2>&1 >/dev/null); rc=$?
check "far-off explain option: exit 2, no suggestion" \
	bash -c "[ $rc -eq 2 ] && ! grep -q 'did you mean' <<<'$err'"
check "typo'd explain option: how to get help" \
	grep -q "Try 'amptrace explain --help'." <<<"$err"
err=$("$amptrace" explain --d f16 mm f32 f32 2>&1 >/dev/null); rc=$?
check "an ambiguous prefix exits 2 and names both options" \
	bash -c "[ $rc -eq 2 ] && grep -q \"option '--d' is ambiguous: --device --dtype\" <<<\"\$0\"" "$err"
check "an option's unambiguous prefix is the option" \
	test "$("$amptrace" explain --dev cpu mm f32 f32)" = "$("$amptrace" explain --device cpu mm f32 f32)"
# options anywhere: before OP, between ARGs, after; a negative number
# is an ARG, also where an option could be
before=$("$amptrace" explain --device cpu --json nll_loss f32 i64 none 1 -100)
check "negative number ARGs are read (nll_loss's ignore_index)" \
	grep -q '"query":' <<<"$before"
check "options after a negative ARG are options" \
	test "$before" = "$("$amptrace" explain nll_loss f32 i64 none 1 -100 --device cpu --json)"
check "options between ARGs are options" \
	test "$before" = "$("$amptrace" explain nll_loss f32 --json i64 none 1 -100 --device=cpu)"
# every dtype spelling of lib's alias table, for --dtype and for arguments
ref=$("$amptrace" explain --device cuda --dtype f16 mm f32 f32)
for spelling in f16 fp16 half float16 torch.float16 torch.half; do
	got=$("$amptrace" explain --device cuda --dtype "$spelling" mm f32 f32)
	check "--dtype $spelling is f16" test "$got" = "$ref"
done
for spelling in f32 fp32 float float32 torch.float32 torch.float; do
	got=$("$amptrace" explain --device cuda --dtype f16 mm "$spelling" "$spelling")
	check "argument dtype $spelling is f32" test "$got" = "$ref"
done
ref=$("$amptrace" explain --device cpu --dtype bf16 mm f32 f32)
for spelling in bfloat16 torch.bfloat16; do
	got=$("$amptrace" explain --device cpu --dtype "$spelling" mm f32 f32)
	check "--dtype $spelling is bf16" test "$got" = "$ref"
done

# ---------------------------------------------------------------- JSON
json=$("$amptrace" explain --json --device cpu --dtype f16 linear f32:leaf f32 none)
check "json op" test "$(field "$json" op)" = linear
check "json device" test "$(field "$json" device)" = cpu
check "json autocast_dtype" test "$(field "$json" autocast_dtype)" = f16
check "json policy" test "$(field "$json" policy)" = lower_precision_fp
check "json output" test "$(field "$json" output)" = f16
check "json inputs" grep -q '^	"inputs":	\[' <<<"$json"
check "json casts" grep -Pzq '"casts":\t\[\{\n\t\t\t"arg":\t0,\n\t\t\t"from":\t"f32",\n\t\t\t"to":\t"f16",\n\t\t\t"cacheable":\ttrue' <<<"$json"
if command -v python3 >/dev/null; then
	check "json parses" python3 -c 'import json, sys; json.load(sys.stdin)' <<<"$json"
fi

# --------------------------------------------- every row of the table
for device in cuda cpu; do
	rows=$("$amptrace" explain --list --device "$device")
	case $device in cuda) want=120 ;; cpu) want=126 ;; esac
	check "$device: --list has $want rows" test "$(wc -l <<<"$rows")" -eq "$want"
	bad=0
	while read -r policy op; do
		got=$("$amptrace" explain --json --device "$device" "$op" f32 f32)
		if [ "$(field "$got" policy)" != "$policy" ] ||
			[ "$(field "$got" op)" != "$op" ]; then
			echo "# $device $op: got policy $(field "$got" policy) op $(field "$got" op)"
			bad=1
		fi
	done <<<"$rows"
	check "$device: every row answers with its policy" test "$bad" -eq 0
done

# ------------------------------- every op libamp executes, both devices
if [ -n "$op_list" ]; then
	ops=$(sed -n 's/^[[:space:]]*X([A-Z0-9_]*, "\([^"]*\)", "\([^"]*\)".*/\1.\2/p' "$op_list" | sed 's/\.$//')
	check "op_list.h has ops" test -n "$ops"
	bad=0
	for op in $ops; do
		for device in cuda cpu; do
			if ! "$amptrace" explain --device "$device" "$op" f32 >/dev/null 2>&1; then
				echo "# $device $op: explain does not answer"
				bad=1
			fi
		done
	done
	check "explain answers for every op of op_list.h" test "$bad" -eq 0
fi

# ------------------------------ PyTorch's autocast_test_lists.py entries
# device dtype | policy | output | op and ARGs (tensor dtypes as the list
# builds them; non-tensor arguments as the list passes them).
lists=0
bad=0
while IFS='|' read -r where policy output call; do
	case $where in '#'*|'') continue ;; esac
	read -r device dtype <<<"$where"
	lists=$((lists + 1))
	# shellcheck disable=SC2086 # the call is split into OP and ARGs
	got=$("$amptrace" explain --json --device "$device" --dtype "$dtype" $call 2>&1)
	policy=${policy// /}
	output=${output// /}
	got_policy=$(field "$got" policy)
	if [ "$output" = error ]; then
		got_output=$(grep -q '^	"error":' <<<"$got" && echo error)
	else
		got_output=$(field "$got" output)
	fi
	if [ "$got_policy" != "$policy" ] || [ "$got_output" != "$output" ]; then
		echo "# $device $dtype $call: got $got_policy/$got_output, want $policy/$output"
		bad=1
	fi
done <<'EOF'
# AutocastTestLists (CUDA), torch_expect_builtin_promote
cuda f16 | none | bool | eq f32 f16
cuda f16 | none | bool | ge f32 f16
cuda f16 | none | bool | gt f32 f16
cuda f16 | none | bool | le f32 f16
cuda f16 | none | bool | lt f32 f16
cuda f16 | none | bool | ne f32 f16
cuda f16 | none | f32 | add f32 f16
cuda f16 | none | f32 | div f32 f16
cuda f16 | none | f32 | mul f32 f16
cuda f16 | none | f32 | cat [f16,f32]
cuda f16 | none | bool | equal f32 f16
cuda f16 | none | f32 | stack [f16,f32]
# methods_expect_builtin_promote
cuda f16 | none | bool | __eq__ f32 f16
cuda f16 | none | bool | __ge__ f32 f16
cuda f16 | none | bool | __gt__ f32 f16
cuda f16 | none | bool | __le__ f32 f16
cuda f16 | none | bool | __lt__ f32 f16
cuda f16 | none | bool | __ne__ f32 f16
cuda f16 | none | f32 | __add__ f32 f16
cuda f16 | none | f32 | __div__ f32 f16
cuda f16 | none | f32 | __mul__ f32 f16
# torch_fp16 (also run under bf16 autocast)
cuda f16 | lower_precision_fp | f16 | _convolution.deprecated f32 f32 f32 (1,1) (0,0) (1,1) False (0,0) 1 False True True
cuda f16 | lower_precision_fp | f16 | _convolution f32 f32 f32 (1,1) (0,0) (1,1) False (0,0) 1 False True True True
cuda f16 | lower_precision_fp | f16 | conv1d f32 f32
cuda f16 | lower_precision_fp | f16 | conv2d f32 f32
cuda f16 | lower_precision_fp | f16 | conv3d f32 f32
cuda f16 | lower_precision_fp | f16 | conv_tbc f32 f32 f32
cuda f16 | lower_precision_fp | f16 | conv_transpose1d f32 f32
cuda f16 | lower_precision_fp | f16 | conv_transpose2d f32 f32
cuda f16 | lower_precision_fp | f16 | conv_transpose3d f32 f32
cuda f16 | lower_precision_fp | f16 | convolution f32 f32 f32 (1,1) (0,0) (1,1) False (0,0) 1
cuda f16 | lower_precision_fp | f16 | cudnn_convolution f32 f32 (0,0) (1,1) (1,1) 1 False True True
cuda f16 | lower_precision_fp | f16 | cudnn_convolution_transpose f32 f32 (0,0) (0,0) (1,1) (1,1) 1 False True True
cuda f16 | lower_precision_fp | f16 | prelu f32 f32
cuda f16 | lower_precision_fp | f16 | addmm f32 f32 f32
cuda f16 | lower_precision_fp | f16 | addmv f32 f32 f32
cuda f16 | lower_precision_fp | f16 | addr f32 f32 f32
cuda f16 | lower_precision_fp | f16 | matmul f32 f32
cuda f16 | lower_precision_fp | f16 | einsum bkhd,bqhd->bqkh f32 f32
cuda f16 | lower_precision_fp | f16 | mm f32 f32
cuda f16 | lower_precision_fp | f16 | mv f32 f32
cuda f16 | lower_precision_fp | f16 | chain_matmul f32 f32 f32
cuda f16 | lower_precision_fp | f16 | addbmm f32 f32 f32
cuda f16 | lower_precision_fp | f16 | baddbmm f32 f32 f32
cuda f16 | lower_precision_fp | f16 | bmm f32 f32
cuda f16 | lower_precision_fp | f16 | lstm_cell f32 (f32,f32) f32 f32 f32 f32
cuda f16 | lower_precision_fp | f16 | gru_cell f32 f32 f32 f32 f32 f32
cuda f16 | lower_precision_fp | f16 | rnn_tanh_cell f32 f32 f32 f32 f32 f32
cuda f16 | lower_precision_fp | f16 | rnn_relu_cell f32 f32 f32 f32 f32 f32
cuda bf16 | lower_precision_fp | bf16 | conv2d f32 f32
cuda bf16 | lower_precision_fp | bf16 | addmm f32 f32 f32
cuda bf16 | lower_precision_fp | bf16 | lstm_cell f32 (f32,f32) f32 f32 f32 f32
cuda bf16 | lower_precision_fp | bf16 | einsum bkhd,bqhd->bqkh f32 f32
# torch_fp32
cuda f16 | fp32 | f32 | acos f16
cuda f16 | fp32 | f32 | asin f16
cuda f16 | fp32 | f32 | cosh f16
cuda f16 | fp32 | f32 | erfinv f16
cuda f16 | fp32 | f32 | exp f16
cuda f16 | fp32 | f32 | expm1 f16
cuda f16 | fp32 | f32 | log f16
cuda f16 | fp32 | f32 | log10 f16
cuda f16 | fp32 | f32 | log2 f16
cuda f16 | fp32 | f32 | log1p f16
cuda f16 | fp32 | f32 | reciprocal f16
cuda f16 | fp32 | f32 | rsqrt f16
cuda f16 | fp32 | f32 | sinh f16
cuda f16 | fp32 | f32 | tan f16
cuda f16 | fp32 | f32 | pow f16 f16
cuda f16 | fp32 | f32 | pow f16 1.7
cuda f16 | fp32_set_opt_dtype | f32 | softmax f16 0
cuda f16 | fp32_set_opt_dtype | f32 | log_softmax f16 0
cuda f16 | fp32 | f32 | layer_norm f16 (8,)
cuda f16 | fp32 | f32 | group_norm f16 1
cuda f16 | fp32_append_dtype | f32 | norm f16
cuda f16 | fp32_append_dtype | f32 | norm f16 dim=0
cuda f16 | fp32_append_dtype | f32 | norm f16 p=1
cuda f16 | fp32_append_dtype | f32 | norm f16 p=1 dim=0
cuda f16 | fp32 | f32 | cosine_similarity f16 f16
cuda f16 | fp32 | f32 | poisson_nll_loss f16 f16 True False 1e-08 1
cuda f16 | fp32 | f32 | cosine_embedding_loss f16 f16 i32
cuda f16 | fp32 | f32 | hinge_embedding_loss f16 i32
cuda f16 | fp32 | f32 | kl_div f16 f16
cuda f16 | fp32 | f32 | margin_ranking_loss f16 f16 f16
cuda f16 | fp32 | f32 | triplet_margin_loss f16 f16 f16
cuda f16 | fp32 | f32 | binary_cross_entropy_with_logits f16 f16
cuda f16 | fp32_set_opt_dtype | f32 | cumprod f16 0
cuda f16 | fp32_set_opt_dtype | f32 | cumsum f16 0
cuda f16 | fp32 | f32 | dist f16 f16
cuda f16 | fp32 | f32 | pdist f16
cuda f16 | fp32 | f32 | cdist f16 f16
cuda f16 | fp32_set_opt_dtype | f32 | prod f16
cuda f16 | fp32_set_opt_dtype | f32 | prod.dim_int f16 0
cuda f16 | fp32 | f32 | renorm f16 2 0 1.0
cuda f16 | fp32_set_opt_dtype | f32 | sum f16
cuda f16 | fp32_set_opt_dtype | f32 | sum.dim_IntList f16 (1,)
cuda f16 | fp32 | f32 | logsumexp f16 1
cuda bf16 | fp32 | f32 | exp bf16
cuda bf16 | fp32_set_opt_dtype | f32 | softmax bf16 0
# torch_need_autocast_promote
cuda f16 | promote | f32 | addcdiv f32 f16 f16
cuda f16 | promote | f32 | addcmul f32 f16 f16
cuda f16 | promote | f32 | atan2 f32 f16
cuda f16 | promote | f32 | bilinear f16 f32 f16 f32
cuda f16 | promote | f32 | cross f32 f16
cuda f16 | promote | f32 | dot f16 f32
cuda f16 | promote | f32 | vdot f16 f32
cuda f16 | promote | f32 | grid_sampler f16 f32 0 0 False
cuda f16 | promote | f32 | index_put f32 (i64,) f16
cuda f16 | promote | f32 | index_put f16 (i64,) f32
cuda f16 | promote | f32 | tensordot f32 f16
cuda f16 | promote | f32 | scatter_add f32 0 i64 f16
cuda f16 | promote | f32 | scatter_add f16 0 i64 f32
# nn_fp16, nn_fp32
cuda f16 | lower_precision_fp | f16 | linear f32 f32 f32
cuda bf16 | lower_precision_fp | bf16 | linear f32 f32 f32
cuda f16 | fp32 | f32 | softplus f16
cuda f16 | fp32 | f32 | nll_loss f32 i64
cuda f16 | fp32 | f32 | nll_loss2d f16 i64
cuda f16 | fp32 | f32 | l1_loss f16 f16
cuda f16 | fp32 | f32 | smooth_l1_loss f16 f16
cuda f16 | fp32 | f32 | mse_loss f16 f16
cuda f16 | fp32 | f32 | multilabel_margin_loss f16 i64
cuda f16 | fp32 | f32 | soft_margin_loss f16 i64
cuda f16 | fp32 | f32 | multi_margin_loss f16 i64
# linalg_fp16, methods_fp16, methods_fp32, banned
cuda f16 | lower_precision_fp | f16 | linalg_vecdot f32 f32
cuda f16 | lower_precision_fp | f16 | linalg_multi_dot [f32,f32,f32]
cuda f16 | lower_precision_fp | f16 | __matmul__ f32 f32
cuda f16 | fp32 | f32 | __pow__ f16 1.5
cuda f16 | banned | error | binary_cross_entropy f32 f32
cuda bf16 | banned | error | binary_cross_entropy f32 f32
# AutocastCPUTestLists, torch_expect_builtin_promote (bf16 and f16 runs)
cpu bf16 | none | bool | eq f32 bf16
cpu bf16 | none | bool | ge f32 bf16
cpu bf16 | none | bool | gt f32 bf16
cpu bf16 | none | bool | le f32 bf16
cpu bf16 | none | bool | lt f32 bf16
cpu bf16 | none | bool | ne f32 bf16
cpu bf16 | none | f32 | add f32 bf16
cpu bf16 | none | f32 | div f32 bf16
cpu bf16 | none | f32 | mul f32 bf16
cpu f16 | none | bool | eq f32 f16
cpu f16 | none | f32 | add f32 f16
cpu f16 | none | f32 | div f32 f16
# methods_expect_builtin_promote
cpu bf16 | none | bool | __eq__ f32 bf16
cpu bf16 | none | bool | __ge__ f32 bf16
cpu bf16 | none | bool | __gt__ f32 bf16
cpu bf16 | none | bool | __le__ f32 bf16
cpu bf16 | none | bool | __lt__ f32 bf16
cpu bf16 | none | bool | __ne__ f32 bf16
cpu bf16 | none | f32 | __add__ f32 bf16
cpu bf16 | none | f32 | __div__ f32 bf16
cpu bf16 | none | f32 | __mul__ f32 bf16
cpu f16 | none | f32 | __mul__ f32 f16
# torch_16
cpu bf16 | lower_precision_fp | bf16 | conv1d f32 f32
cpu bf16 | lower_precision_fp | bf16 | conv2d f32 f32
cpu bf16 | lower_precision_fp | bf16 | conv3d f32 f32
cpu bf16 | lower_precision_fp | bf16 | bmm f32 f32
cpu bf16 | lower_precision_fp | bf16 | mm f32 f32
cpu bf16 | lower_precision_fp | bf16 | matmul f32 f32
cpu bf16 | lower_precision_fp | bf16 | baddbmm f32 f32 f32
cpu bf16 | lower_precision_fp | bf16 | addmm f32 f32 f32
cpu bf16 | lower_precision_fp | bf16 | _addmm_activation f32 f32 f32 beta=1 alpha=1 use_gelu=True
cpu bf16 | lower_precision_fp | bf16 | addbmm f32 f32 f32
cpu bf16 | lower_precision_fp | bf16 | conv_tbc f32 f32 f32 0
cpu bf16 | lower_precision_fp | bf16 | conv_transpose1d f32 f32
cpu bf16 | lower_precision_fp | bf16 | conv_transpose2d f32 f32
cpu bf16 | lower_precision_fp | bf16 | conv_transpose3d f32 f32
cpu bf16 | lower_precision_fp | bf16 | prelu f32 f32
cpu bf16 | lower_precision_fp | bf16 | _native_multi_head_attention f32 f32 f32 8 4 f32 f32 f32 f32
cpu f16 | lower_precision_fp | f16 | conv2d f32 f32
cpu f16 | lower_precision_fp | f16 | _native_multi_head_attention f32 f32 f32 8 4 f32 f32 f32 f32
# torch_fp32
cpu bf16 | fp32 | f32 | poisson_nll_loss bf16 bf16 True False 1e-08 1
cpu bf16 | fp32 | f32 | cosine_embedding_loss bf16 bf16 i32
cpu bf16 | fp32 | f32 | hinge_embedding_loss bf16 i32
cpu bf16 | fp32 | f32 | margin_ranking_loss bf16 bf16 bf16
cpu bf16 | fp32 | f32 | triplet_margin_loss bf16 bf16 bf16
cpu bf16 | fp32 | f32 | binary_cross_entropy_with_logits bf16 bf16
cpu f16 | fp32 | f32 | triplet_margin_loss bf16 bf16 bf16
# nn_16, nn_fp32
cpu bf16 | lower_precision_fp | bf16 | linear f32 f32
cpu f16 | lower_precision_fp | f16 | linear f32 f32
cpu bf16 | fp32 | f32 | avg_pool3d bf16 kernel_size=(3,3,3) stride=(1,1,1)
cpu bf16 | fp32 | f32 | binary_cross_entropy bf16 bf16
cpu bf16 | fp32 | f32 | reflection_pad1d bf16 padding=(3,3)
cpu bf16 | fp32 | f32 | nll_loss bf16 i64
cpu bf16 | fp32 | f32 | nll_loss2d bf16 i64
cpu bf16 | fp32 | f32 | l1_loss bf16 bf16
cpu bf16 | fp32 | f32 | smooth_l1_loss bf16 bf16
cpu bf16 | fp32 | f32 | mse_loss bf16 bf16
cpu bf16 | fp32 | f32 | multilabel_margin_loss bf16 i64
cpu bf16 | fp32 | f32 | soft_margin_loss bf16 i64
cpu bf16 | fp32 | f32 | multi_margin_loss bf16 i64
cpu bf16 | fp32 | f32 | huber_loss bf16 bf16
# torch_need_autocast_promote
cpu bf16 | promote | f32 | cat [bf16,f32]
cpu bf16 | promote | f32 | stack [bf16,f32]
cpu f16 | promote | f32 | cat [f16,f32]
cpu f16 | promote | f32 | stack [f16,f32]
# test_autocast_ignored_types: same dtype as without autocast
cuda f16 | lower_precision_fp | f64 | mm f64 f64
cuda f16 | fp32 | f32 | pow i32 2.0
cuda f16 | fp32 | f64 | pow f64 2.0
cuda f16 | fp32_set_opt_dtype | i64 | sum i32
cuda f16 | fp32_set_opt_dtype | f64 | sum f64
cuda f16 | fp32_append_dtype | f64 | norm f64
EOF
check "$lists entries of autocast_test_lists.py answer as PyTorch does" test "$bad" -eq 0

# ------------------------------------------- PyTorch versions (--torch)
check "--help lists the versions" bash -c "'$amptrace' explain --help | grep -q -- '--torch VERSION .*1.13, 2.13, 2.14 (default newest)'"
json=$("$amptrace" explain --json mm f32 f32)
check "json torch: newest (2.14) by default" test "$(field "$json" torch)" = 2.14
out=$("$amptrace" explain mm f32:leaf f32)
check "newest text has no torch line" bash -c "! grep -q '^torch' <<<'$out'"
for v in 1.13 1.13.1 1.13.0a0; do
	json=$("$amptrace" explain --torch "$v" --json mm f32 f32)
	check "--torch $v: the 1.13 table" test "$(field "$json" torch)" = 1.13
done
json=$("$amptrace" explain --torch=1.13 --json mm f32 f32)
check "--torch=1.13" test "$(field "$json" torch)" = 1.13
for v in 2.13 2.13.0+cpu; do
	json=$("$amptrace" explain --torch "$v" --json mm f32 f32)
	check "--torch $v: the 2.13 table" test "$(field "$json" torch)" = 2.13
done
for v in newest 2.14 2.14.1+cu130; do
	json=$("$amptrace" explain --torch "$v" --json mm f32 f32)
	check "--torch $v: the 2.14 table" test "$(field "$json" torch)" = 2.14
done
json=$("$amptrace" explain --torch 2.1.0+cu121 --json mm f32 f32)
check "--torch 2.1.0: none below it in 2.x, the 2.13 lists" test "$(field "$json" torch)" = 2.13
check "--torch 2.1.0: says it is not its own table" grep -q 'PyTorch 2.1.0+cu121 has no table of its own: explained with the 2.13 lists (the nearest table above it: none below it has its major version)' <<<"$json"
json=$("$amptrace" explain --torch 2.15.0 --json mm f32 f32)
check "--torch 2.15.0: the nearest below it" grep -q 'PyTorch 2.15.0 has no table of its own: explained with the 2.14 lists (the nearest table below it)' <<<"$json"
err=$("$amptrace" explain --torch 1.13x mm f32 2>&1 >/dev/null); rc=$?
check "--torch 1.13x exits 2 (not taken for 1.13)" test "$rc" -eq 2
check "--torch 1.13x: unknown version" grep -q "unknown PyTorch version '1.13x'" <<<"$err"
err=$("$amptrace" explain --torch 1.12 mm f32 2>&1 >/dev/null); rc=$?
check "--torch 1.12 exits 2" test "$rc" -eq 2
check "--torch 1.12: no table, versions listed" grep -q "no table for PyTorch version '1.12'; versions: 1.13, 2.13, 2.14" <<<"$err"
err=$("$amptrace" explain --torch banana mm f32 2>&1 >/dev/null); rc=$?
check "--torch banana exits 2" test "$rc" -eq 2
check "--torch banana: unknown version" grep -q "unknown PyTorch version 'banana'" <<<"$err"
"$amptrace" explain mm f32 --torch >/dev/null 2>&1; rc=$?
check "--torch without a value exits 2" test "$rc" -eq 2

rows=$("$amptrace" explain --torch 1.13 --list --device cuda)
check "1.13 cuda --list has 107 rows" test "$(wc -l <<<"$rows")" -eq 107
rows=$("$amptrace" explain --torch 1.13 --list --device cpu --json)
check "1.13 cpu --list has 126 rows" test "$(grep -c '"op":' <<<"$rows")" -eq 126

out=$("$amptrace" explain --torch 1.13 --device cpu conv_transpose2d.input bf16 bf16)
check "1.13 cpu conv_transpose2d: fp32" grep -q '^policy   fp32' <<<"$out"
check "1.13 cpu conv_transpose2d: output f32" grep -q '^output   f32$' <<<"$out"
check "1.13 text names the version and cache scope" grep -q '^torch    1.13 (weight-cast cache per-thread)$' <<<"$out"
out=$("$amptrace" explain --device cpu conv_transpose2d.input bf16 bf16)
check "newest cpu conv_transpose2d: lower_precision_fp" grep -q '^policy   lower_precision_fp' <<<"$out"

out=$("$amptrace" explain --torch 1.13 --device cpu cat '[f16,f16]')
check "1.13 cpu cat: the wrapper casts nothing" grep -q '^arg 0 .*unchanged: the wrapper leaves its tensors alone' <<<"$out"
check "1.13 cpu cat(f16, f16): native f16" grep -q '^output   f16$' <<<"$out"
check "1.13 cpu cat: note on ITensorListRef" grep -q '^note     PyTorch 1.13 registers cat with a `const ITensorListRef&`' <<<"$out"
out=$("$amptrace" explain --device cpu cat '[f16,f16]')
check "newest cpu cat(f16, f16) raises" grep -qx 'Unexpected floating ScalarType in at::autocast::prioritize' <<<"$out"
out=$("$amptrace" explain --torch 1.13 --device cpu stack bf16 f32)
check "1.13 cpu stack casts to the widest" grep -Eq '^arg 0 +bf16 +-> f32' <<<"$out"

out=$("$amptrace" explain --torch 1.13 --device cpu prelu f32 f32)
check "1.13 cpu prelu: not listed (cuda lists it)" grep -q '^policy   none: not on the cpu autocast lists (on cuda it is lower_precision_fp)' <<<"$out"
out=$("$amptrace" explain --torch 1.13 linalg_vecdot f32 f32)
check "1.13 linalg_vecdot: unlisted, newest lists it" grep -q "^note     linalg_vecdot is on no autocast list of PyTorch 1.13; the 2.13 lists have it (cuda lower_precision_fp)" <<<"$out"
check "1.13 linalg_vecdot: output f32" grep -q '^output   f32$' <<<"$out"
out=$("$amptrace" explain --torch 1.13 --device cpu mm f32:leaf f32)
check "1.13: cached casts note the per-thread cache" grep -q '^note     PyTorch 1.13 keeps the weight-cast cache per-thread' <<<"$out"
out=$("$amptrace" explain --device cpu mm f32:leaf f32)
check "newest: no cache-scope note" bash -c "! grep -q 'per-thread' <<<'$out'"
out=$("$amptrace" explain --torch 1.13 --device cpu --dtype f16 mm f32 f32); rc=$?
check "1.13 cpu f16 autocast: an answer (exit 0)" test "$rc" -eq 0
check "1.13 cpu f16 autocast raises" grep -qx 'Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype' <<<"$out"
out=$("$amptrace" explain --device cpu --dtype f16 mm f32 f32)
check "newest cpu f16 autocast casts to f16" grep -q '^output   f16$' <<<"$out"

err=$("$amptrace" explain symeig f32 2>&1 >/dev/null); rc=$?
check "newest symeig: unknown op (exit 2)" test "$rc" -eq 2
check "newest symeig: hint names 1.13" grep -q "PyTorch 1.13's lists have symeig, 2.14's do not: try --torch 1.13" <<<"$err"
# 2.14 dropped aten::cholesky and aten::qr and listed linalg_matrix_sqrth
err=$("$amptrace" explain --device cpu cholesky f32 2>&1 >/dev/null); rc=$?
check "newest cholesky: unknown op (exit 2)" test "$rc" -eq 2
check "newest cholesky: hint names 2.13, the last lists with it" grep -q "PyTorch 2.13's lists have cholesky, 2.14's do not: try --torch 2.13" <<<"$err"
out=$("$amptrace" explain --torch 2.13 --device cpu qr bf16)
check "2.13 cpu qr: fp32, two f32 outputs" grep -q '^output   f32  (outputs: f32, f32)' <<<"$out"
out=$("$amptrace" explain --device cpu linalg_matrix_sqrth bf16)
check "newest cpu linalg_matrix_sqrth: fp32" grep -q '^policy   fp32' <<<"$out"
out=$("$amptrace" explain --torch 2.13 linalg_matrix_sqrth f16)
check "2.13 linalg_matrix_sqrth: unlisted, 2.14 lists it" grep -q "^note     linalg_matrix_sqrth is on no autocast list of PyTorch 2.13; the 2.14 lists have it (cuda fp32)" <<<"$out"
out=$("$amptrace" explain --torch 1.13 --device cpu symeig bf16)
check "1.13 cpu symeig: fp32, two f32 outputs" grep -q '^output   f32  (outputs: f32, f32)' <<<"$out"
out=$("$amptrace" explain --torch 1.13 frobenius_norm f16)
check "1.13 cuda frobenius_norm (default overload): fp32" grep -q '^op       frobenius_norm$' <<<"$out"
out=$("$amptrace" explain frobenius_norm f16)
check "newest frobenius_norm: only .dim" grep -q '^op       frobenius_norm.dim$' <<<"$out"

# stdout on a full device: explain says so and fails
"$amptrace" explain linear f32 f32 >/dev/full 2>"$tmp/err"
status=$?
check "explain to /dev/full: exit 2" status_is 2
check "explain to /dev/full: says so" err_has "amptrace explain: cannot write standard output: No space left on device"

echo "1..$count"
exit $fail
