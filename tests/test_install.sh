#!/usr/bin/env bash
# `meson install` works and the installed pkg-config file is usable: install
# into a staging dir, then build and run a program against it with only
# `pkg-config --cflags --libs libamp`.
set -eu
build=$1
source_dir=$2
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

meson install -C "$build" --destdir "$stage" --no-rebuild --quiet >/dev/null
pc=$(find "$stage" -name libamp.pc | head -n1)
[ -n "$pc" ] || { echo "not ok - libamp.pc not installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --define-variable=prefix="$stage$prefix" --cflags --libs libamp)
[ -f "$stage$prefix/include/amp.h" ] || { echo "not ok - amp.h not installed"; exit 1; }
cc -std=c11 -o "$stage/infer" "$source_dir/samples/infer.c" $flags
libdir=$(dirname "$(find "$stage" -name 'libamp.so*' | head -n1)")
out=$(LD_LIBRARY_PATH="$libdir" "$stage/infer" --layers 1 --repeat 1)
grep -q '^linear' <<<"$out" || { echo "not ok - installed build does not run"; exit 1; }
echo "ok - installed libamp builds and runs a program through pkg-config"

# The PyTorch bridge, when built: its Python layer and module are installed
# next to the recorder, and the module loads into the torch it was built for.
if [ -f "$build/tracer/torch/sitecustomize.py" ]; then
	site=$(find "$stage" -path '*/amptrace/python/sitecustomize.py' | head -n1)
	[ -n "$site" ] || { echo "not ok - the PyTorch bridge is not installed"; exit 1; }
	PYTHONPATH=$(dirname "$site") /usr/bin/python3 -c '
import os, torch
from amptrace_torch import _bridge, _layer, _observer
_observer.load(torch, _bridge)   # the observer built for this torch binds
src = os.path.join(os.path.dirname(_observer.__file__), "observer_src")
assert os.path.isfile(os.path.join(src, "observer.cpp")), src
cuda = _observer.cuda_module()
assert not cuda or os.path.isfile(cuda), cuda
' || { echo "not ok - the installed PyTorch bridge does not load"; exit 1; }
	echo "ok - the PyTorch bridge is installed, loads and binds its observer"
fi

# The README's way to run a program built against an installed libamp
# outside the loader's path: an rpath from pkg-config's libdir, no
# LD_LIBRARY_PATH.
rpath=$(pkg-config --define-variable=prefix="$stage$prefix" --variable=libdir libamp)
[ "$rpath" = "$libdir" ] || { echo "not ok - pkg-config libdir $rpath is not $libdir"; exit 1; }
cc -std=c11 -o "$stage/infer-rpath" "$source_dir/samples/infer.c" $flags -Wl,-rpath,"$rpath"
out=$(env -u LD_LIBRARY_PATH "$stage/infer-rpath" --layers 1 --repeat 1)
grep -q '^linear' <<<"$out" || { echo "not ok - rpath build does not run"; exit 1; }
echo "ok - a program linked with -Wl,-rpath,\$(pkg-config --variable=libdir libamp) runs"

# The installed tools run as they are (they do not link libamp.so) and
# answer --help; the docs they point to are installed next to them.
for tool in amptrace ampview; do
	bin=$(find "$stage" -type f -path "*/bin/$tool" | head -n1)
	[ -n "$bin" ] || { echo "not ok - $tool not installed"; exit 1; }
	env -u LD_LIBRARY_PATH "$bin" --help | grep -q "usage: $tool" ||
		{ echo "not ok - installed $tool --help"; exit 1; }
done
echo "ok - installed amptrace and ampview run and answer --help"
for doc in FORMAT.md RULES.md README.md; do
	[ -s "$stage$prefix/share/doc/amptrace/$doc" ] ||
		{ echo "not ok - share/doc/amptrace/$doc not installed"; exit 1; }
done
echo "ok - FORMAT.md, RULES.md and README.md installed in share/doc/amptrace"

# The installed tree can be moved: amptrace finds its recorder and the
# bridge relative to itself (here under the staging directory, where the
# prefix's absolute path holds nothing).
bin=$(find "$stage" -type f -path "*/bin/amptrace" | head -n1)
env -u LD_LIBRARY_PATH -u AMPTRACE_RECORDER "$bin" run -q -o "$stage/moved.json" \
	-- env LD_LIBRARY_PATH="$libdir" "$stage/infer" --layers 1 --repeat 1 >/dev/null ||
	{ echo "not ok - a moved install does not record a libamp program"; exit 1; }
echo "ok - a moved install records a libamp program (the recorder found beside it)"
if [ -f "$build/tracer/torch/sitecustomize.py" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
	env -u AMPTRACE_TORCH_DIR -u PYTHONPATH "$bin" run -q -o "$stage/moved-torch.json" \
		-- /usr/bin/python3 -c 'import torch; torch.ones(2) + 1' ||
		{ echo "not ok - a moved install does not record a PyTorch program"; exit 1; }
	echo "ok - a moved install records a PyTorch program (the bridge found beside it)"
fi
[ -f "$stage$prefix/share/bash-completion/completions/amptrace" ] &&
	[ -L "$stage$prefix/share/bash-completion/completions/ampview" ] ||
	{ echo "not ok - the bash completion is not installed"; exit 1; }
echo "ok - the bash completion is installed for amptrace and ampview"
