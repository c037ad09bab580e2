#!/bin/sh
# Golden DOT tests: ampview's DOT for the committed traces in
# tests/fixtures/viewer must equal the committed NAME.dot byte for byte
# (fixtures/viewer/golden.list says which trace and options make each).
#
#   test_viewer_golden.sh AMPVIEW FIXTURES [--update]
#
# --update rewrites the golden files (after a deliberate change to the
# graph; review the diff before committing it).
set -u
ampview=$1
fixtures=$2
update=${3:-}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0
count=0

while read -r name trace options; do
	case "$name" in ''|'#'*) continue ;; esac
	count=$((count + 1))
	# shellcheck disable=SC2086 # options are words
	if ! "$ampview" "$fixtures/$trace" --format dot -o "$out/$name.dot" \
		$options 2>"$out/$name.err"; then
		echo "FAIL $name: ampview $trace $options failed:"
		cat "$out/$name.err"
		failed=$((failed + 1))
		continue
	fi
	if [ "$update" = --update ]; then
		cp "$out/$name.dot" "$fixtures/$name.dot"
		echo "updated $name.dot"
	elif cmp -s "$out/$name.dot" "$fixtures/$name.dot"; then
		echo "ok   $name"
	else
		echo "FAIL $name: DOT differs from $fixtures/$name.dot:"
		diff -u "$fixtures/$name.dot" "$out/$name.dot" | head -40
		echo "(if the change is intended: $0 $ampview $fixtures --update)"
		failed=$((failed + 1))
	fi
done < "$fixtures/golden.list"

[ "$count" -gt 0 ] || { echo "FAIL: no golden tests in golden.list"; exit 1; }
echo "$((count - failed)) of $count golden DOT files match"
[ "$failed" -eq 0 ]
