#!/usr/bin/env bash
# The tracer's stages include only what is below them (tracer/README.md,
# "How an event flows"): every #include "x.h" of a source in a stage's
# folder names a header of its own stage or of one it may use.  Headers
# outside the stages (lib/, kernels/, system) are not judged here.
# Usage: test_layers.sh SOURCE_ROOT.  Then the same check on a copy with
# one upward include added must fail, so the check itself is checked.
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

# The check must catch an upward include: the trace including the findings.
mkdir -p "$tmp/copy"
cp -r "$root/tracer" "$root/viewer" "$tmp/copy/"
printf '#include "findings.h"\n' >>"$tmp/copy/tracer/trace/trace.c"
check "an upward include (trace.c -> findings.h) is caught" \
	eval '! violations "$tmp/copy" >"$tmp/caught" && grep -q "trace.c includes findings.h (analysis)" "$tmp/caught"'

echo "1..$count"
exit $fail
