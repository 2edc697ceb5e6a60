#!/usr/bin/env bash
# In both guests of qemu/run-pair: the wire carries RoCEv2 between them.  rxe on eth0 on each
# side: ibv_rc_pingpong with data checks (-c), a's server and b's client, then the reverse.  Then
# srnic on the wire: srnic (a) with rxe (b), then srnic on both sides, each way round: UD
# datagrams (ibv_ud_pingpong -c, IPv4; between srnic devices also IPv6), RC and UC (the
# pingpongs with data checks, the eight perftest programs), then RC on a bad wire (netem loss,
# reordering, duplication, corruption, a netdev queue shorter than a piece); srnic's counters show
# the packets, tshark decodes captures of UD and RC between srnic devices; XRC between srnic
# devices (ibv_xsrq_pingpong); ATOMIC WRITE and FLUSH (tests/vm/wire_ops.c); rdma_cm (rping,
# ucmatose), multicast (mckey) and NVMe over RDMA srnic with rxe and with srnic, NFS over RDMA
# between srnic devices; last, README's "Two hosts" as it stands (tests/vm/two-hosts.sh).  Prints "ok - ..." / "not ok - ..." lines; exits non-zero if one failed.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
. "$top/tests/vm/lib.sh"	# RDMAV_DRIVERS: the srnic provider
. "$top/tests/vm/wire.sh"
. "$top/tests/vm/ulp.sh"	# the NVMe and NFS target, host and checks
. "$top/tests/vm/two-hosts.sh"	# README's "Two hosts", as it stands

fail=0
# The plan: how many checks each side runs whole (scripts/check.sh fails a side that ran fewer).
# (b, the ULP host, checks more than a, the target.)  A check added below adds one here;
# README's two hosts add two and one a command line of theirs.
th=$((2 + $(readme_block server | wc -l)))
case $WIRE_ROLE in a) echo "1..$((138 + th))" ;; *) echo "1..$((141 + th))" ;; esac
# part NAME: the checks since the last part (and their time) are part NAME of the run's table.
part_t=$SECONDS
part() { echo "part| $1 $((SECONDS - part_t))"; part_t=$SECONDS; }
check() {	# check NAME CMD...: runs CMD, prints its TAP line
	local name=$1
	shift
	if "$@" >/tmp/check.log 2>&1; then
		echo "ok - $WIRE_ROLE: $name"
	else
		echo "not ok - $WIRE_ROLE: $name"
		sed 's/^/#   /' /tmp/check.log | tail -n 20
		# What srnic's QPs on the wire were waiting for, and its counters.
		if [[ ${dev:-} == srnic* ]]; then
			grep -h '^wire' /sys/kernel/debug/srnic/"$dev"/engine 2>/dev/null | tail -n 4
			rdma statistic show link "$dev/1" 2>/dev/null
		fi | sed 's/^/#   /'
		fail=1
	fi
}

modprobe rdma_ucm	# rdma_cm for processes
wire_up || { echo "not ok - $WIRE_ROLE: the wire came up"; exit 1; }
echo "ok - $WIRE_ROLE: the wire came up ($WIRE_ME, peer $WIRE_PEER)"
modprobe rdma_rxe && rdma link add rxe0 type rxe netdev "$WIRE_IF" && wire_wait_gid rxe0 ||
	{ echo "not ok - $WIRE_ROLE: rxe0 on $WIRE_IF"; exit 1; }
gid=$(wire_gid rxe0)
dev=rxe0

# pingpong PROG server|client PORT: a pingpong on $dev.
pingpong() {
	local prog=$1 args=(-d "$dev" -g "$gid" -c -n "${PP_ITERS:-100}" -p "$3")
	[ "$prog" = ibv_rc_pingpong ] && args+=(-s "${PP_SIZE:-4096}")
	[ "$prog" = ibv_ud_pingpong ] && args+=(-s 1024)
	[ -n "${PP_EVENTS:-}" ] && args+=(-e)
	wire_side "$2" "$3" "$prog" "${args[@]}"
}

# perftest PROG server|client PORT ARGS...: a perftest program on $dev.
perftest() {
	local prog=$1 role=$2 port=$3
	shift 3
	wire_side "$role" "$port" "$prog" -d "$dev" -x "$gid" -F -p "$port" "$@"
}

