#!/usr/bin/env bash
# As a PyTorch user: a venv with torch==2.13.0+cpu (requirements.txt pins
# it and what it pulls in: never a bare torch), `pip install` of this
# checkout, then the README's PyTorch commands from that venv with no
# other setup (no PYTHONPATH, the venv's bin first on PATH), the notebook
# API in a headless notebook, `python -m build`'s wheel, and a
# `pip uninstall` that leaves the venv as it was, file for file.
#
# The venv (torch, the notebook stack: requirements.txt) is made once per
# machine and pin set, as ./run's torch environments are, and amptrace is
# installed into it and removed again on each run.  SKIP (77) when it
# cannot be had (no Python 3.11, pip failed), unless
# AMPTRACE_REQUIRE_TORCH2=1 (.ci/run).
set -u
src=$(cd "$1" && pwd)
build=$(cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../tap.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

skip() {
	echo "SKIP: $*" >&2
	[ "${AMPTRACE_REQUIRE_TORCH2:-}" = 1 ] && exit 1
	exit 77
}

# torch 2.13.0's CPU wheels are for CPython 3.11 only: venv.sh's base
base=$("$here/../torch/venv.sh" base 2>/dev/null) ||
	skip "no Python 3.11 with venv (torch 2.13's wheels)"
root=${AMPTRACE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/amptrace/venvs}
key=$( (cat "$here/requirements.txt"; "$base" -c 'import sys, platform
print(sys.version, platform.machine())') | sha256sum | cut -c1-12)
venv=$root/install-$key
py=$venv/bin/python
mkdir -p "$root"
# One run at a time installs into this venv (checkouts share it).
exec 9>"$venv.lock"
flock 9
if [ ! -f "$venv/.amptrace-complete" ]; then
	rm -rf "$venv"
	echo "# making $venv (once)"
	"$base" -m venv "$venv" &&
		"$py" -m pip install -qq --no-input -r "$here/requirements.txt" ||
		skip "pip could not install tests/install/requirements.txt"
	date -u +%FT%TZ >"$venv/.amptrace-complete"
fi

listing() { (cd "$venv" && find . ! -path ./.amptrace-complete | LC_ALL=C sort); }
"$py" -m pip uninstall -y -q amptrace >/dev/null 2>&1 # a killed run's
listing >"$tmp/before"

# The install: the build dir is kept with the checkout's build (a rerun
# builds what changed).
started=$SECONDS
capture "$py" -m pip install --no-input "$src" -Cbuild-dir="$build/pip-build"
check "pip install of the checkout" status_is 0
echo "# pip install took $((SECONDS - started)) s"
[ "$status" -eq 0 ] || { tail -40 "$tmp/out"; exit 1; }

# As a user whose venv is active: its bin first, nothing else set.
work=$tmp/work
mkdir "$work"
cp "$here/train.py" "$work/"
in_venv() { (cd "$work" && env -u PYTHONPATH -u AMPTRACE_TORCH_DIR \
	-u AMPTRACE_RECORDER PATH="$venv/bin:$PATH" VIRTUAL_ENV="$venv" "$@"); }

check "amptrace and ampview are the venv's" \
	in_venv bash -c "[ \"\$(command -v amptrace)\" = '$venv/bin/amptrace' ] &&
			 [ \"\$(command -v ampview)\" = '$venv/bin/ampview' ]"
check "amptrace_torch imports with no PYTHONPATH" \
	in_venv python -c 'import amptrace_torch'
check "the observer was built at install time for the venv's torch" \
	in_venv python -c 'import glob, os, torch, amptrace_torch
from amptrace_torch import _observer
d = os.path.dirname(amptrace_torch.__file__)
assert os.path.isfile(os.path.join(d, "_observer-%s.so" % _observer.tag(torch)))'

# The README's block marked install-test, line by line (pip install
# itself is done above).
awk '/<!-- install-test -->/ { marked = 1; next }
     marked && /^```/ { if (inside) exit; inside = 1; next }
     inside && !/^pip install/' "$src/README.md" >"$tmp/commands"
check "the README has its install-test block" test -s "$tmp/commands"
# torch 2.13's gloo aborts a rank at exit now and then, plain or traced
# ("terminate called without an active exception": a gloo worker drops its
# last work, whose thread state holds a Python object, after finalization
# began; 4 of 18 plain torchrun runs of train.py on a loaded 2-core
# machine): a run that died of exactly that is run again, twice at most.
torch_exit_race() { grep -q 'terminate called without an active exception' "$tmp/err"; }
while IFS= read -r line; do
	for try in 1 2 3; do
		capture in_venv bash -c "$line"
		[ "$status" -ne 0 ] && torch_exit_race || break
		echo "# torch's gloo exit race (try $try): $line"
	done
	check "README: $line" status_is 0
	cat "$tmp/out" "$tmp/err" >>"$tmp/readme.log"
done <"$tmp/commands"
cp "$tmp/readme.log" "$tmp/out"
check "README: python train.py is recorded (linear in bf16)" \
	out_has "lower_precision_fp"
check "README: the graph is drawn" grep -q '<svg' "$work/graph.svg"
check "README: torchrun's ranks are merged, and said" \
	out_has "ranks 0, 1 merged into ddp.json"
capture in_venv amptrace summary ddp.json
check "README: the merged trace has both ranks" out_has "2 processes"

capture in_venv amptrace run -o none.json -- "$base" train.py
check "a python without torch is said, once, at the end" eval \
	'err_has "no ops recorded: $base" && err_has "has no torch (the python on PATH is not the one with torch?" &&
	 [ "$(grep -c "has no torch" "$tmp/err")" = 1 ]'

capture in_venv python "$here/notebook.py" "$work"
cat "$tmp/out"
check "the notebook ran" status_is 0

# `python -m build` with the venv's own build tools (pyproject.toml's
# pins), in the same build dir: a wheel with everything, and no absolute
# path of this machine in what runs.
started=$SECONDS
capture in_venv python -m build --wheel --no-isolation --outdir "$tmp/dist" \
	-Cbuild-dir="$build/pip-build" "$src"
check "python -m build makes a wheel" status_is 0
echo "# python -m build took $((SECONDS - started)) s"
wheel=$(ls "$tmp"/dist/*.whl 2>/dev/null | head -n1)
check "the wheel holds the commands, the bridge and the recorder" \
	"$py" - "$wheel" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
wanted = ["scripts/amptrace", "scripts/ampview", "amptrace_torch/__init__.py",
          "amptrace_torch/_bridge.abi3.so", "amptrace_torch/_notebook.py",
          "amptrace_torch/_run/libamptrace-recorder.so",
          "amptrace_torch/_run/python/sitecustomize.py",
          "amptrace_torch/observer_src/observer.cpp"]
missing = [w for w in wanted if not any(n.endswith(w) for n in names)]
print("# missing: %s" % missing if missing else "# %d files" % len(names))
sys.exit(bool(missing))
PY
check "no build-time path in the installed commands" \
	bash -c "! grep -qaF -e '$build' -e '$src' '$venv/bin/amptrace' '$venv/bin/ampview'"

capture "$py" -m pip uninstall -y amptrace
check "pip uninstall" status_is 0
listing >"$tmp/after"
check "pip uninstall leaves the venv as it was" \
	diff "$tmp/before" "$tmp/after"
exit $fail
