#!/usr/bin/env bash
# The wire section of `make bench`, run in both guests of qemu/run-pair by scripts/bench-host.sh:
# what the emulated Ethernet link carries (iperf3, TCP; 8-byte UDP, srnic-bench-udp), then the same perftest figures between
# rxe and rxe, srnic (a) and rxe (b), srnic and srnic.  a is always the client, the requester
# (its READs read b's memory); b serves.  a writes wire.<pair>.<figure> lines to /out/raw.txt
# and each side every program's output to /out/logs/.  Asserts nothing about timing: a run that
# fails leaves its figure out (n/a in the report).  docs/bench.md lists the figures.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../tests/vm/lib.sh
. "$top/tests/vm/lib.sh"	# RDMAV_DRIVERS: the srnic provider
# shellcheck source-path=SCRIPTDIR source=../tests/vm/wire.sh
. "$top/tests/vm/wire.sh"
OUT=${BENCH_OUT:-/out}
RAW=$OUT/raw.txt
LOGS=$OUT/logs
export WIRE_CMD_TIMEOUT=${BENCH_SECS:-150}
port=19700 dev= gid=
mkdir -p "$LOGS"
: >"$RAW"

put() {
	[ "$WIRE_ROLE" = a ] && [ -n "$2" ] || return 0
	echo "wire.$1=$2" >>"$RAW"
	echo "bench: wire.$1=$2"
}

role=client
[ "$WIRE_ROLE" = a ] || role=server

# run NAME PROG ARGS...: PROG on $dev, b serving and a connecting; output in $LOGS/NAME.<role>.
run() {
	local name=$1 st=0 t0=$SECONDS
	shift
	port=$((port + 1))
	wire_side "$role" "$port" "$@" -d "$dev" -x "$gid" -F -p "$port" \
		>"$LOGS/$name.$role" 2>&1 || st=$?
	echo "bench: $WIRE_ROLE: $* on $dev: status $st, $((SECONDS - t0)) s"
	return $st
}

# col N NAME: column N of the last result line of a's output for NAME (perftest's: bytes,
# iterations, then BW peak, average, message rate; or min, max, typical, average, stdev, 99%).
col() {
	[ "$WIRE_ROLE" = a ] || return 0
	awk '$1 ~ /^[0-9]+$/ && $2 ~ /^[0-9]+$/ && NF >= 5' "$LOGS/$2.client" | tail -n 1 |
		awk -v n="$1" '{print $n}'
}

# figure PAIR NAME: one perftest figure between this side's $dev and the other's.
figure() {
	local p=$1 f=$2
	case $f in
	write_bw_64k) run "$p.$f" ib_write_bw -s 65536 -n 1000 && put "$p.$f" "$(col 4 "$p.$f")" ;;
	read_bw_64k) run "$p.$f" ib_read_bw -s 65536 -n 1000 && put "$p.$f" "$(col 4 "$p.$f")" ;;
	write_bw_8qp_64k)
		run "$p.$f" ib_write_bw -q 8 -s 65536 -n 200 && put "$p.$f" "$(col 4 "$p.$f")" ;;
	msg_rate_8b)
		run "$p.$f" ib_write_bw -s 8 -l 16 -Q 16 -n 20000 && put "$p.$f" "$(col 5 "$p.$f")" ;;
	write_lat | send_lat | read_lat)
		run "$p.$f" "ib_$f" -s 8 -n 1000 &&
			put "$p.${f}_typ" "$(col 5 "$p.$f")" && put "$p.${f}_99" "$(col 8 "$p.$f")" ;;
	esac
}

