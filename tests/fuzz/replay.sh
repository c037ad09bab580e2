#!/usr/bin/env bash
# Replays the crash inputs fuzzing found (regressions/HARNESS/*): through
# the harness itself (replay_HARNESS, built with the normal compiler: it
# must not crash), and through the command a user would run on the same
# file, which must end with 0, 1 or 2, never a signal, and name the file
# when it refuses it (2).
#   replay.sh AMPTRACE AMPVIEW GOOD_TRACE REGRESSIONS REPLAY_BINARIES...
set -u
amptrace=$1 ampview=$2 good=$3 regressions=$4
shift 4
fail=0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

check() { # description, command...
	local what=$1; shift
	if "$@"; then echo "ok - $what"; else echo "not ok - $what"; fail=1; fi
}

# command line, file: exit 0..2, and 2 names the file
cli_ok() {
	local file=$1; shift
	"$@" >/dev/null 2>"$out/err"
	local status=$?
	[ "$status" -le 2 ] || { echo "  exit $status: $*"; return 1; }
	[ "$status" -ne 2 ] || grep -qF "$file" "$out/err" ||
		{ echo "  exit 2 without naming $file: $(head -c 300 "$out/err")"; return 1; }
}

# The hand-made raw inputs (regressions/raw/v4-*, README.md) are for the
# varint decoder: a header of an older raw format stops them before it.
raw_h=$regressions/../../../tracer/record/raw.h
version=$(sed -n 's/^#define RAW_VERSION \([0-9]*\)$/\1/p' "$raw_h")
of_version() { # file: its header's version byte is raw.h's
	[ -n "$version" ] &&
		[ "$(od -An -tu4 -j8 -N4 "$1" | tr -d ' ')" = "$version" ]
}
for f in "$regressions"/raw/v4-*.raw; do
	check "${f##*/} is of raw format $version (raw.h)" of_version "$f"
done

for replayer in "$@"; do
	name=${replayer##*/replay_}
	files=("$regressions/$name"/*)
	[ -e "${files[0]}" ] || continue
	check "replay_$name: ${#files[@]} regression inputs, no crash" \
		"$replayer" "${files[@]}"
	for f in "${files[@]}"; do
		base=${f##*/}
		case $name in
		trace)
			check "amptrace summary $base" cli_ok "$f" "$amptrace" summary "$f"
			check "amptrace diff good.json $base" cli_ok "$f" "$amptrace" diff "$good" "$f"
			check "ampview --all-steps $base" cli_ok "$f" \
				"$ampview" "$f" --all-steps --format dot -o "$out/g.dot"
			;;
		rules)
			check "amptrace check good.json $base" cli_ok "$f" "$amptrace" check "$good" "$f"
			;;
		merge)
			check "amptrace merge $base good.json" cli_ok "$f" \
				"$amptrace" merge "$f" "$good" -o "$out/m.json"
			;;
		esac
	done
done
exit $fail
