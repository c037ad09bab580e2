#!/usr/bin/env bash
# `amptrace run` on Python launchers: a Python program is recognised by
# its interpreter's name or by its script's #! line (console scripts:
# torchrun, accelerate, lightning; pip's launcher for long paths), found
# on PATH as the shell would; `python -m torch.distributed.run` with two
# ranks gives one trace per rank and their merge, and says so.  Runs on
# the given Python's torch (meson's torch_python by default); SKIP
# without one.
set -u
amptrace=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
python=${2:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"
"$python" -c 'import torch' 2>/dev/null ||
	{ echo "SKIP: $python has no torch" >&2; exit 77; }
# as a user's shell: nothing points at the bridge
unset PYTHONPATH AMPTRACE_TORCH_DIR

cat >"$tmp/train.py" <<'PY'
import os, torch
if int(os.environ.get("WORLD_SIZE", "1")) > 1:
    import torch.distributed as dist
    dist.init_process_group("gloo")
layer = torch.nn.Linear(8, 8)
with torch.autocast("cpu", torch.bfloat16):
    layer(torch.randn(2, 8)).float().sum().backward()
print("trained")
PY
mkdir "$tmp/bin"
# console scripts as pip writes them, for a short and a long path
printf '#!%s\nimport runpy, sys\nrunpy.run_path(sys.argv[1], run_name="__main__")\n' \
	"$python" >"$tmp/bin/launch-direct"
printf '#!/usr/bin/env -S %s -u\nimport runpy, sys\nrunpy.run_path(sys.argv[1], run_name="__main__")\n' \
	"$python" >"$tmp/bin/launch-env"
printf "#!/bin/sh\n'''exec' \"%s\" \"\$0\" \"\$@\"\n' '''\nimport runpy, sys\nrunpy.run_path(sys.argv[1], run_name=\"__main__\")\n" \
	"$python" >"$tmp/bin/launch-long"
printf '#!/bin/sh\nexec "$@"\n' >"$tmp/bin/not-python"
chmod +x "$tmp/bin"/*

for launcher in launch-direct launch-env launch-long; do
	capture env PATH="$tmp/bin:$PATH" "$amptrace" run -o "$tmp/$launcher.json" \
		-- "$launcher" "$tmp/train.py"
	check "$launcher (found on PATH) is run as Python: recorded" status_is 0
	capture "$amptrace" summary "$tmp/$launcher.json"
	check "$launcher: its linear op in bf16" out_has "lower_precision_fp"
done
capture env PATH="$tmp/bin:$PATH" "$amptrace" run -o "$tmp/sh.json" \
	-- not-python true
check "a shell script is not taken for Python" \
	err_has "is not-python linked to libamp"

# Debian's torch 1.13 cannot run its own launcher (its redirects default
# breaks elastic's to_map): the ranks' part needs a torch that can.
if ! (cd "$tmp" && "$python" -m torch.distributed.run --nproc_per_node 2 \
	train.py) >"$tmp/plain.log" 2>&1; then
	echo "# $python -m torch.distributed.run fails without amptrace too" \
	     "($(grep -m1 Error "$tmp/plain.log")): the ranks' checks need" \
	     "another torch (tests/install/test_pip_install.sh runs torchrun" \
	     "on 2.13)"
	exit $fail
fi
capture env -C "$tmp" "$amptrace" run -o ddp.json -- "$python" -m torch.distributed.run \
	--nproc_per_node 2 train.py
check "python -m torch.distributed.run --nproc_per_node 2" status_is 0
check "two ranks: merged, and the ranks named" \
	err_has "ranks 0, 1 merged into ddp.json (one process per rank; each rank alone: ddp.rank0.json, ddp.rank1.json)"
capture "$amptrace" summary "$tmp/ddp.json"
check "the merge holds both ranks" out_has "2 processes"
capture env -C "$tmp" "$amptrace" run -q --no-merge -o apart.json -- "$python" \
	-m torch.distributed.run --nproc_per_node 2 train.py
check "--no-merge: the ranks' traces only" \
	bash -c "[ -f '$tmp/apart.rank0.json' ] && [ -f '$tmp/apart.rank1.json' ] && [ ! -e '$tmp/apart.json' ]"
exit $fail