# figures PAIR [NAME...]: those figures (all of them by default).
figures() {
	local p=$1 f
	shift
	[ $# -gt 0 ] || set -- write_bw_64k read_bw_64k write_bw_8qp_64k msg_rate_8b write_lat \
		send_lat read_lat
	for f in "$@"; do figure "$p" "$f"; done
}

# srnic_on new|base: srnic0 again, on this build's module or on $SRNIC_BENCH_BASE's.
srnic_on() {
	rdma link del "${dev:-none}" 2>/dev/null
	dev=
	rmmod srnic 2>/dev/null
	if [ "$1" = base ]; then insmod "$SRNIC_BENCH_BASE"; else modprobe srnic; fi && wire_use srnic
}

wire_up || { echo "bench: the wire did not come up" >&2; exit 1; }
# SRNIC_BENCH_LINK_MTU=N: the link's MTU on both sides (default: the NIC's, 1500).
if [ -n "${SRNIC_BENCH_LINK_MTU:-}" ]; then
	ip link set "$WIRE_IF" mtu "$SRNIC_BENCH_LINK_MTU" || exit 1
	wire_sync link-mtu
fi
# The link's MTU, which the devices' path MTU follows (less the RoCEv2 headers).
put link_mtu "$(cat "/sys/class/net/$WIRE_IF/mtu")"
# The link itself: TCP for 5 s, a sending, in MB/s (2^20 B) as the receiver counted.
iperf=(-s -1)
[ "$role" = client ] && iperf=(-f M -t 5 -c)
if wire_side "$role" 5201 iperf3 "${iperf[@]}" >"$LOGS/iperf3.$role" 2>&1; then
	put tcp_iperf3 "$(awk '/receiver/ { for (i = 1; i <= NF; i++) if ($i == "MBytes/sec") v = $(i - 1) }
			      END { print v }' "$LOGS/iperf3.$role")"
fi
# ... and for 8-byte messages: UDP ping-pongs (spinning as perftest's latency programs do, then
# blocking) and 8-byte datagrams for 5 s; the bounds of the latency and message-rate figures.
udp_listening() { ss -Hlun "sport = :$1" | grep -q .; }
udp=(serve 5202)
[ "$role" = client ] && udp=(client 5202 1000 5)
if WIRE_LISTENING=udp_listening wire_side "$role" 5202 "$top/build/cmake/scripts/bench/srnic-bench-udp" \
	"${udp[@]}" >"$LOGS/udp.$role" 2>&1; then
	while IFS== read -r k v; do put "$k" "$v"; done < <(grep '^udp_' "$LOGS/udp.$role")
fi
modprobe rdma_rxe && wire_use rxe || { echo "bench: rxe0 on $WIRE_IF" >&2; exit 1; }
# ... and the path MTU the devices use on it (the port's active MTU, bytes of payload a packet).
put path_mtu "$(ibv_devinfo -d "$dev" | awk '/active_mtu/ {print $2; exit}')"
figures rxe_rxe
wire_sync srnic-rxe
[ "$WIRE_ROLE" = a ] && { wire_use srnic || echo "bench: srnic0 on $WIRE_IF" >&2; }
wire_sync srnic-rxe-ready
figures srnic_rxe
wire_sync srnic-srnic
[ "$WIRE_ROLE" = b ] && { wire_use srnic || echo "bench: srnic0 on $WIRE_IF" >&2; }
wire_sync srnic-srnic-ready
figures srnic_srnic
# SRNIC_BENCH_BASE=PATH.ko (make bench BASE=...): srnic with srnic again, both guests on that
# module and on this build's in turn, SRNIC_BENCH_ROUNDS rounds, the figures a change to the
# transmit path moves (wire.ab.<round>.<base|new>.<figure>; the report gives each side's median).
if [ -n "${SRNIC_BENCH_BASE:-}" ]; then
	for r in $(seq 1 "${SRNIC_BENCH_ROUNDS:-3}"); do
		for side in base new; do
			wire_sync "ab-$r-$side"
			srnic_on "$side" || echo "bench: srnic0 on the $side module" >&2
			wire_sync "ab-$r-$side-ready"
			figures "ab.$r.$side" write_bw_64k read_bw_64k write_lat read_lat
		done
	done
fi
rdma link del "$dev"
exit 0
