#!/usr/bin/env bash
# Runs every VM suite in one boot (called by `make check` through qemu/run).
# Prints TAP from each suite and ends with "vm: N passed, N failed, N skipped".
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/vm/lib.sh"

. "$top/tests/vm/tools.sh"	# ibv_*_pingpong, perftest, system calls per post
. "$top/tests/vm/cm.sh"		# programs that connect through rdma_cm
. "$top/tests/vm/ucx.sh"	# UCX and Open MPI with UCX's defaults
. "$top/tests/vm/kverbs.sh"	# the kernel verbs, from a test module
. "$top/tests/vm/ulp.sh"	# kernel ULPs: NVMe over RDMA, NFS over RDMA
. "$top/tests/vm/forward.sh"	# a router's netdev bound to srnic

srnic_setup_main_device || { echo "vm: 0 passed, 1 failed, 0 skipped"; exit 1; }

# SRNIC_SUITES="mr_test hostile_test teardown ..." runs only those parts (default: all); the
# parts that are not kselftest suites are devices, devices_ns, forward, ksft_runner, tools, cm,
# ucx, kverbs, ulp, pyverbs, install, teardown and rmmod.
want() { [ -z "${SRNIC_SUITES:-}" ] || [[ " $SRNIC_SUITES " == *" $1 "* ]]; }

# Time limits: the target's settings give each suite 30 minutes; a slower kernel gets more.
# `make run_tests` takes the limit from the environment; run_kselftest.sh clears that variable
# when it starts and takes it only as its -o option.
ksft_limit=()
if [ "${SRNIC_TIME_SCALE:-1}" -gt 1 ]; then
	export kselftest_override_timeout=$((1800 * SRNIC_TIME_SCALE))
	ksft_limit=(-o "$kselftest_override_timeout")
fi

# The kselftest suites, through the kernel's own runner (tests/vm/Makefile is a kselftest
# target): the whole target with `make run_tests` in the tree it was built in, or the suites
# SRNIC_SUITES names with run_kselftest.sh of an installed copy (kselftest_install.sh).
KSFT_INSTALL=/tmp/ksft-install
mkdir -p -m 755 "$KSFT_INSTALL"
(cd "$KSFT" && MAKEFLAGS="TARGETS=$KSFT_TARGET" ./kselftest_install.sh "$KSFT_INSTALL") \
	>/tmp/ksft-install.log 2>&1 || { cat /tmp/ksft-install.log; FAILED=$((FAILED + 1)); }
if [ -z "${SRNIC_SUITES:-}" ]; then
	run_ksft_runner make -s --no-print-directory -C "$KSFT" TARGETS=$KSFT_TARGET run_tests
