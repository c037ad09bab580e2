#!/usr/bin/env bash
# The pinned Python environments the torch suites run in beside Debian's
# torch, made once and reused by every checkout of this machine:
#   venv.sh main     torch 2.13 and the model libraries (requirements.txt)
#   venv.sh vision   timm's set (requirements-vision.txt): its own torch
#                    and torchvision; the main one where a torchvision for
#                    the CPU torch 2.13 lies on disk (see below)
#   venv.sh base     no environment: the Python 3.11 they are made with
# Prints the environment's python on stdout.  Exit 1, with the reason on
# stderr, when it cannot be had (no Python 3.11, pip failed).
#
# Where: $AMPTRACE_VENV_ROOT, else ~/.cache/amptrace/venvs (XDG), one
# folder per set named by a hash of its pins, its base Python and the
# machine, so a changed pin makes a new environment and an unchanged one
# is found at once by a clean clone.  A folder becomes usable only when
# complete (a stamp written last); one half made by a killed run is made
# again.  Environments of older pins unused for 14 days are removed.
set -euo pipefail

set_name=${1:-}
here=$(cd "$(dirname "$0")" && pwd)
root=${AMPTRACE_VENV_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/amptrace/venvs}

fail() {
	echo "venv.sh: $*" >&2
	exit 1
}

# The wheels of torch 2.13.0 are for CPython 3.11 only (PyPI has no CPU
# build for others): the base is a 3.11, whatever /usr/bin/python3 is
# (Debian 13's is 3.13).
base_python() {
	local candidate
	for candidate in "${AMPTRACE_VENV_PYTHON:-}" python3.11 python3 \
		/usr/bin/python3.11; do
		[ -n "$candidate" ] || continue
		candidate=$(command -v "$candidate" 2>/dev/null) || continue
		if "$candidate" -c 'import sys, venv
sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
			echo "$candidate"
			return 0
		fi
	done
	return 1
}

if [ "$set_name" = base ]; then
	base_python || fail "no Python 3.11 with its venv module"
	exit 0
fi

# A torchvision built for the CPU torch 2.13.0 among pip's local wheels
# (Debian 13 images carry one): then timm joins the main set.
cpu_torchvision_on_disk() {
	local dir
	for dir in ${PIP_FIND_LINKS:-}; do
		compgen -G "$dir/torchvision-0.28.0+cpu-*.whl" >/dev/null &&
			return 0
	done
	return 1
}

# Debian 13 images: timm joins the main set, and vision is the main one.
if [ "$set_name" = vision ] && cpu_torchvision_on_disk; then
	set_name=main
fi
case "$set_name" in
main)
	requirements=("$here/requirements.txt")
	if cpu_torchvision_on_disk; then
		requirements+=("$here/requirements-vision-cpu.txt")
	fi
	;;
vision)
	requirements=("$here/requirements-vision.txt")
	;;
*)
	echo "usage: venv.sh main|vision|base" >&2
	exit 2
	;;
esac

python=$(base_python) ||
	fail "no Python 3.11 (python3.11 or python3 on PATH, with its venv" \
	     "module; Debian: apt-get install python3.11-venv): torch" \
	     "2.13.0's CPU wheels are for 3.11 only"
key=$( (cat "${requirements[@]}"; "$python" -c 'import sys, platform
print(sys.version, platform.machine())') | sha256sum | cut -c1-12)
venv="$root/$set_name-$key"
stamp="$venv/.amptrace-complete"

mkdir -p "$root"
exec 9>"$venv.lock"
flock 9
if [ ! -f "$stamp" ]; then
	rm -rf "$venv"
	echo "venv.sh: making the $set_name environment in $venv (once)" >&2
	"$python" -m venv "$venv" >&2 ||
		fail "$python -m venv $venv failed"
	args=()
	for file in "${requirements[@]}"; do
		args+=(-r "$file")
	done
	"$venv/bin/python" -m pip install -qq --no-input "${args[@]}" >&2 ||
		fail "pip could not install ${requirements[*]} into $venv"
	date -u +%FT%TZ >"$stamp"
fi
touch "$stamp"
flock -u 9

# Other pins of this set, unused for two weeks (never the one just used).
for old in "$root/$set_name"-*/.amptrace-complete; do
	[ -f "$old" ] && [ "$old" != "$stamp" ] || continue
	if [ -n "$(find "$old" -mtime +14)" ]; then
		rm -rf "$(dirname "$old")" "$(dirname "$old").lock"
	fi
done
echo "$venv/bin/python"
