#!/usr/bin/env bash
# On a lent GPU machine, from the repository's root, what
# tests/gpu/prepare.sh prepared here (run's carry [".gpu"]):
#   env      the GPU, its driver, torch and CUDA as the programs see them
#   cuda     libamp's CUDA suite and the loader's (test_cuda, cuda_host)
#   samples  the training samples on the GPU against emulated cuda, and a
#            traced one's kernels linked to its ops (test_samples_cuda.sh)
#   bridge   the PyTorch bridge on the GPU (test_torch_gpu.py)
#   timing   plain, traced, traced without kernel timing and
#            torch.profiler on GPT-2 and Llama (test_torch_gpu.py
#            --timing; AMPTRACE_TIMING_ROUNDS, _ALSO, _ONLY as it reads;
#            2 rounds by default here, about 7.5 minutes on an H200: a
#            call runs 10 at most)
# Each part's output goes to stdout and to $OUT/PART.log (run's files).
# Exit 1 when a part failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/amptrace-gpu}
mkdir -p "$out"
[ -f .gpu/tests.json ] || {
	echo "run.sh: no .gpu/tests.json: run tests/gpu/prepare.sh here first," \
	     "and carry .gpu" >&2
	exit 2
}

# The build's paths are those of the checkout it was prepared in: that
# path leads here too.
prepared=$(python3 -c 'import json, sys
print(json.load(open(".gpu/tests.json"))["source"])')
if [ "$prepared" != "$PWD" ] && [ ! -e "$prepared" ]; then
	mkdir -p "$(dirname "$prepared")" && ln -s "$PWD" "$prepared"
fi
[ -d .gpu/lib ] || tar -C .gpu -xJf .gpu/lib.tar.xz
# CUDA's libraries from the device's torch (nvidia-* wheels), then the
# ones prepare.sh brought (Check's, OpenBLAS's)
python=${AMPTRACE_GPU_PYTHON:-python3}
cuda_libs=$("$python" -c 'import glob, os, nvidia
print(":".join(sorted(glob.glob(os.path.join(list(nvidia.__path__)[0], "*", "lib")))))' 2>/dev/null)
export LD_LIBRARY_PATH=$PWD/.gpu/lib${cuda_libs:+:$cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
amptrace=$prepared/.gpu/build/tracer/amptrace

part_env() {
	nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm \
		--format=csv
	"$python" -c 'import torch, sys
print("python", sys.version.split()[0], "torch", torch.__version__,
      "cuda", torch.version.cuda, "device", torch.cuda.get_device_name())'
	"$prepared/.gpu/build/tests/cuda_probe"
	nproc
}

# The meson tests named, as meson would run them (tests.json).
meson_tests() {
	python3 tests/gpu/run_tests.py .gpu/tests.json "$@"
}

part_cuda() { meson_tests cuda cuda_host; }
part_samples() { meson_tests samples-cuda; }
part_bridge() {
	"$python" tests/torch/test_torch_gpu.py "$amptrace" "$python"
}
part_timing() {
	AMPTRACE_TIMING_ROUNDS=${AMPTRACE_TIMING_ROUNDS:-2} \
		"$python" tests/torch/test_torch_gpu.py "$amptrace" "$python" --timing
}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(env cuda samples bridge)
status=0
for part in "${parts[@]}"; do
	case "$part" in
	env|cuda|samples|bridge|timing) ;;
	*)
		echo "run.sh: no part '$part' (env, cuda, samples, bridge," \
		     "timing)" >&2
		exit 2
		;;
	esac
	echo "=== $part"
	start=$SECONDS
	PYTHONUNBUFFERED=1 "part_$part" 2>&1 | tee "$out/$part.log"
	result=${PIPESTATUS[0]}
	echo "=== $part: exit $result, $((SECONDS - start)) s"
	# 77 too: here a suite that finds no GPU is a failure
	[ "$result" -eq 0 ] || status=1
done
exit $status
