#!/usr/bin/env bash
# libamp exports exactly its public API: every dynamic symbol it defines
# has the amp_ prefix and is declared in a public header (amp.h,
# amp_autograd.h, amp_train.h), and every function those headers declare
# is exported.  Everything else (grad_*, cpu_*, the op table, the
# dispatcher) is hidden: -fvisibility=hidden and lib/libamp.map.  The
# recorder finds libamp through weak symbols, which a hidden function
# would silently turn into NULL: each of them must be exported.
# usage: test_exports.sh LIBAMP RECORDER_SOURCE HEADER...
set -u
lib=$1
recorder=$2
shift 2
. "$(dirname "$0")/tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

nm -D --defined-only "$lib" | awk '{ print $3 }' | sort -u >"$tmp/exported"
# the headers without comments, so prose naming a function does not count
for header in "$@"; do
	cc -fpreprocessed -dD -E -P -x c "$header"
done | grep -oE '(^|[^A-Za-z0-9_])amp_[a-z0-9_]*[[:space:]]*\(' |
	sed -E 's/^[^a]*(amp_[a-z0-9_]*).*/\1/' | sort -u >"$tmp/declared"

listed() { # file: prints it (as a "# " list) and fails when it is not empty
	[ ! -s "$1" ] || { sed 's/^/# /' "$1" | head -20; return 1; }
}
grep -v '^amp_' "$tmp/exported" >"$tmp/unprefixed"
check "every exported symbol has the amp_ prefix" listed "$tmp/unprefixed"
comm -23 "$tmp/exported" "$tmp/declared" >"$tmp/internal"
check "every exported symbol is declared in a public header" \
	listed "$tmp/internal"
comm -13 "$tmp/exported" "$tmp/declared" >"$tmp/missing"
check "every function of the public headers is exported" listed "$tmp/missing"
grep -o '^#pragma weak amp_[a-z0-9_]*' "$recorder" | awk '{ print $3 }' |
	sort -u | comm -23 - "$tmp/exported" >"$tmp/weak"
check "every libamp function the recorder looks up weakly is exported" \
	listed "$tmp/weak"
check "the public headers declare functions (the list is not empty)" \
	test "$(wc -l <"$tmp/declared")" -gt 100

echo "1..$count"
exit $fail
