# shellcheck shell=bash
# A router's netdev with an srnic device bound to it (sourced by run-all.sh): namespaces a and b
# talk through namespace r, whose netdev toward a is srnic's.  srnic takes the UDP 4791 packets
# addressed to its own GIDs; RoCEv2 between a and b is forwarded, and a packet to r's other
# address reaches the socket there (rxe's, on a real host).
#   run_forward     the checks, counted with run_check

FW_WAIT=$((10 * ${SRNIC_TIME_SCALE:-1}))

# fw_ns NS CMD...: CMD in namespace NS.
fw_ns() { ip netns exec "$@"; }

fw_setup() {
	local n
	for n in a r b; do ip netns add "srfw$n" && fw_ns "srfw$n" ip link set lo up || return 1; done
	ip link add srfw0 netns srfwa type veth peer name srfw1 netns srfwr &&
	ip link add srfw2 netns srfwr type veth peer name srfw3 netns srfwb || return 1
	fw_addr srfwa srfw0 48 1 && fw_addr srfwr srfw1 48 2 &&
	fw_addr srfwr srfw2 49 2 && fw_addr srfwb srfw3 49 1 || return 1
	fw_route srfwa 48 && fw_route srfwb 49 &&
	fw_ns srfwr sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 || return 1
	fw_ns srfwr rdma link add srnicfw type srnic netdev srfw1 || return 1
	# The hook decides by the GID table, which follows the netdev's addresses a moment later.
	fw_gid srnicfw 0000:0000:0000:0000:0000:ffff:0a30:0002 &&
		fw_gid srnicfw fd48:0000:0000:0000:0000:0000:0000:0002
}

# fw_addr NS DEV NET HOST: 10.NET.0.HOST/24 and fdNET::HOST/64 on DEV, up.
fw_addr() {
	fw_ns "$1" ip addr add "10.$3.0.$4/24" dev "$2" &&
	fw_ns "$1" ip -6 addr add "fd$3::$4/64" dev "$2" nodad && fw_ns "$1" ip link set "$2" up
}

# fw_route NS NET: NS's default routes through r's address on net NET.
fw_route() {
	fw_ns "$1" ip route add default via "10.$2.0.2" && fw_ns "$1" ip -6 route add default via "fd$2::2"
}

# fw_gid DEV GID: waits (bounded) until DEV's port has GID.
fw_gid() {
	local i
	for i in $(seq 1 500); do
		cat /sys/class/infiniband/"$1"/ports/1/gids/* 2>/dev/null | grep -qx "$2" && return 0
		sleep 0.01
	done
	echo "$1 never had GID $2" >&2
	return 1
}

fw_teardown() {
	rdma link del srnicfw 2>/dev/null
	ip netns del srfwa 2>/dev/null
	ip netns del srfwr 2>/dev/null
	ip netns del srfwb 2>/dev/null
}

# fw_recv NS ADDR OUT: in the background, the first datagram to ADDR:4791 in NS into OUT; returns
# once the socket is bound.
fw_recv() {
	local i
	: >"$3"
	fw_ns "$1" /usr/bin/python3 -c '
import socket, sys
a = sys.argv[1]
s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_DGRAM)
s.bind((a, 4791))
print("bound", flush=True)
s.settimeout(float(sys.argv[2]))
print(s.recv(256).decode(errors="replace"), flush=True)' "$2" "$FW_WAIT" >"$3" 2>&1 &
	for i in $(seq 1 $((100 * FW_WAIT))); do
		grep -q bound "$3" && return 0
		sleep 0.01
	done
	return 1
}

# fw_send NS ADDR TEXT...: one datagram each to ADDR:4791 from NS, in order.  32 bytes or more:
# what the hook looks at (a BTH's worth after the UDP header) is there.
fw_send() {
	fw_ns "$1" /usr/bin/python3 -c '
import socket, sys
a = sys.argv[1]
s = socket.socket(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_DGRAM)
for t in sys.argv[2:]:
    s.sendto(t.ljust(32, ".").encode(), (a, 4791))' "$2" "${@:3}"
}

# fw_got OUT TEXT: the receiver of OUT ended and its datagram was TEXT's.
fw_got() {
	wait "$!"
	grep -q "^$2\.*\$" "$1" || { sed 's/^/#   /' "$1"; return 1; }
}

# fw_through ADDR: a datagram from a to b's ADDR goes through r.
fw_through() {
	fw_recv srfwb "$1" "$FW_OUT" && fw_send srfwa "$1" "fwd$1" && fw_got "$FW_OUT" "fwd$1"
}

# fw_local GID OTHER: of a datagram to r's GID (srnic's) and then one to r's OTHER address,
# r's wildcard socket reads the second first: the stack never had the first.
fw_local() {
	fw_recv srfwr :: "$FW_OUT" && fw_send srfwa "$1" "gid$1" &&
		fw_send srfwa "$2" "other$2" && fw_got "$FW_OUT" "other$2"
}

run_forward() {
	FW_OUT=/tmp/srfw.out
	if fw_setup; then
		run_check "IPv4: UDP 4791 through a router whose netdev srnic is bound to is forwarded" \
			fw_through 10.49.0.1
		run_check "IPv6: UDP 4791 through a router whose netdev srnic is bound to is forwarded" \
			fw_through fd49::1
		run_check "IPv4: the router takes UDP 4791 to srnic's GID; to its other address, its socket" \
			fw_local 10.48.0.2 10.49.0.2
		run_check "IPv6: the router takes UDP 4791 to srnic's GID; to its other address, its socket" \
			fw_local fd48::2 fd49::2
	else
		echo "not ok - a router's netdev bound to srnic: the namespaces"
		FAILED=$((FAILED + 1))
	fi
	fw_teardown
}
