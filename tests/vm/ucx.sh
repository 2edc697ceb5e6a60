# shellcheck shell=bash
# UCX and Open MPI on $SRNIC_DEV with UCX's defaults: the device's netdev has an IPv4 address,
# so UCX picks its IPv4 RoCEv2 GID, and its UD transport checks each datagram's destination in
# the GRH slot (UCX_UD_VERBS_ETH_DGID_CHECK, on by default).  UCX is told only which device to
# use and, both ends being one host, to leave out its shared-memory transports.  Sourced after
# tests/vm/lib.sh, tests/vm/tools.sh (_tools_pair) and tests/vm/cm.sh (_cm_gid); defines run_ucx.
UCX_ADDR=${UCX_ADDR:-10.78.6.1}

# _ucx_rx_msgs: messages $SRNIC_DEV has received.
_ucx_rx_msgs() {
	rdma statistic show link "$SRNIC_DEV/1" | grep -o ' rx_msgs [0-9]*' | awk '{print $2}'
}

# _ucx_perftest NAME ARGS...: ucx_perftest's server and client (on 127.0.0.1) with ARGS, and
# $SRNIC_DEV received messages meanwhile (so the test crossed it, not shared memory).
_ucx_perftest() {
	local name=$1 before
	shift
	before=$(_ucx_rx_msgs)
	_tools_next_port
	_tools_pair "$name" -- ucx_perftest -p "$TOOLS_PORT" -- \
		ucx_perftest -p "$TOOLS_PORT" "$@" 127.0.0.1 || return 1
	[ "$(_ucx_rx_msgs)" -gt "$before" ] ||
		{ echo "# $name: $SRNIC_DEV received nothing"; return 1; }
}

# _ucx_mpi_pingpong: Open MPI's UCX layer (pml ucx), two ranks, messages of 1 B to 1 MiB checked
# by the receiver (tests/vm/mpi_pingpong.c).
_ucx_mpi_pingpong() {
	local before
	before=$(_ucx_rx_msgs)
	timeout -k 5 "$TOOLS_SECS" mpirun --allow-run-as-root -np 2 --mca pml ucx \
		--mca btl self -x UCX_NET_DEVICES -x UCX_TLS "$VMBIN/mpi_pingpong" 2>&1 |
		tee /tmp/mpi.txt | sed 's/^/#   /'
	grep -q '^mpi_pingpong: ok' /tmp/mpi.txt && [ "$(_ucx_rx_msgs)" -gt "$before" ]
}

_ucx_addr() {
	ip addr add "$UCX_ADDR/24" dev "$1" && _cm_gid "$UCX_ADDR"
}

run_ucx() {
	local nd=$SRNIC_NETDEV
	if ! command -v ucx_perftest >/dev/null || ! command -v mpirun >/dev/null; then
		echo "ok - UCX and Open MPI # SKIP no ucx_perftest or mpirun (scripts/deps.sh installs them)"
		SKIPPED=$((SKIPPED + 1))
		return
	fi
	run_check "$nd has $UCX_ADDR and $SRNIC_DEV its IPv4 GID" _ucx_addr "$nd"
	export UCX_NET_DEVICES=$SRNIC_DEV:1 UCX_TLS='^sm'
	run_check "ucx_perftest: UCT ud_verbs active messages (UCX's destination-GID check on)" \
		_ucx_perftest ud_verbs -t am_lat -x ud_verbs -d "$SRNIC_DEV:1" -n 2000
	run_check "ucx_perftest: UCT rc_verbs active messages" \
		_ucx_perftest rc_verbs -t am_lat -x rc_verbs -d "$SRNIC_DEV:1" -n 2000
	run_check "ucx_perftest: UCP tag_lat (wire-up over UD, then RC)" \
		_ucx_perftest tag_lat -t tag_lat -n 2000
	run_check "ucx_perftest: UCP tag_bw, 1 MiB messages (rendezvous by RDMA)" \
		_ucx_perftest tag_bw -t tag_bw -s 1048576 -n 200
	run_check "Open MPI over UCX (pml ucx): ping-pong 1 B to 1 MiB, data checked" \
		_ucx_mpi_pingpong
	unset UCX_NET_DEVICES UCX_TLS
	ip addr del "$UCX_ADDR/24" dev "$nd" 2>/dev/null
}
