# The standard tools on $SRNIC_DEV (GID index $SRNIC_GID, default 0): the
# rdma-core pingpong examples, the eight perftest programs and a count of the
# system calls behind ib_write_bw's posts.  Sourced after tests/vm/lib.sh (it
# uses run_check); defines run_tools.  Each run is a server in the background
# and a client on 127.0.0.1 (loopback on the one device), both bounded by
# `timeout`, each pair on its own TCP port; both must exit 0.

TOOLS_PORT=${TOOLS_PORT:-19000}	# the first of the ports used, one per run
TOOLS_SECS=${TOOLS_SECS:-180}	# time limit of one program (TCG is slow)

# The TCP port of the next run.
_tools_next_port() {
	TOOLS_PORT=$((TOOLS_PORT + 1))
}

# _tools_listening PORT: something listens on PORT (IPv4 or IPv6).
_tools_listening() {
	local hex
	hex=$(printf '%04X' "$1")
	grep -qE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:0000 0A " \
		/proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# _tools_pair NAME -- SERVER... -- CLIENT...: the server in the background
# until it listens on $TOOLS_PORT ($TOOLS_LISTENING tells: a TCP port by
# default), then the client; both must exit 0.  The server is killed if
# anything fails.  Output is shown only on failure.
TOOLS_LISTENING=_tools_listening
_tools_pair() {
	local name=$1 dir spid st=0 srv=() cli=()
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	dir=$(mktemp -d /tmp/tools.XXXXXX)
	timeout -k 5 "$TOOLS_SECS" "${srv[@]}" >"$dir/server" 2>&1 &
	spid=$!
	for _ in $(seq 1 600); do
		"$TOOLS_LISTENING" "$TOOLS_PORT" && break
		kill -0 "$spid" 2>/dev/null || break
		sleep 0.1
	done
	if ! "$TOOLS_LISTENING" "$TOOLS_PORT"; then
		echo "# $name: the server never listened on port $TOOLS_PORT"
		st=1
	else
		timeout -k 5 "$TOOLS_SECS" "${cli[@]}" >"$dir/client" 2>&1 || st=$?
		[ $st = 0 ] || echo "# $name: client failed (status $st)"
	fi
	if [ $st = 0 ]; then
		wait "$spid" || st=$?
		[ $st = 0 ] || echo "# $name: server failed (status $st)"
	else
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
	fi
	if [ $st != 0 ]; then
		echo "#   server: ${srv[*]}"
		tail -n 15 "$dir/server" | sed 's/^/#     /'
		echo "#   client: ${cli[*]}"
		tail -n 15 "$dir/client" 2>/dev/null | sed 's/^/#     /'
	fi
	rm -rf "$dir"
	return $st
}

# _tools_pingpong PROG ARGS...: server and client of an ibv_*_pingpong.
_tools_pingpong() {
	local prog=$1 gid=${SRNIC_GID:-0}
	shift
	_tools_next_port
	_tools_pair "$prog $*" -- \
		"$prog" -d "$SRNIC_DEV" -g "$gid" -p "$TOOLS_PORT" "$@" -- \
		"$prog" -d "$SRNIC_DEV" -g "$gid" -p "$TOOLS_PORT" "$@" 127.0.0.1
}

# _tools_perftest PROG ARGS...: server and client of a perftest program.
_tools_perftest() {
	local prog=$1 gid=${SRNIC_GID:-0}
	shift
	_tools_next_port
	_tools_pair "$prog $*" -- \
		"$prog" -d "$SRNIC_DEV" -x "$gid" -F -p "$TOOLS_PORT" "$@" -- \
		"$prog" -d "$SRNIC_DEV" -x "$gid" -F -p "$TOOLS_PORT" "$@" 127.0.0.1
}

# _tools_syscalls N: ib_write_bw's client under strace, N posts.  Prints the
# write and ioctl counts.  On srnic the posts must need far fewer system
# calls than posts (< N/10); on other devices (rxe: one write per post) the
# counts are only shown.
_tools_syscalls() {
	local n=$1 gid=${SRNIC_GID:-0} dir writes ioctls total st=0
	dir=$(mktemp -d /tmp/tools.XXXXXX)
	_tools_next_port
	_tools_pair "strace ib_write_bw -n $n" -- \
		ib_write_bw -d "$SRNIC_DEV" -x "$gid" -F -p "$TOOLS_PORT" -s 64 -n "$n" -- \
		strace -f -c -o "$dir/strace" \
		ib_write_bw -d "$SRNIC_DEV" -x "$gid" -F -p "$TOOLS_PORT" -s 64 -n "$n" \
		127.0.0.1 || st=1
	if [ $st = 0 ]; then
		# strace -c: "% time seconds usecs/call calls [errors] syscall"
		writes=$(awk '$NF == "write" { print $4 }' "$dir/strace")
		ioctls=$(awk '$NF == "ioctl" { print $4 }' "$dir/strace")
		total=$((${writes:-0} + ${ioctls:-0}))
		echo "# ib_write_bw -n $n on $SRNIC_DEV: ${writes:-0} write + ${ioctls:-0} ioctl = $total system calls"
		if [ -e "/sys/class/infiniband/$SRNIC_DEV/srnic_abi_version" ]; then
			[ "$total" -lt $((n / 10)) ] ||
				{ echo "# srnic: $total system calls for $n posts"; st=1; }
		else
			echo "# not srnic: counts shown, not checked"
		fi
	fi
	rm -rf "$dir"
	return $st
}

run_tools() {
	local prog mode
	echo "# ---- standard tools on $SRNIC_DEV (GID ${SRNIC_GID:-0})"
	for mode in "-c" "-c -e"; do
		# shellcheck disable=SC2086 # $mode is two options
		run_check "ibv_rc_pingpong $mode" _tools_pingpong ibv_rc_pingpong -n 100 $mode
		# shellcheck disable=SC2086
		run_check "ibv_uc_pingpong $mode" _tools_pingpong ibv_uc_pingpong -n 100 $mode
		# UD messages fit one MTU (1024 on a 1500-byte netdev).
		# shellcheck disable=SC2086
		run_check "ibv_ud_pingpong $mode" _tools_pingpong ibv_ud_pingpong -n 100 -s 512 $mode
		# shellcheck disable=SC2086
		run_check "ibv_srq_pingpong $mode" _tools_pingpong ibv_srq_pingpong -n 20 -q 4 $mode
	done
	# On-demand paging: explicit (-o), implicit (-O) and prefetched (-P).
	for mode in "-o" "-o -O" "-o -P"; do
		# shellcheck disable=SC2086
		run_check "ibv_rc_pingpong -c $mode" _tools_pingpong ibv_rc_pingpong -n 100 -c $mode
	done
	# Device memory as the message buffer.
	run_check "ibv_rc_pingpong -j" _tools_pingpong ibv_rc_pingpong -n 100 -j
	# XRC: one server's SRQs, its client's XRC send QP.
	run_check "ibv_xsrq_pingpong" _tools_pingpong ibv_xsrq_pingpong -n 20
	# The extended verbs: ibv_wr_* posting (-N), ibv_cq_ex with completion
	# timestamps (-t), and both.
	for mode in "-N" "-t" "-N -t"; do
		# shellcheck disable=SC2086
		run_check "ibv_rc_pingpong $mode" _tools_pingpong ibv_rc_pingpong -n 100 $mode
	done
	for prog in ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw; do
		run_check "$prog" _tools_perftest "$prog" -n 200
	done
	for prog in ib_send_lat ib_write_lat ib_read_lat ib_atomic_lat; do
		run_check "$prog" _tools_perftest "$prog" -n 200
	done
	run_check "ib_send_bw -c UD" _tools_perftest ib_send_bw -c UD -n 200 -s 512
	run_check "ib_write_bw -q 8" _tools_perftest ib_write_bw -q 8 -n 100
	run_check "ib_write_bw system calls per post" _tools_syscalls 20000
}
