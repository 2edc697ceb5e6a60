# The parts of `make check-debug` (sourced by scripts/check-debug.sh and check-debug-report.sh).
# Each part is one guest run of at most about 50 minutes on the debug kernel, so that a whole run
# fits sittings of a session and no part nears the guest's 90-minute limit.
#   1/5  wire_test                      (the hostile peer and the wire transport)
#   2/5  the kselftest suites before hostile_test (objects, queues, engine, traffic, extensions)
#   3/5  hostile_test and the kselftest suites after it (hostile, adversarial, ops, fairness,
#        threads, multicast)
#   4/5  the parts that are not kselftest suites (tools, rdma_cm, kernel verbs, ULPs,
#        rdma-core, teardown, unload, install)
#   5/5  two guests on one wire
debug_nparts=5

# The suites of part $1 (SRNIC_SUITES names, as tests/vm/run-all.sh takes them), from the
# TEST_GEN_PROGS of tests/vm/Makefile in the tree at $2.
debug_part_suites() {
	local ksft
	# TEST_GEN_PROGS: its lines up to the first without a backslash, wire_test left out.
	ksft=$(awk '/^TEST_GEN_PROGS/ { on = 1; sub(/.*:= */, "") }
		on { c = sub(/\\$/, ""); printf "%s ", $0; if (!c) exit }' "$2/tests/vm/Makefile" |
		tr -s ' \t' '\n' | grep -vx -e wire_test -e '')
	case $1 in
	1) echo "wire_test" ;;
	2) echo "$ksft" | sed '/^hostile_test$/,$d' | tr '\n' ' ' ;;
	3) echo "$ksft" | sed -n '/^hostile_test$/,$p' | tr '\n' ' ' ;;
	4) echo "devices devices_ns forward ksft_runner tools cm kverbs ulp pyverbs teardown rmmod install" ;;
	5) echo "pair" ;;
	esac
}
