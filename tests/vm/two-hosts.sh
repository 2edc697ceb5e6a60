# shellcheck shell=bash
# README's "Two hosts", run as it stands: its blocks, marked `<!-- two-hosts:NAME -->` before
# their fences, are read from README.md here, so the README cannot drift from what works.
#   each    on both hosts, with NETDEV, ME and PEER set (eth0 and the wire's addresses)
#   server  on B (guest b), one command a line, each in its turn
#   client  on A (guest a), line N the client of the server on line N
# Sourced by tests/vm/pair-smoke.sh (wire.sh and its check() before it); defines two_hosts.

# readme_block NAME: the lines of README's block NAME, comments and blank lines left out.
readme_block() {
	awk -v m="<!-- two-hosts:$1 -->" '
		$0 == m { want = 1; next }
		want && /^```/ { if (in_block) exit; in_block = 1; next }
		in_block { sub(/[ \t]+#.*$/, ""); if ($0 !~ /^[ \t]*(#|$)/) print }' "$top/README.md"
}

# _th_listeners: TCP listening sockets and listening rdma_cm IDs, counted.
_th_listeners() {
	echo $(($(ss -Hltn | wc -l) + $(rdma resource show cm_id 2>/dev/null | grep -c 'state LISTEN')))
}

# _th_listening: more listeners than before the server started (README's lines name no port).
_th_listening() { [ "$(_th_listeners)" -gt "$th_before" ]; }

# _th_run server|client LINE N: README's line N through wire_side (the server waited for until
# it listens, then the client), with NETDEV, ME and PEER set; the peer's address wire_side
# appends to a client's command becomes the script's $0, unused.
_th_run() {
	th_before=$(_th_listeners)
	NETDEV=$WIRE_IF ME=$WIRE_ME PEER=$WIRE_PEER WIRE_LISTENING=_th_listening \
		wire_side "$1" "th$3" bash -c "$2"
}

# _th_each: README's set-up block, on a netdev that has none of it yet.
_th_each() {
	NETDEV=$WIRE_IF ME=$WIRE_ME PEER=$WIRE_PEER bash -ec "$(readme_block each)"
}

# two_hosts: the set-up on both, then each server line on b with its client on a.
two_hosts() {
	local role=client lines n i
	[ "$WIRE_ROLE" = b ] && role=server
	mapfile -t lines < <(readme_block "$role")
	n=$(readme_block server | wc -l)
	check "README, two hosts: server and client lines pair up ($n)" \
		test "$n" -gt 0 -a "$n" = "$(readme_block client | wc -l)"
	wire_sync two-hosts-start
	rdma link del "${dev:-none}" 2>/dev/null
	ip addr flush dev "$WIRE_IF"
	check "README, two hosts: the device as README makes it" _th_each
	dev=srnic0
	wire_sync two-hosts-ready
	for ((i = 0; i < n; i++)); do
		check "README, two hosts, $role: ${lines[i]}" _th_run "$role" "${lines[i]}" "$i"
	done
	rdma link del srnic0 2>/dev/null
}
