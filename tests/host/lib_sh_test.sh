#!/usr/bin/env bash
# The VM runner's accounting (tests/vm/lib.sh), on the host: a suite that dies after its plan
# line, or skips, or ends well, is counted as it ran; a test never run is a failure.
# Usage: lib_sh_test.sh [LIB_SH]   (default: the tree's tests/vm/lib.sh)
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:-$here/../vm/lib.sh}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0

# suite NAME BODY: a fake kselftest binary printing BODY's TAP.
suite() { printf '#!/bin/sh\n%s\n' "$2" >"$d/$1"; chmod +x "$d/$1"; }
suite whole 'echo "TAP version 13"; echo "1..3"; echo "ok 1 a"; echo "ok 2 b # SKIP no x"; echo "ok 3 c"'
suite killed 'echo "TAP version 13"; echo "1..4"; echo "ok 1 a"; echo "ok 2 b"; kill -9 $$'
suite noplan 'exit 1'
suite failing 'echo "1..2"; echo "ok 1 a"; echo "not ok 2 b"'
# A kselftest runner: one suite whole, one killed by its timeout after 1 of 5, one skipped.
cat >"$d/runner" <<'R'
#!/bin/sh
echo "TAP version 13"; echo "1..3"
echo "# selftests: t: one"; echo "# 1..2"; echo "# ok 1 a"; echo "# ok 2 b"
echo "ok 1 selftests: t: one"
echo "# selftests: t: two"; echo "# 1..5"; echo "# ok 1 a"
echo "not ok 2 selftests: t: two # TIMEOUT 1800 seconds"
echo "# selftests: t: three"; echo "ok 3 selftests: t: three # SKIP"
R
chmod +x "$d/runner"

# expect WHAT P F S CMD...: CMD counted P passed, F failed, S skipped.
expect() {
	local what=$1 p=$2 f=$3 s=$4 got
	shift 4
	got=$(top=$here/../.. BUILD=$d/build bash -c '. "$0"; VMBIN=$1; shift
		"$@" >/dev/null 2>&1; echo "$PASSED $FAILED $SKIPPED"' "$lib" "$d" "$@")
	if [ "$got" = "$p $f $s" ]; then
		echo "ok - $what: $got"
	else
		echo "not ok - $what: counted $got, wanted $p $f $s"
		fails=$((fails + 1))
	fi
}
expect "a suite that ran whole" 2 0 1 run_ksft_always whole
expect "a suite killed after 2 of its 4 tests" 2 2 0 run_ksft_always killed
expect "a suite that died before its plan" 0 1 0 run_ksft_always noplan
expect "a suite with a failing test" 1 1 0 run_ksft_always failing
expect "the runner: a suite timed out after 1 of its 5 tests" 3 4 1 run_ksft_runner "$d/runner"
[ "$fails" = 0 ]
