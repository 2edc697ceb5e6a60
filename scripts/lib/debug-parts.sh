# shellcheck shell=bash
# The parts of `make check-debug` (sourced by scripts/check-debug.sh and check-debug-report.sh).
# Each part is one guest run of about 45 minutes on the debug kernel, so that a whole run fits
# sittings of a session and no part nears the guest's 90-minute limit.
#   1/7  wire_test's odd-placed tests    (the hostile peer and the wire transport; the suite is
#   2/7  wire_test's even-placed tests    split by SRNIC_TEST_SHARD, tests/vm/srnic_test.h)
#   3/7  the kselftest suites before hostile_test (objects, queues, engine, traffic, extensions)
#   4/7  hostile_test and the kselftest suites after it (hostile, adversarial, ops, fairness,
#        threads, multicast)
#   5/7  the parts that are not kselftest suites, first half (devices, runner, tools,
#        rdma_cm, UCX and Open MPI, kernel verbs)
#   6/7  ... second half (ULPs, rdma-core, teardown, unload, install)
#   7/7  two guests on one wire
# shellcheck disable=SC2034 # read by the scripts that source this
debug_nparts=7

# The environment part $1 runs with, beyond its suites.
debug_part_env() {
	case $1 in
	1) echo "SRNIC_TEST_SHARD=1/2" ;;
	2) echo "SRNIC_TEST_SHARD=2/2" ;;
	esac
}

# The suites of part $1 (SRNIC_SUITES names, as tests/vm/run-all.sh takes them), from the
# TEST_GEN_PROGS of tests/vm/Makefile in the tree at $2.
debug_part_suites() {
	local ksft
	# TEST_GEN_PROGS: its lines up to the first without a backslash, wire_test left out.
	ksft=$(awk '/^TEST_GEN_PROGS/ { on = 1; sub(/.*:= */, "") }
		on { c = sub(/\\$/, ""); printf "%s ", $0; if (!c) exit }' "$2/tests/vm/Makefile" |
		tr -s ' \t' '\n' | grep -vx -e wire_test -e '')
	case $1 in
	1 | 2) echo "wire_test" ;;
	3) echo "$ksft" | sed '/^hostile_test$/,$d' | tr '\n' ' ' ;;
	4) echo "$ksft" | sed -n '/^hostile_test$/,$p' | tr '\n' ' ' ;;
	5) echo "devices devices_ns forward ksft_runner tools cm ucx kverbs" ;;
	6) echo "ulp pyverbs teardown rmmod install" ;;
	7) echo "pair" ;;
	esac
}
