# Kernel ULPs on an srnic device: NVMe over RDMA (nvmet's RDMA port on the
# device's address, backed by a file in tmpfs, `nvme connect -t rdma`, fio
# with verification) and NFS over RDMA (nfsd listening on port 20049, a
# proto=rdma mount, files written and read back).  Host and target, client
# and server, are the one device, which loops back internally.  Sourced after
# tests/vm/lib.sh and tests/vm/cm.sh (_cm_gid); defines run_ulp.
ULP_ADDR=${ULP_ADDR:-10.78.4.1}
ULP_NQN=srnic-ulp-test
ULP_DIR=/tmp/srnic-ulp

# _nvmet_up: a subsystem with one namespace (a 512 MiB file in a tmpfs of its
# own: nvmet takes its block size from the file system, which must be a real
# one's, not the VM root's overlay) on an RDMA port at $ULP_ADDR:4420.
_nvmet_up() {
	local cfg=/sys/kernel/config/nvmet s p
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config || return 1
	mkdir -p "$ULP_DIR/nvme" && mount -t tmpfs -o size=600M tmpfs "$ULP_DIR/nvme" &&
		truncate -s 512M "$ULP_DIR/nvme/ns1" || return 1
	s=$cfg/subsystems/$ULP_NQN p=$cfg/ports/1
	mkdir "$s" && echo 1 >"$s/attr_allow_any_host" &&
		mkdir "$s/namespaces/1" && echo "$ULP_DIR/nvme/ns1" >"$s/namespaces/1/device_path" &&
		echo 1 >"$s/namespaces/1/enable" &&
		mkdir "$p" && echo rdma >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo "$ULP_ADDR" >"$p/addr_traddr" && echo 4420 >"$p/addr_trsvcid" &&
		ln -s "$s" "$p/subsystems/$ULP_NQN"
}

_nvmet_down() {
	local cfg=/sys/kernel/config/nvmet
	rm -f "$cfg/ports/1/subsystems/$ULP_NQN"
	rmdir "$cfg/ports/1" 2>/dev/null
	echo 0 >"$cfg/subsystems/$ULP_NQN/namespaces/1/enable" 2>/dev/null
	rmdir "$cfg/subsystems/$ULP_NQN/namespaces/1" "$cfg/subsystems/$ULP_NQN" 2>/dev/null
	umount "$ULP_DIR/nvme" 2>/dev/null
}

# _nvme_dev: the namespace's block device (of the NVMe subsystem, not a
# path's hidden node) once it has its size (the host reads it after
# connecting); bounded wait.
_nvme_dev() {
	local s b
	for _ in $(seq 1 300); do
		for s in /sys/class/nvme-subsystem/nvme-subsys*; do
			[ "$(cat "$s/subsysnqn" 2>/dev/null)" = "$ULP_NQN" ] || continue
			# The multipath head in the subsystem, or (a kernel without
			# NVME_MULTIPATH, as the debug one) the controller's namespace.
			for b in "$s"/nvme*n1 "$s"/nvme*/nvme*n1; do
				[ -b "/dev/${b##*/}" ] &&
					[ "$(cat "$b/size" 2>/dev/null)" -gt 0 ] 2>/dev/null &&
					{ echo "/dev/${b##*/}"; return 0; }
			done
		done
		sleep 0.1
	done
	return 1
}

# _fio_verify DEV BS SIZE: random writes of SIZE bytes in blocks of BS at
# queue depth 32, each block checksummed, then every block read back and
# checked; fio fails on any mismatch or I/O error.
_fio_verify() {
	local out
	# fio would make a regular file of any other name.
	[ -b "$1" ] || { echo "# $1 is not a block device"; return 1; }
	out=$(timeout -k 5 900 fio --name="verify-$2" --filename="$1" --rw=randwrite --bs="$2" \
		--size="$3" --iodepth=32 --ioengine=libaio --direct=1 --verify=crc32c \
		--do_verify=1 --verify_fatal=1 --output-format=terse --terse-version=3 2>&1)
	local st=$?
	# terse v3: field 5 is the error, 6 and 47 the KiB read and written.
	echo "$out" | awk -F';' 'NF > 48 { printf "# fio %s: error %s, %s KiB written, %s KiB read back\n", $3, $5, $47, $6 }'
	[ $st = 0 ] || echo "$out" | tail -n 5 | sed 's/^/#   /'
	return $st
}

run_nvme() {
	local dev
	echo "# ---- NVMe over RDMA ($ULP_ADDR:4420)"
	if ! modprobe -a nvmet nvmet-rdma nvme-rdma || ! _nvmet_up; then
		run_check "nvmet: an RDMA port on $ULP_ADDR backed by a tmpfs file" false
		_nvmet_down
		return
	fi
	# A lost controller is given up after 5 s, not 10 minutes: the device
	# is removed under I/O at the end.
	run_check "nvme connect -t rdma" \
		timeout 120 nvme connect -t rdma -a "$ULP_ADDR" -s 4420 -n "$ULP_NQN" \
		--ctrl-loss-tmo=5 --reconnect-delay=1
	if ! dev=$(_nvme_dev); then
		run_check "nvme: the namespace's block device appears" false
	else
		run_check "fio on $dev: 4 KiB random writes, 128 MiB, verified" \
			_fio_verify "$dev" 4k 128M
		run_check "fio on $dev: 128 KiB random writes, 256 MiB, verified" \
			_fio_verify "$dev" 128k 256M
		run_check "rdma link del under NVMe I/O: the I/O fails cleanly, in time" \
			_nvme_link_del "$dev"
	fi
	run_check "nvme disconnect" nvme disconnect -n "$ULP_NQN"
	_nvmet_down
}

