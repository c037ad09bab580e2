#!/usr/bin/env bash
# amptrace diff from the outside: --help, bad traces on either side
# (exit 2 and why), equal traces (0), and each kind of change (1), text
# and --json.  Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

# ------------------------------------------------------------------ help
help_checks diff
option_checks diff

# ------------------------------------------------------------ bad input
for entry in "${bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" diff "$fx/good.json" "$fx/$file"
	check "diff good $file: exit 2" status_is 2
	check "diff good $file: says why" err_has "$message"
	capture "$amptrace" diff "$fx/$file" "$fx/good.json"
	check "diff $file good: exit 2" status_is 2
done
make_bad_traces
for entry in "${made_bad_traces[@]}"; do
	file=${entry%%:*}
	message=${entry#*:}
	capture "$amptrace" diff "$tmp/$file" "$fx/good.json"
	check "diff $file: exit 2" status_is 2
	check "diff $file: says why" err_has "$message"
done
capture "$amptrace" diff "$fx" "$fx/good.json"
check "diff of a directory: exit 2" status_is 2
check "diff of a directory: says why" err_has "not a regular file"
full_device_checks diff "$fx/good.json" "$fx/changed.json"

# ---------------------------------------------------------------- diff
capture "$amptrace" diff "$fx/good.json" "$fx/good.json"
check "diff of equal traces: exit 0" status_is 0
check "diff of equal traces: says so" out_has "no change in cast behaviour"
capture "$amptrace" diff "$fx/good.json" "$fx/changed.json"
check "diff: exit 1 on change" status_is 1
check "diff: output dtype change" out_has "output       linear (forward): f16 -> f32  x2"
check "diff: policy change" out_has "policy       linear (forward): lower_precision_fp -> fp32  x2"
check "diff: cast removed" out_has "cast-removed softmax.int (forward): arg 0 f16->f32 cache uncacheable, only in base  x2"
check "diff: cast added" out_has "cast-added   linear (forward): arg 0 f16->f32 cache uncacheable, only in new  x2"
capture "$amptrace" diff --json "$fx/good.json" "$fx/changed.json"
check "diff --json: exit 1" status_is 1
check "diff --json: changed" out_has '"changed":	true'
capture "$amptrace" diff "$fx/good.json"
check "diff with one trace: exit 2" status_is 2

echo "1..$count"
exit $fail
