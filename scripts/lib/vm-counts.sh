# Sourced by scripts/check.sh (and tests/host/check_sh_test.sh): a single guest's totals.
#
# vm_counts LOG: "PASSED FAILED SKIPPED" of a run of tests/vm/run-all.sh: its closing
# "vm: N passed, N failed, N skipped" line, or, from a guest that died before it (a kernel
# report, a timeout), the sum of the "part| NAME P F S SECONDS" rows it finished.
vm_counts() {
	local line
	line=$(grep -E '^vm: [0-9]+ passed, [0-9]+ failed, [0-9]+ skipped' "$1" | tail -n 1)
	if [ -n "$line" ]; then
		echo "$line" | sed 's/^vm: \([0-9]*\) passed, \([0-9]*\) failed, \([0-9]*\) skipped.*/\1 \2 \3/'
	else
		awk '/^part\| / { p += $3; f += $4; s += $5 } END { print p + 0, f + 0, s + 0 }' "$1"
	fi
}
