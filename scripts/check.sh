#!/usr/bin/env bash
# `make check`: host unit tests, then every VM suite in one boot, then two guests on one wire
# (qemu/run-pair); prints TAP from each part, a table of the parts (tests and seconds each) and
# a final "N passed, N failed" line over all.  SRNIC_TIER=short (make check, the default) or
# full (make check-full: the long budgets and the repeated suites; docs/testing.md).
set -uo pipefail
export SRNIC_TIER=${SRNIC_TIER:-short}
case $SRNIC_TIER in short | full) ;; *) echo "check: SRNIC_TIER must be short or full" >&2; exit 2 ;; esac
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
# shellcheck source-path=SCRIPTDIR source=lib/pair-plans.sh
. scripts/lib/pair-plans.sh
# shellcheck source-path=SCRIPTDIR source=lib/vm-counts.sh
. scripts/lib/vm-counts.sh
build=${BUILD:-$top/build}
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT

t0=$SECONDS
echo "# ==== host unit tests (ctest)"
(cd "$build/cmake" && ctest --output-on-failure) 2>&1 | tee "$log/host.txt"
host_rc=${PIPESTATUS[0]}
# "100% tests passed, 0 tests failed out of 12"
host_total=$(sed -n 's/.* tests failed out of \([0-9]*\).*/\1/p' "$log/host.txt" | tail -n 1)
host_failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$log/host.txt" | tail -n 1)
host_total=${host_total:-0} host_failed=${host_failed:-0}
[ "$host_rc" -eq 0 ] || [ "$host_failed" -gt 0 ] || host_failed=1
host_passed=$((host_total - host_failed))
echo "part| host $host_passed $host_failed 0 $((SECONDS - t0))" >"$log/parts.txt"
t0=$SECONDS hdr_passed=$host_passed hdr_failed=$host_failed

