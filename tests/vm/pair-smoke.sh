#!/usr/bin/env bash
# In both guests of qemu/run-pair: the wire carries RoCEv2 between them.  rxe on eth0 on each
# side: ibv_rc_pingpong with data checks (-c), a's server and b's client, then the reverse.  Then
# UD datagrams with srnic on the wire: ibv_ud_pingpong -c srnic (a) with rxe (b), then srnic on
# both sides (IPv4, then IPv6), each way round; srnic's counters show the packets.  Prints "ok - ..." / "not ok - ..." lines; exits non-zero if one
# failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/vm/lib.sh"	# RDMAV_DRIVERS: the srnic provider
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
dev=rxe0

# pingpong PROG server|client PORT: a pingpong on $dev, the server listening before the other
# side is told to connect.
pingpong() {
	local prog=$1 args=(-d "$dev" -g "$gid" -c -n 100 -p "$3")
	[ "$prog" = ibv_rc_pingpong ] && args+=(-s 4096)
	[ "$prog" = ibv_ud_pingpong ] && args+=(-s 1024)
	if [ "$2" = server ]; then
		timeout 120 "$prog" "${args[@]}" &
		local pid=$! i
		for i in $(seq 1 300); do
			ss -Hltn "sport = :$3" | grep -q . && break
			sleep 0.1
		done
		wire_sync "listening-$3" || { kill $pid; return 1; }
		wait $pid
	else
		wire_sync "listening-$3" || return 1
		timeout 120 "$prog" "${args[@]}" "$WIRE_PEER"
	fi
}

# both PROG PORT WHAT: PROG with a serving on PORT, then b serving on PORT + 1.
both() {
	local me_a=server me_b=client
	[ "$WIRE_ROLE" = a ] || { me_a=client; me_b=server; }
	check "$1 -c $3, a serves" pingpong "$1" $me_a "$2"
	check "$1 -c $3, b serves" pingpong "$1" $me_b $(($2 + 1))
}

# The capture a made of two ibv_ud_pingpong runs between srnic devices, as tshark's RoCE dissector
# reads it: every packet a BTH and DETH as the spec has them (UD SEND ONLY = 100, the default
# P_Key, the pingpong's Q_Key 0x11111111, a UDP length that leaves payload + pad a multiple of 4),
# nothing malformed; most of what two runs of 100 exchanges send (the counters check the totals:
# a capture under TCG may miss a few), at least 150 of them by srnic here and 300 in all.
roce_capture_ok() {
	tshark -r /tmp/roce.pcap -T fields -E separator=, -e ip.src -e infiniband.bth.opcode \
		-e infiniband.bth.p_key -e infiniband.deth.q_key -e udp.length -e _ws.malformed |
		awk -F, -v me="$WIRE_ME" '
		{ n++; if ($1 == me) mine++; q = tolower($4); sub(/^0x0*/, "", q) }
		$2 != 100 || $3 != 65535 || q != "11111111" || $6 != "" || ($5 - 32) % 4 { bad++ }
		END { print n " packets, " mine " from srnic here, " bad + 0 " not as the spec has them"
		      if (n < 300) system("tail -n 3 /tmp/tcpdump.err")
		      exit !(n >= 300 && mine >= 150 && bad == 0) }'
}

# use KIND: this side's device on eth0 becomes KIND (rxe or srnic), once both sides are ready.
use() {
	rdma link del "$dev" 2>/dev/null
	dev=${1}0
	rdma link add "$dev" type "$1" netdev "$WIRE_IF" && wire_wait_gid "$dev" &&
		gid=$(wire_gid "$dev") || { echo "not ok - $WIRE_ROLE: $dev on $WIRE_IF"; fail=1; }
}

both ibv_rc_pingpong 18515 "rxe to rxe over the wire"
wire_sync "srnic-rxe"
[ "$WIRE_ROLE" = a ] && use srnic
wire_sync "srnic-rxe-ready"
both ibv_ud_pingpong 18517 "srnic (a) with rxe (b), UD over the wire"
wire_sync "srnic-srnic"
[ "$WIRE_ROLE" = b ] && use srnic
wire_sync "srnic-srnic-ready"
# a captures what crosses the wire meanwhile; tshark's RoCE dissector reads it afterwards.
if [ "$WIRE_ROLE" = a ]; then
	# Immediate mode: libpcap's default ring hands packets over a block at a time, and the block
	# still open when tcpdump is interrupted is lost (a whole run of the pingpong, once, in CI).
	tcpdump -i "$WIRE_IF" --immediate-mode -U -w /tmp/roce.pcap udp port 4791 2>/tmp/tcpdump.err &
	cap=$!
	# Capturing before the first packet: tcpdump says so once it listens.
	for _ in $(seq 1 300); do grep -q "listening on" /tmp/tcpdump.err && break; sleep 0.1; done
fi
both ibv_ud_pingpong 18519 "srnic with srnic, UD over the wire"
if [ "$WIRE_ROLE" = a ]; then
	kill -INT $cap; wait $cap
	check "tshark decodes every packet: UD SEND ONLY, P_Key 0xffff, Q_Key, pad, none malformed" \
		roce_capture_ok
fi
gid=$(wire_gid "$dev" 6) || { echo "not ok - $WIRE_ROLE: $dev has no GID for $WIRE_ME6"; fail=1; }
both ibv_ud_pingpong 18521 "srnic with srnic, UD over IPv6"
# What crossed the wire, by srnic's port counters: every datagram sent and received (4 runs of
# 100 exchanges with srnic on this side, at least 100 each way per run), none with a bad ICRC.
counter() { rdma statistic show link "$dev/1" | grep -o " $1 [0-9]*" | awk '{print $2}'; }
check "srnic counted its packets: tx_packets >= 400, rx_msgs >= 400, no ICRC error" \
	sh -c "[ $(counter tx_packets) -ge 400 ] && [ $(counter rx_msgs) -ge 400 ] &&
	       [ $(counter rx_icrc_errors) = 0 ]"
rdma link del "$dev"
exit $fail
