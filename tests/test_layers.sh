#!/usr/bin/env bash
# The tracer's stages include only what is below them (tracer/README.md,
# "How an event flows"): every #include "x.h" of a source in a stage's
# folder names a header of its own stage or of one it may use (headers
# outside the stages, lib/ and system ones, are not judged); and the
# kernels' scalar headers include no libamp header.
# Usage: test_layers.sh SOURCE_ROOT.  Then the same checks on a copy with
# a wrong include added must fail, so the checks themselves are checked.
set -u
root=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/tap.sh"

# stage folder : the stages its sources may include (itself first)
layers=(
	"tracer/trace:trace"
	"tracer/record:record"
	"tracer/analysis:analysis trace"
	"tracer/convert:convert record trace"
	"tracer/commands:commands analysis convert record trace"
	"tracer/torch:torch record"
	"viewer:viewer analysis trace"
)
stage_of() { basename "${1%%:*}"; }

# Prints "header stage" for every header of every stage folder.
headers() { # root
	local entry dir
	for entry in "${layers[@]}"; do
		dir=${entry%%:*}
		find "$1/$dir" -name '*.h' -printf "%f $(stage_of "$entry")\n"
	done
}

# Prints one line per include that crosses the layers upward; returns 1
# when there is any.
violations() { # root
	local root=$1 entry dir stage allowed file header owner bad=0
	headers "$root" >"$tmp/headers"
	for entry in "${layers[@]}"; do
		dir=${entry%%:*}
		stage=$(stage_of "$entry")
		allowed=" ${entry#*:} "
		while IFS= read -r file; do
			while IFS= read -r header; do
				owner=$(awk -v h="$header" '$1 == h { print $2; exit }' "$tmp/headers")
				[ -z "$owner" ] && continue
				case "$allowed" in
				*" $owner "*) ;;
				*)	echo "# ${file#"$root"/} includes $header ($owner): $stage may include only${allowed% }"
					bad=1 ;;
				esac
			done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file" | xargs -rn1 basename)
		done < <(find "$root/$dir" -name '*.[ch]' -o -name '*.cpp')
	done
	return $bad
}

check "every stage folder exists" eval '
	for entry in "${layers[@]}"; do [ -d "$root/${entry%%:*}" ] || { echo "# no ${entry%%:*}"; exit 1; }; done'
check "each header name belongs to one stage" eval '
	headers "$root" >"$tmp/all"; dup=$(cut -d" " -f1 "$tmp/all" | sort | uniq -d)
	[ -z "$dup" ] || { echo "# in two stages: $dup"; false; }'
check "every tracer folder is a stage of the table" eval '
	for d in "$root"/tracer/*/; do d=${d%/}; case " ${layers[*]} " in *" tracer/${d##*/}:"*) ;; *) echo "# ${d##*/}"; exit 1;; esac; done'
check "no source includes a header of a stage above it" violations "$root"

# libamp and the kernels: the scalar headers (kernels/amp_*.h), shared by
# the CPU backend and the CUDA kernels, include only each other, never
# libamp's headers (amp.h), which include them.
scalar_headers_alone() { # root
	local root=$1 file header bad=0
	for file in "$root"/kernels/amp_*.h; do
		while IFS= read -r header; do
			[ -e "$root/kernels/$header" ] && continue
			echo "# ${file#"$root"/} includes $header, not a kernels header"
			bad=1
		done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file")
	done
	return $bad
}
check "kernels' scalar headers include no libamp header" scalar_headers_alone "$root"

# The check must catch an upward include: the trace including the findings.
mkdir -p "$tmp/copy"
cp -r "$root/tracer" "$root/viewer" "$root/kernels" "$tmp/copy/"
printf '#include "findings.h"\n' >>"$tmp/copy/tracer/trace/trace.c"
check "an upward include (trace.c -> findings.h) is caught" \
	eval '! violations "$tmp/copy" >"$tmp/caught" && grep -q "trace.c includes findings.h (analysis)" "$tmp/caught"'

printf '#include "amp_cuda_module.h"\n' >>"$tmp/copy/kernels/amp_math.h"
check "a scalar header including libamp's is caught" \
	eval '! scalar_headers_alone "$tmp/copy" >"$tmp/caught" && grep -q "amp_math.h includes amp_cuda_module.h" "$tmp/caught"'

echo "1..$count"
exit $fail
