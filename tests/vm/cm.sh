# Programs that connect through rdma_cm, on $SRNIC_DEV: both ends on its
# netdev's IPv4 address (rdma_cm puts them on the one device, which loops
# back internally).  Sourced after tests/vm/lib.sh and tests/vm/tools.sh
# (it uses run_check and _tools_pair); defines run_cm_tools.
CM_ADDR=${CM_ADDR:-10.78.1.1}

# _cm_listening PORT: an rdma_cm ID listens on PORT (what a server does
# before its client can connect; rdma_cm ports are not TCP ports).
_cm_listening() {
	rdma resource show cm_id 2>/dev/null |
		grep -q "state LISTEN .*src-addr [^ ]*:$1 "
}

# _cm_pair NAME -- SERVER... -- CLIENT...: as _tools_pair, the server
# waited for on its rdma_cm port ($TOOLS_PORT).
_cm_pair() {
	TOOLS_LISTENING=_cm_listening _tools_pair "$@"
}

# _cm_gid ADDR: the GID of IPv4 ADDR is in $SRNIC_DEV's table (the core adds
# it from a workqueue once the address is on the netdev); bounded wait.
_cm_gid() {
	local hex
	hex=$(printf '%02x%02x:%02x%02x' ${1//./ })
	for _ in $(seq 1 500); do
		grep -q "ffff:$hex" /sys/class/infiniband/"$SRNIC_DEV"/ports/1/gids/* 2>/dev/null &&
			return 0
		sleep 0.01
	done
	return 1
}

# Each program: its server on the next port, then its client.
_cm_rping() {
	_tools_next_port
	_cm_pair "rping $*" -- rping -s -a "$CM_ADDR" -p "$TOOLS_PORT" "$@" -- \
		rping -c -a "$CM_ADDR" -p "$TOOLS_PORT" "$@"
}

_cm_ucmatose() {
	_tools_next_port
	_cm_pair "ucmatose $*" -- ucmatose -b "$CM_ADDR" -p "$TOOLS_PORT" "$@" -- \
		ucmatose -s "$CM_ADDR" -p "$TOOLS_PORT" "$@"
}

# udaddy has no port option: 7174, its own.
_cm_udaddy() {
	TOOLS_PORT=7174 _cm_pair "udaddy $*" -- udaddy -b "$CM_ADDR" "$@" -- \
		udaddy -s "$CM_ADDR" "$@"
}

# PROG is rstream or riostream (rsockets).
_cm_stream() {
	local prog=$1
	shift
	_tools_next_port
	_cm_pair "$prog $*" -- "$prog" -b "$CM_ADDR" -p "$TOOLS_PORT" "$@" -- \
		"$prog" -s "$CM_ADDR" -p "$TOOLS_PORT" "$@"
}

# _cm_served NAME -- SERVER... -- CLIENT...: a server that serves until
# killed (cmtime, rcopy): started, waited for on $TOOLS_PORT, killed once
# the client is done, which must exit 0.  Output is shown only on failure.
_cm_served() {
	local name=$1 dir spid st=0 srv=() cli=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	dir=$(mktemp -d /tmp/cm.XXXXXX)
	timeout -k 5 "$TOOLS_SECS" "${srv[@]}" >"$dir/server" 2>&1 &
	spid=$!
	for _ in $(seq 1 600); do
		_cm_listening "$TOOLS_PORT" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	timeout -k 5 "$TOOLS_SECS" "${cli[@]}" >"$dir/client" 2>&1 || st=$?
	kill "$spid" 2>/dev/null
	wait "$spid" 2>/dev/null
	if [ $st != 0 ]; then
		echo "# $name: client failed (status $st)"
		sed 's/^/#   /' "$dir/server" "$dir/client" | tail -n 30
	fi
	rm -rf "$dir"
	return $st
}

_cm_cmtime() {
	_tools_next_port
	_cm_served "cmtime $*" -- cmtime -b "$CM_ADDR" -p "$TOOLS_PORT" "$@" -- \
		cmtime -s "$CM_ADDR" -p "$TOOLS_PORT" "$@"
}

_cm_rdma_server() {
	_tools_next_port
	_cm_pair "rdma_server" -- rdma_server -s "$CM_ADDR" -p "$TOOLS_PORT" -- \
		rdma_client -s "$CM_ADDR" -p "$TOOLS_PORT"
}

# rcopy: a file of random bytes copied over rsockets, then compared.
_cm_rcopy() {
	local dir st=0
	dir=$(mktemp -d /tmp/rcopy.XXXXXX)
	head -c 3000000 /dev/urandom >"$dir/src"
	_tools_next_port
	_cm_served rcopy -- rcopy -p "$TOOLS_PORT" -- \
		rcopy "$dir/src" "$CM_ADDR:$dir/dst" -p "$TOOLS_PORT" &&
		cmp "$dir/src" "$dir/dst" || st=1
	rm -rf "$dir"
	return $st
}

# perftest with -R: rdma_cm connects the QPs (no TCP exchange).
_cm_perftest() {
	local prog=$1
	shift
	_tools_next_port
	_cm_pair "$prog -R $*" -- \
		"$prog" -d "$SRNIC_DEV" -R -F -p "$TOOLS_PORT" "$@" -- \
		"$prog" -d "$SRNIC_DEV" -R -F -p "$TOOLS_PORT" "$@" "$CM_ADDR"
}

# _cm_mckey GROUP RECV-ADDR SEND-CMD...: mckey receiving COUNT ($MCKEY_C)
# datagrams to GROUP on RECV-ADDR while SEND-CMD (an `mckey -s` on this or
# another host) sends batches of them.  A receiver's QP attaches only after
# its join completes, which nothing outside it shows, so the sender runs
# again until the receiver has its count (each batch may find it ready).
MCKEY_C=${MCKEY_C:-20}
_cm_mckey() {
	local group=$1 addr=$2 dir rpid st=0 tries=0
	shift 2
	dir=$(mktemp -d /tmp/mckey.XXXXXX)
	timeout -k 5 "$TOOLS_SECS" mckey -m "$group" -b "$addr" -C "$MCKEY_C" >"$dir/recv" 2>&1 &
	rpid=$!
	while kill -0 "$rpid" 2>/dev/null && [ $tries -lt 30 ]; do
		tries=$((tries + 1))
		timeout -k 5 60 "$@" >"$dir/send" 2>&1 || { st=$?; break; }
	done
	if [ $st = 0 ]; then
		wait "$rpid" || st=$?
	else
		kill "$rpid" 2>/dev/null
		wait "$rpid" 2>/dev/null
	fi
	if [ $st != 0 ] || ! grep -q "data transfers complete" "$dir/recv"; then
		echo "# mckey $group: status $st after $tries batches"
		sed 's/^/#   recv: /' "$dir/recv" | tail -n 15
		sed 's/^/#   send: /' "$dir/send" | tail -n 15
		st=1
	fi
	rm -rf "$dir"
	return $st
}

run_cm_tools() {
	echo "# ---- rdma_cm on $SRNIC_DEV ($CM_ADDR on $SRNIC_NETDEV)"
	if ! modprobe rdma_ucm || ! ip addr add "$CM_ADDR/24" dev "$SRNIC_NETDEV" ||
	   ! _cm_gid "$CM_ADDR"; then
		run_check "rdma_cm: $CM_ADDR on $SRNIC_NETDEV and in the GID table" false
		return
	fi
	# -V: the data each side read is checked against what the other wrote.  Five runs:
	# rping waits on CQ events, and a wake-up the engine lost (a hot QP's kicked work
	# dropped) stalled one run in three.
	for i in 1 2 3 4 5; do run_check "rping -V -C 1000 (run $i of 5)" _cm_rping -V -C 1000; done
	run_check "rping -v -C 20" _cm_rping -v -C 20
	run_check "ucmatose: 4 connections, 20 messages each" _cm_ucmatose -c 4 -C 20
	run_check "udaddy: UD over rdma_cm (SIDR)" _cm_udaddy -c 2 -C 20
	run_check "rstream: 10 x 64 KiB over rsockets" _cm_stream rstream -C 10 -S 65536
	run_check "rstream: blocking, 100 x 4 KiB" _cm_stream rstream -T b -C 100 -S 4096
	run_check "rcopy: a 3 MB file, compared" _cm_rcopy
	run_check "cmtime: 20 connections" _cm_cmtime -c 20
	run_check "rdma_server / rdma_client" _cm_rdma_server
	run_check "ib_send_bw -R" _cm_perftest ib_send_bw -n 200
	run_check "ib_write_lat -R" _cm_perftest ib_write_lat -n 200
	run_check "ib_read_bw -R" _cm_perftest ib_read_bw -n 200
	# UD multicast: receiver and sender on the one device (its internal loopback).
	run_check "mckey: $MCKEY_C datagrams to 239.2.2.2" _cm_mckey 239.2.2.2 "$CM_ADDR" \
		mckey -m 239.2.2.2 -b "$CM_ADDR" -s -C "$MCKEY_C"
	ip addr del "$CM_ADDR/24" dev "$SRNIC_NETDEV"
}

# rdma-core's rdma_cm tests (test_rdmacm) find a device's netdev only under
# /sys/class/infiniband/<dev>/device/net/, which a veth has not: they run on a
# device bound to the VM's virtio NIC (eth0, qemu/run --nic alone), which
# srnic parents by the NIC's PCI device as hardware RNICs are.
run_cm_pyverbs() {
	local nd=eth0 dev=srnic_nic addr=10.78.2.1
	echo "# ---- rdma-core test_rdmacm on $dev ($addr on $nd)"
	if [ ! -e "/sys/class/net/$nd/device" ]; then
		echo "ok - rdma-core test_rdmacm # SKIP no NIC with a parent device (qemu/run --nic alone)"
		SKIPPED=$((SKIPPED + 1))
		return
	fi
	if ! modprobe rdma_ucm || ! ip addr add "$addr/24" dev "$nd" || ! ip link set "$nd" up ||
	   ! rdma link add "$dev" type srnic netdev "$nd" || ! wait_gid "$dev" ||
	   ! SRNIC_DEV=$dev _cm_gid "$addr"; then
		run_check "rdma-core test_rdmacm: $dev on $nd with $addr" false
	else
		run_check "$dev/device/net/ holds $nd (the NIC's device is its parent)" \
			test -d "/sys/class/infiniband/$dev/device/net/$nd"
		SRNIC_DEV=$dev run_pyverbs test_rdmacm
	fi
	rdma link del "$dev" 2>/dev/null
	ip addr del "$addr/24" dev "$nd" 2>/dev/null
}
