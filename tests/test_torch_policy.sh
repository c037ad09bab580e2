#!/usr/bin/env bash
# `amptrace explain --torch 1.13` against the installed PyTorch 1.13
# (tests/test_torch_policy.py).  Debian's python3-torch installs for the
# system interpreter, /usr/bin/python3 (the python3 first on PATH may be
# another one).  SKIP (exit 77) when it cannot import torch.
set -u
amptrace=$1
python=/usr/bin/python3
if ! "$python" -c 'import torch' 2>/dev/null; then
	echo "skip: $python cannot import torch (apt-get install python3-torch)"
	exit 77
fi
# -B: no __pycache__ in the source tree; -W ignore: torch's deprecation
# warnings for the old linalg ops the 1.13 lists name
exec "$python" -B -W ignore "$(dirname "$0")/test_torch_policy.py" "$amptrace"
