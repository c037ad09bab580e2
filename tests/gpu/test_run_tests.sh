#!/usr/bin/env bash
# tests/gpu/run_tests.py, the runner of a lent GPU session's saved meson
# tests, on saved tests that pass, skip, fail, time out, need their
# environment and run in the build directory unless they name another.
set -u
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$here/../tap.sh"
mkdir "$tmp/build" "$tmp/elsewhere"

python3 - "$tmp" <<'PY'
import json, sys
tmp = sys.argv[1]
def test(name, script, **more):
    return dict({"name": name, "cmd": ["sh", "-c", script], "env": {},
                 "timeout": 30, "workdir": None}, **more)
json.dump({"source": tmp, "build": tmp + "/build", "tests": [
    test("passes", "echo passed here"),
    test("skips", "exit 77"),
    test("fails", "echo broken; exit 3"),
    test("sleeps", "sleep 5", timeout=1),
    test("env", 'test "$AMP_X" = 1', env={"AMP_X": "1"}),
    test("where", 'test "$PWD" = "%s/build"' % tmp),
    test("named", 'test "$PWD" = "%s/elsewhere"' % tmp,
         workdir=tmp + "/elsewhere"),
]}, open(tmp + "/tests.json", "w"))
PY
runner() { python3 "$here/run_tests.py" "$tmp/tests.json" "$@"; }

capture runner passes skips env where named
check "passing, skipped, environment, directories: exit 0" status_is 0
check "a test's output is shown" out_has "passed here"
for line in "passes: ok" "skips: SKIP" "env: ok" "where: ok" "named: ok"; do
	check "says '$line'" out_has "$line"
done
capture runner passes fails
check "a failed test: exit 1" status_is 1
check "a failed test: its status said" out_has "fails: FAIL (exit 3)"
check "a failed test: its output shown" out_has "broken"
capture runner sleeps
check "a test past its limit fails" out_has "sleeps: FAIL (timed out after 1 s)"
capture runner nothere
check "an unknown test fails, naming those there" \
	sh -c "grep -q 'nothere: no such test' '$tmp/out' && grep -q 'passes' '$tmp/out'"
check "an unknown test: exit 1" status_is 1
capture runner
check "no test named: usage, exit 2" status_is 2
echo "1..$count"
exit $fail