# The module builds against every other kernel's headers installed (Debian 12's default 6.1 from
# linux-headers-amd64), in a copy (scripts/module-for.sh).
kver=$(scripts/kver.sh)
for kb in /lib/modules/*/build; do
	v=$(basename "$(dirname "$kb")")
	[ "$v" != "$kver" ] && [ -e "$kb/Makefile" ] || continue
	if scripts/module-for.sh "$v" "$log/other" >"$log/other.txt" 2>&1; then
		echo "ok - srnic.ko builds against $v's headers"
		host_passed=$((host_passed + 1))
	else
		echo "not ok - srnic.ko builds against $v's headers" | tee -a "$log/own.txt"
		sed 's/^/#   /' "$log/other.txt" | grep -E 'error|warning' | head -n 20
		host_failed=$((host_failed + 1))
	fi
done

echo "part| headers $((host_passed - hdr_passed)) $((host_failed - hdr_failed)) 0 $((SECONDS - t0))" >>"$log/parts.txt"

echo "# ==== VM suites"
t0=$SECONDS
# make check-debug sets SRNIC_KBUILD (its kernel) and SRNIC_MODULE (srnic built for it).
kbuild=()
[ -z "${SRNIC_KBUILD:-}" ] || kbuild=(--kernel-build "$SRNIC_KBUILD")
# SRNIC_APPEND: extra guest kernel arguments (e.g. slub_debug=- on the debug kernel).
[ -z "${SRNIC_APPEND:-}" ] || kbuild+=(--append "$SRNIC_APPEND")
# --nic alone: a virtio-net NIC attached to nothing, a netdev with a parent device for the suites
# that need one (rdma-core's rdma_cm tests).
qemu/run --timeout "${VM_TIMEOUT:-2400}" "${kbuild[@]}" --module "${SRNIC_MODULE:-kernel/srnic.ko}" \
	--nic alone -- tests/vm/run-all.sh 2>&1 |
	tee "$log/vm.txt"
vm_rc=${PIPESTATUS[0]}
read -r vm_passed vm_failed vm_skipped < <(vm_counts "$log/vm.txt")
# A crash, hang or kernel warning fails the run even if every test passed.
if [ "$vm_rc" -ne 0 ] && [ "$vm_failed" -eq 0 ]; then
	echo "not ok - VM run (qemu/run status $vm_rc: crash, hang or kernel warning)" | tee -a "$log/own.txt"
	vm_failed=1
fi
grep -E '^part\| ' "$log/vm.txt" >>"$log/parts.txt"
# What ran outside a named part (device set-up, the checks between parts), and the boot.
awk -v p="$vm_passed" -v f="$vm_failed" -v s="$vm_skipped" -v t=$((SECONDS - t0)) '
	{ p -= $3; f -= $4; s -= $5; t -= $6 }
	END { print "part| vm:rest", p, f, s, (t < 0 ? 0 : t) }' <(grep -E '^part\| ' "$log/vm.txt") >>"$log/parts.txt"

# Two hosts: two guests on one Ethernet wire (qemu/run-pair), each running tests/vm/pair-smoke.sh.
pair_passed=0 pair_failed=0
if [ -z "${SRNIC_SUITES:-}" ] || [[ " $SRNIC_SUITES " == *" pair "* ]]; then
	echo "# ==== two hosts (qemu/run-pair)"
	t0=$SECONDS
	qemu/run-pair --timeout "${PAIR_TIMEOUT:-1800}" "${kbuild[@]}" \
		--module "${SRNIC_MODULE:-kernel/srnic.ko}" -- tests/vm/pair-smoke.sh 2>&1 | tee "$log/pair.txt"
	pair_rc=${PIPESTATUS[0]}
	pair_passed=$(grep -cE '^[ab]\| ok - ' "$log/pair.txt")
	pair_failed=$(grep -cE '^[ab]\| not ok - ' "$log/pair.txt")
	# Each guest declares its plan ("1..N"): a guest that stopped early fails its missing checks
	# (scripts/lib/pair-plans.sh; tests/host/check_sh_test.sh pins it).
	plans=$(pair_plans "$log/pair.txt")
	grep '^not ok' <<<"$plans" | tee -a "$log/own.txt"
	pair_failed=$((pair_failed + ${plans##*missing }))
	# Its parts: "part| NAME SECONDS" closes a part on a guest; the checks since the last one are
	# its own.  A part's time is its slower guest's.
	awk '
		match($0, /^[ab]\| /) {
			g = substr($0, 1, 1); r = substr($0, 4)
			if (r ~ /^ok - /) ok[g]++
			else if (r ~ /^not ok - /) nok[g]++
			else if (r ~ /^part\| /) {
				split(r, w, " "); n = w[2]
				if (!(n in secs)) order[++k] = n
				P[n] += ok[g]; F[n] += nok[g]; if (w[3] + 0 > secs[n]) secs[n] = w[3] + 0
				ok[g] = nok[g] = 0
			}
		}
		END { for (i = 1; i <= k; i++) printf "part| pair:%s %d %d 0 %d\n", order[i], P[order[i]], F[order[i]], secs[order[i]] }
	' "$log/pair.txt" >>"$log/parts.txt"
	# The boots, the wire's set-up and what ran outside a part: the rest of the pair's time.
	awk -v t=$((SECONDS - t0)) '/^part\| pair:/ { t -= $6 }
		END { print "part| pair:rest - - -", (t < 0 ? 0 : t) }' "$log/parts.txt" >>"$log/parts.txt"
	if [ "$pair_rc" -ne 0 ] && [ "$pair_failed" -eq 0 ]; then
		echo "not ok - two hosts (qemu/run-pair status $pair_rc: crash, hang or kernel warning)" | tee -a "$log/own.txt"
		pair_failed=1
	fi
fi

# failures: each "not ok" line of TAP on stdin with the "#   " diagnostics that follow it (up to
# 30), followed per guest: a two-host run interleaves a| and b| lines.
failures() {
	awk '{
		p = ""
		if (match($0, /^[ab]\| /)) p = substr($0, 1, 3)
		rest = substr($0, length(p) + 1)
		if (rest ~ /^(# )*not ok /) { print; n[p] = 30; next }
		if (n[p] > 0 && rest ~ /^(# )*#   /) { print; n[p]--; next }
		n[p] = 0
	}'
}

# CI keeps only the end of the output: name every failure again just above the totals.
if [ $((host_failed + vm_failed + pair_failed)) -gt 0 ]; then
	echo "# ==== failures"
	grep -hE '^(not ok|[0-9]+/[0-9]+ Test .*Failed)' "$log/host.txt"
	cat "$log/own.txt" "$log/vm.txt" "$log/pair.txt" 2>/dev/null | failures
fi

# The table of parts: where the run's tests and time went.
echo "# ==== parts ($SRNIC_TIER tier)"
awk '{ printf "# %-28s %7s passed %4s failed %4s skipped %6s s\n", $2, $3, $4, $5, $6 }' "$log/parts.txt"
echo "# total: $((SECONDS)) s"

passed=$((host_passed + vm_passed + pair_passed))
failed=$((host_failed + vm_failed + pair_failed))
echo "# host: $host_passed passed, $host_failed failed; vm: $vm_passed passed, $vm_failed failed, $vm_skipped skipped; two hosts: $pair_passed passed, $pair_failed failed"
echo "$passed passed, $failed failed, $vm_skipped skipped"
[ "$failed" -eq 0 ]
