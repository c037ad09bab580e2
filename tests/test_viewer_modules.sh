#!/bin/sh
# ampview's module views on a hand-made torch-style trace (no torch:
# tests/viewer_module_trace.py writes it): the default depth is the
# deepest whose layout fits 2000x2000 px, --depth, --module zooms (an
# unknown path suggests the closest), a finding's note stays on the
# module node that hides its op, repeated module patterns fold,
# --no-modules draws ops.
#
#   test_viewer_modules.sh AMPVIEW TRACE_SCRIPT
set -u
ampview=$1
script=$2
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
failed=0

fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

# the SVG's size in points: "WIDTH HEIGHT"
svg_size() {
	sed -n 's/^<svg width="\([0-9.]*\)pt" height="\([0-9.]*\)pt".*/\1 \2/p' "$1"
}

# fits SVG: both sides within 2000 CSS px (1500 pt)
fits() {
	svg_size "$1" | awk '{ exit !($1 <= 1500 && $2 <= 1500) }'
}

python3 "$script" "$out/model.json" 8 --error || { echo "FAIL: trace"; exit 1; }

# eight blocks of fc1, act, fc2: at depth 2 the blocks are one node, at
# depth 3 their layers are drawn and the graph is too tall (the one check
# of the automatic depth, with a wide margin: depth 2 is ~1300x700 px,
# depth 3 ~1400x3400; the checks after it pin --depth, as fonts vary)
"$ampview" "$out/model.json" -o "$out/auto.svg" -v 2>"$out/auto.err" &&
	grep -q 'modules 2 levels deep' "$out/auto.err" && fits "$out/auto.svg" &&
	"$ampview" "$out/model.json" -o "$out/deep.svg" --depth 3 &&
	! fits "$out/deep.svg" &&
	echo "ok   the default depth is the deepest that fits ($(svg_size \
		"$out/auto.svg") pt; depth 3: $(svg_size "$out/deep.svg") pt)" ||
	fail "depth choice: $(cat "$out/auto.err"); auto $(svg_size \
		"$out/auto.svg"), depth 3 $(svg_size "$out/deep.svg")"

# a collapsed module: path, class, ops, dtypes, casts; repeated blocks one
# node; edges between modules carry the dtype
"$ampview" "$out/model.json" --format dot -o "$out/depth2.dot" --depth 2 &&
	grep -q 'label="blocks.0 · Block\\n… 7: 8 calls of the same ops\\n32 ops · 160.0 µs → f32 ×8, bf16 ×24\\ncasts f32→bf16 ×16"' "$out/depth2.dot" &&
	grep -q '"module1" -> "module2" \[xlabel="f32"' "$out/depth2.dot" &&
	! grep -q 'label="linear' "$out/depth2.dot" &&
	echo "ok   a module node sums its ops and casts" ||
	fail "module node label"

# the note of a failed op inside a collapsed module goes to its node
grep -q '"finding1" \[label="⚠ error: op-error' "$out/depth2.dot" &&
	grep -q '"finding1" -> "module1"' "$out/depth2.dot" &&
	echo "ok   a finding's note is kept on the module node" ||
	fail "finding note on the module node"

"$ampview" "$out/model.json" --format dot -o "$out/zero.dot" --depth 0 -v \
	2>"$out/zero.err" &&
	grep -q '33 ops in 1 module node$' "$out/zero.err" &&
	grep -q 'label="the model\\n33 ops' "$out/zero.dot" &&
	grep -q 'tooltip="the model, collapsed: --depth 1 draws its modules"' \
		"$out/zero.dot" &&
	echo "ok   --depth 0: the model is one node" || fail "--depth 0: $(cat "$out/zero.err")"

# two processes' ops interleaved (two of a job that each train): shown
# together (--rank all), a module node that sums both says so; one
# process's (the first's, ampview's default for processes that each
# train, ranks.h) does not
python3 -c 'import copy, json, sys
t = json.load(open(sys.argv[1]))
more = []
for e in t["traceEvents"]:
    e = copy.deepcopy(e)
    e["pid"] = 101
    e["ts"] = e.get("ts", 0) + 1
    more.append(e)
t["traceEvents"] = sorted(t["traceEvents"] + more,
                          key=lambda e: (e["ph"] != "M", e.get("ts", 0)))
