#!/usr/bin/env bash
# The CUDA toolkit the CUDA module is built with, for ./run test: prints
# its root (meson reads it as CUDA_PATH) on stdout.  The module needs nvcc,
# CUPTI and cuBLAS.  A toolkit at $CUDA_PATH, $CUDA_HOME or /usr/local/cuda
# that has all three is used as it is.  One without cuBLAS (some images
# carry nvcc and CUPTI alone) is completed once with the pinned
# nvidia-cublas wheel (the CUDA 13 build's, pip's): a root of links to
# the toolkit and to the wheel's headers and libraries, made under
# ~/.cache/amptrace/cuda (XDG) and reused by every checkout.  The module
# is only built here, never run (no GPU): the suites that run it skip.
# Exit 1, with the reason on stderr, when there is no toolkit or the
# wheel cannot be had; the module is then not built, and ./run says so.
set -euo pipefail

CUBLAS=nvidia-cublas==13.1.1.3
toolkit=${CUDA_PATH:-${CUDA_HOME:-/usr/local/cuda}}
here=$(cd "$(dirname "$0")" && pwd)
root=${XDG_CACHE_HOME:-$HOME/.cache}/amptrace/cuda

fail() {
	echo "cuda_toolkit.sh: $*" >&2
	exit 1
}

[ -x "$toolkit/bin/nvcc" ] || fail "no nvcc in $toolkit/bin"
compgen -G "$toolkit/lib64/libcupti.so*" >/dev/null ||
	fail "no CUPTI in $toolkit/lib64"
if compgen -G "$toolkit/lib64/libcublas.so*" >/dev/null &&
   [ -f "$toolkit/include/cublas_v2.h" ]; then
	echo "$toolkit"
	exit 0
fi

# Named by the toolkit and the pin: either changed makes another root.
key=$(echo "$(readlink -f "$toolkit") $CUBLAS" | sha256sum | cut -c1-12)
complete="$root/$key"
stamp="$complete/.amptrace-complete"
mkdir -p "$root"
exec 9>"$complete.lock"
flock 9
if [ ! -f "$stamp" ]; then
	rm -rf "$complete"
	echo "cuda_toolkit.sh: $toolkit has no cuBLAS: completing it with" \
	     "$CUBLAS in $complete (once)" >&2
	python=$("$here/torch/venv.sh" base) || fail "no Python to run pip"
	PIP_ROOT_USER_ACTION=ignore "$python" -m pip install -qq --no-input \
		--disable-pip-version-check --no-deps --target "$complete/wheel" \
		"$CUBLAS" >&2 || fail "pip could not install $CUBLAS"
	wheel="$complete/wheel/nvidia/cu13"
	mkdir -p "$complete/include" "$complete/lib64"
	for entry in "$toolkit"/*; do
		case ${entry##*/} in
		include|lib64) ;;
		*) ln -s "$entry" "$complete/" ;;
		esac
	done
	# the wheel's over the toolkit's where both have a name (a header
	# without its library)
	ln -s "$toolkit"/include/* "$complete/include/"
	ln -sf "$wheel"/include/* "$complete/include/"
	ln -s "$toolkit"/lib64/* "$complete/lib64/"
	ln -sf "$wheel"/lib/* "$complete/lib64/"
	# the linker's names (the wheel has only the versioned ones)
	ln -sf libcublas.so.13 "$complete/lib64/libcublas.so"
	ln -sf libcublasLt.so.13 "$complete/lib64/libcublasLt.so"
	date -u +%FT%TZ >"$stamp"
fi
flock -u 9
echo "$complete"
