#!/usr/bin/env bash
# A lent GPU machine's checks (issue 29), prepared here: that machine has
# the GPU, CUDA, PyTorch, g++ and nvcc, but not Debian's libraries, and
# reaches nothing outside.  In the checkout the session started in (the
# one run sends), this builds the suites into .gpu/build (ignored through
# .git/info/exclude), packs beside it the shared libraries its programs
# need that such a machine may lack (.gpu/lib.tar.xz), and writes the GPU
# suites' commands as meson would run them (.gpu/tests.json).  Then, on
# the device (run's carry [".gpu"]):
#   tests/gpu/run.sh env cuda samples bridge    # the suites (a few minutes)
#   tests/gpu/run.sh env timing                 # test_torch_gpu.py --timing
# Options: GPU_ARCH (default 90: the H100 and H200).
set -euo pipefail
cd "$(dirname "$0")/../.."

out=.gpu
build=$out/build
root=$(tests/cuda_toolkit.sh) || {
	echo "prepare.sh: no CUDA toolkit here to build the module with" >&2
	exit 1
}
export CUDA_PATH=$root PATH=$root/bin:$PATH
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo /.gpu/ >>"$exclude"

rm -rf "$out"
mkdir -p "$out/lib"
# the bridge's observer is built on the device, for its torch, on first
# use (amptrace_torch/_observer.py)
meson setup "$build" -Dgpu_arch="${GPU_ARCH:-90}" >/dev/null
ninja -C "$build" >/dev/null

# The GPU suites (meson's suite 'cuda'), each with its command, its
# environment and its time limit; the paths are this checkout's, which
# run.sh makes good on the device.
meson introspect --tests "$build" | python3 -c '
import json, sys
tests = [t for t in json.load(sys.stdin)
         if any(s.split(":")[-1] == "cuda" for s in t["suite"])]
json.dump({"source": sys.argv[1], "build": sys.argv[2], "tests": tests},
          sys.stdout, indent=1)
' "$PWD" "$PWD/$build" >"$out/tests.json"

# Libraries outside glibc and CUDA (the device has its own CUDA, in
# torch's wheels) of the programs those tests run and the libraries built
# beside them (not the observers of this machine's torch): Check's,
# OpenBLAS's, cJSON's.
python3 -c '
import json, os, sys
paths = {a for t in json.load(open(sys.argv[1]))["tests"] for a in t["cmd"]
         if os.path.isfile(a)}
for top, dirs, files in os.walk(sys.argv[2]):
    dirs[:] = [d for d in dirs if d != "bench"]
    paths |= {os.path.join(top, f) for f in files
              if ".so" in f and "observer" not in f}
print("\n".join(sorted(paths)))
' "$out/tests.json" "$build" | xargs file | awk -F: '/ELF/ { print $1 }' |
	xargs ldd 2>/dev/null |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
	awk -F/ '!seen[$NF]++' | # one of each name (OpenBLAS has two)
	grep -Ev '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*|libcuda|libcudart|libcublas[^/]*|libcupti|libnvperf[^/]*|libstdc\+\+|libgcc_s)\.so' |
	xargs -r cp -L -t "$out/lib"

# What travels is at most 64 MiB with the tree: objects and debug
# information stay here.
find "$build" -name '*.p' -type d -prune -exec rm -rf {} +
find "$build" -type f \( -perm -u+x -o -name '*.so' \) -exec file {} + |
	awk -F: '/ELF/ { print $1 }' | xargs strip --strip-unneeded 2>/dev/null || true
# OpenBLAS alone is 36 MB, 5 compressed: run.sh unpacks it
tar -C "$out" -cJf "$out/lib.tar.xz" lib
rm -rf "$out/lib"
size=$(du -sm "$out" | cut -f1)
echo "prepare.sh: $out holds $size MiB: run(command=\"tests/gpu/run.sh PARTS\", carry=[\".gpu\"])"
[ "$size" -le 56 ] || {
	echo "prepare.sh: too large to travel beside the tree (56 MiB at most)" >&2
	exit 1
}
