# Sourced by scripts/check.sh (and tests/host/check_sh_test.sh): a two-host run's plans.
#
# pair_plans LOG: each guest of LOG (its lines prefixed "a| " and "b| ", a guest console's
# carriage returns included) declares its plan, "1..N"; one that ran fewer checks ("ok - " or
# "not ok - " lines), or declared none, owes the rest.  Prints a "not ok" line for each such
# guest, then "missing M": the checks owed, each a failure (one for a guest with no plan that
# ran nothing).
pair_plans() {
	local log=$1 g plan ran missing=0
	for g in a b; do
		plan=$(sed -n "s/^$g| 1\.\.\([0-9]*\).*/\1/p" "$log" | head -n 1)
		ran=$(grep -cE "^$g\| (not )?ok - " "$log")
		if [ -z "$plan" ] || [ "$ran" -lt "$plan" ]; then
			echo "not ok - two hosts: $g ran $ran of its ${plan:-undeclared} checks"
			missing=$((missing + ${plan:-$((ran + 1))} - ran))
		fi
	done
	echo "missing $missing"
}
