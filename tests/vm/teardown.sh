# Teardown under load (sourced by run-all.sh after lib.sh): a device is deleted, its netdev taken
# down and up or deleted, the module unloaded, while a mix of traffic runs on it: RDMA on pinned,
# ODP and implicit-ODP MRs, an SRQ, a debugfs reader, a process holding thousands of windows and
# MRs, and a process killed meanwhile.  Each action must finish within TD_LIMIT seconds, and what
# the load held must come back.  Then a kill -9 storm: hundreds of processes killed mid-transfer.

TD_DEV=srnic_td
TD_VETH=srnic_tdv
# SRNIC_TIME_SCALE stretches the bound on a debug kernel (make check-debug).
TD_LIMIT=${TD_LIMIT:-$((10 * ${SRNIC_TIME_SCALE:-1}))}
LOADGEN=$VMBIN/loadgen
TD_PIDS=()

td_make() {
	# What a failed scenario before may have left.
	td_unload
	rdma link del $TD_DEV 2>/dev/null
	ip link del ${TD_VETH}0 2>/dev/null
	ip link add ${TD_VETH}0 type veth peer name ${TD_VETH}1 &&
		ip link set ${TD_VETH}0 up && ip link set ${TD_VETH}1 up &&
		rdma link add $TD_DEV type srnic netdev ${TD_VETH}0 && wait_gid $TD_DEV
}

td_pinned() { cat /sys/kernel/debug/srnic/$TD_DEV/pinned_pages 2>/dev/null; }

# td_spawn LOG ARGS...: a loadgen in the background; waits (bounded) for its "ready".
td_spawn() {
	local log=$1 i
	shift
	"$LOADGEN" "$@" >"$log" 2>&1 &
	TD_PIDS+=($!)
	for i in $(seq 1 3000); do
		grep -q ready "$log" && return 0
		kill -0 $! 2>/dev/null || { echo "# loadgen $* failed: $(cat "$log")"; return 1; }
		sleep 0.01
	done
	echo "# loadgen $* not ready after 30 s"
	return 1
}

# The MRs the holder keeps: 20,000, or a quarter of a smaller table (srnic.max_mr, which
# make check-debug lowers: each MR costs milliseconds to free on the debug kernel).
td_mrs() {
	local max
	max=$(cat /sys/module/srnic/parameters/max_mr 2>/dev/null) || max=262144
	echo $((max / 4 < 20000 ? max / 4 : 20000))
}

# The mix, on $TD_DEV.
td_load() {
	local d
	d=$(mktemp -d)
	td_spawn "$d/hold" hold $TD_DEV 2000 "$(td_mrs)" &&
		td_spawn "$d/pinned" traffic $TD_DEV pinned &&
		td_spawn "$d/odp" traffic $TD_DEV odp &&
		td_spawn "$d/implicit" traffic $TD_DEV implicit &&
		td_spawn "$d/srq" traffic $TD_DEV srq &&
		td_spawn "$d/victim" traffic $TD_DEV pinned || return 1
	# The victim dies mid-transfer; a debugfs reader runs throughout.
	kill -9 "${TD_PIDS[-1]}"
	(while :; do cat /sys/kernel/debug/srnic/$TD_DEV/{mkeys,mtt,engine,odp} >/dev/null 2>&1; done) &
	TD_PIDS+=($!)
}

