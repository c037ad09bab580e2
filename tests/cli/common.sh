# What every CLI test script shares (sourced; tests/cli/meson.build gives
# each script the same arguments): the programs, a scratch directory
# removed at exit, the TAP helpers (../tap.sh), and `record`, the one way
# these scripts run a program under amptrace.
#   SCRIPT AMPTRACE AMPVIEW TRACE_PROG FINDINGS_PROG MLP WHOLE_LOOP
#          TRANSFORMER FIXTURES FLOW_CHECK
set -u
amptrace=$(realpath "$1")
ampview=$2
trace_prog=$3
findings_prog=$4
mlp=$5
whole_loop=$6
transformer=$7
fx=$8
flow_check=$9
python=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "${BASH_SOURCE[0]}")/../tap.sh"

# record TRACE PROG [ARGS...]: `amptrace run -q -o TRACE -- PROG ARGS`,
# the program's output in $tmp/record.out and .err; returns run's status
# (the program's).  `loads TRACE` then says whether the trace reads.
record() {
	local trace=$1; shift
	"$amptrace" run -q -o "$trace" -- "$@" >"$tmp/record.out" 2>"$tmp/record.err"
}
loads() { "$amptrace" summary "$1" >/dev/null 2>"$tmp/loads.err" || { echo "# $1 does not load: $(cat "$tmp/loads.err")"; return 1; }; }

# The fixtures every command must refuse (exit 2), each with what the
# message must say: "file:message".
bad_traces=(
	"missing.json:cannot open"
	"empty.json:empty file"
	"truncated-foreign.json:truncated-foreign.json:2:34: the file ends in the middle of the JSON (truncated)"
	"wrong-types.json:wrong-types.json:14: event 11 (amp.op X 'linear'): ts must be a number, got a string"
	"wrong-outputs.json:args.outputs must be an array"
	"events-not-array.json:traceEvents must be an array"
	"garbage.bin:garbage.bin:1:1: expected a trace"
	"future-version.json:trace format 2.0 is not supported"
)
# ... and more made here, in $tmp: a JSON array of numbers, nesting too
# deep for the reader, a raw control byte and a \u0000 in a string, a key
# given twice, a gzip'd trace and an xz one (its magic alone).
make_bad_traces() {
	gzip -c "$fx/good.json" >"$tmp/good.json.gz"
	printf '\3757zXZ\0\0' >"$tmp/magic.xz"
	printf '[1,2,3]\n' >"$tmp/numbers.json"
	printf '[{"ph":"i","name":"a\tb"}]\n' >"$tmp/control.json"
	printf '[{"ph":"i","name":"a\\u0000b"}]\n' >"$tmp/nul.json"
	printf '{"traceEvents":[],\n"traceEvents":[]}\n' >"$tmp/twice.json"
	awk 'BEGIN { for (i = 0; i < 100000; i++) printf "{\"a\":"; printf "1";
		     for (i = 0; i < 100000; i++) printf "}"; print "" }' >"$tmp/deep.json"
}
made_bad_traces=(
	"numbers.json:numbers.json:1:2: expected an event object ('{') in traceEvents, found '1'"
	"deep.json:nesting deeper than 512"
	"control.json:control.json:1:21: a control character in a string"
	"nul.json:nul.json:1:21: \\u0000 in a string"
	"twice.json:twice.json:2:1: the key \"traceEvents\" is given twice"
	"good.json.gz:good.json.gz: compressed with gzip, not JSON text: give it as <(zcat "
	"magic.xz:magic.xz: compressed with xz, not JSON text: give it as <(xzcat "
)

# COMMAND: --help and an unknown option.
help_checks() {
	capture "$amptrace" "$1" --help
	check "$1 --help exits 0" status_is 0
	check "$1 --help prints usage" out_has "usage: amptrace $1"
	capture "$amptrace" "$1" --bogus-option
	check "$1: unknown option exits 2" status_is 2
}

# COMMAND: the command line as every command reads it (command_line.h):
# a mistyped option names the closest one, every bad usage says how to
# get help, options may follow the operands, and `amptrace help COMMAND`
# is its --help.
option_checks() {
	capture "$amptrace" "$1" --hepl
	check "$1 --hepl: exit 2" status_is 2
	check "$1 --hepl: did you mean '--help'" \
		err_has "amptrace $1: unknown option '--hepl'; did you mean '--help'?"
	check "$1 --hepl: how to get help" err_has "Try 'amptrace $1 --help'."
	capture "$amptrace" "$1" --frobnicate
	check "$1 --frobnicate: no suggestion that far" err_lacks "did you mean"
	capture "$amptrace" "$1" --help=yes
	check "$1 --help=yes: takes no value" err_has "option '--help' takes no value"
	capture "$amptrace" help "$1"
	check "amptrace help $1 is $1 --help" out_has "usage: amptrace $1"
}

# ARGS...: amptrace ARGS with stdout on a full device says so and fails,
# whatever it would have returned.
full_device_checks() {
	"$amptrace" "$@" >/dev/full 2>"$tmp/err"
	status=$?
	check "$1 to /dev/full: exit 2" status_is 2
	check "$1 to /dev/full: says so" err_has "amptrace $1: cannot write standard output: No space left on device"
}

# amp.diag events of a kind in a trace, with their fix and severity
diag_has() { # trace kind text
	grep '"cat":"amp.diag"' "$1" | grep -F "\"kind\":\"$2\"" | grep -qF -- "$3" ||
		{ echo "# no $2 amp.diag with $3 in $1"; grep '"cat":"amp.diag"' "$1"; return 1; }
}
no_diag() { # trace kind
	! grep '"cat":"amp.diag"' "$1" | grep -qF "\"kind\":\"$2\""
}
# "first" before "second" in stdout
in_order() {
	local a b
	a=$(grep -nF -- "$1" "$tmp/out" | head -1 | cut -d: -f1)
	b=$(grep -nF -- "$2" "$tmp/out" | head -1 | cut -d: -f1)
	[ -n "$a" ] && [ -n "$b" ] && [ "$a" -lt "$b" ] || { echo "# '$1' (line $a) not before '$2' (line $b)"; return 1; }
}
