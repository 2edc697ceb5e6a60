#!/usr/bin/env bash
# `make check-debug [PART=K/7]`: the VM suites on the debug guest kernel (scripts/debug-kernel.sh:
# KASAN, lockdep, UBSAN, kmemleak, SLUB debugging), with srnic built against it, in the parts of
# scripts/lib/debug-parts.sh.  Without PART, all in turn.  Each part's result is recorded with the
# commit it ran on (build/check-debug/part-K.txt); `make check-debug-report` prints them.  Time
# limits in the suites are stretched by SRNIC_TIME_SCALE: every system call is many times slower
# there.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
kb=${KDEBUG:-$top/build/kdebug}
results=${SRNIC_DEBUG_RESULTS:-$top/build/check-debug}
. scripts/lib/debug-parts.sh
nparts=$debug_nparts

part=${PART:-}
if [ -z "$part" ]; then
	st=0
	for k in $(seq 1 $nparts); do PART=$k/$nparts "$0" || st=1; done
	exit $st
fi
[[ $part =~ ^([1-9])/$nparts$ ]] && [ "${BASH_REMATCH[1]}" -le $nparts ] ||
	{ echo "check-debug: PART must be K/$nparts, K from 1 to $nparts" >&2; exit 2; }
k=${BASH_REMATCH[1]}

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

commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- kernel include user tests scripts qemu || commit="$commit+changes"
mkdir -p "$results"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
t0=$SECONDS
echo "# ==== check-debug part $k/$nparts on $commit: $(debug_part_suites "$k" "$top") $(debug_part_env "$k")"
# srnic.max_mr: a table of 32,768 MRs, so the tests that fill it (or a quarter of it) take
# minutes rather than most of an hour; every registration costs milliseconds here.
st=0
# shellcheck disable=SC2046 # the part's assignments, one word each (or none)
env $(debug_part_env "$k") SRNIC_SUITES="$(debug_part_suites "$k" "$top")" \
SRNIC_APPEND=${SRNIC_APPEND:-srnic.max_mr=32768} \
SRNIC_TIME_SCALE=${SRNIC_TIME_SCALE:-8} SRNIC_KBUILD=$kb SRNIC_MODULE=$kb/srnic/kernel/srnic.ko \
	VM_TIMEOUT=${VM_TIMEOUT:-5400} PAIR_TIMEOUT=${PAIR_TIMEOUT:-5400} scripts/check.sh |
	tee "$out" || st=$?
last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -n 1)
result=pass
[ "$st" = 0 ] || result=FAIL
printf '%s part %s/%s %s %s, %d min, %s\n' "$commit" "$k" "$nparts" "$result" "${last:-no totals}" \
	$(((SECONDS - t0 + 30) / 60)) "$(date -u +%Y-%m-%dT%H:%MZ)" >"$results/part-$k.txt"
cat "$results/part-$k.txt"
exit "$st"
