# Shared by the guest-side scripts: device set-up, and running suites with
# pass/fail/skip accounting.  Sourced, not executed.
top=${top:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
BUILD=${BUILD:-$top/build}
# The kselftest tree the suites were built in (scripts/ksft-tree.sh), and the target's binaries.
KSFT=$BUILD/ksft/linux/tools/testing/selftests
KSFT_TARGET=drivers/infiniband/srnic
VMBIN=$KSFT/$KSFT_TARGET
export RDMAV_DRIVERS=$BUILD/cmake/libsrnic
export SRNIC_DEV=${SRNIC_DEV:-srnic0}
export SRNIC_NETDEV=${SRNIC_NETDEV:-srnic_veth0}
PASSED=0 FAILED=0 SKIPPED=0
# The tier: make check's short budgets, or make check-full's (scripts/check.sh sets it).
export SRNIC_TIER=${SRNIC_TIER:-short}

# fuzz_budget N: a soak loop's budget N, written at the full tier's size, for this tier (as
# fuzz_budget() in srnic_test.h: a quarter in the short tier, SRNIC_FUZZ_SCALE percent if set).
fuzz_budget() {
	local pct=25 n
	[ "$SRNIC_TIER" = full ] && pct=100
	[ "${SRNIC_FUZZ_SCALE:-0}" -gt 0 ] 2>/dev/null && pct=$SRNIC_FUZZ_SCALE
	n=$(($1 * pct / 100))
	echo $((n > 0 ? n : 1))
}

# A veth pair and srnic0 on one end; the module loads on demand.
srnic_setup_main_device() {
	ip link add "$SRNIC_NETDEV" type veth peer name "${SRNIC_NETDEV%0}1" &&
	ip link set "$SRNIC_NETDEV" up && ip link set "${SRNIC_NETDEV%0}1" up &&
	rdma link add "$SRNIC_DEV" type srnic netdev "$SRNIC_NETDEV" || return 1
	wait_gid "$SRNIC_DEV"
}

# wait_gid DEV: the core fills RoCE GIDs from a workqueue; waits (bounded) for the link-local one.
# Then, bounded, for its netdev's IPv6 link-local address to leave DAD: the core rewrites the GID
# table as it settles, and a QP connected meanwhile can fail (seen right after a netdev came up).
wait_gid() {
	local i nd
	for i in $(seq 1 500); do
		grep -q fe80 "/sys/class/infiniband/$1/ports/1/gids/0" 2>/dev/null && break
		sleep 0.01
	done
	[ "$i" -lt 500 ] || { echo "$1 has no GID 0" >&2; return 1; }
	nd=$(cat "/sys/class/infiniband/$1/ports/1/gid_attrs/ndevs/0" 2>/dev/null) || return 0
	# A netdev of another namespace is not seen here: its caller waits there.  (Asking `ip`
	# 500 times for it took most of an hour on the debug kernel.)
	[ -e "/sys/class/net/$nd" ] || return 0
	for i in $(seq 1 500); do
		ip -6 addr show dev "$nd" scope link -tentative 2>/dev/null | grep -q inet6 && return 0
		sleep 0.01
	done
	return 0
}

# part_line NAME PASSED FAILED SKIPPED SECONDS: one row of the run's per-part table
# (scripts/check.sh collects the "part|" lines into it).
part_line() { echo "part| $*"; }

# run_part NAME CMD...: CMD (a shell function that counts into PASSED/FAILED/SKIPPED) as one
# part of the run, timed.
run_part() {
	local name=$1 p=$PASSED f=$FAILED s=$SKIPPED t=$SECONDS
	shift
	"$@"
	part_line "$name" $((PASSED - p)) $((FAILED - f)) $((SKIPPED - s)) $((SECONDS - t))
}

# run_ksft_runner CMD...: the kernel's kselftest runner (`make run_tests`, run_kselftest.sh);
# counts the tests of every suite it ran (its nested TAP), and as one failure a suite that ended
# in failure with none of its tests failed (a crash, a timeout), as one skip a suite that skipped
# as a whole (its reason is in the output); a suite that ran fewer tests than its plan fails
# once for each test it never ran.  Each suite is a part of the run's table.
run_ksft_runner() {
	local out counts
	out=$(mktemp)
	"$@" 2>&1 | while IFS= read -r line; do
		printf '%s\n' "$line"
		case $line in
		"# selftests: "*) start=$SECONDS ;;
		"# ok "[0-9]* | "# not ok "[0-9]*) echo "#   ($((SECONDS - start)) s into the suite)" ;;
		"ok "[0-9]*" selftests: "* | "not ok "[0-9]*" selftests: "*)
			echo "#   suite time: $((SECONDS - start)) s" ;;
		esac
	done | tee "$out"
	# A suite's block: "# selftests: T: NAME", its nested TAP ("# 1..N", "# ok ..."), then the
	# runner's "ok|not ok K selftests: T: NAME" line and the suite time.
	awk '
		function close_suite(line, secs) {
			short = plan - itests
			if (short < 0) short = 0
			if (line ~ /^not ok/ && !ifail && !short) ifail = 1
			if (line ~ /^ok/ && line !~ /# SKIP/ && !itests) ifail = 1
			if (line ~ /# SKIP/ && !itests) iskip = 1
			printf "part| %s %d %d %d %d\n", name, ipass, ifail + short, iskip, secs
			if (short) printf "not ok - %s: ran %d of its %d tests\n", name, itests, plan
			tp += ipass; tf += ifail + short; ts += iskip
		}
		/^# selftests: / { name = $NF; ipass = ifail = iskip = itests = plan = 0; pend = ""; next }
		/^# 1\.\.[0-9]+/ { plan = substr($2, 4) + 0; next }
		/^# not ok [0-9]+ / { ifail++; itests++; next }
		/^# ok [0-9]+ .*# SKIP/ { iskip++; itests++; next }
		/^# ok [0-9]+ / { ipass++; itests++; next }
		/^(not )?ok [0-9]+ selftests: / { pend = $0; next }
		/^#   suite time: / { if (pend != "") close_suite(pend, $4); pend = ""; next }
		END { print tp + 0, tf + 0, ts + 0 > "/dev/stderr" }' "$out" 2>"$out.counts"
	counts=$(cat "$out.counts")
	# No suite line at all: the runner itself failed.
	grep -qE '^(not )?ok [0-9]+ selftests: ' "$out" || counts="0 1 0"
	read -r p f s <<<"$counts"
	PASSED=$((PASSED + p)) FAILED=$((FAILED + f)) SKIPPED=$((SKIPPED + s))
	rm -f "$out" "$out.counts"
}

# run_ksft_always SUITE [ARGS]: one kselftest binary, directly; counts its TAP results, and as
# failures the tests of its plan it never ran (a suite that dies without a plan fails once).
# Its part of the table is named SUITE, or $PART_NAME.
run_ksft_always() {
	local suite=$1 out start=$SECONDS plan ran p f s
	shift
	echo "# ---- $suite $*"
	out=$(mktemp)
	"$VMBIN/$suite" "$@" 2>&1 | while IFS= read -r line; do
		printf '%s\n' "$line"
		[[ $line == "ok "* || $line == "not ok "* ]] && echo "#   ($((SECONDS - start)) s into $suite)"
	done | tee "$out"
	s=$(grep -cE '^ok [0-9]+ .*# SKIP' "$out")
	p=$(($(grep -cE '^ok [0-9]+ ' "$out") - s))
	f=$(grep -cE '^not ok [0-9]+ ' "$out")
	plan=$(sed -n 's/^1\.\.\([0-9]*\).*/\1/p' "$out" | head -n 1)
	ran=$((p + f + s))
	if [ -z "$plan" ]; then
		echo "not ok - $suite: no plan line (the suite died before it started)"
		f=$((f + 1))
	elif [ "$ran" -lt "$plan" ]; then
		echo "not ok - $suite: ran $ran of its $plan tests"
		f=$((f + plan - ran))
	fi
	PASSED=$((PASSED + p)) FAILED=$((FAILED + f)) SKIPPED=$((SKIPPED + s))
	part_line "${PART_NAME:-$suite}" "$p" "$f" "$s" $((SECONDS - start))
	rm -f "$out"
}

# run_check NAME CMD...: one check of a tool's behaviour, as TAP.
run_check() {
	local name=$1 start=$SECONDS
	shift
	if "$@"; then
		echo "ok - $name"
		PASSED=$((PASSED + 1))
	else
		echo "not ok - $name"
		FAILED=$((FAILED + 1))
	fi
	echo "#   ($((SECONDS - start)) s)"
}

# run_pyverbs MODULE...: rdma-core's Python tests against $SRNIC_DEV.
run_pyverbs() {
	local src=/usr/share/doc/rdma-core/tests dir out m
	# The suite's huge-page tests need 2 MiB pages allocated.
	echo 64 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
	dir=$(mktemp -d)/tests
	cp -r "$src" "$dir" && gunzip -f "$dir"/*.gz || { FAILED=$((FAILED + 1)); return; }
	out=$(mktemp)
	# No module named: the whole suite (vendor tests skip themselves).
	[ $# -gt 0 ] || set -- ""
	for m in "$@"; do
		echo "# ---- rdma-core ${m:-(whole suite)}"
		(cd "$dir" && /usr/bin/python3 run_tests.py --dev "$SRNIC_DEV" --gid 0 -v $m) 2>&1 | tee -a "$out"
	done
	# unittest -v: "test_x (tests.mod.Class.test_x) ... ok|FAIL|ERROR|skipped '...'"
	local ok fail skip
	ok=$(grep -cE '\.\.\. ok$' "$out")
	fail=$(grep -cE '\.\.\. (FAIL|ERROR)$' "$out")
	skip=$(grep -cE '\.\.\. skipped' "$out")
	echo "# rdma-core: $ok ok, $fail failed, $skip skipped; skips by reason:"
	grep -E '\.\.\. skipped' "$out" | sed 's/.*skipped /#   /' | sort | uniq -c
	PASSED=$((PASSED + ok))
	FAILED=$((FAILED + fail))
	SKIPPED=$((SKIPPED + skip))
	rm -f "$out"
}

summary() {
	echo "vm: $PASSED passed, $FAILED failed, $SKIPPED skipped"
	[ "$FAILED" -eq 0 ]
}