# connected PORT WHAT: RC and UC between this side's $dev and the other's, each way round:
# the pingpongs with data checks (RC also with 64 KiB messages, with an SRQ and with completion
# events) and the eight perftest programs.
connected() {
	local port=$1 what=$2 me_a=server me_b=client prog
	[ "$WIRE_ROLE" = a ] || { me_a=client; me_b=server; }
	both ibv_rc_pingpong "$port" "$what, RC"
	PP_SIZE=65536 both ibv_rc_pingpong $((port + 2)) "$what, RC 64 KiB"
	both ibv_uc_pingpong $((port + 4)) "$what, UC"
	both ibv_srq_pingpong $((port + 6)) "$what, RC with an SRQ"
	PP_EVENTS=1 both ibv_rc_pingpong $((port + 8)) "$what, RC with completion events"
	port=$((port + 10))
	for prog in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw \
		    ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat; do
		check "$prog $what, a serves" perftest "$prog" $me_a "$port" -n 200
		check "$prog $what, b serves" perftest "$prog" $me_b $((port + 1)) -n 200
		port=$((port + 2))
	done
}

# atomic_ops server|client PORT: ATOMIC WRITE into the server's memory, and from an srnic client
# FLUSH of it, the server checking what landed (tests/vm/wire_ops.c).
atomic_ops() { SRNIC_DEV=$dev SRNIC_GID=$gid wire_side "$1" "$2" "$VMBIN/wire_ops" -p "$2"; }
# ops_both PORT WHAT: atomic_ops each way round.
ops_both() {
	local me_a=server me_b=client
	[ "$WIRE_ROLE" = a ] || { me_a=client; me_b=server; }
	check "ATOMIC WRITE (and FLUSH from srnic) $2, a serves" atomic_ops $me_a "$1"
	check "ATOMIC WRITE (and FLUSH from srnic) $2, b serves" atomic_ops $me_b $(($1 + 1))
}

# xsrq server|client PORT: ibv_xsrq_pingpong on $dev (XRC: SRQs of a domain, a QP pair per
# client), the path MTU the wire's.
xsrq() { wire_side "$1" "$2" ibv_xsrq_pingpong -d "$dev" -g "$gid" -m 1024 -n 20 -p "$2"; }

# counter NAME: srnic's port counter NAME on this side.
counter() { rdma statistic show link "$dev/1" | grep -o " $1 [0-9]*" | awk '{print $2}'; }

# badwire PORT WHAT COUNTER NETEM...: a bad wire, netem on both sides' sending half: RC with
# data checks (ibv_rc_pingpong -c, 64 KiB), READ and atomics complete each way round, and
# srnic's COUNTER on this side shows what the bad wire did.  ONE_WAY=1: only READ and atomics
# with a the client (rxe, on this kernel, does not recover from lost packets as a requester, not
# even with rxe: ibv_rc_pingpong and ib_read_bw between two rxe devices fail at 5% loss, and
# rxe's atomics failed once at 1% corruption).
badwire() {
	local port=$1 what=$2 ctr=$3 me_a=server me_b=client before=0 rt_before=0 prog
	shift 3
	[ "$WIRE_ROLE" = a ] || { me_a=client; me_b=server; }
	wire_sync "netem-$port" || { echo "not ok - $WIRE_ROLE: $what: sync"; fail=1; return; }
	tc qdisc add dev "$WIRE_IF" root netem "$@" ||
		{ echo "not ok - $WIRE_ROLE: $what: tc netem $*"; fail=1; return; }
	[[ $dev == srnic* ]] && before=$(counter "$ctr") rt_before=$(counter retransmits)
	[ -z "${ONE_WAY:-}" ] && lossy_both "$port" "$what"
	port=$((port + 2))
	for prog in ib_read_bw ib_atomic_bw; do
		[ -z "${ONE_WAY:-}" ] && check "$prog $what, a serves" perftest "$prog" $me_a "$port" -n 100
		check "$prog $what, b serves" perftest "$prog" $me_b $((port + 1)) -n 100
		port=$((port + 2))
	done
	tc qdisc del dev "$WIRE_IF" root
	[[ $dev == srnic* ]] &&
		check "$what: srnic's $ctr counter grew" sh -c "[ $(counter "$ctr") -gt $before ]"
	# A packet the netdev's queue refused is held back, not lost: it costs no retransmission
	# (a refused ACK does, at the peer: a tenth of the refusals is room enough for those).
	[[ $dev == srnic* && $ctr == tx_dropped ]] &&
		check "$what: refusals cost (almost) no retransmissions" refusals_held "$before" "$rt_before"
}

