# TAP helpers for the shell tests (sourced): `check DESCRIPTION CMD...`
# prints ok / not ok, counts in $count and remembers a failure in $fail
# (the script ends with `exit $fail`); `capture CMD...` keeps the status
# in $status and the output in $tmp/out and $tmp/err for the assertions
# below.
fail=0
count=0
check() { # description, command...
	local what=$1; shift
	count=$((count + 1))
	if "$@"; then echo "ok - $what"; else echo "not ok - $what"; fail=1; fi
}
capture() {
	"$@" >"$tmp/out" 2>"$tmp/err"
	status=$?
}
status_is() { [ "$status" -eq "$1" ] || { echo "# status $status, wanted $1"; cat "$tmp/err"; return 1; }; }
err_has() { grep -qF -- "$1" "$tmp/err" || { echo "# stderr: $(cat "$tmp/err")"; return 1; }; }
err_lacks() { ! grep -qF -- "$1" "$tmp/err" || { echo "# stderr has: $1"; return 1; }; }
out_has() { grep -qF -- "$1" "$tmp/out" || { echo "# stdout: $(head -c 3000 "$tmp/out")"; return 1; }; }
out_lacks() { ! grep -qF -- "$1" "$tmp/out" || { echo "# stdout has: $1"; return 1; }; }
# TEXT in stdout once summary's wrapping is undone (lines joined, runs of
# spaces as one): where a line wraps depends on the paths in it.
out_has_wrapped() { tr '\n' ' ' <"$tmp/out" | tr -s ' ' | grep -qF -- "$1" || { echo "# stdout: $(head -c 3000 "$tmp/out")"; return 1; }; }
out_matches() { grep -qE -- "$1" "$tmp/out" || { echo "# stdout: $(head -c 3000 "$tmp/out")"; return 1; }; }
no_file() { [ ! -e "$1" ] || { echo "# $1 exists"; return 1; }; }