# Ends the load: processes still running are killed (the device may still be there).
td_unload() {
	[ ${#TD_PIDS[@]} -gt 0 ] || return 0
	kill -9 "${TD_PIDS[@]}" 2>/dev/null
	wait "${TD_PIDS[@]}" 2>/dev/null
	TD_PIDS=()
}

# td_timed NAME CMD...: CMD must finish within TD_LIMIT seconds.  One that has not by then gets
# the blocked tasks' stacks written to the console (a hang is then visible, not silent), and after
# three times the limit it is killed and the check fails.
td_timed() {
	local name=$1 start=$EPOCHREALTIME ms pid st dumped=0
	shift
	"$@" &
	pid=$!
	while kill -0 $pid 2>/dev/null; do
		ms=$(( (${EPOCHREALTIME/./} - ${start/./}) / 1000 ))
		if [ $dumped = 0 ] && [ "$ms" -gt $((TD_LIMIT * 1000)) ]; then
			echo "# $name: still running after $ms ms; blocked tasks follow in the kernel log"
			echo w >/proc/sysrq-trigger
			dumped=1
		elif [ "$ms" -gt $((TD_LIMIT * 3000)) ]; then
			echo "# $name: killed after $ms ms"
			echo w >/proc/sysrq-trigger
			kill -9 $pid
			break
		fi
		sleep 0.1
	done
	wait $pid
	st=$?
	ms=$(( (${EPOCHREALTIME/./} - ${start/./}) / 1000 ))
	[ $st = 0 ] || { echo "# $name: failed (status $st) after $ms ms"; return 1; }
	echo "# $name: $ms ms under load"
	[ "$ms" -le $((TD_LIMIT * 1000)) ]
}

td_gone() { ! [ -e /sys/class/infiniband/$TD_DEV ]; }

# Deleting the device, the netdev down and up, and deleting the netdev, each under the mix.
td_link_del() {
	td_make && td_load || return 1
	td_timed "rdma link del" rdma link del $TD_DEV || return 1
	td_unload
	td_gone && ip link del ${TD_VETH}0
}

td_netdev_flap() {
	local base ok=0
	td_make || return 1
	base=$(td_pinned)
	td_load || return 1
	td_timed "netdev down" ip link set ${TD_VETH}0 down &&
		td_timed "netdev up" ip link set ${TD_VETH}0 up && ok=1
	td_unload
	[ $ok = 1 ] || return 1
	# What the load pinned has come back.
	[ "$(td_pinned)" = "$base" ] || { echo "# pinned $(td_pinned), was $base"; return 1; }
	rdma link del $TD_DEV && ip link del ${TD_VETH}0
}

td_veth_del() {
	td_make && td_load || return 1
	td_timed "veth deletion" ip link del ${TD_VETH}0 || return 1
	td_unload
	wait_until_gone
}

wait_until_gone() {
	local i
	for i in $(seq 1 1000); do td_gone && return 0; sleep 0.01; done
	return 1
}

# rmmod, again while it says "in use": an open debugfs file holds the module (as any module's
# does) for the moment the reader has it open; contexts and traffic do not.
td_rmmod_retry() {
	local n=0
	until rmmod srnic 2>/dev/null; do
		n=$((n + 1))
		[ $n -lt 1000 ] || return 1
		sleep 0.01
	done
	echo "# rmmod: $n refusals while a debugfs file was open"
}

# rmmod with the mix running on one device and the main device idle; both come back after.
td_rmmod() {
	td_make && td_load || return 1
	# Unloading tears down two devices and everything the load holds: a wider bound.
	TD_LIMIT=$((TD_LIMIT * 3)) td_timed "rmmod srnic" td_rmmod_retry || return 1
	td_unload
	td_gone && ! [ -e /sys/class/infiniband/$SRNIC_DEV ] || return 1
	ip link del ${TD_VETH}0
	modprobe srnic && rdma link add "$SRNIC_DEV" type srnic netdev "$SRNIC_NETDEV" &&
		wait_gid "$SRNIC_DEV"
}

td_ms_since() { echo $(( (${EPOCHREALTIME/./} - ${1/./}) / 1000 )); }

# td_watch SECONDS NAME: if td_unwatch has not been called within SECONDS, says so and writes
# the stacks of blocked tasks, of the CPUs, and of every loadgen left to the log (a wait that
# never ends is then visible, not silent).
td_watch() {
	(
		sleep "$1"
		echo "# $2: still waiting after $1 s; blocked tasks and CPUs follow in the kernel log"
		echo w >/proc/sysrq-trigger
		echo l >/proc/sysrq-trigger
		for p in $(pgrep -x loadgen); do
			echo "# loadgen $p: $(cut -d' ' -f3 /proc/$p/stat 2>/dev/null)"
			sed 's/^/#   /' /proc/$p/stack 2>/dev/null
		done
	) &
	TD_WATCH=$!
}
td_unwatch() {
	kill "$TD_WATCH" 2>/dev/null
	wait "$TD_WATCH" 2>/dev/null
}

# The objects on $TD_DEV, all kinds (rdma resource counts every PD, CQ, QP, MR...).
td_objects() {
	rdma resource show $TD_DEV | grep -oE '(pd|cq|qp|cm_id|mr|ctx|srq) [0-9]+' |
		awk '{s += $2} END {print s + 0}'
}

# Hundreds of processes killed at random points of their set-up or transfer.
td_kill_storm() {
	local base objs0 wave i d n=0 start gone
	td_make || return 1
	base=$(td_pinned)
	objs0=$(td_objects)
	d=$(mktemp -d)
	for wave in $(seq 1 "$(fuzz_budget 8)"); do
		start=$EPOCHREALTIME
		for i in $(seq 1 25); do
			"$LOADGEN" traffic $TD_DEV pinned >"$d/$wave.$i" 2>&1 &
			TD_PIDS+=($!)
		done
		# Kill them as they come: some still setting up, most transferring.
		for i in $(seq 1 25); do
			kill -9 "${TD_PIDS[$((RANDOM % ${#TD_PIDS[@]}))]}" 2>/dev/null
			sleep 0.0$((RANDOM % 10))
		done
		n=$((n + 25))
		gone=$EPOCHREALTIME
		td_watch $((3 * TD_LIMIT)) "kill storm wave $wave"
		td_unload
		td_unwatch
		echo "# kill storm wave $wave: $(td_ms_since "$start") ms, the last of 25 gone" \
			"$(td_ms_since "$gone") ms after the kills"
	done
	echo "# kill storm: $n processes killed mid-transfer"
	[ "$(td_pinned)" = "$base" ] || { echo "# pinned $(td_pinned), was $base"; return 1; }
	# No object left behind on the device: as many as the kernel's own before the storm
	# (ib_mad's PD, CQ and QP1).
	[ "$(td_objects)" = "$objs0" ] ||
		{ echo "# objects left: $(rdma resource show $TD_DEV), were $objs0"; return 1; }
	rdma link del $TD_DEV && ip link del ${TD_VETH}0
}

# Whatever a scenario leaves running when it fails must not outlive it.
td_scenario() {
	local st
	"$@"
	st=$?
	td_unload
	return $st
}

run_teardown() {
	run_check "rdma link del under load, within ${TD_LIMIT} s" td_scenario td_link_del
	run_check "netdev down/up under load, within ${TD_LIMIT} s, nothing lost" td_scenario td_netdev_flap
	run_check "veth deletion under load, within ${TD_LIMIT} s" td_scenario td_veth_del
	# (2>: bash's "Killed" notices, one per process)
	run_check "kill -9 storm: pinned pages and objects back to the baseline" \
		td_scenario td_kill_storm 2>/dev/null
	run_check "rmmod srnic under load, within $((TD_LIMIT * 3)) s" td_scenario td_rmmod
}
