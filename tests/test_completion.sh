#!/usr/bin/env bash
# The bash completion (`amptrace completion bash`, as a user's ~/.bashrc
# loads it): what TAB offers after amptrace, its subcommands and ampview,
# with COMP_WORDS set as bash sets them.  Also `amptrace help rules`.
set -u
amptrace=$1
ampview=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"
PATH=$(dirname "$amptrace"):$(dirname "$ampview"):$PATH

"$amptrace" completion bash >"$tmp/completion.bash"
check "amptrace completion bash prints the script" \
	grep -q 'complete -o filenames -F _amptrace amptrace' "$tmp/completion.bash"
capture "$amptrace" completion zsh
check "another shell is refused" status_is 2

# offers WORD... : the candidates for the command line WORD... (the last
# word is the one being completed), one a line in $tmp/out
offers() {
	bash -c '. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		case $1 in ampview) _ampview ;; *) _amptrace ;; esac
		printf "%s\n" "${COMPREPLY[@]}"' _ "$tmp/completion.bash" "$@" \
		>"$tmp/out" 2>"$tmp/err"
}
has() { grep -qxF -- "$1" "$tmp/out" || { echo "# offered: $(tr '\n' ' ' <"$tmp/out")"; return 1; }; }

offers amptrace ""
check "amptrace TAB: the subcommands" \
	bash -c "grep -qx run '$tmp/out' && grep -qx summary '$tmp/out' && grep -qx check '$tmp/out' && grep -qx report '$tmp/out'"
offers amptrace su
check "amptrace su TAB: summary" has summary
offers amptrace run -
check "amptrace run -TAB: its options, from its --help" \
	bash -c "grep -qx -- --svg '$tmp/out' && grep -qx -- --no-merge '$tmp/out' && grep -qx -- -q '$tmp/out'"
offers amptrace summary --c
check "amptrace summary --cTAB: --color" has --color
offers amptrace summary --color ""
check "amptrace summary --color TAB: its values" has never
offers amptrace explain --device ""
check "amptrace explain --device TAB: cpu, cuda" has cuda
offers amptrace explain --torch ""
check "amptrace explain --torch TAB: the versions, from its --help" \
	test "$(tr '\n' ' ' <"$tmp/out")" = "1.13 2.13 2.14 newest "
offers amptrace help ""
check "amptrace help TAB: the commands and rules" has rules
offers amptrace check t.json "'no finding st"
check "check, a rule typed inline: the finding kinds" \
	has "'no finding stale-cache"
offers amptrace check t.json "'op linear: pol"
check "check, a rule typed inline: the rule keywords" \
	has "'op linear: policy"
offers amptrace run -o t.json -- bas
check "amptrace run -- TAB: the program, as a command" has bash
offers ampview t.json --st
check "ampview --stTAB: --step" has --step
offers ampview t.json --format ""
check "ampview --format TAB: svg dot png" has png

capture "$amptrace" help rules
check "amptrace help rules: the grammar" out_has "finding-rule= \"no\" \"finding\" KIND"
check "amptrace help rules: the kinds of this build" out_has "finding kinds: process-died"
capture "$amptrace" check --help
check "check --help points to it" out_has "amptrace help rules"
exit $fail
