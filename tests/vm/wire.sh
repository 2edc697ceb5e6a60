# shellcheck shell=bash
# The wire between the two guests of qemu/run-pair, sourced by what runs in them.
#   wire_up         eth0 up with this side's addresses; waits (bounded) until the peer answers
#   wire_sync NAME  returns once the other side has called wire_sync NAME too (a TCP rendezvous
#                   on the wire: a listens, b connects until a answers)
#   wire_gid DEV [6] the GID index of DEV's RoCEv2 GID for this side's IPv4 (IPv6) address
#   wire_use KIND   this side's device on eth0 becomes KIND0 (rxe or srnic): sets dev and gid
#   wire_side server|client PORT CMD...  CMD as the server (listening on PORT before the other
#                   side is told to connect) or as the client (the peer's address added); each
#                   bounded by WIRE_CMD_TIMEOUT seconds (120 x SRNIC_TIME_SCALE)
# WIRE_ROLE (a or b), WIRE_ME, WIRE_PEER (IPv4), WIRE_ME6, WIRE_PEER6 (IPv6) describe the two sides.
WIRE_ROLE=${SRNIC_WIRE_ROLE:?not in a guest of qemu/run-pair}
WIRE_IF=eth0
if [ "$WIRE_ROLE" = a ]; then
	WIRE_ME=10.47.0.1 WIRE_PEER=10.47.0.2 WIRE_ME6=fd47::1 WIRE_PEER6=fd47::2
else
	WIRE_ME=10.47.0.2 WIRE_PEER=10.47.0.1 WIRE_ME6=fd47::2 WIRE_PEER6=fd47::1
fi
WIRE_SYNC_PORT=4700
# Time limits multiply by this on a debug kernel (make check-debug sets SRNIC_TIME_SCALE).
WIRE_SCALE=${SRNIC_TIME_SCALE:-1}

wire_up() {
	local i
	ip link set "$WIRE_IF" up &&
		ip addr add "$WIRE_ME/24" dev "$WIRE_IF" &&
		ip -6 addr add "$WIRE_ME6/64" dev "$WIRE_IF" nodad || return 1
	# Until the peer answers: it may still be booting (a minute at most under TCG).
	for i in $(seq 1 120); do
		busybox ping -c 1 -W 1 "$WIRE_PEER" >/dev/null 2>&1 && return 0
	done
	echo "wire: $WIRE_PEER never answered" >&2
	return 1
}

# One rendezvous per name and call: the name is sent and checked, so the two sides cannot pass
# different points of their scripts for the same one.
wire_sync() {
	local name=$1 got
	if [ "$WIRE_ROLE" = a ]; then
		got=$(_wire_listen) || return 1
		[ "$got" = "$name" ] || { echo "wire: sync $name met $got" >&2; return 1; }
		return 0
	fi
	_wire_tell "$name" || { echo "wire: sync $name: $WIRE_PEER never listened" >&2; return 1; }
}

# wire_swap NAME VALUE: gives the other side VALUE (a word) and prints its own (a barrier too):
# b tells a, then a tells b, each listening on WIRE_SYNC_PORT in turn.
wire_swap() {
	local got
	if [ "$WIRE_ROLE" = a ]; then
		got=$(_wire_listen) && _wire_tell "$1 $2" || return 1
	else
		_wire_tell "$1 $2" && got=$(_wire_listen) || return 1
	fi
	[ "${got% *}" = "$1" ] || { echo "wire: swap $1 met $got" >&2; return 1; }
	echo "${got##* }"
}
_wire_listen() { timeout $((300 * WIRE_SCALE)) busybox nc -l -p "$WIRE_SYNC_PORT" </dev/null; }
_wire_tell() {
	local i
	for i in $(seq 1 600); do
		echo "$1" | timeout 5 busybox nc "$WIRE_PEER" "$WIRE_SYNC_PORT" 2>/dev/null && return 0
		sleep 0.5
	done
	return 1
}

wire_gid() {	# wire_gid DEV [6]: with 6, for this side's IPv6 address (fd47::N)
	local dev=$1 i want
	want=$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${WIRE_ME//./ })
	[ "${2:-}" = 6 ] && want=$(printf 'fd47:0000:0000:0000:0000:0000:0000:%04x' "${WIRE_ME6##*:}")
	for i in $(seq 0 31); do
		[ "$(cat "/sys/class/infiniband/$dev/ports/1/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] &&
			[ "$(cat "/sys/class/infiniband/$dev/ports/1/gids/$i" 2>/dev/null)" = "$want" ] &&
			{ echo "$i"; return 0; }
	done
	return 1
}

# wire_wait_gid DEV: until DEV has the RoCEv2 GID of this side's IPv4 address (bounded).
wire_wait_gid() {
	local i
	for i in $(seq 1 500); do
		wire_gid "$1" >/dev/null && return 0
		sleep 0.01
	done
	echo "wire: $1 has no RoCEv2 GID for $WIRE_ME" >&2
	return 1
}

wire_use() {
	rdma link del "${dev:-none}" 2>/dev/null
	dev=${1}0
	rdma link add "$dev" type "$1" netdev "$WIRE_IF" && wire_wait_gid "$dev" &&
		gid=$(wire_gid "$dev")
}

# Whether a server listens on TCP port $1 (wire_side's default test; WIRE_LISTENING names another).
wire_tcp_listening() { ss -Hltn "sport = :$1" | grep -q .; }

wire_side() {
	local role=$1 port=$2 limit=${WIRE_CMD_TIMEOUT:-$((120 * WIRE_SCALE))}
	shift 2
	if [ "$role" = server ]; then
		timeout "$limit" "$@" &
		local pid=$! i
		for i in $(seq 1 300); do
			"${WIRE_LISTENING:-wire_tcp_listening}" "$port" && break
			sleep 0.1
		done
		wire_sync "listening-$port" || { kill $pid; return 1; }
		wait $pid
	else
		wire_sync "listening-$port" || return 1
		timeout "$limit" "$@" "$WIRE_PEER"
	fi
}
