#!/usr/bin/env bash
# `make check-debug`: every VM suite on the debug guest kernel (scripts/debug-kernel.sh: KASAN,
# lockdep, UBSAN, kmemleak, SLUB debugging), with srnic built against it.  Time limits in the
# suites are stretched by SRNIC_TIME_SCALE: every system call is many times slower there.
# Prints what make check prints, ending with "N passed, N failed".
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kb=${KDEBUG:-$top/build/kdebug}

start=$SECONDS
scripts/debug-kernel.sh "$kb" >/dev/null
echo "# debug kernel $(cat "$kb/release") ready after $((SECONDS - start)) s"

# Kbuild writes next to the sources: the module for this kernel is built in a copy.
rm -rf "$kb/srnic"
mkdir -p "$kb/srnic"
cp -r kernel include dkms.conf "$kb/srnic/"
make -s -C "$kb/src" M="$kb/srnic/kernel" modules
# ... and the kernel-verbs test module (tests/vm/kverbs.sh loads it).
cp -r tests/vm/kverbs "$kb/srnic/"
make -s -C "$kb/src" M="$kb/srnic/kverbs" modules
export SRNIC_KVERBS_KO=$kb/srnic/kverbs/srnic_kverbs_test.ko

# srnic.max_mr: a table of 32,768 MRs, so the tests that fill it (or a quarter of it) take
# minutes rather than most of an hour; every registration costs milliseconds here.
SRNIC_APPEND=${SRNIC_APPEND:-srnic.max_mr=32768} \
SRNIC_TIME_SCALE=${SRNIC_TIME_SCALE:-8} SRNIC_KBUILD=$kb SRNIC_MODULE=$kb/srnic/kernel/srnic.ko \
	VM_TIMEOUT=${VM_TIMEOUT:-10800} PAIR_TIMEOUT=${PAIR_TIMEOUT:-10800} scripts/check.sh