# _nvme_link_del DEV: fio writes to DEV until the device under it is removed
# (`rdma link del` with the host's and the target's queues on it); the
# removal returns, and fio ends (its I/O failed, the controller given up)
# within bounds.
_nvme_link_del() {
	local fpid st=0 io0
	io0=$(awk '{ print $5 }' "/sys/block/${1##*/}/stat")
	timeout -k 5 300 fio --name=unplug --filename="$1" --rw=randwrite --bs=64k \
		--iodepth=32 --ioengine=libaio --direct=1 --time_based --runtime=240 \
		>/dev/null 2>&1 &
	fpid=$!
	# Writes are completing: the queues carry I/O when the device goes.
	for _ in $(seq 1 300); do
		[ "$(awk '{ print $5 }' "/sys/block/${1##*/}/stat")" -gt $((io0 + 64)) ] && break
		sleep 0.1
	done
	timeout 120 rdma link del "$ULP_DEV" || { echo "# rdma link del failed or hung"; st=1; }
	for _ in $(seq 1 1200); do
		kill -0 "$fpid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$fpid" 2>/dev/null; then
		echo "# fio still running 120 s after the device went"
		kill -9 "$fpid"
		st=1
	fi
	wait "$fpid" 2>/dev/null
	return $st
}

# _nfsd_up: an NFSv4 server exporting a tmpfs, listening for RDMA on port
# 20049 (and TCP, which nfsd wants too), with the shortest grace period
# (opens fail during it).
_nfsd_up() {
	modprobe -a nfsd rpcrdma || return 1
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || return 1
	mkdir -p "$ULP_DIR/export" /var/lib/nfs/v4recovery &&
		mount -t tmpfs -o size=300M tmpfs "$ULP_DIR/export" || return 1
	exportfs -o rw,no_root_squash,fsid=0,insecure,no_subtree_check \
		"$ULP_ADDR/24:$ULP_DIR/export" || return 1
	rpc.mountd -N 2 -N 3 -u 2>/dev/null || return 1
	rpc.nfsd -N 3 -U -G 10 -L 10 --rdma=20049 4 || return 1
	grep -q "rdma 20049" /proc/fs/nfsd/portlist
}

_nfsd_down() {
	umount "$ULP_DIR/mnt" 2>/dev/null
	rpc.nfsd 0 2>/dev/null
	pkill -x rpc.mountd
	exportfs -ua 2>/dev/null
	umount "$ULP_DIR/export" 2>/dev/null
}

# _nfs_files: files of 1 KiB to 32 MiB written through the mount, the page
# cache dropped, read back and compared (by checksum) with the originals.
_nfs_files() {
	local f size sums=$ULP_DIR/sums st=0
	mkdir -p "$ULP_DIR/src"
	for size in 1K 100K 1M 32M; do
		head -c "$size" /dev/urandom >"$ULP_DIR/src/f$size"
		cp "$ULP_DIR/src/f$size" "$ULP_DIR/mnt/f$size" || st=1
	done
	(cd "$ULP_DIR/src" && sha256sum f*) >"$sums"
	sync
	echo 3 >/proc/sys/vm/drop_caches
	(cd "$ULP_DIR/mnt" && sha256sum -c --quiet "$sums") || st=1
	# ... and as the server's file system holds them, where it is this host.
	if [ -d "$ULP_DIR/export" ]; then
		(cd "$ULP_DIR/export" && sha256sum -c --quiet "$sums") || st=1
	fi
	rm -rf "$ULP_DIR/src"
	return $st
}

run_nfs() {
	echo "# ---- NFS over RDMA ($ULP_ADDR:20049)"
	if ! _nfsd_up; then
		run_check "nfsd: an RDMA listener on $ULP_ADDR:20049" false
		_nfsd_down
		return
	fi
	mkdir -p "$ULP_DIR/mnt"
	run_check "mount -t nfs4 -o proto=rdma,port=20049" \
		timeout 120 mount -t nfs4 -o proto=rdma,port=20049 "$ULP_ADDR:/" "$ULP_DIR/mnt"
	if mountpoint -q "$ULP_DIR/mnt"; then
		run_check "NFS over RDMA: the mount's transport is rdma" \
			grep -q "$ULP_DIR/mnt nfs4 .*proto=rdma" /proc/mounts
		run_check "NFS over RDMA: files of 1 KiB to 32 MiB written and read back" _nfs_files
	fi
	_nfsd_down
}

# On a device of their own, which the NVMe part removes under I/O at the end.
ULP_DEV=srnic_ulp ULP_NETDEV=srulp0

run_ulp() {
	echo "# ---- kernel ULPs on $ULP_DEV ($ULP_ADDR on $ULP_NETDEV)"
	if ! ip link add "$ULP_NETDEV" type veth peer name srulp1 ||
	   ! ip link set "$ULP_NETDEV" up || ! ip link set srulp1 up ||
	   ! ip addr add "$ULP_ADDR/24" dev "$ULP_NETDEV" ||
	   ! rdma link add "$ULP_DEV" type srnic netdev "$ULP_NETDEV" ||
	   ! wait_gid "$ULP_DEV" || ! SRNIC_DEV=$ULP_DEV _cm_gid "$ULP_ADDR"; then
		run_check "ULPs: $ULP_DEV on $ULP_NETDEV with $ULP_ADDR in its GID table" false
	else
		run_nfs
		run_nvme
	fi
	rdma link del "$ULP_DEV" 2>/dev/null
	ip link del "$ULP_NETDEV" 2>/dev/null
}
