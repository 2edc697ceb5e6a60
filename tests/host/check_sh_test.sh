#!/usr/bin/env bash
# The two-host part's plans (scripts/lib/pair-plans.sh, as scripts/check.sh uses it), on the host:
# a guest that stopped early, or declared no plan, owes its missing checks; carriage returns from
# a guest's console do not hide a plan.  And a single guest's totals (scripts/lib/vm-counts.sh):
# its closing line, or what its finished parts counted when it died before that.
# Usage: check_sh_test.sh [PAIR_PLANS_SH]   (default: the tree's scripts/lib/pair-plans.sh)
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=${1:-$here/../../scripts/lib/pair-plans.sh}
# shellcheck source=../../scripts/lib/pair-plans.sh
. "$lib"
# shellcheck source=../../scripts/lib/vm-counts.sh
. "$here/../../scripts/lib/vm-counts.sh"
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fails=0

# log NAME LINES...: a two-host log.
log() { local f=$d/$1; shift; printf '%s\n' "$@" >"$f"; }
# expect WHAT MISSING LOG: pair_plans LOG says MISSING checks are owed.
expect() {
	local got
	got=$(pair_plans "$d/$3" | sed -n 's/^missing //p')
	if [ "$got" = "$2" ]; then
		echo "ok - $1: missing $got"
	else
		echo "not ok - $1: missing $got, wanted $2"
		pair_plans "$d/$3" | sed 's/^/#   /'
		fails=$((fails + 1))
	fi
}
log whole 'a| 1..2' 'b| 1..1' 'a| ok - x' 'b| ok - y' 'a| not ok - z'
log short 'a| 1..3' 'b| 1..2' 'a| ok - x' 'b| ok - y' 'b| ok - w'
log noplan 'a| 1..1' 'a| ok - x' 'b| ok - y'
log nothing 'a| 1..1' 'a| ok - x'
log cr $'a| 1..2\r' $'b| 1..1\r' $'a| ok - x\r' $'a| ok - x2\r' $'b| ok - y\r'
log crshort $'a| 1..4\r' $'b| 1..1\r' $'a| ok - x\r' $'b| ok - y\r'
expect "both guests ran their plans" 0 whole
expect "a stopped after 1 of its 3" 2 short
expect "b declared no plan, ran 1" 1 noplan
expect "b said nothing at all" 1 nothing
expect "plans behind carriage returns" 0 cr
expect "a short, behind carriage returns" 3 crshort

# counts WHAT "P F S" LOG: vm_counts LOG says so.
counts() {
	local got
	got=$(vm_counts "$d/$3")
	if [ "$got" = "$2" ]; then
		echo "ok - $1: $got"
	else
		echo "not ok - $1: $got, wanted $2"
		fails=$((fails + 1))
	fi
}
log vmwhole 'part| a_test 5 1 2 10' 'part| b 3 0 0 4' 'vm: 9 passed, 1 failed, 2 skipped'
log vmdied 'part| wire_test 86 1 0 3527' 'part| b 3 0 1 4' 'qemu-system-x86_64: terminating'
log vmnothing 'qemu/run: guest died'
counts "a guest's closing line" "9 1 2" vmwhole
counts "a guest that died after two parts" "89 1 1" vmdied
counts "a guest that died before any part" "0 0 0" vmnothing
[ "$fails" = 0 ]
