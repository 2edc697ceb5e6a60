#!/usr/bin/env bash
# In both guests of qemu/run-pair: the wire carries RoCEv2 between them.  rxe on eth0 on each
# side; ibv_rc_pingpong with data checks (-c), a's server and b's client, then the reverse.
# Prints "ok - ..." / "not ok - ..." lines; exits non-zero if one failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/vm/wire.sh"

fail=0
check() {	# check NAME CMD...: runs CMD, prints its TAP line
	local name=$1
	shift
	if "$@" >/tmp/check.log 2>&1; then
		echo "ok - $WIRE_ROLE: $name"
	else
		echo "not ok - $WIRE_ROLE: $name"
		sed 's/^/#   /' /tmp/check.log | tail -n 20
		fail=1
	fi
}

wire_up || { echo "not ok - $WIRE_ROLE: the wire came up"; exit 1; }
echo "ok - $WIRE_ROLE: the wire came up ($WIRE_ME, peer $WIRE_PEER)"
modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$WIRE_IF" && wire_wait_gid rxe0 ||
	{ echo "not ok - $WIRE_ROLE: rxe0 on $WIRE_IF"; exit 1; }
gid=$(wire_gid rxe0)

# serve PORT: a pingpong server, listening before the other side is told to connect.
pingpong() {	# pingpong server|client PORT
	local args=(-d rxe0 -g "$gid" -c -n 100 -s 4096 -p "$2")
	if [ "$1" = server ]; then
		timeout 120 ibv_rc_pingpong "${args[@]}" &
		local pid=$! i
		for i in $(seq 1 300); do
			ss -Hltn "sport = :$2" | grep -q . && break
			sleep 0.1
		done
		wire_sync "listening-$2" || { kill $pid; return 1; }
		wait $pid
	else
		wire_sync "listening-$2" || return 1
		timeout 120 ibv_rc_pingpong "${args[@]}" "$WIRE_PEER"
	fi
}

if [ "$WIRE_ROLE" = a ]; then
	check "ibv_rc_pingpong -c over the wire, a serves" pingpong server 18515
	check "ibv_rc_pingpong -c over the wire, b serves" pingpong client 18516
else
	check "ibv_rc_pingpong -c over the wire, a serves" pingpong client 18515
	check "ibv_rc_pingpong -c over the wire, b serves" pingpong server 18516
fi
rdma link del rxe0
exit $fail
