#!/usr/bin/env bash
# `amptrace explain --torch VERSION` against the installed PyTorch of that
# version (tests/test_torch_policy.py): PYTHON (default /usr/bin/python3,
# where Debian's python3-torch installs; the python3 first on PATH may be
# another one).  SKIP (exit 77) when it cannot import torch, or fail when
# it is the torch 2.13 run and AMPTRACE_REQUIRE_TORCH2=1 (.ci/run).
set -u
amptrace=$1
python=${2-/usr/bin/python3}
if [ -z "$python" ] || ! "$python" -c 'import torch' 2>/dev/null; then
	why="${python:-no interpreter (meson -Dtorch2_python, -Dvision_python): it} cannot import torch"
	if [ "${AMPTRACE_TEST_TORCH:-}" = 2.13 ] &&
	   [ "${AMPTRACE_REQUIRE_TORCH2:-}" = 1 ]; then
		echo "not ok - torch 2.13 is required (AMPTRACE_REQUIRE_TORCH2=1): $why"
		exit 1
	fi
	echo "skip: $why (apt-get install python3-torch; ./run makes the 2.13 one)"
	exit 77
fi
# -B: no __pycache__ in the source tree; -W ignore: torch's deprecation
# warnings for the old linalg ops the 1.13 lists name
exec "$python" -B -W ignore "$(dirname "$0")/test_torch_policy.py" "$amptrace"
