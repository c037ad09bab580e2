#!/usr/bin/env bash
# The readers on a trace of torch.compile'd graphs (FORMAT.md §3.13),
# written by hand: compiled.json (a compile holding its graph's casts,
# three calls, a compile-divergence note) and compiled-eager.json (the
# same program's eager casts).  Hermetic: no torch needed; the torch 2.x
# suite 'compile' records the real ones.  Arguments: common.sh's.
. "$(dirname "$0")/common.sh"

compiled=$fx/compiled.json
eager=$fx/compiled-eager.json

# --------------------------------------------------------------- summary
capture "$amptrace" summary "$compiled"
check "summary: exit 0" status_is 0
check "summary: the graph, its calls and the casts each call runs" \
	out_has "      1  M.forward                  2/1       4/1        4       1        0"
check "summary: the graph's casts are no run's casts by direction" \
	out_has "  (no autocast casts)"
check "summary: nor the cache's" \
	out_has "hits 0, misses 0, uncacheable 0, disabled 0"
check "summary: the bridge's compile-divergence is a warning finding" \
	out_has "warning compile-divergence: the backward of compiled graph 1"
capture "$amptrace" summary --json "$compiled"
check "summary --json: compiled_graphs" out_has '"backward_casts":	1'
capture "$amptrace" summary --json "$eager"
check "summary --json of an eager trace: no compiled graph" \
	out_has '"compiled_graphs":	[]'

# ----------------------------------------------------------------- check
printf 'casts f32->bf16 <= 0 per step\nfinding compile-divergence == 1\n' \
	>"$tmp/compiled.rules"
capture "$amptrace" check "$compiled" "$tmp/compiled.rules"
check "check: a graph's casts are not counted per step; the finding is" \
	status_is 0

# ------------------------------------------------------------------ diff
capture "$amptrace" diff "$eager" "$compiled"
check "diff eager compiled: exit 1" status_is 1
check "diff eager compiled: casts compared, not ops" \
	out_has "casts compared by module, source line and op"
check "diff eager compiled: the same place casting otherwise" \
	out_has "cast-changed  matmul (forward) at m.py:7: f32->bf16 -> f32->f16"
check "diff eager compiled: a cast only the compiled graph makes" \
	out_has "cast-added    mm (backward) at m.py:7: f32->bf16, only in new"
check "diff eager compiled: linear's casts match (module and line only on one side)" \
	out_lacks "linear"
check "diff eager compiled: the program's own conversion is no autocast cast" \
	out_lacks "float"
capture "$amptrace" diff --json "$compiled" "$eager"
check "diff --json compiled eager: the added cast is removed the other way" \
	out_has '"kind":	"cast-removed"'
capture "$amptrace" diff "$compiled" "$compiled"
check "diff of a compiled trace with itself: exit 0" status_is 0
check "diff of a compiled trace with itself: says so" \
	out_has "no cast behaviour change"

echo "1..$count"
exit $fail