t["amptraceEnd"]["events"] = len(t["traceEvents"])
json.dump(t, open(sys.argv[2], "w"))' "$out/model.json" "$out/ranks.json" &&
	"$ampview" "$out/ranks.json" --format dot -o "$out/ranks.dot" --depth 2 \
		--rank all &&
	grep -q 'label="blocks.0 · Block\\n… 7: 8 calls of the same ops\\n64 ops of 2 processes · ' "$out/ranks.dot" &&
	"$ampview" "$out/model.json" --format dot -o "$out/one.dot" --depth 2 &&
	! grep -q 'processes' "$out/one.dot" &&
	"$ampview" "$out/ranks.json" --format dot -o "$out/first.dot" --depth 2 &&
	grep -q 'label="blocks.0 · Block\\n… 7: 8 calls of the same ops\\n32 ops · ' "$out/first.dot" &&
	echo "ok   a module node of several processes says so" ||
	fail "module node of merged ranks"

# --module zooms into one block: its layers, nothing else
"$ampview" "$out/model.json" --format dot -o "$out/zoom.dot" \
	--module blocks.3 --depth 1 &&
	grep -q 'label="blocks.3.fc1 · Linear' "$out/zoom.dot" &&
	grep -q 'label="blocks.3.fc2 · Linear' "$out/zoom.dot" &&
	grep -q 'label="add' "$out/zoom.dot" &&
	! grep -q 'blocks.2\|head · Linear' "$out/zoom.dot" &&
	echo "ok   --module zooms into a module" || fail "--module zoom"

"$ampview" "$out/model.json" -o "$out/bad.svg" --module blocks.3.fc3 \
	2>"$out/bad.err"
status=$?
"$ampview" "$out/model.json" -o "$out/bad2.svg" --module fc2 \
	2>"$out/bad2.err"
status2=$?
[ "$status" -eq 2 ] && [ ! -e "$out/bad.svg" ] &&
	grep -q "no op ran in a module named 'blocks.3.fc3' (did you mean 'blocks.3.fc1'?); outermost modules in this trace: 'blocks', 'head'" "$out/bad.err" &&
	[ "$status2" -eq 2 ] && [ ! -e "$out/bad2.svg" ] &&
	grep -q "did you mean 'blocks.0.fc2'" "$out/bad2.err" &&
	echo "ok   an unknown --module is an error suggesting the closest" ||
	fail "unknown module: $(cat "$out/bad.err" "$out/bad2.err")"

# a depth of too many nodes to fit is not laid out: 300 blocks' layers
# are ~1,500 nodes, so depths 0, 1 and 2 are the only layouts made
python3 "$script" "$out/wide.json" 300 &&
	"$ampview" "$out/wide.json" --ops 0 --format dot -o "$out/wide.dot" -v \
		2>"$out/wide.err" &&
	grep -q 'modules 2 levels deep: 1201 ops in 2 module nodes (the deepest whose layout, [0-9x]* px, fits 2000x2000); 3 layouts to choose it$' "$out/wide.err" &&
	echo "ok   a depth of too many nodes is not laid out" ||
	fail "layouts made to choose the depth: $(cat "$out/wide.err")"

# a module view draws the forward pass by default: a trace (or module)
# with only backward ops warns so, naming --phase
python3 "$script" "$out/backward.json" 4 --backward &&
	"$ampview" "$out/backward.json" -o "$out/backward.svg" \
		2>"$out/backward.err" &&
	grep -q '^ampview: warning: no op is of phase forward (by default in a module view; --phase backward or optimizer draws another); the graph is empty$' "$out/backward.err" &&
	"$ampview" "$out/backward.json" -o "$out/backward.svg" \
		--module blocks.3 2>"$out/backward.err" &&
	grep -q '^ampview: warning: no op is of phase forward (by default in a module view; --phase backward or optimizer draws another) and in module blocks.3; the graph is empty$' "$out/backward.err" &&
	"$ampview" "$out/backward.json" -o "$out/backward.svg" \
		--module blocks.3 --phase backward 2>"$out/backward.err" &&
	[ ! -s "$out/backward.err" ] &&
	echo "ok   an empty module view says which filters emptied it" ||
	fail "empty module view: $(cat "$out/backward.err")"

