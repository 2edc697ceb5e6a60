#!/usr/bin/env bash
# The main job, run inside the VM by `make run`: load srnic, create devices, and show the standard
# RDMA tools working on them; then remove everything (qemu/run fails the run on any kernel warning).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=../tests/vm/lib.sh
. "$top/tests/vm/lib.sh"	# RDMAV_DRIVERS, wait_gid
step() { printf '\n$ %s\n' "$*"; "$@"; }

ip link add srnic_veth0 type veth peer name srnic_veth1
ip link set srnic_veth0 up
ip link set srnic_veth1 up
ip link add rxe_veth0 type veth peer name rxe_veth1
ip link set rxe_veth0 up
ip link set rxe_veth1 up

step rdma link add srnic0 type srnic netdev srnic_veth0
step rdma link add alpha type srnic netdev srnic_veth1
step rdma link add rxe0 type rxe netdev rxe_veth0
wait_gid srnic0
step rdma link show
step ibv_devices
step ibv_devinfo -v -d srnic0
# Which provider took each device: srnic for srnic0 and alpha, rxe for rxe0.
step ibv_devinfo -d alpha
step ibv_devinfo -d rxe0
# Traffic between two processes through srnic0, with no system call per post.
ibv_rc_pingpong -d srnic0 -g 0 -n 1000 >/tmp/pingpong-server.log 2>&1 &
server=$!
for _ in $(seq 1 100); do
	ss -ltn 2>/dev/null | grep -q ':18515 ' && break
	sleep 0.05
done
step ibv_rc_pingpong -d srnic0 -g 0 -n 1000 127.0.0.1
wait "$server"
step rdma link del alpha
step rdma link del rxe0
step rdma link del srnic0
step rmmod srnic
echo
echo "demo: done"
