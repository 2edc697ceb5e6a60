#!/usr/bin/env bash
# Runs every VM suite in one boot (called by `make check` through qemu/run).
# Prints TAP from each suite and ends with "vm: N passed, N failed, N skipped".
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/vm/lib.sh"

srnic_setup_main_device || { echo "vm: 0 passed, 1 failed, 0 skipped"; exit 1; }

# SRNIC_SUITES="mr_test hostile_test teardown ..." runs only those parts (default: all); the
# parts that are not kselftest suites are tools, pyverbs, install, teardown and rmmod.
want() { [ -z "${SRNIC_SUITES:-}" ] || [[ " $SRNIC_SUITES " == *" $1 "* ]]; }
run_ksft() { want "$1" && run_ksft_always "$@"; }

# kselftest suites: every TAP line of theirs counts.
run_ksft device_test
run_ksft link_test
run_ksft removal_test
run_ksft mr_test
run_ksft mw_test
run_ksft odp_test
run_ksft dm_test
run_ksft xrc_test
run_ksft pd_test
run_ksft queue_test
run_ksft engine_test
run_ksft traffic_test
run_ksft qpex_test
run_ksft cqex_test
run_ksft tm_test
run_ksft raw_test
run_ksft stress_test
run_ksft hostile_test
run_ksft adversarial_test
run_ksft ops_test

# The standard tools on the device.
if want tools; then
run_check "ibv_devices lists $SRNIC_DEV" \
	sh -c "ibv_devices | grep -qw $SRNIC_DEV"
run_check "ibv_devinfo -v: active Ethernet port with RoCEv2 GIDs" \
	sh -c "ibv_devinfo -v -d $SRNIC_DEV | tee /tmp/devinfo.txt >/dev/null &&
	       grep -q 'state:.*PORT_ACTIVE' /tmp/devinfo.txt &&
	       grep -q 'link_layer:.*Ethernet' /tmp/devinfo.txt &&
	       grep -q 'GID\[ *0\]:.*fe80.*RoCE v2' /tmp/devinfo.txt"
run_check "rdma link shows $SRNIC_DEV on $SRNIC_NETDEV" \
	sh -c "rdma link show $SRNIC_DEV/1 | grep -q 'netdev $SRNIC_NETDEV'"
# ibv_*_pingpong, the eight perftest programs, and system calls per post.
. "$top/tests/vm/tools.sh"
run_tools
fi

# rdma-core's own suite, whole (Debian's python3-pyverbs): every generic test
# runs; vendor (mlx5, EFA, CUDA) tests skip themselves.
want pyverbs && run_pyverbs

# make install / make uninstall (the provider part), into the guest's overlay.
want install && run_check "make uninstall removes exactly what make install put in place" \
	sh -c "cmake --install $BUILD/cmake >/tmp/install.log &&
	       test -f /etc/libibverbs.d/srnic.driver &&
	       ls /usr/lib/*/libibverbs/libsrnic-rdmav34.so >/dev/null &&
	       $top/scripts/uninstall-provider.sh $BUILD/cmake >/dev/null &&
	       ! test -e /etc/libibverbs.d/srnic.driver &&
	       ! ls /usr/lib/*/libibverbs/libsrnic-rdmav34.so 2>/dev/null &&
	       test -d /etc/libibverbs.d"

# Teardown under load, and a kill -9 storm (tests/vm/teardown.sh).
. "$top/tests/vm/teardown.sh"
want teardown && run_teardown

# Last: unloading srnic with a context open, then a clean unload.
if want rmmod; then
SRNIC_TEST_RMMOD=1 run_ksft_always removal_test -t rmmod_with_open_context
run_check "rdma link del and rmmod leave no device" \
	sh -c "rdma link del $SRNIC_DEV && rmmod srnic &&
	       ! ls /sys/class/infiniband | grep -q ."
fi

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