# blocks 0-3 in step 0, the rest in step 1: a module of another step
# points to --step
python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
ts = [e["ts"] for e in ev if "ts" in e]
cut = min(e["ts"] for e in ev
          if e.get("args", {}).get("module", "").startswith("blocks.4")) - 0.5
for n, (a, b) in enumerate([(min(ts), cut), (cut, max(ts) + 1)]):
    ev.append({"name": "step %d" % n, "cat": "amp.step", "ph": "X", "ts": a,
               "dur": b - a, "pid": 100, "tid": 0,
               "args": {"step": n, "marker": "amptrace_torch.step()",
                        "detail": True}})
t["amptraceEnd"]["events"] = len(ev)
json.dump(t, open(sys.argv[2], "w"))' "$out/model.json" "$out/steps.json" &&
	"$ampview" "$out/steps.json" --format dot -o "$out/steps.dot" \
		--module blocks.2 --step 1 2>"$out/steps.err" &&
	grep -q "^ampview: warning: no op of step 1 is of phase forward (by default in a module view; --phase backward or optimizer draws another) and in module blocks.2; the graph is empty; 4 ops of other steps match, the first in step 0 (--step 0 draws it)$" "$out/steps.err" &&
	"$ampview" "$out/steps.json" --format dot -o "$out/steps.dot" \
		--module blocks.2 --step 0 2>"$out/steps.err" &&
	[ ! -s "$out/steps.err" ] &&
	echo "ok   a module of another step points to --step" ||
	fail "module of another step: $(cat "$out/steps.err")"

# a long --module path wraps in the title: the graph below it decides
# the depth, not the title's width
long=an_unusually_long_module_path_for_the_encoder.inner_stack_of_layers
python3 "$script" "$out/long.json" 8 "--prefix=$long" &&
	"$ampview" "$out/long.json" -o "$out/long.svg" --module "$long" -v \
		2>"$out/long.err" &&
	grep -q 'modules 2 levels deep' "$out/long.err" && fits "$out/long.svg" &&
	echo "ok   a long --module path does not decide the depth" ||
	fail "long --module path: $(cat "$out/long.err")"

# a path of over 511 characters is no different (a fixed buffer cut it)
deep=$(python3 -c 'print(".".join(["level%d_" % n + "x" * 120 for n in range(5)]))')
python3 "$script" "$out/deep.json" 2 "--prefix=$deep" &&
	"$ampview" "$out/deep.json" --format dot -o "$out/deep.dot" \
		--module "$deep" --depth 1 -v 2>"$out/deep.err" &&
	grep -q '9 ops in 2 module nodes$' "$out/deep.err" &&
	grep -q "label=\"$deep.head · Linear" "$out/deep.dot" &&
	echo "ok   a module path of over 511 characters is drawn" ||
	fail "long module path: $(cat "$out/deep.err")"

# a glob's * stays within one part of the path: '*fc1' is an outermost
# module (there is none), 'blocks.*.fc1' the eight fc1 layers
"$ampview" "$out/model.json" --format dot -o "$out/glob.dot" \
	--module '*fc1' --depth 0 2>"$out/glob.err"
[ $? -eq 2 ] && grep -q "no op ran in a module named '\*fc1'" "$out/glob.err" &&
	"$ampview" "$out/model.json" --format dot -o "$out/glob.dot" \
		--module 'blocks.*.fc1' --depth 0 -v 2>"$out/glob.err" &&
	grep -q '8 ops in 8 module nodes' "$out/glob.err" &&
	grep -q 'label="blocks.7.fc1 · Linear' "$out/glob.dot" &&
	echo "ok   a --module glob matches within one part of the path" ||
	fail "--module glob: $(cat "$out/glob.err")"

# a ModuleDict key may hold glob characters: the name itself matches
python3 "$script" "$out/dict.json" 2 '--prefix=blocks.[x]*' &&
	"$ampview" "$out/dict.json" --format dot -o "$out/dict.dot" \
		--module 'blocks.[x]*' --depth 1 2>"$out/dict.err" &&
	grep -q 'label="blocks.\[x\]\*.head · Linear' "$out/dict.dot" &&
	echo "ok   a module named like a glob is selected by its name" ||
	fail "--module with glob characters: $(cat "$out/dict.err")"