else
	ksft_wanted=()
	for t in $(cat "$KSFT_INSTALL/kselftest-list.txt"); do
		want "${t#*:}" && ksft_wanted+=(-t "$t")
	done
	[ ${#ksft_wanted[@]} = 0 ] || run_ksft_runner "$KSFT_INSTALL/run_kselftest.sh" \
		"${ksft_limit[@]}" "${ksft_wanted[@]}"
fi

# Two devices, one on each end of a veth pair, the first with three engine threads
# (srnic.engines): stress_test and the doorbell marks on the three threads, and in the full tier
# traffic_test again with every pair's second QP on the other device (the transport's two-device
# oracle).
if want devices; then
	p=/sys/module/srnic/parameters/engines
	if ip link add srthr30 type veth peer name srthr31 && ip link set srthr30 up &&
	   ip link set srthr31 up && echo 3 >$p && rdma link add srnic3t type srnic netdev srthr30 &&
	   echo 0 >$p && rdma link add srnic3p type srnic netdev srthr31 &&
	   wait_gid srnic3t && wait_gid srnic3p; then
		[ "$SRNIC_TIER" = full ] &&
			PART_NAME=devices:traffic_test SRNIC_DEV=srnic3t SRNIC_NETDEV=srthr30 \
			SRNIC_PEER_DEV=srnic3p run_ksft_always traffic_test
		PART_NAME=devices:stress_test SRNIC_DEV=srnic3t SRNIC_NETDEV=srthr30 \
			run_ksft_always stress_test
		# A context's QPs on three threads: a bell page each, marks of the others' QPs.
		PART_NAME=devices:scale_test SRNIC_DEV=srnic3t SRNIC_NETDEV=srthr30 \
			run_ksft_always scale_test -f bells -v procs_32_of_512
	else
		echo "not ok - two devices on a veth pair, one with three engine threads"
		FAILED=$((FAILED + 1))
	fi
	echo 0 >$p
	rdma link del srnic3t 2>/dev/null
	rdma link del srnic3p 2>/dev/null
	ip link del srthr30 2>/dev/null
fi

# Two devices whose netdevs are in two network namespaces, the ends of one veth pair: another
# host as far as routing goes: tag matching with the receiver across the wire, and in the full
# tier every pair of traffic_test crossing the veth as RoCEv2 (the wire transport under the whole
# traffic suite, on one machine).
if want devices_ns; then
	if ip netns add srnicns4 && ip link add srthr40 type veth peer name srthr41 netns srnicns4 &&
	   ip link set srthr40 up && ip netns exec srnicns4 ip link set srthr41 up &&
	   rdma link add srnic4t type srnic netdev srthr40 &&
	   ip netns exec srnicns4 rdma link add srnic4p type srnic netdev srthr41 &&
	   wait_gid srnic4t && wait_gid srnic4p &&
	   ip netns exec srnicns4 sh -c 'for i in $(seq 1 500); do
		ip -6 addr show dev srthr41 scope link -tentative | grep -q inet6 && exit 0
		sleep 0.01; done; exit 1'; then
		[ "$SRNIC_TIER" = full ] &&
			PART_NAME=devices_ns:traffic_test SRNIC_DEV=srnic4t SRNIC_NETDEV=srthr40 \
			SRNIC_PEER_DEV=srnic4p run_ksft_always traffic_test
		# Tag matching with the receiver across the wire: messages a packet at a time.
		PART_NAME=devices_ns:tm_test SRNIC_DEV=srnic4t SRNIC_NETDEV=srthr40 \
			SRNIC_PEER_DEV=srnic4p run_ksft_always tm_test
		run_check "the suites' pairs crossed the veth between the namespaces as packets" \
			sh -c "rdma statistic show link srnic4t/1 | grep -qE ' tx_packets [1-9]' &&
			       rdma statistic show link srnic4p/1 | grep -qE ' tx_packets [1-9]'"
	else
		echo "not ok - two devices on a veth pair between network namespaces"
		FAILED=$((FAILED + 1))
	fi
	rdma link del srnic4t 2>/dev/null
	rdma link del srnic4p 2>/dev/null
	ip link del srthr40 2>/dev/null
	ip netns del srnicns4 2>/dev/null
fi

want forward && run_part forward run_forward

# The installed runner as a user of the kernel's selftests runs it: no SRNIC_DEV (the suite makes
# its own device and removes it), and without root, from a copy of the user's own (the suite
# skips, saying why).
ksft_runner_checks() {
devs_before=$(ls /sys/class/infiniband | tr '\n' ' ')
run_check "run_kselftest.sh: without SRNIC_DEV a suite makes its own device, passes, removes it" \
	sh -c ": >/tmp/ksft-own.txt; env -u SRNIC_DEV -u SRNIC_NETDEV \
		$KSFT_INSTALL/run_kselftest.sh -t $KSFT_TARGET:pd_test >>/tmp/ksft-own.txt 2>&1; sed 's/^/#   /' /tmp/ksft-own.txt;
	       grep -q '^ok 1 selftests: $KSFT_TARGET: pd_test\$' /tmp/ksft-own.txt &&
	       grep -q 'made srnic_k' /tmp/ksft-own.txt &&
	       [ \"\$(ls /sys/class/infiniband | tr '\\n' ' ')\" = '$devs_before' ]"
run_check "run_kselftest.sh: an unprivileged user's run skips the suite, saying why" \
	sh -c "cp -a $KSFT_INSTALL /tmp/ksft-user && : >/tmp/ksft-user.txt &&
	       chown -R 65534 /tmp/ksft-user /tmp/ksft-user.txt &&
	       setpriv --reuid=65534 --regid=65534 --clear-groups env -u SRNIC_DEV \
		/tmp/ksft-user/run_kselftest.sh -t $KSFT_TARGET:pd_test >>/tmp/ksft-user.txt 2>&1;
	       sed 's/^/#   /' /tmp/ksft-user.txt;
	       grep -q '^ok 1 selftests: $KSFT_TARGET: pd_test # SKIP' /tmp/ksft-user.txt &&
	       grep -q 'needs root' /tmp/ksft-user.txt"
}
want ksft_runner && run_part ksft_runner ksft_runner_checks

# The standard tools on the device.
tools_checks() {
run_check "ibv_devices lists $SRNIC_DEV" \
	sh -c "ibv_devices | grep -qw $SRNIC_DEV"
run_check "ibv_devinfo -v: active Ethernet port with RoCEv2 GIDs" \
	sh -c "ibv_devinfo -v -d $SRNIC_DEV | tee /tmp/devinfo.txt >/dev/null &&
	       grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo.txt &&
	       grep -q 'link_layer:.*Ethernet' /tmp/devinfo.txt &&
	       grep -q 'GID\[ *0\]:.*fe80.*RoCE v2' /tmp/devinfo.txt"
run_check "rdma link shows $SRNIC_DEV on $SRNIC_NETDEV" \
	sh -c "rdma link show $SRNIC_DEV/1 | grep -q 'netdev $SRNIC_NETDEV'"
run_check "rdma link add's kernel log line names the provider programs need" \
	sh -c "dmesg | grep -q '$SRNIC_DEV: created on $SRNIC_NETDEV; verbs programs find it through the srnic provider'"
run_tools
}
want tools && run_part tools tools_checks

# Programs that connect through rdma_cm (QP1, ib_cm and the kernel verbs under them).
want cm && run_part cm run_cm_tools

# UCX (UCT and UCP) and Open MPI over UCX, with UCX's defaults.
want ucx && run_part ucx run_ucx

# The kernel verbs from a test module, then the kernel ULPs that use them.
want kverbs && run_part kverbs run_kverbs
want ulp && run_part ulp run_ulp

# rdma-core's own suite, whole (Debian's python3-pyverbs): every generic test
# runs; vendor (mlx5, EFA, CUDA) tests skip themselves.
want pyverbs && run_part pyverbs run_pyverbs
# ... and its rdma_cm tests on a device whose netdev has a parent (the VM's NIC).
want cm && run_part cm_pyverbs run_cm_pyverbs

# Teardown under load, and a kill -9 storm (tests/vm/teardown.sh).
. "$top/tests/vm/teardown.sh"
want teardown && run_part teardown run_teardown

# Last: unloading srnic with a context open, then a clean unload.
if want rmmod; then
PART_NAME=rmmod SRNIC_TEST_RMMOD=1 run_ksft_always removal_test -t rmmod_with_open_context
run_check "rdma link del and rmmod leave no device" \
	sh -c "rdma link del $SRNIC_DEV && rmmod srnic &&
	       ! ls /sys/class/infiniband | grep -q ."
fi

# make install / make uninstall in a fresh root (tests/vm/install.sh); srnic is unloaded by now.
. "$top/tests/vm/install.sh"
want install && run_part install run_install

# A debug kernel: kmemleak, scanned now that everything srnic made is gone (twice, as its
# documentation advises, so that objects only just unreferenced count).
if [ -w /sys/kernel/debug/kmemleak ]; then
	echo scan >/sys/kernel/debug/kmemleak
	echo scan >/sys/kernel/debug/kmemleak
	leaks=$(grep -c 'unreferenced object' /sys/kernel/debug/kmemleak)
	ours=$(grep -cE 'srnic|ib_|rdma|uverbs' /sys/kernel/debug/kmemleak)
	echo "# kmemleak: $leaks suspected leaks, $ours lines naming srnic or the RDMA core"
	[ "$leaks" = 0 ] || head -n 80 /sys/kernel/debug/kmemleak | sed 's/^/# /'
	run_check "kmemleak: no leak in srnic or the RDMA core" test "$ours" = 0
fi

summary