# refusals_held TX_DROPPED RETRANSMITS: the counters' values before; the retransmissions since
# are fewer than a tenth of the refusals.
refusals_held() {
	local dropped=$(($(counter tx_dropped) - $1)) rt=$(($(counter retransmits) - $2))
	echo "# tx_dropped +$dropped, retransmits +$rt"
	[ $((rt * 10)) -lt "$dropped" ]
}

# lossy_both PORT WHAT: ibv_rc_pingpong -c of 64 KiB, a serving, then b, on a wire that loses
# packets.  The pingpong has no closing handshake: when the ACK of one side's last message is lost
# and the other side, done, has destroyed its QP already, the first gets "transport retry counter
# exceeded", whatever the device.  That failure alone, with the other side's run complete (every
# message of both sides arrived and was checked), is the tool's race and passes.
lossy_both() {
	local me_a=server me_b=client
	[ "$WIRE_ROLE" = a ] || { me_a=client; me_b=server; }
	check "ibv_rc_pingpong -c $2, RC 64 KiB, a serves" lossy_pingpong $me_a "$1"
	check "ibv_rc_pingpong -c $2, RC 64 KiB, b serves" lossy_pingpong $me_b $(($1 + 1))
}
lossy_pingpong() {
	local st=0 peer
	PP_SIZE=65536 PP_ITERS=20 pingpong ibv_rc_pingpong "$1" "$2" >/tmp/pp.out 2>&1 || st=$?
	cat /tmp/pp.out
	peer=$(wire_swap "pp-$2" "$st") || return 1
	[ "$st" = 0 ] && return 0
	echo "# the other side's pingpong: status $peer"
	[ "$peer" = 0 ] && [ "$(grep -c 'Failed status' /tmp/pp.out)" = 1 ] &&
		grep -q 'Failed status transport retry counter exceeded' /tmp/pp.out
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

# RC opcodes (IBTA table 38) the capture must hold: SEND FIRST/MIDDLE/LAST, RDMA WRITE
# FIRST/MIDDLE/LAST, READ REQUEST, READ RESPONSE FIRST/MIDDLE/LAST, ACKNOWLEDGE, ATOMIC
# ACKNOWLEDGE, FETCH_ADD; every packet's P_Key the default and nothing malformed.
rc_capture_ok() {
	tshark -r /tmp/roce.pcap -T fields -E separator=, -e infiniband.bth.opcode \
		-e infiniband.bth.p_key -e _ws.malformed |
		awk -F, -v want="0 1 2 6 7 8 12 13 14 15 17 18 20" '
		{ n++; seen[$1] = 1 }
		$2 != 65535 || $3 != "" { bad++ }
		END { split(want, w, " "); for (i in w) if (!(w[i] in seen)) { miss = miss " " w[i] }
		      print n " packets, " bad + 0 " not as the spec has them, opcodes missing:" (miss ? miss : " none")
		      exit !(n > 0 && bad == 0 && miss == "") }'
}

# capture_start, capture_stop: a captures the wire's RoCEv2 packets into /tmp/roce.pcap; only
# a's capture_stop succeeds (b has nothing to check).
capture_start() {
	[ "$WIRE_ROLE" = a ] || return 0
	# Immediate mode: libpcap's default ring hands packets over a block at a time, and the block
	# still open when tcpdump is interrupted is lost (a whole run of the pingpong, once, in CI).
	tcpdump -i "$WIRE_IF" --immediate-mode -U -w /tmp/roce.pcap udp port 4791 2>/tmp/tcpdump.err &
	cap=$!
	# Capturing before the first packet: tcpdump says so once it listens.
	for _ in $(seq 1 300); do grep -q "listening on" /tmp/tcpdump.err && break; sleep 0.1; done
}
capture_stop() {
	[ "$WIRE_ROLE" = a ] || return 1
	kill -INT $cap
	wait $cap
	return 0
}

# cm_side server|client PORT CMD...: as wire_side, for programs that connect through rdma_cm:
# the server is waited for by its listening rdma_cm ID (its port is no TCP port).
cm_listening() { rdma resource show cm_id 2>/dev/null | grep -q "state LISTEN .*:$1 "; }
cm_side() { WIRE_LISTENING=cm_listening wire_side "$@"; }

# cm_both PORT WHAT: rdma_cm across the wire, a's server and b's client: rping with data checks
# (QP1 and ib_cm on both sides: REQ, REP, RTU, then RC traffic) and ucmatose.
cm_both() {
	local port=$1 what=$2
	if [ "$WIRE_ROLE" = a ]; then
		check "rping -V -C 100, $what (a serves)" \
			cm_side server "$port" rping -s -a "$WIRE_ME" -p "$port" -V -C 100
		check "ucmatose, $what (a serves)" \
			cm_side server $((port + 1)) ucmatose -b "$WIRE_ME" -p $((port + 1)) -C 20
	else
		check "rping -V -C 100, $what (a serves)" \
			cm_side client "$port" rping -c -a "$WIRE_PEER" -p "$port" -V -C 100
		check "ucmatose, $what (a serves)" \
			cm_side client $((port + 1)) ucmatose -s "$WIRE_PEER" -p $((port + 1)) -C 20
	fi
}

# mc_both PORT RECEIVER WHAT: UD multicast across the wire with mckey (rdma_cm's join on both sides,
# the group's GID as the datagrams' destination, QPN 0xFFFFFF): RECEIVER (a or b) receives what the
# other side sends.  A receiver attaches its QP only once its join completes, which it does not show,
# so the sender sends batches until the receiver, done, answers on TCP PORT.
mc_both() {
	local port=$1 rcv=$2 what=$3 group
	group=239.47.0.$(($1 % 200))
	if [ "$WIRE_ROLE" = "$rcv" ]; then
		check "mckey: $rcv receives 20 datagrams sent to $group, $what" mc_recv "$group" "$port"
	else
		check "mckey: datagrams to $group sent until $rcv has them, $what" mc_send "$group" "$port"
	fi
}
mc_recv() {
	local pid st=0
	timeout -k 5 $((300 * WIRE_SCALE)) mckey -m "$1" -b "$WIRE_ME" -C 20 >/tmp/mckey.out 2>&1 &
	pid=$!
	wire_sync "mckey-$2" || { kill $pid; return 1; }
	wait $pid || st=$?
	# Done (or failed): the sender stops once it can connect.
	timeout $((120 * WIRE_SCALE)) busybox nc -l -p "$2" </dev/null >/dev/null
	[ $st = 0 ] && grep -q "data transfers complete" /tmp/mckey.out && return 0
	sed 's/^/#   /' /tmp/mckey.out | tail -n 15
	return 1
}
mc_send() {
	local i
	wire_sync "mckey-$2" || return 1
	for i in $(seq 1 30); do
		timeout $((60 * WIRE_SCALE)) mckey -m "$1" -b "$WIRE_ME" -s -C 20 >/tmp/mckey.out 2>&1 ||
			{ sed 's/^/#   /' /tmp/mckey.out | tail -n 15; return 1; }
		echo done | timeout 5 busybox nc "$WIRE_PEER" "$2" 2>/dev/null && return 0
	done
	echo "#   $i batches sent; the receiver never said it had them"
	return 1
}

_pair_nvmet_up() { modprobe -a nvmet nvmet-rdma && _nvmet_up; }

# ulp_nvme PORT WHAT: NVMe over RDMA across the wire, a the target (nvmet's RDMA port on its
# address, a tmpfs file behind it), b the host: connect, fio with every block verified, disconnect.
ulp_nvme() {
	local port=$1 what=$2 blk ULP_ADDR=$WIRE_ME
	if [ "$WIRE_ROLE" = a ]; then
		check "nvmet: an RDMA port on $WIRE_ME:4420, $what" _pair_nvmet_up
		wire_sync "nvme-up-$port"
		wire_sync "nvme-done-$port"
		_nvmet_down
		return
	fi
	modprobe nvme-rdma
	wire_sync "nvme-up-$port"
	check "nvme connect -t rdma to a, $what" timeout $((120 * WIRE_SCALE)) nvme connect -t rdma -a "$WIRE_PEER" \
		-s 4420 -n "$ULP_NQN"
	if blk=$(_nvme_dev); then
		check "fio on a's namespace: 4 KiB random writes, 16 MiB, verified, $what" \
			_fio_verify "$blk" 4k 16M
		check "fio on a's namespace: 128 KiB random writes, 64 MiB, verified, $what" \
			_fio_verify "$blk" 128k 64M
	else
		check "nvme: a's namespace appears as a block device, $what" false
	fi
	check "nvme disconnect, $what" nvme disconnect -n "$ULP_NQN"
	wire_sync "nvme-done-$port"
}

# ulp_nfs PORT WHAT: NFSv4 over RDMA across the wire, a the server, b the client: files written
# through the mount, the client's cache dropped, read back and compared.
ulp_nfs() {
	local port=$1 what=$2 ULP_ADDR=$WIRE_ME
	if [ "$WIRE_ROLE" = a ]; then
		check "nfsd: an RDMA listener on $WIRE_ME:20049, $what" _nfsd_up
		wire_sync "nfs-up-$port"
		wire_sync "nfs-done-$port"
		_nfsd_down
		return
	fi
	modprobe rpcrdma
	mkdir -p "$ULP_DIR/mnt"
	wire_sync "nfs-up-$port"
	check "mount -t nfs4 -o proto=rdma a:/, $what" \
		timeout $((120 * WIRE_SCALE)) mount -t nfs4 -o proto=rdma,port=20049 "$WIRE_PEER:/" "$ULP_DIR/mnt"
	if mountpoint -q "$ULP_DIR/mnt"; then
		check "NFS over RDMA: files of 1 KiB to 32 MiB written to a and read back, $what" \
			_nfs_files
		umount "$ULP_DIR/mnt"
	fi
	wire_sync "nfs-done-$port"
}

# use KIND: this side's device on eth0 becomes KIND (rxe or srnic), once both sides are ready.
# late_acks PORT: rxe's answers come 100 ms late (after a piece's timeout, so go-back-N forgets
# what went after the head) and 10 % of them are lost; srnic's SENDs and WRITEs to rxe complete
# all the same, since an ACK is cumulative: rxe answers the head's copy with its furthest PSN,
# past the head, and a lost ACK of the head's own must not cost every retry.
late_acks() {
	local port=$1 what="srnic (a) with rxe (b), rxe's answers 100 ms late and 10 % lost"
	local me_b=client prog
	[ "$WIRE_ROLE" = a ] || me_b=server
	wire_sync "late-$port" || { echo "not ok - $WIRE_ROLE: $what: sync"; fail=1; return; }
	[ "$WIRE_ROLE" = b ] && { tc qdisc add dev "$WIRE_IF" root netem delay 100ms loss 10% ||
		{ echo "not ok - $WIRE_ROLE: $what: tc netem"; fail=1; }; }
	for prog in ib_send_bw ib_write_bw; do
		check "$prog $what, b serves" perftest "$prog" $me_b "$port" -n 100
		port=$((port + 1))
	done
	wire_sync "late-done-$port"
	[ "$WIRE_ROLE" = b ] && tc qdisc del dev "$WIRE_IF" root
}

use() { wire_use "$1" || { echo "not ok - $WIRE_ROLE: $dev on $WIRE_IF"; fail=1; }; }

both ibv_rc_pingpong 18515 "rxe to rxe over the wire"
ops_both 18530 "rxe with rxe"
part rxe-rxe
wire_sync "srnic-rxe"
[ "$WIRE_ROLE" = a ] && use srnic
wire_sync "srnic-rxe-ready"
both ibv_ud_pingpong 18517 "srnic (a) with rxe (b), UD over the wire"
connected 18600 "srnic (a) with rxe (b)"
cm_both 18610 "srnic (a) with rxe (b)"
mc_both 18620 b "srnic (a) sends, rxe (b) receives"
mc_both 18621 a "rxe (b) sends, srnic (a) receives"
ulp_nvme 18630 "srnic target (a), rxe host (b)"
ONE_WAY=1 badwire 18640 "srnic (a) with rxe (b), 5% loss" retransmits loss 5%
ONE_WAY=1 badwire 18650 "srnic (a) with rxe (b), 1% corruption" rx_icrc_errors corrupt 1%
late_acks 18660
ops_both 18670 "srnic (a) with rxe (b)"
part srnic-rxe
wire_sync "srnic-srnic"
[ "$WIRE_ROLE" = b ] && use srnic
wire_sync "srnic-srnic-ready"
# a captures what crosses the wire meanwhile; tshark's RoCE dissector reads it afterwards.
capture_start
tx0=$(counter tx_packets) rx0=$(counter rx_msgs) icrc0=$(counter rx_icrc_errors)
both ibv_ud_pingpong 18519 "srnic with srnic, UD over the wire"
capture_stop && check "tshark decodes every packet: UD SEND ONLY, P_Key 0xffff, Q_Key, pad, none malformed" \
	roce_capture_ok
gid=$(wire_gid "$dev" 6) || { echo "not ok - $WIRE_ROLE: $dev has no GID for $WIRE_ME6"; fail=1; }
both ibv_ud_pingpong 18521 "srnic with srnic, UD over IPv6"
# What crossed the wire meanwhile, by srnic's port counters: every datagram sent and received
# (4 runs of 100 exchanges, at least 100 each way per run), none with a bad ICRC.
check "srnic counted its packets: tx_packets >= 400, rx_msgs >= 400, no ICRC error" \
	sh -c "[ $(($(counter tx_packets) - tx0)) -ge 400 ] && [ $(($(counter rx_msgs) - rx0)) -ge 400 ] &&
	       [ $(counter rx_icrc_errors) = $icrc0 ]"
gid=$(wire_gid "$dev")
# RC under capture: SENDs (the pingpong, 4 KiB: FIRST, MIDDLE, LAST), WRITEs and READs of 4 KiB
# and atomics, a few each; every packet well formed, every opcode they use seen.
capture_start
PP_ITERS=10 both ibv_rc_pingpong 18690 "srnic with srnic, RC under capture"
me_a=server
[ "$WIRE_ROLE" = a ] || me_a=client
check "ib_write_bw -s 4096 under capture" perftest ib_write_bw $me_a 18692 -n 20 -s 4096
check "ib_read_bw -s 4096 under capture" perftest ib_read_bw $me_a 18693 -n 20 -s 4096
check "ib_atomic_bw under capture" perftest ib_atomic_bw $me_a 18694 -n 20
capture_stop && check "tshark decodes every RC packet, SEND, WRITE, READ, ACK and atomic opcodes among them" \
	rc_capture_ok
part captures
connected 18700 "srnic with srnic"
me_b=client
[ "$WIRE_ROLE" = a ] || me_b=server
check "ibv_xsrq_pingpong srnic with srnic, XRC, a serves" xsrq $me_a 18698
check "ibv_xsrq_pingpong srnic with srnic, XRC, b serves" xsrq $me_b 18699
cm_both 18710 "srnic with srnic"
ops_both 18715 "srnic with srnic"
mc_both 18720 b "srnic with srnic"
part srnic-srnic
ulp_nvme 18730 "srnic with srnic"
ulp_nfs 18731 "srnic with srnic"
part ulps
badwire 18740 "srnic with srnic, 1% loss" retransmits loss 1%
badwire 18750 "srnic with srnic, 5% loss" seq_naks_sent loss 5%
badwire 18760 "srnic with srnic, 25% reordering" seq_naks_sent delay 2ms reorder 25% 50%
badwire 18770 "srnic with srnic, 5% duplication" duplicate_request duplicate 5%
badwire 18780 "srnic with srnic, 1% corruption" rx_icrc_errors corrupt 1%
# A queue shorter than a 64 KiB piece's packets: what the netdev refuses goes again once it has
# room (the requester's pieces; a READ's responses when the requester asks again), and srnic
# counts the refusals.
# The queue must drain slower than srnic fills it: a debug kernel builds about a packet a
# millisecond, which 200 Mbit/s drains as it comes (nothing was refused there), so the rate goes
# down with the square of the time scale (3 Mbit/s at 8).
qrate=$((200 / (WIRE_SCALE * WIRE_SCALE)))
[ "$qrate" -ge 1 ] || qrate=1
badwire 18790 "srnic with srnic, a 16-packet queue at $qrate Mbit/s" tx_dropped rate ${qrate}mbit limit 16
part badwire
two_hosts
part two-hosts
exit $fail
