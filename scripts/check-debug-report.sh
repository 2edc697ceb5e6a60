#!/usr/bin/env bash
# `make check-debug-report`: which parts of `make check-debug` passed on which commit
# (build/check-debug/part-K.txt), and whether they make a whole run of this commit.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
results=${SRNIC_DEBUG_RESULTS:-$top/build/check-debug}
. "$top/scripts/lib/debug-parts.sh"
head=$(git -C "$top" rev-parse --short HEAD)
whole=1
for k in $(seq 1 "$debug_nparts"); do
	if [ -f "$results/part-$k.txt" ]; then
		cat "$results/part-$k.txt"
		read -r c _ _ r _ <"$results/part-$k.txt"
		[ "$c" = "$head" ] && [ "$r" = pass ] || whole=0
	else
		echo "part $k/$debug_nparts: never run here"
		whole=0
	fi
done
if [ "$whole" = 1 ]; then
	echo "check-debug: every part passed on $head, the commit checked out"
else
	echo "check-debug: no whole passing run on $head (see docs/testing.md for the last whole run)"
fi
