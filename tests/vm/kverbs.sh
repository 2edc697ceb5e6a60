# srnic's kernel verbs through the RDMA core's kernel API, as kernel ULPs use
# them: the test module tests/vm/kverbs/srnic_kverbs_test.ko (built on the
# host with srnic.ko, see tests/vm/kverbs/Kbuild), loaded against $SRNIC_DEV.
# It runs its cases while it loads and logs TAP lines ("srnic_kverbs: ok N
# name", "not ok N name: reason", a plan and a summary); each becomes one
# run_check here.  Sourced after tests/vm/lib.sh; defines run_kverbs.

# SRNIC_KVERBS_KO names another build of it (qemu/run passes SRNIC_* into the
# guest), e.g. one for the debug kernel.
KVERBS_KO=${SRNIC_KVERBS_KO:-$top/tests/vm/kverbs/srnic_kverbs_test.ko}

# The device's object counts as `rdma resource show` gives them, and the
# number of srnic MRs (debugfs; empty when debugfs is not mounted).
_kverbs_resources() {
	rdma resource show 2>/dev/null | grep -E "^[0-9]+: $SRNIC_DEV: " | sed 's/^[0-9]*: //'
	local mkeys=/sys/kernel/debug/srnic/$SRNIC_DEV/mkeys
	[ ! -r "$mkeys" ] || wc -l <"$mkeys"
}

run_kverbs() {
	local mark log before after line result num name reason plan
	echo "# ---- kernel verbs on $SRNIC_DEV ($KVERBS_KO)"
	if [ ! -r "$KVERBS_KO" ]; then
		echo "# $KVERBS_KO missing: build it on the host (make)"
		run_check "kverbs: the test module is built" false
		return
	fi
	# A copy left loaded by an earlier run would make insmod fail.
	rmmod srnic_kverbs_test 2>/dev/null
	before=$(_kverbs_resources)
	# The module logs while insmod runs; the mark finds where this run starts.
	mark="kverbs run $$.$RANDOM"
	echo "$mark" >/dev/kmsg
	run_check "kverbs: insmod srnic_kverbs_test dev=$SRNIC_DEV" \
		insmod "$KVERBS_KO" dev="$SRNIC_DEV" timescale="${SRNIC_TIME_SCALE:-1}"
	log=$(mktemp)
	dmesg | sed -n "/$mark/,\$p" | sed -n 's/.*srnic_kverbs: //p' >"$log"
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$log")
	while IFS= read -r line; do
		case $line in
		"ok "[0-9]*) result=true ;;
		"not ok "[0-9]*) result=false ;;
		# A case's notes (what an error completion was): shown as they are.
		"# "*) echo "$line"; continue ;;
		*) continue ;;
		esac
		line=${line#not }
		line=${line#ok }
		num=${line%% *}
		name=${line#* }
		reason=
		if [ "$result" = false ] && [[ $name == *": "* ]]; then
			reason=${name#*: }
			name=${name%%: *}
		fi
		[ -z "$reason" ] || echo "# $name: $reason"
		run_check "kverbs $num $name" "$result"
	done <"$log"
	# The summary must be there and add up: a crash or hang shows here.
	run_check "kverbs: summary line, ${plan:-?} cases reported" \
		_kverbs_summary "$log" "$plan"
	run_check "kverbs: rmmod srnic_kverbs_test" rmmod srnic_kverbs_test
	after=$(_kverbs_resources)
	[ "$before" = "$after" ] ||
		printf '# before: %s\n# after:  %s\n' "$before" "$after"
	run_check "kverbs: $SRNIC_DEV's PDs, CQs, QPs and MRs as before" \
		test "$before" = "$after"
	rm -f "$log"
}

# _kverbs_summary LOG PLAN: "P passed, F failed" with P + F = PLAN, and as
# many ok/not ok lines.
_kverbs_summary() {
	local p f lines
	read -r p f < <(sed -n 's/^\([0-9]*\) passed, \([0-9]*\) failed$/\1 \2/p' "$1")
	lines=$(grep -cE '^(not )?ok [0-9]+ ' "$1")
	if [ -n "$p" ] && [ -n "$2" ] && [ $((p + f)) = "$2" ] && [ "$lines" = "$2" ]; then
		return 0
	fi
	echo "# summary: '${p:-none} passed, ${f:-none} failed', plan '${2:-none}', $lines results"
	return 1
}