# a Sequential of Linear, ReLU, Linear, ...: the repeating pattern of
# module nodes folds as repeated ops do
python3 "$script" "$out/flat.json" 8 --flat &&
	"$ampview" "$out/flat.json" --format dot -o "$out/flat.dot" -v \
		2>"$out/flat.err" &&
	grep -q 'label="folded: 7 more repetitions\\nof the 2 modules 1 · ReLU … 2 · Linear above\\n14 ops, 7 casts hidden' "$out/flat.dot" &&
	grep -q "17 ops selected: 3 drawn, 14 folded" "$out/flat.err" &&
	grep -q '3 ops in 3 module nodes, 14 in their folded repetitions' "$out/flat.err" &&
	grep -q 'shown: 3 ops, 2 casts · folded: 14 ops' "$out/flat.dot" &&
	echo "ok   repeated module patterns fold" || fail "module folds: $(cat "$out/flat.err")"

# a ModuleList's layers with a functional relu between them (the model's
# own op, drawn alone): the pattern of a layer node and a relu folds too,
# so the default depth draws the layers (it drew the model as one node)
python3 "$script" "$out/functional.json" 8 --functional &&
	"$ampview" "$out/functional.json" --format dot -o "$out/functional.dot" \
		-v 2>"$out/functional.err" &&
	grep -q 'label="folded: 7 more repetitions\\nof the 2 nodes layers.0 · Linear … relu #2 above\\n14 ops, 7 casts hidden' "$out/functional.dot" &&
	grep -q "17 ops selected: 3 drawn, 14 folded" "$out/functional.err" &&
	grep -q 'modules 2 levels deep: 2 ops in 2 module nodes, 14 in their folded repetitions' "$out/functional.err" &&
	echo "ok   a pattern of module nodes and ops drawn alone folds" ||
	fail "module and op folds: $(cat "$out/functional.err")"

# --no-fold draws every module node
"$ampview" "$out/flat.json" --format dot -o "$out/nofold.dot" --depth 1 \
	--no-fold -v 2>"$out/nofold.err" &&
	grep -q '17 ops in 17 module nodes$' "$out/nofold.err" &&
	grep -q 'label="7 · ReLU' "$out/nofold.dot" &&
	! grep -q 'label="folded' "$out/nofold.dot" &&
	echo "ok   --no-fold draws every module node" ||
	fail "--no-fold in a module view: $(cat "$out/nofold.err")"

# --no-modules and --depth all draw the ops, as before
"$ampview" "$out/model.json" --format dot -o "$out/ops.dot" --no-modules &&
	"$ampview" "$out/model.json" --format dot -o "$out/all.dot" --depth all &&
	cmp -s "$out/ops.dot" "$out/all.dot" &&
	grep -q 'label="linear' "$out/ops.dot" && ! grep -q '"module1"' "$out/ops.dot" &&
	echo "ok   --no-modules draws every op" || fail "--no-modules"

# a --depth past the deepest module draws them all and says so; one on a
# trace whose ops name no module says that every op is drawn
"$ampview" "$out/model.json" --format dot -o "$out/d99.dot" --depth 99 -v \
	2>"$out/d99.err" &&
	grep -q '^ampview: warning: --depth 99: the modules go 3 levels deep; drawing them all$' "$out/d99.err" &&
	grep -q '^ampview: modules 3 levels deep' "$out/d99.err" &&
	python3 -c 'import json, sys
t = json.load(open(sys.argv[1]))
for e in t["traceEvents"]:
    e.get("args", {}).pop("module", None)
json.dump(t, open(sys.argv[2], "w"))' "$out/model.json" "$out/plain.json" &&
	"$ampview" "$out/plain.json" --format dot -o "$out/plain.dot" --depth 2 \
		2>"$out/plain.err" &&
	grep -q '^ampview: warning: --depth 2: no op in the view names its nn.Module (torch traces do); every op is drawn$' "$out/plain.err" &&
	echo "ok   a --depth the view cannot draw is said" ||
	fail "--depth past the modules: $(cat "$out/d99.err" "$out/plain.err")"

"$ampview" "$out/model.json" -o "$out/x.svg" --depth two 2>"$out/x.err"
[ $? -eq 2 ] && grep -q -- "--depth wants a module depth" "$out/x.err" &&
	echo "ok   a bad --depth is a usage error" || fail "--depth two"

[ "$failed" -eq 0 ] || exit 1
echo "all module view checks passed"
