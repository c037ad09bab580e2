#!/usr/bin/env python3
"""Runs meson tests from `meson introspect --tests` output (as
tests/gpu/prepare.sh saved it) where meson itself may not read the build
directory (another meson version, on a lent GPU machine): each named
test's command, in its environment and directory (meson's: the build
directory unless the test names one), within its time limit.
Prints each test's output and a line `NAME: ok | SKIP | FAIL (exit N)`;
exits 1 when one failed (77 is a skip).

usage: run_tests.py TESTS.json NAME...
"""
import json
import os
import subprocess
import sys


def run(test, build):
    env = dict(os.environ, **test.get("env", {}))
    timeout = test.get("timeout") or None
    try:
        p = subprocess.run(test["cmd"], env=env,
                           cwd=test.get("workdir") or build,
                           timeout=timeout, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True,
                           errors="replace")
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        return "FAIL (timed out after %s s)" % timeout, out
    if p.returncode == 0:
        return "ok", p.stdout
    if p.returncode == 77:
        return "SKIP", p.stdout
    return "FAIL (exit %d)" % p.returncode, p.stdout


def main():
    if len(sys.argv) < 3:
        sys.stderr.write(__doc__.split("\n\n")[-1])
        return 2
    with open(sys.argv[1]) as f:
        saved = json.load(f)
    tests = {t["name"]: t for t in saved["tests"]}
    failed = False
    for name in sys.argv[2:]:
        if name not in tests:
            print("%s: no such test (%s)" % (name, ", ".join(sorted(tests))))
            failed = True
            continue
        result, out = run(tests[name], saved["build"])
        sys.stdout.write(out)
        print("%s: %s" % (name, result))
        failed |= result.startswith("FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
